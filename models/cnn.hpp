#pragma once
// Private to models/: "cnn", a LeNet-5-style convolutional network for square one-channel images
// (LeCun, Bottou, Bengio and Haffner, "Gradient-based learning applied to document recognition",
// Proc. IEEE 1998), in the modern form (ReLU instead of scaled tanh, max pooling instead of
// trainable subsampling, a full C3 instead of LeNet-5's partial connection table, softmax
// cross-entropy instead of RBF outputs):
//
//   input 1 x S x S (S = 28 for Fashion-MNIST; pixel (y, x) is feature y * S + x)
//   conv1 5x5, 6 channels, zero padding 2, stride 1  -> 6 x S x S,     ReLU
//   max pool 2x2, stride 2                           -> 6 x S/2 x S/2
//   conv2 5x5, 16 channels, no padding               -> 16 x (S/2-4)^2, ReLU
//   max pool 2x2, stride 2                           -> 16 x Q x Q, Q = (S/2-4)/2 (5 for S = 28)
//   dense 16 Q^2 -> 120, ReLU; dense 120 -> 84, ReLU; dense 84 -> classes; softmax cross-entropy
//
// S must be a multiple of 4 and >= 12. For S = 28 and 10 classes: 61,706 parameters.
//
// Parameter layout (the flat float vector the server holds), layer by layer, each W then b:
//   conv1 W: 6 x 25 column-major (out channel, ky * 5 + kx),       b: 6
//   conv2 W: 16 x 150 column-major (out channel, c * 25 + ky * 5 + kx), b: 16
//   dense W_l: out x in column-major, b_l: out; the first dense layer's input index is
//   c * Q^2 + y * Q + x (channel-major flattening of the second pooling's output).
// Initialization: He N(0, sqrt(2 / fan_in)) or Glorot uniform with fan_in = in channels x 25 and
// fan_out = out channels x 25 for the convolutions; biases 0.
//
// Computation: the convolutions run on chunks of 8 samples (so that the im2col matrices stay in
// the L2 cache), each as one im2col and one Eigen GEMM per pass with positions as rows and
// channels as columns (forward: positions x patch times patch x channels; conv2's weight
// gradient: channels x positions times positions x patch, accumulated over the chunks in sample
// order; conv2's input gradient: positions x channels times channels x patch), in float32,
// single-threaded, with scratch that only grows; the backward pass recomputes the im2col instead
// of keeping it for the whole batch. conv1's rows are ordered by pooling-window element
// (sample, dy, dx, py, px for position (2 py + dy, 2 px + dx); the gathered input is stored as
// four parity planes so that im2col1 copies whole rows), so that pool1 compares four contiguous
// planes, 8 windows per AVX2 step; pool2 splits each conv2 plane into such planes first. conv1's
// weight gradient (6 x 25, a 6272-deep sum per chunk) is a register-tiled packet kernel, not a
// GEMM: each lane sums the positions congruent to it in order, then the lanes are reduced in a
// fixed order. Pooling keeps the arg-max (ties to the first element of the window in row-major
// order: strict comparisons in that order, the same bits on the AVX2 and the scalar path) for the
// backward pass; col2im and the pooling backward pass accumulate in a fixed order.
// The dense layers run on the whole batch. Same inputs => bit-identical gradient.

#include <Eigen/Core>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "models/classifier_common.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"

namespace stalesim::detail {

// The shapes and parameter offsets of the CNN for an S x S input; shared with the CUDA model.
struct CnnShape {
  static constexpr int64_t kKernel = 5;                    // both convolutions are 5x5
  static constexpr int64_t kPad1 = 2;                      // conv1's zero padding
  static constexpr int64_t kC1 = 6;                        // conv1 output channels
  static constexpr int64_t kC2 = 16;                       // conv2 output channels
  static constexpr int64_t kDense1 = 120;                  // first dense width
  static constexpr int64_t kDense2 = 84;                   // second dense width
  static constexpr int64_t kK1 = kKernel * kKernel;        // conv1 patch: 25
  static constexpr int64_t kK2 = kC1 * kKernel * kKernel;  // conv2 patch: 150
  static constexpr int64_t kChunk = 8;                     // samples per convolution chunk (Cnn)
  static constexpr int64_t kEvalChunk = 256;               // samples per evaluation chunk (Cnn)

  int64_t side = 28;  // S
  int64_t classes = 10;
  int64_t h1 = 28;     // conv1 output side (= S)
  int64_t p1 = 14;     // pool1 output side
  int64_t h2 = 10;     // conv2 output side
  int64_t p2 = 5;      // pool2 output side (Q)
  int64_t flat = 400;  // kC2 * Q^2

