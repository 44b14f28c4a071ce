// What `stalesim real` alone can start on this machine (sim/estimate/real_limits.hpp).

#include "sim/estimate/real_limits.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "sim/estimate/memory_estimate.hpp"

namespace stalesim {

double real_rank_bytes(const Scenario& s) { return estimate_memory(s, 1).total() + kRealRankMpiBytes; }

std::string real_local_refusal(const Scenario& s, int cpus, std::optional<double> memory_limit,
                               const std::string& limit_source) {
  const int ranks = s.cluster.servers + s.cluster.worker_count();  // real_ranks(s)
  const std::string takes =
      fmt::format("a real run of this scenario takes {} MPI ranks ({} server shard{} + {} workers)", ranks,
                  s.cluster.servers, s.cluster.servers == 1 ? "" : "s", s.cluster.worker_count());
  const std::string cluster = fmt::format(
      "or start the ranks on a cluster with your own mpirun and hostfile ('mpirun -n {} "
      "--hostfile HOSTS stalesim real ...'); nothing was started",
      ranks);
  const int64_t slots = int64_t{std::max(cpus, 1)} * kRealRanksPerCpu;
  if (ranks > slots)
    return fmt::format(
        "/cluster/workers: {}, and 'stalesim real' alone starts them all on this machine: at most {} ({} per "
        "logical CPU, {} CPU{}); use fewer workers or server shards, {}",
        takes, slots, kRealRanksPerCpu, cpus, cpus == 1 ? "" : "s", cluster);
  if (!memory_limit) return "";
  const double per_rank = real_rank_bytes(s);
  if (per_rank * ranks <= *memory_limit) return "";
  return fmt::format(
      "/cluster/workers: {}, each needing about {} (its simulator core: {}; plus {} for MPI), {} on this "
      "machine in all, but only {} is available ({}); use fewer workers, a smaller model or less data, or "
      "set STALESIM_MEMORY_LIMIT to override, {}",
      takes, format_bytes(per_rank), estimate_memory(s, 1).describe(), format_bytes(kRealRankMpiBytes),
      format_bytes(per_rank * ranks), format_bytes(*memory_limit), limit_source, cluster);
}

}  // namespace stalesim
