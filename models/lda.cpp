// LDA by collapsed Gibbs sampling: the corpus generator and the model (see lda.hpp).

#include "models/lda.hpp"

#include <math.h>
#include <algorithm>

#include <cmath>
#include <stdexcept>
#include <string>

namespace stalesim {
namespace {

constexpr int64_t kMaxExact = int64_t{1} << 24;  // float32 holds every integer below this

// log Gamma(x) without lgamma's write to the global signgam (runs may share a process: sweeps).
double log_gamma(double x) {
  int sign = 0;
  return lgamma_r(x, &sign);
}

// Dirichlet(conc, ..., conc) of size n by normalized Gamma(conc, 1) draws.
void dirichlet(std::span<double> out, double conc, Rng& rng) {
  double sum = 0.0;
  for (double& x : out) sum += (x = rng.gamma(conc, 1.0));
  if (!(sum > 0.0)) {  // every draw underflowed: fall back to uniform
    for (double& x : out) x = 1.0 / static_cast<double>(out.size());
    return;
  }
  for (double& x : out) x /= sum;
}

int32_t categorical(std::span<const double> p, Rng& rng) {
  double u = rng.uniform();
  for (size_t k = 0; k + 1 < p.size(); ++k) {
    if (u < p[k]) return static_cast<int32_t>(k);
    u -= p[k];
  }
  return static_cast<int32_t>(p.size() - 1);
}

}  // namespace

Corpus generate_corpus(const CorpusSpec& spec, uint64_t seed) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("generate_corpus: " + what); };
  if (spec.vocabulary < 1 || spec.vocabulary >= kMaxExact) bad("vocabulary must be in [1, 2^24)");
  if (spec.topics < 1 || spec.documents < 1) bad("topics and documents must be >= 1");
  if (spec.min_length < 1 || spec.min_length > spec.max_length) bad("need 1 <= min_length <= max_length");
  if (int64_t{spec.documents} * spec.max_length >= kMaxExact)
    bad("documents x max_length must be below 2^24 (counts must stay exact in float32), got " +
        std::to_string(int64_t{spec.documents} * spec.max_length));
  if (!(spec.alpha > 0) || !(spec.beta > 0) || !std::isfinite(spec.alpha) || !std::isfinite(spec.beta))
    bad("alpha and beta must be finite and > 0");

  Corpus c;
  const auto V = static_cast<size_t>(spec.vocabulary);
  const auto K = static_cast<size_t>(spec.topics);
  Rng topic_rng(seed, Purpose::kData, 20);
  c.phi.resize(K * V);
  for (size_t k = 0; k < K; ++k) dirichlet(std::span<double>(c.phi).subspan(k * V, V), spec.beta, topic_rng);

  Rng doc_rng(seed, Purpose::kData, 21);
  Dataset& d = c.split.train;
  d.features = int64_t{spec.max_length} + 1;
  d.classes = 0;
  d.x.assign(static_cast<size_t>(spec.documents) * static_cast<size_t>(d.features), 0.0f);
  d.y.assign(static_cast<size_t>(spec.documents), 0);
  c.theta.resize(static_cast<size_t>(spec.documents) * K);
  for (int32_t doc = 0; doc < spec.documents; ++doc) {
    auto theta = std::span<double>(c.theta).subspan(static_cast<size_t>(doc) * K, K);
    dirichlet(theta, spec.alpha, doc_rng);
    const auto len = static_cast<int32_t>(
        spec.min_length +
        static_cast<int64_t>(doc_rng.below(static_cast<uint64_t>(spec.max_length - spec.min_length + 1))));
    float* x = d.x.data() + static_cast<size_t>(doc) * static_cast<size_t>(d.features);
    x[0] = static_cast<float>(len);
    for (int32_t i = 0; i < len; ++i) {
      const int32_t z = categorical(theta, doc_rng);
      const int32_t w =
          categorical(std::span<const double>(c.phi).subspan(static_cast<size_t>(z) * V, V), doc_rng);
      c.z.push_back(z);
      x[1 + i] = static_cast<float>(w);
    }
  }
  c.split.test.features = d.features;
  return c;
}

