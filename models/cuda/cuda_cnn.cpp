// "cnn" on the GPU (models/cuda/cuda_model.hpp): the forward and backward passes of
// models/cnn.cpp as cuBLAS SGEMMs (one per convolution over the whole batch, after an im2col
// kernel) and the small kernels of cnn_kernels.cu and cuda_kernels.cu, on device buffers kept
// between calls. Parameter layout, init, parameter count and FLOPs are the CPU model's (it is a
// member). Each call copies the parameters and the gathered batch in and the gradient and
// per-sample losses out; CUDA events around that work give last_measured_seconds().

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "models/cnn.hpp"
#include "models/cuda/cnn_kernels.hpp"
#include "models/cuda/cuda_kernels.hpp"
#include "models/cuda/cuda_model.hpp"
#include "models/cuda/cuda_util.hpp"

namespace stalesim::detail {
namespace {

class CudaCnn final : public Model {
 public:
  CudaCnn(int64_t features, int32_t classes, bool he_init)
      : cpu_(features, classes, he_init ? WeightInit::kHe : WeightInit::kGlorot),
        shape_(cpu_.shape()),
        features_(features),
        classes_(classes) {
    require_cuda_device();  // "no CUDA device: ..." before anything else fails less clearly
    check(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&ctx_.start), "cudaEventCreate");
    check(cudaEventCreate(&ctx_.stop), "cudaEventCreate");
    check(blas().create(&ctx_.handle), "cublasCreate");
    check(blas().set_stream(ctx_.handle, ctx_.stream), "cublasSetStream");
    // Plain FP32: no TF32 tensor cores, no BF16x9 emulation, whatever the environment says.
    check(blas().set_math_mode(ctx_.handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    check(blas().set_atomics_mode(ctx_.handle, CUBLAS_ATOMICS_NOT_ALLOWED), "cublasSetAtomicsMode");
    check(blas().set_pointer_mode(ctx_.handle, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
    const int64_t count = shape_.parameter_count;
    params_.reserve(count, "cudaMalloc (parameters)");
    grad_.reserve(count, "cudaMalloc (gradient)");
    params_host_.reserve(count, "cudaMallocHost (parameters)");
    grad_host_.reserve(count, "cudaMallocHost (gradient)");
  }

  CudaCnn(const CudaCnn&) = delete;
  CudaCnn& operator=(const CudaCnn&) = delete;

  std::string type() const override { return "cnn"; }
  int64_t parameter_count() const override { return cpu_.parameter_count(); }
  double flops_per_sample() const override { return cpu_.flops_per_sample(); }
  // The CPU model's init: the same Rng draws, so the same bits.
  void init(std::span<float> params, Rng& rng) override { cpu_.init(params, rng); }
  std::optional<double> last_measured_seconds() const override { return measured_; }

  double loss_and_gradient(std::span<const float> params, const Dataset& data,
                           std::span<const int32_t> indices, std::span<float> grad) override {
    check_params(params, "loss_and_gradient (params)");
    check_params(grad, "loss_and_gradient (grad)");
    check_data(data, "loss_and_gradient");
    if (indices.empty()) throw std::invalid_argument("cnn loss_and_gradient: empty batch");
    const auto n = static_cast<int64_t>(indices.size());
    gather(data, n, [&indices](int64_t j) { return static_cast<int64_t>(indices[static_cast<size_t>(j)]); });
    std::memcpy(params_host_.data(), params.data(), params.size_bytes());

    check(cudaEventRecord(ctx_.start, ctx_.stream), "cudaEventRecord");
    upload(n, true);
    forward(n);
    check(cuda::softmax_xent_backward(logits_.data(), labels_.data(), classes_, n,
                                      1.0f / static_cast<float>(n), losses_.data(), ctx_.stream),
          "softmax_xent_backward");
    backward(n);
    copy_out(grad_host_.data(), grad_.data(), parameter_count() * static_cast<int64_t>(sizeof(float)));
    copy_out(losses_host_.data(), losses_.data(), n * static_cast<int64_t>(sizeof(double)));
    check(cudaEventRecord(ctx_.stop, ctx_.stream), "cudaEventRecord");
    check(cudaEventSynchronize(ctx_.stop), "cudaEventSynchronize");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, ctx_.start, ctx_.stop), "cudaEventElapsedTime");
    measured_ = static_cast<double>(ms) * 1e-3;

    std::memcpy(grad.data(), grad_host_.data(), grad.size_bytes());
    double loss_sum = 0.0;  // column order, in double: the CPU model's order
    for (int64_t j = 0; j < n; ++j) loss_sum += losses_host_.data()[j];
    return loss_sum / static_cast<double>(n);
  }

  Evaluation evaluate(std::span<const float> params, const Dataset& data,
                      std::span<const int32_t> indices) override {
    check_params(params, "evaluate");
    check_data(data, "evaluate");
    std::memcpy(params_host_.data(), params.data(), params.size_bytes());
    bool params_on_device = false;
    return evaluate_in_chunks(
        data, indices, kEvalChunk, [&](int64_t n, auto index_at, double& loss_sum, int64_t& correct) {
          gather(data, n, index_at);
          upload(n, !params_on_device);
          params_on_device = true;
          forward(n);
          check(cuda::softmax_xent_evaluate(logits_.data(), labels_.data(), classes_, n, losses_.data(),
                                            correct_.data(), ctx_.stream),
                "softmax_xent_evaluate");
          copy_out(losses_host_.data(), losses_.data(), n * static_cast<int64_t>(sizeof(double)));
          copy_out(correct_host_.data(), correct_.data(), n * static_cast<int64_t>(sizeof(int32_t)));
          check(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
          for (int64_t j = 0; j < n; ++j) {
            loss_sum += losses_host_.data()[j];
            correct += correct_host_.data()[j];
          }
        });
  }

 private:
  // Samples per evaluation chunk: conv1's im2col takes 25 x side^2 floats per sample (78 KB for
  // 28 x 28), so 4096 samples hold about 320 MB of device memory.
  static constexpr int64_t kEvalChunk = 4096;

  void check_params(std::span<const float> params, const char* what) const {
    if (static_cast<int64_t>(params.size()) != parameter_count()) {
      throw std::invalid_argument(std::string("cnn ") + what + ": expected " +
                                  std::to_string(parameter_count()) + " values, got " +
                                  std::to_string(params.size()));
    }
  }

  void check_data(const Dataset& data, const char* what) const {
    if (data.features != features_) {
      throw std::invalid_argument(std::string("cnn ") + what + ": model takes " + std::to_string(features_) +
                                  " features, dataset has " + std::to_string(data.features));
    }
    if (static_cast<int64_t>(data.x.size()) != data.size() * data.features) {
      throw std::invalid_argument(std::string("cnn ") + what + ": dataset has " +
                                  std::to_string(data.x.size()) + " values for " +
                                  std::to_string(data.size()) + " samples");
    }
  }

  // Grows every per-sample buffer to at least n samples.
  void reserve(int64_t n) {
    if (n <= capacity_) return;
    const int64_t n1 = n * shape_.h1 * shape_.h1, np1 = n * shape_.p1 * shape_.p1,
                  n2 = n * shape_.h2 * shape_.h2;
    x_.reserve(features_ * n, "cudaMalloc (inputs)");
    x_host_.reserve(features_ * n, "cudaMallocHost (inputs)");
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
    logits_.reserve(classes_ * n, "cudaMalloc (logits)");
    labels_.reserve(n, "cudaMalloc (labels)");
    labels_host_.reserve(n, "cudaMallocHost (labels)");
    losses_.reserve(n, "cudaMalloc (losses)");
    losses_host_.reserve(n, "cudaMallocHost (losses)");
    correct_.reserve(n, "cudaMalloc (predictions)");
    correct_host_.reserve(n, "cudaMallocHost (predictions)");
    capacity_ = n;
  }

  // Copies sample index_at(j), j < n, into column j of the pinned inputs and its label into the
  // pinned labels; the same checks as the CPU model.
  template <class IndexAt>
  void gather(const Dataset& data, int64_t n, IndexAt index_at) {
    reserve(n);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = index_at(j);
      const int32_t y = checked_label(data, i, classes_, "cnn");
      labels_host_.data()[j] = y;
      std::memcpy(x_host_.data() + j * features_, data.sample(i),
                  static_cast<size_t>(features_) * sizeof(float));
    }
  }

  void upload(int64_t n, bool with_params) {
    if (with_params) {
      check(cudaMemcpyAsync(params_.data(), params_host_.data(),
                            static_cast<size_t>(parameter_count()) * sizeof(float), cudaMemcpyHostToDevice,
                            ctx_.stream),
            "cudaMemcpyAsync (parameters)");
    }
    check(cudaMemcpyAsync(x_.data(), x_host_.data(), static_cast<size_t>(features_ * n) * sizeof(float),
                          cudaMemcpyHostToDevice, ctx_.stream),
          "cudaMemcpyAsync (inputs)");
    check(cudaMemcpyAsync(labels_.data(), labels_host_.data(), static_cast<size_t>(n) * sizeof(int32_t),
                          cudaMemcpyHostToDevice, ctx_.stream),
          "cudaMemcpyAsync (labels)");
  }

  void copy_out(void* host, const void* device, int64_t bytes) {
    check(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, ctx_.stream),
          "cudaMemcpyAsync (results)");
  }

