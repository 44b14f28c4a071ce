// Issue 5: heterogeneity, stragglers, faults and the network. Hand-computed timelines use a
// time-only model with explicit iteration times and messages whose transfer times are exact.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "models/cost_arch.hpp"
#include "models/device_profile.hpp"
#include "sim/estimate/estimate.hpp"
#include "sim/policies/sync_policy.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim/worker/cluster_schedule.hpp"
#include "sim/worker/jitter.hpp"
#include "tests/sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;

namespace {

// One or more groups of workers with an explicit iteration time, no jitter, and a network whose
// transfers take no time (4-byte messages on terabit links, no latency): time is compute only.
nlohmann::json compute_only(const char* policy, std::vector<std::pair<int, double>> groups) {
  auto j = nlohmann::json::parse(R"({
    "name": "cluster", "model": { "type": "time-only", "parameters": 1, "flops_per_sample": 1 },
    "optimizer": { "batch_size": 1 }, "policy": { "type": "asp" },
    "cluster": { "workers": [], "network": { "latency_us": 0, "bandwidth_gbps": 1000000 },
                 "jitter": { "type": "none" } },
    "stop": { "virtual_time_s": 0.03 }, "eval": { "every_s": 100 } })");
  j["policy"]["type"] = policy;
  for (auto [count, ms] : groups)
    j["cluster"]["workers"].push_back({{"profile", "gtx1080ti"}, {"count", count}, {"iteration_ms", ms}});
  return j;
}

struct Moments {
  double mean = 0, variance = 0;
};
Moments moments(const JitterSampler& js, uint64_t seed, int n) {
  Rng rng(seed, Purpose::kJitter, 0);
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = js.sample_ns(1.0, rng);
    sum += x;
    sq += x * x;
  }
  const double m = sum / n;
  return {m, sq / n - m * m};
}

}  // namespace

TEST_CASE("every jitter sampler has the mean and variance its parameters promise") {
  const int n = 400000;
  for (const char* type : {"lognormal", "normal", "gamma", "exponential", "constant", "none"}) {
    JitterSpec spec;
    spec.type = *enum_from_name<JitterType>(type);
    spec.sigma = 0.3;
    spec.cv = 0.2;
    spec.shift = 0.25;
    spec.factor = 1.5;
    const JitterSampler js(spec, "/cluster/jitter");
    const Moments m = moments(js, 11, n);
    CAPTURE(type);
    const double sd = std::sqrt(js.variance_factor());
    CHECK(std::fabs(m.mean - js.mean_factor()) <= 5 * sd / std::sqrt(n) + 1e-12);
    CHECK(m.variance == doctest::Approx(js.variance_factor()).epsilon(0.03));
  }
  // The promised figures themselves, so that a wrong formula cannot pass both sides.
  JitterSpec g;
  g.type = JitterType::kGamma;
  g.cv = 0.5;
  CHECK(JitterSampler(g, "").variance_factor() == doctest::Approx(0.25));
  g.type = JitterType::kLognormal;
  g.sigma = 0.3;
  CHECK(JitterSampler(g, "").variance_factor() == doctest::Approx(std::exp(0.09) - 1));
  g.type = JitterType::kExponential;
  g.shift = 0.25;
  CHECK(JitterSampler(g, "").variance_factor() == doctest::Approx(0.5625));
}

