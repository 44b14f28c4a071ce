// Math models: sizes and layout, gradients against finite differences, training on blobs,
// evaluation, determinism, the time-only model and make_model's validation.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "base/rng.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"

namespace stalesim {
namespace {

ModelSpec mlp_spec(std::vector<int64_t> hidden, WeightInit init = WeightInit::kHe) {
  ModelSpec s;
  s.type = ModelType::kMlp;
  s.hidden = std::move(hidden);
  s.init = init;
  return s;
}

ModelSpec softmax_spec() {
  ModelSpec s;
  s.type = ModelType::kSoftmax;
  return s;
}

std::vector<float> init_params(Model& m, uint64_t seed) {
  std::vector<float> p(static_cast<size_t>(m.parameter_count()));
  Rng rng(seed, Purpose::kInit, 0);
  m.init(p, rng);
  return p;
}

DataSplit small_blobs(int32_t classes, int64_t features, int64_t train, double spread, uint64_t seed) {
  BlobsSpec spec;
  spec.classes = classes;
  spec.features = features;
  spec.train = train;
  spec.test = 500;
  spec.spread = spread;
  return make_blobs(spec, seed);
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Compares the model's gradient with central differences of its own (float32) loss on every
// coordinate. A difference quotient straddling a ReLU kink is meaningless, so coordinates whose
// quotients at steps 2h and h disagree are skipped (at most 5% may be); every other coordinate
// must match to 1% (plus a small absolute term for float32 rounding of the loss).
void check_gradient(Model& model, const Dataset& data, std::span<const int32_t> batch, uint64_t seed) {
  std::vector<float> p = init_params(model, seed);
  Rng jiggle(seed, Purpose::kInit, 1);
  for (float& v : p) v += static_cast<float>(0.1 * jiggle.normal());  // biases off zero too
  std::vector<float> grad(p.size()), scratch(p.size());
  model.loss_and_gradient(p, data, batch, grad);
  auto quotient = [&](size_t i, float h) {
    const float old = p[i];
    const float up = old + h, down = old - h;
    p[i] = up;
    const double lp = model.loss_and_gradient(p, data, batch, scratch);
    p[i] = down;
    const double lm = model.loss_and_gradient(p, data, batch, scratch);
    p[i] = old;
    return (lp - lm) / (static_cast<double>(up) - static_cast<double>(down));
  };
  size_t skipped = 0, mismatched = 0;
  double err2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double fd = quotient(i, 2e-3f), fd_half = quotient(i, 1e-3f);
    if (std::abs(fd - fd_half) > 1e-2 * std::max(std::abs(fd), std::abs(fd_half)) + 1e-3) {
      ++skipped;
      continue;
    }
    const double g = grad[i];
    err2 += (fd - g) * (fd - g);
    ref2 += g * g;
    if (std::abs(fd - g) > 1e-2 * std::max(std::abs(fd), std::abs(g)) + 5e-4) {
      ++mismatched;
      MESSAGE("coordinate ", i, ": gradient ", g, ", finite difference ", fd);
    }
  }
  CHECK(skipped <= p.size() / 20);
  CHECK(mismatched == 0);
  REQUIRE(ref2 > 0.0);
  CHECK(std::sqrt(err2 / ref2) < 1e-3);
}

// Plain SGD with a batch sampler over the whole training set; returns the final test evaluation.
Evaluation train_sgd(Model& model, std::vector<float>& p, const DataSplit& d, int steps, float lr) {
  std::vector<int32_t> all(static_cast<size_t>(d.train.size()));
  std::iota(all.begin(), all.end(), 0);
  BatchSampler sampler(all, 3, 0);
  std::vector<float> grad(p.size());
  for (int s = 0; s < steps; ++s) {
    model.loss_and_gradient(p, d.train, sampler.next(32), grad);
    for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * grad[i];
  }
  return model.evaluate(p, d.test, {});
}

}  // namespace

TEST_CASE("make_model reports sizes, FLOPs and types for each model") {
  const auto mlp = make_model(mlp_spec({200}), 784, 10);
  CHECK(mlp->type() == "mlp");
  CHECK(mlp->parameter_count() == 784 * 200 + 200 + 200 * 10 + 10);
  CHECK(mlp->flops_per_sample() == 6.0 * (784 * 200 + 200 * 10));
  CHECK(mlp->wire_bytes() == 4 * mlp->parameter_count());
  CHECK(mlp->has_math());
  const auto deep = make_model(mlp_spec({7, 5}), 6, 3);
  CHECK(deep->parameter_count() == (6 * 7 + 7) + (7 * 5 + 5) + (5 * 3 + 3));
  const auto sm = make_model(softmax_spec(), 784, 10);  // the default hidden {200} is ignored
  CHECK(sm->type() == "softmax");
  CHECK(sm->parameter_count() == 7850);
  CHECK(sm->flops_per_sample() == 6.0 * 7840);
}

TEST_CASE("make_model rejects unknown types and impossible shapes") {
  ModelSpec s;
  s.type = ModelType::kMf;  // built with its data by sim/workloads.hpp, not by make_model
  CHECK_THROWS_WITH_AS(
      make_model(s, 4, 2),
      "model: type 'mf' is not built here (allowed: softmax, mlp, cnn, time-only; mf, lda and "
      "lstsq: sim/workloads.hpp)",
      std::invalid_argument);
  CHECK_THROWS_AS(make_model(mlp_spec({}), 4, 2), std::invalid_argument);
  CHECK_THROWS_AS(make_model(mlp_spec({8, 0}), 4, 2), std::invalid_argument);
  CHECK_THROWS_AS(make_model(mlp_spec({-3}), 4, 2), std::invalid_argument);
  CHECK_THROWS_AS(make_model(mlp_spec({8}), 0, 2), std::invalid_argument);
  CHECK_THROWS_AS(make_model(mlp_spec({8}), 4, 1), std::invalid_argument);
  CHECK_THROWS_AS(make_model(mlp_spec({int64_t{1} << 40, int64_t{1} << 40}), 4, 2), std::invalid_argument);
  CHECK_THROWS_AS(make_model(softmax_spec(), 4, 0), std::invalid_argument);
  ModelSpec t;
  t.type = ModelType::kTimeOnly;
  t.parameters = 0;
  t.flops_per_sample = 1e9;
  CHECK_THROWS_AS(make_model(t, 0, 0), std::invalid_argument);
  t.parameters = 100;
  t.flops_per_sample = 0.0;
  CHECK_THROWS_AS(make_model(t, 0, 0), std::invalid_argument);
}

TEST_CASE("the time-only model declares its cost and refuses to do math") {
  ModelSpec s;
  s.type = ModelType::kTimeOnly;
  s.parameters = 25'557'032;  // ResNet-50
  s.flops_per_sample = 3 * 4.1e9;
  const auto m = make_model(s, 0, 0);
  CHECK(m->type() == "time-only");
  CHECK(m->parameter_count() == 25'557'032);
  CHECK(m->flops_per_sample() == 3 * 4.1e9);
  CHECK(m->wire_bytes() == 4 * int64_t{25'557'032});
  CHECK_FALSE(m->has_math());
  std::vector<float> p(4), g(4);
  Rng rng(1);
  Dataset d;
  const std::vector<int32_t> idx{0};
  CHECK_THROWS_AS(m->init(p, rng), std::logic_error);
  CHECK_THROWS_AS(m->loss_and_gradient(p, d, idx, g), std::logic_error);
  CHECK_THROWS_AS(m->evaluate(p, d, {}), std::logic_error);
}

TEST_CASE("softmax parameters are W (classes x features, column-major) then b") {
  const auto m = make_model(softmax_spec(), 2, 3);
  Dataset d;
  d.features = 2;
  d.classes = 3;
  d.x = {1.0f, 0.0f};
  d.y = {2};
  std::vector<float> p(9, 0.0f), g(9);
  p[2] = 5.0f;      // W(2, 0): column-major index 2 + 0 * 3
  p[6 + 1] = 3.0f;  // b(1)
  const std::vector<int32_t> idx{0};
  // logits = (0, 3, 5); loss = log(e^0 + e^3 + e^5) - 5
  const double expected = std::log(1.0 + std::exp(3.0) + std::exp(5.0)) - 5.0;
  CHECK(m->loss_and_gradient(p, d, idx, g) == doctest::Approx(expected).epsilon(1e-6));
  // dL/db = softmax - onehot; dL/dW(c, 0) = dL/db(c) * x_0, dL/dW(c, 1) = 0
  const double z = 1.0 + std::exp(3.0) + std::exp(5.0);
  CHECK(g[6] == doctest::Approx(1.0 / z).epsilon(1e-5));
  CHECK(g[8] == doctest::Approx(std::exp(5.0) / z - 1.0).epsilon(1e-5));
  CHECK(g[0] == doctest::Approx(g[6]).epsilon(1e-6));
  CHECK(g[3] == 0.0f);
}

TEST_CASE("mlp parameters are W_l (out x in, column-major) then b_l, layer by layer") {
  const auto m = make_model(mlp_spec({1}), 1, 2);
  Dataset d;
  d.features = 1;
  d.classes = 2;
  d.x = {2.0f};
  d.y = {0};
  // W1 = [1], b1 = [0.5], W2 = [0, 1]^T, b2 = [0.25, 0]: h = relu(2 + 0.5) = 2.5,
  // logits = (0.25, 2.5).
  std::vector<float> p{1.0f, 0.5f, 0.0f, 1.0f, 0.25f, 0.0f}, g(6);
  const std::vector<int32_t> idx{0};
  const double expected = std::log(std::exp(0.25) + std::exp(2.5)) - 0.25;
  CHECK(m->loss_and_gradient(p, d, idx, g) == doctest::Approx(expected).epsilon(1e-6));
  // A dead ReLU (b1 = -5) cuts the gradient to the first layer.
  p[1] = -5.0f;
  const double dead = std::log(std::exp(0.25) + std::exp(0.0)) - 0.25;
  CHECK(m->loss_and_gradient(p, d, idx, g) == doctest::Approx(dead).epsilon(1e-6));
  CHECK(g[0] == 0.0f);
  CHECK(g[1] == 0.0f);
}

TEST_CASE("softmax and mlp gradients match central finite differences") {
  const DataSplit d = small_blobs(3, 6, 64, 1.0, 5);
  std::vector<int32_t> batch{3, 17, 22, 40, 41, 58, 9, 11};
  SUBCASE("softmax") {
    const auto m = make_model(softmax_spec(), 6, 3);
    check_gradient(*m, d.train, batch, 1);
  }
  SUBCASE("mlp with hidden {7, 5}, he init") {
    const auto m = make_model(mlp_spec({7, 5}), 6, 3);
    check_gradient(*m, d.train, batch, 2);
  }
  SUBCASE("mlp with hidden {9}, glorot init, a repeated sample in the batch") {
    const auto m = make_model(mlp_spec({9}, WeightInit::kGlorot), 6, 3);
    batch.push_back(3);
    check_gradient(*m, d.train, batch, 3);
  }
}

TEST_CASE("a few hundred SGD steps on blobs drive the loss down and the accuracy up") {
  const DataSplit d = small_blobs(4, 16, 2000, 1.0, 9);
  SUBCASE("softmax") {
    const auto m = make_model(softmax_spec(), 16, 4);
    std::vector<float> p = init_params(*m, 4);
    const Evaluation before = m->evaluate(p, d.test, {});
    const Evaluation after = train_sgd(*m, p, d, 300, 0.2f);
    CHECK(after.samples == 500);
    CHECK(after.loss < 0.5 * before.loss);
    CHECK(after.accuracy > 0.9);
  }
  SUBCASE("mlp") {
    const auto m = make_model(mlp_spec({32, 16}), 16, 4);
    std::vector<float> p = init_params(*m, 4);
    const Evaluation before = m->evaluate(p, d.test, {});
    const Evaluation after = train_sgd(*m, p, d, 300, 0.1f);
    CHECK(after.loss < 0.5 * before.loss);
    CHECK(after.accuracy > 0.9);
  }
}

TEST_CASE("evaluate covers all samples in chunks and breaks arg-max ties to the lowest class") {
  const DataSplit d = small_blobs(4, 8, 2500, 1.0, 2);
  const auto m = make_model(mlp_spec({12}), 8, 4);
  // All-zero parameters: every logit ties, so every prediction is class 0 and loss is log 4.
  std::vector<float> zero(static_cast<size_t>(m->parameter_count()), 0.0f);
  const Evaluation e0 = m->evaluate(zero, d.train, {});
  CHECK(e0.samples == 2500);
  CHECK(e0.accuracy == doctest::Approx(0.25));  // round-robin labels: 625 of each class
  CHECK(e0.loss == doctest::Approx(std::log(4.0)));
  std::vector<int32_t> class0;
  for (int32_t i = 0; i < 2500; ++i) {
    if (d.train.y[static_cast<size_t>(i)] == 0) class0.push_back(i);
  }
  CHECK(m->evaluate(zero, d.train, class0).accuracy == 1.0);

  const std::vector<float> p = init_params(*m, 8);
  std::vector<int32_t> all(2500);
  std::iota(all.begin(), all.end(), 0);
  const Evaluation e_all = m->evaluate(p, d.train, {});
  const Evaluation e_idx = m->evaluate(p, d.train, all);
  CHECK(e_all.loss == e_idx.loss);
  CHECK(e_all.accuracy == e_idx.accuracy);
  std::vector<float> g(p.size());
  CHECK(m->loss_and_gradient(p, d.train, all, g) == doctest::Approx(e_all.loss).epsilon(1e-5));
  const std::vector<int32_t> some{5, 6, 7};
  CHECK(m->evaluate(p, d.train, some).samples == 3);
}

TEST_CASE("the same seed gives identical parameters and gradients, and another seed does not") {
  const DataSplit d = small_blobs(3, 10, 200, 1.0, 6);
  for (const WeightInit init : {WeightInit::kHe, WeightInit::kGlorot}) {
    const auto a = make_model(mlp_spec({16, 8}, init), 10, 3);
    const auto b = make_model(mlp_spec({16, 8}, init), 10, 3);
    const std::vector<float> pa = init_params(*a, 77), pb = init_params(*b, 77);
    CHECK(same_bytes(pa, pb));
    CHECK_FALSE(same_bytes(pa, init_params(*a, 78)));
    std::vector<int32_t> idx(32);
    std::iota(idx.begin(), idx.end(), 10);
    std::vector<float> ga(pa.size()), gb(pa.size());
    const double la = a->loss_and_gradient(pa, d.train, idx, ga);
    const double lb = b->loss_and_gradient(pb, d.train, idx, gb);
    CHECK(la == lb);
    CHECK(same_bytes(ga, gb));
    // Scratch reuse across other batch sizes and an evaluation leaves results unchanged.
    std::vector<float> other(pa.size());
    const std::vector<int32_t> small{1, 2, 3};
    a->loss_and_gradient(pa, d.train, small, other);
    a->evaluate(pa, d.train, {});
    const double again = a->loss_and_gradient(pa, d.train, idx, other);
    CHECK(again == la);
    CHECK(same_bytes(other, ga));
  }
}

TEST_CASE("a deferred gradient finishes to the same bits as loss_and_gradient, and holds far less") {
  const DataSplit d = small_blobs(3, 10, 200, 1.0, 6);
  for (const ModelSpec& spec : {mlp_spec({16, 8}), mlp_spec({12}), softmax_spec()}) {
    CAPTURE(spec.type);
    CAPTURE(spec.hidden.size());
    const auto m = make_model(spec, 10, 3);
    REQUIRE(m->can_defer_gradient());
    const std::vector<float> p = init_params(*m, 5), q = init_params(*m, 6);
    std::vector<int32_t> idx(32);
    std::iota(idx.begin(), idx.end(), 40);
    const std::vector<int32_t> other{7, 3, 3, 150};
    std::vector<float> want(p.size()), want_other(p.size()), got(p.size(), -1.0f);
    const double loss = m->loss_and_gradient(p, d.train, idx, want);
    const double loss_other = m->loss_and_gradient(q, d.train, other, want_other);
    // Two gradients begun on different parameters, with every scratch buffer reused in between.
    DeferredGradient a, b;
    CHECK(m->begin_gradient(p, d.train, idx, a) == loss);
    CHECK(m->begin_gradient(q, d.train, other, b) == loss_other);
    m->evaluate(q, d.train, {});
    CHECK(a.loss == loss);
    CHECK(a.batch == idx);
    CHECK(static_cast<int64_t>(a.factors.size()) == m->deferred_floats(32));
    // (classes + 2 x hidden) rows per sample: the last layer's delta, the hidden deltas and
    // activations.
    int64_t rows = 3;
    for (int64_t h : spec.hidden) rows += spec.type == ModelType::kMlp ? 2 * h : 0;
    CHECK(m->deferred_floats(32) == rows * 32);
    m->finish_gradient(a, d.train, got);
    CHECK(same_bytes(got, want));
    CHECK_FALSE(a.pending);
    m->finish_gradient(b, d.train, got);
    CHECK(same_bytes(got, want_other));
    // Finished once: a second finish has nothing to finish.
    CHECK_THROWS_AS(m->finish_gradient(b, d.train, got), std::logic_error);
  }
}

TEST_CASE("models that cannot defer their gradient say so and refuse to") {
  ModelSpec spec;
  spec.type = ModelType::kTimeOnly;
  spec.parameters = 10;
  spec.flops_per_sample = 1e6;
  const auto m = make_model(spec, 0, 0);
  CHECK_FALSE(m->can_defer_gradient());
  CHECK(m->deferred_floats(32) == 0);
  std::vector<float> p(10), g(10);
  const std::vector<int32_t> idx{0};
  DeferredGradient pending;
  CHECK_THROWS_AS(m->begin_gradient(p, Dataset{}, idx, pending), std::logic_error);
  CHECK_THROWS_AS(m->finish_gradient(pending, Dataset{}, g), std::logic_error);
}

TEST_CASE("the classifiers reject mismatched sizes, bad indices and bad labels") {
  const DataSplit d = small_blobs(3, 4, 20, 1.0, 1);
  const auto m = make_model(mlp_spec({5}), 4, 3);
  std::vector<float> p = init_params(*m, 1), g(p.size()), short_g(p.size() - 1);
  const std::vector<int32_t> ok{0, 1}, bad_index{0, 20}, empty;
  CHECK_THROWS_AS(m->loss_and_gradient(p, d.train, ok, short_g), std::invalid_argument);
  CHECK_THROWS_AS(m->loss_and_gradient(p, d.train, bad_index, g), std::out_of_range);
  CHECK_THROWS_AS(m->loss_and_gradient(p, d.train, empty, g), std::invalid_argument);
  std::vector<float> short_p(p.size() - 1);
  Rng rng(1);
  CHECK_THROWS_AS(m->init(short_p, rng), std::invalid_argument);
  const auto wide = make_model(mlp_spec({5}), 5, 3);
  CHECK_THROWS_AS(wide->evaluate(init_params(*wide, 1), d.train, {}), std::invalid_argument);
  Dataset bad_labels = d.train;
  bad_labels.y[1] = 3;
  CHECK_THROWS_AS(m->loss_and_gradient(p, bad_labels, ok, g), std::invalid_argument);
}

}  // namespace stalesim
