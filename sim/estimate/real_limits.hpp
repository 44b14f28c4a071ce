#pragma once
// What `stalesim real` alone can start on this machine (issue 46 point 3): the ranks it would
// place and the memory they would take, estimated before anything starts. Here, beside the
// memory estimate, and not in sim/real/: the real run itself never includes the estimator
// (tests/layers/check_layers.sh); the CLI asks this before it launches.

#include <cstdint>
#include <optional>
#include <string>

#include "sim/scenario/scenario.hpp"

namespace stalesim {

// `stalesim real` alone starts every rank on this machine, with --oversubscribe (the ranks sleep
// between polls): at most kRealRanksPerCpu ranks per logical CPU this process may use.
inline constexpr int kRealRanksPerCpu = 16;
// What one rank holds besides its simulator core (OpenMPI's library and shared-memory buffers):
// measured, 18 MiB peak per rank of scenarios/real/two-workers.json against 9 MiB for its
// simulation (OpenMPI 4.1, issue 46).
inline constexpr double kRealRankMpiBytes = 10.0 * 1024 * 1024;

// The memory of each rank of a real run (sim/real/real_run.hpp), estimated from the parts of
// estimate_memory (one thread) that every rank builds (the process, the data, the model's scratch,
// the worker core's first version, its server optimizer and gradient scratch) plus what each role
// holds, in parameter-sized vectors (issue 46, from heaptrack and the peak RSS per rank of an
// 8M-parameter mlp):
// - a worker rank, pull modes: the message buffer, the received part and the whole parameters,
//   its gradient and the packed push (5); cache modes (sim/real/real_cache.cpp): its gradient,
//   cached and local copies, its own pushes not yet in its copy (staleness + 1), the message
//   buffer and part, and under ESSP a copy in its inbox;
// - the server (rank 0), pull modes: the version each worker read and the current one, and per
//   worker the pushed gradient it keeps and the parameters it sends, plus the receive buffers (2);
//   cache modes: the current version and one on its way, and per worker a send and a pending
//   gradient, plus the receive buffers;
// - another server shard (cluster.servers > 1): the server's vectors for its slice.
struct RealMemory {
  double server = 0;  // rank 0
  double shard = 0;   // each other server shard's rank
  double worker = 0;  // each worker's rank
  int32_t shards = 1, workers = 0;
  double total() const { return server + (shards - 1) * shard + workers * worker; }
};
RealMemory real_memory(const Scenario& s);
// Why `stalesim real` alone cannot start `s` on this machine of `cpus` logical CPUs with
// `memory_limit` bytes (nullopt: unknown, not checked): more ranks than kRealRanksPerCpu x cpus,
// or real_memory(s).total() past the limit (`limit_source` names where the limit comes from). ""
// when it can.
std::string real_local_refusal(const Scenario& s, int cpus, std::optional<double> memory_limit,
                               const std::string& limit_source);

}  // namespace stalesim
