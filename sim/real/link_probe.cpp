// The MPI ping-pong (sim/real/link_probe.hpp).

#include "sim/real/link_probe.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "sim/scenario/scenario.hpp"

#ifdef STALESIM_HAVE_MPI
#include "sim/real/real_wire.hpp"
#endif

namespace stalesim {

#ifndef STALESIM_HAVE_MPI

std::optional<LinkProbe> probe_mpi_link(const LinkProbeOptions&) {
  throw ScenarioError("this stalesim was built without MPI: calibrate --cpu needs it for the network probe");
}

#else

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
double p90(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(0.9 * static_cast<double>(v.size())))];
}

// Receives the next message from `peer` into buf (polling with sleeps).
void receive_from(int peer, std::vector<char>& buf) {
  real::Backoff backoff;
  int from = 0;
  while (!real::try_receive(peer, real::kTagParams, buf, from)) backoff.idle(1'000'000);
}

}  // namespace

std::optional<LinkProbe> probe_mpi_link(const LinkProbeOptions& o) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) throw std::runtime_error("the link probe runs on exactly 2 MPI ranks");
  real::precise_sleeps();  // as a real run's ranks sleep between polls
  const int peer = 1 - rank;
  std::vector<char> buf;
  const auto send = [&](const std::vector<char>& b) { real::send_polling(b, peer, real::kTagParams); };
  const int32_t total = 2 * (o.warmup + o.repeats);
  if (rank == 1) {  // the echo: every message goes back as it came
    for (int32_t i = 0; i < total; ++i) {
      receive_from(peer, buf);
      send(buf);
    }
    return std::nullopt;
  }
  // Timed round trips of `bytes`; both ranks send and receive as a real run's ranks do (MPI_Test
  // polls with the real mode's sleeps, real_wire.hpp), so the figures include the wake-ups a
  // real run pays too.
  const auto timed = [&](int64_t bytes) {
    const std::vector<char> msg(static_cast<size_t>(bytes), 'x');
    std::vector<double> t;
    for (int32_t i = 0; i < o.warmup + o.repeats; ++i) {
      const auto start = real::Clock::now();
      send(msg);
      receive_from(peer, buf);
      if (i >= o.warmup) t.push_back(std::chrono::duration<double>(real::Clock::now() - start).count());
    }
    return t;
  };
  const auto small = timed(o.small_bytes);
  const auto large = timed(o.large_bytes);
  LinkProbe p;
  p.small_round_trip_s = median(small);
  p.large_round_trip_s = median(large);
  p.small_p90_s = p90(small);
  p.large_p90_s = p90(large);
  p.latency_s = p.small_round_trip_s / 2;
  const double beyond = p.large_round_trip_s / 2 - p.latency_s;
  p.bandwidth_bytes_s = beyond > 0 ? static_cast<double>(o.large_bytes - o.small_bytes) / beyond : 0;
  return p;
}

#endif

}  // namespace stalesim
