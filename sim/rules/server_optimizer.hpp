#pragma once
// ServerOptimizer: how the server turns received gradients into new parameter versions. Around the
// learning rule it applies n-softsync averaging (Zhang et al., IJCAI 2016: the mean of the updates
// of every c = floor(workers / n) gradients becomes one version; c = 1 otherwise) and server-side
// heavy-ball momentum (v = mu v + u; w -= v; optimizer.momentum, any rule).

#include <memory>
#include <span>
#include <vector>

#include "sim/param_store.hpp"
#include "sim/rules/learning_rule.hpp"

namespace stalesim {

class ServerOptimizer {
 public:
  // `math` false (time-only model): versions are counted, no values touched.
  ServerOptimizer(const Scenario& s, int32_t workers, int64_t parameters, bool math);
  // Adds one received gradient. Returns the effective step the rule reported. Commits a new
  // version of `store` every gradients_per_version() gradients.
  double add(ParamStore& store, std::span<const float> grad, const GradientInfo& info,
             std::span<const float> read_params);
  int64_t gradients_per_version() const { return c_; }
  LearningRule& rule() { return *rule_; }
  const LearningRule& rule() const { return *rule_; }

 private:
  std::unique_ptr<LearningRule> rule_;
  bool math_;
  float momentum_;
  int64_t c_ = 1;
  int64_t pending_ = 0;
  std::vector<float> update_, sum_, velocity_;
};

}  // namespace stalesim
