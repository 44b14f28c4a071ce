// The staleness report (REFERENCE.md "Outputs"): summary.json gives each gradient's missed updates
// and the staleness of the read it was computed from, each with mean, p50, p99 and max, under one
// name each (sim/output/names.hpp); folders written under the older names are still read.

#include <doctest/doctest.h>

#include "sim/output/names.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_result.hpp"
#include "tests/sim_test_util.hpp"

using stalesim::Histogram;

TEST_CASE("a histogram's percentiles follow the nearest-rank rule") {
  Histogram h;
  CHECK(h.percentile(0.5) == 0);  // empty
  // 100 values: 90 zeros, 9 fives, one 40.
  for (int i = 0; i < 90; ++i) h.add(0);
  for (int i = 0; i < 9; ++i) h.add(5);
  h.add(40);
  CHECK(h.percentile(0.5) == 0);
  CHECK(h.percentile(0.9) == 0);   // the 90th value is still a zero
  CHECK(h.percentile(0.91) == 5);  // the 91st is a five
  CHECK(h.percentile(0.99) == 5);  // the 99th is the last five
  CHECK(h.percentile(1.0) == 40);  // the max
  CHECK(h.max() == 40);
  Histogram one;
  one.add(7);
  CHECK(one.percentile(0.01) == 7);
  CHECK(one.percentile(0.99) == 7);
}

TEST_CASE("summary.json names the updates a gradient missed and the staleness of its read") {
  using namespace stalesim::testing;
  auto j = tiny_math_json();
  j["policy"] = {{"type", "asp"}};  // ASP: reads are many clocks apart, gradients miss a few updates
  const auto s = scenario(j);
  const auto r = stalesim::run_scenario(s);
  const auto sum = stalesim::summary_json(s, r, "h");
  const auto& missed = sum.at("missed_updates");
  const auto& gap = sum.at("staleness");
  CHECK(missed.at("mean") == r.missed_updates.mean());
  CHECK(missed.at("max") == r.missed_updates.max());
  CHECK(missed.at("p50") == r.missed_updates.percentile(0.5));
  CHECK(missed.at("p99") == r.missed_updates.percentile(0.99));
  CHECK(gap.at("mean") == r.staleness.mean());
  CHECK(gap.at("max") == r.staleness.max());
  CHECK(gap.at("p50") == r.staleness.percentile(0.5));
  // The two measures are different things: with 4 ASP workers of two speeds a gradient misses at
  // most a few updates, while the fast workers' reads run many clocks ahead of the slowest.
  CHECK(missed.at("p50").get<int64_t>() <= missed.at("p99").get<int64_t>());
  CHECK(missed.at("p99").get<int64_t>() <= missed.at("max").get<int64_t>());
  CHECK(gap.at("max").get<int64_t>() > missed.at("max").get<int64_t>());
  // One name each: none of the older keys is written.
  for (const char* old : {"staleness_per_gradient", "step_staleness", "read_clock_gap", "clock_staleness"}) {
    CAPTURE(old);
    CHECK(sum.dump().find(old) == std::string::npos);
  }
  const auto files = stalesim::render_outputs(s, r);
  CHECK(files.text("staleness.csv").rfind("value,staleness_gradients,missed_updates_gradients\n", 0) == 0);
}

TEST_CASE("a summary.json and CSV headers of the older names read under the current ones") {
  // The layout stalesim wrote before the rename (sim/output/names.hpp): staleness_per_gradient
  // with read_clock_gap, plus the short staleness and step_staleness blocks.
  const nlohmann::json hist = {{"mean", 1.5}, {"p50", 1}, {"p99", 3}, {"max", 3}};
  const nlohmann::json gap = {{"mean", 0.75}, {"p50", 1}, {"p99", 2}, {"max", 2}};
  const nlohmann::json old = {{"result_hash", "h"},
                              {"staleness_per_gradient", {{"missed_updates", hist}, {"read_clock_gap", gap}}},
                              {"staleness", {{"mean", 0.75}, {"max", 2}}},
                              {"step_staleness", {{"mean", 1.5}, {"max", 3}}}};
  CHECK(stalesim::has_old_summary_names(old));
  const auto now = stalesim::current_summary_names(old);
  CHECK(now == nlohmann::json{{"result_hash", "h"}, {"missed_updates", hist}, {"staleness", gap}});
  CHECK_FALSE(stalesim::has_old_summary_names(now));
  CHECK(stalesim::current_summary_names(now) == now);
  // The layout before staleness_per_gradient: only the short blocks.
  const auto older = stalesim::current_summary_names(
      {{"staleness", {{"mean", 0.5}, {"max", 1}}}, {"step_staleness", {{"mean", 2.0}, {"max", 4}}}});
  CHECK(older.at("missed_updates").at("max") == 4);
  CHECK_FALSE(older.contains("step_staleness"));

  CHECK(stalesim::current_csv_names("staleness.csv", "staleness,clock_gradients,step_gradients\n0,5,1\n") ==
        "value,staleness_gradients,missed_updates_gradients\n0,5,1\n");
  CHECK(stalesim::current_csv_names("gradients.csv",
                                    "virtual_time_s,worker,version_read,version_apply,tau,step\n") ==
        "virtual_time_s,worker,version_read,version_apply,missed_updates,step\n");
  CHECK(stalesim::current_csv_names("sweep.csv", "folder,staleness_mean,step_staleness_mean") ==
        "folder,staleness_mean,missed_updates_mean");
  // A current file, and an old name in another file's header, are left as they are.
  const std::string current = "value,staleness_gradients,missed_updates_gradients\n0,1,1\n";
  CHECK(stalesim::current_csv_names("staleness.csv", current) == current);
  CHECK(stalesim::current_csv_names("metrics.csv", "virtual_time_s,tau\n") == "virtual_time_s,tau\n");
}
