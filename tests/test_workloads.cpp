// Issue 6: matrix factorization and LDA (models/mf.hpp, models/lda.hpp) and their runs.

#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "models/lda.hpp"
#include "models/mf.hpp"
#include "sim/worker/changed_rows.hpp"
#include "sim/simulation.hpp"
#include "sim/workloads.hpp"
#include "tests/sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;

namespace {

Dataset ratings_of(const std::vector<std::array<float, 3>>& obs) {
  Dataset d;
  d.features = 3;
  for (const auto& o : obs) d.x.insert(d.x.end(), o.begin(), o.end());
  d.y.assign(obs.size(), 0);
  return d;
}

Dataset corpus_of(const std::vector<std::vector<int>>& docs) {
  Dataset d;
  size_t longest = 0;
  for (const auto& doc : docs) longest = std::max(longest, doc.size());
  d.features = static_cast<int64_t>(longest) + 1;
  for (const auto& doc : docs) {
    d.x.push_back(static_cast<float>(doc.size()));
    for (int w : doc) d.x.push_back(static_cast<float>(w));
    d.x.resize(d.x.size() + longest - doc.size(), 0.0f);
  }
  d.y.assign(docs.size(), 0);
  return d;
}

// Checks that `params` are exactly the counts of the model's assignments.
void check_counts_match(const LdaModel& m, const Dataset& corpus, std::span<const float> params, int32_t V,
                        int32_t K) {
  std::vector<float> expect(static_cast<size_t>((V + 1) * K), 0.0f);
  for (int32_t d = 0; d < corpus.size(); ++d) {
    const auto z = m.assignments(d);
    for (size_t i = 0; i < z.size(); ++i) {
      const auto w = static_cast<size_t>(corpus.sample(d)[1 + i]);
      expect[w * static_cast<size_t>(K) + static_cast<size_t>(z[i])] += 1.0f;
      expect[static_cast<size_t>(V * K + z[i])] += 1.0f;
    }
  }
  CHECK(std::equal(expect.begin(), expect.end(), params.begin(), params.end()));
}

nlohmann::json mf_json() {
  return nlohmann::json::parse(R"({
    "name": "mf-test", "seed": 3,
    "data": { "dataset": "ratings",
              "ratings": { "rows": 120, "cols": 100, "rank": 3, "noise": 0.1, "train": 4000, "test": 500,
                           "popularity": 0.5 } },
    "model": { "type": "mf", "rank": 3, "l2": 0.001 },
    "optimizer": { "rule": "sgd", "lr": 2.0, "batch_size": 20 },
    "policy": { "type": "ssp", "staleness": 2 },
    "cluster": { "workers": [ { "profile": "gtx1060", "count": 4 } ] },
    "stop": { "max_updates": 400 },
    "eval": { "every_s": 0.001 } })");
}

nlohmann::json lda_json() {
  return nlohmann::json::parse(R"({
    "name": "lda-test", "seed": 4,
    "data": { "dataset": "corpus",
              "corpus": { "vocabulary": 60, "topics": 4, "documents": 80, "min_length": 10, "max_length": 30,
                          "alpha": 0.2, "beta": 0.1 } },
    "model": { "type": "lda", "topics": 4, "alpha": 0.2, "beta": 0.1 },
    "optimizer": { "rule": "sgd", "batch_size": 4 },
    "policy": { "type": "ssp", "staleness": 2 },
    "cluster": { "workers": [ { "profile": "gtx1060", "count": 4 } ] },
    "stop": { "max_updates": 300 },
    "eval": { "every_s": 0.001 } })");
}

// Column sums of the word-topic table (word frequencies) and the totals row must equal the
// corpus's own word counts and token count.
void check_lda_params(const RunResult& r, const nlohmann::json& j) {
  const Scenario s = scenario(j);
  const DataSplit d = make_workload_data(s);
  const int32_t V = s.data.corpus.vocabulary, K = s.model.topics;
  std::vector<double> freq(static_cast<size_t>(V), 0.0);
  double tokens = 0;
  for (int64_t doc = 0; doc < d.train.size(); ++doc) {
    const float* x = d.train.sample(doc);
    for (int i = 0; i < static_cast<int>(x[0]); ++i) freq[static_cast<size_t>(x[1 + i])] += 1, tokens += 1;
  }
  REQUIRE(r.final_params.size() == static_cast<size_t>((V + 1) * K));
  for (int32_t w = 0; w < V; ++w) {
    double row = 0;
    for (int32_t k = 0; k < K; ++k) {
      const float c = r.final_params[static_cast<size_t>(w * K + k)];
      CHECK(c >= 0.0f);
      CHECK(c == std::floor(c));
      row += c;
    }
    CHECK(row == freq[static_cast<size_t>(w)]);
  }
  double total = 0;
  for (int32_t k = 0; k < K; ++k) total += r.final_params[static_cast<size_t>(V * K + k)];
  CHECK(total == tokens);
}

}  // namespace

