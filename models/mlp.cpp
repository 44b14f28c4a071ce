// The dense classifier behind "mlp" (ReLU hidden layers) and "softmax" (none): forward and
// backward passes as Eigen float32 GEMMs over Maps of the caller's parameter and gradient spans,
// with scratch matrices kept between calls.

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "models/classifier_common.hpp"

namespace stalesim::detail {
namespace {

using Eigen::Index;

}  // namespace

DenseClassifier::DenseClassifier(std::string type, int64_t features, int32_t classes,
                                 const std::vector<int64_t>& hidden, WeightInit init)
    : type_(std::move(type)), features_(features), classes_(classes), init_(init) {
  std::vector<int64_t> widths{features};
  widths.insert(widths.end(), hidden.begin(), hidden.end());
  widths.push_back(classes);
  int64_t offset = 0;
  double weights = 0.0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    Layer layer;
    layer.in = widths[l];
    layer.out = widths[l + 1];
    layer.w_offset = offset;
    offset += layer.in * layer.out;
    layer.b_offset = offset;
    offset += layer.out;
    weights += static_cast<double>(layer.in) * static_cast<double>(layer.out);
    layers_.push_back(layer);
  }
  parameter_count_ = offset;
  flops_per_sample_ = 6.0 * weights;
  act_.resize(layers_.size());
  delta_.resize(layers_.size() - 1);
  Index widest = 0;
  for (const Layer& layer : layers_) widest = std::max(widest, layer.out);
  db_.resize(widest);
}

void DenseClassifier::init(std::span<float> params, Rng& rng) {
  check_params(params, "init");
  for (const Layer& layer : layers_) {
    float* w = params.data() + layer.w_offset;
    const int64_t count = layer.in * layer.out;
    if (init_ == WeightInit::kHe) {
      const double stddev = std::sqrt(2.0 / static_cast<double>(layer.in));
      for (int64_t i = 0; i < count; ++i) w[i] = static_cast<float>(stddev * rng.normal());
    } else {
      const double a = std::sqrt(6.0 / static_cast<double>(layer.in + layer.out));
      for (int64_t i = 0; i < count; ++i) w[i] = static_cast<float>(rng.uniform(-a, a));
    }
    std::fill_n(params.data() + layer.b_offset, layer.out, 0.0f);
  }
}

void DenseClassifier::reserve(Index n) {
  if (x_.cols() >= n) return;
  x_.resize(features_, n);
  for (size_t l = 0; l < layers_.size(); ++l) act_[l].resize(layers_[l].out, n);
  for (size_t l = 0; l < delta_.size(); ++l) delta_[l].resize(layers_[l].out, n);
  labels_.resize(static_cast<size_t>(n));
}

template <class IndexAt>
void DenseClassifier::gather(const Dataset& data, Index n, IndexAt index_at) {
  reserve(n);
  gather_samples(data, n, index_at, features_, classes_, type_, x_.data(), labels_.data());
}

void DenseClassifier::forward(const float* params, Index n) {
  const Index last = static_cast<Index>(layers_.size()) - 1;
  for (Index l = 0; l <= last; ++l) {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    const ConstMatMap w(params + layer.w_offset, layer.out, layer.in);
    const ConstVecMap b(params + layer.b_offset, layer.out);
    auto z = act_[static_cast<size_t>(l)].leftCols(n);
    if (l == 0) {
      z.noalias() = w * x_.leftCols(n);
    } else {
      z.noalias() = w * act_[static_cast<size_t>(l - 1)].leftCols(n);
    }
    if (l < last) {
      z = (z.colwise() + b).cwiseMax(0.0f);  // ReLU
    } else {
      z.colwise() += b;
    }
  }
}

Eigen::MatrixXf& DenseClassifier::delta_of(Index l) {
  return l == static_cast<Index>(layers_.size()) - 1 ? act_.back() : delta_[static_cast<size_t>(l)];
}

double DenseClassifier::forward_backward(const float* params, const Dataset& data,
                                         std::span<const int32_t> indices) {
  const auto n = static_cast<Index>(indices.size());
  gather(data, n, [&indices](Index j) { return indices[static_cast<size_t>(j)]; });
  forward(params, n);
  const double loss_sum = softmax_xent_backward(act_.back(), n, labels_, 1.0f / static_cast<float>(n));
  const Index last = static_cast<Index>(layers_.size()) - 1;
  for (Index l = last; l > 0; --l) {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    const auto d = delta_of(l).leftCols(n);
    const ConstMatMap w(params + layer.w_offset, layer.out, layer.in);
    auto prev = delta_[static_cast<size_t>(l - 1)].leftCols(n);
    const auto a = act_[static_cast<size_t>(l - 1)].leftCols(n);
    prev.noalias() = w.transpose() * d;
    prev.array() = (a.array() > 0.0f).select(prev.array(), 0.0f);  // ReLU'
  }
  return loss_sum / static_cast<double>(n);
}

