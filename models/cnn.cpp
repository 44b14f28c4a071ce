// "cnn": the LeNet-5-style network of models/cnn.hpp, as batched im2col + Eigen float32 GEMMs
// over Maps of the caller's parameter and gradient spans, with scratch kept between calls.

#include "models/cnn.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stalesim::detail {
namespace {

using Eigen::Index;
using RowVecMap = Eigen::Map<Eigen::RowVectorXf>;

constexpr int64_t K = CnnShape::kKernel;

// One sample's h x h channel plane a (row-major) to and from the four window-element planes of
// max_pool_split (q, 4 x (h/2)^2 floats).
void split_windows(const float* __restrict a, int64_t h, float* __restrict q) {
  const int64_t p = h / 2;
  for (int64_t d = 0; d < 4; ++d) {
    const float* src = a + (d / 2) * h + d % 2;
    float* dst = q + d * p * p;
    for (int64_t y = 0; y < p; ++y)
      for (int64_t x = 0; x < p; ++x) dst[y * p + x] = src[2 * y * h + 2 * x];
  }
}

void merge_windows(const float* __restrict q, int64_t h, float* __restrict a) {
  const int64_t p = h / 2;
  for (int64_t d = 0; d < 4; ++d) {
    float* dst = a + (d / 2) * h + d % 2;
    const float* src = q + d * p * p;
    for (int64_t y = 0; y < p; ++y)
      for (int64_t x = 0; x < p; ++x) dst[2 * y * h + 2 * x] = src[y * p + x];
  }
}

// Short-row kernels for im2col and col2im (rows of 10 or 28 floats): whole SIMD packets, then
// scalars, inline (a call to memmove, or Eigen's alignment peeling, costs more than the copy).
using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int64_t kLanes = Eigen::internal::packet_traits<float>::size;

inline void copy_row(const float* src, int64_t len, float* dst) {
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    Eigen::internal::pstoreu(dst + i, Eigen::internal::ploadu<Packet>(src + i));
#if defined(__AVX2__)
  if (i + 4 <= len) {  // the tail of a 10-float row: 4 + 2 floats in two moves, not 2 scalars
    _mm_storeu_ps(dst + i, _mm_loadu_ps(src + i));
    i += 4;
  }
  if (i + 2 <= len) {
    _mm_store_sd(reinterpret_cast<double*>(dst + i), _mm_load_sd(reinterpret_cast<const double*>(src + i)));
    i += 2;
  }
#endif
  for (; i < len; ++i) dst[i] = src[i];
}

inline void add_row(const float* src, int64_t len, float* dst) {
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    Eigen::internal::pstoreu(dst + i, Eigen::internal::padd(Eigen::internal::ploadu<Packet>(dst + i),
                                                            Eigen::internal::ploadu<Packet>(src + i)));
#if defined(__AVX2__)
  if (i + 4 <= len) {  // the same element-wise additions, fewer instructions
    _mm_storeu_ps(dst + i, _mm_add_ps(_mm_loadu_ps(dst + i), _mm_loadu_ps(src + i)));
    i += 4;
  }
  if (i + 2 <= len) {
    const __m128 d = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(dst + i)));
    const __m128 v = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(src + i)));
    _mm_store_sd(reinterpret_cast<double*>(dst + i), _mm_castps_pd(_mm_add_ps(d, v)));
    i += 2;
  }
#endif
  for (; i < len; ++i) dst[i] += src[i];
}

// z = max(z + b, 0) column by column (one column per output channel).
void bias_relu(Eigen::Ref<Eigen::MatrixXf> z, const float* b) {
  for (Index c = 0; c < z.cols(); ++c) z.col(c) = (z.col(c).array() + b[c]).cwiseMax(0.0f).matrix();
}

