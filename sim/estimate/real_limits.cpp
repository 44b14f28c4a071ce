// What `stalesim real` alone can start on this machine (sim/estimate/real_limits.hpp).

#include "sim/estimate/real_limits.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "sim/estimate/memory_estimate.hpp"

namespace stalesim {

RealMemory real_memory(const Scenario& s) {
  const MemoryEstimate e = estimate_memory(s, 1);
  const double vec = e.parameters * 4.0;
  const double n = s.cluster.worker_count();
  const double staleness = static_cast<double>(s.policy.clock_bound().value_or(0));
  const double updates = s.stop.max_updates ? static_cast<double>(*s.stop.max_updates) : n;
  // Every rank: the process and MPI, the data, the model's scratch and the batch indices; and the
  // worker core's first version, its server optimizer (e.server_bytes) and gradient scratch.
  const double fixed =
      e.process_bytes + kRealRankMpiBytes + e.dataset_bytes + e.scratch_bytes + (e.gradient_bytes - vec);
  const double core = vec + e.server_bytes + vec;
  RealMemory m;
  m.shards = s.cluster.servers;
  m.workers = s.cluster.worker_count();
  const double shards = m.shards;
  // The parts of a message: one slice per shard (P / S floats each).
  double server_vectors = 0;
  if (s.policy.caches_params()) {
    const bool eager = s.policy.cache_mode() == CacheMode::kEager;
    m.worker = fixed + core + (3 + (staleness + 1) + (eager ? 1 : 0) + 2 / shards) * vec;
    server_vectors = 1 + 2 * n + 2;
  } else {
    // The whole parameters and the gradient; the message buffer, the part and the packed push, slices.
    m.worker = fixed + core + (2 + 3 / shards) * vec;
    server_vectors = std::min(n, updates) + 2 * n + 2;
  }
  // With shards, each shard rank keeps its slice of the core and the server's vectors
  // (WorkerCore::keep_slice), and rank 0 also gathers the whole parameters for evaluations.
  m.shard = fixed + (core + server_vectors * vec) / shards;
  m.server = m.shard + n * 4096.0 + (shards > 1 ? vec : 0.0);
  return m;
}

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
  const RealMemory m = real_memory(s);
  if (m.total() <= *memory_limit) return "";
  return fmt::format(
      "/cluster/workers: {}, needing about {} on this machine in all (the server's rank {}{}, each worker's "
      "{}; each with {} for MPI; the simulation's own estimate: {}), but only {} is available ({}); use "
      "fewer workers, a smaller model or less data, or set STALESIM_MEMORY_LIMIT to override, {}",
      takes, format_bytes(m.total()), format_bytes(m.server),
      m.shards > 1 ? fmt::format(", each other shard's {}", format_bytes(m.shard)) : std::string(),
      format_bytes(m.worker), format_bytes(kRealRankMpiBytes), estimate_memory(s, 1).describe(),
      format_bytes(*memory_limit), limit_source, cluster);
}

}  // namespace stalesim