TEST_CASE("a trace jitter replays its recorded times, absolute or relative to the modelled time") {
  const auto path = (std::filesystem::temp_directory_path() / "stalesim_trace_test.txt").string();
  {
    std::ofstream f(path);
    f << "# iteration times, ms\n2.0, 4.0\n6.0  # comment\n";
  }
  JitterSpec spec;
  spec.type = JitterType::kTrace;
  spec.path = path;
  const JitterSampler abs(spec, "/cluster/jitter");
  CHECK(abs.trace_ms() == std::vector<double>{2.0, 4.0, 6.0});
  Rng rng(3, Purpose::kJitter, 0);
  int seen[3] = {0, 0, 0};
  for (int i = 0; i < 3000; ++i) {
    const double ns = abs.sample_ns(123.0, rng);
    REQUIRE((ns == 2e6 || ns == 4e6 || ns == 6e6));
    ++seen[static_cast<int>(ns / 2e6) - 1];
  }
  for (int k : seen) CHECK(k > 900);
  spec.scale = TraceScale::kRelative;
  const JitterSampler rel(spec, "/cluster/jitter");
  const double ns = rel.sample_ns(10.0, rng);  // modelled 10 ns x (t / 4 ms)
  CHECK((ns == 5.0 || ns == 10.0 || ns == 15.0));
  CHECK(rel.variance_factor() == doctest::Approx((0.25 + 0 + 0.25) / 3.0));
  {
    std::ofstream f(path);
    f << "1.0\n2.0 -3\n";
  }
  CHECK_THROWS_WITH_AS(JitterSampler(spec, "/cluster/jitter"),
                       (std::string("/cluster/jitter/path: ") + path +
                        ":2: expected an iteration time in ms (a number > 0 and <= 1e+09), got \"-3\"")
                           .c_str(),
                       ScenarioError);
  std::filesystem::remove(path);
  CHECK_THROWS_AS(JitterSampler(spec, "/cluster/jitter"), ScenarioError);
}

TEST_CASE("a worker slowed 2x does half the iterations of its twin under ASP") {
  auto j = compute_only("asp", {{2, 1.0}});
  j["cluster"]["schedule"] = {{{"kind", "slow"}, {"workers", {1}}, {"at_s", 0}, {"factor", 2}}};
  j["stop"] = {{"virtual_time_s", 1.0}};
  const RunResult r = run(j);
  REQUIRE(r.status == RunStatus::kCompleted);
  CHECK(r.workers[0].iterations == 1000);
  CHECK(r.workers[1].iterations == 500);
}

TEST_CASE("schedule events happen at their times: slow and pause over an interval, exactly") {
  // One worker, 1 ms per iteration, nothing else takes time; 30 ms of virtual time.
  auto j = compute_only("asp", {{1, 1.0}});
  CHECK(run(j).workers[0].iterations == 30);
  // Paused over [10.5, 20.5) ms: iteration 11 stops halfway and ends at 21 ms; then 22..30.
  j["cluster"]["schedule"] = {{{"kind", "pause"}, {"group", 0}, {"at_s", 0.0105}, {"until_s", 0.0205}}};
  CHECK(run(j).workers[0].iterations == 20);
  // Slowed 2x over [10.5, 20.5) ms: iterations end at 11.5, 13.5, 15.5, 17.5, 19.5, then one that
  // takes 0.5 ms of work at half speed and the rest at full speed: 21.0; then 22..30.
  j["cluster"]["schedule"][0]["kind"] = "slow";
  CHECK(run(j).workers[0].iterations == 25);
  // Drift to 3x over [0, 30) ms, judged at each iteration's start.
  j["cluster"]["schedule"] = {
      {{"kind", "drift"}, {"workers", {0}}, {"at_s", 0}, {"until_s", 0.03}, {"factor", 3}}};
  const ClusterSchedule sched(scenario(j).cluster);
  CHECK(sched.compute_end(0, SimTime::from_ns(0), 1e6).ns() == 1'000'000);
  CHECK(sched.compute_end(0, SimTime::from_ns(15'000'000), 1e6).ns() == 15'000'000 + 2'000'000);
  CHECK(sched.compute_end(0, SimTime::from_ns(40'000'000), 1e6).ns() == 40'000'000 + 3'000'000);
}

TEST_CASE("BSP iteration time equals the slowest worker's compute plus communication") {
  // A 3 ms and a 1 ms worker; 1,000,000-byte messages: worker links 8 Gbit/s (1 ms), server link
  // 8000 Gbit/s (1 us each, queued), latency 100 us. After the slow worker's push is applied it
  // is granted first: its reply crosses both links at once (the server's 1 us within the worker
  // link's 1 ms) + 100 us; 3 ms compute; 100 us + 1 ms.
  auto j = nlohmann::json::parse(R"({
    "name": "bsp", "model": { "type": "time-only", "parameters": 250000, "flops_per_sample": 1 },
    "optimizer": { "batch_size": 1 }, "policy": { "type": "bsp" },
    "cluster": { "workers": [ { "profile": "gtx1060", "count": 1, "iteration_ms": 3 },
                              { "profile": "gtx1080ti", "count": 1, "iteration_ms": 1 } ],
                 "network": { "latency_us": 100, "bandwidth_gbps": 8, "server_bandwidth_gbps": 8000 },
                 "jitter": { "type": "none" } },
    "stop": { "max_updates": 4 }, "eval": { "every_s": 100 } })");
  const int64_t t4 = run(j).end_time.ns();
  j["stop"]["max_updates"] = 6;
  const int64_t t6 = run(j).end_time.ns();
  const int64_t comm = 2 * (100'000 + 1'000'000);
  CHECK(t6 - t4 == 3'000'000 + comm);
  // The fast worker's 1 ms never shows: making it faster changes nothing.
  j["cluster"]["workers"][1]["iteration_ms"] = 0.5;
  CHECK(run(j).end_time.ns() == t6);
}

