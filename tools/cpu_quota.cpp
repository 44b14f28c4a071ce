// A slower worker made by the kernel: cgroup CPU quotas (tools/cpu_quota.hpp).

#include "tools/cpu_quota.hpp"

#include <sys/syscall.h>
#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCpuController = "/sys/fs/cgroup/cpu";
constexpr const char* kEnv = "STALESIM_REAL_CPU_GROUPS";

bool write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

}  // namespace

CpuQuota parse_cpu_quota(const std::string& text, int32_t workers, bool with_worker) {
  CpuQuota q;
  std::string share = text;
  if (with_worker) {
    const size_t eq = text.find('=');
    size_t used = 0;
    long w = -1;
    try {
      w = std::stol(text.substr(0, eq), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || used != eq || w < 0 || w >= workers)
      throw UsageError(
          fmt::format("--cpu-quota '{}': expected WORKER=SHARE with WORKER 0 to {} (SHARE: of one core)",
                      text, workers - 1));
    q.worker = static_cast<int32_t>(w);
    share = text.substr(eq + 1);
  }
  size_t used = 0;
  try {
    q.share = std::stod(share, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != share.size() || !(q.share >= 0.01 && q.share <= 64))
    throw UsageError(fmt::format(
        "--cpu-quota '{}': the share must be a number of cores from 0.01 to 64 (0.5: half a core)", text));
  return q;
}

void cpu_quota_make(std::vector<CpuQuota>& quotas) {
  if (quotas.empty()) return;
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(kCpuController) / "cpu.cfs_quota_us", ec))
    throw ScenarioError(fmt::format(
        "--cpu-quota: this machine has no cgroup v1 cpu controller at {} (cpu.cfs_quota_us); nothing was run",
        kCpuController));
  std::string env;
  for (auto& q : quotas) {
    q.group = fmt::format("{}/stalesim-{}-w{}", kCpuController, ::getpid(), q.worker);
    if (!fs::create_directory(q.group, ec) || ec) {
      cpu_quota_remove(quotas);
      throw ScenarioError(fmt::format("--cpu-quota: cannot make the cgroup {}: {} (needs root)", q.group,
                                      ec ? ec.message() : "it exists"));
    }
    q.made = true;
    // A 10 ms period (the default is 100 ms): the throttling comes in slices finer than a
    // gradient, as a slower processor would spread the time, not in 70 ms stops.
    const long period = 10000;
    if (!write_file(fs::path(q.group) / "cpu.cfs_period_us", std::to_string(period)) ||
        !write_file(fs::path(q.group) / "cpu.cfs_quota_us", std::to_string(std::lround(q.share * period)))) {
      cpu_quota_remove(quotas);
      throw ScenarioError(fmt::format("--cpu-quota: cannot set the quota of {}", q.group));
    }
    env += fmt::format("{}{}:{}", env.empty() ? "" : ",", q.rank, q.group);
  }
  ::setenv(kEnv, env.c_str(), 1);
  // The guard: when this process is gone (even by SIGKILL), remove the groups, by their names.
  const std::string guard = fmt::format(
      "setsid sh -c 'while kill -0 {0} 2>/dev/null; do sleep 0.5; done; for i in 1 2 3 4 5 6 7 8 9 10; do "
      "rmdir{1} 2>/dev/null; sleep 0.5; done' </dev/null >/dev/null 2>&1 &",
      ::getpid(), [&] {
        std::string d;
        for (const auto& q : quotas) d += " " + q.group;
        return d;
      }());
  if (std::system(guard.c_str()) != 0) {
    cpu_quota_remove(quotas);
    throw ScenarioError("--cpu-quota: could not start the guard that removes the cgroups");
  }
}

void cpu_quota_remove(std::vector<CpuQuota>& quotas) {
  for (auto& q : quotas) {
    if (!q.made) continue;
    // The ranks have ended (the job is over): the group is empty. A rank that lingers a moment
    // keeps it busy: retry briefly, then leave it to the guard.
    for (int i = 0; i < 20 && ::rmdir(q.group.c_str()) != 0; ++i) ::usleep(100'000);
    q.made = false;
  }
}

void join_cpu_group(int32_t rank, bool thread_only) {
  const char* env = std::getenv(kEnv);
  if (!env || !*env) return;
  const std::string all = env;
  const std::string key = std::to_string(rank) + ":";
  size_t at = 0;
  while (at < all.size()) {
    const size_t comma = std::min(all.find(',', at), all.size());
    const std::string item = all.substr(at, comma - at);
    if (item.starts_with(key)) {
      const fs::path group = item.substr(key.size());
      if (!thread_only) {  // already there (real-net's exec moved it before the namespace)?
        std::string error;
        const std::string text = read_regular_file("/proc/self/cgroup", 1 << 20, error).value_or("");
        const std::string name = "/" + group.filename().string();
        size_t from = 0;
        while (from < text.size()) {
          const size_t nl = std::min(text.find('\n', from), text.size());
          const std::string line = text.substr(from, nl - from);
          if (line.find(":cpu") != std::string::npos && line.ends_with(name)) return;
          from = nl + 1;
        }
      }
      const long id = thread_only ? ::syscall(SYS_gettid) : static_cast<long>(::getpid());
      if (!write_file(group / (thread_only ? "tasks" : "cgroup.procs"), std::to_string(id)))
        throw std::runtime_error(fmt::format("cannot join the cgroup {} (--cpu-quota)", group.string()));
      return;
    }
    at = comma + 1;
  }
}

}  // namespace stalesim::cli
