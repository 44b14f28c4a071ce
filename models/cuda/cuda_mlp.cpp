// The dense classifier behind "softmax" and "mlp" on the GPU (models/cuda/cuda_model.hpp): the
// forward and backward passes of models/mlp.cpp as cuBLAS SGEMMs and small kernels, on device
// buffers kept between calls. Each call copies the parameters and the gathered batch in and the
// gradient and per-sample losses out; CUDA events around that work give the iteration's GPU time
// (last_measured_seconds), for compute.timing "measured" and `stalesim calibrate`.

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "models/classifier_common.hpp"
#include "models/cuda/cublas_api.hpp"
#include "models/cuda/cuda_kernels.hpp"
#include "models/cuda/cuda_model.hpp"
#include "models/cuda/cuda_util.hpp"

namespace stalesim::detail {
namespace {

class CudaDenseClassifier final : public Model {
 public:
  CudaDenseClassifier(const std::string& type, int64_t features, int32_t classes,
                      const std::vector<int64_t>& hidden, bool he_init)
      : cpu_(type, features, classes, hidden, he_init ? WeightInit::kHe : WeightInit::kGlorot),
        type_(type),
        features_(features),
        classes_(classes) {
    std::vector<int64_t> widths{features};
    widths.insert(widths.end(), hidden.begin(), hidden.end());
    widths.push_back(classes);
    int64_t offset = 0;
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      Layer layer{widths[l], widths[l + 1], offset, offset + widths[l] * widths[l + 1]};
      offset = layer.b_offset + layer.out;
      layers_.push_back(layer);
    }
    if (offset != cpu_.parameter_count())
      throw std::logic_error("cuda " + type_ + ": layout differs from the CPU model's");
    act_.resize(layers_.size());
    delta_.resize(layers_.size() - 1);

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
    params_.reserve(offset, "cudaMalloc (parameters)");
    grad_.reserve(offset, "cudaMalloc (gradient)");
    params_host_.reserve(offset, "cudaMallocHost (parameters)");
    grad_host_.reserve(offset, "cudaMallocHost (gradient)");
  }

  CudaDenseClassifier(const CudaDenseClassifier&) = delete;
  CudaDenseClassifier& operator=(const CudaDenseClassifier&) = delete;

  std::string type() const override { return type_; }
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
    if (indices.empty()) throw std::invalid_argument(type_ + " loss_and_gradient: empty batch");
    const auto n = static_cast<int64_t>(indices.size());
    gather(data, n, [&indices](int64_t j) { return static_cast<int64_t>(indices[static_cast<size_t>(j)]); });
    std::memcpy(params_host_.data(), params.data(), params.size_bytes());