TEST_CASE("transfers queued on the server link add up exactly, with shards and per-message overhead") {
  // The timeline of test_simulation's hand-computed BSP case (two gtx1080ti, 0.201 ms compute,
  // 1,000,000-byte messages, worker links 0.25 ms, server link 0.5 ms, latency 0.1 ms): the
  // server's link is the slower, so it sets each message's time (cut-through).
  auto j = testing::hand_bsp_json();
  j["cluster"]["network"]["message_overhead_us"] = 10;
  SUBCASE("one server, 10 us per message") {
    // Pulls [0.1, 0.61] and [0.61, 1.12]; arrive 0.71 and 1.22; pushes leave at 0.911 and 1.421,
    // first bytes at the server 1.011 and 1.521; applied 1.521 and (queued) 2.031.
    CHECK(run(j).end_time.ns() == 1'521'000);
    j["stop"]["max_updates"] = 2;
    CHECK(run(j).end_time.ns() == 2'031'000);
  }
  SUBCASE("two shards of 500,000 bytes, each 0.25 ms + 10 us on its own link") {
    j["cluster"]["servers"] = 2;
    // Pulls [0.1, 0.36] and [0.36, 0.62] on both shards; arrive 0.46 and 0.72; pushes leave at
    // 0.661 and 0.921, first bytes at the server 0.761 and 1.021; applied 1.021 and 1.281.
    CHECK(run(j).end_time.ns() == 1'021'000);
    j["stop"]["max_updates"] = 2;
    const RunResult r = run(j);
    CHECK(r.end_time.ns() == 1'281'000);
    CHECK(r.bytes_push == 2'000'000);
  }
  SUBCASE("no overhead and one server: the existing hand computation") {
    j["cluster"]["network"].erase("message_overhead_us");
    j["stop"]["max_updates"] = 2;
    CHECK(run(j).end_time.ns() == 2'001'000);
  }
}

