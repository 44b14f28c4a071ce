#include <doctest/doctest.h>

#include <algorithm>

#include <Eigen/Core>
#include <cmath>
#include <sstream>

#include "sim/build_info.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "tests/sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;

TEST_CASE("BSP reads are never stale and workers never run ahead, over seeds and speed mixes") {
  for (uint64_t seed : {1, 2, 3, 4}) {
    for (auto [slow, fast] : {std::pair{1, 3}, std::pair{3, 1}, std::pair{2, 2}}) {
      auto j = time_only_json(slow, fast);
      j["seed"] = seed;
      j["policy"] = {{"type", "bsp"}};
      j["cluster"]["jitter"] = {{"type", "lognormal"}, {"sigma", 0.3}};
      const RunResult r = run(j);
      CAPTURE(seed);
      CHECK(r.status == RunStatus::kCompleted);
      CHECK(r.staleness.max() == 0);
      CHECK(r.max_clock_gap == 0);
      // Every worker did the same number of clocks, give or take the one in progress.
      int64_t lo = INT64_MAX, hi = 0;
      for (const auto& w : r.workers) lo = std::min(lo, w.iterations), hi = std::max(hi, w.iterations);
      CHECK(hi - lo <= 1);
    }
  }
}

TEST_CASE("SSP never lets a worker start more than s clocks ahead of the slowest, and reaches s") {
  for (int64_t s : {0, 1, 2, 5, 9}) {
    for (uint64_t seed : {1, 7, 13}) {
      for (auto [slow, fast] : {std::pair{1, 3}, std::pair{4, 4}, std::pair{3, 1}}) {
        auto j = time_only_json(slow, fast);
        j["seed"] = seed;
        j["policy"] = {{"type", "ssp"}, {"staleness", s}};
        j["cluster"]["jitter"] = {{"type", "lognormal"}, {"sigma", 0.5}};
        const RunResult r = run(j);
        CAPTURE(s);
        CAPTURE(seed);
        REQUIRE(r.status == RunStatus::kCompleted);
        CHECK(r.max_clock_gap <= s);
        CHECK(r.staleness.max() <= s);
        // A heterogeneous cluster with this much jitter uses all of its slack.
        if (slow != fast || seed == 1) CHECK(r.max_clock_gap == s);
      }
    }
  }
}

TEST_CASE("SSP with s = 0 gives exactly BSP's result") {
  auto ssp = tiny_math_json();
  ssp["policy"] = {{"type", "ssp"}, {"staleness", 0}};
  ssp["optimizer"]["aggregate"] = "mean";
  auto bsp = ssp;
  bsp["policy"] = {{"type", "bsp"}};
  const Scenario a = scenario(ssp), b = scenario(bsp);
  const RunResult ra = run_scenario(a), rb = run_scenario(b);
  CHECK(ra.metrics == rb.metrics);
  CHECK(ra.final_params == rb.final_params);
  CHECK(ra.workers == rb.workers);
  CHECK(render_outputs(a, ra).result_hash == render_outputs(b, rb).result_hash);
  CHECK(ra.server_updates == 400);
}

TEST_CASE("ASP workers never wait") {
  for (uint64_t seed : {1, 2, 3}) {
    auto j = time_only_json(2, 3);
    j["seed"] = seed;
    j["policy"] = {{"type", "asp"}};
    const RunResult r = run(j);
    for (const auto& w : r.workers) CHECK(w.wait_ns == 0);
    CHECK(r.max_clock_gap > 3);  // the fast workers do run ahead
  }
}

TEST_CASE("a run is deterministic and the seed matters") {
  const auto j = tiny_math_json();
  const Scenario s = scenario(j);
  const RunResult r1 = run_scenario(s), r2 = run_scenario(s);
  const OutputFiles f1 = render_outputs(s, r1), f2 = render_outputs(s, r2);
  CHECK(f1.text("summary.json") == f2.text("summary.json"));
  CHECK(f1.text("metrics.csv") == f2.text("metrics.csv"));
  CHECK(f1.text("staleness.csv") == f2.text("staleness.csv"));
  auto other = j;
  other["seed"] = 6;
  CHECK(hash_of(other) != f1.result_hash);
}

TEST_CASE("the result hash does not depend on Eigen's cache-size defaults of the host") {
  const auto j = tiny_math_json();
  pin_eigen_cache_sizes();
  const std::string pinned = hash_of(j);
  // A different machine's defaults would change GEMM blocking if the run did not pin them; the
  // run path pins them itself, so results match whatever the host set before.
  Eigen::setCpuCacheSizes(16 * 1024, 128 * 1024, 512 * 1024);
  pin_eigen_cache_sizes();
  CHECK(hash_of(j) == pinned);
}