// ---- Matrix factorization -------------------------------------------------------------------

TEST_CASE("mf gradient matches central finite differences of its loss") {
  MfModel m(4, 3, 2, 0.1);
  // Row 1 appears twice and column 2 twice: their gradients accumulate.
  const Dataset d = ratings_of({{1, 0, 0.5f}, {1, 2, -1.0f}, {3, 2, 2.0f}, {0, 1, 0.25f}});
  const std::vector<int32_t> batch{0, 1, 2, 3};
  std::vector<float> p(static_cast<size_t>(m.parameter_count()));
  Rng rng(11);
  for (float& x : p) x = static_cast<float>(rng.normal(0.0, 0.7));
  std::vector<float> g(p.size()), scratch(p.size());
  m.loss_and_gradient(p, d, batch, g);
  const float eps = 1e-2f;
  for (size_t i = 0; i < p.size(); ++i) {
    auto q = p;
    q[i] = p[i] + eps;
    const double up = m.loss_and_gradient(q, d, batch, scratch);
    q[i] = p[i] - eps;
    const double down = m.loss_and_gradient(q, d, batch, scratch);
    CAPTURE(i);
    CHECK(g[i] == doctest::Approx((up - down) / (2.0 * eps)).epsilon(2e-3).scale(1.0));
  }
  // Row 2 of U is in no observation: no gradient at all (sparse updates).
  for (size_t c = 0; c < 2; ++c) CHECK(g[2 * 2 + c] == 0.0f);
}

TEST_CASE("mf push bytes count the distinct rows and columns the batch touched") {
  MfModel m(5, 4, 3, 0.0);
  const Dataset d = ratings_of({{0, 1, 1}, {0, 2, 1}, {3, 1, 1}, {4, 3, 1}});
  // Batch {0, 1, 2}: rows {0, 3} and columns {1, 2}: 4 rows x (3 x 4 + 4) = 64 bytes.
  const std::vector<int32_t> b1{0, 1, 2};
  CHECK(m.update_bytes(d, b1) == 64);
  // Every observation: rows {0, 3, 4}, columns {1, 2, 3}: 6 x 16 = 96; dense would be 9 x 3 x 4.
  const std::vector<int32_t> b2{3, 2, 1, 0};
  CHECK(m.update_bytes(d, b2) == 96);
  CHECK(m.wire_bytes() == 108);
  CHECK(m.flops_per_sample() == 30.0);
}

TEST_CASE("mf evaluation reports the test RMSE and no accuracy") {
  MfModel m(2, 2, 1, 0.0);
  const Dataset d = ratings_of({{0, 0, 1.0f}, {1, 1, 0.0f}});
  const std::vector<float> p{1.0f, 2.0f, 3.0f, 0.5f};  // u = (1, 2), v = (3, 0.5): predictions 3 and 1
  const Evaluation e = m.evaluate(p, d, {});
  CHECK(e.loss == doctest::Approx((4.0 + 1.0) / 2));
  CHECK(*e.metric == doctest::Approx(std::sqrt(2.5)));
  CHECK_FALSE(e.has_accuracy);
}