TEST_CASE("the server's apply (server_apply_ns_per_parameter) adds to each push, one apply at a time") {
  // Issue 42 point 4: the hand case above, one server, no overhead: pulls [0.1, 0.6] and
  // [0.6, 1.1]; pushes leave at 0.901 and 1.401; the server's link holds each 0.5 ms, so the
  // pushes are whole at the server at 1.501 and 2.001.
  auto j = testing::hand_bsp_json();
  j["cluster"]["network"]["server_apply_ns_per_parameter"] = 1;
  const auto end_after = [&](int updates) {
    j["stop"]["max_updates"] = updates;
    return run(j).end_time.ns();
  };
  SUBCASE("1 ns per parameter: 0.25 ms per apply, shorter than the link's 0.5 ms: no queue") {
    CHECK(end_after(1) == 1'751'000);
    CHECK(end_after(2) == 2'251'000);
  }
  SUBCASE("4 ns per parameter: 1 ms per apply, longer than the link's: the second waits for the first") {
    j["cluster"]["network"]["server_apply_ns_per_parameter"] = 4;
    CHECK(end_after(1) == 2'501'000);
    CHECK(end_after(2) == 3'501'000);  // whole at 2.001, applied from 2.501
  }
  SUBCASE("two shards each apply their half, at once: half the time a push") {
    j["cluster"]["servers"] = 2;
    j["cluster"]["network"]["server_apply_ns_per_parameter"] = 0;
    const int64_t free1 = end_after(1), free2 = end_after(2);
    j["cluster"]["network"]["server_apply_ns_per_parameter"] = 4;
    CHECK(end_after(1) == free1 + 500'000);
    CHECK(end_after(2) >= free2 + 500'000);
  }
  SUBCASE("a negative cost is refused, naming the field and its range") {
    j["cluster"]["network"]["server_apply_ns_per_parameter"] = -1;
    std::string err;
    try {
      testing::scenario(j);
    } catch (const ScenarioError& e) {
      err = e.what();
    }
    CHECK(err ==
          "test.json: /cluster/network/server_apply_ns_per_parameter: expected a number in [0, 1000000], got "
          "-1");
  }
}

TEST_CASE("a server slower than its workers applies at most one push per apply time, as estimated") {
  // Six workers on fast links offer far more pushes than a 20 ms apply (100,000 parameters x
  // 200 ns) lets through: the run's updates are bounded by the time over the apply, and the
  // estimate names the apply as the bottleneck.
  auto j = testing::time_only_json(3, 3);
  j["policy"] = {{"type", "asp"}};
  j["model"]["parameters"] = 100000;
  j["cluster"]["network"]["bandwidth_gbps"] = 100;
  j["cluster"]["network"]["server_apply_ns_per_parameter"] = 200;
  j["stop"] = {{"virtual_time_s", 2}};
  const Scenario s = testing::scenario(j);
  const RunResult r = run_scenario(s);
  CHECK(r.server_updates <= 100);  // 2 s / 20 ms
  CHECK(r.server_updates >= 98);   // the first push arrives after a few ms
  const RunEstimate e = estimate_run(s);
  CHECK(e.bottleneck == "server apply");
  CHECK(e.apply_s == doctest::Approx(0.02));
  CHECK(e.describe().find("server apply 20 ms a push") != std::string::npos);
  CHECK(static_cast<double>(r.server_updates) == doctest::Approx(e.expected_updates).epsilon(0.05));
}

TEST_CASE("per-group links time each group's transfers with its own latency and bandwidth") {
  auto j = compute_only("asp", {{1, 1.0}, {1, 1.0}});
  j["cluster"]["workers"][1]["latency_us"] = 250;  // +2 x 0.25 ms per iteration
  j["stop"] = {{"virtual_time_s", 0.3}};
  const RunResult r = run(j);
  CHECK(r.workers[0].iterations == 300);
  // Pushes applied at 1.75 ms + k x 1.5 ms (0.25 request, 0.25 reply, 1 compute, 0.25 push).
  CHECK(r.workers[1].iterations == 199);
  CHECK(r.workers[1].communicate_ns >= 199 * 500'000);
}

TEST_CASE("a crash under BSP with drop finishes, and with wait resumes after the rejoin") {
  auto j = compute_only("bsp", {{3, 1.0}});
  j["stop"] = {{"virtual_time_s", 0.1}};
  const RunResult plain = run(j);
  REQUIRE(plain.status == RunStatus::kCompleted);
  CHECK(plain.workers[0].iterations == 100);
  SUBCASE("drop: the others go on without it") {
    j["cluster"]["on_crash"] = "drop";
    j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {2}}, {"at_s", 0.0105}}};
    const RunResult r = run(j);
    CHECK(r.status == RunStatus::kCompleted);
    CHECK(r.workers[2].iterations == 10);  // its 11th update was lost
    CHECK(r.workers[0].iterations == 100);
    CHECK(r.workers[1].iterations == 100);
    CHECK(r.max_clock_gap == 0);
  }
  SUBCASE("wait, never rejoining: a deadlock, reported as such") {
    j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {2}}, {"at_s", 0.0105}}};
    const RunResult r = run(j);
    CHECK(r.status == RunStatus::kDeadlock);
    CHECK(r.workers[0].iterations == 11);  // clock 11 pushed, then held
  }
  SUBCASE("wait, rejoining at 50 ms: everyone holds, then all resume") {
    j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {2}}, {"at_s", 0.0105}, {"until_s", 0.05}}};
    const RunResult r = run(j);
    CHECK(r.status == RunStatus::kCompleted);
    // Clocks 1..10 before the crash; worker 2 redoes clock 11 from 50 ms; then one per ms.
    CHECK(r.workers[2].iterations == 10 + 50);
    CHECK(r.workers[0].iterations == 11 + 49);
    CHECK(r.workers[0].wait_ns == 40'000'000);  // held from 11 ms to 51 ms
  }
  SUBCASE("SSP(2): the others run 2 clocks ahead, then wait or, with drop, go on") {
    j["policy"] = {{"type", "ssp"}, {"staleness", 2}};
    j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {2}}, {"at_s", 0.0105}}};
    const RunResult waited = run(j);
    CHECK(waited.status == RunStatus::kDeadlock);
    CHECK(waited.workers[0].iterations == 13);  // clocks 11 and 12 within the bound, 13 pushed
    j["cluster"]["on_crash"] = "drop";
    const RunResult dropped = run(j);
    CHECK(dropped.status == RunStatus::kCompleted);
    CHECK(dropped.workers[0].iterations == 100);
    CHECK(dropped.max_clock_gap <= 2);
  }
  SUBCASE(
      "softsync, a pull-mode policy like asp: the others never wait, the crashed one resumes at its rejoin") {
    j["policy"] = {{"type", "softsync"}, {"n", 1}};  // one update per 3 gradients
    j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {2}}, {"at_s", 0.0105}, {"until_s", 0.05}}};
    const RunResult r = run(j);
    CHECK(r.status == RunStatus::kCompleted);
    CHECK(r.workers[0].iterations == 100);
    CHECK(r.workers[1].iterations == 100);
    CHECK(r.workers[2].iterations == 10 + 50);  // its 11th update lost; one per ms from 50 ms
    CHECK(r.workers[0].wait_ns == 0);
  }
  SUBCASE("drop, rejoining: it comes back at the minimum clock") {
    j["cluster"]["on_crash"] = "drop";
    j["cluster"]["schedule"] = {{{"kind", "crash"},
                                 {"group", 0},
                                 {"workers", nlohmann::json::array()},
                                 {"at_s", 0.02},
                                 {"until_s", 0.0205}}};
    j["cluster"]["schedule"][0].erase("workers");
    j["cluster"]["schedule"].push_back(
        {{"kind", "crash"}, {"workers", {1}}, {"at_s", 0.0405}, {"until_s", 0.06}});
    const RunResult r = run(j);
    CHECK(r.status == RunStatus::kCompleted);
    CHECK(r.max_clock_gap == 0);
  }
}