TEST_CASE("training on blobs converges under every core policy") {
  for (const char* policy : {"bsp", "asp", "ssp"}) {
    auto j = tiny_math_json();
    j["policy"] = {{"type", policy}};
    j["stop"] = {{"max_updates", 1500}};
    const RunResult r = run(j);
    CAPTURE(policy);
    REQUIRE(!r.metrics.empty());
    CHECK(*r.metrics.back().test_accuracy > 0.85);
    CHECK(*r.metrics.back().test_loss < *r.metrics.front().test_loss);
  }
}

TEST_CASE("a BSP timeline with queueing on the server link matches a hand computation") {
  // Two identical workers (gtx1080ti: 11.34 TFLOP/s x 0.424 = 4808.16 FLOP/ns, 200 us overhead), no
  // jitter; 250,000 parameters = 1,000,000 bytes; worker links 32 Gbit/s (0.25 ms per message),
  // server link 16 Gbit/s (0.5 ms), latency 100 us. Batch 32 x 150,255 FLOPs = 1,000 ns.
  // A message crosses both links at once (cut-through): the slower, the server's, sets its time.
  // t=0.1 ms   both requests reach the server; replies on its link [0.1, 0.6] and (queued) [0.6, 1.1]
  // t=0.7/1.2  parameters arrive (0.6 + 0.1; 1.1 + 0.1); compute 0.201 ms each
  // t=0.901    worker 0 pushes; first byte at the server 1.001; applied 1.501; BSP holds it
  // t=1.401    worker 1 pushes; first byte at 1.501, when the link in is free; applied 2.001
  auto j = testing::hand_bsp_json();
  CHECK(run(j).end_time.ns() == 1'501'000);
  j["stop"]["max_updates"] = 2;
  const RunResult r = run(j);
  CHECK(r.end_time.ns() == 2'001'000);
  CHECK(r.workers[0].communicate_ns == 700'000 + 600'000);
  CHECK(r.workers[0].compute_ns == 201'000);
  CHECK(r.workers[0].wait_ns == 500'000);
  CHECK(r.workers[1].communicate_ns == 1'200'000 + 600'000);
  CHECK(r.workers[1].compute_ns == 201'000);
  CHECK(r.workers[1].wait_ns == 0);
  CHECK(r.bytes_push == 2'000'000);
  CHECK(r.bytes_pull == 2'000'000);
  // Then worker 1 (the pusher) is granted first: reply 2.001-2.501, arrives 2.601, pushes at
  // 2.802, first byte at the server 2.902, applied 3.402. Worker 0: reply 2.501-3.001, arrives
  // 3.101, pushes at 3.302, first byte at 3.402, applied 3.902.
  j["stop"]["max_updates"] = 4;
  CHECK(run(j).end_time.ns() == 3'902'000);
  // With worker links at 8 Gbit/s (1 ms) those links set each message's time instead: pulls
  // through at 1.1 and 1.6 (the second starts on the server's link at 0.6), pushes at 1.401 and
  // 1.901, applied 1 ms after their first byte: 2.501 and 3.001.
  j["cluster"]["network"]["bandwidth_gbps"] = 8;
  j["stop"]["max_updates"] = 2;
  CHECK(run(j).end_time.ns() == 3'001'000);
}

TEST_CASE("a time-only run with 1,000 workers and 100,000 updates completes") {
  auto j = time_only_json(500, 500);
  j["policy"] = {{"type", "ssp"}, {"staleness", 2}};
  j["stop"] = {{"max_updates", 100000}};
  const RunResult r = run(j);
  CHECK(r.status == RunStatus::kCompleted);
  CHECK(r.server_updates == 100000);
  CHECK(r.max_clock_gap <= 2);
  int64_t total = 0;
  for (const auto& w : r.workers) total += w.iterations;
  CHECK(total == 100000);
}

TEST_CASE("a diverging run ends with status diverged and keeps its results") {
  auto j = tiny_math_json();
  j["optimizer"]["lr"] = 1e30;
  const RunResult r = run(j);
  CHECK(r.status == RunStatus::kDiverged);
  CHECK(r.stop_reason == StopReason::kDiverged);
  REQUIRE(r.diverged_worker.has_value());
  REQUIRE(r.last_finite_loss.has_value());
  CHECK(std::isfinite(*r.last_finite_loss));
  CHECK(r.detail.find("training loss became") != std::string::npos);
  CHECK(!r.metrics.empty());
}

TEST_CASE("a target reached with at_target stops the run, and without it the time is recorded") {
  auto j = tiny_math_json();
  j["stop"] = {{"virtual_time_s", 5.0}, {"target_accuracy", 0.8}};
  const RunResult go_on = run(j);
  REQUIRE(go_on.time_to_target_s.has_value());
  CHECK(go_on.end_time.seconds() == doctest::Approx(5.0));
  j["stop"]["at_target"] = true;
  const RunResult stop = run(j);
  CHECK(stop.stop_reason == StopReason::kTargetAccuracy);
  CHECK(stop.end_time.seconds() == doctest::Approx(*go_on.time_to_target_s));
  CHECK(*stop.time_to_target_s == *go_on.time_to_target_s);
}

TEST_CASE("per-worker time adds up to the run's virtual time") {
  auto j = tiny_math_json();
  j["stop"] = {{"virtual_time_s", 0.5}};
  const RunResult r = run(j);
  CHECK(r.stop_reason == StopReason::kVirtualTime);
  for (const auto& w : r.workers) CHECK(w.compute_ns + w.wait_ns + w.communicate_ns == r.end_time.ns());
}

TEST_CASE("a batch larger than a worker's shard is refused with the field's path") {
  auto j = tiny_math_json();
  j["optimizer"]["batch_size"] = 151;  // 600 samples over 4 workers: shards of 150
  const Scenario s = scenario(j);
  const DataSplit d = load_data(s);
  CHECK_THROWS_WITH_AS(Simulation(s, d),
                       "/optimizer/batch_size: 151 is larger than worker 0's shard of 150 samples "
                       "(600 training samples over 4 workers)",
                       ScenarioError);
}

TEST_CASE("shared data lets a batch exceed a worker's shard, which the iid partition refuses") {
  auto j = tiny_math_json();
  j["cluster"]["workers"] = nlohmann::json::array({{{"profile", "gtx1080ti"}, {"count", 40}}});
  j["optimizer"]["batch_size"] = 16;  // 600 samples over 40 workers: shards of 15
  CHECK_THROWS_WITH(run(j), doctest::Contains("/optimizer/batch_size: 16 is larger than worker 0's shard"));
  j["data"]["partition"] = "shared";
  const RunResult r = run(j);
  CHECK(r.server_updates == 400);
}

namespace {

// summary.json without its peak_live_versions line: the one field where the deferred and the
// reference paths differ, since it counts the versions held.
std::string without_live_versions(const std::string& summary) {
  std::string out;
  std::istringstream in(summary);
  for (std::string line; std::getline(in, line);)
    if (line.find("\"peak_live_versions\"") == std::string::npos) out += line + "\n";
  return out;
}

// The tiny math scenario with 20 workers and 64 features: a deferred gradient (8 x (3 + 2 x 12)
// floats) is far smaller than the 819 parameters, so workers defer unless the policy says not.
nlohmann::json deferring_json() {
  auto j = tiny_math_json();
  j["data"]["blobs"]["features"] = 64;
  j["cluster"]["workers"] = {{{"profile", "gtx1060"}, {"count", 10}},
                             {{"profile", "gtx1080ti"}, {"count", 10}}};
  j["cluster"]["jitter"] = {{"type", "lognormal"}, {"sigma", 0.2}};
  j["policy"] = {{"type", "asp"}};
  return j;
}

}  // namespace

TEST_CASE("deferred gradients give the reference path's outputs and at most two live versions under ASP") {
  // The reference path holds the parameters each worker read until its push is applied; the
  // deferred path begins the gradient at the read and holds only its factors. Returns the peak
  // live versions of both, and checks whether the run deferred as the memory estimate says.
  const auto check_same = [](const nlohmann::json& j, bool defers) {
    const Scenario s = scenario(j);
    RunOptions reference;
    reference.defer_gradients = false;
    const RunResult deferred = run_scenario(s), held = run_scenario(s, reference);
    CHECK(deferred.status == held.status);
    CHECK(deferred.server_updates == held.server_updates);
    CHECK(deferred.final_params == held.final_params);
    const OutputFiles a = render_outputs(s, deferred), b = render_outputs(s, held);
    CHECK(a.result_hash == b.result_hash);
    CHECK(a.text("metrics.csv") == b.text("metrics.csv"));
    CHECK(a.text("staleness.csv") == b.text("staleness.csv"));
    CHECK(without_live_versions(a.text("summary.json")) == without_live_versions(b.text("summary.json")));
    CHECK_FALSE(held.deferred_gradients);
    CHECK(deferred.deferred_gradients == defers);
    CHECK(estimate_memory(s).deferred_gradients == defers);
    return std::pair{deferred.peak_live_versions, held.peak_live_versions};
  };
  auto j = deferring_json();
  const auto live = check_same(j, true);  // peak live versions: deferred, held
  CHECK(live.first <= 2);
  CHECK(live.second >= 20);  // every ASP worker holds a different version
  for (const char* policy : {"ssp", "dssp"}) {
    CAPTURE(policy);
    j["policy"] = {{"type", policy}, {"staleness", 1}};
    if (std::string(policy) == "dssp") j["policy"]["range"] = 3;
    check_same(j, true);
  }
  // Where all workers read the same version, one shared copy is smaller than 20 sets of factors.
  j["policy"] = {{"type", "bsp"}};
  check_same(j, false);
  j["policy"] = {{"type", "ssp"}, {"staleness", 0}};
  check_same(j, false);
  j["policy"] = {{"type", "softsync"}, {"n", 1}};  // one update per 20 pushes
  check_same(j, false);
  j["policy"] = {{"type", "softsync"}, {"n", 20}};  // one per push, as ASP
  check_same(j, true);
  j["policy"] = {{"type", "ssp"}, {"staleness", 2}};
  j["optimizer"]["rule"] = "sasgd";
  check_same(j, true);
  j["optimizer"]["rule"] = "fasgd";
  check_same(j, true);
  // A crash loses the begun gradient; the worker begins again on the batch it never pushed.
  j["optimizer"]["rule"] = "sgd";
  j["cluster"]["on_crash"] = "wait";
  j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {3, 11}}, {"at_s", 0.004}, {"until_s", 0.02}}};
  check_same(j, true);
  j["cluster"].erase("schedule");
  j["cluster"]["order"] = "uniform";
  check_same(j, true);
}

TEST_CASE("workers keep the parameters they read where a later step needs them, as the estimate says") {
  auto j = deferring_json();
  j["stop"]["max_updates"] = 60;
  const auto check_held = [](const nlohmann::json& k) {
    const Scenario s = scenario(k);
    const RunResult r = run_scenario(s);
    CHECK(r.status == RunStatus::kCompleted);
    CHECK_FALSE(r.deferred_gradients);
    CHECK_FALSE(estimate_memory(s).deferred_gradients);
  };
  for (const char* rule : {"dcasgd", "bfasgd"}) {  // DC-ASGD's backup; B-FASGD's skipped fetches
    CAPTURE(rule);
    auto k = j;
    k["optimizer"]["rule"] = rule;
    check_held(k);
  }
  auto k = j;  // the cache modes compute from the copy they keep
  k["policy"] = {{"type", "essp"}, {"staleness", 1}};
  check_held(k);
  k["policy"] = {{"type", "ssp"}, {"staleness", 1}, {"cache", "lazy"}};
  check_held(k);
  k["policy"] = {{"type", "vap"}, {"value_bound", 0.5}};  // VAP judges the gradient before it sends
  check_held(k);
  k = j;  // a batch of 40: 1,080 floats of factors outweigh the 819 parameters
  k["optimizer"]["batch_size"] = 40;
  k["data"]["blobs"]["train"] = 1200;  // 60 samples per worker
  check_held(k);
}

TEST_CASE("data.validation_samples evaluates on held-out training samples, never the test set") {
  auto j = tiny_math_json();
  j["data"]["validation_samples"] = 40;  // of 600 training samples; the test set has 150
  const RunResult r = run(j);
  REQUIRE(r.status == RunStatus::kCompleted);
  REQUIRE_FALSE(r.metrics.empty());
  for (const auto& m : r.metrics) {  // accuracies over 40 samples are multiples of 1/40
    REQUIRE(m.test_accuracy.has_value());
    CHECK(std::abs(*m.test_accuracy * 40 - std::round(*m.test_accuracy * 40)) < 1e-9);
  }
  CHECK(hash_of(j) != hash_of(tiny_math_json()));
  j["data"]["validation_samples"] = 600;
  CHECK_THROWS_WITH_AS(run(j), doctest::Contains("/data/validation_samples"), ScenarioError);
}
