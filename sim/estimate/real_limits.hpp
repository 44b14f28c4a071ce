#pragma once
// What `stalesim real` alone can start on this machine (issue 46 point 3): the ranks it would
// place and the memory they would take, estimated before anything starts. Here, beside the
// memory estimate, and not in sim/real/: the real run itself never includes the estimator
// (tests/layers/check_layers.sh); the CLI asks this before it launches.

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
// The memory of one rank of a real run of `s`: each rank loads the data and builds the simulator's
// worker core (estimate_memory, one thread, sim/estimate/memory_estimate.hpp) plus its MPI share.
double real_rank_bytes(const Scenario& s);
// Why `stalesim real` alone cannot start `s` on this machine of `cpus` logical CPUs with
// `memory_limit` bytes (nullopt: unknown, not checked): more ranks than kRealRanksPerCpu x cpus,
// or real_rank_bytes x ranks past the limit (`limit_source` names where the limit comes from). ""
// when it can.
std::string real_local_refusal(const Scenario& s, int cpus, std::optional<double> memory_limit,
                               const std::string& limit_source);

}  // namespace stalesim
