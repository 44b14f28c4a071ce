#include "sim/rules/dcasgd.hpp"

#include <cmath>

namespace stalesim {

DcasgdRule::DcasgdRule(const OptimizerSpec& spec, int64_t parameters)
    : lr_(spec.lr),
      lambda0_(static_cast<float>(spec.lambda)),
      adaptive_(spec.adaptive),
      decay_(static_cast<float>(spec.ms_decay)),
      ms_(adaptive_ ? static_cast<size_t>(parameters) : 0, 0.0f) {}

double DcasgdRule::compute_update(std::span<float> update, std::span<const float> grad, const GradientInfo&,
                                  std::span<const float> params, std::span<const float> read_params) {
  const auto alpha = static_cast<float>(lr_);
  for (size_t i = 0; i < grad.size(); ++i) {
    const float g = grad[i];
    float lambda = lambda0_;
    if (adaptive_) {
      ms_[i] = decay_ * ms_[i] + (1.0f - decay_) * g * g;
      lambda = lambda0_ / std::sqrt(ms_[i] + 1e-7f);
    }
    update[i] = alpha * (g + lambda * g * g * (params[i] - read_params[i]));
  }
  return alpha;
}

}  // namespace stalesim
