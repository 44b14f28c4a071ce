// All-reduce instead of a parameter server (sim/policies/allreduce.hpp, sim/worker/allreduce.cpp):
// BSP's math bit for bit on a free network, the ring's analytic time, stragglers stalling the
// ring, the hierarchical form's lighter uplinks, and the refusals.

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "sim/real/real_run.hpp"
#include "sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;

namespace {

// No latency, the most bandwidth the loader takes: every transfer of this small model takes 0 ns.
nlohmann::json free_network(nlohmann::json j) {
  j["cluster"]["network"] = {{"latency_us", 0}, {"bandwidth_gbps", 1e6}, {"server_bandwidth_gbps", 1e6}};
  j["stop"] = {{"max_updates", 200}};  // 50 iterations of 4 workers
  return j;
}

RunResult with_policy(nlohmann::json j, const char* policy) {
  j["policy"] = {{"type", policy}};
  return run(j);
}

// 4 equal workers of `compute_ms` (worker 3 of `straggler_ms`), no jitter, a star of 10 Gbit/s
// links with 5 us latency, 1,000,000 parameters (4,000,000 bytes on the wire).
nlohmann::json ring_json(double compute_ms, double straggler_ms) {
  return nlohmann::json::parse(R"({
    "name": "ring", "seed": 1,
    "model": { "type": "time-only", "parameters": 1000000, "flops_per_sample": 1000000 },
    "optimizer": { "batch_size": 32 },
    "policy": { "type": "allreduce-ring" },
    "cluster": { "workers": [ { "profile": "v100", "count": 3, "iteration_ms": )" +
                               std::to_string(compute_ms) + R"( },
                             { "profile": "v100", "count": 1, "iteration_ms": )" +
                               std::to_string(straggler_ms) + R"( } ],
                 "network": { "latency_us": 5, "bandwidth_gbps": 10 }, "jitter": { "type": "none" } },
    "stop": { "max_updates": 40 },
    "eval": { "every_s": 1 } })");
}

// The bytes of the flows on the channels into and out of the spine (the racks' uplinks).
int64_t uplink_bytes(const std::string& links_csv) {
  std::istringstream in(links_csv);
  std::string line;
  std::getline(in, line);  // header: link,from,to,bandwidth_gbps,bytes,...
  int64_t total = 0;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string link, from, to, gbps, bytes;
    std::getline(row, link, ',');
    std::getline(row, from, ',');
    std::getline(row, to, ',');
    std::getline(row, gbps, ',');
    std::getline(row, bytes, ',');
    if (from == "spine" || to == "spine") total += std::stoll(bytes);
  }
  return total;
}

}  // namespace

TEST_CASE("ring all-reduce on a free network applies BSP's gradients in BSP's order, bit for bit") {
  SUBCASE("equal workers without jitter: every metrics row is BSP's") {
    nlohmann::json j = free_network(tiny_math_json());
    j["cluster"]["workers"] = {{{"profile", "gtx1080ti"}, {"count", 4}}};
    j["cluster"]["jitter"] = {{"type", "none"}};
    j["eval"]["every_s"] = 0.002;  // rows inside the run, each between two iterations or at one
    const RunResult bsp = with_policy(j, "bsp");
    const RunResult ring = with_policy(j, "allreduce-ring");
    REQUIRE(bsp.server_updates == 200);
    CHECK(ring.server_updates == bsp.server_updates);
    CHECK(ring.end_time == bsp.end_time);
    REQUIRE(ring.metrics.size() == bsp.metrics.size());
    REQUIRE(bsp.metrics.size() > 3);
    for (size_t i = 0; i < bsp.metrics.size(); ++i) {
      CAPTURE(i);
      CHECK(ring.metrics[i].time == bsp.metrics[i].time);
      CHECK(ring.metrics[i].server_version == bsp.metrics[i].server_version);
      CHECK(ring.metrics[i].train_loss == bsp.metrics[i].train_loss);
      CHECK(ring.metrics[i].test_loss == bsp.metrics[i].test_loss);
      CHECK(ring.metrics[i].test_accuracy == bsp.metrics[i].test_accuracy);
    }
    CHECK(ring.final_params == bsp.final_params);
  }
  SUBCASE("mixed devices with jitter: the same final parameters and last row") {
    const nlohmann::json j = free_network(tiny_math_json());
    const RunResult bsp = with_policy(j, "bsp");
    const RunResult ring = with_policy(j, "allreduce-ring");
    REQUIRE(!bsp.final_params.empty());
    CHECK(ring.final_params == bsp.final_params);
    CHECK(ring.end_time == bsp.end_time);
    CHECK(ring.metrics.back().test_loss == bsp.metrics.back().test_loss);
    CHECK(ring.staleness.max() == 0);
    // And not by accident: ASP applies other gradients.
    CHECK(with_policy(j, "asp").final_params != bsp.final_params);
  }
}

