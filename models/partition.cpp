// Label-skewed sharding (models/partition.hpp).

#include "models/partition.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/rng.hpp"

namespace stalesim {

void dirichlet(Rng& rng, double alpha, std::span<double> out) {
  if (out.empty()) return;
  // log of Gamma(alpha, 1) draws. For alpha < 1, Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha)
  // (Marsaglia and Tsang's boost, as Rng::gamma does), kept in logs: U^(1/alpha) underflows to 0
  // for small alpha.
  double top = -INFINITY;
  for (double& v : out) {
    if (alpha < 1.0) {
      const double u = rng.uniform();
      v = std::log(rng.gamma(alpha + 1.0, 1.0)) + std::log(u == 0.0 ? 0x1.0p-53 : u) / alpha;
    } else {
      v = std::log(rng.gamma(alpha, 1.0));
    }
    top = std::max(top, v);
  }
  double sum = 0.0;
  for (double& v : out) {
    v = std::exp(v - top);  // the largest is 1: no underflow of the sum
    sum += v;
  }
  for (double& v : out) v /= sum;
}

std::vector<std::vector<int32_t>> shard_label_skew(std::span<const int32_t> labels, int32_t classes,
                                                   int32_t workers, double alpha, uint64_t seed) {
  if (workers < 1)
    throw std::invalid_argument("shard_label_skew: workers must be >= 1, got " + std::to_string(workers));
  if (classes < 1)
    throw std::invalid_argument("shard_label_skew: classes must be >= 1, got " + std::to_string(classes));
  if (!(alpha > 0.0) || !std::isfinite(alpha))
    throw std::invalid_argument("shard_label_skew: alpha must be finite and > 0, got " +
                                std::to_string(alpha));
  const auto n = static_cast<int64_t>(labels.size());
  if (n >= (int64_t{1} << 31)) throw std::invalid_argument("shard_label_skew: more than 2^31 - 1 samples");

  Rng rng(seed, Purpose::kShard, 1);
  // Each label's samples, in a seeded shuffled order.
  std::vector<std::vector<int32_t>> pool(static_cast<size_t>(classes));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t y = labels[static_cast<size_t>(i)];
    if (y < 0 || y >= classes)
      throw std::invalid_argument("shard_label_skew: label " + std::to_string(y) + " of sample " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
    pool[static_cast<size_t>(y)].push_back(static_cast<int32_t>(i));
  }
  for (auto& p : pool) rng.shuffle(std::span<int32_t>(p));
  std::vector<size_t> next(static_cast<size_t>(classes), 0);

  // Label mixes, worker by worker.
  std::vector<double> mix(static_cast<size_t>(workers) * static_cast<size_t>(classes));
  for (int32_t w = 0; w < workers; ++w)
    dirichlet(rng, alpha,
              std::span<double>(mix).subspan(static_cast<size_t>(w) * static_cast<size_t>(classes),
                                             static_cast<size_t>(classes)));

  // Sizes as shard_iid gives them.
  std::vector<std::vector<int32_t>> shards(static_cast<size_t>(workers));
  std::vector<int64_t> size(static_cast<size_t>(workers));
  for (int32_t w = 0; w < workers; ++w) {
    size[static_cast<size_t>(w)] = n / workers + (w < n % workers ? 1 : 0);
    shards[static_cast<size_t>(w)].reserve(static_cast<size_t>(size[static_cast<size_t>(w)]));
  }
  // Round-robin deal.
  for (int64_t dealt = 0; dealt < n;) {
    for (int32_t w = 0; w < workers && dealt < n; ++w) {
      auto& shard = shards[static_cast<size_t>(w)];
      if (static_cast<int64_t>(shard.size()) >= size[static_cast<size_t>(w)]) continue;
      const double* q = mix.data() + static_cast<size_t>(w) * static_cast<size_t>(classes);
      double mass = 0.0;
      for (int32_t k = 0; k < classes; ++k)
        if (next[static_cast<size_t>(k)] < pool[static_cast<size_t>(k)].size()) mass += q[k];
      int32_t pick = -1;
      if (mass > 0.0) {
        const double u = rng.uniform() * mass;
        double acc = 0.0;
        for (int32_t k = 0; k < classes; ++k) {
          if (next[static_cast<size_t>(k)] >= pool[static_cast<size_t>(k)].size()) continue;
          acc += q[k];
          pick = k;  // the last label with samples left catches rounding at the top
          if (u < acc) break;
        }
      } else {  // this worker's mix has no mass on the labels left: uniform over them
        int64_t left = 0;
        for (int32_t k = 0; k < classes; ++k)
          if (next[static_cast<size_t>(k)] < pool[static_cast<size_t>(k)].size()) ++left;
        auto r = static_cast<int64_t>(rng.below(static_cast<uint64_t>(left)));
        for (int32_t k = 0; k < classes; ++k) {
          if (next[static_cast<size_t>(k)] >= pool[static_cast<size_t>(k)].size()) continue;
          if (r-- == 0) {
            pick = k;
            break;
          }
        }
      }
      auto& from = next[static_cast<size_t>(pick)];
      shard.push_back(pool[static_cast<size_t>(pick)][from++]);
      ++dealt;
    }
  }
  for (auto& s : shards) std::sort(s.begin(), s.end());
  return shards;
}

}  // namespace stalesim