TEST_CASE("the ratings generator has the declared rank, noise and power-law popularity") {
  SUBCASE("rank and noise") {
    RatingsSpec spec{
        .rows = 200, .cols = 150, .rank = 3, .noise = 0.3, .train = 12000, .test = 1000, .popularity = 0.3};
    const Ratings r = generate_ratings(spec, 7);
    Eigen::MatrixXd u(spec.rows, spec.rank), v(spec.cols, spec.rank);
    for (int i = 0; i < spec.rows; ++i)
      for (int c = 0; c < spec.rank; ++c) u(i, c) = r.u[static_cast<size_t>(i * spec.rank + c)];
    for (int j = 0; j < spec.cols; ++j)
      for (int c = 0; c < spec.rank; ++c) v(j, c) = r.v[static_cast<size_t>(j * spec.rank + c)];
    const Eigen::MatrixXd full = u * v.transpose();
    const Eigen::VectorXd sv = Eigen::JacobiSVD<Eigen::MatrixXd>(full).singularValues();
    CHECK(sv(2) > 1e-2 * sv(0));
    CHECK(sv(3) < 1e-9 * sv(0));
    double sq = 0, var = 0;
    const Dataset& t = r.split.train;
    REQUIRE(t.size() == spec.train);
    REQUIRE(r.split.test.size() == spec.test);
    for (int64_t k = 0; k < t.size(); ++k) {
      const float* x = t.sample(k);
      const double clean = full(static_cast<int>(x[0]), static_cast<int>(x[1]));
      sq += (x[2] - clean) * (x[2] - clean);
      var += clean * clean;
    }
    CHECK(std::sqrt(sq / static_cast<double>(t.size())) == doctest::Approx(0.3).epsilon(0.03));
    CHECK(var / static_cast<double>(t.size()) == doctest::Approx(1.0).epsilon(0.25));
  }
  SUBCASE("popularity and distinct cells") {
    RatingsSpec spec{
        .rows = 10000, .cols = 10000, .rank = 2, .noise = 0.0, .train = 20000, .test = 0, .popularity = 0.8};
    const Ratings r = generate_ratings(spec, 9);
    std::vector<int64_t> rows(static_cast<size_t>(spec.rows), 0);
    std::vector<uint64_t> cells;
    for (int64_t k = 0; k < r.split.train.size(); ++k) {
      const float* x = r.split.train.sample(k);
      ++rows[static_cast<size_t>(x[0])];
      cells.push_back(static_cast<uint64_t>(x[0]) * 10000u + static_cast<uint64_t>(x[1]));
    }
    // P(row i) is proportional to (i + 1)^-0.8: rows 1 to 3 against rows 10 to 30 differ by 10^0.8.
    const double head = static_cast<double>(rows[1] + rows[2] + rows[3]);
    const double tail = static_cast<double>(rows[10] + rows[20] + rows[30]);
    const double expect = (std::pow(2, -0.8) + std::pow(3, -0.8) + std::pow(4, -0.8)) /
                          (std::pow(11, -0.8) + std::pow(21, -0.8) + std::pow(31, -0.8));
    CHECK(head / tail == doctest::Approx(expect).epsilon(0.2));
    std::sort(cells.begin(), cells.end());
    CHECK(std::adjacent_find(cells.begin(), cells.end()) == cells.end());
  }
  CHECK_THROWS_AS(generate_ratings(RatingsSpec{.rows = 10, .cols = 10, .train = 60, .test = 0}, 1),
                  std::invalid_argument);
}

TEST_CASE("an mf run sends sparse pushes and lowers the test RMSE") {
  const RunResult r = run(mf_json());
  REQUIRE(r.status == RunStatus::kCompleted);
  CHECK(r.metric_name == "test_rmse");
  // 20 observations touch at most 40 rows of 220: each push is far below a dense copy.
  const int64_t dense = (120 + 100) * 3 * 4;
  CHECK(r.bytes_push <= r.messages_push * 40 * (3 * 4 + 4));
  CHECK(r.bytes_push < r.messages_push * dense / 4);
  CHECK(r.bytes_pull == r.messages_pull * dense);
  REQUIRE(r.metrics.size() >= 2);
  CHECK(*r.metrics.back().metric < 0.8 * *r.metrics.front().metric);
  CHECK_FALSE(r.metrics.back().test_accuracy.has_value());
  CHECK(hash_of(mf_json()) == hash_of(mf_json()));
}

