#pragma once
// `--cpu-quota WORKER=SHARE` of `stalesim real`, `--cpu-quota SHARE` of `calibrate --cpu` (issue 42
// point 5): a slower worker made by the kernel. The launcher makes one cgroup (v1 cpu controller,
// /sys/fs/cgroup/cpu/stalesim-<launcher pid>-w<worker>) per limited worker, with cpu.cfs_quota_us
// = SHARE x cpu.cfs_period_us (10 ms; SHARE 0.5: half of one core), and hands the ranks their groups in
// the environment (STALESIM_REAL_CPU_GROUPS=RANK:PATH,...); the worker's rank moves itself into its
// group (under --net kernel, tools/real-net's exec moves it before it enters its namespace, whose
// own /sys has no cgroups; the group is inherited). calibrate --cpu moves only its timing thread, so that the
// profile it writes is the limited worker's speed while another worker computes beside it: the simulation
// learns the slow worker only through that calibration. The launcher removes the groups it made (rmdir, by
// their own names) when the job ends, and a detached guard does when the launcher dies, even by SIGKILL.

#include <sys/types.h>
#include <cstdint>
#include <string>
#include <vector>

namespace stalesim::cli {

struct CpuQuota {
  int32_t worker = 0;  // calibrate: 0
  int32_t rank = 0;    // the MPI rank it runs as (real: server shards + worker; calibrate: 0)
  double share = 1;    // of one core, in (0, 64]
  std::string group;   // the cgroup's folder
  bool made = false;
};

// "W=SHARE" (real; W < workers) or "SHARE" (calibrate, worker 0). Throws UsageError naming the
// option and what is allowed.
CpuQuota parse_cpu_quota(const std::string& text, int32_t workers, bool with_worker);

// Makes the groups (throws ScenarioError when the cpu controller is not there or not writable:
// nothing is left), starts the guard, and sets STALESIM_REAL_CPU_GROUPS for the job.
void cpu_quota_make(std::vector<CpuQuota>& quotas);
void cpu_quota_remove(std::vector<CpuQuota>& quotas);

// In a rank: moves this process (or, with `thread_only`, the calling thread) into rank `rank`'s
// group from STALESIM_REAL_CPU_GROUPS; nothing when it names none or the process is in it already
// (/proc/self/cgroup). Throws std::runtime_error when the move fails.
void join_cpu_group(int32_t rank, bool thread_only);

}  // namespace stalesim::cli