    check(cudaEventRecord(ctx_.start, ctx_.stream), "cudaEventRecord");
    upload(n, true);
    forward(n);
    check(cuda::softmax_xent_backward(act_.back().data(), labels_.data(), classes_, n,
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
          check(cuda::softmax_xent_evaluate(act_.back().data(), labels_.data(), classes_, n, losses_.data(),
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
  struct Layer {
    int64_t in = 0, out = 0;
    int64_t w_offset = 0, b_offset = 0;  // into the parameter vector
  };
  // Samples per evaluation chunk: bounds device memory during evaluate() (40 MB of inputs for
  // 784 features).
  static constexpr int64_t kEvalChunk = 10000;

  void check_params(std::span<const float> params, const char* what) const {
    if (static_cast<int64_t>(params.size()) != parameter_count()) {
      throw std::invalid_argument(type_ + " " + what + ": expected " + std::to_string(parameter_count()) +
                                  " values, got " + std::to_string(params.size()));
    }
  }

  void check_data(const Dataset& data, const char* what) const {
    if (data.features != features_) {
      throw std::invalid_argument(type_ + " " + what + ": model takes " + std::to_string(features_) +
                                  " features, dataset has " + std::to_string(data.features));
    }
    if (static_cast<int64_t>(data.x.size()) != data.size() * data.features) {
      throw std::invalid_argument(type_ + " " + what + ": dataset has " + std::to_string(data.x.size()) +
                                  " values for " + std::to_string(data.size()) + " samples");
    }
  }

  // Grows every per-sample buffer to at least n columns.
  void reserve(int64_t n) {
    if (n <= capacity_) return;
    x_.reserve(features_ * n, "cudaMalloc (inputs)");
    x_host_.reserve(features_ * n, "cudaMallocHost (inputs)");
    for (size_t l = 0; l < layers_.size(); ++l)
      act_[l].reserve(layers_[l].out * n, "cudaMalloc (activations)");
    for (size_t l = 0; l < delta_.size(); ++l) delta_[l].reserve(layers_[l].out * n, "cudaMalloc (deltas)");
    labels_.reserve(n, "cudaMalloc (labels)");
    labels_host_.reserve(n, "cudaMallocHost (labels)");
    losses_.reserve(n, "cudaMalloc (losses)");
    losses_host_.reserve(n, "cudaMallocHost (losses)");
    correct_.reserve(n, "cudaMalloc (predictions)");
    correct_host_.reserve(n, "cudaMallocHost (predictions)");
    capacity_ = n;
  }

  // Copies sample index_at(j), j < n, into column j of the pinned input buffer and its label into
  // the pinned labels; the same checks as the CPU model.
  template <class IndexAt>
  void gather(const Dataset& data, int64_t n, IndexAt index_at) {
    reserve(n);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = index_at(j);
      const int32_t y = checked_label(data, i, classes_, type_);
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

  // Forward pass on the first n columns of the inputs; logits end in act_.back().
  void forward(int64_t n) {
    const float* p = params_.data();
    for (size_t l = 0; l < layers_.size(); ++l) {
      const Layer& layer = layers_[l];
      const float* in = l == 0 ? x_.data() : act_[l - 1].data();
      // Z (out x n) = W (out x in) * A_prev (in x n)
      gemm(CUBLAS_OP_N, CUBLAS_OP_N, layer.out, n, layer.in, p + layer.w_offset, layer.out, in, layer.in,
           act_[l].data(), layer.out);
      check(cuda::bias_activation(act_[l].data(), p + layer.b_offset, layer.out, n, l + 1 < layers_.size(),
                                  ctx_.stream),
            "bias_activation");
    }
  }

  // Backward pass from d(loss)/d(logits) in act_.back(); writes the whole gradient on the device.
  void backward(int64_t n) {
    const float* p = params_.data();
    float* g = grad_.data();
    for (size_t k = layers_.size(); k-- > 0;) {
      const Layer& layer = layers_[k];
      const float* d = k + 1 == layers_.size() ? act_[k].data() : delta_[k].data();
      const float* in = k == 0 ? x_.data() : act_[k - 1].data();
      // dW (out x in) = D (out x n) * A_prev^T (n x in)
      gemm(CUBLAS_OP_N, CUBLAS_OP_T, layer.out, layer.in, n, d, layer.out, in, layer.in, g + layer.w_offset,
           layer.out);
      check(cuda::bias_gradient(d, g + layer.b_offset, layer.out, n, ctx_.stream), "bias_gradient");
      if (k > 0) {
        // D_prev (in x n) = W^T (in x out) * D (out x n), then masked by ReLU'
        gemm(CUBLAS_OP_T, CUBLAS_OP_N, layer.in, n, layer.out, p + layer.w_offset, layer.out, d, layer.out,
             delta_[k - 1].data(), layer.in);
        check(cuda::relu_mask(delta_[k - 1].data(), act_[k - 1].data(), layer.in * n, ctx_.stream),
              "relu_mask");
      }
    }
  }

  DenseClassifier cpu_;  // init, parameter count and FLOPs: the CPU model's, by construction
  std::string type_;
  int64_t features_;
  int32_t classes_;
  std::vector<Layer> layers_;
  std::optional<double> measured_;

  // The stream, events and cuBLAS handle; destroyed after the buffers below (members are
  // destroyed in reverse order), also when the constructor throws half-way.
  using Context = CudaContext;
  Context ctx_;
  int64_t capacity_ = 0;  // columns the per-sample buffers hold
  DeviceBuffer<float> params_, grad_, x_;
  std::vector<DeviceBuffer<float>> act_;    // per layer, out x capacity: ReLU outputs, last = logits
  std::vector<DeviceBuffer<float>> delta_;  // per hidden layer: d(loss)/d(pre-activation)
  DeviceBuffer<int32_t> labels_, correct_;
  DeviceBuffer<double> losses_;
  HostBuffer<float> params_host_, grad_host_, x_host_;
  HostBuffer<int32_t> labels_host_, correct_host_;
  HostBuffer<double> losses_host_;
};

}  // namespace

std::unique_ptr<Model> make_cuda_dense(const std::string& type, int64_t features, int32_t classes,
                                       const std::vector<int64_t>& hidden, bool he_init) {
  return std::make_unique<CudaDenseClassifier>(type, features, classes, hidden, he_init);
}

}  // namespace stalesim::detail