// 2x2 stride-2 max pooling of one sample's channel plane stored as four window-element planes
// q[0..3] (element (dy, dx) of every window in plane dy * 2 + dx, each count floats in the
// pooled order): out[i] = the maximum of window i, arg[i] = its element (ties to the first, in
// row-major window order) or -1 when the maximum is not positive. Contiguous and branch-free; with
// AVX2, 8 windows per step (GCC leaves the scalar loop scalar). Both paths only compare and select,
// so they give the same bits.
void max_pool_split(const float* __restrict q, int64_t count, float* __restrict out, int8_t* __restrict arg) {
  const float* q1 = q + count;
  const float* q2 = q1 + count;
  const float* q3 = q2 + count;
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256 zero = _mm256_setzero_ps();
  const __m256 one = _mm256_castsi256_ps(_mm256_set1_epi32(1)),
               two = _mm256_castsi256_ps(_mm256_set1_epi32(2)),
               three = _mm256_castsi256_ps(_mm256_set1_epi32(3)),
               none = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  // Byte 0 of each 32-bit lane to the low 4 bytes of each 128-bit half, then both halves together.
  const __m256i bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8,
                                         12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i halves = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
  for (; i + 8 <= count; i += 8) {
    __m256 mx = _mm256_loadu_ps(q + i), best = zero;  // int 0 has the bits of 0.0f
    __m256 v = _mm256_loadu_ps(q1 + i), gt = _mm256_cmp_ps(v, mx, _CMP_GT_OQ);
    mx = _mm256_blendv_ps(mx, v, gt);
    best = _mm256_blendv_ps(best, one, gt);
    v = _mm256_loadu_ps(q2 + i);
    gt = _mm256_cmp_ps(v, mx, _CMP_GT_OQ);
    mx = _mm256_blendv_ps(mx, v, gt);
    best = _mm256_blendv_ps(best, two, gt);
    v = _mm256_loadu_ps(q3 + i);
    gt = _mm256_cmp_ps(v, mx, _CMP_GT_OQ);
    mx = _mm256_blendv_ps(mx, v, gt);
    best = _mm256_blendv_ps(best, three, gt);
    _mm256_storeu_ps(out + i, mx);
    best = _mm256_blendv_ps(none, best, _mm256_cmp_ps(mx, zero, _CMP_GT_OQ));
    const __m256i b =
        _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(_mm256_castps_si256(best), bytes), halves);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(arg + i), _mm256_castsi256_si128(b));
  }
#endif
  for (; i < count; ++i) {
    float mx = q[i];
    int32_t best = 0;
    best = q1[i] > mx ? 1 : best;
    mx = q1[i] > mx ? q1[i] : mx;
    best = q2[i] > mx ? 2 : best;
    mx = q2[i] > mx ? q2[i] : mx;
    best = q3[i] > mx ? 3 : best;
    mx = q3[i] > mx ? q3[i] : mx;
    out[i] = mx;
    arg[i] = static_cast<int8_t>(mx > 0.0f ? best : -1);
  }
}

// Its backward pass: q[k][i] = g[i] where arg[i] == k, else 0 (every element written).
void max_pool_split_backward(const int8_t* __restrict arg, const float* __restrict g, int64_t count,
                             float* __restrict q) {
  for (int64_t k = 0; k < 4; ++k) {
    float* qk = q + k * count;
    int64_t i = 0;
#if defined(__AVX2__)
    const __m256i kk = _mm256_set1_epi32(static_cast<int>(k));
    for (; i + 8 <= count; i += 8) {
      const __m256i a = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(arg + i)));
      const __m256 hit = _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, kk));
      _mm256_storeu_ps(qk + i, _mm256_and_ps(hit, _mm256_loadu_ps(g + i)));
    }
#endif
    for (; i < count; ++i) qk[i] = arg[i] == k ? g[i] : 0.0f;
  }
}

