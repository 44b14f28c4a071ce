// The softmax cross-entropy output shared by both classifiers, and "softmax": multinomial
// logistic regression, which is the dense classifier with no hidden layer
// (parameters: W, classes x features, column-major, then b, classes).

#include <cmath>
#include <stdexcept>
#include <string>

#include "models/classifier_common.hpp"

namespace stalesim::detail {

double softmax_xent_backward(Eigen::MatrixXf& logits, Eigen::Index n, std::span<const int32_t> labels,
                             float scale) {
  double loss_sum = 0.0;
  for (Eigen::Index j = 0; j < n; ++j) {
    auto z = logits.col(j);
    const Eigen::Index y = labels[static_cast<size_t>(j)];
    const float zy = z(y);
    const float m = z.maxCoeff();
    z.array() = (z.array() - m).exp();
    const float s = z.sum();  // >= 1: the max term is exp(0)
    // -log softmax(z)_y = log sum exp(z) - z_y = m + log(s) - z_y
    loss_sum += static_cast<double>(m) + std::log(static_cast<double>(s)) - static_cast<double>(zy);
    z *= scale / s;
    z(y) -= scale;
  }
  return loss_sum;
}

void softmax_xent_evaluate(const Eigen::MatrixXf& logits, Eigen::Index n, std::span<const int32_t> labels,
                           double& loss_sum, int64_t& correct) {
  const Eigen::Index classes = logits.rows();
  for (Eigen::Index j = 0; j < n; ++j) {
    const auto z = logits.col(j);
    const Eigen::Index y = labels[static_cast<size_t>(j)];
    Eigen::Index best = 0;
    for (Eigen::Index k = 1; k < classes; ++k) {
      if (z(k) > z(best)) best = k;  // strict: ties go to the lowest class
    }
    const float m = z(best);
    const float s = (z.array() - m).exp().sum();
    loss_sum += static_cast<double>(m) + std::log(static_cast<double>(s)) - static_cast<double>(z(y));
    if (best == y) ++correct;
  }
}

std::unique_ptr<Model> make_softmax(int64_t features, int32_t classes, WeightInit init) {
  return std::make_unique<DenseClassifier>("softmax", features, classes, std::vector<int64_t>{}, init);
}

void check_param_count(std::span<const float> params, int64_t count, std::string_view model,
                       const char* what) {
  if (static_cast<int64_t>(params.size()) != count) {
    throw std::invalid_argument(std::string(model) + " " + what + ": expected " + std::to_string(count) +
                                " values, got " + std::to_string(params.size()));
  }
}

void check_dataset(const Dataset& data, int64_t features, std::string_view model, const char* what) {
  if (data.features != features) {
    throw std::invalid_argument(std::string(model) + " " + what + ": model takes " +
                                std::to_string(features) + " features, dataset has " +
                                std::to_string(data.features));
  }
  if (static_cast<int64_t>(data.x.size()) != data.size() * data.features) {
    throw std::invalid_argument(std::string(model) + " " + what + ": dataset has " +
                                std::to_string(data.x.size()) + " values for " + std::to_string(data.size()) +
                                " samples");
  }
}

int32_t checked_label(const Dataset& data, int64_t i, int32_t classes, const std::string& model) {
  if (i < 0 || i >= data.size()) {
    throw std::out_of_range(model + ": sample index " + std::to_string(i) +
                            " out of range for a dataset of " + std::to_string(data.size()));
  }
  const int32_t y = data.y[static_cast<size_t>(i)];
  if (y < 0 || y >= classes) {
    throw std::invalid_argument(model + ": label " + std::to_string(y) + " of sample " + std::to_string(i) +
                                " is outside [0, " + std::to_string(classes) + ")");
  }
  return y;
}

}  // namespace stalesim::detail
