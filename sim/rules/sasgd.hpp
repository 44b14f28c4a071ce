#pragma once
// SASGD, staleness-aware async SGD (Zhang, Gupta, Lian, Liu, "Staleness-aware Async-SGD for
// Distributed Deep Learning", IJCAI 2016, arXiv 1511.05950): the step of a gradient of
// missed updates tau is alpha_0 / tau for tau >= 1 and alpha_0 for tau = 0. With all tau = 0 it is
// exactly SGD. The paper's n-softsync server (average every floor(workers / n) gradients) is
// policy.type "softsync".

#include "sim/rules/scalar_step.hpp"

namespace stalesim {

class SasgdRule final : public ScalarStepRule {
 public:
  using ScalarStepRule::ScalarStepRule;
  // The same float step as SGD when tau <= 1, so all-fresh runs match SGD bit for bit.
  float step(const GradientInfo& info) const override {
    const int64_t tau = info.missed_updates();
    return static_cast<float>(tau > 1 ? lr_ / static_cast<double>(tau) : lr_);
  }
  double worker_step() const override { return lr_; }
};

}  // namespace stalesim
