#pragma once
// A staleness-sensitive workload beside the classifiers (issue 19, point 3): a synthetic,
// ill-conditioned least-squares problem whose Hessian is known exactly, so that the simulator's
// delayed gradients can be checked against the closed-form stability limit of delayed gradient
// descent.
//
// The problem: minimize f(w) = 1/(2m) sum_j (a_j . w - b_j)^2 over m = kLstsqRowsPerCoordinate x d
// rows, where row j is a_j = sqrt(d lambda_i) e_i with i = j mod d, and b_j = a_j . w* (no
// noise, so min f = 0 at w*). Then f(w) = 1/2 sum_i lambda_i (w_i - w*_i)^2 and the Hessian is
// diag(lambda), with curvatures spaced evenly in log between lambda_max (`curvature`) and
// lambda_max / `condition`: lambda_i = lambda_max x condition^(-i / (d - 1)).
// w* ~ N(0, 1) per coordinate from the seed (Purpose::kData, entity 30); w starts at 0.
//
// Gradients are exact: every worker computes the gradient of the whole objective, whatever its
// batch (the batch only times the iteration through the cost model). SGD on it is gradient descent
// with the simulator's delays, which is what the stability limit below is about.
//
// Data layout: one sample per row, features = 1 (x = the row's coordinate i as an exact float),
// y = 0, classes = 1. The rows carry no randomness; the model holds lambda and w*.

#include <cstdint>
#include <span>
#include <vector>

#include "models/dataset.hpp"
#include "models/model.hpp"

namespace stalesim {

inline constexpr int64_t kLstsqRowsPerCoordinate = 64;

struct LstsqSpec {
  int32_t dimension = 100;  // d, >= 1
  double condition = 100;   // lambda_max / lambda_min, >= 1
  double curvature = 1;     // lambda_max, > 0
  bool operator==(const LstsqSpec&) const = default;
};

// The rows (train: kLstsqRowsPerCoordinate x d, test: d). REQUIRES-checked (std::invalid_argument):
// 1 <= dimension <= 2^24 / kLstsqRowsPerCoordinate, condition >= 1 and finite, curvature > 0.
DataSplit generate_lstsq(const LstsqSpec& spec);

// The largest step-size x curvature for which gradient descent with a constant delay tau,
// w_{t+1} = w_t - lr H (w_{t-tau} - w*), converges on a quadratic: it converges iff
// lr x lambda_max < 2 sin(pi / (2 (2 tau + 1))) (2 at tau = 0, 1 at tau = 1, 0.445 at tau = 3).
// Per eigen-direction this is the delay-difference equation x_{n+1} = x_n - a x_{n-tau}, stable
// iff 0 < a < 2 cos(tau pi / (2 tau + 1)) (Levin and May, "A note on difference-delay
// equations", Theoretical Population Biology 9(2), 1976), and 2 cos(tau pi / (2 tau + 1)) =
// 2 sin(pi / (2 (2 tau + 1))). REQUIRES: tau >= 0.
double delayed_gd_stability_limit(int64_t tau);

// The model (model.type "lstsq", data.dataset "lstsq"). Loss: f(w) above, in double; test_loss is
// f(w) too (the excess loss over the optimum 0); no accuracy.
class LstsqModel final : public Model {
 public:
  LstsqModel(const LstsqSpec& spec, uint64_t seed);
  std::string type() const override { return "lstsq"; }
  int64_t parameter_count() const override { return static_cast<int64_t>(lambda_.size()); }
  // One row's residual and gradient entry: 2 multiply-adds forward, 1 back (counted as 2 FLOPs each).
  double flops_per_sample() const override { return 6.0; }
  void init(std::span<float> params, Rng& rng) override;
  double loss_and_gradient(std::span<const float> params, const Dataset& data,
                           std::span<const int32_t> indices, std::span<float> grad) override;
  Evaluation evaluate(std::span<const float> params, const Dataset& data,
                      std::span<const int32_t> indices) override;

  const std::vector<float>& curvatures() const { return lambda_; }  // lambda_i
  const std::vector<float>& solution() const { return solution_; }  // w*

 private:
  double loss(std::span<const float> params) const;
  std::vector<float> lambda_;
  std::vector<float> solution_;
};

}  // namespace stalesim
