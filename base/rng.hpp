#pragma once
// Our own random numbers (DESIGN.md section 2, rule 2): xoshiro256** seeded through SplitMix64,
// one stream per (root seed, purpose, entity), and distributions implemented here so that every
// standard library gives the same draws. Nothing here reads the clock or std::random_device.
//
// xoshiro256**: Blackman and Vigna, "Scrambled linear pseudorandom number generators",
// ACM TOMS 2021. SplitMix64: Steele, Lea and Flood, OOPSLA 2014.

#include <cmath>
#include <cstdint>
#include <span>
#include <utility>

namespace stalesim {

// One step of SplitMix64 on `state`, returning the mixed output.
constexpr uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// What a stream is used for. Values are part of the determinism contract: never renumber.
enum class Purpose : uint64_t {
  kInit = 1,        // parameter initialization
  kShard = 2,       // assignment of samples to workers
  kBatchOrder = 3,  // per-worker epoch shuffles
  kJitter = 4,      // per-worker compute-time jitter
  kData = 5,        // synthetic dataset generation
  kEvalSubset = 6,  // choice of evaluation samples
  kTransmit = 7,    // per-worker transmission decisions (B-FASGD)
  kNetwork = 8,     // per-link network jitter
  kSchedule = 9,    // cluster schedules (stragglers, faults)
  kOrder = 10,      // order-only mode's choice of worker
  kGibbs = 11,      // LDA's collapsed Gibbs draws, one stream per document
};

// Seed of the stream for (root, purpose, entity): adding an entity never changes another's draws.
constexpr uint64_t stream_seed(uint64_t root, Purpose purpose, uint64_t entity) {
  uint64_t s = root;
  uint64_t a = splitmix64(s);
  s = a ^ (static_cast<uint64_t>(purpose) * 0xd1b54a32d192ed03ULL);
  uint64_t b = splitmix64(s);
  s = b ^ (entity * 0x8cb92ba72f3d8dd7ULL + 0x632be59bd9b4e019ULL);
  return splitmix64(s);
}

// 128-bit product for Lemire's method (a GCC/Clang extension on every 64-bit target we build).
__extension__ using Uint128 = unsigned __int128;

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& w : s_) w = splitmix64(s);
  }
  Rng(uint64_t root, Purpose purpose, uint64_t entity) : Rng(stream_seed(root, purpose, entity)) {}

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform on [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer on [0, n), unbiased (Lemire, "Fast random integer generation in an
  // interval", ACM TOMACS 2019). REQUIRES: n > 0.
  uint64_t below(uint64_t n) {
    Uint128 m = static_cast<Uint128>(next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<Uint128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  bool bernoulli(double p) { return uniform() < p; }
  // Standard normal by Marsaglia's polar method; the spare value is kept for the next call.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }
  double normal(double mean, double stddev) { return mean + stddev * normal(); }
  // exp(N(mu, sigma)).
  double lognormal(double mu, double sigma) { return std::exp(normal(mu, sigma)); }
  // Exponential with the given mean.
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }
  // Gamma(shape k, scale theta) by Marsaglia and Tsang (ACM TOMS 2000); k < 1 by boosting.
  double gamma(double k, double theta) {
    if (k < 1.0) {
      const double u = uniform();
      return gamma(k + 1.0, theta) * std::pow(u == 0.0 ? 0x1.0p-53 : u, 1.0 / k);
    }
    const double d = k - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * theta;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * theta;
    }
  }
  // Fisher-Yates shuffle driven by below().
  template <class T>
  void shuffle(std::span<T> v) {
    for (size_t i = v.size(); i > 1; --i) {
      const size_t j = static_cast<size_t>(below(i));
      std::swap(v[i - 1], v[j]);
    }
  }

 private:
  static constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace stalesim
