// The part of the CUDA classifiers that does not depend on their layers
// (models/cuda/cuda_classifier.hpp): device set-up, batch upload, the softmax cross-entropy head,
// result download, timing, and the dense layer's SGEMMs and kernels.

#include "models/cuda/cuda_classifier.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/cuda/cublas_api.hpp"
#include "models/cuda/cuda_kernels.hpp"
#include "models/cuda/cuda_model.hpp"

namespace stalesim::detail {

CudaClassifier::CudaClassifier(std::string type, int64_t features, int32_t classes, int64_t eval_chunk)
    : type_(std::move(type)), features_(features), classes_(classes), eval_chunk_(eval_chunk) {}

void CudaClassifier::open_device(int64_t parameter_count) {
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
  params_.reserve(parameter_count, "cudaMalloc (parameters)");
  grad_.reserve(parameter_count, "cudaMalloc (gradient)");
  params_host_.reserve(parameter_count, "cudaMallocHost (parameters)");
  grad_host_.reserve(parameter_count, "cudaMallocHost (gradient)");
}

void CudaClassifier::reserve(int64_t n) {
  if (n <= capacity_) return;
  x_.reserve(features_ * n, "cudaMalloc (inputs)");
  x_host_.reserve(features_ * n, "cudaMallocHost (inputs)");
  reserve_layers(n);
  labels_.reserve(n, "cudaMalloc (labels)");
  labels_host_.reserve(n, "cudaMallocHost (labels)");
  losses_.reserve(n, "cudaMalloc (losses)");
  losses_host_.reserve(n, "cudaMallocHost (losses)");
  correct_.reserve(n, "cudaMalloc (predictions)");
  correct_host_.reserve(n, "cudaMallocHost (predictions)");
  capacity_ = n;
}

template <class IndexAt>
void CudaClassifier::gather(const Dataset& data, int64_t n, IndexAt index_at) {
  reserve(n);
  gather_samples(data, n, index_at, features_, classes_, type_, x_host_.data(), labels_host_.data());
}

double CudaClassifier::loss_and_gradient(std::span<const float> params, const Dataset& data,
                                         std::span<const int32_t> indices, std::span<float> grad) {
  check_param_count(params, parameter_count(), type_, "loss_and_gradient (params)");
  check_param_count(grad, parameter_count(), type_, "loss_and_gradient (grad)");
  check_dataset(data, features_, type_, "loss_and_gradient");
  if (indices.empty()) throw std::invalid_argument(type_ + " loss_and_gradient: empty batch");
  const auto n = static_cast<int64_t>(indices.size());
  gather(data, n, [&indices](int64_t j) { return static_cast<int64_t>(indices[static_cast<size_t>(j)]); });
  std::memcpy(params_host_.data(), params.data(), params.size_bytes());

  check(cudaEventRecord(ctx_.start, ctx_.stream), "cudaEventRecord");
  upload(n, true);
  forward(n);
  check(cuda::softmax_xent_backward(logits(), labels_.data(), classes_, n, 1.0f / static_cast<float>(n),
                                    losses_.data(), ctx_.stream),
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

Evaluation CudaClassifier::evaluate(std::span<const float> params, const Dataset& data,
                                    std::span<const int32_t> indices) {
  check_param_count(params, parameter_count(), type_, "evaluate");
  check_dataset(data, features_, type_, "evaluate");
  std::memcpy(params_host_.data(), params.data(), params.size_bytes());
  bool params_on_device = false;
  return evaluate_in_chunks(
      data, indices, eval_chunk_, [&](int64_t n, auto index_at, double& loss_sum, int64_t& correct) {
        gather(data, n, index_at);
        upload(n, !params_on_device);
        params_on_device = true;
        forward(n);
        check(cuda::softmax_xent_evaluate(logits(), labels_.data(), classes_, n, losses_.data(),
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

void CudaClassifier::upload(int64_t n, bool with_params) {
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

void CudaClassifier::copy_out(void* host, const void* device, int64_t bytes) {
  check(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, ctx_.stream),
        "cudaMemcpyAsync (results)");
}

void CudaClassifier::gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  const float one = 1.0f, zero = 0.0f;
  check(blas().sgemm(ctx_.handle, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one,
                     a, static_cast<int>(lda), b, static_cast<int>(ldb), &zero, c, static_cast<int>(ldc)),
        "cublasSgemm");
}

void CudaClassifier::layer_forward(const ParamBlock& b, const float* x, int64_t cols, float* y, bool relu) {
  gemm(CUBLAS_OP_N, CUBLAS_OP_N, b.out, cols, b.in, params_.data() + b.w, b.out, x, b.in, y, b.out);
  check(cuda::bias_activation(y, params_.data() + b.b, b.out, cols, relu, ctx_.stream), "bias_activation");
}

void CudaClassifier::layer_backward(const ParamBlock& b, const float* d, const float* x, int64_t cols,
                                    float* dx, const float* act) {
  float* g = grad_.data();
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, b.out, b.in, cols, d, b.out, x, b.in, g + b.w, b.out);
  check(cuda::bias_gradient(d, g + b.b, b.out, cols, ctx_.stream), "bias_gradient");
  if (dx == nullptr) return;
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, b.in, cols, b.out, params_.data() + b.w, b.out, d, b.out, dx, b.in);
  if (act != nullptr) check(cuda::relu_mask(dx, act, b.in * cols, ctx_.stream), "relu_mask");
}

}  // namespace stalesim::detail
