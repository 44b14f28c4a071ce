#pragma once
// The cluster's schedule (DESIGN.md section 3, issue 5): stragglers that slow down by a factor
// over an interval, pauses, crashes with an optional rejoin, and speed drift, resolved from the
// scenario into per-worker entries. Compute under a schedule is integrated exactly over the
// intervals: an iteration of w ns of work that meets a 2x slowdown halfway takes the first half at
// full speed and the rest at half speed; a pause makes no progress until it ends. Drift is judged
// once, at the iteration's start. Lookups are O(log entries + entries of that worker).

#include <cstdint>
#include <optional>
#include <vector>

#include "base/sim_time.hpp"
#include "sim/scenario/cluster_spec.hpp"

namespace stalesim {

class ClusterSchedule {
 public:
  struct Crash {
    SimTime at;
    int32_t worker = 0;
    std::optional<SimTime> rejoin;  // nullopt: never rejoins
  };

  // REQUIRES: a validated scenario (worker ids and group indices in range).
  explicit ClusterSchedule(const ClusterSpec& cluster);

  // True when worker w has slow, pause or drift entries.
  bool affects_compute(int32_t w) const;
  // The time a compute of `work_ns` (at full speed) that starts at `start` ends, under worker w's
  // slow, pause and drift entries. At least start + 1 ns.
  SimTime compute_end(int32_t w, SimTime start, double work_ns) const;
  // Every crash, in (time, worker) order.
  const std::vector<Crash>& crashes() const { return crashes_; }

 private:
  struct Entry {
    int32_t worker = 0;
    int32_t kind = 0;  // kSlow, kPause, kDrift
    int64_t from = 0;  // ns
    int64_t to = 0;    // ns; INT64_MAX for good
    double factor = 1.0;
    bool operator<(const Entry& o) const { return worker < o.worker; }
  };
  std::vector<Entry> entries_;  // sorted by worker, stable (scenario order within a worker)
  std::vector<Crash> crashes_;
};

}  // namespace stalesim
