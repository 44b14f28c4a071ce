// `stalesim compare` (sim/analysis/compare.hpp) on hand-made runs: the KS distance, quantiles, and the
// comparison's figures, errors and spread.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "sim/analysis/compare.hpp"
#include "sim/output/outputs.hpp"

using namespace stalesim;
using nlohmann::json;

namespace {

// Two workers ("fast" id 0, "slow" id 1) whose gradients land at the given times.
ComparedRun hand_run(const std::string& dir, std::vector<double> fast, std::vector<double> slow,
                     std::vector<int64_t> clock_hist, double clock_mean, double end_s) {
  ComparedRun r;
  r.dir = dir;
  r.end_s = end_s;
  r.summary = {{"staleness", {{"mean", clock_mean}}}, {"missed_updates", {{"mean", 0.0}}}};
  r.staleness_mean = clock_mean;
  const auto iters = [](const std::vector<double>& t) {
    std::vector<double> d;
    double from = 0;
    for (double x : t) d.push_back(x - from), from = x;
    return d;
  };
  r.workers.push_back({0, "fast", static_cast<int64_t>(fast.size()), 0.0, 0.0, iters(fast)});
  r.workers.push_back({1, "slow", static_cast<int64_t>(slow.size()), 0.5, 0.25, iters(slow)});
  r.gradient_times = fast;
  r.gradient_times.insert(r.gradient_times.end(), slow.begin(), slow.end());
  std::sort(r.gradient_times.begin(), r.gradient_times.end());
  r.staleness = std::move(clock_hist);
  r.missed_updates = r.staleness;
  r.metrics.push_back({end_s, static_cast<int64_t>(r.gradient_times.size()), 0.5, 1.0});
  return r;
}

}  // namespace

TEST_CASE("the KS distance is the largest gap between the two cumulative distributions") {
  CHECK(ks_distance({3, 1}, {3, 1}) == 0.0);
  CHECK(ks_distance({6, 2}, {3, 1}) == 0.0);  // same shape, other counts
  CHECK(ks_distance({1, 0}, {0, 1}) == 1.0);
  CHECK(ks_distance({2, 2}, {4, 0}) == doctest::Approx(0.5));
  CHECK(ks_distance({1}, {1, 0, 0}) == 0.0);  // trailing empty bins change nothing
  CHECK(ks_distance({1, 1, 2}, {0, 2, 2}) == doctest::Approx(0.25));
  CHECK(ks_distance({}, {1}) == 0.0);
}

TEST_CASE("quantiles follow the nearest-rank rule") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  CHECK(quantile(v, 0.5) == 50);
  CHECK(quantile(v, 0.99) == 99);
  CHECK(quantile(v, 1.0) == 100);
  CHECK(quantile({}, 0.5) == 0);
}

TEST_CASE("compare gives per-group and overall errors, and the spread of several B runs") {
  // A: the fast worker every 1 s, the slow one every 2 s, up to 4 s.
  const ComparedRun a = hand_run("a", {1, 2, 3, 4}, {2, 4}, {4, 2}, 0.5, 4);
  // B1 10% slower in both groups; B2 30% slower; B2 ends earlier (3.9 s).
  const ComparedRun b1 = hand_run("b1", {1.1, 2.2, 3.3}, {2.2}, {4, 2}, 0.5, 4);
  const ComparedRun b2 = hand_run("b2", {1.3, 2.6}, {2.6}, {0, 6}, 1.0, 3.9);
  const json c = compare_runs(a, {b1, b2});
  CHECK(c["equal_time_s"].get<double>() == doctest::Approx(3.9));
  // Per group: the fast group's mean iteration 1 s in A, 1.1 and 1.3 s in B.
  const json& fast = c["groups"]["fast"];
  CHECK(fast["a"]["iteration_time_mean_s"].get<double>() == doctest::Approx(1.0));
  CHECK(fast["b"]["iteration_time_mean_s"]["mean"].get<double>() == doctest::Approx(1.2));
  CHECK(fast["iteration_time_rel_error"]["mean"].get<double>() == doctest::Approx(0.2));
  CHECK(fast["iteration_time_rel_error"]["min"].get<double>() == doctest::Approx(0.1));
  CHECK(fast["iteration_time_rel_error"]["max"].get<double>() == doctest::Approx(0.3));
  CHECK(fast["iteration_time_rel_error"]["sd"].get<double>() == doctest::Approx(0.1414).epsilon(1e-3));
  CHECK(c["groups"]["slow"]["a"]["wait_fraction"].get<double>() == doctest::Approx(0.25));
  // Updates by t = 3.9: A has 3 + 1 = 4 (the fast at 1, 2, 3 and the slow at 2); B1 4, B2 3.
  CHECK(c["overall"]["a"]["updates"].get<double>() == 4);
  CHECK(c["updates_rel_error"].get<double>() == doctest::Approx((0.0 - 0.25) / 2));
  // Staleness: B1 has A's distribution, B2 has every gradient at gap 1 (A: 4 of 6 at gap 0).
  CHECK(c["staleness_ks"].get<double>() == doctest::Approx((0.0 + 4.0 / 6.0) / 2));
  CHECK(c["overall"]["spread"]["staleness_ks"]["max"].get<double>() == doctest::Approx(4.0 / 6.0));
  CHECK(c["staleness_mean_rel_error"].get<double>() == doctest::Approx((0.0 + 1.0) / 2));
  // No target in these runs: the error is null, not a number.
  CHECK(c["time_to_target_rel_error"].is_null());
  CHECK(c["workers_wait_s"]["1"]["a"].get<double>() == 0.5);
  // The table names the figures and shows the spread.
  const std::string table = compare_table(c);
  CHECK(table.find("| iteration time mean (s) | 1.333 |") != std::string::npos);
  CHECK(table.find("staleness KS distance") != std::string::npos);
  CHECK(table.find("| fast | 1 | 1 | 1.2 ± 0.14 | +20.0% (+10.0..+30.0) |") != std::string::npos);
}

TEST_CASE("compare refuses runs of clusters of different sizes") {
  ComparedRun a = hand_run("a", {1}, {2}, {1}, 0, 2);
  ComparedRun b = a;
  b.dir = "b";
  b.workers.pop_back();
  CHECK_THROWS_WITH_AS(compare_runs(a, {b}), "a has 2 workers and b has 1: compare runs of one cluster",
                       IoError);
}

TEST_CASE("a run folder that is not a run is refused with the file named") {
  const auto dir = std::filesystem::temp_directory_path() / "stalesim-compare-notrun";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CHECK_THROWS_AS(read_compared_run(dir.string()), IoError);
  std::ofstream(dir / "summary.json") << "{\"x\": 1}";
  CHECK_THROWS_WITH_AS(read_compared_run(dir.string()),
                       (dir.string() + "/summary.json: not a stalesim run's summary").c_str(), IoError);
  std::filesystem::remove_all(dir);
}
