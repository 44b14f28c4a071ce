#pragma once
// ScalarStepRule: a rule whose update is one scalar step times the gradient, u = step(info) * g,
// with no state (SGD, SASGD). It gives compute_update and uniform_step from step(), so that the
// server's fused write (ServerOptimizer) and compute_update agree bit for bit by construction; a
// rule of this kind says only its name, its step and its worker_step.

#include "sim/rules/learning_rule.hpp"

namespace stalesim {

class ScalarStepRule : public LearningRule {
 public:
  // The base step lr_: lr, or lr / workers for the mean aggregate (optimizer.aggregate).
  ScalarStepRule(double lr, Aggregate aggregate, int32_t workers)
      : lr_(aggregate == Aggregate::kMean ? lr / workers : lr) {}
  // The step of a gradient with these facts.
  virtual float step(const GradientInfo& info) const = 0;
  double compute_update(std::span<float> update, std::span<const float> grad, const GradientInfo& info,
                        std::span<const float>, std::span<const float>) final {
    const float s = step(info);
    for (size_t i = 0; i < grad.size(); ++i) update[i] = s * grad[i];
    return s;
  }
  std::optional<float> uniform_step(const GradientInfo& info) const final { return step(info); }

 protected:
  double lr_;
};

}  // namespace stalesim