// dw(c, k) += sum over rows p of dz(p, c) * cols(p, k) for conv1's 6 x 25 weight gradient
// (column-major, leading dimension kC1), over `rows` rows (columns of dz and cols are contiguous,
// leading dimensions ldz and ldc). Eigen's GEMM runs this 6 x 25 result with a 6272-deep sum at
// a quarter of its rate; here tiles of 2 channels x 5 taps keep 10 packet accumulators in
// registers (7 loads per 10 multiply-adds). Each lane sums the rows congruent to it modulo the
// packet size in row order, then the lanes are reduced by predux: a fixed order.
[[gnu::noinline]] void conv1_weight_grad(const float* dz, Index ldz, const float* cols, Index ldc, Index rows,
                                         float* dw) {
  namespace ei = Eigen::internal;
  constexpr int64_t C = CnnShape::kC1, KK = CnnShape::kK1;
  static_assert(C % 2 == 0 && KK % 5 == 0);
  const Index vec_rows = rows / kLanes * kLanes;
  for (int64_t c = 0; c < C; c += 2) {
    const float* d0 = dz + c * ldz;
    const float* d1 = d0 + ldz;
    for (int64_t k = 0; k < KK; k += 5) {
      const float* x = cols + k * ldc;
      // Five distinct pointers (not x + j * ldc in the loop): GCC then keeps them in registers.
      const float *x0 = x, *x1 = x0 + ldc, *x2 = x1 + ldc, *x3 = x2 + ldc, *x4 = x3 + ldc;
      Packet a00 = ei::pset1<Packet>(0.0f), a01 = a00, a02 = a00, a03 = a00, a04 = a00;
      Packet a10 = a00, a11 = a00, a12 = a00, a13 = a00, a14 = a00;
      for (Index p = 0; p < vec_rows; p += kLanes) {
        const Packet g0 = ei::ploadu<Packet>(d0 + p), g1 = ei::ploadu<Packet>(d1 + p);
        Packet v = ei::ploadu<Packet>(x0 + p);
        a00 = ei::pmadd(g0, v, a00);
        a10 = ei::pmadd(g1, v, a10);
        v = ei::ploadu<Packet>(x1 + p);
        a01 = ei::pmadd(g0, v, a01);
        a11 = ei::pmadd(g1, v, a11);
        v = ei::ploadu<Packet>(x2 + p);
        a02 = ei::pmadd(g0, v, a02);
        a12 = ei::pmadd(g1, v, a12);
        v = ei::ploadu<Packet>(x3 + p);
        a03 = ei::pmadd(g0, v, a03);
        a13 = ei::pmadd(g1, v, a13);
        v = ei::ploadu<Packet>(x4 + p);
        a04 = ei::pmadd(g0, v, a04);
        a14 = ei::pmadd(g1, v, a14);
      }
      const Packet acc[2][5] = {{a00, a01, a02, a03, a04}, {a10, a11, a12, a13, a14}};
      for (int64_t i = 0; i < 2; ++i) {
        const float* d = i == 0 ? d0 : d1;
        for (int64_t j = 0; j < 5; ++j) {
          float sum = ei::predux(acc[i][j]);
          for (Index p = vec_rows; p < rows; ++p) sum += d[p] * x[j * ldc + p];
          dw[(k + j) * C + c + i] += sum;
        }
      }
    }
  }
}

}  // namespace

CnnShape::CnnShape(int64_t side_, int64_t classes_) : side(side_), classes(classes_) {
  h1 = side;
  p1 = h1 / 2;
  h2 = p1 - K + 1;
  p2 = h2 / 2;
  flat = kC2 * p2 * p2;
  const int64_t outs[5] = {kC1, kC2, kDense1, kDense2, classes};
  const int64_t ins[5] = {kK1, kK2, flat, kDense1, kDense2};
  int64_t offset = 0;
  for (size_t l = 0; l < blocks.size(); ++l) {
    blocks[l].out = outs[l];
    blocks[l].in = ins[l];
    blocks[l].w = offset;
    offset += outs[l] * ins[l];
    blocks[l].b = offset;
    offset += outs[l];
  }
  parameter_count = offset;
  // Multiply-adds per sample: each conv weight is used once per output position.
  const double macs = static_cast<double>(kC1 * kK1) * static_cast<double>(h1 * h1) +
                      static_cast<double>(kC2 * kK2) * static_cast<double>(h2 * h2) +
                      static_cast<double>(flat * kDense1 + kDense1 * kDense2 + kDense2 * classes);
  flops_per_sample = 6.0 * macs;
}

Cnn::Cnn(int64_t features, int32_t classes, WeightInit init)
    : shape_(static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(features)))), classes),
      features_(features),
      init_(init) {
  if (shape_.side * shape_.side != features || !CnnShape::valid_side(shape_.side)) {
    throw std::invalid_argument("cnn: features must be S x S with S a multiple of 4 and >= 12, got " +
                                std::to_string(features));
  }
  Index widest = 0;
  for (const auto& b : shape_.blocks) widest = std::max<Index>(widest, b.out);
  db_.resize(widest);
}

