#pragma once
// SASGD, staleness-aware async SGD (Zhang, Gupta, Lian, Liu, "Staleness-aware Async-SGD for
// Distributed Deep Learning", IJCAI 2016, arXiv 1511.05950): the step of a gradient of
// step-staleness tau is alpha_0 / tau for tau >= 1 and alpha_0 for tau = 0. With all tau = 0 it is
// exactly SGD. The paper's n-softsync server (average every floor(workers / n) gradients) is
// policy.type "softsync".

#include "sim/rules/learning_rule.hpp"

namespace stalesim {

class SasgdRule final : public LearningRule {
 public:
  SasgdRule(double lr, Aggregate aggregate, int32_t workers);
  std::string name() const override { return "sasgd"; }
  double compute_update(std::span<float> update, std::span<const float> grad, const GradientInfo& info,
                        std::span<const float> params, std::span<const float> read_params) override;
  std::optional<float> uniform_step(const GradientInfo& info) const override;
  double worker_step() const override { return lr_; }

 private:
  double lr_;
};

}  // namespace stalesim
