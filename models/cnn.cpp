// "cnn": the LeNet-5-style network of models/cnn.hpp, as batched im2col + Eigen float32 GEMMs
// over Maps of the caller's parameter and gradient spans, with scratch kept between calls.

#include "models/cnn.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stalesim::detail {
namespace {

using Eigen::Index;
using MatMap = Eigen::Map<Eigen::MatrixXf>;
using ConstMatMap = Eigen::Map<const Eigen::MatrixXf>;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;
using RowVecMap = Eigen::Map<Eigen::RowVectorXf>;

constexpr int64_t K = CnnShape::kKernel;

// 2x2 stride-2 max pooling of the m samples of one channel plane `a` (m x h x h, row-major per
// sample). Writes the maximum of each window to out[out_index(s, py, px)] (consecutive in px) and,
// to arg[s, py, px]
// (m x p x p), the window element of that maximum (0..3, row-major; ties to the first) or -1 when
// the maximum is not positive: the ReLU before the pooling passes no gradient there.
template <class OutIndex>
void max_pool_plane(const float* a, int64_t m, int64_t h, float* out, int8_t* arg, OutIndex out_index) {
  const int64_t p = h / 2;
  for (int64_t s = 0; s < m; ++s) {
    for (int64_t py = 0; py < p; ++py) {
      const float* r0 = a + (s * h + 2 * py) * h;
      const float* r1 = r0 + h;
      int8_t* ar = arg + (s * p + py) * p;
      float* o = out + out_index(s, py, 0);
      for (int64_t px = 0; px < p; ++px) {  // branch-free: strict > keeps the first maximum
        const float v1 = r0[2 * px + 1], v2 = r1[2 * px], v3 = r1[2 * px + 1];
        float mx = r0[2 * px];
        int32_t best = 0;
        const bool g1 = v1 > mx;
        mx = g1 ? v1 : mx;
        best = g1 ? 1 : best;
        const bool g2 = v2 > mx;
        mx = g2 ? v2 : mx;
        best = g2 ? 2 : best;
        const bool g3 = v3 > mx;
        mx = g3 ? v3 : mx;
        best = g3 ? 3 : best;
        o[px] = mx;
        ar[px] = static_cast<int8_t>(mx > 0.0f ? best : -1);
      }
    }
  }
}

// The pooling's backward pass for one channel plane: writes every element of d (m x h x h): g(s,
// py, px) at the window element arg[s, py, px], zero elsewhere (and in windows whose arg is -1).
template <class GradAt>
void max_pool_plane_backward(const int8_t* arg, int64_t m, int64_t h, float* d, GradAt grad_at) {
  const int64_t p = h / 2;
  for (int64_t s = 0; s < m; ++s) {
    for (int64_t py = 0; py < p; ++py) {
      const int8_t* ar = arg + (s * p + py) * p;
      float* r0 = d + (s * h + 2 * py) * h;
      float* r1 = r0 + h;
      for (int64_t px = 0; px < p; ++px) {
        const int8_t k = ar[px];
        const float g = grad_at(s, py, px);
        r0[2 * px] = k == 0 ? g : 0.0f;
        r0[2 * px + 1] = k == 1 ? g : 0.0f;
        r1[2 * px] = k == 2 ? g : 0.0f;
        r1[2 * px + 1] = k == 3 ? g : 0.0f;
      }
    }
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
  for (; i < len; ++i) dst[i] = src[i];
}

inline void add_row(const float* src, int64_t len, float* dst) {
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    Eigen::internal::pstoreu(dst + i, Eigen::internal::padd(Eigen::internal::ploadu<Packet>(dst + i),
                                                            Eigen::internal::ploadu<Packet>(src + i)));
  for (; i < len; ++i) dst[i] += src[i];
}

// z = max(z + b, 0) column by column (one column per output channel).
void bias_relu(Eigen::Ref<Eigen::MatrixXf> z, const float* b) {
  for (Index c = 0; c < z.cols(); ++c) z.col(c) = (z.col(c).array() + b[c]).cwiseMax(0.0f).matrix();
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

void Cnn::check_params(std::span<const float> params, const char* what) const {
  if (static_cast<int64_t>(params.size()) != shape_.parameter_count) {
    throw std::invalid_argument(std::string("cnn ") + what + ": expected " +
                                std::to_string(shape_.parameter_count) + " values, got " +
                                std::to_string(params.size()));
  }
}

void Cnn::check_data(const Dataset& data, const char* what) const {
  if (data.features != features_) {
    throw std::invalid_argument(std::string("cnn ") + what + ": model takes " + std::to_string(features_) +
                                " features, dataset has " + std::to_string(data.features));
  }
  if (static_cast<int64_t>(data.x.size()) != data.size() * data.features) {
    throw std::invalid_argument(std::string("cnn ") + what + ": dataset has " +
                                std::to_string(data.x.size()) + " values for " + std::to_string(data.size()) +
                                " samples");
  }
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
    cols1_.resize(kChunk * h1 * h1, CnnShape::kK1);
    z1_.resize(kChunk * h1 * h1, CnnShape::kC1);
    dp1_.resize(kChunk * p1 * p1, CnnShape::kC1);
    cols2_.resize(kChunk * h2 * h2, CnnShape::kK2);
    z2_.resize(kChunk * h2 * h2, CnnShape::kC2);
  }
  xpad_.assign(static_cast<size_t>(n * padded), 0.0f);  // the zero border is never written again
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
  const int64_t S = shape_.side, W = S + 2 * CnnShape::kPad1;
  for (Index j = 0; j < n; ++j) {
    const int64_t i = index_at(j);
    const int32_t y = checked_label(data, i, shape_.classes, "cnn");
    labels_[static_cast<size_t>(j)] = y;
    const float* img = data.sample(i);
    float* dst = xpad_.data() + j * W * W + CnnShape::kPad1 * W + CnnShape::kPad1;
    for (int64_t r = 0; r < S; ++r) std::copy_n(img + r * S, S, dst + r * W);
  }
}

void Cnn::im2col1(Index start, Index m) {
  // Column ky * 5 + kx, row (s * h1 + oy) * h1 + ox: the padded image shifted by (ky, kx).
  const int64_t h1 = shape_.h1, W = shape_.side + 2 * CnnShape::kPad1;
  for (int64_t ky = 0; ky < K; ++ky) {
    for (int64_t kx = 0; kx < K; ++kx) {
      float* col = cols1_.col(ky * K + kx).data();
      for (int64_t s = 0; s < m; ++s) {
        const float* img = xpad_.data() + (start + s) * W * W + ky * W + kx;
        for (int64_t oy = 0; oy < h1; ++oy) copy_row(img + oy * W, h1, col + (s * h1 + oy) * h1);
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
      float* out = p1_block + c * m * p1 * p1;
      max_pool_plane(z1_.col(c).data(), m, h1, out, a1_block + c * m * p1 * p1,
                     [p1](int64_t s, int64_t py, int64_t px) { return (s * p1 + py) * p1 + px; });
    }
    // conv2 + ReLU, pool2 into flat_ (sample columns, channel-major rows).
    im2col2(start, m);
    auto z2 = z2_.topRows(rows2);
    z2.noalias() = cols2_.topRows(rows2) * w2.transpose();
    bias_relu(z2, params + B[1].b);
    int8_t* a2_block = arg2_.data() + start * flat;
    for (int64_t c = 0; c < CnnShape::kC2; ++c) {
      float* out = flat_.data() + start * flat + c * p2 * p2;
      max_pool_plane(z2_.col(c).data(), m, h2, out, a2_block + c * m * p2 * p2,
                     [p2, flat](int64_t s, int64_t py, int64_t px) { return s * flat + py * p2 + px; });
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
    for (int64_t c = 0; c < CnnShape::kC2; ++c) {
      const float* g = gflat_.data() + start * flat + c * p2 * p2;
      max_pool_plane_backward(
          a2_block + c * m * p2 * p2, m, h2, z2_.col(c).data(),
          [g, p2, flat](int64_t s, int64_t py, int64_t px) { return g[s * flat + py * p2 + px]; });
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
      const float* g = dp1_.col(c).data();
      max_pool_plane_backward(
          a1_block + c * m * p1 * p1, m, h1, z1_.col(c).data(),
          [g, p1](int64_t s, int64_t py, int64_t px) { return g[(s * p1 + py) * p1 + px]; });
    }
    for (int64_t c = 0; c < CnnShape::kC1; ++c) db1(c) += dz1.col(c).sum();
    im2col1(start, m);
    dw1.noalias() += dz1.transpose() * cols1_.topRows(rows1);
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
