// "cnn" on the GPU (models/cuda/cuda_model.hpp): the forward and backward passes of
// models/cnn.cpp as cuBLAS SGEMMs (one per convolution over the whole batch, after an im2col
// kernel) and the small kernels of cnn_kernels.cu and cuda_kernels.cu, on device buffers kept
// between calls. Parameter layout, init, parameter count and FLOPs are the CPU model's (it is a
// member). Upload, the softmax cross-entropy head, download, timing and the dense layers are
// CudaClassifier's (models/cuda/cuda_classifier.hpp).

#include <memory>
#include <string>

#include "models/cnn.hpp"
#include "models/cuda/cnn_kernels.hpp"
#include "models/cuda/cuda_classifier.hpp"
#include "models/cuda/cuda_model.hpp"
#include "models/cuda/cuda_util.hpp"

namespace stalesim::detail {
namespace {

// Samples per evaluation chunk: conv1's im2col takes 25 x side^2 floats per sample (78 KB for
// 28 x 28), so 4096 samples hold about 320 MB of device memory.
constexpr int64_t kEvalChunk = 4096;

class CudaCnn final : public CudaClassifier {
 public:
  CudaCnn(int64_t features, int32_t classes, bool he_init)
      : CudaClassifier("cnn", features, classes, kEvalChunk),
        cpu_(features, classes, he_init ? WeightInit::kHe : WeightInit::kGlorot),
        shape_(cpu_.shape()) {
    open_device(shape_.parameter_count);
  }

  int64_t parameter_count() const override { return cpu_.parameter_count(); }
  double flops_per_sample() const override { return cpu_.flops_per_sample(); }
  // The CPU model's init: the same Rng draws, so the same bits.
  void init(std::span<float> params, Rng& rng) override { cpu_.init(params, rng); }

 private:
  void reserve_layers(int64_t n) override {
    const int64_t n1 = n * shape_.h1 * shape_.h1, np1 = n * shape_.p1 * shape_.p1,
                  n2 = n * shape_.h2 * shape_.h2;
    cols1_.reserve(CnnShape::kK1 * n1, "cudaMalloc (conv1 im2col)");
    a1_.reserve(CnnShape::kC1 * n1, "cudaMalloc (conv1)");
    da1_.reserve(CnnShape::kC1 * n1, "cudaMalloc (conv1 gradient)");
    p1_.reserve(CnnShape::kC1 * np1, "cudaMalloc (pool1)");
    dp1_.reserve(CnnShape::kC1 * np1, "cudaMalloc (pool1 gradient)");
    arg1_.reserve(CnnShape::kC1 * np1, "cudaMalloc (pool1 arg-max)");
    cols2_.reserve(CnnShape::kK2 * n2, "cudaMalloc (conv2 im2col)");
    dcols2_.reserve(CnnShape::kK2 * n2, "cudaMalloc (conv2 im2col gradient)");
    a2_.reserve(CnnShape::kC2 * n2, "cudaMalloc (conv2)");
    da2_.reserve(CnnShape::kC2 * n2, "cudaMalloc (conv2 gradient)");
    flat_.reserve(shape_.flat * n, "cudaMalloc (pool2)");
    gflat_.reserve(shape_.flat * n, "cudaMalloc (pool2 gradient)");
    arg2_.reserve(shape_.flat * n, "cudaMalloc (pool2 arg-max)");
    d1_.reserve(CnnShape::kDense1 * n, "cudaMalloc (dense1)");
    g1_.reserve(CnnShape::kDense1 * n, "cudaMalloc (dense1 gradient)");
    d2_.reserve(CnnShape::kDense2 * n, "cudaMalloc (dense2)");
    g2_.reserve(CnnShape::kDense2 * n, "cudaMalloc (dense2 gradient)");
    logits_.reserve(shape_.classes * n, "cudaMalloc (logits)");
  }

  float* logits() override { return logits_.data(); }

  void forward(int64_t n) override {
    const auto& B = shape_.blocks;
    const int64_t n1 = n * shape_.h1 * shape_.h1, n2 = n * shape_.h2 * shape_.h2;
    check(cuda::cnn_im2col_padded(inputs(), cols1_.data(), shape_.side, n, stream()), "cnn_im2col_padded");
    layer_forward(B[0], cols1_.data(), n1, a1_.data(), true);
    check(cuda::cnn_max_pool(a1_.data(), p1_.data(), arg1_.data(), CnnShape::kC1, shape_.h1, n, false,
                             stream()),
          "cnn_max_pool");
    check(cuda::cnn_im2col(p1_.data(), cols2_.data(), CnnShape::kC1, shape_.p1, n, stream()), "cnn_im2col");
    layer_forward(B[1], cols2_.data(), n2, a2_.data(), true);
    check(cuda::cnn_max_pool(a2_.data(), flat_.data(), arg2_.data(), CnnShape::kC2, shape_.h2, n, true,
                             stream()),
          "cnn_max_pool");
    layer_forward(B[2], flat_.data(), n, d1_.data(), true);
    layer_forward(B[3], d1_.data(), n, d2_.data(), true);
    layer_forward(B[4], d2_.data(), n, logits_.data(), false);
  }

  void backward(int64_t n) override {
    const auto& B = shape_.blocks;
    const int64_t n1 = n * shape_.h1 * shape_.h1, n2 = n * shape_.h2 * shape_.h2;
    layer_backward(B[4], logits_.data(), d2_.data(), n, g2_.data(), d2_.data());
    layer_backward(B[3], g2_.data(), d1_.data(), n, g1_.data(), d1_.data());
    layer_backward(B[2], g1_.data(), flat_.data(), n, gflat_.data(), nullptr);
    check(cuda::cnn_unpool(gflat_.data(), arg2_.data(), a2_.data(), da2_.data(), CnnShape::kC2, shape_.h2, n,
                           true, stream()),
          "cnn_unpool");
    layer_backward(B[1], da2_.data(), cols2_.data(), n2, dcols2_.data(), nullptr);
    check(cuda::cnn_col2im(dcols2_.data(), dp1_.data(), CnnShape::kC1, shape_.p1, n, stream()), "cnn_col2im");
    check(cuda::cnn_unpool(dp1_.data(), arg1_.data(), a1_.data(), da1_.data(), CnnShape::kC1, shape_.h1, n,
                           false, stream()),
          "cnn_unpool");
    layer_backward(B[0], da1_.data(), cols1_.data(), n1, nullptr, nullptr);
  }

  Cnn cpu_;  // init, layout, parameter count and FLOPs: the CPU model's, by construction
  CnnShape shape_;
  DeviceBuffer<float> cols1_, a1_, da1_, p1_, dp1_, cols2_, dcols2_, a2_, da2_;
  DeviceBuffer<float> flat_, gflat_, d1_, g1_, d2_, g2_, logits_;
  DeviceBuffer<int32_t> arg1_, arg2_;
};

}  // namespace

std::unique_ptr<Model> make_cuda_cnn(int64_t features, int32_t classes, bool he_init) {
  return std::make_unique<CudaCnn>(features, classes, he_init);
}

}  // namespace stalesim::detail
