#pragma once
// ServerOptimizer: how the server turns received gradients into new parameter versions. Around the
// learning rule it applies n-softsync averaging (Zhang et al., IJCAI 2016: the mean of the updates
// of every c = floor(workers / n) gradients becomes one version; c = 1 otherwise) and server-side
// heavy-ball momentum (v = mu v + u; w -= v; optimizer.momentum, any rule).
// Momentum is taken per push by default (optimizer.momentum_step "per_push"). With "per_clock"
// (lockstep policies that fetch every clock: BSP, SSP and DSSP at no slack) the pushes of a clock
// make one step of momentum SGD on their summed update, as MXNet's synchronous kvstore (dist_sync,
// behind the DSSP paper's BSP baseline: Zhao et al., ICDCS 2019) sums a clock's pushes and runs
// its optimizer once: v_k = mu v_{k-1} + (u_1 + ... + u_n), w_{k+1} = w_k - v_k. Each push still
// makes a version (versions count pushes under every policy): push i of clock k writes
// w_k - (mu v_{k-1} + u_1 + ... + u_i), so the clock's last push leaves w_{k+1} exactly. A clock
// is the run of consecutive pushes that read the same version (all of a clock's pushes read the
// version it began with under a lockstep policy); the first push that read another one closes it.
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
  // optimizer.momentum_step "per_clock": the push's update joins its clock's sum (above).
  double add_per_clock(ParamStore& store, std::span<const float> grad, const GradientInfo& info,
                       std::span<const float> read_params);

  std::unique_ptr<LearningRule> rule_;
  bool math_;
  UpdateKind kind_;
  float momentum_;
  bool per_clock_;
  int64_t c_ = 1;
  int64_t pending_ = 0;
  std::vector<float> update_, sum_, velocity_;
  // per_clock: the open clock's version read (-1: none open yet) and its starting parameters w_k.
  int64_t clock_read_ = -1;
  std::vector<float> clock_start_;
};

}  // namespace stalesim
