#pragma once
// DC-ASGD, delay-compensated async SGD (Zheng, Meng, Wang, Chen, Yu, Ma, Liu, "Asynchronous
// Stochastic Gradient Descent with Delay Compensation", ICML 2017, arXiv 1609.08326). The server
// compensates a gradient computed on the copy w_bak a worker read with a first-order Taylor term
// whose Hessian is approximated by g (.) g:
//     w -= alpha * (g + lambda (.) g (.) g (.) (w - w_bak)),
// with lambda = lambda_0 (DC-ASGD-c) or, adaptive, lambda_t = lambda_0 / sqrt(MS_t + 1e-7) per
// element, MS_t a moving average of g^2 with decay ms_decay (DC-ASGD-a).

#include <vector>

#include "sim/rules/learning_rule.hpp"

namespace stalesim {

class DcasgdRule final : public LearningRule {
 public:
  DcasgdRule(const OptimizerSpec& spec, int64_t parameters);
  double compute_update(std::span<float> update, std::span<const float> grad, const GradientInfo& info,
                        std::span<const float> params, std::span<const float> read_params) override;
  bool needs_read_params() const override { return true; }
  double worker_step() const override { return lr_; }

 private:
  double lr_;
  float lambda0_;
  bool adaptive_;
  float decay_;
  std::vector<float> ms_;
};

}  // namespace stalesim
