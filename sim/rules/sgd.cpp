#include "sim/rules/sgd.hpp"

#include <Eigen/Core>

namespace stalesim {

SgdRule::SgdRule(double lr, Aggregate aggregate, int32_t workers)
    : step_(static_cast<float>(aggregate == Aggregate::kMean ? lr / workers : lr)) {}

double SgdRule::apply(std::span<float> params, std::span<const float> grad, const GradientInfo&) {
  Eigen::Map<Eigen::VectorXf> w(params.data(), static_cast<Eigen::Index>(params.size()));
  Eigen::Map<const Eigen::VectorXf> g(grad.data(), static_cast<Eigen::Index>(grad.size()));
  w.noalias() -= step_ * g;
  return step_;
}

}  // namespace stalesim
