#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/rng.hpp"

using namespace stalesim;

TEST_CASE("xoshiro256** seeded through splitmix64 gives the reference sequence") {
  // Reference: splitmix64 from state 0 yields 0xe220a8397b1dcdaf first (Vigna's splitmix64.c).
  uint64_t s = 0;
  CHECK(splitmix64(s) == 0xe220a8397b1dcdafULL);
  // Same seed, same stream; the stream is pinned by a recorded value so that a change of the
  // generator (which would change every result hash) cannot pass unnoticed.
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) CHECK(a.next() == b.next());
  Rng c(42);
  CHECK(c.next() == 0x15780b2e0c2ec716ULL);
  CHECK(c.next() == 0x6104d9866d113a7eULL);
  CHECK(Rng(1, Purpose::kJitter, 3).next() == 0x2c6b5e2fcbf351aaULL);
  Rng n(7);
  CHECK(n.normal() == 0.96436185272551844);
  CHECK(n.below(1000) == 839);
  CHECK(Rng(42).next() != Rng(43).next());
}

TEST_CASE("streams differ by purpose and entity, and adding an entity changes no other stream") {
  CHECK(stream_seed(1, Purpose::kJitter, 0) != stream_seed(1, Purpose::kJitter, 1));
  CHECK(stream_seed(1, Purpose::kJitter, 0) != stream_seed(1, Purpose::kInit, 0));
  CHECK(stream_seed(1, Purpose::kJitter, 0) != stream_seed(2, Purpose::kJitter, 0));
  Rng w3(7, Purpose::kJitter, 3);
  Rng w3_again(7, Purpose::kJitter, 3);
  CHECK(w3.next() == w3_again.next());
}

TEST_CASE("uniform draws lie between 0 inclusive and 1 exclusive and have the right mean") {
  Rng r(1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = r.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  CHECK(sum / 100000 == doctest::Approx(0.5).epsilon(0.01));
}

TEST_CASE("below(n) is unbiased and stays below n") {
  Rng r(3);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) {
    const uint64_t k = r.below(7);
    REQUIRE(k < 7);
    ++counts[k];
  }
  for (int c : counts) CHECK(c == doctest::Approx(10000).epsilon(0.05));
}

TEST_CASE("normal, lognormal, exponential and gamma have their textbook moments") {
  Rng r(11);
  const int n = 200000;
  double s1 = 0, s2 = 0, ln = 0, ex = 0, ga = 0, ga2 = 0, gs = 0;
  for (int i = 0; i < n; ++i) {
    const double x = r.normal();
    s1 += x;
    s2 += x * x;
    ln += r.lognormal(-0.5 * 0.04, 0.2);  // mean 1
    ex += r.exponential(2.0);
    const double g = r.gamma(3.0, 2.0);  // mean 6, variance 12
    ga += g;
    ga2 += g * g;
    gs += r.gamma(0.5, 1.0);  // mean 0.5
  }
  CHECK(s1 / n == doctest::Approx(0.0).epsilon(0.01));
  CHECK(s2 / n == doctest::Approx(1.0).epsilon(0.02));
  CHECK(ln / n == doctest::Approx(1.0).epsilon(0.01));
  CHECK(ex / n == doctest::Approx(2.0).epsilon(0.02));
  CHECK(ga / n == doctest::Approx(6.0).epsilon(0.02));
  CHECK(ga2 / n - (ga / n) * (ga / n) == doctest::Approx(12.0).epsilon(0.05));
  CHECK(gs / n == doctest::Approx(0.5).epsilon(0.03));
}

TEST_CASE("shuffle is a deterministic permutation") {
  std::vector<int> a(100), b(100);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 0);
  Rng r1(5), r2(5);
  r1.shuffle(std::span<int>(a));
  r2.shuffle(std::span<int>(b));
  CHECK(a == b);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
  int fixed = 0;
  for (int i = 0; i < 100; ++i) fixed += a[static_cast<size_t>(i)] == i;
  CHECK(fixed < 10);
}