TEST_CASE("an mf validation split holds out the last training ratings and evaluates on them") {
  auto j = mf_json();
  const DataSplit all = load_data(testing::scenario(j));
  j["data"]["validation_samples"] = 300;
  const DataSplit held = load_data(testing::scenario(j));
  // Train: the first 3,700 ratings; "test": the last 300 training ratings, never the test set.
  REQUIRE(held.train.size() == 3700);
  REQUIRE(held.test.size() == 300);
  CHECK(std::equal(held.train.x.begin(), held.train.x.end(), all.train.x.begin()));
  CHECK(std::equal(held.test.x.begin(), held.test.x.end(), all.train.x.begin() + 3700 * 3));
  const RunResult r = run(j);
  REQUIRE(r.status == RunStatus::kCompleted);
  CHECK(r.metric_name == "test_rmse");
  CHECK(*r.metrics.back().metric != *run(mf_json()).metrics.back().metric);
  j["data"]["validation_samples"] = 4000;  // nothing left to train on
  CHECK_THROWS_WITH_AS(run(j), doctest::Contains("/data/validation_samples"), ScenarioError);
}

TEST_CASE("mf pushes are sized by their batch in every cache mode") {
  for (const char* policy : {"bsp", "essp", "vap"}) {
    auto j = mf_json();
    j["policy"] = {{"type", policy}};
    if (std::string(policy) == "vap") j["policy"]["value_bound"] = 0.5;
    const RunResult r = run(j);
    CAPTURE(policy);
    REQUIRE(r.status == RunStatus::kCompleted);
    CHECK(r.bytes_push <= r.messages_push * 40 * (3 * 4 + 4));
    CHECK(r.bytes_push >= r.messages_push * 2 * (3 * 4 + 4));
  }
}

TEST_CASE("ChangedRows counts the rows changed since each worker's last copy") {
  ChangedRows c({10, 20, 30}, 2);
  CHECK(c.copy_bytes(0, 0, 999) == 999);  // a first copy is the whole model
  c.note_update(std::vector<int32_t>{1}, 1);
  c.note_update(std::vector<int32_t>{1, 2}, 2);
  CHECK(c.copy_bytes(0, 2, 999) == 20 + 30);  // rows 1 and 2, once each
  CHECK(c.copy_bytes(0, 2, 999) == 0);        // nothing changed since
  CHECK(c.copy_bytes(1, 2, 999) == 999);
  c.note_update(std::vector<int32_t>{0}, 3);
  CHECK(c.copy_bytes(1, 3, 999) == 10);
  c.forget(0);  // a crash lost what was on its way: the next copy is whole again
  CHECK(c.copy_bytes(0, 3, 999) == 999);
  ChangedRows dense;
  CHECK_FALSE(dense.enabled());
  CHECK(dense.copy_bytes(0, 7, 555) == 555);
}

TEST_CASE("mf and lda: the changed rows of a batch are the rows its push carries") {
  const Ratings r = generate_ratings(
      RatingsSpec{
          .rows = 50, .cols = 40, .rank = 2, .noise = 0.1, .train = 600, .test = 10, .popularity = 0.5},
      4);
  MfModel mf(50, 40, 2, 0.0);
  const Corpus c = generate_corpus(CorpusSpec{.vocabulary = 40,
                                              .topics = 3,
                                              .documents = 30,
                                              .min_length = 5,
                                              .max_length = 20,
                                              .alpha = 0.3,
                                              .beta = 0.1},
                                   2);
  LdaModel lda(c.split.train, 40, 3, 0.3, 0.1, 2);
  for (const std::vector<int32_t>& batch :
       {std::vector<int32_t>{0}, std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2, 6}}) {
    for (Model* m : {static_cast<Model*>(&mf), static_cast<Model*>(&lda)}) {
      const Dataset& d = m == &mf ? r.split.train : c.split.train;
      std::vector<int32_t> rows{-1};  // appended after what is there
      m->changed_rows(d, batch, rows);
      REQUIRE(rows.size() >= 2);
      CHECK(rows.front() == -1);
      int64_t bytes = 0;
      for (size_t i = 1; i < rows.size(); ++i) {
        CHECK(rows[i] >= 0);
        CHECK(rows[i] < m->row_count());
        if (i > 1) CHECK(rows[i] > rows[i - 1]);  // sorted, each once
        bytes += m->row_bytes(rows[i]);
      }
      CHECK(bytes == m->update_bytes(d, batch));
    }
  }
  int64_t all = 0;
  for (int32_t row = 0; row < mf.row_count(); ++row) all += mf.row_bytes(row) - 4;  // values without ids
  CHECK(all == mf.wire_bytes());
}