void Cnn::init(std::span<float> params, Rng& rng) {
  check_params(params, "init");
  for (size_t l = 0; l < shape_.blocks.size(); ++l) {
    const auto& b = shape_.blocks[l];
    const bool conv = l < 2;
    const double fan_in = static_cast<double>(b.in);
    const double fan_out = static_cast<double>(conv ? b.out * K * K : b.out);
    float* w = params.data() + b.w;
    const int64_t count = b.in * b.out;
    if (init_ == WeightInit::kHe) {
      const double stddev = std::sqrt(2.0 / fan_in);
      for (int64_t i = 0; i < count; ++i) w[i] = static_cast<float>(stddev * rng.normal());
    } else {
      const double a = std::sqrt(6.0 / (fan_in + fan_out));
      for (int64_t i = 0; i < count; ++i) w[i] = static_cast<float>(rng.uniform(-a, a));
    }
    std::fill_n(params.data() + b.b, b.out, 0.0f);
  }
}

void Cnn::reserve(Index n) {
  if (capacity_ >= n) return;
  const int64_t padded = (shape_.side + 2 * CnnShape::kPad1) * (shape_.side + 2 * CnnShape::kPad1);
  const int64_t h1 = shape_.h1, p1 = shape_.p1, h2 = shape_.h2;
  if (capacity_ == 0) {  // per-chunk scratch
    // kLanes spare rows: im2col1 copies whole packets past the end of its last row.
    cols1_.resize(kChunk * h1 * h1 + kLanes, CnnShape::kK1);
    z1_.resize(kChunk * h1 * h1, CnnShape::kC1);
    dp1_.resize(kChunk * p1 * p1, CnnShape::kC1);
    cols2_.resize(kChunk * h2 * h2, CnnShape::kK2);
    z2_.resize(kChunk * h2 * h2, CnnShape::kC2);
    split_.resize(static_cast<size_t>(h2 * h2));
  }
  // The zero border is never written again; kLanes spare floats for im2col1's whole-packet reads.
  xpad_.assign(static_cast<size_t>(n * padded + kLanes), 0.0f);
  p1_.resize(static_cast<size_t>(n * CnnShape::kC1 * p1 * p1));
  arg1_.resize(p1_.size());
  arg2_.resize(static_cast<size_t>(n * shape_.flat));
  flat_.resize(shape_.flat, n);
  gflat_.resize(shape_.flat, n);
  d1_.resize(CnnShape::kDense1, n);
  g1_.resize(CnnShape::kDense1, n);
  d2_.resize(CnnShape::kDense2, n);
  g2_.resize(CnnShape::kDense2, n);
  logits_.resize(shape_.classes, n);
  labels_.resize(static_cast<size_t>(n));
  capacity_ = n;
}

template <class IndexAt>
void Cnn::gather(const Dataset& data, Index n, IndexAt index_at) {
  reserve(n);
  const int64_t S = shape_.side, W = S + 2 * CnnShape::kPad1, Wh = W / 2;
  for (Index j = 0; j < n; ++j) {
    const int64_t i = index_at(j);
    const int32_t y = checked_label(data, i, shape_.classes, "cnn");
    labels_[static_cast<size_t>(j)] = y;
    const float* img = data.sample(i);
    // Padded pixel (r, q) goes to parity plane (r % 2) * 2 + q % 2 at (r / 2, q / 2).
    float* dst = xpad_.data() + j * W * W;
    for (int64_t y = 0; y < S; ++y) {
      const int64_t r = y + CnnShape::kPad1;
      for (int64_t x = 0; x < S; ++x) {
        const int64_t q = x + CnnShape::kPad1;
        dst[((r % 2 * 2 + q % 2) * Wh + r / 2) * Wh + q / 2] = img[y * S + x];
      }
    }
  }
}