TEST_CASE("scenario checks for the cluster's new fields name the path and what is allowed") {
  auto j = compute_only("bsp", {{3, 1.0}});
  j["cluster"]["schedule"] = {{{"kind", "slow"}, {"workers", {0}}, {"group", 0}, {"at_s", 0}}};
  CHECK_THROWS_WITH_AS(scenario(j),
                       "test.json: /cluster/schedule/0: give either workers (a list of worker ids) or group "
                       "(a group index), not both or neither",
                       ScenarioError);
  j["cluster"]["schedule"] = {{{"kind", "slow"}, {"workers", {3}}, {"at_s", 0}}};
  CHECK_THROWS_WITH_AS(scenario(j),
                       "test.json: /cluster/schedule/0/workers/0: expected a worker id in [0, 2], got 3",
                       ScenarioError);
  j["cluster"]["schedule"] = {{{"kind", "pause"}, {"workers", {1}}, {"at_s", 1}}};
  CHECK_THROWS_WITH_AS(scenario(j), "test.json: /cluster/schedule/0/until_s: required for a pause",
                       ScenarioError);
  j["cluster"]["schedule"] = {{{"kind", "slow"}, {"workers", {1}}, {"at_s", 1}, {"until_s", 0.5}}};
  CHECK_THROWS_WITH_AS(scenario(j),
                       "test.json: /cluster/schedule/0/until_s: expected a time after at_s (1), got 0.5",
                       ScenarioError);
  j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {1}}, {"at_s", 1}}};
  j["policy"] = {{"type", "ssp"}, {"cache", "lazy"}};
  CHECK_THROWS_WITH_AS(
      scenario(j),
      "test.json: /cluster/schedule: crash events are supported with the policies that fetch "
      "every clock (bsp, asp, ssp with pull-every-iteration, dssp, softsync), got ssp with a "
      "lazy cache",
      ScenarioError);
  j.erase("policy");
  j["cluster"].erase("schedule");
  j["cluster"]["workers"][0]["profile"] = "gtx1060";
  j["cluster"]["workers"][0]["precision"] = "fp16";
  CHECK_THROWS_WITH_AS(
      scenario(j),
      "test.json: /cluster/workers/0/precision: profile \"gtx1060\" has no fp16 peak; use \"fp32\"",
      ScenarioError);
}

