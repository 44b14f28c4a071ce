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

constexpr int64_t K = CnnShape::kKernel;

// 2x2 stride-2 max pooling of `a` (channels x n*h*h, column = (sample, y, x)). Writes the maximum
// of each window to out[out_index(s, c, py, px)] and the a-column of that maximum to arg[same].
// Ties go to the first element of the window in row-major order.
template <class OutIndex>
void max_pool(const Eigen::MatrixXf& a, Index n, int64_t h, float* out, int32_t* arg, OutIndex out_index) {
  const int64_t channels = a.rows();
  const int64_t p = h / 2;
  const float* av = a.data();
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t py = 0; py < p; ++py) {
      for (int64_t px = 0; px < p; ++px) {
        const int64_t base = s * h * h + 2 * py * h + 2 * px;
        const int64_t cand[4] = {base, base + 1, base + h, base + h + 1};
        for (int64_t c = 0; c < channels; ++c) {
          int64_t best = cand[0];
          float m = av[best * channels + c];
          for (int k = 1; k < 4; ++k) {
            const float v = av[cand[k] * channels + c];
            if (v > m) {
              m = v;
              best = cand[k];
            }
          }
          const int64_t o = out_index(s, c, py, px);
          out[o] = m;
          arg[o] = static_cast<int32_t>(best);
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
  const Index n1 = n * shape_.h1 * shape_.h1, np1 = n * shape_.p1 * shape_.p1, n2 = n * shape_.h2 * shape_.h2;
  x_.resize(features_, n);
  cols1_.resize(CnnShape::kK1, n1);
  a1_.resize(CnnShape::kC1, n1);
  p1_.resize(CnnShape::kC1, np1);
  dp1_.resize(CnnShape::kC1, np1);
  arg1_.resize(static_cast<size_t>(CnnShape::kC1 * np1));
  cols2_.resize(CnnShape::kK2, n2);
  a2_.resize(CnnShape::kC2, n2);
  da2_.resize(CnnShape::kC2, n2);
  flat_.resize(shape_.flat, n);
  gflat_.resize(shape_.flat, n);
  arg2_.resize(static_cast<size_t>(shape_.flat * n));
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
  for (Index j = 0; j < n; ++j) {
    const int64_t i = index_at(j);
    const int32_t y = checked_label(data, i, shape_.classes, "cnn");
    labels_[static_cast<size_t>(j)] = y;
    x_.col(j) = ConstVecMap(data.sample(i), features_);
  }
}

void Cnn::forward(const float* params, Index n) {
  const int64_t S = shape_.side, h1 = shape_.h1, p1 = shape_.p1, h2 = shape_.h2, p2 = shape_.p2;
  const Index n1 = n * h1 * h1, n2 = n * h2 * h2;
  const auto& B = shape_.blocks;

  // conv1 im2col: column (s, oy, ox), row ky * 5 + kx, zero outside the image.
  {
    float* cv = cols1_.data();
    const float* xv = x_.data();
    for (int64_t s = 0; s < n; ++s) {
      const float* img = xv + s * features_;
      for (int64_t oy = 0; oy < h1; ++oy) {
        for (int64_t ox = 0; ox < h1; ++ox) {
          float* col = cv + ((s * h1 + oy) * h1 + ox) * CnnShape::kK1;
          for (int64_t ky = 0; ky < K; ++ky) {
            const int64_t iy = oy + ky - CnnShape::kPad1;
            for (int64_t kx = 0; kx < K; ++kx) {
              const int64_t ix = ox + kx - CnnShape::kPad1;
              col[ky * K + kx] = (iy >= 0 && iy < S && ix >= 0 && ix < S) ? img[iy * S + ix] : 0.0f;
            }
          }
        }
      }
    }
  }
  {
    const ConstMatMap w(params + B[0].w, B[0].out, B[0].in);
    const ConstVecMap b(params + B[0].b, B[0].out);
    auto z = a1_.leftCols(n1);
    z.noalias() = w * cols1_.leftCols(n1);
    z = (z.colwise() + b).cwiseMax(0.0f);
  }
  max_pool(a1_, n, h1, p1_.data(), arg1_.data(), [p1](int64_t s, int64_t c, int64_t py, int64_t px) {
    return ((s * p1 + py) * p1 + px) * CnnShape::kC1 + c;
  });

  // conv2 im2col: column (s, oy, ox), row c * 25 + ky * 5 + kx.
  {
    float* cv = cols2_.data();
    const float* pv = p1_.data();
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t oy = 0; oy < h2; ++oy) {
        for (int64_t ox = 0; ox < h2; ++ox) {
          float* col = cv + ((s * h2 + oy) * h2 + ox) * CnnShape::kK2;
          for (int64_t ky = 0; ky < K; ++ky) {
            for (int64_t kx = 0; kx < K; ++kx) {
              const float* src = pv + ((s * p1 + oy + ky) * p1 + ox + kx) * CnnShape::kC1;
              for (int64_t c = 0; c < CnnShape::kC1; ++c) col[c * K * K + ky * K + kx] = src[c];
            }
          }
        }
      }
    }
  }
  {
    const ConstMatMap w(params + B[1].w, B[1].out, B[1].in);
    const ConstVecMap b(params + B[1].b, B[1].out);
    auto z = a2_.leftCols(n2);
    z.noalias() = w * cols2_.leftCols(n2);
    z = (z.colwise() + b).cwiseMax(0.0f);
  }
  const int64_t flat = shape_.flat;
  max_pool(a2_, n, h2, flat_.data(), arg2_.data(), [p2, flat](int64_t s, int64_t c, int64_t py, int64_t px) {
    return s * flat + (c * p2 + py) * p2 + px;
  });

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
  const int64_t h1 = shape_.h1, p1 = shape_.p1, h2 = shape_.h2;
  const Index n1 = n * h1 * h1, np1 = n * p1 * p1, n2 = n * h2 * h2;
  const auto& B = shape_.blocks;
  // Weight gradient d * input^T and bias gradient (reduced into owned aligned scratch, then
  // copied: see mlp.cpp) of block l.
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

  // pool2 backward (windows do not overlap: each position gets at most one value), then ReLU'.
  {
    auto d = da2_.leftCols(n2);
    d.setZero();
    float* dv = da2_.data();
    const float* gv = gflat_.data();
    const int64_t count = shape_.flat * n;
    for (int64_t e = 0; e < count; ++e) {
      const int64_t c = (e % shape_.flat) / (shape_.p2 * shape_.p2);
      dv[static_cast<int64_t>(arg2_[static_cast<size_t>(e)]) * CnnShape::kC2 + c] = gv[e];
    }
    d.array() = (a2_.leftCols(n2).array() > 0.0f).select(d.array(), 0.0f);
  }
  weight_grads(1, da2_.leftCols(n2), cols2_.leftCols(n2));
  // Gradient at conv2's im2col (overwrites cols2_), then col2im into dp1_ in column order.
  cols2_.leftCols(n2).noalias() =
      ConstMatMap(params + B[1].w, B[1].out, B[1].in).transpose() * da2_.leftCols(n2);
  {
    dp1_.leftCols(np1).setZero();
    float* dv = dp1_.data();
    const float* cv = cols2_.data();
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t oy = 0; oy < h2; ++oy) {
        for (int64_t ox = 0; ox < h2; ++ox) {
          const float* col = cv + ((s * h2 + oy) * h2 + ox) * CnnShape::kK2;
          for (int64_t ky = 0; ky < K; ++ky) {
            for (int64_t kx = 0; kx < K; ++kx) {
              float* dst = dv + ((s * p1 + oy + ky) * p1 + ox + kx) * CnnShape::kC1;
              for (int64_t c = 0; c < CnnShape::kC1; ++c) dst[c] += col[c * K * K + ky * K + kx];
            }
          }
        }
      }
    }
  }
  // pool1 backward with ReLU' at the arg-max (read before a1_ is overwritten by its gradient).
  {
    float* dv = dp1_.data();
    float* av = a1_.data();
    const int64_t count = CnnShape::kC1 * np1;
    for (int64_t e = 0; e < count; ++e) {
      const int64_t c = e % CnnShape::kC1;
      if (!(av[static_cast<int64_t>(arg1_[static_cast<size_t>(e)]) * CnnShape::kC1 + c] > 0.0f)) dv[e] = 0.0f;
    }
    a1_.leftCols(n1).setZero();
    for (int64_t e = 0; e < count; ++e) {
      const int64_t c = e % CnnShape::kC1;
      av[static_cast<int64_t>(arg1_[static_cast<size_t>(e)]) * CnnShape::kC1 + c] = dv[e];
    }
  }
  weight_grads(0, a1_.leftCols(n1), cols1_.leftCols(n1));
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
