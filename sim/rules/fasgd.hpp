#pragma once
// FASGD, fast adaptive SGD (Odena, "Faster Asynchronous SGD", 2016, arXiv 1601.04033): staleness
// is judged from moving averages of gradient statistics rather than counted in steps alone.
// Per parameter element the server keeps moving averages of the gradient b and of its square n
// (decay gamma), the standard deviation sigma = sqrt(max(n - b^2, 0)) and a moving average
// sigma_bar of sigma (decay beta); the update is
//     theta -= alpha * g / (max(tau, 1) * (sigma_bar + epsilon))           (variant "paper")
// so stale gradients are damped in proportion to how much gradients vary. The paper's printed
// formula inverts this by mistake and divides by zero at tau = 0; its own code (FRED) uses
//     theta -= alpha * g / ((tau + 1) * (EMA_0.9(|g|) + 0.001))            (variant "fred").
// The statistics are updated with the incoming gradient before its step is computed.

#include <vector>

#include "sim/rules/learning_rule.hpp"

namespace stalesim {

class FasgdRule : public LearningRule {
 public:
  FasgdRule(const OptimizerSpec& spec, int64_t parameters);
  double compute_update(std::span<float> update, std::span<const float> grad, const GradientInfo& info,
                        std::span<const float> params, std::span<const float> read_params) override;
  double worker_step() const override { return lr_; }
  // The mean over all parameters of the statistic the denominator uses (sigma_bar, or the FRED
  // variant's EMA of |g|), after the last update: B-FASGD's v_bar.
  double mean_statistic() const { return mean_stat_; }

 private:
  double lr_;
  float gamma_, beta_, epsilon_;
  bool fred_;
  std::vector<float> b_, n_, sigma_bar_;  // paper; fred uses sigma_bar_ for EMA(|g|)
  double mean_stat_ = 0.0;
};

}  // namespace stalesim