TEST_CASE("new cluster fields round-trip through the resolved scenario") {
  auto j = compute_only("ssp", {{2, 1.0}, {1, 2.0}});
  j["cluster"]["servers"] = 3;
  j["cluster"]["on_crash"] = "drop";
  j["cluster"]["network"]["latency_sigma"] = 0.2;
  j["cluster"]["workers"][1]["jitter"] = {{"type", "gamma"}, {"cv", 0.3}};
  j["cluster"]["workers"][0]["bandwidth_gbps"] = 5;
  j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {1}}, {"at_s", 0.01}, {"until_s", 0.02}}};
  const Scenario s = scenario(j);
  CHECK(s.cluster.workers[1].jitter->type == JitterType::kGamma);
  CHECK(!s.cluster.workers[0].jitter);
  const Scenario again = parse_scenario(scenario_to_json(s), "again.json");
  CHECK(again == s);
  // Latency jitter and a per-group gamma jitter run, deterministically.
  const std::string h = hash_of(j);
  CHECK(h == hash_of(j));
}

TEST_CASE("fp16 uses the profile's Tensor Core peak, and AlexNet's figures match its layer shapes") {
  const auto a100 = find_profile("a100");
  REQUIRE(a100);
  CHECK(peak_tflops(*a100, Precision::kFp16) == 312.0);
  CHECK(peak_tflops(*a100, Precision::kBf16) == 312.0);
  CHECK(peak_tflops(*a100, Precision::kFp32) == 19.5);
  for (const char* name :
       {"p100", "v100", "t4", "a100", "h100", "h200", "cpu-core", "gtx1060", "gtx1080ti"}) {
    CAPTURE(name);
    const auto p = find_profile(name);
    REQUIRE(p);
    CHECK(!p->source.empty());
    CHECK(p->memory_bandwidth_gbs > 0);
  }
  const auto alex = find_cost_architecture("alexnet-cifar");
  REQUIRE(alex);
  // conv 5x5x3->32 on 32x32, conv 5x5x32->32 on 16x16, conv 5x5x32->64 on 8x8, fc 1024->10.
  CHECK(alex->parameters ==
        (5 * 5 * 3 * 32 + 32) + (5 * 5 * 32 * 32 + 32) + (5 * 5 * 32 * 64 + 64) + (1024 * 10 + 10));
  CHECK(alex->forward_flops == 2.0 * (32 * 32 * 32 * 75 + 16 * 16 * 32 * 800 + 8 * 8 * 64 * 800 + 10240));
  // An fp16 group computes faster than an fp32 one on the same device.
  auto j = time_only_json(0, 0);
  j["policy"] = {{"type", "asp"}};
  j["cluster"]["workers"] = {{{"profile", "a100"}, {"count", 1}},
                             {{"profile", "a100"}, {"count", 1}, {"precision", "fp16"}}};
  j["cluster"]["jitter"] = {{"type", "none"}};
  j["stop"] = {{"virtual_time_s", 0.1}};
  const RunResult r = run(j);
  CHECK(r.workers[1].iterations > r.workers[0].iterations);
}

TEST_CASE("the slowest worker is found in O(log n) and agrees with a scan, with drops and rejoins") {
  const int32_t n = 37;
  ClockTable t(n);
  Rng rng(9, Purpose::kSchedule, 0);
  std::vector<bool> down(n, false);
  auto scan = [&] {
    int32_t best = -1;
    for (int32_t w = 0; w < n; ++w)
      if (!down[static_cast<size_t>(w)] && (best < 0 || t.clock(w) < t.clock(best))) best = w;
    return best;
  };
  int live = n;
  for (int step = 0; step < 5000; ++step) {
    const auto w = static_cast<int32_t>(rng.below(n));
    if (down[static_cast<size_t>(w)]) {
      t.rejoin(w);
      down[static_cast<size_t>(w)] = false;
      ++live;
    } else if (live > 1 && rng.uniform() < 0.02) {
      t.drop(w);
      down[static_cast<size_t>(w)] = true;
      --live;
    } else {
      t.advance(w);
    }
    REQUIRE(t.slowest() == scan());
    REQUIRE(t.min_clock() == t.clock(scan()));
  }
}
