#pragma once
// The spec structs of a scenario that need no model: errors, optimizer, policy, cluster, compute,
// stop and eval (DESIGN.md section 1). Policies and rules include this header, not the model
// interface; the whole Scenario (with its data and model specs) is sim/scenario/scenario.hpp.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/device_profile.hpp"
#include "sim/algorithms.hpp"
#include "sim/scenario/topology_spec.hpp"

namespace stalesim {

// Bad scenario input. what() reads "<origin>: <json path>: <problem>", e.g.
// "scenarios/ssp.json: /policy/staleness: expected an integer >= 0, got -3".
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Aggregate { kSum, kMean };
std::span<const EnumName<Aggregate>> enum_names(Aggregate);
std::string_view to_string(Aggregate a);

struct OptimizerSpec {
  RuleType rule = RuleType::kSgd;  // sgd | sasgd | fasgd | bfasgd | dcasgd (sim/algorithms.hpp)
  double lr = 0.05;                // learning rate, > 0
  int32_t batch_size = 32;         // samples per worker iteration, >= 1
  // How the server combines pushes. kSum: each push applies w -= lr * g (additive updates, as in
  // SSP/Bosen). kMean: each push applies w -= (lr / workers) * g, so one clock of pushes moves by
  // lr times the mean gradient (BSP's averaging). Default: kMean for bsp, kSum otherwise.
  Aggregate aggregate = Aggregate::kSum;
  double momentum = 0.0;          // server-side heavy-ball momentum mu in [0, 1), every rule
  double gamma = 0.9;             // fasgd, bfasgd: decay of the moving averages of g and g^2
  double beta = 0.9;              // fasgd, bfasgd: decay of the moving average of sigma
  double epsilon = 1e-4;          // fasgd, bfasgd: added to the averaged sigma (paper variant)
  std::string variant = "paper";  // fasgd, bfasgd: "paper" | "fred" (the FRED code's form)
  double c_fetch = 0.01;          // bfasgd: fetch threshold c in 1 / (1 + c / (v + eps))
  double c_push = 0.01;           // bfasgd: push threshold
  double lambda = 2.0;            // dcasgd: lambda_0, the delay-compensation strength
  bool adaptive = true;           // dcasgd: lambda_t = lambda_0 / sqrt(MS_t + eps) (DC-ASGD-a)
  double ms_decay = 0.95;         // dcasgd: decay of the moving average MS of g^2
  // When the server takes its momentum step (sim/rules/server_optimizer.hpp): "per_push" (every
  // gradient) | "per_clock" (once per clock on the clock's summed update; lockstep policies only).
  std::string momentum_step = "per_push";
  bool operator==(const OptimizerSpec&) const = default;
};

struct PolicySpec {
  PolicyType type = PolicyType::kSsp;  // bsp | asp | ssp | essp | dssp | vap | softsync (sim/algorithms.hpp)
  int64_t staleness = 3;               // ssp, essp: s; dssp: the lower bound s_L. Resolved to 0 elsewhere.
  int64_t range = 12;                  // dssp: r_max, the most extra clocks the controller may grant
  std::string dssp_grant = "bounded";  // dssp: "bounded" (gap <= s_L + r_max) | "literal" (+1) | "unbounded"
  CacheMode cache = CacheMode::kPullEveryIteration;  // ssp: pull-every-iteration | lazy (Bosen)
  double value_bound = 0.0;  // vap: v > 0, bound on the infinity norm of in-transit updates
  int64_t n = 1;             // softsync: the server applies the mean of every floor(workers / n)
                             // gradients (Zhang et al. 2016); 1 <= n <= workers
  bool uses_staleness() const { return (traits(type).fields & kPolicyStaleness) != 0; }
  // The cache mode workers use: policy.cache where it applies, else the policy's own.
  CacheMode cache_mode() const {
    return (traits(type).fields & kPolicyCache) != 0 ? cache : traits(type).cache;
  }
  // Workers fetch at every clock and never hold an update back (PolicyTraits::pull_mode).
  bool pulls_every_clock() const {
    return traits(type).pull_mode && cache_mode() == CacheMode::kPullEveryIteration;
  }
  // Every worker reads the same version each clock: bsp, and ssp or dssp with no slack.
  bool lockstep() const {
    return type == PolicyType::kBsp || (type == PolicyType::kSsp && staleness == 0) ||
           (type == PolicyType::kDssp && staleness == 0 && range == 0);
  }
  // Workers keep a parameter copy between clocks (lazy and eager caches).
  bool caches_params() const { return cache_mode() != CacheMode::kPullEveryIteration; }
  bool operator==(const PolicySpec&) const = default;
};

struct NetworkSpec {
  double latency_us = 50.0;             // one-way latency of each worker's link
  double bandwidth_gbps = 10.0;         // each worker's link, gigabits per second
  double server_bandwidth_gbps = 10.0;  // each server shard's link, shared in arrival order
                                        // Default: equal to bandwidth_gbps.
  double latency_sigma = 0.0;           // per-message latency jitter: latency x lognormal factor of
                                        // mean 1 with this log standard deviation; 0 = none
  double message_overhead_us = 0.0;     // per message and shard: time the server link is busy on
                                        // top of the bytes (request handling, serialization)
  std::string topology = "star";        // "star" | "racks" | "graph" (sim/scenario/topology_spec.hpp)
  RacksSpec racks;                      // racks only
  GraphSpec graph;                      // graph only
  PlacementSpec placement;              // racks and graph
  bool operator==(const NetworkSpec&) const = default;
};

// Random variation of compute time (DESIGN.md section 3), a factor of mean 1 per iteration, drawn
// from the worker's own stream (Purpose::kJitter), or replayed from a trace of iteration times.
struct JitterSpec {
  // "none" | "constant" | "normal" | "lognormal" | "exponential" | "gamma" | "trace"
  std::string type = "lognormal";
  double sigma = 0.05;             // lognormal: standard deviation of the log, >= 0
  double cv = 0.1;                 // normal, gamma: coefficient of variation (stddev / mean), > 0
  double factor = 1.0;             // constant: the factor itself, > 0
  double shift = 0.0;              // exponential: factor = shift + Exp(mean 1 - shift), shift in [0, 1)
  std::string path;                // trace: text file of iteration times in ms (whitespace separated)
  std::string scale = "absolute";  // trace: "absolute" (an iteration takes the drawn time) |
                                   // "relative" (the modelled time x drawn time / trace mean)
  bool operator==(const JitterSpec&) const = default;
};

struct WorkerGroup {
  std::string profile;                  // a built-in device profile name, or a profile file's path
                                        // (ends in .json; from the working directory)
  std::optional<DeviceProfile> device;  // a profile file's figures, read when the scenario is
                                        // loaded (and kept in the manifest); unset for a built-in
  int32_t count = 1;                    // >= 1
  std::string precision = "fp32";       // "fp32" | "fp16" | "bf16": which peak of the profile
  std::optional<double> iteration_ms;   // explicit time of one iteration before jitter; unset =
                                        // batch FLOPs / (peak x efficiency) + overhead
  std::optional<JitterSpec> jitter;     // this group's jitter; unset = cluster.jitter
  std::optional<double> latency_us;     // this group's links; unset = cluster.network's
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
  std::string kind = "slow";      // "slow" | "pause" | "crash" | "drift"
  std::vector<int64_t> workers;   // worker ids (groups numbered in order, from 0)
  std::optional<int64_t> group;   // or a whole group (index into cluster.workers)
  double at_s = 0.0;              // virtual time the event starts
  std::optional<double> until_s;  // slow, drift: end (unset = for good); pause: end (required);
                                  // crash: rejoin time (unset = never rejoins)
  double factor = 2.0;            // slow: compute time multiplier; drift: multiplier reached at
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
  std::string on_crash = "wait";
  int32_t worker_count() const {
    int32_t n = 0;
    for (const auto& g : workers) n += g.count;
    return n;
  }
  bool operator==(const ClusterSpec&) const = default;
};

// Where the math runs and what times it (issue 12).
struct ComputeSpec {
  std::string backend = "cpu";      // "cpu" (Eigen) | "cuda" (cuBLAS on the local GPU; softmax, mlp)
  std::string timing = "modelled";  // "modelled" (device profiles) | "measured" (the GPU time of the
                                    // latest gradient, every worker; needs "cuda"; not bit-reproducible)
  bool operator==(const ComputeSpec&) const = default;
};

struct StopSpec {
  std::optional<double> virtual_time_s;   // stop at this virtual time, > 0
  std::optional<int64_t> max_updates;     // stop after this many server updates, >= 1
  std::optional<double> target_accuracy;  // in (0, 1]: time to reach it is recorded
  bool at_target = false;                 // stop when target_accuracy is reached
  bool operator==(const StopSpec&) const = default;
};

struct EvalSpec {
  double every_s = 10.0;     // evaluate the server's parameters every this many virtual seconds
  int64_t test_samples = 0;  // evaluate on the first N test samples; 0 = all
  bool operator==(const EvalSpec&) const = default;
};

}  // namespace stalesim
