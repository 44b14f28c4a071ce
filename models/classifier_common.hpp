#pragma once
// Private to models/: the dense classifier behind "softmax" and "mlp", the softmax cross-entropy
// output, and the factories make_model() dispatches to. Not part of the library's interface.

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/rng.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"

namespace stalesim::detail {

// The dense classifiers' evaluation chunk (DenseClassifier; model_scratch_bytes).
inline constexpr int64_t kDenseEvalChunk = 1000;

using WeightInit = stalesim::WeightInit;  // models/model.hpp

// Column-major Eigen views of the caller's parameters and gradient and of saved factors.
using MatMap = Eigen::Map<Eigen::MatrixXf>;
using ConstMatMap = Eigen::Map<const Eigen::MatrixXf>;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;

// One dense block of a parameter vector: W (out x in, column-major) at offset w, then b (out
// values) at offset b. The CNN's blocks (models/cnn.hpp) and the CUDA models' layers.
struct ParamBlock {
  int64_t out = 0, in = 0;
  int64_t w = 0, b = 0;
};

// The argument checks every classifier makes, throwing std::invalid_argument with a message that
// starts "<model> <what>: ": that a parameter or gradient span holds `count` values, and that a
// dataset has `features` features and size() x features values in x.
void check_param_count(std::span<const float> params, int64_t count, std::string_view model,
                       const char* what);
void check_dataset(const Dataset& data, int64_t features, std::string_view model, const char* what);

// Softmax cross-entropy on the first n columns of `logits` (classes x n, one column per sample),
// labels[j] being column j's label. Overwrites those columns with d(loss)/d(logits) scaled by
// `scale` (1/n for a mean loss) and returns the sum of the per-sample losses, accumulated in
// double in column order. Uses the stable log-sum-exp. REQUIRES: labels in [0, rows).
double softmax_xent_backward(Eigen::MatrixXf& logits, Eigen::Index n, std::span<const int32_t> labels,
                             float scale);

// Adds the per-sample losses of the first n columns of `logits` to `loss_sum` (double, column
// order) and the number of arg-max predictions (ties to the lowest class) equal to the label to
// `correct`.
void softmax_xent_evaluate(const Eigen::MatrixXf& logits, Eigen::Index n, std::span<const int32_t> labels,
                           double& loss_sum, int64_t& correct);

// The label of sample i of `data`, after the checks every classifier makes while gathering a
// batch: std::out_of_range unless 0 <= i < data.size(), std::invalid_argument unless the label is
// in [0, classes). `model` ("mlp", "cnn", ...) starts the messages.
int32_t checked_label(const Dataset& data, int64_t i, int32_t classes, const std::string& model);

// Gathers a batch: copies sample index_at(j), j < n, to x + j * features (column j of a
// column-major features x n matrix) and its checked_label to labels[j].
template <class IndexAt>
void gather_samples(const Dataset& data, int64_t n, IndexAt index_at, int64_t features, int32_t classes,
                    const std::string& model, float* x, int32_t* labels) {
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = index_at(j);
    labels[j] = checked_label(data, i, classes, model);
    std::memcpy(x + j * features, data.sample(i), static_cast<size_t>(features) * sizeof(float));
  }
}

// A classifier's evaluation, in chunks of at most `chunk` samples (bounding scratch memory):
// eval_chunk(n, index_at, loss_sum, correct) gathers and evaluates the n samples index_at(0..n-1)
// (dataset indices, from `indices`, or all samples in order when `indices` is empty), adding their
// losses and correct predictions, in sample order. Returns the mean loss and accuracy.
template <class EvalChunk>
Evaluation evaluate_in_chunks(const Dataset& data, std::span<const int32_t> indices, int64_t chunk,
                              EvalChunk eval_chunk) {
  const int64_t total = indices.empty() ? data.size() : static_cast<int64_t>(indices.size());
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < total; begin += chunk) {
    const int64_t n = std::min(chunk, total - begin);
    if (indices.empty()) {
      eval_chunk(
          n, [begin](int64_t j) { return begin + j; }, loss_sum, correct);
    } else {
      eval_chunk(
          n,
          [&indices, begin](int64_t j) {
            return static_cast<int64_t>(indices[static_cast<size_t>(begin + j)]);
          },
          loss_sum, correct);
    }
  }
  Evaluation e;
  e.samples = total;
  if (total > 0) {
    e.loss = loss_sum / static_cast<double>(total);
    e.accuracy = static_cast<double>(correct) / static_cast<double>(total);
  }
  return e;
}

