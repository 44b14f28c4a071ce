#pragma once
// The MPI transport's latency and bandwidth between two ranks (`stalesim calibrate --cpu`, issue
// 28): a ping-pong. Rank 1 echoes what rank 0 sends; rank 0 times round trips of a small message
// (latency = half the median round trip) and of a large one (bandwidth = its bytes / (half its
// median round trip - latency)), the model a simulation's network uses (latency + bytes / bandwidth).
// The echoing rank polls with the real mode's sleeps (sim/real/real_wire.hpp), so the latency
// includes the wake-up that a real run's ranks pay too.

#include <cstdint>
#include <optional>

namespace stalesim {

struct LinkProbeOptions {
  int64_t small_bytes = 8;
  int64_t large_bytes = 4 << 20;
  int32_t repeats = 200;  // timed round trips per size (after `warmup` untimed)
  int32_t warmup = 20;
};

struct LinkProbe {
  double latency_s = 0;                                   // one way, for small_bytes
  double bandwidth_bytes_s = 0;                           // one way, for large_bytes beyond the latency
  double small_round_trip_s = 0, large_round_trip_s = 0;  // medians
  double small_p90_s = 0, large_p90_s = 0;
};

// Runs this rank's part of the probe in an MPI job of exactly 2 ranks (MPI is initialized by the
// caller's MpiSession): rank 0 returns the figures, rank 1 nullopt. Throws std::runtime_error on
// an MPI error or a job of another size; ScenarioError in a build without MPI.
std::optional<LinkProbe> probe_mpi_link(const LinkProbeOptions& options);

}  // namespace stalesim
