#include "sim/rules/fasgd.hpp"

#include <algorithm>
#include <cmath>

namespace stalesim {

FasgdRule::FasgdRule(const OptimizerSpec& spec, int64_t parameters)
    : lr_(spec.lr),
      gamma_(static_cast<float>(spec.gamma)),
      beta_(static_cast<float>(spec.beta)),
      epsilon_(static_cast<float>(spec.epsilon)),
      fred_(spec.variant == FasgdVariant::kFred),
      b_(fred_ ? 0 : static_cast<size_t>(parameters), 0.0f),
      n_(fred_ ? 0 : static_cast<size_t>(parameters), 0.0f),
      sigma_bar_(static_cast<size_t>(parameters), 0.0f) {}

double FasgdRule::compute_update(std::span<float> update, std::span<const float> grad,
                                 const GradientInfo& info, std::span<const float>, std::span<const float>) {
  const int64_t tau = info.missed_updates();
  double sum = 0.0;
  if (fred_) {
    const auto scale = static_cast<float>(lr_ / static_cast<double>(tau + 1));
    for (size_t i = 0; i < grad.size(); ++i) {
      sigma_bar_[i] = 0.9f * sigma_bar_[i] + 0.1f * std::fabs(grad[i]);
      update[i] = scale * grad[i] / (sigma_bar_[i] + 0.001f);
      sum += sigma_bar_[i];
    }
    mean_stat_ = grad.empty() ? 0.0 : sum / static_cast<double>(grad.size());
    return scale;
  }
  const auto scale = static_cast<float>(lr_ / static_cast<double>(std::max<int64_t>(tau, 1)));
  const float one_g = 1.0f - gamma_, one_b = 1.0f - beta_;
  for (size_t i = 0; i < grad.size(); ++i) {
    const float g = grad[i];
    b_[i] = gamma_ * b_[i] + one_g * g;
    n_[i] = gamma_ * n_[i] + one_g * g * g;
    const float sigma = std::sqrt(std::max(n_[i] - b_[i] * b_[i], 0.0f));
    sigma_bar_[i] = beta_ * sigma_bar_[i] + one_b * sigma;
    update[i] = scale * g / (sigma_bar_[i] + epsilon_);
    sum += sigma_bar_[i];
  }
  mean_stat_ = grad.empty() ? 0.0 : sum / static_cast<double>(grad.size());
  return scale;
}

}  // namespace stalesim