// A fully connected network: `hidden` ReLU layers then a linear layer to `classes` logits, with
// softmax cross-entropy loss. With no hidden layer it is multinomial logistic regression.
// Parameter layout, layer by layer: W_l (out x in, column-major) then b_l (out).
class DenseClassifier final : public Model {
 public:
  // REQUIRES: arguments validated by make_model (positive sizes, no overflow).
  DenseClassifier(std::string type, int64_t features, int32_t classes, const std::vector<int64_t>& hidden,
                  WeightInit init);

  std::string type() const override { return type_; }
  int64_t parameter_count() const override { return parameter_count_; }
  // 6 x (sum over layers of in x out): 2 FLOPs per weight forward (multiply-add) and 4 backward
  // (weight gradient and input gradient). Biases, activations and the loss are not counted, and
  // the first layer's input gradient (never computed) is, to keep the usual nominal figure.
  double flops_per_sample() const override { return flops_per_sample_; }

  void init(std::span<float> params, Rng& rng) override;
  double loss_and_gradient(std::span<const float> params, const Dataset& data,
                           std::span<const int32_t> indices, std::span<float> grad) override;
  Evaluation evaluate(std::span<const float> params, const Dataset& data,
                      std::span<const int32_t> indices) override;
  // Deferred: begin keeps each layer's delta (out x n) and the hidden activations feeding the
  // next layer (in x n); finish re-gathers the inputs and runs the same weight-gradient GEMMs.
  bool can_defer_gradient() const override { return true; }
  double begin_gradient(std::span<const float> params, const Dataset& data, std::span<const int32_t> indices,
                        DeferredGradient& pending) override;
  void finish_gradient(DeferredGradient& pending, const Dataset& data, std::span<float> grad) override;
  int64_t deferred_floats(int64_t batch) const override;
  std::unique_ptr<Model> clone() const override { return std::make_unique<DenseClassifier>(*this); }

 private:
  struct Layer {
    Eigen::Index in = 0, out = 0;
    int64_t w_offset = 0, b_offset = 0;  // into the parameter vector
  };
  // Samples per evaluation chunk: bounds scratch memory during evaluate().
  static constexpr Eigen::Index kEvalChunk = kDenseEvalChunk;

  void check_params(std::span<const float> params, const char* what) const {
    check_param_count(params, parameter_count_, type_, what);
  }
  void check_data(const Dataset& data, const char* what) const {
    check_dataset(data, features_, type_, what);
  }
  // Grows the scratch matrices to at least n columns (never shrinks: no reallocation once the
  // largest batch or chunk has been seen).
  void reserve(Eigen::Index n);
  // Copies sample index_at(j), j < n, into column j of x_ and its label into labels_.
  template <class IndexAt>
  void gather(const Dataset& data, Eigen::Index n, IndexAt index_at);
  // Forward pass on the first n columns of x_; logits end in act_.back().
  void forward(const float* params, Eigen::Index n);
  // d(loss)/d(pre-activation) of layer l (samples in columns): delta_[l], or for the last layer
  // the logits' gradient, which the softmax head writes over the logits in act_.back().
  Eigen::MatrixXf& delta_of(Eigen::Index l);
  // Gathers the batch, runs the forward pass and the softmax head and back-propagates the deltas
  // (delta_) from d(loss)/d(logits) in act_.back(); returns the batch's mean loss. Reads params.
  double forward_backward(const float* params, const Dataset& data, std::span<const int32_t> indices);
  // Writes every layer's weight and bias gradient from the deltas, the activations and x_. Reads
  // no parameter: the step a deferred gradient leaves for later.
  void weight_gradients(Eigen::Index n, float* grad);

  std::string type_;
  int64_t features_;
  int32_t classes_;
  WeightInit init_;
  std::vector<Layer> layers_;
  int64_t parameter_count_ = 0;
  double flops_per_sample_ = 0.0;

  // Scratch, reused between calls; columns are samples.
  Eigen::MatrixXf x_;                   // features x capacity: the gathered inputs
  std::vector<Eigen::MatrixXf> act_;    // per layer, out x capacity: ReLU outputs, last = logits
  std::vector<Eigen::MatrixXf> delta_;  // per hidden layer: d(loss)/d(pre-activation)
  std::vector<int32_t> labels_;         // capacity: the gathered labels
  Eigen::VectorXf db_;                  // widest layer: a bias gradient before it is copied out
};

std::unique_ptr<Model> make_softmax(int64_t features, int32_t classes, WeightInit init);
std::unique_ptr<Model> make_mlp(int64_t features, int32_t classes, const std::vector<int64_t>& hidden,
                                WeightInit init);
std::unique_ptr<Model> make_time_only(int64_t parameters, double flops_per_sample);

}  // namespace stalesim::detail
