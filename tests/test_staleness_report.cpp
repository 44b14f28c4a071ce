// The staleness report (REFERENCE.md "Outputs"): summary.json's staleness_per_gradient block leads with
// the server updates a gradient missed, then the clock gap of the read it was computed from, each
// with mean, p50, p99 and max.

#include <doctest/doctest.h>

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

TEST_CASE("summary.json names the updates a gradient missed and the clock gap of its read") {
  using namespace stalesim::testing;
  auto j = tiny_math_json();
  j["policy"] = {{"type", "asp"}};  // ASP: reads are many clocks apart, gradients miss a few updates
  const auto s = scenario(j);
  const auto r = stalesim::run_scenario(s);
  const auto sum = stalesim::summary_json(s, r, "h");
  const auto& block = sum.at("staleness_per_gradient");
  const auto& missed = block.at("missed_updates");
  const auto& gap = block.at("read_clock_gap");
  CHECK(missed.at("mean") == r.step_staleness.mean());
  CHECK(missed.at("max") == r.step_staleness.max());
  CHECK(missed.at("p50") == r.step_staleness.percentile(0.5));
  CHECK(missed.at("p99") == r.step_staleness.percentile(0.99));
  CHECK(gap.at("mean") == r.clock_staleness.mean());
  CHECK(gap.at("max") == r.clock_staleness.max());
  CHECK(gap.at("p50") == r.clock_staleness.percentile(0.5));
  // The two measures are different things: with 4 ASP workers of two speeds a gradient misses at
  // most a few updates, while the fast workers' reads run many clocks ahead of the slowest.
  CHECK(missed.at("p50").get<int64_t>() <= missed.at("p99").get<int64_t>());
  CHECK(missed.at("p99").get<int64_t>() <= missed.at("max").get<int64_t>());
  CHECK(gap.at("max").get<int64_t>() > missed.at("max").get<int64_t>());
  // The older keys keep their meaning for sweeps and plots.
  CHECK(sum.at("staleness").at("mean") == gap.at("mean"));
  CHECK(sum.at("step_staleness").at("max") == missed.at("max"));
}
