// `--net kernel`: a kernel-made network for an MPI job (tools/kernel_net.hpp).

#include "tools/kernel_net.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "sim/scenario/topology_kinds.hpp"
#include "tools/cli.hpp"

extern char** environ;

namespace stalesim::cli {

namespace fs = std::filesystem;

namespace {

// tools/real-net beside this program's folder (build/stalesim), else in the source tree it was
// built from.
std::string real_net_tool() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::is_regular_file(self.parent_path().parent_path() / "tools" / "real-net", ec))
    return (self.parent_path().parent_path() / "tools" / "real-net").string();
  return (fs::path(STALESIM_SOURCE_DIR) / "tools" / "real-net").string();
}

std::string mbit(double gbps) { return fmt::format("{}", std::max<long long>(1, std::llround(gbps * 1000))); }

// Runs argv, its stdin /dev/null, stdout and stderr into `output`; returns its exit code (-1 when
// it could not start or was killed).
int run_tool(const std::vector<std::string>& argv, std::string& output) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDWR, 0);  // nothing is read from it
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
  std::vector<char*> cargv;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    output = fmt::format("could not start {}", argv[0]);
    return -1;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (output.size() < (1u << 20)) output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

bool kernel_net_option(const std::string& value) {
  // --net's values, in one place: "none" (false) or "kernel" (true).
  static constexpr std::array<std::string_view, 2> kValues = {"none", "kernel"};
  const auto at = std::find(kValues.begin(), kValues.end(), value);
  if (at == kValues.end()) throw UsageError(fmt::format("--net '{}': allowed: none, kernel", value));
  return at != kValues.begin();
}

KernelNet plan_kernel_net(const Scenario& s, int ranks, bool calibrate) {
  const NetworkSpec& n = s.cluster.network;
  KernelNet net;
  net.tool = real_net_tool();
  net.id = fmt::format("k{:05x}", static_cast<unsigned>(::getpid()) % 0x100000u);
  const char* dir = std::getenv("XDG_RUNTIME_DIR");
  net.state = fmt::format("{}/stalesim-real-net-{}.state", dir && *dir ? dir : "/tmp", net.id);
  if (ranks > 253)
    throw ScenarioError(fmt::format(
        "--net kernel: {} ranks, one host each; the kernel-made network has addresses for 253 hosts", ranks));
  std::vector<std::string> rates(static_cast<size_t>(ranks));
  std::vector<std::string> racks;
  net.bridge = "br0";
  net.up = {"--hosts", std::to_string(ranks)};
  const int32_t shards = s.cluster.servers;
  if (calibrate) {  // two hosts on the star, both links at the network's bandwidth
    for (auto& r : rates) r = mbit(n.bandwidth_gbps);
  } else if (topology_kind(n.topology).real == RealNetwork::kNone) {
    throw ScenarioError(
        fmt::format("/cluster/network/topology: \"{}\": --net kernel builds the star and racks "
                    "(tools/real-net); a {}'s switches and links are simulated only",
                    enum_name(n.topology), enum_name(n.topology)));
  } else if (n.topology == TopologyKind::kStar) {
    size_t rank = 0;
    for (; rank < static_cast<size_t>(shards); ++rank) rates[rank] = mbit(n.server_bandwidth_gbps);
    for (const auto& g : s.cluster.workers)
      for (int32_t k = 0; k < g.count; ++k) rates[rank++] = mbit(g.bandwidth_gbps.value_or(n.bandwidth_gbps));
  } else if (n.topology == TopologyKind::kRacks) {
    const Topology t = build_topology(s);
    const auto host_of_rank = [&](size_t r) {
      return r < static_cast<size_t>(shards) ? t.shard_host[r]
                                             : t.worker_host[r - static_cast<size_t>(shards)];
    };
    for (size_t r = 0; r < rates.size(); ++r) {
      const int32_t h = host_of_rank(r);
      const int32_t node = t.hosts[static_cast<size_t>(h)];
      for (const auto& l : t.links)  // a host's one link, to its top-of-rack switch
        if (l.a == node || l.b == node) rates[r] = mbit(l.gbps);
      racks.push_back(std::to_string(t.rack_of(h)));
    }
    net.bridge = "spine";
    net.up.insert(net.up.end(), {"--racks", std::to_string(rack_count(s)), "--uplink-mbit",
                                 mbit(n.racks.uplink_bandwidth_gbps)});
  } else {  // racks (RealNetwork::kKernel): tools/real-net builds racks and the star only
    throw ScenarioError(
        fmt::format("/cluster/network/topology: \"{}\": tools/real-net builds the star and racks",
                    enum_name(n.topology)));
  }
  std::string list;
  for (const auto& r : rates) list += (list.empty() ? "" : ",") + r;
  net.up.insert(net.up.end(), {"--host-mbit", list});
  if (!racks.empty()) {
    std::string of;
    for (const auto& r : racks) of += (of.empty() ? "" : ",") + r;
    net.up.insert(net.up.end(), {"--rack-of", of});
  }
  return net;
}

void kernel_net_up(KernelNet& net) {
  std::vector<std::string> argv = {net.tool, "up", net.id};
  argv.insert(argv.end(), net.up.begin(), net.up.end());
  argv.insert(argv.end(), {"--owner", std::to_string(::getpid()), "--state", net.state});
  std::string out;
  const int rc = run_tool(argv, out);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (rc == 77)
    throw ScenarioError(fmt::format("--net kernel: this machine cannot make the network: {}", out));
  if (rc != 0)
    throw ScenarioError(fmt::format("--net kernel: {} up failed (exit {}): {}", net.tool, rc, out));
  net.made = true;
}

void kernel_net_down(KernelNet& net) {
  if (!net.made) return;
  std::string out;
  run_tool({net.tool, "down", net.id, "--state", net.state}, out);
  net.made = false;
}

std::vector<std::string> kernel_net_before_mpirun(const KernelNet& net) {
  return {net.tool,
          "switch",
          net.id,
          "env",
          "PMIX_MCA_ptl_tcp_remote_connections=1",
          "PMIX_MCA_ptl_tcp_if_include=" + net.bridge};
}

std::vector<std::string> kernel_net_mpirun_options(const KernelNet& net) {
  return {"-x",          "PMIX_MCA_ptl_tcp_remote_connections",
          "-x",          "PMIX_MCA_ptl_tcp_if_include",
          "--mca",       "oob_tcp_if_include",
          net.bridge,    "--mca",
          "btl",         "tcp,self",
          "--mca",       "btl_tcp_if_include",
          "192.0.2.0/24"};
}

std::vector<std::string> kernel_net_before_rank(const KernelNet& net) {
  return {net.tool, "exec", net.id, "rank"};
}

}  // namespace stalesim::cli