void Cnn::im2col1(Index start, Index m) {
  // Column ky * 5 + kx; row ((s * 4 + dy * 2 + dx) * p1 + py) * p1 + px for output position
  // (2 py + dy, 2 px + dx): padded pixel (2 py + a, 2 px + b) with a = dy + ky, b = dx + kx, i.e.
  // parity plane (a % 2, b % 2) at (py + a / 2, px + b / 2). Rows of p1 floats are copied as whole
  // packets (the excess is overwritten by the next row, or lands in cols1_'s spare rows).
  const int64_t p1 = shape_.p1, W = shape_.side + 2 * CnnShape::kPad1, Wh = W / 2;
  for (int64_t ky = 0; ky < K; ++ky) {
    for (int64_t kx = 0; kx < K; ++kx) {
      float* col = cols1_.col(ky * K + kx).data();
      for (int64_t s = 0; s < m; ++s) {
        const float* img = xpad_.data() + (start + s) * W * W;
        for (int64_t dy = 0; dy < 2; ++dy) {
          for (int64_t dx = 0; dx < 2; ++dx) {
            const int64_t a = dy + ky, b = dx + kx;
            const float* plane = img + ((a % 2 * 2 + b % 2) * Wh + a / 2) * Wh + b / 2;
            float* dst = col + (s * 4 + dy * 2 + dx) * p1 * p1;
            for (int64_t py = 0; py < p1; ++py) {
              const float* src = plane + py * Wh;
              float* d = dst + py * p1;
              for (int64_t i = 0; i < p1; i += kLanes)
                Eigen::internal::pstoreu(d + i, Eigen::internal::ploadu<Packet>(src + i));
            }
          }
        }
      }
    }
  }
}

void Cnn::im2col2(Index start, Index m) {
  // Column c * 25 + ky * 5 + kx, row (s * h2 + oy) * h2 + ox: pool1's plane c shifted by (ky, kx).
  const int64_t p1 = shape_.p1, h2 = shape_.h2;
  const float* block = p1_.data() + start * CnnShape::kC1 * p1 * p1;
  for (int64_t c = 0; c < CnnShape::kC1; ++c) {
    const float* plane = block + c * m * p1 * p1;
    for (int64_t ky = 0; ky < K; ++ky) {
      for (int64_t kx = 0; kx < K; ++kx) {
        float* col = cols2_.col((c * K + ky) * K + kx).data();
        for (int64_t s = 0; s < m; ++s) {
          for (int64_t oy = 0; oy < h2; ++oy)
            copy_row(plane + (s * p1 + oy + ky) * p1 + kx, h2, col + (s * h2 + oy) * h2);
        }
      }
    }
  }
}

void Cnn::forward(const float* params, Index n) {
  const int64_t h1 = shape_.h1, p1 = shape_.p1, h2 = shape_.h2, p2 = shape_.p2, flat = shape_.flat;
  const auto& B = shape_.blocks;
  const ConstMatMap w1(params + B[0].w, B[0].out, B[0].in), w2(params + B[1].w, B[1].out, B[1].in);

  for (Index start = 0; start < n; start += kChunk) {
    const Index m = std::min<Index>(kChunk, n - start), rows1 = m * h1 * h1, rows2 = m * h2 * h2;
    // conv1 + ReLU: positions x channels.
    im2col1(start, m);
    auto z1 = z1_.topRows(rows1);
    z1.noalias() = cols1_.topRows(rows1) * w1.transpose();
    bias_relu(z1, params + B[0].b);
    // pool1 into this chunk's block of p1_ (channel planes of m samples).
    float* p1_block = p1_.data() + start * CnnShape::kC1 * p1 * p1;
    int8_t* a1_block = arg1_.data() + start * CnnShape::kC1 * p1 * p1;
    for (int64_t c = 0; c < CnnShape::kC1; ++c) {
      for (int64_t s = 0; s < m; ++s) {
        const int64_t o = (c * m + s) * p1 * p1;
        max_pool_split(z1_.col(c).data() + s * h1 * h1, p1 * p1, p1_block + o, a1_block + o);
      }
    }
    // conv2 + ReLU, pool2 into flat_ (sample columns, channel-major rows).
    im2col2(start, m);
    auto z2 = z2_.topRows(rows2);
    z2.noalias() = cols2_.topRows(rows2) * w2.transpose();
    bias_relu(z2, params + B[1].b);
    // pool2 through a split copy of each plane (the GEMM's rows stay in plain order: im2col2 and
    // col2im copy whole rows of p1's planes).
    int8_t* a2_block = arg2_.data() + start * flat;
    float* split = split_.data();
    for (int64_t c = 0; c < CnnShape::kC2; ++c) {
      for (int64_t s = 0; s < m; ++s) {
        split_windows(z2_.col(c).data() + s * h2 * h2, h2, split);
        max_pool_split(split, p2 * p2, flat_.data() + (start + s) * flat + c * p2 * p2,
                       a2_block + (c * m + s) * p2 * p2);
      }
    }
  }

  // Dense layers.
  {
    const ConstMatMap w(params + B[2].w, B[2].out, B[2].in);
    const ConstVecMap b(params + B[2].b, B[2].out);
    auto z = d1_.leftCols(n);
    z.noalias() = w * flat_.leftCols(n);
    z = (z.colwise() + b).cwiseMax(0.0f);
  }
  {
    const ConstMatMap w(params + B[3].w, B[3].out, B[3].in);
    const ConstVecMap b(params + B[3].b, B[3].out);
    auto z = d2_.leftCols(n);
    z.noalias() = w * d1_.leftCols(n);
    z = (z.colwise() + b).cwiseMax(0.0f);
  }
  {
    const ConstMatMap w(params + B[4].w, B[4].out, B[4].in);
    const ConstVecMap b(params + B[4].b, B[4].out);
    auto z = logits_.leftCols(n);
    z.noalias() = w * d2_.leftCols(n);
    z.colwise() += b;
  }
}

