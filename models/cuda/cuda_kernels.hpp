#pragma once
// Private to models/cuda/: launchers of the small kernels of the CUDA dense classifier
// (cuda_kernels.cu). Matrices are column-major with one column per sample, as on the CPU. Every
// kernel is a plain map or a loop in a fixed order over one row or one column: no atomics and no
// tree reductions, so results depend only on the inputs. Each launcher enqueues on `stream` and
// returns the launch status (cudaSuccess or the error).

#include <cstdint>

#include <cuda_runtime_api.h>

namespace stalesim::cuda {

// z(r, j) += b(r) for r < rows, j < n; then ReLU (max(z, 0), NaN kept) when `relu`.
cudaError_t bias_activation(float* z, const float* b, int64_t rows, int64_t n, bool relu,
                            cudaStream_t stream);

// delta(i) = 0 where act(i) <= 0 (the ReLU's derivative), i < count.
cudaError_t relu_mask(float* delta, const float* act, int64_t count, cudaStream_t stream);

// db(r) = sum over j < n of d(r, j), summed in float in column order. d is rows x n.
cudaError_t bias_gradient(const float* d, float* db, int64_t rows, int64_t n, cudaStream_t stream);

// Softmax cross-entropy on the n columns of `logits` (classes x n), with the CPU model's
// arithmetic (float max and sum of exp, the loss m + log(s) - z_y in double): writes sample j's
// loss to losses[j] and overwrites column j with scale * (softmax - onehot(labels[j])).
cudaError_t softmax_xent_backward(float* logits, const int32_t* labels, int64_t classes, int64_t n,
                                  float scale, double* losses, cudaStream_t stream);

// Per-sample loss (as above) and whether the arg-max (ties to the lowest class) is the label.
cudaError_t softmax_xent_evaluate(const float* logits, const int32_t* labels, int64_t classes, int64_t n,
                                  double* losses, int32_t* correct, cudaStream_t stream);

}  // namespace stalesim::cuda