void DenseClassifier::weight_gradients(Index n, float* grad) {
  const Index last = static_cast<Index>(layers_.size()) - 1;
  for (Index l = last; l >= 0; --l) {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    const auto d = delta_of(l).leftCols(n);
    MatMap dw(grad + layer.w_offset, layer.out, layer.in);
    VecMap db(grad + layer.b_offset, layer.out);
    if (l == 0) {
      dw.noalias() = d * x_.leftCols(n).transpose();
    } else {
      dw.noalias() = d * act_[static_cast<size_t>(l - 1)].leftCols(n).transpose();
    }
    // Reduce into owned, aligned scratch: Eigen peels unaligned heads with a scalar loop whose
    // summation order differs, so summing straight into the caller's span would make the result
    // depend on the span's address.
    auto db_scratch = db_.head(layer.out);
    db_scratch.noalias() = d.rowwise().sum();
    db = db_scratch;
  }
}

double DenseClassifier::loss_and_gradient(std::span<const float> params, const Dataset& data,
                                          std::span<const int32_t> indices, std::span<float> grad) {
  check_params(params, "loss_and_gradient (params)");
  check_params(grad, "loss_and_gradient (grad)");
  check_data(data, "loss_and_gradient");
  if (indices.empty()) throw std::invalid_argument(type_ + " loss_and_gradient: empty batch");
  const double loss = forward_backward(params.data(), data, indices);
  weight_gradients(static_cast<Index>(indices.size()), grad.data());
  return loss;
}

int64_t DenseClassifier::deferred_floats(int64_t batch) const {
  int64_t rows = 0;
  for (size_t l = 0; l < layers_.size(); ++l) rows += layers_[l].out + (l > 0 ? layers_[l].in : 0);
  return rows * batch;
}

// Factors, in order: each layer's delta (out x n; the last layer's is the logits' gradient), then
// each hidden activation (the input of layers 1..last, in x n), all column-major.
double DenseClassifier::begin_gradient(std::span<const float> params, const Dataset& data,
                                       std::span<const int32_t> indices, DeferredGradient& pending) {
  check_params(params, "begin_gradient");
  check_data(data, "begin_gradient");
  if (indices.empty()) throw std::invalid_argument(type_ + " begin_gradient: empty batch");
  const double loss = forward_backward(params.data(), data, indices);
  const auto n = static_cast<Index>(indices.size());
  const Index last = static_cast<Index>(layers_.size()) - 1;
  pending.batch.assign(indices.begin(), indices.end());
  pending.factors.resize(static_cast<size_t>(deferred_floats(n)));
  float* out = pending.factors.data();
  for (Index l = 0; l <= last; ++l) {
    const Index rows = layers_[static_cast<size_t>(l)].out;
    const auto d = delta_of(l).leftCols(n);
    MatMap(out, rows, n) = d;
    out += rows * n;
  }
  for (Index l = 1; l <= last; ++l) {
    const Index rows = layers_[static_cast<size_t>(l)].in;
    MatMap(out, rows, n) = act_[static_cast<size_t>(l - 1)].leftCols(n);
    out += rows * n;
  }
  pending.loss = loss;
  pending.pending = true;
  return loss;
}

void DenseClassifier::finish_gradient(DeferredGradient& pending, const Dataset& data, std::span<float> grad) {
  check_params(grad, "finish_gradient (grad)");
  check_data(data, "finish_gradient");
  const auto n = static_cast<Index>(pending.batch.size());
  if (!pending.pending || n == 0 || static_cast<int64_t>(pending.factors.size()) != deferred_floats(n))
    throw std::logic_error(type_ + " finish_gradient: no begun gradient of this model");
  gather(data, n, [&pending](Index j) { return pending.batch[static_cast<size_t>(j)]; });
  const Index last = static_cast<Index>(layers_.size()) - 1;
  const float* in = pending.factors.data();
  for (Index l = 0; l <= last; ++l) {
    const Index rows = layers_[static_cast<size_t>(l)].out;
    auto d = delta_of(l).leftCols(n);
    d = ConstMatMap(in, rows, n);
    in += rows * n;
  }
  for (Index l = 1; l <= last; ++l) {
    const Index rows = layers_[static_cast<size_t>(l)].in;
    act_[static_cast<size_t>(l - 1)].leftCols(n) = ConstMatMap(in, rows, n);
    in += rows * n;
  }
  weight_gradients(n, grad.data());
  pending.pending = false;
}

Evaluation DenseClassifier::evaluate(std::span<const float> params, const Dataset& data,
                                     std::span<const int32_t> indices) {
  check_params(params, "evaluate");
  check_data(data, "evaluate");
  return evaluate_in_chunks(data, indices, kEvalChunk,
                            [&](int64_t n, auto index_at, double& loss_sum, int64_t& correct) {
                              gather(data, n, index_at);
                              forward(params.data(), n);
                              softmax_xent_evaluate(act_.back(), n, labels_, loss_sum, correct);
                            });
}

std::unique_ptr<Model> make_mlp(int64_t features, int32_t classes, const std::vector<int64_t>& hidden,
                                WeightInit init) {
  return std::make_unique<DenseClassifier>("mlp", features, classes, hidden, init);
}

}  // namespace stalesim::detail
