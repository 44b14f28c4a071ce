// Matrix factorization: the ratings generator and the SGD model (see mf.hpp).

#include "models/mf.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace stalesim {
namespace {

constexpr int64_t kMaxIndex = int64_t{1} << 24;  // rows and columns are stored as exact floats

// Cumulative Zipf weights (i + 1)^-a, i < n, for inverse-CDF draws.
std::vector<double> zipf_cdf(int32_t n, double a) {
  std::vector<double> cdf(static_cast<size_t>(n));
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    sum += std::pow(static_cast<double>(i) + 1.0, -a);
    cdf[static_cast<size_t>(i)] = sum;
  }
  return cdf;
}

int32_t draw(const std::vector<double>& cdf, Rng& rng) {
  const double u = rng.uniform() * cdf.back();
  const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
  return static_cast<int32_t>(
      std::min<std::ptrdiff_t>(it - cdf.begin(), static_cast<std::ptrdiff_t>(cdf.size()) - 1));
}

}  // namespace

Ratings generate_ratings(const RatingsSpec& spec, uint64_t seed) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("generate_ratings: " + what); };
  if (spec.rows < 1 || spec.cols < 1 || spec.rows >= kMaxIndex || spec.cols >= kMaxIndex)
    bad("rows and cols must be in [1, 2^24)");
  if (spec.rank < 1) bad("rank must be >= 1");
  if (!std::isfinite(spec.noise) || spec.noise < 0) bad("noise must be finite and >= 0");
  if (!std::isfinite(spec.popularity) || spec.popularity < 0) bad("popularity must be finite and >= 0");
  if (spec.train < 1 || spec.test < 0) bad("train must be >= 1 and test >= 0");
  const double cells = static_cast<double>(spec.rows) * static_cast<double>(spec.cols);
  if (static_cast<double>(spec.train + spec.test) > cells / 2)
    bad("train + test must be at most rows x cols / 2, got " + std::to_string(spec.train + spec.test) +
        " for " + std::to_string(static_cast<int64_t>(cells)) + " cells");

  Ratings r;
  const auto rank = static_cast<size_t>(spec.rank);
  const double sd = std::pow(static_cast<double>(spec.rank), -0.25);
  Rng factor_rng(seed, Purpose::kData, 10);
  r.u.resize(static_cast<size_t>(spec.rows) * rank);
  r.v.resize(static_cast<size_t>(spec.cols) * rank);
  for (float& x : r.u) x = static_cast<float>(factor_rng.normal(0.0, sd));
  for (float& x : r.v) x = static_cast<float>(factor_rng.normal(0.0, sd));

  Rng pair_rng(seed, Purpose::kData, 11);
  Rng noise_rng(seed, Purpose::kData, 12);
  const auto row_cdf = zipf_cdf(spec.rows, spec.popularity);
  const auto col_cdf = zipf_cdf(spec.cols, spec.popularity);
  std::unordered_set<uint64_t> seen;  // membership only: never iterated
  auto fill = [&](Dataset& d, int64_t n) {
    d.features = 3;
    d.classes = 0;
    d.x.resize(static_cast<size_t>(n) * 3);
    d.y.assign(static_cast<size_t>(n), 0);
    for (int64_t k = 0; k < n; ++k) {
      int32_t i = 0, j = 0;
      do {
        i = draw(row_cdf, pair_rng);
        j = draw(col_cdf, pair_rng);
      } while (
          !seen.insert(static_cast<uint64_t>(i) * static_cast<uint64_t>(spec.cols) + static_cast<uint64_t>(j))
               .second);
      double dot = 0.0;
      for (size_t c = 0; c < rank; ++c)
        dot += static_cast<double>(r.u[static_cast<size_t>(i) * rank + c]) *
               static_cast<double>(r.v[static_cast<size_t>(j) * rank + c]);
      float* x = d.x.data() + k * 3;
      x[0] = static_cast<float>(i);
      x[1] = static_cast<float>(j);
      x[2] = static_cast<float>(dot + spec.noise * noise_rng.normal());
    }
  };
  fill(r.split.train, spec.train);
  fill(r.split.test, spec.test);
  return r;
}

