// The LeNet-5-style CNN (models/cnn.hpp): sizes and cost, gradients against finite differences,
// determinism, training, evaluation, and make_model's and the scenario's validation.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "base/rng.hpp"
#include "models/cost_arch.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim_test_util.hpp"

namespace stalesim {
namespace {

ModelSpec cnn_spec(WeightInit init = WeightInit::kHe) {
  ModelSpec s;
  s.type = ModelType::kCnn;
  s.init = init;
  return s;
}

std::vector<float> init_params(Model& m, uint64_t seed) {
  std::vector<float> p(static_cast<size_t>(m.parameter_count()));
  Rng rng(seed, Purpose::kInit, 0);
  m.init(p, rng);
  return p;
}

// Blobs with `side` x `side` features, pixel-like values in [0, 1].
DataSplit image_blobs(int64_t side, int64_t train, uint64_t seed) {
  BlobsSpec spec;
  spec.classes = 10;
  spec.features = side * side;
  spec.train = train;
  spec.test = 300;
  spec.spread = 1.0;
  DataSplit d = make_blobs(spec, seed);
  for (auto* set : {&d.train, &d.test})
    for (float& v : set->x) v = 1.0f / (1.0f + std::exp(-v));  // squash into (0, 1)
  return d;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// An independent reference: the architecture of models/cnn.hpp written as plain loops in double
// from its documented parameter layout, one sample at a time (no im2col, no GEMM, no shared code
// with the model). Returns the mean cross-entropy over `batch`.
double reference_loss(const std::vector<double>& p, const Dataset& d, std::span<const int32_t> batch,
                      int64_t side, int64_t classes) {
  const int64_t h1 = side, p1 = side / 2, h2 = p1 - 4, p2 = h2 / 2, flat = 16 * p2 * p2;
  const int64_t w1 = 0, b1 = 150, w2 = 156, b2 = w2 + 2400, w3 = b2 + 16, b3 = w3 + 120 * flat, w4 = b3 + 120,
                b4 = w4 + 84 * 120, w5 = b4 + 84, b5 = w5 + classes * 84;
  auto pool = [](const std::vector<double>& a, int64_t channels, int64_t h) {
    std::vector<double> out(static_cast<size_t>(channels * (h / 2) * (h / 2)));
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = 0; y < h / 2; ++y)
        for (int64_t x = 0; x < h / 2; ++x) {
          double m = -INFINITY;
          for (int64_t dy = 0; dy < 2; ++dy)
            for (int64_t dx = 0; dx < 2; ++dx)
              m = std::max(m, a[static_cast<size_t>((c * h + 2 * y + dy) * h + 2 * x + dx)]);
          out[static_cast<size_t>((c * (h / 2) + y) * (h / 2) + x)] = m;
        }
    return out;
  };
  auto dense = [&p](const std::vector<double>& in, int64_t w, int64_t b, int64_t out, bool relu) {
    std::vector<double> z(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      double v = p[static_cast<size_t>(b + o)];
      for (size_t i = 0; i < in.size(); ++i)
        v += p[static_cast<size_t>(w + o + out * static_cast<int64_t>(i))] * in[i];
      z[static_cast<size_t>(o)] = relu ? std::max(v, 0.0) : v;
    }
    return z;
  };
  double total = 0.0;
  for (const int32_t s : batch) {
    const float* img = d.sample(s);
    std::vector<double> a1(static_cast<size_t>(6 * h1 * h1)), a2(static_cast<size_t>(16 * h2 * h2));
    for (int64_t c = 0; c < 6; ++c)
      for (int64_t y = 0; y < h1; ++y)
        for (int64_t x = 0; x < h1; ++x) {
          double v = p[static_cast<size_t>(b1 + c)];
          for (int64_t ky = 0; ky < 5; ++ky)
            for (int64_t kx = 0; kx < 5; ++kx) {
              const int64_t iy = y + ky - 2, ix = x + kx - 2;
              if (iy >= 0 && iy < side && ix >= 0 && ix < side)
                v += p[static_cast<size_t>(w1 + c + 6 * (ky * 5 + kx))] * img[iy * side + ix];
            }
          a1[static_cast<size_t>((c * h1 + y) * h1 + x)] = std::max(v, 0.0);
        }
    const std::vector<double> q1 = pool(a1, 6, h1);
    for (int64_t o = 0; o < 16; ++o)
      for (int64_t y = 0; y < h2; ++y)
        for (int64_t x = 0; x < h2; ++x) {
          double v = p[static_cast<size_t>(b2 + o)];
          for (int64_t c = 0; c < 6; ++c)
            for (int64_t ky = 0; ky < 5; ++ky)
              for (int64_t kx = 0; kx < 5; ++kx)
                v += p[static_cast<size_t>(w2 + o + 16 * (c * 25 + ky * 5 + kx))] *
                     q1[static_cast<size_t>((c * p1 + y + ky) * p1 + x + kx)];
          a2[static_cast<size_t>((o * h2 + y) * h2 + x)] = std::max(v, 0.0);
        }
    const std::vector<double> z =
        dense(dense(dense(pool(a2, 16, h2), w3, b3, 120, true), w4, b4, 84, true), w5, b5, classes, false);
    const double m = *std::max_element(z.begin(), z.end());
    double sum = 0.0;
    for (const double v : z) sum += std::exp(v - m);
    total += m + std::log(sum) - z[static_cast<size_t>(d.y[static_cast<size_t>(s)])];
  }
  return total / static_cast<double>(batch.size());
}

// The model's float32 loss must equal the reference's, and its gradient must match central
// differences of the reference (in double, steps 2h and h with h = 1e-6) on the listed
// coordinates. Differences of the model's own float32 loss do not work here: a convolution
// weight moves hundreds of pre-activations and pooling decisions, so at the steps float32 needs
// (1e-3) most quotients straddle a ReLU or max-pool kink. Quotients at 2h and h that disagree
// straddle a kink even at 1e-6 and are skipped (at most 5%).
void check_gradient(Model& model, const Dataset& data, std::span<const int32_t> batch,
                    const std::vector<size_t>& coords, int64_t side, uint64_t seed) {
  std::vector<float> p = init_params(model, seed);
  Rng jiggle(seed, Purpose::kInit, 1);
  for (float& v : p) v += static_cast<float>(0.05 * jiggle.normal());  // biases off zero too
  std::vector<float> grad(p.size());
  const double loss = model.loss_and_gradient(p, data, batch, grad);
  std::vector<double> pd(p.begin(), p.end());
  const auto classes = static_cast<int64_t>(data.classes);
  CHECK(loss == doctest::Approx(reference_loss(pd, data, batch, side, classes)).epsilon(1e-6));
  auto quotient = [&](size_t i, double h) {
    const double old = pd[i];
    pd[i] = old + h;
    const double lp = reference_loss(pd, data, batch, side, classes);
    pd[i] = old - h;
    const double lm = reference_loss(pd, data, batch, side, classes);
    pd[i] = old;
    return (lp - lm) / (2 * h);
  };
  size_t skipped = 0, mismatched = 0, nonzero = 0;
  double err2 = 0.0, ref2 = 0.0;
  for (const size_t i : coords) {
    const double fd = quotient(i, 2e-6), fd_half = quotient(i, 1e-6);
    if (std::abs(fd - fd_half) > 1e-3 * std::max(std::abs(fd), std::abs(fd_half)) + 1e-6) {
      ++skipped;
      continue;
    }
    const double g = grad[i];
    if (std::abs(g) > 1e-4) ++nonzero;
    err2 += (fd - g) * (fd - g);
    ref2 += g * g;
    if (std::abs(fd - g) > 1e-3 * std::max(std::abs(fd), std::abs(g)) + 1e-5) {
      ++mismatched;
      MESSAGE("coordinate ", i, ": gradient ", g, ", finite difference ", fd);
    }
  }
  CHECK(skipped <= coords.size() / 20);
  CHECK(mismatched == 0);
  CHECK(nonzero >= coords.size() / 4);  // the check must see real gradients, not zeros
  REQUIRE(ref2 > 0.0);
  CHECK(std::sqrt(err2 / ref2) < 1e-4);
}

}  // namespace

TEST_CASE("the cnn has LeNet-5's shape: 61706 parameters and 2.5 MFLOP per sample on 28x28 images") {
  auto m = make_model(cnn_spec(), 784, 10);
  CHECK(m->type() == "cnn");
  // conv1 6x25+6, conv2 16x150+16, dense 400x120+120, 120x84+84, 84x10+10.
  CHECK(m->parameter_count() == 156 + 2416 + 48120 + 10164 + 850);
  CHECK(m->wire_bytes() == 61706 * 4);
  // 6 FLOPs per multiply-add: conv1 6x25 weights at 28x28 positions, conv2 16x150 at 10x10,
  // then the dense weights once each.
  CHECK(m->flops_per_sample() == doctest::Approx(6.0 * (150.0 * 784 + 2400.0 * 100 + 48000 + 10080 + 840)));
  // The same figures as the "lenet5" cost architecture, counted independently from the paper.
  const auto lenet5 = find_cost_architecture("lenet5");
  REQUIRE(lenet5.has_value());
  CHECK(static_cast<double>(m->parameter_count()) == lenet5->parameters);
  CHECK(m->flops_per_sample() == doctest::Approx(lenet5->training_flops()));
  // A 12x12 image: conv2's output is 2x2, pooled to 1x1, so the first dense layer takes 16.
  auto small = make_model(cnn_spec(), 144, 3);
  CHECK(small->parameter_count() == 156 + 2416 + (16 * 120 + 120) + 10164 + (84 * 3 + 3));
}

TEST_CASE("make_model refuses a cnn for inputs that are not S x S images with S a multiple of 4") {
  for (int64_t features : {0L, 100L, 785L, 64L, 196L}) {
    CAPTURE(features);
    CHECK_THROWS_WITH_AS(make_model(cnn_spec(), features, 10),
                         doctest::Contains("cnn: takes square one-channel images"), std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(make_model(cnn_spec(), 784, 1), "model: cnn: classes must be >= 2, got 1",
                       std::invalid_argument);
  CHECK_NOTHROW(make_model(cnn_spec(), 256, 10));
}

TEST_CASE("cnn gradients match finite differences of an independent reference on 12x12 images") {
  const DataSplit d = image_blobs(12, 64, 11);
  auto m = make_model(cnn_spec(), 144, 10);
  std::vector<size_t> coords;
  for (size_t i = 0; i < 156; ++i) coords.push_back(i);        // every conv1 weight and bias
  for (size_t i = 156; i < 2572; i += 3) coords.push_back(i);  // a third of conv2's
  for (size_t i = 2572; i < static_cast<size_t>(m->parameter_count()); i += 17) coords.push_back(i);
  const std::vector<int32_t> batch{3, 17, 40};
  check_gradient(*m, d.train, batch, coords, 12, 5);
}

TEST_CASE("cnn gradients match finite differences of an independent reference on 28x28 images") {
  const DataSplit d = image_blobs(28, 32, 12);
  auto m = make_model(cnn_spec(WeightInit::kGlorot), 784, 10);
  std::vector<size_t> coords;
  for (size_t i = 0; i < 156; ++i) coords.push_back(i);  // conv1: padding and the first pooling
  for (size_t i = 156; i < static_cast<size_t>(m->parameter_count()); i += 401) coords.push_back(i);
  const std::vector<int32_t> batch{1, 9};
  check_gradient(*m, d.train, batch, coords, 28, 6);
}

TEST_CASE("cnn gradients match finite differences across convolution chunks: a batch of 8 + 8 + 3") {
  // The convolutions run 8 samples at a time and accumulate their weight gradients over the
  // chunks; 19 samples make two full chunks and a partial one.
  const DataSplit d = image_blobs(12, 64, 13);
  auto m = make_model(cnn_spec(), 144, 10);
  std::vector<size_t> coords;
  for (size_t i = 0; i < 156; ++i) coords.push_back(i);        // every conv1 weight and bias
  for (size_t i = 156; i < 2572; i += 5) coords.push_back(i);  // a fifth of conv2's
  for (size_t i = 2572; i < static_cast<size_t>(m->parameter_count()); i += 31) coords.push_back(i);
  std::vector<int32_t> batch(19);
  for (size_t j = 0; j < batch.size(); ++j) batch[j] = static_cast<int32_t>(3 * j + 1);
  check_gradient(*m, d.train, batch, coords, 12, 7);
}

TEST_CASE("cnn gradients are bit-identical across instances, scratch sizes and span addresses") {
  const DataSplit d = image_blobs(28, 200, 13);
  auto a = make_model(cnn_spec(), 784, 10);
  auto b = make_model(cnn_spec(), 784, 10);
  const std::vector<float> p = init_params(*a, 9);
  std::vector<int32_t> big(150), batch{4, 8, 15, 16, 23, 42, 99, 150};
  std::iota(big.begin(), big.end(), 0);
  std::vector<float> ga(p.size()), gb(p.size()), gc(p.size());
  const double la = a->loss_and_gradient(p, d.train, batch, ga);
  b->loss_and_gradient(p, d.train, big, gb);  // grows b's scratch first
  const double lb = b->loss_and_gradient(p, d.train, batch, gb);
  CHECK(la == lb);
  CHECK(same_bytes(ga, gb));
  // Parameters and gradient at an address one float off.
  std::vector<float> shifted(p.size() + 1), gshift(p.size() + 1);
  std::copy(p.begin(), p.end(), shifted.begin() + 1);
  a->loss_and_gradient(std::span<const float>(shifted).subspan(1), d.train, batch,
                       std::span<float>(gshift).subspan(1));
  std::copy(gshift.begin() + 1, gshift.end(), gc.begin());
  CHECK(same_bytes(ga, gc));
  // Another init seed gives other parameters.
  CHECK_FALSE(same_bytes(p, init_params(*a, 10)));
}

TEST_CASE("a few hundred SGD steps train the cnn on image-shaped blobs") {
  const DataSplit d = image_blobs(16, 1000, 14);
  auto m = make_model(cnn_spec(), 256, 10);
  std::vector<float> p = init_params(*m, 3);
  const Evaluation before = m->evaluate(p, d.test, {});
  std::vector<int32_t> all(static_cast<size_t>(d.train.size()));
  std::iota(all.begin(), all.end(), 0);
  BatchSampler sampler(all, 3, 0);
  std::vector<float> grad(p.size());
  for (int s = 0; s < 150; ++s) {
    m->loss_and_gradient(p, d.train, sampler.next(32), grad);
    for (size_t i = 0; i < p.size(); ++i) p[i] -= 0.05f * grad[i];
  }
  const Evaluation after = m->evaluate(p, d.test, {});
  CHECK(after.samples == 300);
  CHECK(after.loss < 0.5 * before.loss);
  CHECK(after.accuracy > 0.9);
}

TEST_CASE("cnn evaluation in chunks agrees with evaluation by index") {
  const DataSplit d = image_blobs(12, 50, 15);  // 300 test samples: two chunks of up to 256
  auto m = make_model(cnn_spec(), 144, 10);
  const std::vector<float> p = init_params(*m, 4);
  const Evaluation all = m->evaluate(p, d.test, {});
  std::vector<int32_t> idx(300);
  std::iota(idx.begin(), idx.end(), 0);
  const Evaluation by_index = m->evaluate(p, d.test, idx);
  CHECK(all.samples == 300);
  CHECK(all.loss == by_index.loss);
  CHECK(all.accuracy == by_index.accuracy);
  // The mean of two halves' losses is the whole's.
  const Evaluation h1 = m->evaluate(p, d.test, std::span<const int32_t>(idx).first(150));
  const Evaluation h2 = m->evaluate(p, d.test, std::span<const int32_t>(idx).last(150));
  // (GEMM blocking depends on the chunk's size, so the last bits may differ.)
  CHECK((h1.loss + h2.loss) / 2 == doctest::Approx(all.loss).epsilon(1e-6));
}

TEST_CASE("a cnn scenario runs deterministically, and refuses blobs that are not square images") {
  using stalesim::testing::hash_of;
  using stalesim::testing::scenario;
  nlohmann::json j = stalesim::testing::tiny_math_json();
  j["model"] = {{"type", "cnn"}};
  j["data"]["blobs"]["features"] = 144;
  j["stop"]["max_updates"] = 40;
  const std::string h = hash_of(j);
  CHECK(h == hash_of(j));
  j["data"]["blobs"]["features"] = 100;
  CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains("/data/blobs/features: the cnn takes S x S images"),
                       ScenarioError);
}

}  // namespace stalesim