void Cnn::backward(const float* params, Index n, float* grad) {
  const int64_t h1 = shape_.h1, p1 = shape_.p1, h2 = shape_.h2, p2 = shape_.p2, flat = shape_.flat;
  const auto& B = shape_.blocks;
  // Weight gradient d * input^T and bias gradient (reduced into owned aligned scratch, then
  // copied: see mlp.cpp) of dense block l.
  auto weight_grads = [&](size_t l, const auto& d, const auto& input) {
    MatMap dw(grad + B[l].w, B[l].out, B[l].in);
    dw.noalias() = d * input.transpose();
    auto db_scratch = db_.head(B[l].out);
    db_scratch.noalias() = d.rowwise().sum();
    VecMap(grad + B[l].b, B[l].out) = db_scratch;
  };

  // Dense 3 (logits), 2, 1: as the MLP.
  const auto dlogits = logits_.leftCols(n);
  weight_grads(4, dlogits, d2_.leftCols(n));
  {
    auto g = g2_.leftCols(n);
    g.noalias() = ConstMatMap(params + B[4].w, B[4].out, B[4].in).transpose() * dlogits;
    g.array() = (d2_.leftCols(n).array() > 0.0f).select(g.array(), 0.0f);
  }
  weight_grads(3, g2_.leftCols(n), d1_.leftCols(n));
  {
    auto g = g1_.leftCols(n);
    g.noalias() = ConstMatMap(params + B[3].w, B[3].out, B[3].in).transpose() * g2_.leftCols(n);
    g.array() = (d1_.leftCols(n).array() > 0.0f).select(g.array(), 0.0f);
  }
  weight_grads(2, g1_.leftCols(n), flat_.leftCols(n));
  gflat_.leftCols(n).noalias() =
      ConstMatMap(params + B[2].w, B[2].out, B[2].in).transpose() * g1_.leftCols(n);

  // The convolutions, chunk by chunk in sample order; their weight and bias gradients accumulate
  // over the chunks.
  const ConstMatMap w2(params + B[1].w, B[1].out, B[1].in);
  MatMap dw1(grad + B[0].w, B[0].out, B[0].in), dw2(grad + B[1].w, B[1].out, B[1].in);
  VecMap db1(grad + B[0].b, B[0].out), db2(grad + B[1].b, B[1].out);
  dw1.setZero();
  dw2.setZero();
  db1.setZero();
  db2.setZero();
  for (Index start = 0; start < n; start += kChunk) {
    const Index m = std::min<Index>(kChunk, n - start), rows1 = m * h1 * h1, rows2 = m * h2 * h2;
    // pool2 backward (with ReLU') into conv2's pre-activation gradient (every element written).
    auto dz2 = z2_.topRows(rows2);
    const int8_t* a2_block = arg2_.data() + start * flat;
    float* split = split_.data();
    for (int64_t c = 0; c < CnnShape::kC2; ++c) {
      for (int64_t s = 0; s < m; ++s) {
        max_pool_split_backward(a2_block + (c * m + s) * p2 * p2,
                                gflat_.data() + (start + s) * flat + c * p2 * p2, p2 * p2, split);
        merge_windows(split, h2, z2_.col(c).data() + s * h2 * h2);
      }
    }
    for (int64_t c = 0; c < CnnShape::kC2; ++c) db2(c) += dz2.col(c).sum();
    im2col2(start, m);
    dw2.noalias() += dz2.transpose() * cols2_.topRows(rows2);
    // Gradient at conv2's im2col (overwrites cols2_), then col2im into dp1_ in column order.
    cols2_.topRows(rows2).noalias() = dz2 * w2;
    auto dp1 = dp1_.topRows(m * p1 * p1);
    dp1.setZero();
    for (int64_t c = 0; c < CnnShape::kC1; ++c) {
      float* plane = dp1_.col(c).data();
      for (int64_t ky = 0; ky < K; ++ky) {
        for (int64_t kx = 0; kx < K; ++kx) {
          const float* col = cols2_.col((c * K + ky) * K + kx).data();
          for (int64_t s = 0; s < m; ++s) {
            for (int64_t oy = 0; oy < h2; ++oy) {
              float* dst = plane + (s * p1 + oy + ky) * p1 + kx;
              const float* src = col + (s * h2 + oy) * h2;
              add_row(src, h2, dst);
            }
          }
        }
      }
    }
    // pool1 backward (with ReLU') into conv1's pre-activation gradient (every element written).
    auto dz1 = z1_.topRows(rows1);
    const int8_t* a1_block = arg1_.data() + start * CnnShape::kC1 * p1 * p1;
    for (int64_t c = 0; c < CnnShape::kC1; ++c) {
      for (int64_t s = 0; s < m; ++s) {
        max_pool_split_backward(a1_block + (c * m + s) * p1 * p1, dp1_.col(c).data() + s * p1 * p1, p1 * p1,
                                z1_.col(c).data() + s * h1 * h1);
      }
    }
    for (int64_t c = 0; c < CnnShape::kC1; ++c) db1(c) += dz1.col(c).sum();
    im2col1(start, m);
    conv1_weight_grad(z1_.data(), z1_.rows(), cols1_.data(), cols1_.rows(), rows1, dw1.data());
  }
}