TEST_CASE("essp and lazy ssp copies of an mf model carry only the rows changed since the last copy") {
  const int64_t dense = (120 + 100) * 3 * 4;
  for (const char* cache : {"eager", "lazy"}) {
    auto j = mf_json();
    j["optimizer"]["batch_size"] = 2;  // a push changes at most 4 of the 220 rows
    j["optimizer"]["lr"] = 0.2;
    j["policy"] = std::string(cache) == "eager"
                      ? nlohmann::json{{"type", "essp"}, {"staleness", 2}}
                      : nlohmann::json{{"type", "ssp"}, {"staleness", 2}, {"cache", "lazy"}};
    const RunResult r = run(j);
    const std::string mode = cache;
    CAPTURE(mode);
    REQUIRE(r.status == RunStatus::kCompleted);
    REQUIRE(r.messages_pull > 4 * 10);
    // Four first copies are whole; after that a copy holds the rows of the batches applied since
    // (at most 4 rows each), far below a dense copy, and never more than one.
    CHECK(r.bytes_pull >= 4 * dense);
    CHECK(r.bytes_pull < r.messages_pull * dense / 2);
    CHECK(r.bytes_pull > r.messages_pull * 16);  // at least one changed row in most copies
    auto dense_j = tiny_math_json();             // a dense model: every copy is the whole model
    dense_j["policy"] = j["policy"];
    const RunResult d = run(dense_j);
    REQUIRE(d.status == RunStatus::kCompleted);
    CHECK(d.bytes_pull == d.messages_pull * (8 * 12 + 12 + 12 * 3 + 3) * 4);
  }
}

// ---- LDA --------------------------------------------------------------------------------------

TEST_CASE("the lda conditional is the collapsed Gibbs formula") {
  const std::vector<float> n_w{2, 0, 1}, n_k{5, 3, 4};
  const std::vector<int32_t> n_d{1, 0, 2};
  std::vector<double> cum(3);
  const double alpha = 0.2, beta = 0.5;
  const int32_t V = 4;  // V beta = 2
  const double total = lda_conditional(n_w, n_k, n_d, alpha, beta, V, cum);
  const double t0 = 2.5 / 7 * 1.2, t1 = 0.5 / 5 * 0.2, t2 = 1.5 / 6 * 2.2;
  CHECK(cum[0] == doctest::Approx(t0));
  CHECK(cum[1] == doctest::Approx(t0 + t1));
  CHECK(cum[2] == doctest::Approx(t0 + t1 + t2));
  CHECK(total == cum[2]);
  // Draws follow the normalized terms.
  Rng rng(5);
  std::vector<int> hits(3, 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) ++hits[static_cast<size_t>(lda_draw(cum, rng))];
  CHECK(hits[0] / double(n) == doctest::Approx(t0 / total).epsilon(0.02));
  CHECK(hits[1] / double(n) == doctest::Approx(t1 / total).epsilon(0.05));
  CHECK(hits[2] / double(n) == doctest::Approx(t2 / total).epsilon(0.02));
}

TEST_CASE("lda counts equal the assignments after every sweep, one worker reading fresh counts") {
  const Corpus c = generate_corpus(CorpusSpec{.vocabulary = 40,
                                              .topics = 3,
                                              .documents = 30,
                                              .min_length = 5,
                                              .max_length = 20,
                                              .alpha = 0.3,
                                              .beta = 0.1},
                                   2);
  const int32_t V = 40, K = 3;
  LdaModel m(c.split.train, V, K, 0.3, 0.1, 2);
  std::vector<float> params(static_cast<size_t>(m.parameter_count())), delta(params.size());
  Rng init(1);
  m.init(params, init);
  check_counts_match(m, c.split.train, params, V, K);
  std::vector<int32_t> batch{0, 1, 2, 3, 4, 5};
  for (int sweep = 0; sweep < 20; ++sweep) {
    for (int32_t start = 0; start < 30; start += 6) {
      for (int32_t i = 0; i < 6; ++i) batch[static_cast<size_t>(i)] = start + i;
      const double loss = m.loss_and_gradient(params, c.split.train, batch, delta);
      CHECK(std::isfinite(loss));
      for (size_t p = 0; p < params.size(); ++p) params[p] += delta[p];  // the server's add
    }
    CAPTURE(sweep);
    check_counts_match(m, c.split.train, params, V, K);
    double total = 0;
    for (int32_t k = 0; k < K; ++k) total += params[static_cast<size_t>(V * K + k)];
    CHECK(total == static_cast<double>(m.tokens()));
  }
}

