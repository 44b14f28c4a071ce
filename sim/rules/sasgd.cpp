#include "sim/rules/sasgd.hpp"

namespace stalesim {

SasgdRule::SasgdRule(double lr, Aggregate aggregate, int32_t workers)
    : lr_(aggregate == Aggregate::kMean ? lr / workers : lr) {}

std::optional<float> SasgdRule::uniform_step(const GradientInfo& info) const {
  const int64_t tau = info.step_staleness();
  // The same float step as SGD when tau <= 1, so all-fresh runs match SGD bit for bit.
  return static_cast<float>(tau > 1 ? lr_ / static_cast<double>(tau) : lr_);
}

double SasgdRule::compute_update(std::span<float> update, std::span<const float> grad,
                                 const GradientInfo& info, std::span<const float>, std::span<const float>) {
  const float step = *uniform_step(info);
  for (size_t i = 0; i < grad.size(); ++i) update[i] = step * grad[i];
  return step;
}

}  // namespace stalesim
