#pragma once
// Latent Dirichlet allocation by collapsed Gibbs sampling (issue 6, point 3): Griffiths and
// Steyvers, "Finding scientific topics", PNAS 2004, with the word-topic counts and topic totals
// on the parameter server as in the ESSP paper's LDA (Dai et al., "High-performance distributed
// ML at scale through parameter server consistency models", AAAI 2015).
//
// Data layout: one document per sample, features = longest document + 1:
// x = (length, word_0, ..., word_{length-1}, 0 padding), word ids stored as exact float integers
// (< 2^24), y = 0. There is no test set (test is empty).
// Parameters (the server's counts, integers held exactly in float32): n_wk, vocabulary x topics,
// row-major (word w's K counts are contiguous), then the topic totals n_k (topics).
// A worker's push is the count delta of its batch (UpdateKind::kDelta): the server adds it as is.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/dataset.hpp"
#include "models/model.hpp"

namespace stalesim {

// The generator (scenario: data.corpus). Topics phi_k ~ Dirichlet(beta) over the vocabulary,
// each document's theta_d ~ Dirichlet(alpha) over the topics, its length uniform in
// [min_length, max_length], and each token z ~ theta_d, w ~ phi_z (the LDA generative process,
// Blei, Ng and Jordan, JMLR 2003). Streams: Purpose::kData, entities 20 (topics), 21 (documents).
struct CorpusSpec {
  int32_t vocabulary = 500;
  int32_t topics = 10;
  int32_t documents = 1000;
  int32_t min_length = 50;
  int32_t max_length = 150;
  double alpha = 0.1;  // generator's document-topic concentration, > 0
  double beta = 0.05;  // generator's topic-word concentration, > 0
  bool operator==(const CorpusSpec&) const = default;
};

struct Corpus {
  DataSplit split;            // train: the documents; test: empty
  std::vector<double> phi;    // true topics, topics x vocabulary, row-major
  std::vector<double> theta;  // true document mixtures, documents x topics, row-major
  std::vector<int32_t> z;     // true topic of every token, documents in order
};

// REQUIRES-checked (std::invalid_argument): positive sizes, vocabulary < 2^24,
// min_length <= max_length, documents x max_length < 2^24 (every count stays exact in float32).
Corpus generate_corpus(const CorpusSpec& spec, uint64_t seed);

// The sampler's full conditional for one token of word w in document d, the token's own
// assignment removed (Griffiths and Steyvers 2004, eq. 5), up to normalization:
//   p(z = k | rest) ∝ (n_wk + beta) / (n_k + V beta) x (n_dk + alpha).
// Counts below zero (impossible with consistent reads) are treated as zero. Writes the running
// sums of those K terms into `cumulative` (double, k ascending) and returns their total.
double lda_conditional(std::span<const float> n_w, std::span<const float> n_k, std::span<const int32_t> n_d,
                       double alpha, double beta, int32_t vocabulary, std::span<double> cumulative);
// Draws k with probability proportional to its term: the first k with u x total < cumulative[k].
int32_t lda_draw(std::span<const double> cumulative, Rng& rng);

// The model (model.type "lda"). Each document's topic assignments live here, owned by the worker
// whose shard holds the document (documents are disjoint between workers); each document draws
// from its own stream (Purpose::kGibbs, entity = document), so the draws do not depend on the
// order in which workers run.
class LdaModel final : public Model {
 public:
  // `train` must outlive the model. REQUIRES: topics >= 1, alpha > 0, beta > 0.
  LdaModel(const Dataset& train, int32_t vocabulary, int32_t topics, double alpha, double beta,
           uint64_t seed);
  std::string type() const override { return "lda"; }
  int64_t parameter_count() const override { return (int64_t{vocabulary_} + 1) * topics_; }
  // Per document (a sample): mean tokens per document x (6 K + 10): K terms of the conditional at
  // about 6 operations each, plus the decrement, increment and draw. That is 6 K + 10 per token.
  double flops_per_sample() const override;
  UpdateKind update_kind() const override { return UpdateKind::kDelta; }
  // A pull carries the whole count table: parameter_count() x 4 bytes.
  int64_t wire_bytes() const override { return parameter_count() * 4; }
  // A push carries the rows of the words the batch's documents contain plus the totals row:
  // (distinct words x (K x 4 + 4)) + K x 4.
  int64_t update_bytes(const Dataset& data, std::span<const int32_t> batch) override;
  // Rows: one per word (its K counts), then the topic totals (row `vocabulary`, no id sent).
  int64_t row_count() const override { return int64_t{vocabulary_} + 1; }
  void changed_rows(const Dataset& data, std::span<const int32_t> batch, std::vector<int32_t>& rows) override;
  int64_t row_bytes(int32_t row) const override { return int64_t{topics_} * 4 + (row < vocabulary_ ? 4 : 0); }
  std::string metric_name() const override { return "loglik_per_token"; }

  // Assigns every token a topic uniformly from `rng` and writes the counts of those assignments.
  void init(std::span<float> params, Rng& rng) override;
  // One Gibbs sweep over the batch's documents against `params` (the worker's possibly stale
  // counts, copied to a working table that each draw updates), then `grad` = working - params:
  // the integer count delta. Returns the mean over the batch's tokens of -log p(w_i | rest), the
  // predictive probability of each token given all other assignments (sum over k of the
  // conditional's terms divided by (n_d - 1 + K alpha)).
  double loss_and_gradient(std::span<const float> params, const Dataset& data,
                           std::span<const int32_t> indices, std::span<float> grad) override;
  // log p(w | z) per token of the training corpus from the counts in `params` (Griffiths and
  // Steyvers 2004, eq. 2):
  //   K (lgamma(V beta) - V lgamma(beta)) + sum_k (sum_w lgamma(n_wk + beta) - lgamma(n_k + V beta)),
  // divided by the number of tokens; the metric "loglik_per_token". `data` and `indices` are not
  // used: the server's counts describe the training corpus.
  Evaluation evaluate(std::span<const float> params, const Dataset& data,
                      std::span<const int32_t> indices) override;

  // Current topic assignments of document d's tokens (for tests).
  std::span<const int32_t> assignments(int32_t d) const;
  int64_t tokens() const { return tokens_; }

 private:
  const Dataset& train_;
  int32_t vocabulary_, topics_;
  double alpha_, beta_;
  int64_t tokens_ = 0;
  std::vector<int64_t> offset_;  // z_ of document d starts at offset_[d]
  std::vector<int32_t> z_;
  std::vector<Rng> doc_rng_;
  std::vector<float> work_;
  std::vector<int32_t> n_d_;
  std::vector<double> cumulative_;
  std::vector<int32_t> scratch_;
};

}  // namespace stalesim
