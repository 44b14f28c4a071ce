#pragma once
// Private to models/cuda/: launchers of the CNN's kernels (cnn_kernels.cu): im2col, col2im,
// 2x2 max pooling and its backward pass, for the layouts of models/cnn.hpp. Column-major, one
// column per (sample, y, x) position, channels as rows. As in cuda_kernels.hpp: every output
// element is written by one thread, sums run in a fixed order, no atomics. Each launcher enqueues
// on `stream` and returns the launch status.

#include <cstdint>

#include <cuda_runtime_api.h>

namespace stalesim::cuda {

// conv1's im2col: x is side^2 x n (pixel (y, x) at row y * side + x); cols is 25 x (n side^2),
// column (s, oy, ox), row ky * 5 + kx, zero outside the image (padding 2).
cudaError_t cnn_im2col_padded(const float* x, float* cols, int64_t side, int64_t n, cudaStream_t stream);

// conv2's im2col: p is channels x (n p^2) (pool1's output), cols is (channels 25) x (n h^2) with
// h = p - 4, column (s, oy, ox), row c * 25 + ky * 5 + kx.
cudaError_t cnn_im2col(const float* p, float* cols, int64_t channels, int64_t side, int64_t n,
                       cudaStream_t stream);

// The transpose of cnn_im2col: dp(c, (s, y, x)) = sum over the (oy, ox) whose window covers
// (y, x), in ascending (oy, ox) order, of dcols(c * 25 + (y - oy) * 5 + (x - ox), (s, oy, ox)).
cudaError_t cnn_col2im(const float* dcols, float* dp, int64_t channels, int64_t side, int64_t n,
                       cudaStream_t stream);

// 2x2 stride-2 max pooling of a (channels x (n h^2)); ties to the first element in row-major
// order. `flat` false: out is channels x (n (h/2)^2); true: out is (channels (h/2)^2) x n with row
// c (h/2)^2 + py (h/2) + px. arg gets, per output element, the a-column of the maximum.
cudaError_t cnn_max_pool(const float* a, float* out, int32_t* arg, int64_t channels, int64_t h, int64_t n,
                         bool flat, cudaStream_t stream);

// The pooling's backward pass with ReLU': da (channels x (n h^2)) gets, at each window's arg-max,
// the gradient of its pooled output where a > 0 there, and 0 everywhere else. Layouts as above.
cudaError_t cnn_unpool(const float* dout, const int32_t* arg, const float* a, float* da, int64_t channels,
                       int64_t h, int64_t n, bool flat, cudaStream_t stream);

}  // namespace stalesim::cuda
