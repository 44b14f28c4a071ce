#pragma once
// Plain SGD (Robbins and Monro, 1951): w -= eta * g, with eta = lr for the sum aggregate and
// lr / workers for the mean aggregate (a full clock of pushes then moves by lr x mean gradient,
// BSP's averaging; scenario field optimizer.aggregate).

#include "sim/rules/scalar_step.hpp"

namespace stalesim {

class SgdRule final : public ScalarStepRule {
 public:
  using ScalarStepRule::ScalarStepRule;
  float step(const GradientInfo&) const override { return static_cast<float>(lr_); }
  double worker_step() const override { return static_cast<float>(lr_); }
};

}  // namespace stalesim