double Cnn::loss_and_gradient(std::span<const float> params, const Dataset& data,
                              std::span<const int32_t> indices, std::span<float> grad) {
  check_params(params, "loss_and_gradient (params)");
  check_params(grad, "loss_and_gradient (grad)");
  check_data(data, "loss_and_gradient");
  if (indices.empty()) throw std::invalid_argument("cnn loss_and_gradient: empty batch");
  const auto n = static_cast<Index>(indices.size());
  gather(data, n, [&indices](Index j) { return indices[static_cast<size_t>(j)]; });
  forward(params.data(), n);
  const double loss_sum = softmax_xent_backward(logits_, n, labels_, 1.0f / static_cast<float>(n));
  backward(params.data(), n, grad.data());
  return loss_sum / static_cast<double>(n);
}

Evaluation Cnn::evaluate(std::span<const float> params, const Dataset& data,
                         std::span<const int32_t> indices) {
  check_params(params, "evaluate");
  check_data(data, "evaluate");
  return evaluate_in_chunks(data, indices, kEvalChunk,
                            [&](int64_t n, auto index_at, double& loss_sum, int64_t& correct) {
                              gather(data, n, index_at);
                              forward(params.data(), n);
                              softmax_xent_evaluate(logits_, n, labels_, loss_sum, correct);
                            });
}

std::unique_ptr<Model> make_cnn(int64_t features, int32_t classes, WeightInit init) {
  return std::make_unique<Cnn>(features, classes, init);
}

}  // namespace stalesim::detail
