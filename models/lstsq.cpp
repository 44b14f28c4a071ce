// The delayed-SGD stability workload: an ill-conditioned least-squares problem (see lstsq.hpp).

#include "models/lstsq.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace stalesim {
namespace {

void check(const LstsqSpec& spec) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("lstsq: " + what); };
  if (spec.dimension < 1 || int64_t{spec.dimension} * kLstsqRowsPerCoordinate > (int64_t{1} << 24))
    bad("dimension must be in [1, 2^24 / 64]");
  if (!std::isfinite(spec.condition) || spec.condition < 1) bad("condition must be finite and >= 1");
  if (!std::isfinite(spec.curvature) || spec.curvature <= 0) bad("curvature must be finite and > 0");
}

}  // namespace

DataSplit generate_lstsq(const LstsqSpec& spec) {
  check(spec);
  DataSplit d;
  auto rows = [&](Dataset& set, int64_t n) {
    set.features = 1;
    set.classes = 1;
    set.x.resize(static_cast<size_t>(n));
    set.y.assign(static_cast<size_t>(n), 0);
    for (int64_t j = 0; j < n; ++j) set.x[static_cast<size_t>(j)] = static_cast<float>(j % spec.dimension);
  };
  rows(d.train, kLstsqRowsPerCoordinate * spec.dimension);
  rows(d.test, spec.dimension);
  return d;
}

double delayed_gd_stability_limit(int64_t tau) {
  if (tau < 0) throw std::invalid_argument("delayed_gd_stability_limit: tau must be >= 0");
  return 2.0 * std::sin(std::numbers::pi / (2.0 * (2.0 * static_cast<double>(tau) + 1.0)));
}

LstsqModel::LstsqModel(const LstsqSpec& spec, uint64_t seed) {
  check(spec);
  const auto d = static_cast<size_t>(spec.dimension);
  lambda_.resize(d);
  solution_.resize(d);
  Rng rng(seed, Purpose::kData, 30);
  for (size_t i = 0; i < d; ++i) {
    const double frac = d == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(d - 1);
    lambda_[i] = static_cast<float>(spec.curvature * std::pow(spec.condition, -frac));
    solution_[i] = static_cast<float>(rng.normal());
  }
}

void LstsqModel::init(std::span<float> params, Rng& rng) {
  (void)rng;
  for (float& w : params) w = 0.0f;
}

double LstsqModel::loss(std::span<const float> params) const {
  double sum = 0.0;
  for (size_t i = 0; i < lambda_.size(); ++i) {
    const double r = static_cast<double>(params[i]) - static_cast<double>(solution_[i]);
    sum += static_cast<double>(lambda_[i]) * r * r;
  }
  return 0.5 * sum;
}

double LstsqModel::loss_and_gradient(std::span<const float> params, const Dataset& data,
                                     std::span<const int32_t> indices, std::span<float> grad) {
  (void)data;
  (void)indices;
  for (size_t i = 0; i < lambda_.size(); ++i) grad[i] = lambda_[i] * (params[i] - solution_[i]);
  return loss(params);
}

Evaluation LstsqModel::evaluate(std::span<const float> params, const Dataset& data,
                                std::span<const int32_t> indices) {
  Evaluation e;
  e.loss = loss(params);
  e.has_accuracy = false;
  e.samples = indices.empty() ? data.size() : static_cast<int64_t>(indices.size());
  return e;
}

}  // namespace stalesim
