#pragma once
// Sweep files (REFERENCE.md "Sweep files"): a JSON document that says what `stalesim sweep` flags say,
// and more, so that a study is a file under version control:
//
//   {
//     "comment": "free text",
//     "scenario": "sweep-tiny.json",                 the base scenario, relative to this file
//     "set": {"stop.max_updates": 60},               fields of every point (as --set)
//     "grid": {"policy.type": ["ssp", "asp"],        cartesian product, first key slowest
//              "cluster.network.bandwidth_gbps": [1, 10]},
//     "zip": {"optimizer.lr": [0.1, 0.05],           advanced together, faster than the grid
//             "optimizer.batch_size": [10, 20]},
//     "seeds": [1, 2, 3],                            or "1..3"; fastest; default the scenario's
//     "derived": {"eval_every": {"path": "eval.every_s", "expr": "0.01 / cluster.network.bandwidth_gbps"},
//                 "global_batch": {"expr": "3 * optimizer.batch_size"}},
//     "constraints": ["policy.type != 'asp' || cluster.network.bandwidth_gbps > 1"],
//     "out": "results/my-sweep"                      default sweep folder (--out wins)
//   }
//
// Validated like a scenario: every problem names the file, the JSON path and what is allowed,
// unknown keys get a "did you mean", and nothing runs.

#include <string>

#include <nlohmann/json.hpp>

#include "sim/sweep/sweep.hpp"

namespace stalesim {

// Reads and validates a sweep file. The base scenario path is made relative to the current
// folder (as the file names it, relative to the sweep file's folder). `out` receives the file's
// "out" ("" when absent). Throws ScenarioError ("FILE: /grid/policy.stalenes: unknown scenario
// field; did you mean 'policy.staleness'?"). The base scenario itself is read by plan_sweep.
SweepSpec load_sweep_file(const std::string& path, std::string* out = nullptr);

// Whether `path` holds a sweep file rather than a scenario: its name ends in ".sweep.json", or
// it is a JSON object with a "scenario" key (a scenario never has one). False when unreadable.
bool is_sweep_file(const std::string& path);

// The sweep file format as JSON Schema 2020-12 (`stalesim schema --sweep`).
nlohmann::ordered_json sweep_file_schema();

}  // namespace stalesim
