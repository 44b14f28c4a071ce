// The small kernels of the CUDA dense classifier (models/cuda/cuda_kernels.hpp). Kept to a few
// plain kernels so that nvcc compiles this file quickly for every architecture in the build.
// Built with --fmad=false: no fused multiply-adds the CPU build (-ffp-contract=off) does not make.

#include "models/cuda/cuda_kernels.hpp"

#include <cuda_runtime.h>

namespace stalesim::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride loops cover the rest

int blocks_for(int64_t count) {
  const int64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

__global__ void bias_activation_kernel(float* z, const float* b, int64_t rows, int64_t count, bool relu) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = z[i] + b[i % rows];
    z[i] = relu && v < 0.0f ? 0.0f : v;
  }
}

__global__ void relu_mask_kernel(float* delta, const float* act, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (!(act[i] > 0.0f)) delta[i] = 0.0f;
  }
}

__global__ void bias_gradient_kernel(const float* d, float* db, int64_t rows, int64_t n) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float s = 0.0f;
    for (int64_t j = 0; j < n; ++j) s += d[r + j * rows];
    db[r] = s;
  }
}

// One thread per sample: classes is small (10 for Fashion-MNIST).
__global__ void xent_backward_kernel(float* logits, const int32_t* labels, int64_t classes, int64_t n,
                                     float scale, double* losses) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float* z = logits + j * classes;
    const int32_t y = labels[j];
    const float zy = z[y];
    float m = z[0];
    for (int64_t k = 1; k < classes; ++k) m = fmaxf(m, z[k]);
    float s = 0.0f;
    for (int64_t k = 0; k < classes; ++k) {
      z[k] = expf(z[k] - m);
      s += z[k];
    }
    losses[j] = static_cast<double>(m) + log(static_cast<double>(s)) - static_cast<double>(zy);
    const float f = scale / s;
    for (int64_t k = 0; k < classes; ++k) z[k] *= f;
    z[y] -= scale;
  }
}

__global__ void xent_evaluate_kernel(const float* logits, const int32_t* labels, int64_t classes, int64_t n,
                                     double* losses, int32_t* correct) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* z = logits + j * classes;
    const int32_t y = labels[j];
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k)
      if (z[k] > z[best]) best = k;  // strict: ties go to the lowest class
    const float m = z[best];
    float s = 0.0f;
    for (int64_t k = 0; k < classes; ++k) s += expf(z[k] - m);
    losses[j] = static_cast<double>(m) + log(static_cast<double>(s)) - static_cast<double>(z[y]);
    correct[j] = best == y ? 1 : 0;
  }
}

}  // namespace

cudaError_t bias_activation(float* z, const float* b, int64_t rows, int64_t n, bool relu,
                            cudaStream_t stream) {
  const int64_t count = rows * n;
  bias_activation_kernel<<<blocks_for(count), kThreads, 0, stream>>>(z, b, rows, count, relu);
  return cudaGetLastError();
}

cudaError_t relu_mask(float* delta, const float* act, int64_t count, cudaStream_t stream) {
  relu_mask_kernel<<<blocks_for(count), kThreads, 0, stream>>>(delta, act, count);
  return cudaGetLastError();
}

cudaError_t bias_gradient(const float* d, float* db, int64_t rows, int64_t n, cudaStream_t stream) {
  bias_gradient_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(d, db, rows, n);
  return cudaGetLastError();
}

cudaError_t softmax_xent_backward(float* logits, const int32_t* labels, int64_t classes, int64_t n,
                                  float scale, double* losses, cudaStream_t stream) {
  xent_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(logits, labels, classes, n, scale, losses);
  return cudaGetLastError();
}

cudaError_t softmax_xent_evaluate(const float* logits, const int32_t* labels, int64_t classes, int64_t n,
                                  double* losses, int32_t* correct, cudaStream_t stream) {
  xent_evaluate_kernel<<<blocks_for(n), kThreads, 0, stream>>>(logits, labels, classes, n, losses, correct);
  return cudaGetLastError();
}

}  // namespace stalesim::cuda
