#pragma once
// The cluster of a scenario (DESIGN.md section 3): its worker groups and their devices, the
// network, compute-time jitter and the schedule of stragglers, pauses and failures. Apart from
// sim/scenario/spec.hpp because a group's device profile is a model-layer type
// (models/device_profile.hpp), which the policies and rules, who include spec.hpp, do not see.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/device_profile.hpp"
#include "sim/algorithms.hpp"
#include "sim/scenario/spec.hpp"
#include "sim/scenario/topology_spec.hpp"

namespace stalesim {

struct NetworkSpec {
  double latency_us = 50.0;             // one-way latency of each worker's link
  double bandwidth_gbps = 10.0;         // each worker's link, gigabits per second
  double server_bandwidth_gbps = 10.0;  // each server shard's link, shared in arrival order
                                        // Default: equal to bandwidth_gbps.
  double latency_sigma = 0.0;           // per-message latency jitter: latency x lognormal factor of
                                        // mean 1 with this log standard deviation; 0 = none
  double message_overhead_us = 0.0;     // per message and shard: time the server link is busy on
                                        // top of the bytes (request handling, serialization)
  // The server's own work where a push ends its way: applying it costs each shard this many ns
  // per float of its part of the push, one push at a time per shard (0: the apply is free).
  double server_apply_ns_per_parameter = 0.0;
  TopologyKind topology = TopologyKind::kStar;  // star | racks | graph (sim/scenario/topology_spec.hpp)
  RacksSpec racks;                              // racks only
  GraphSpec graph;                              // graph only
  PlacementSpec placement;                      // racks and graph
  bool operator==(const NetworkSpec&) const = default;
};

// Random variation of compute time (DESIGN.md section 3), a factor of mean 1 per iteration, drawn
// from the worker's own stream (Purpose::kJitter), or replayed from a trace of iteration times.
struct JitterSpec {
  JitterType type = JitterType::kLognormal;  // sim/scenario/options.hpp
  double sigma = 0.05;                       // lognormal: standard deviation of the log, >= 0
  double cv = 0.1;                           // normal, gamma: coefficient of variation (stddev / mean), > 0
  double factor = 1.0;                       // constant: the factor itself, > 0
  double shift = 0.0;  // exponential: factor = shift + Exp(mean 1 - shift), shift in [0, 1)
  std::string path;    // trace: text file of iteration times in ms (whitespace separated)
  TraceScale scale = TraceScale::kAbsolute;  // trace: absolute (an iteration takes the drawn time) |
                                             // "relative" (the modelled time x drawn time / trace mean)
  bool operator==(const JitterSpec&) const = default;
};

struct WorkerGroup {
  std::string profile;                     // a built-in device profile name, or a profile file's path
                                           // (ends in .json; from the working directory)
  std::optional<DeviceProfile> device;     // a profile file's figures, read when the scenario is
                                           // loaded (and kept in the manifest); unset for a built-in
  int32_t count = 1;                       // >= 1
  Precision precision = Precision::kFp32;  // fp32 | fp16 | bf16: which peak of the profile
  std::optional<double> iteration_ms;      // explicit time of one iteration before jitter; unset =
                                           // batch FLOPs / (peak x efficiency) + overhead
  std::optional<JitterSpec> jitter;        // this group's jitter; unset = cluster.jitter
  std::optional<double> latency_us;        // this group's links; unset = cluster.network's
  std::optional<double> bandwidth_gbps;
  std::optional<double> latency_sigma;
  bool operator==(const WorkerGroup&) const = default;
};

// The device profile of a group: its profile file's figures (`device`), else the built-in profile
// named `profile`. Throws ScenarioError naming the group when there is neither.
DeviceProfile group_profile(const WorkerGroup& g, size_t index);

// Where a scenario's `profile` value names a file: a path ending in ".json" (relative to
// `scenario_dir` unless absolute), or a name that is not built-in but is NAME.json in
// `profile_dir` (the environment variable STALESIM_PROFILE_DIR, which the CLI reads; "" for none).
// nullopt: a built-in name, or unknown.
std::optional<std::string> profile_file_path(const std::string& value, const std::string& scenario_dir,
                                             const std::string& profile_dir);

// One entry of the cluster's schedule (DESIGN.md section 3: stragglers, pauses, failures).
// Applies to the listed workers, or to every worker of `group`.
struct ScheduleEvent {
  ScheduleKind kind = ScheduleKind::kSlow;  // slow | pause | crash | drift
  std::vector<int64_t> workers;             // worker ids (groups numbered in order, from 0)
  std::optional<int64_t> group;             // or a whole group (index into cluster.workers)
  double at_s = 0.0;                        // virtual time the event starts
  std::optional<double> until_s;            // slow, drift: end (unset = for good); pause: end (required);
                                            // crash: rejoin time (unset = never rejoins)
  double factor = 2.0;                      // slow: compute time multiplier; drift: multiplier reached at
                                            // until_s, rising linearly from 1 at at_s (then held)
  bool operator==(const ScheduleEvent&) const = default;
};

struct ClusterSpec {
  std::vector<WorkerGroup> workers;
  // "timed" (default): the cost and network models time every step. "uniform": the FASGD paper's
  // own simulator: every iteration takes the same time (the cluster's mean iteration time / the
  // number of workers per update), the next worker to push is drawn uniformly among those not
  // blocked, and transfers take no time (bytes are still counted).
  Order order = Order::kTimed;
  NetworkSpec network;
  JitterSpec jitter;
  int32_t servers = 1;  // server shards: parameters split evenly, each shard with its own link
  std::vector<ScheduleEvent> schedule;
  // What synchronous policies do about a crashed worker: "wait" for it to rejoin, or "drop" it
  // from the slowest-clock computation until it rejoins (at the then minimum clock).
  OnCrash on_crash = OnCrash::kWait;
  int32_t worker_count() const {
    int32_t n = 0;
    for (const auto& g : workers) n += g.count;
    return n;
  }
  bool operator==(const ClusterSpec&) const = default;
};

}  // namespace stalesim
