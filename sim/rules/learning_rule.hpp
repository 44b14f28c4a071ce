#pragma once
// LearningRule: turns a pushed gradient (with its staleness) into a parameter update
// (DESIGN.md sections 5 and 6). *When* a worker proceeds is the policy's business; *how far* a
// step goes is the rule's. Rules may keep per-parameter state (moving averages), sized at
// construction. Momentum and n-softsync averaging are applied around the rule by ServerOptimizer,
// so every rule gets them.
//
// Adding a rule: its header (and .cpp) in sim/rules/, a RuleType value (sim/algorithms.hpp), and
// its registration row (RuleTraits: name, traits, fields, factory) in sim/rules/learning_rule.cpp
// (CONTRIBUTING.md).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "sim/scenario/spec.hpp"

namespace stalesim {

// What the server knows about one gradient when it applies it.
struct GradientInfo {
  int32_t worker = 0;
  int64_t version_read = 0;   // server version the gradient was computed on
  int64_t version_apply = 0;  // server version when it is applied (before the update)
  int64_t staleness = 0;      // worker clock at read minus server clock at read
  int64_t missed_updates() const { return version_apply - version_read; }  // tau
};

// A rule that decides each transfer itself (B-FASGD): the probability that a worker makes its
// next push and its next fetch. The simulation draws both, push first, from the worker's own
// stream (Purpose::kTransmit) and skips what the draws refuse.
class TransferGate {
 public:
  virtual ~TransferGate() = default;
  virtual double push_probability() const = 0;
  virtual double fetch_probability() const = 0;
};

class LearningRule {
 public:
  virtual ~LearningRule() = default;
  // Writes the update for `grad` into `update` (the server subtracts it from the parameters) and
  // returns the step's scalar factor, for records: lr scaled by what staleness implies (per-element
  // normalizations of FASGD excluded). `params` are the server's current parameters and
  // `read_params` those the gradient was computed on (empty unless needs_read_params()).
  // REQUIRES: equal sizes.
  virtual double compute_update(std::span<float> update, std::span<const float> grad,
                                const GradientInfo& info, std::span<const float> params,
                                std::span<const float> read_params) = 0;
  // When this gradient's update is exactly step * grad (float step, no state touched), the step;
  // the server then fuses it into the parameter write (ServerOptimizer) with identical bits.
  // compute_update must give the same update and step for the same gradient.
  virtual std::optional<float> uniform_step(const GradientInfo&) const { return std::nullopt; }
  // True when compute_update needs the parameters the gradient was computed on (DC-ASGD).
  virtual bool needs_read_params() const { return false; }
  // The step a worker applies to its own copy for its own update, so that it sees its own writes
  // before the server's copy comes back (lazy SSP and ESSP caches, VAP's in-transit sums): lr
  // (the mean aggregate's lr / workers for SGD). Exact for SGD; for the staleness- and
  // statistics-aware rules the worker cannot know the server's scaling, and uses lr.
  virtual double worker_step() const = 0;
  // The rule's transfer gate when it decides each push and fetch (B-FASGD); null otherwise.
  virtual const TransferGate* transfer_gate() const { return nullptr; }
};

// `workers` is the cluster size (for the mean aggregate); `parameters` sizes any state.
std::unique_ptr<LearningRule> make_rule(const OptimizerSpec& spec, int32_t workers, int64_t parameters);

}  // namespace stalesim
