#pragma once
// Private to models/cuda/: what the CUDA dense classifier (cuda_mlp.cpp) and CNN (cuda_cnn.cpp)
// share: the stream, events and cuBLAS handle; the parameter, gradient, input, label and loss
// buffers (device and pinned host); gathering a batch, copying it and the parameters in and the
// gradient and per-sample losses out; the softmax cross-entropy head; the timed
// loss_and_gradient and the chunked evaluate; and the dense layer (SGEMM, bias, ReLU) both run.
// A subclass owns its layout and its per-sample activations and writes forward() and backward().

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "models/classifier_common.hpp"
#include "models/cuda/cuda_util.hpp"

namespace stalesim::detail {

class CudaClassifier : public Model {
 public:
  CudaClassifier(const CudaClassifier&) = delete;
  CudaClassifier& operator=(const CudaClassifier&) = delete;

  std::string type() const final { return type_; }
  std::optional<double> last_measured_seconds() const final { return measured_; }
  // Copies the parameters and the gathered batch in, runs forward(), the softmax cross-entropy
  // head and backward(), and copies the gradient and the per-sample losses out, between two CUDA
  // events (last_measured_seconds()). The mean loss is summed on the host in column order, in
  // double, as on the CPU.
  double loss_and_gradient(std::span<const float> params, const Dataset& data,
                           std::span<const int32_t> indices, std::span<float> grad) final;
  // forward() and the head's per-sample losses and arg-max checks, chunk by chunk (the parameters
  // are copied in once).
  Evaluation evaluate(std::span<const float> params, const Dataset& data,
                      std::span<const int32_t> indices) final;

 protected:
  // Keeps the sizes; touches no device, so that the subclass's CPU model and layout come first.
  // eval_chunk: samples per evaluation chunk, bounding the per-sample device memory.
  CudaClassifier(std::string type, int64_t features, int32_t classes, int64_t eval_chunk);
  // Requires a CUDA device ("no CUDA device: ..." before anything else fails less clearly),
  // creates the stream, events and cuBLAS handle (plain FP32, no atomics) and the parameter and
  // gradient buffers. The subclass's constructor calls it once, when its layout is known.
  void open_device(int64_t parameter_count);

  // Grows the subclass's per-sample buffers to at least n samples.
  virtual void reserve_layers(int64_t n) = 0;
  // Forward pass on the first n uploaded samples; logits (classes x n) end in logits().
  virtual void forward(int64_t n) = 0;
  // Backward pass from d(loss)/d(logits) in logits(); writes the whole gradient on the device
  // (through layer_backward).
  virtual void backward(int64_t n) = 0;
  virtual float* logits() = 0;

  // Y (out x cols) = W X + b, then ReLU when `relu`, for parameter block b.
  void layer_forward(const ParamBlock& b, const float* x, int64_t cols, float* y, bool relu);
  // dW = D X^T and db = row sums of D for block b; then, when dx is given, dX = W^T D (masked by
  // ReLU' of `act` when that is given).
  void layer_backward(const ParamBlock& b, const float* d, const float* x, int64_t cols, float* dx,
                      const float* act);

  const float* inputs() const { return x_.data(); }  // features x n: the uploaded samples
  cudaStream_t stream() const { return ctx_.stream; }

 private:
  // Grows every per-sample buffer (ours, then reserve_layers) to at least n samples.
  void reserve(int64_t n);
  // Copies sample index_at(j), j < n, into column j of the pinned inputs and its label into the
  // pinned labels; the same checks as the CPU model.
  template <class IndexAt>
  void gather(const Dataset& data, int64_t n, IndexAt index_at);
  void upload(int64_t n, bool with_params);
  void copy_out(void* host, const void* device, int64_t bytes);
  // C (m x n) = op(A) op(B), column-major, leading dimensions as stored.
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const float* a,
            int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

  std::string type_;
  int64_t features_;
  int32_t classes_;
  int64_t eval_chunk_;
  std::optional<double> measured_;

  CudaContext ctx_;       // before the buffers: destroyed after them (and the subclass's)
  int64_t capacity_ = 0;  // samples the per-sample buffers hold
  DeviceBuffer<float> params_, grad_, x_;
  DeviceBuffer<int32_t> labels_, correct_;
  DeviceBuffer<double> losses_;
  HostBuffer<float> params_host_, grad_host_, x_host_;
  HostBuffer<int32_t> labels_host_, correct_host_;
  HostBuffer<double> losses_host_;
};

}  // namespace stalesim::detail