TEST_CASE("a ring iteration on a uniform star takes 2(N-1)/N S/B + 2(N-1) latency after the compute") {
  const RunResult r = run(ring_json(1, 1));
  const int64_t n = 4, s = 4000000, iterations = 10;
  REQUIRE(r.server_updates == n * iterations);
  // Each step: 5 us + S/N bytes over 10 Gbit/s (1,000,000 bytes: 800,000 ns, exact in ns).
  const int64_t step_ns = 5000 + s / n * 8 / 10;
  CHECK(r.end_time.ns() == iterations * (1000000 + 2 * (n - 1) * step_ns));
  // 2(N-1) chunks of S/N per worker and iteration: half reduce-scatter (push), half all-gather.
  CHECK(r.bytes_push == iterations * n * (n - 1) * (s / n));
  CHECK(r.bytes_pull == r.bytes_push);
  for (const auto& w : r.workers) CHECK(w.iterations == iterations);
}

TEST_CASE("one slow worker stalls every worker's ring iteration") {
  const RunResult fast = run(ring_json(1, 1));
  const RunResult slow = run(ring_json(1, 4));
  const int64_t ring_ns = fast.end_time.ns() / 10 - 1000000;
  // Every iteration waits for the straggler's 4 ms, then the ring: no worker gets ahead.
  CHECK(slow.end_time.ns() == 10 * (4000000 + ring_ns));
  for (const auto& w : slow.workers) {
    CAPTURE(w.id);
    CHECK(w.iterations == 10);
    // The fast workers spend the 3 ms each iteration stalled in the collective.
    if (w.id < 3) CHECK(w.communicate_ns >= 10 * (3000000 + ring_ns));
  }
}

TEST_CASE("hierarchical all-reduce moves fewer bytes over oversubscribed uplinks than the ring") {
  nlohmann::json j = ring_json(1, 1);
  j["cluster"]["workers"] = {{{"profile", "v100"}, {"count", 16}, {"iteration_ms", 1}}};
  j["cluster"]["network"] = {{"topology", "racks"},
                             {"bandwidth_gbps", 25},
                             {"latency_us", 2},
                             {"racks", {{"hosts_per_rack", 4}, {"uplink_bandwidth_gbps", 25}}}};
  j["stop"] = {{"max_updates", 160}};
  const RunResult ring = with_policy(j, "allreduce-ring");
  const RunResult hier = with_policy(j, "allreduce-hierarchical");
  REQUIRE(ring.server_updates == 160);
  REQUIRE(hier.server_updates == 160);
  const int64_t ring_up = uplink_bytes(ring.recording("links.csv")),
                hier_up = uplink_bytes(hier.recording("links.csv"));
  CAPTURE(ring_up);
  CAPTURE(hier_up);
  REQUIRE(ring_up > 0);
  CHECK(hier_up > 0);
  CHECK(hier_up < ring_up);
  // The server shard holds host 0, so the workers fill hosts 1 to 16 in 5 racks: the ring crosses
  // a rack boundary on 5 of its 16 hops (up one uplink, down another), 2 x 15 steps of S/16 per
  // iteration; the hierarchical ring of the 5 leaders crosses on all 5, 2 x 4 steps of S/5.
  const int64_t s = 4000000, iterations = 10;
  CHECK(ring_up == iterations * 30 * 5 * 2 * (s / 16));
  CHECK(hier_up == iterations * 8 * 5 * 2 * (s / 5));
}

TEST_CASE("all-reduce is refused where it makes no sense, naming the field") {
  const auto refused = [](nlohmann::json j, const char* path) {
    CAPTURE(j.dump());
    CHECK_THROWS_WITH_AS(scenario(j), doctest::Contains(path), ScenarioError);
  };
  const nlohmann::json base = ring_json(1, 1);
  SUBCASE("hierarchical needs racks") {
    nlohmann::json j = base;
    j["policy"]["type"] = "allreduce-hierarchical";
    refused(j,
            "/policy/type: \"allreduce-hierarchical\" reduces inside each rack and needs "
            "cluster.network.topology \"racks\"");
  }
  SUBCASE("a policy field of the parameter server's") {
    nlohmann::json j = base;
    j["policy"]["cache"] = "lazy";
    refused(j, "/policy/cache");
  }
  SUBCASE("uniform order") {
    nlohmann::json j = base;
    j["cluster"]["order"] = "uniform";
    refused(j, "/cluster/order");
  }
  SUBCASE("a crash") {
    nlohmann::json j = base;
    j["cluster"]["schedule"] = {{{"kind", "crash"}, {"at_s", 0.001}, {"workers", {1}}}};
    refused(j, "/cluster/schedule");
  }
  SUBCASE("a rule that gates transfers") {
    nlohmann::json j = tiny_math_json();
    j["policy"] = {{"type", "allreduce-ring"}};
    j["optimizer"]["rule"] = "bfasgd";
    refused(j, "/optimizer/rule");
  }
  SUBCASE("the real mode") {
    nlohmann::json j = tiny_math_json();
    j["policy"] = {{"type", "allreduce-ring"}};
    CHECK(real_refusal(scenario(j)).find("/policy/type: \"allreduce-ring\" has no server") == 0);
  }
}
