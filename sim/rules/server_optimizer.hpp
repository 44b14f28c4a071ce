#pragma once
// ServerOptimizer: how the server turns received gradients into new parameter versions. Around the
// learning rule it applies n-softsync averaging (Zhang et al., IJCAI 2016: the mean of the updates
// of every c = floor(workers / n) gradients becomes one version; c = 1 otherwise) and server-side
// heavy-ball momentum (v = mu v + u; w -= v; optimizer.momentum, any rule).
// Delta models (UpdateKind::kDelta, e.g. LDA's count deltas) bypass all of that: each push is
// added to the parameters as is and makes one version (the scenario refuses other rules, momentum
// and softsync for them).

#include <memory>
#include <span>
#include <vector>

#include "models/model.hpp"
#include "sim/param_store.hpp"
#include "sim/rules/learning_rule.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

class ServerOptimizer {
 public:
  // `math` false (time-only model): versions are counted, no values touched.
  ServerOptimizer(const Scenario& s, int32_t workers, int64_t parameters, bool math,
                  UpdateKind kind = UpdateKind::kGradient);
  // Adds one received gradient. Returns the effective step the rule reported. Commits a new
  // version of `store` every gradients_per_version() gradients.
  double add(ParamStore& store, std::span<const float> grad, const GradientInfo& info,
             std::span<const float> read_params);
  int64_t gradients_per_version() const { return c_; }
  // The factor a worker applies to its own copy for its own push, local -= own_step() x g: the
  // rule's worker_step() for gradients, -1 for deltas (the worker adds its own delta).
  double own_step() const { return kind_ == UpdateKind::kDelta ? -1.0 : rule_->worker_step(); }
  LearningRule& rule() { return *rule_; }
  const LearningRule& rule() const { return *rule_; }

 private:
  std::unique_ptr<LearningRule> rule_;
  bool math_;
  UpdateKind kind_;
  float momentum_;
  int64_t c_ = 1;
  int64_t pending_ = 0;
  std::vector<float> update_, sum_, velocity_;
};

}  // namespace stalesim
