#include "sim/rules/sgd.hpp"

namespace stalesim {

SgdRule::SgdRule(double lr, Aggregate aggregate, int32_t workers)
    : step_(static_cast<float>(aggregate == Aggregate::kMean ? lr / workers : lr)) {}

double SgdRule::compute_update(std::span<float> update, std::span<const float> grad, const GradientInfo&,
                               std::span<const float>, std::span<const float>) {
  for (size_t i = 0; i < grad.size(); ++i) update[i] = step_ * grad[i];
  return step_;
}

}  // namespace stalesim
