// Label-skewed sharding (models/partition.hpp) and data.partition in scenarios.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/rng.hpp"
#include "models/dataset.hpp"
#include "models/partition.hpp"
#include "sim_test_util.hpp"

namespace stalesim {
namespace {

// 10 labels, 1000 samples each, interleaved (sample i has label i mod 10).
std::vector<int32_t> balanced_labels() {
  std::vector<int32_t> y(10000);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int32_t>(i % 10);
  return y;
}

struct Skew {
  double top_share = 0.0;      // mean over workers of the share of the worker's most common label
  double labels_for_90 = 0.0;  // mean over workers of the fewest labels covering 90% of the shard
};

Skew measure(const std::vector<std::vector<int32_t>>& shards, const std::vector<int32_t>& y) {
  Skew k;
  for (const auto& s : shards) {
    std::vector<int64_t> h(10, 0);
    for (const int32_t i : s) ++h[static_cast<size_t>(y[static_cast<size_t>(i)])];
    std::sort(h.begin(), h.end(), std::greater<>());
    k.top_share += static_cast<double>(h[0]) / static_cast<double>(s.size());
    int64_t covered = 0;
    int n = 0;
    while (static_cast<double>(covered) < 0.9 * static_cast<double>(s.size()))
      covered += h[static_cast<size_t>(n++)];
    k.labels_for_90 += n;
  }
  k.top_share /= static_cast<double>(shards.size());
  k.labels_for_90 /= static_cast<double>(shards.size());
  return k;
}

}  // namespace

TEST_CASE("label-skew shards assign every sample exactly once, with the iid shard sizes") {
  const auto y = balanced_labels();
  for (const double alpha : {0.01, 0.5, 100.0}) {
    for (const int32_t workers : {1, 7, 20}) {
      CAPTURE(alpha);
      CAPTURE(workers);
      const auto shards = shard_label_skew(y, 10, workers, alpha, 42);
      const auto iid = shard_iid(static_cast<int64_t>(y.size()), workers, 42);
      REQUIRE(shards.size() == static_cast<size_t>(workers));
      std::vector<int> seen(y.size(), 0);
      for (size_t w = 0; w < shards.size(); ++w) {
        CHECK(shards[w].size() == iid[w].size());
        CHECK(std::is_sorted(shards[w].begin(), shards[w].end()));
        for (const int32_t i : shards[w]) ++seen[static_cast<size_t>(i)];
      }
      CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    }
  }
}

TEST_CASE("small alpha gives each worker few labels and large alpha gives close to iid shards") {
  const auto y = balanced_labels();
  const Skew tight = measure(shard_label_skew(y, 10, 20, 0.05, 1), y);
  const Skew mid = measure(shard_label_skew(y, 10, 20, 1.0, 1), y);
  const Skew loose = measure(shard_label_skew(y, 10, 20, 1000.0, 1), y);
  const Skew iid = measure(shard_iid(static_cast<int64_t>(y.size()), 20, 1), y);
  MESSAGE("top-label share: alpha 0.05 ", tight.top_share, ", 1 ", mid.top_share, ", 1000 ", loose.top_share,
          ", iid ", iid.top_share);
  MESSAGE("labels covering 90%: alpha 0.05 ", tight.labels_for_90, ", 1 ", mid.labels_for_90, ", 1000 ",
          loose.labels_for_90, ", iid ", iid.labels_for_90);
  // 20 workers over 10 labels: two workers per label on average, so labels that several workers
  // favour run out and the deal spills them onto others (alpha 0.05 measured 0.557 and 3.3).
  CHECK(tight.top_share > 0.5);
  CHECK(tight.labels_for_90 < 4.0);

  CHECK(mid.top_share < tight.top_share);
  CHECK(mid.labels_for_90 > tight.labels_for_90);
  CHECK(loose.top_share < 0.2);
  CHECK(loose.labels_for_90 >= 8.0);
  CHECK(iid.labels_for_90 >= 8.0);
}

TEST_CASE("label-skew shards are the same for a seed and differ across seeds") {
  const auto y = balanced_labels();
  CHECK(shard_label_skew(y, 10, 8, 0.3, 7) == shard_label_skew(y, 10, 8, 0.3, 7));
  CHECK(shard_label_skew(y, 10, 8, 0.3, 7) != shard_label_skew(y, 10, 8, 0.3, 8));
  CHECK(shard_label_skew(y, 10, 8, 0.3, 7) != shard_label_skew(y, 10, 8, 0.4, 7));
}

TEST_CASE("dirichlet draws sum to one, average 1 over k, and survive tiny alphas") {
  Rng rng(3, Purpose::kShard, 1);
  std::vector<double> q(5), mean(5, 0.0);
  for (int t = 0; t < 4000; ++t) {
    dirichlet(rng, 0.7, q);
    CHECK(std::accumulate(q.begin(), q.end(), 0.0) == doctest::Approx(1.0).epsilon(1e-12));
    for (size_t k = 0; k < q.size(); ++k) mean[k] += q[k] / 4000.0;
  }
  for (const double m : mean) CHECK(m == doctest::Approx(0.2).epsilon(0.1));
  for (int t = 0; t < 100; ++t) {
    dirichlet(rng, 1e-6, q);
    CHECK(std::isfinite(q[0]));
    CHECK(*std::max_element(q.begin(), q.end()) > 0.999);  // all mass on one category
  }
}

TEST_CASE("shard_label_skew rejects bad arguments") {
  const std::vector<int32_t> y{0, 1, 2};
  CHECK_THROWS_WITH_AS(shard_label_skew(y, 3, 0, 0.5, 1), "shard_label_skew: workers must be >= 1, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(shard_label_skew(y, 3, 2, 0.0, 1), doctest::Contains("alpha must be finite and > 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(shard_label_skew(y, 2, 2, 0.5, 1),
                       "shard_label_skew: label 2 of sample 2 is outside [0, 2)", std::invalid_argument);
}

TEST_CASE("data.partition label-skew changes the run, iid is the default, alpha needs label-skew") {
  using stalesim::testing::hash_of;
  using stalesim::testing::scenario;
  nlohmann::json j = stalesim::testing::tiny_math_json();
  const std::string base = hash_of(j);
  CHECK(scenario(j).data.partition == Partition::kIid);
  j["data"]["partition"] = "iid";
  CHECK(hash_of(j) == base);  // the explicit default is the old behaviour
  j["data"]["partition"] = "label-skew";
  j["data"]["alpha"] = 0.1;
  const std::string skew = hash_of(j);
  CHECK(skew != base);
  CHECK(hash_of(j) == skew);
  j["data"]["alpha"] = 0;
  CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains("/data/alpha"), ScenarioError);
  j["data"]["partition"] = "iid";
  j["data"]["alpha"] = 0.5;
  CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains("/data/alpha"), ScenarioError);
  j["data"].erase("alpha");
  j["data"]["partition"] = "by-label";
  CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains("/data/partition"), ScenarioError);
}

}  // namespace stalesim