  // C (m x n) = op(A) op(B), column-major, leading dimensions as stored.
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const float* a,
            int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
    const float one = 1.0f, zero = 0.0f;
    check(
        blas().sgemm(ctx_.handle, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one,
                     a, static_cast<int>(lda), b, static_cast<int>(ldb), &zero, c, static_cast<int>(ldc)),
        "cublasSgemm");
  }

  // Y (out x cols) = W X + b, then ReLU when `relu`, for parameter block l.
  void layer_forward(size_t l, const float* x, int64_t cols, float* y, bool relu) {
    const auto& b = shape_.blocks[l];
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, b.out, cols, b.in, params_.data() + b.w, b.out, x, b.in, y, b.out);
    check(cuda::bias_activation(y, params_.data() + b.b, b.out, cols, relu, ctx_.stream), "bias_activation");
  }

  // dW = D X^T and db = row sums of D for block l; then, when dx is given, dX = W^T D (masked by
  // ReLU' of `act` when that is given).
  void layer_backward(size_t l, const float* d, const float* x, int64_t cols, float* dx, const float* act) {
    const auto& b = shape_.blocks[l];
    float* g = grad_.data();
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, b.out, b.in, cols, d, b.out, x, b.in, g + b.w, b.out);
    check(cuda::bias_gradient(d, g + b.b, b.out, cols, ctx_.stream), "bias_gradient");
    if (dx == nullptr) return;
    gemm(CUBLAS_OP_T, CUBLAS_OP_N, b.in, cols, b.out, params_.data() + b.w, b.out, d, b.out, dx, b.in);
    if (act != nullptr) check(cuda::relu_mask(dx, act, b.in * cols, ctx_.stream), "relu_mask");
  }

  void forward(int64_t n) {
    const int64_t n1 = n * shape_.h1 * shape_.h1, n2 = n * shape_.h2 * shape_.h2;
    check(cuda::cnn_im2col_padded(x_.data(), cols1_.data(), shape_.side, n, ctx_.stream),
          "cnn_im2col_padded");
    layer_forward(0, cols1_.data(), n1, a1_.data(), true);
    check(cuda::cnn_max_pool(a1_.data(), p1_.data(), arg1_.data(), CnnShape::kC1, shape_.h1, n, false,
                             ctx_.stream),
          "cnn_max_pool");
    check(cuda::cnn_im2col(p1_.data(), cols2_.data(), CnnShape::kC1, shape_.p1, n, ctx_.stream),
          "cnn_im2col");
    layer_forward(1, cols2_.data(), n2, a2_.data(), true);
    check(cuda::cnn_max_pool(a2_.data(), flat_.data(), arg2_.data(), CnnShape::kC2, shape_.h2, n, true,
                             ctx_.stream),
          "cnn_max_pool");
    layer_forward(2, flat_.data(), n, d1_.data(), true);
    layer_forward(3, d1_.data(), n, d2_.data(), true);
    layer_forward(4, d2_.data(), n, logits_.data(), false);
  }

  void backward(int64_t n) {
    const int64_t n1 = n * shape_.h1 * shape_.h1, n2 = n * shape_.h2 * shape_.h2;
    layer_backward(4, logits_.data(), d2_.data(), n, g2_.data(), d2_.data());
    layer_backward(3, g2_.data(), d1_.data(), n, g1_.data(), d1_.data());
    layer_backward(2, g1_.data(), flat_.data(), n, gflat_.data(), nullptr);
    check(cuda::cnn_unpool(gflat_.data(), arg2_.data(), a2_.data(), da2_.data(), CnnShape::kC2, shape_.h2, n,
                           true, ctx_.stream),
          "cnn_unpool");
    layer_backward(1, da2_.data(), cols2_.data(), n2, dcols2_.data(), nullptr);
    check(cuda::cnn_col2im(dcols2_.data(), dp1_.data(), CnnShape::kC1, shape_.p1, n, ctx_.stream),
          "cnn_col2im");
    check(cuda::cnn_unpool(dp1_.data(), arg1_.data(), a1_.data(), da1_.data(), CnnShape::kC1, shape_.h1, n,
                           false, ctx_.stream),
          "cnn_unpool");
    layer_backward(0, da1_.data(), cols1_.data(), n1, nullptr, nullptr);
  }

  Cnn cpu_;  // init, layout, parameter count and FLOPs: the CPU model's, by construction
  CnnShape shape_;
  int64_t features_;
  int32_t classes_;
  std::optional<double> measured_;

  CudaContext ctx_;       // before the buffers: destroyed after them
  int64_t capacity_ = 0;  // samples the per-sample buffers hold
  DeviceBuffer<float> params_, grad_, x_;
  DeviceBuffer<float> cols1_, a1_, da1_, p1_, dp1_, cols2_, dcols2_, a2_, da2_;
  DeviceBuffer<float> flat_, gflat_, d1_, g1_, d2_, g2_, logits_;
  DeviceBuffer<int32_t> arg1_, arg2_, labels_, correct_;
  DeviceBuffer<double> losses_;
  HostBuffer<float> params_host_, grad_host_, x_host_;
  HostBuffer<int32_t> labels_host_, correct_host_;
  HostBuffer<double> losses_host_;
};

}  // namespace

std::unique_ptr<Model> make_cuda_cnn(int64_t features, int32_t classes, bool he_init) {
  return std::make_unique<CudaCnn>(features, classes, he_init);
}

}  // namespace stalesim::detail
