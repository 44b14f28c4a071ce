#pragma once
// Plain SGD (Robbins and Monro, 1951): w -= eta * g, with eta = lr for the sum aggregate and
// lr / workers for the mean aggregate (a full clock of pushes then moves by lr x mean gradient,
// BSP's averaging; scenario field optimizer.aggregate).

#include "sim/rules/learning_rule.hpp"

namespace stalesim {

class SgdRule final : public LearningRule {
 public:
  SgdRule(double lr, Aggregate aggregate, int32_t workers);
  std::string name() const override { return "sgd"; }
  double compute_update(std::span<float> update, std::span<const float> grad, const GradientInfo& info,
                        std::span<const float> params, std::span<const float> read_params) override;
  std::optional<float> uniform_step(const GradientInfo&) const override { return step_; }
  double worker_step() const override { return step_; }

 private:
  float step_;
};

}  // namespace stalesim