TEST_CASE("lda log-likelihood of a hand-checkable corpus") {
  // One topic: every token is in topic 0 whatever the draws. Words 0, 0, 0, 1 with V = 2 and
  // beta = 1: log p(w|z) = lgamma(2) - 2 lgamma(1) + lgamma(4) + lgamma(2) - lgamma(6)
  //                     = log(3!) - log(5!) = log(0.05), over 4 tokens.
  const Dataset d = corpus_of({{0, 0}, {0, 1}});
  LdaModel m(d, 2, 1, 0.5, 1.0, 1);
  std::vector<float> params(static_cast<size_t>(m.parameter_count())), delta(params.size());
  Rng init(3);
  m.init(params, init);
  CHECK(params == std::vector<float>{3, 1, 4});
  CHECK(*m.evaluate(params, d, {}).metric == doctest::Approx(std::log(0.05) / 4));
  // A sweep cannot move anything: the delta is zero and the loss is the predictive
  // -log((n_w + beta) / (n + V beta)) per token with the token removed (n = 3): each word-0 token
  // sees 2 other word-0 tokens, (2 + 1) / (3 + 2); the word-1 token sees none, (0 + 1) / (3 + 2).
  const std::vector<int32_t> batch{0, 1};
  const double loss = m.loss_and_gradient(params, d, batch, delta);
  CHECK(std::all_of(delta.begin(), delta.end(), [](float x) { return x == 0.0f; }));
  const double expect = -(std::log(3.0 / 5) * 3 + std::log(1.0 / 5)) / 4;
  CHECK(loss == doctest::Approx(expect));
}

TEST_CASE("the corpus generator draws documents from its known topics") {
  const CorpusSpec spec{.vocabulary = 50,
                        .topics = 2,
                        .documents = 400,
                        .min_length = 20,
                        .max_length = 40,
                        .alpha = 0.5,
                        .beta = 0.2};
  const Corpus c = generate_corpus(spec, 8);
  REQUIRE(c.split.train.size() == 400);
  CHECK(c.split.test.size() == 0);
  // Empirical word frequencies of each true topic's tokens match phi.
  std::vector<double> count(static_cast<size_t>(2 * 50), 0.0), per_topic(2, 0.0);
  size_t t = 0;
  int64_t lengths = 0;
  for (int64_t d = 0; d < 400; ++d) {
    const float* x = c.split.train.sample(d);
    const int len = static_cast<int>(x[0]);
    CHECK(len >= 20);
    CHECK(len <= 40);
    lengths += len;
    for (int i = 0; i < len; ++i, ++t) {
      const auto z = static_cast<size_t>(c.z[t]);
      count[z * 50 + static_cast<size_t>(x[1 + i])] += 1;
      per_topic[z] += 1;
    }
  }
  CHECK(lengths / 400.0 == doctest::Approx(30).epsilon(0.05));
  double tv = 0;  // total variation distance between empirical and true topic 0
  for (size_t w = 0; w < 50; ++w) tv += std::fabs(count[w] / per_topic[0] - c.phi[w]);
  CHECK(tv / 2 < 0.08);
}

TEST_CASE("an lda run keeps the server counts exact under ssp, essp and one-worker bsp") {
  for (const char* policy : {"ssp", "essp", "bsp1"}) {
    auto j = lda_json();
    const std::string p = policy;
    if (p == "bsp1") {
      j["policy"] = {{"type", "bsp"}};
      j["cluster"]["workers"][0]["count"] = 1;
    } else {
      j["policy"]["type"] = p;
    }
    CAPTURE(policy);
    const RunResult r = run(j);
    REQUIRE(r.status == RunStatus::kCompleted);
    CHECK(r.metric_name == "loglik_per_token");
    check_lda_params(r, j);
    // The log-likelihood rises from the random start.
    CHECK(*r.metrics.back().metric > *r.metrics.front().metric + 0.1);
    CHECK_FALSE(r.metrics.back().test_loss.has_value());
  }
  CHECK(hash_of(lda_json()) == hash_of(lda_json()));
}

