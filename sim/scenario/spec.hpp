#pragma once
// The spec structs of a scenario that need no model and no device: errors, optimizer, policy,
// compute, stop and eval (DESIGN.md section 1); the errors are base/errors.hpp's. Policies and
// rules include this header, which includes nothing from models/; the cluster (devices, network,
// jitter, schedule) is
// sim/scenario/cluster_spec.hpp, the whole Scenario (with its data and model specs)
// sim/scenario/scenario.hpp.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.hpp"  // ScenarioError
#include "sim/algorithms.hpp"
#include "sim/scenario/options.hpp"

namespace stalesim {

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
  double momentum = 0.0;                        // server-side heavy-ball momentum mu in [0, 1), every rule
  double gamma = 0.9;                           // fasgd, bfasgd: decay of the moving averages of g and g^2
  double beta = 0.9;                            // fasgd, bfasgd: decay of the moving average of sigma
  double epsilon = 1e-4;                        // fasgd, bfasgd: added to the averaged sigma (paper variant)
  FasgdVariant variant = FasgdVariant::kPaper;  // fasgd, bfasgd: paper | fred (the FRED code's form)
  double c_fetch = 0.01;                        // bfasgd: fetch threshold c in 1 / (1 + c / (v + eps))
  double c_push = 0.01;                         // bfasgd: push threshold
  double lambda = 2.0;                          // dcasgd: lambda_0, the delay-compensation strength
  bool adaptive = true;                         // dcasgd: lambda_t = lambda_0 / sqrt(MS_t + eps) (DC-ASGD-a)
  double ms_decay = 0.95;                       // dcasgd: decay of the moving average MS of g^2
  // When the server takes its momentum step (sim/rules/server_optimizer.hpp): "per_push" (every
  // gradient) | "per_clock" (once per clock on the clock's summed update; lockstep policies only).
  MomentumStep momentum_step = MomentumStep::kPerPush;
  bool operator==(const OptimizerSpec&) const = default;
};

struct PolicySpec {
  PolicyType type = PolicyType::kSsp;  // bsp | asp | ssp | essp | dssp | vap | softsync (sim/algorithms.hpp)
  int64_t staleness = 3;               // ssp, essp: s; dssp: the lower bound s_L. Resolved to 0 elsewhere.
  int64_t range = 12;                  // dssp: r_max, the most extra clocks the controller may grant
  // dssp: bounded (gap <= s_L + r_max) | literal (+1) | unbounded
  DsspGrant dssp_grant = DsspGrant::kBounded;
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
  // Every worker reads the same version each clock. The policy's answer (SyncPolicy::lockstep,
  // asked in sim/policies/sync_policy.cpp), as clock_bound() below.
  bool lockstep() const;
  // The largest clock gap the policy allows (SyncPolicy::clock_bound); nullopt when unbounded.
  std::optional<int64_t> clock_bound() const;
  // The collective that replaces the server (SyncPolicy::all_reduce); nullopt for a parameter server.
  std::optional<AllReduce> all_reduce() const;
  // Workers keep a parameter copy between clocks (lazy and eager caches).
  bool caches_params() const { return cache_mode() != CacheMode::kPullEveryIteration; }
  bool operator==(const PolicySpec&) const = default;
};

// Where the math runs and what times it (issue 12).
struct ComputeSpec {
  Backend backend = Backend::kCpu;    // cpu (Eigen) | cuda (cuBLAS on the local GPU; softmax, mlp, cnn)
  Timing timing = Timing::kModelled;  // modelled (device profiles) | measured (the GPU time of the
                                      // latest gradient, every worker; needs cuda; not bit-reproducible)
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
