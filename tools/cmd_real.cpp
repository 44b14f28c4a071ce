// `stalesim real` and `stalesim compare` (tools/cmd_real.hpp).

#include "tools/cmd_real.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "sim/analysis/compare.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "sim/text.hpp"

namespace stalesim::cli {

namespace fs = std::filesystem;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;
constexpr int kExitFailed = 3;

// `mpirun` on PATH (or STALESIM_MPIRUN), or "".
std::string find_mpirun() {
  if (const char* m = std::getenv("STALESIM_MPIRUN"); m && *m) return ::access(m, X_OK) == 0 ? m : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t from = 0;
  while (from <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', from), dirs.size());
    const std::string dir = dirs.substr(from, colon - from);
    if (!dir.empty()) {
      const std::string p = dir + "/mpirun";
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
    from = colon + 1;
  }
  return "";
}

pid_t g_child = 0;
extern "C" void forward_signal(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

// Starts mpirun with one rank per process of the real run and waits for it.
int launch(const RealCommand& c) {
  const std::string mpirun = find_mpirun();
  if (mpirun.empty())
    throw ScenarioError(
        "mpirun was not found on PATH (install OpenMPI, e.g. tools/install-deps.sh, or set "
        "STALESIM_MPIRUN to its path); nothing was run");
  check_output_dir(c.options.out, c.options.force, c.options.guard);
  const int ranks = real_ranks(c.scenario);
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw ScenarioError(fmt::format("cannot find this program (/proc/self/exe): {}", ec.message()));
  std::vector<std::string> argv = {mpirun, "-n", std::to_string(ranks), "--bind-to", "none"};
  // Always: OpenMPI counts slots by physical cores or the batch allocation, not by the logical CPUs
  // this process sees, and the ranks sleep between polls, so oversubscribing costs nothing.
  argv.emplace_back("--oversubscribe");
  if (::geteuid() == 0) argv.emplace_back("--allow-run-as-root");
  argv.push_back(self);
  argv.emplace_back("real");
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  // Idle ranks yield their core (OpenMPI's progress loop); the real mode polls with sleeps anyway.
  ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  if (!c.quiet) {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    fmt::print(stderr, "stalesim real: {}\n", line);
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::fflush(nullptr);
  // The signals wait until the child is known to the handler: one that came between the fork and
  // the handler would kill this process and leave mpirun and every rank running.
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
  ::sigprocmask(SIG_BLOCK, &block, &old_mask);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    throw ScenarioError("real: fork failed");
  }
  if (child == 0) {
    // mpirun ends (and ends its ranks) when this process dies, even by SIGKILL.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(kExitFailed);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::execv(mpirun.c_str(), cargv.data());
    _exit(127);
  }
  g_child = child;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, forward_signal);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (WIFEXITED(status) && (WEXITSTATUS(status) == kExitOk || WEXITSTATUS(status) == kExitBadInput))
    return WEXITSTATUS(status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw ScenarioError(fmt::format("could not start {}", mpirun));
  fmt::print(stderr, "stalesim real: the MPI job failed ({}); see the messages above\n",
             WIFEXITED(status) ? fmt::format("mpirun exited with {}", WEXITSTATUS(status))
                               : fmt::format("mpirun ended by signal {}", WTERMSIG(status)));
  return kExitFailed;
}

}  // namespace

bool quiet_rank() {
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  return mpi_launch_size() > 0 && r && std::atoi(r) != 0;
}

int real_main(RealCommand c) {
  if (const std::string why = real_refusal(c.scenario); !why.empty())
    throw ScenarioError(fmt::format("{}: the real mode cannot run this scenario: {}", c.origin, why));
  if (!mpi_built())
    throw ScenarioError(
        "the real mode needs MPI, and this stalesim was built without it (configure with OpenMPI installed)");
  if (const char* f = std::getenv("STALESIM_REAL_INJECT_FAULT"); f && *f) {
    RealOptions::Fault fault;
    long long it = -1;
    char how[8] = "";
    if (std::sscanf(f, "%d:%lld:%7s", &fault.worker, &it, how) != 3 || fault.worker < 0 || it < 0 ||
        (std::string(how) != "kill" && std::string(how) != "stop"))
      throw ScenarioError(
          fmt::format("STALESIM_REAL_INJECT_FAULT='{}': expected WORKER:ITERATION:kill|stop", f));
    fault.iteration = it;
    fault.hang = std::string(how) == "stop";
    c.options.fault = fault;
  }
  if (mpi_launch_size() == 0) return launch(c);
  const RealOutcome r = run_real_rank(c.scenario, c.options);
  if (quiet_rank()) return kExitOk;
  fmt::print(
      "{}: real run {} ({}) at t={:g} s wall after {} updates ({} timing); wrote {}/ (result_hash {}, not "
      "bit-reproducible)\n",
      c.scenario.name, to_string(r.status), r.stop_reason, r.end_s, r.server_updates,
      c.options.emulated ? "emulated" : "measured", c.options.out, r.result_hash);
  if (r.status == RunStatus::kDeadlock) {
    fmt::print(stderr, "stalesim: deadlock: {}\n", r.detail);
    return kExitFailed;
  }
  if (r.status == RunStatus::kDiverged) fmt::print(stderr, "stalesim: diverged: {}\n", r.detail);
  return kExitOk;
}

int compare_main(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  std::string json_path = "compare.json";
  std::optional<std::string> row;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::cout
          << "Usage: stalesim compare RUN_A RUN_B [RUN_B2 ...] [--json FILE] [--row LABEL]\n"
             "       stalesim compare --row-header\n\n"
             "Compares run folders: A (e.g. a simulation, run with --record gradients for iteration-time\n"
             "percentiles) against one or more B (e.g. real runs of the same scenario). Prints a table\n"
             "and writes compare.json (or FILE): per worker group and overall, iteration time\n"
             "(mean, p50, p99), updates by the earliest end, mean staleness and the KS distance of the\n"
             "staleness distributions, waiting, accuracy and loss at equal time, time to target; errors\n"
             "are (B - A) / A, and several B runs give their mean and spread. --row prints only the\n"
             "headline figures as one Markdown row (under --row-header's). See README \"Real runs\".\n";
      return kExitOk;
    }
    if (args[i] == "--row" || args[i] == "--row-header") {
      if (args[i] == "--row-header") {
        std::cout << compare_row_header();
        return kExitOk;
      }
      if (i + 1 >= args.size()) throw ScenarioError("compare: --row needs a label");
      row = args[++i];
      continue;
    }
    if (args[i] == "--json") {
      if (i + 1 >= args.size()) throw ScenarioError("compare: --json needs a file name");
      json_path = args[++i];
      continue;
    }
    if (args[i].starts_with("-")) throw ScenarioError(fmt::format("compare: unknown option '{}'", args[i]));
    dirs.push_back(args[i]);
  }
  if (dirs.size() < 2)
    throw ScenarioError(
        "compare: expected two run folders or more: stalesim compare RUN_A RUN_B [RUN_B2 ...]");
  // compare.json replaces only a compare.json of ours: checked here, before the work, and again
  // when it is swapped out (replace_file_checked), read bounded and not through a link.
  const auto ours = [](const fs::path& p) {
    std::string error;
    const auto j = read_json_file(p.string(), kMaxSummaryBytes, error, false);
    return j && j->is_object() && j->contains("run_a") && j->contains("staleness_ks");
  };
  const auto refuse = [&] {
    return IoError(fmt::format("{}: exists and is not a compare.json of stalesim's; choose another --json",
                               escaped(json_path)));
  };
  std::error_code ec;
  if (fs::symlink_status(json_path, ec).type() != fs::file_type::not_found && !ours(json_path))
    throw refuse();
  const ComparedRun a = read_compared_run(dirs[0]);
  std::vector<ComparedRun> b;
  for (size_t i = 1; i < dirs.size(); ++i) b.push_back(read_compared_run(dirs[i]));
  const nlohmann::json c = compare_runs(a, b);
  std::cout << (row ? compare_row(c, *row) : compare_table(c));
  try {
    replace_file_checked(json_path, c.dump(2) + "\n", ours);
  } catch (const IoError& e) {
    if (std::string(e.what()).find("exists and is not ours") != std::string::npos) throw refuse();
    throw;
  }
  return kExitOk;
}

}  // namespace stalesim::cli
