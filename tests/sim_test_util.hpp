#pragma once
// Helpers shared by simulation-level tests: build scenarios from JSON text and run them.

#include <string>

#include <nlohmann/json.hpp>

#include "sim/output/outputs.hpp"
#include "sim/scenario/load.hpp"
#include "sim/simulation.hpp"

namespace stalesim::testing {

// A small, fast math scenario: blobs data, an MLP, 4 heterogeneous workers, SSP(2).
inline nlohmann::json tiny_math_json() {
  return nlohmann::json::parse(R"({
    "name": "tiny", "seed": 5,
    "data": { "dataset": "blobs", "blobs": { "classes": 3, "features": 8, "train": 600, "test": 150, "spread": 1.0 } },
    "model": { "type": "mlp", "hidden": [12] },
    "optimizer": { "rule": "sgd", "lr": 0.05, "batch_size": 8 },
    "policy": { "type": "ssp", "staleness": 2 },
    "cluster": { "workers": [ { "profile": "gtx1060", "count": 2, "iteration_ms": 0.25 }, { "profile": "gtx1080ti", "count": 2 } ],
                 "network": { "latency_us": 50, "bandwidth_gbps": 10 } },
    "stop": { "max_updates": 400 },
    "eval": { "every_s": 0.01 } })");
}

// The hand-computed BSP case of test_simulation and test_cluster: two gtx1080ti, no jitter,
// 0.201 ms compute, 1,000,000-byte messages, worker links 0.25 ms, server link 0.5 ms, latency
// 0.1 ms, one update.
inline nlohmann::json hand_bsp_json() {
  return nlohmann::json::parse(R"({
    "name": "hand", "model": { "type": "time-only", "parameters": 250000, "flops_per_sample": 150255 },
    "optimizer": { "batch_size": 32 }, "policy": { "type": "bsp" },
    "cluster": { "workers": [ { "profile": "gtx1080ti", "count": 2 } ],
                 "network": { "latency_us": 100, "bandwidth_gbps": 32, "server_bandwidth_gbps": 16 },
                 "jitter": { "type": "none" } },
    "stop": { "max_updates": 1 }, "eval": { "every_s": 100 } })");
}

// A time-only scenario: no math, declared sizes; compute-bound (3.65 ms per iteration on a
// gtx1060, 1.53 ms on a gtx1080ti, 13 us per message on the server link).
inline nlohmann::json time_only_json(int workers_1060, int workers_1080ti) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "name": "timing", "seed": 1,
    "model": { "type": "time-only", "parameters": 10000, "flops_per_sample": 200000000 },
    "optimizer": { "batch_size": 32 },
    "policy": { "type": "ssp", "staleness": 3 },
    "cluster": { "workers": [], "network": { "latency_us": 20, "bandwidth_gbps": 25 } },
    "stop": { "max_updates": 5000 },
    "eval": { "every_s": 1 } })");
  if (workers_1060) j["cluster"]["workers"].push_back({{"profile", "gtx1060"}, {"count", workers_1060}});
  if (workers_1080ti)
    j["cluster"]["workers"].push_back({{"profile", "gtx1080ti"}, {"count", workers_1080ti}});
  return j;
}

inline Scenario scenario(const nlohmann::json& j) { return parse_scenario(j, "test.json", "test"); }

inline RunResult run(const nlohmann::json& j) { return run_scenario(scenario(j)); }

inline std::string hash_of(const nlohmann::json& j) {
  const Scenario s = scenario(j);
  return render_outputs(s, run_scenario(s)).result_hash;
}

}  // namespace stalesim::testing