double lda_conditional(std::span<const float> n_w, std::span<const float> n_k, std::span<const int32_t> n_d,
                       double alpha, double beta, int32_t vocabulary, std::span<double> cumulative) {
  const double vbeta = static_cast<double>(vocabulary) * beta;
  double sum = 0.0;
  for (size_t k = 0; k < cumulative.size(); ++k) {
    const double wk = std::max(0.0, static_cast<double>(n_w[k]));
    const double tk = std::max(0.0, static_cast<double>(n_k[k]));
    const double dk = std::max(0, n_d[k]);
    sum += (wk + beta) / (tk + vbeta) * (dk + alpha);
    cumulative[k] = sum;
  }
  return sum;
}

int32_t lda_draw(std::span<const double> cumulative, Rng& rng) {
  const double u = rng.uniform() * cumulative.back();
  for (size_t k = 0; k + 1 < cumulative.size(); ++k)
    if (u < cumulative[k]) return static_cast<int32_t>(k);
  return static_cast<int32_t>(cumulative.size() - 1);
}

LdaModel::LdaModel(const Dataset& train, int32_t vocabulary, int32_t topics, double alpha, double beta,
                   uint64_t seed)
    : train_(train), vocabulary_(vocabulary), topics_(topics), alpha_(alpha), beta_(beta) {
  if (vocabulary < 1 || topics < 1 || !(alpha > 0) || !(beta > 0))
    throw std::invalid_argument("model: lda: vocabulary and topics must be >= 1, alpha and beta > 0");
  offset_.resize(static_cast<size_t>(train.size()) + 1);
  for (int64_t d = 0; d < train.size(); ++d) {
    const auto len = static_cast<int64_t>(train.sample(d)[0]);
    for (int64_t i = 0; i < len; ++i) {
      const auto w = static_cast<int64_t>(train.sample(d)[1 + i]);
      if (w < 0 || w >= vocabulary)
        throw std::invalid_argument("model: lda: document " + std::to_string(d) + " has word id " +
                                    std::to_string(w) + " outside the vocabulary of " +
                                    std::to_string(vocabulary));
    }
    offset_[static_cast<size_t>(d) + 1] = offset_[static_cast<size_t>(d)] + len;
  }
  tokens_ = offset_.back();
  if (tokens_ >= kMaxExact)
    throw std::invalid_argument("model: lda: " + std::to_string(tokens_) +
                                " tokens; at most 2^24 - 1 keep counts exact in float32");
  z_.resize(static_cast<size_t>(tokens_));
  doc_rng_.reserve(static_cast<size_t>(train.size()));
  for (int64_t d = 0; d < train.size(); ++d)
    doc_rng_.emplace_back(seed, Purpose::kGibbs, static_cast<uint64_t>(d));
  n_d_.resize(static_cast<size_t>(topics));
  cumulative_.resize(static_cast<size_t>(topics));
}

double LdaModel::flops_per_sample() const {
  const double mean_len =
      train_.size() ? static_cast<double>(tokens_) / static_cast<double>(train_.size()) : 0.0;
  return mean_len * (6.0 * topics_ + 10.0);
}

std::span<const int32_t> LdaModel::assignments(int32_t d) const {
  const auto a = static_cast<size_t>(offset_[static_cast<size_t>(d)]);
  const auto b = static_cast<size_t>(offset_[static_cast<size_t>(d) + 1]);
  return std::span<const int32_t>(z_).subspan(a, b - a);
}

void LdaModel::init(std::span<float> params, Rng& rng) {
  std::fill(params.begin(), params.end(), 0.0f);
  const auto K = static_cast<size_t>(topics_);
  float* totals = params.data() + static_cast<size_t>(vocabulary_) * K;
  for (int64_t d = 0; d < train_.size(); ++d) {
    const float* x = train_.sample(d);
    for (int64_t i = 0; i < offset_[static_cast<size_t>(d) + 1] - offset_[static_cast<size_t>(d)]; ++i) {
      const auto k = static_cast<int32_t>(rng.below(K));
      z_[static_cast<size_t>(offset_[static_cast<size_t>(d)] + i)] = k;
      params[static_cast<size_t>(x[1 + i]) * K + static_cast<size_t>(k)] += 1.0f;
      totals[k] += 1.0f;
    }
  }
}