  // Offsets into the parameter vector: conv1 W, b; conv2 W, b; dense 1..3 W, b.
  using Block = ParamBlock;
  std::array<Block, 5> blocks{};
  int64_t parameter_count = 0;
  // Nominal forward + backward FLOPs per sample: 6 per weight-use (2 forward, 4 backward:
  // weight and input gradient), i.e. 6 x (conv MACs + dense MACs) per sample, as the MLP counts.
  double flops_per_sample = 0.0;

  // REQUIRES: valid_side(side), classes >= 2.
  CnnShape(int64_t side, int64_t classes);
  // True when an S x S image fits the architecture (S % 4 == 0 and S >= 12).
  static bool valid_side(int64_t side) { return side >= 12 && side % 4 == 0; }
};

class Cnn final : public Model {
 public:
  // REQUIRES: features == side * side with CnnShape::valid_side(side); classes >= 2.
  Cnn(int64_t features, int32_t classes, WeightInit init);

  std::string type() const override { return "cnn"; }
  std::unique_ptr<Model> clone() const override { return std::make_unique<Cnn>(*this); }
  int64_t parameter_count() const override { return shape_.parameter_count; }
  double flops_per_sample() const override { return shape_.flops_per_sample; }

  void init(std::span<float> params, Rng& rng) override;
  double loss_and_gradient(std::span<const float> params, const Dataset& data,
                           std::span<const int32_t> indices, std::span<float> grad) override;
  Evaluation evaluate(std::span<const float> params, const Dataset& data,
                      std::span<const int32_t> indices) override;

  const CnnShape& shape() const { return shape_; }

 private:
  // Samples per evaluation chunk: bounds scratch memory during evaluate().
  static constexpr Eigen::Index kEvalChunk = CnnShape::kEvalChunk;
  // Samples per convolution chunk: the convolutions run on kChunk samples at a time so that their
  // im2col matrices (8 x 784 x 25 floats for conv1) stay in the L2 cache.
  static constexpr Eigen::Index kChunk = CnnShape::kChunk;

  void check_params(std::span<const float> params, const char* what) const {
    check_param_count(params, shape_.parameter_count, "cnn", what);
  }
  void check_data(const Dataset& data, const char* what) const {
    check_dataset(data, features_, "cnn", what);
  }
  void reserve(Eigen::Index n);
  template <class IndexAt>
  void gather(const Dataset& data, Eigen::Index n, IndexAt index_at);
  // im2col of samples [start, start + m) into cols1_ (from xpad_) and cols2_ (from p1_).
  void im2col1(Eigen::Index start, Eigen::Index m);
  void im2col2(Eigen::Index start, Eigen::Index m);
  // Forward pass on the first n gathered samples; logits end in logits_.
  void forward(const float* params, Eigen::Index n);
  // Backward pass from d(loss)/d(logits) in logits_; writes the whole gradient.
  void backward(const float* params, Eigen::Index n, float* grad);

  CnnShape shape_;
  int64_t features_;
  WeightInit init_;

  // Scratch, reused between calls (grown, never shrunk). Convolution activations are column-major
  // "positions x channels": row (s, y, x) of a chunk of m samples, one column (a plane) per channel.
  Eigen::Index capacity_ = 0;
  std::vector<float> xpad_;          // n x 4 parity planes of (S+4)/2 squared: inputs, zero border of 2
  Eigen::MatrixXf cols1_;            // (kChunk h1^2 + spare) x 25: conv1 im2col, window-element rows
  Eigen::MatrixXf z1_;               // kChunk h1^2 x 6: conv1 ReLU output (rows as cols1_); gradient too
  std::vector<float> p1_;            // pool1 output: per chunk, 6 planes of m x p1 x p1
  std::vector<int8_t> arg1_;         // per p1_ element: window element of the max, -1 if not > 0
  Eigen::MatrixXf dp1_;              // kChunk p1^2 x 6: gradient at pool1's output
  Eigen::MatrixXf cols2_;            // kChunk h2^2 x 150: conv2 im2col; its gradient in backward
  Eigen::MatrixXf z2_;               // kChunk h2^2 x 16: conv2 ReLU output; its gradient in backward
  std::vector<int8_t> arg2_;         // pool2's arg-max: per chunk, 16 planes of m x p2 x p2
  std::vector<float> split_;         // h2^2: one conv2 plane split into pooling-window elements
  Eigen::MatrixXf flat_;             // flat x n: pool2 output, flattened per sample
  Eigen::MatrixXf d1_, d2_;          // 120 x n, 84 x n: dense ReLU outputs
  Eigen::MatrixXf logits_;           // classes x n; d(loss)/d(logits) after the loss
  Eigen::MatrixXf g2_, g1_, gflat_;  // gradients at d2_, d1_ (pre-activation) and flat_
  Eigen::VectorXf db_;               // bias-gradient scratch (aligned: see mlp.cpp)
  std::vector<int32_t> labels_;
};

std::unique_ptr<Model> make_cnn(int64_t features, int32_t classes, WeightInit init);

}  // namespace stalesim::detail
