// The CNN's kernels on the GPU (models/cuda/cnn_kernels.hpp). Built with --fmad=false, as
// cuda_kernels.cu.

#include "models/cuda/cnn_kernels.hpp"

#include <cuda_runtime.h>

namespace stalesim::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride loops cover the rest
constexpr int64_t K = 5;               // kernel side

int blocks_for(int64_t count) {
  const int64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

#define STALESIM_GRID_LOOP(i, count)                                                         \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void im2col_padded_kernel(const float* x, float* cols, int64_t side, int64_t count) {
  STALESIM_GRID_LOOP(i, count) {
    const int64_t r = i % (K * K), col = i / (K * K);
    const int64_t ky = r / K, kx = r % K;
    const int64_t ox = col % side, oy = (col / side) % side, s = col / (side * side);
    const int64_t iy = oy + ky - 2, ix = ox + kx - 2;
    cols[i] = (iy >= 0 && iy < side && ix >= 0 && ix < side) ? x[s * side * side + iy * side + ix] : 0.0f;
  }
}

__global__ void im2col_kernel(const float* p, float* cols, int64_t channels, int64_t side, int64_t count) {
  const int64_t h = side - K + 1, rows = channels * K * K;
  STALESIM_GRID_LOOP(i, count) {
    const int64_t r = i % rows, col = i / rows;
    const int64_t c = r / (K * K), ky = (r / K) % K, kx = r % K;
    const int64_t ox = col % h, oy = (col / h) % h, s = col / (h * h);
    cols[i] = p[((s * side + oy + ky) * side + ox + kx) * channels + c];
  }
}

__global__ void col2im_kernel(const float* dcols, float* dp, int64_t channels, int64_t side, int64_t count) {
  const int64_t h = side - K + 1, rows = channels * K * K;
  STALESIM_GRID_LOOP(i, count) {
    const int64_t c = i % channels, pos = i / channels;
    const int64_t x = pos % side, y = (pos / side) % side, s = pos / (side * side);
    float sum = 0.0f;
    for (int64_t oy = y - K + 1; oy <= y; ++oy) {
      if (oy < 0 || oy >= h) continue;
      for (int64_t ox = x - K + 1; ox <= x; ++ox) {
        if (ox < 0 || ox >= h) continue;
        sum += dcols[((s * h + oy) * h + ox) * rows + c * K * K + (y - oy) * K + (x - ox)];
      }
    }
    dp[i] = sum;
  }
}

// Output element i of the pooling in either layout -> (sample, channel, py, px).
__device__ void pooled_position(int64_t i, int64_t channels, int64_t p, bool flat, int64_t& s, int64_t& c,
                                int64_t& py, int64_t& px) {
  if (flat) {
    const int64_t f = channels * p * p;
    s = i / f;
    const int64_t r = i % f;
    c = r / (p * p);
    py = (r / p) % p;
    px = r % p;
  } else {
    c = i % channels;
    const int64_t pos = i / channels;
    px = pos % p;
    py = (pos / p) % p;
    s = pos / (p * p);
  }
}

__global__ void max_pool_kernel(const float* a, float* out, int32_t* arg, int64_t channels, int64_t h,
                                bool flat, int64_t count) {
  const int64_t p = h / 2;
  STALESIM_GRID_LOOP(i, count) {
    int64_t s, c, py, px;
    pooled_position(i, channels, p, flat, s, c, py, px);
    const int64_t base = s * h * h + 2 * py * h + 2 * px;
    const int64_t cand[4] = {base, base + 1, base + h, base + h + 1};
    int64_t best = cand[0];
    float m = a[best * channels + c];
    for (int k = 1; k < 4; ++k) {
      const float v = a[cand[k] * channels + c];
      if (v > m) {
        m = v;
        best = cand[k];
      }
    }
    out[i] = m;
    arg[i] = static_cast<int32_t>(best);
  }
}

// One thread per element of da: finds its window's pooled output and writes its gradient if it
// is the arg-max, else 0. Every element written once: no zeroing pass, no atomics.
__global__ void unpool_kernel(const float* dout, const int32_t* arg, const float* a, float* da,
                              int64_t channels, int64_t h, bool flat, int64_t count) {
  const int64_t p = h / 2;
  STALESIM_GRID_LOOP(i, count) {
    const int64_t c = i % channels, col = i / channels;
    const int64_t x = col % h, y = (col / h) % h, s = col / (h * h);
    const int64_t py = y / 2, px = x / 2;
    const int64_t o =
        flat ? s * channels * p * p + (c * p + py) * p + px : ((s * p + py) * p + px) * channels + c;
    da[i] = (arg[o] == col && a[i] > 0.0f) ? dout[o] : 0.0f;
  }
}

}  // namespace

cudaError_t cnn_im2col_padded(const float* x, float* cols, int64_t side, int64_t n, cudaStream_t stream) {
  const int64_t count = K * K * n * side * side;
  im2col_padded_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, cols, side, count);
  return cudaGetLastError();
}

cudaError_t cnn_im2col(const float* p, float* cols, int64_t channels, int64_t side, int64_t n,
                       cudaStream_t stream) {
  const int64_t h = side - K + 1;
  const int64_t count = channels * K * K * n * h * h;
  im2col_kernel<<<blocks_for(count), kThreads, 0, stream>>>(p, cols, channels, side, count);
  return cudaGetLastError();
}

cudaError_t cnn_col2im(const float* dcols, float* dp, int64_t channels, int64_t side, int64_t n,
                       cudaStream_t stream) {
  const int64_t count = channels * n * side * side;
  col2im_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dcols, dp, channels, side, count);
  return cudaGetLastError();
}

cudaError_t cnn_max_pool(const float* a, float* out, int32_t* arg, int64_t channels, int64_t h, int64_t n,
                         bool flat, cudaStream_t stream) {
  const int64_t count = channels * n * (h / 2) * (h / 2);
  max_pool_kernel<<<blocks_for(count), kThreads, 0, stream>>>(a, out, arg, channels, h, flat, count);
  return cudaGetLastError();
}

cudaError_t cnn_unpool(const float* dout, const int32_t* arg, const float* a, float* da, int64_t channels,
                       int64_t h, int64_t n, bool flat, cudaStream_t stream) {
  const int64_t count = channels * n * h * h;
  unpool_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dout, arg, a, da, channels, h, flat, count);
  return cudaGetLastError();
}

}  // namespace stalesim::cuda