int64_t LdaModel::update_bytes(const Dataset& data, std::span<const int32_t> batch) {
  scratch_.clear();
  for (int32_t s : batch) {
    const float* x = data.sample(s);
    const auto len = static_cast<int64_t>(x[0]);
    for (int64_t i = 0; i < len; ++i) scratch_.push_back(static_cast<int32_t>(x[1 + i]));
  }
  std::sort(scratch_.begin(), scratch_.end());
  const auto words = std::unique(scratch_.begin(), scratch_.end()) - scratch_.begin();
  return static_cast<int64_t>(words) * (int64_t{topics_} * 4 + 4) + int64_t{topics_} * 4;
}

void LdaModel::changed_rows(const Dataset& data, std::span<const int32_t> batch, std::vector<int32_t>& rows) {
  // A resampled token moves counts between topics of its word's row and of the totals; a row
  // whose counts happen to come out unchanged is still counted (Bosen sends what was written).
  const size_t first = rows.size();
  for (int32_t s : batch) {
    const float* x = data.sample(s);
    const auto len = static_cast<int64_t>(x[0]);
    for (int64_t i = 0; i < len; ++i) rows.push_back(static_cast<int32_t>(x[1 + i]));
  }
  rows.push_back(vocabulary_);
  std::sort(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end());
  rows.erase(std::unique(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end()), rows.end());
}

double LdaModel::loss_and_gradient(std::span<const float> params, const Dataset& data,
                                   std::span<const int32_t> indices, std::span<float> grad) {
  const auto K = static_cast<size_t>(topics_);
  work_.assign(params.begin(), params.end());
  float* totals = work_.data() + static_cast<size_t>(vocabulary_) * K;
  const std::span<const float> n_k(totals, K);
  double loss = 0.0;
  int64_t count = 0;
  for (int32_t doc : indices) {
    const float* x = data.sample(doc);
    const auto base = static_cast<size_t>(offset_[static_cast<size_t>(doc)]);
    const auto len = static_cast<size_t>(offset_[static_cast<size_t>(doc) + 1]) - base;
    std::fill(n_d_.begin(), n_d_.end(), 0);
    for (size_t i = 0; i < len; ++i) ++n_d_[static_cast<size_t>(z_[base + i])];
    Rng& rng = doc_rng_[static_cast<size_t>(doc)];
    const double norm = static_cast<double>(len) - 1.0 + static_cast<double>(topics_) * alpha_;
    for (size_t i = 0; i < len; ++i) {
      const auto w = static_cast<size_t>(x[1 + i]);
      float* n_w = work_.data() + w * K;
      const auto old = static_cast<size_t>(z_[base + i]);
      n_w[old] -= 1.0f;
      totals[old] -= 1.0f;
      --n_d_[old];
      const double total =
          lda_conditional(std::span<const float>(n_w, K), n_k, n_d_, alpha_, beta_, vocabulary_, cumulative_);
      const int32_t k = lda_draw(cumulative_, rng);
      z_[base + i] = k;
      n_w[k] += 1.0f;
      totals[k] += 1.0f;
      ++n_d_[static_cast<size_t>(k)];
      loss -= std::log(total / norm);
      ++count;
    }
  }
  for (size_t p = 0; p < grad.size(); ++p) grad[p] = work_[p] - params[p];
  return count ? loss / static_cast<double>(count) : 0.0;
}

Evaluation LdaModel::evaluate(std::span<const float> params, const Dataset& data,
                              std::span<const int32_t> indices) {
  (void)data;
  (void)indices;
  const auto K = static_cast<size_t>(topics_);
  const double V = vocabulary_;
  double ll = static_cast<double>(topics_) * (log_gamma(V * beta_) - V * log_gamma(beta_));
  const float* totals = params.data() + static_cast<size_t>(vocabulary_) * K;
  for (size_t k = 0; k < K; ++k) {
    for (size_t w = 0; w < static_cast<size_t>(vocabulary_); ++w)
      ll += log_gamma(std::max(0.0, static_cast<double>(params[w * K + k])) + beta_);
    ll -= log_gamma(std::max(0.0, static_cast<double>(totals[k])) + V * beta_);
  }
  Evaluation ev;
  ev.samples = train_.size();
  ev.has_loss = false;
  ev.has_accuracy = false;
  ev.metric = tokens_ ? ll / static_cast<double>(tokens_) : 0.0;
  return ev;
}

}  // namespace stalesim