TEST_CASE("lda with a single topic reaches the hand formula through a whole run") {
  auto j = lda_json();
  j["model"]["topics"] = 1;
  j["model"]["beta"] = 1.0;
  j["policy"] = {{"type", "bsp"}};
  j["cluster"]["workers"][0]["count"] = 1;
  const RunResult r = run(j);
  REQUIRE(r.status == RunStatus::kCompleted);
  const DataSplit d = make_workload_data(scenario(j));
  std::vector<double> freq(60, 0.0);
  double n = 0;
  for (int64_t doc = 0; doc < d.train.size(); ++doc)
    for (int i = 0; i < static_cast<int>(d.train.sample(doc)[0]); ++i)
      freq[static_cast<size_t>(d.train.sample(doc)[1 + i])] += 1, n += 1;
  double ll = std::lgamma(60.0) - 60 * std::lgamma(1.0) - std::lgamma(n + 60.0);
  for (double f : freq) ll += std::lgamma(f + 1.0);
  CHECK(*r.metrics.back().metric == doctest::Approx(ll / n));
}

// ---- Scenario rules ---------------------------------------------------------------------------

TEST_CASE("lda refuses learning rules, momentum and softsync, which do not apply to count deltas") {
  auto j = lda_json();
  j["optimizer"]["rule"] = "fasgd";
  CHECK_THROWS_WITH_AS(
      scenario(j), doctest::Contains("test.json: /optimizer/rule: model.type \"lda\" pushes count deltas"),
      ScenarioError);
  j = lda_json();
  j["optimizer"]["momentum"] = 0.9;
  CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains("/optimizer/momentum: model.type \"lda\""),
                       ScenarioError);
  j = lda_json();
  j["policy"] = {{"type", "softsync"}, {"n", 2}};
  CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains("/policy/type: model.type \"lda\""), ScenarioError);
}

TEST_CASE("mf and lda each need their own dataset") {
  auto j = mf_json();
  j["data"] = lda_json()["data"];
  CHECK_THROWS_WITH_AS(
      scenario(j), "test.json: /data/dataset: model.type \"mf\" needs dataset \"ratings\", got \"corpus\"",
      ScenarioError);
  j = tiny_math_json();
  j["data"] = mf_json()["data"];
  CHECK_THROWS_WITH_AS(
      scenario(j),
      "test.json: /data/dataset: \"ratings\" goes with model.type \"mf\" (model.type is \"mlp\")",
      ScenarioError);
  j = lda_json();
  j["data"]["corpus"]["documents"] = 600000;
  CHECK_THROWS_WITH_AS(scenario(j),
                       doctest::Contains("/data/corpus/documents: documents x max_length = 18000000"),
                       ScenarioError);
  j = mf_json();
  j["data"]["ratings"]["train"] = 6000;
  CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains("/data/ratings/train: train + test = 6500 entries"),
                       ScenarioError);
}

// ---- The shipped scenarios converge (issue 6, "done when") ----------------------------------

TEST_CASE("the shipped mf scenario brings the test RMSE within 10 percent of the noise level") {
  const Scenario s = load_scenario_file(std::string(STALESIM_SOURCE_DIR) + "/scenarios/workloads/mf.json");
  const RunResult r = run_scenario(s);
  REQUIRE(r.status == RunStatus::kCompleted);
  REQUIRE(r.metrics.size() >= 2);
  CHECK(*r.metrics.front().metric > 0.9);
  CHECK(*r.metrics.back().metric <= 1.1 * s.data.ratings.noise);
}

TEST_CASE("the shipped lda scenario's log-likelihood rises and flattens") {
  const Scenario s = load_scenario_file(std::string(STALESIM_SOURCE_DIR) + "/scenarios/workloads/lda.json");
  const RunResult r = run_scenario(s);
  REQUIRE(r.status == RunStatus::kCompleted);
  const auto& m = r.metrics;
  REQUIRE(m.size() >= 8);
  const double first = *m.front().metric, last = *m.back().metric;
  const double mid = *m[m.size() / 2].metric;
  CHECK(last > first + 1.0);                 // rises
  CHECK(std::fabs(last - mid) < 0.02);       // and is flat over the second half of the run
  for (size_t i = 1; i < m.size() / 4; ++i)  // the first quarter climbs steadily
    CHECK(*m[i].metric > *m[i - 1].metric - 0.01);
}