MfModel::MfModel(int32_t rows, int32_t cols, int32_t rank, double l2)
    : rows_(rows), cols_(cols), rank_(rank), l2_(static_cast<float>(l2)) {
  if (rows < 1 || cols < 1 || rank < 1)
    throw std::invalid_argument("model: mf: rows, cols and rank must be >= 1");
}

void MfModel::init(std::span<float> params, Rng& rng) {
  for (float& p : params) p = static_cast<float>(rng.normal(0.0, 0.1));
}

int64_t MfModel::update_bytes(const Dataset& data, std::span<const int32_t> batch) {
  // Distinct rows and distinct columns: column ids are offset by rows_ so one sort counts both.
  scratch_.clear();
  for (int32_t s : batch) {
    const float* x = data.sample(s);
    scratch_.push_back(static_cast<int32_t>(x[0]));
    scratch_.push_back(rows_ + static_cast<int32_t>(x[1]));
  }
  std::sort(scratch_.begin(), scratch_.end());
  const auto touched = std::unique(scratch_.begin(), scratch_.end()) - scratch_.begin();
  return static_cast<int64_t>(touched) * (int64_t{rank_} * 4 + 4);
}

void MfModel::changed_rows(const Dataset& data, std::span<const int32_t> batch, std::vector<int32_t>& rows) {
  // The gradient also carries l2 x row for the rows the batch touches, and only those.
  const size_t first = rows.size();
  for (int32_t s : batch) {
    const float* x = data.sample(s);
    rows.push_back(static_cast<int32_t>(x[0]));
    rows.push_back(rows_ + static_cast<int32_t>(x[1]));
  }
  std::sort(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end());
  rows.erase(std::unique(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end()), rows.end());
}

double MfModel::loss_and_gradient(std::span<const float> params, const Dataset& data,
                                  std::span<const int32_t> indices, std::span<float> grad) {
  std::fill(grad.begin(), grad.end(), 0.0f);
  const auto r = static_cast<size_t>(rank_);
  const float* uf = params.data();
  const float* vf = params.data() + static_cast<size_t>(rows_) * r;
  float* gu = grad.data();
  float* gv = grad.data() + static_cast<size_t>(rows_) * r;
  const float scale = 1.0f / static_cast<float>(indices.size());
  double loss = 0.0;
  for (int32_t s : indices) {
    const float* x = data.sample(s);
    const auto i = static_cast<size_t>(x[0]);
    const auto j = static_cast<size_t>(x[1]);
    const float* u = uf + i * r;
    const float* v = vf + j * r;
    float dot = 0.0f, uu = 0.0f, vv = 0.0f;
    for (size_t c = 0; c < r; ++c) {
      dot += u[c] * v[c];
      uu += u[c] * u[c];
      vv += v[c] * v[c];
    }
    const float e = dot - x[2];
    loss +=
        0.5 * static_cast<double>(e) * static_cast<double>(e) + 0.5 * static_cast<double>(l2_) * (uu + vv);
    for (size_t c = 0; c < r; ++c) {
      gu[i * r + c] += scale * (e * v[c] + l2_ * u[c]);
      gv[j * r + c] += scale * (e * u[c] + l2_ * v[c]);
    }
  }
  return loss / static_cast<double>(indices.size());
}

Evaluation MfModel::evaluate(std::span<const float> params, const Dataset& data,
                             std::span<const int32_t> indices) {
  const auto r = static_cast<size_t>(rank_);
  const float* uf = params.data();
  const float* vf = params.data() + static_cast<size_t>(rows_) * r;
  const int64_t n = indices.empty() ? data.size() : static_cast<int64_t>(indices.size());
  double sq = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    const float* x = data.sample(indices.empty() ? k : indices[static_cast<size_t>(k)]);
    const float* u = uf + static_cast<size_t>(x[0]) * r;
    const float* v = vf + static_cast<size_t>(x[1]) * r;
    float dot = 0.0f;
    for (size_t c = 0; c < r; ++c) dot += u[c] * v[c];
    const double e = static_cast<double>(dot) - static_cast<double>(x[2]);
    sq += e * e;
  }
  Evaluation ev;
  ev.samples = n;
  ev.has_accuracy = false;
  ev.loss = n ? sq / static_cast<double>(n) : 0.0;
  ev.metric = std::sqrt(ev.loss);
  return ev;
}

}  // namespace stalesim
