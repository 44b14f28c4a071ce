#pragma once
// How much memory a scenario needs, estimated before anything is allocated, and how much the
// machine has (issue 10). `stalesim run` refuses (exit 2) a scenario whose estimate exceeds the
// limit, printing the estimate, instead of being killed half-way by the kernel's OOM killer;
// `stalesim sweep` checks every point before running any (check_sweep_memory, sim/sweep/sweep.hpp).
//
// The estimate is a deliberate upper bound of the large items (parameter-sized vectors and the
// dataset); bookkeeping below a few KiB per worker is counted as a flat 4 KiB each:
// - dataset: the loaded samples as float32 plus labels (Fashion-MNIST: all 70,000, since
//   data.train_samples truncates after loading), plus the raw bytes held while reading;
// - snapshots: parameter versions alive at once: one per worker plus the server's current one
//   (DESIGN.md section 1), doubled in the cache modes (lazy SSP, ESSP) where a worker holds its
//   cache and a version in flight; two in all where workers defer their gradients
//   (RunPlan::defers_gradients, sim/plan/run_plan.hpp), since a worker then lets its version go
//   once it has begun;
// - workers' state: in the cache modes and VAP one gradient in flight per worker (pull mode
//   computes it at apply time into the server's scratch; deferred: the batch indices, layer deltas
//   and hidden activations, (classes + 2 x hidden) x batch floats); the cache modes add a local copy
//   and up to staleness + 1 own pushes; VAP an in-transit sum and a held update; B-FASGD the last
//   gradient;
// - server: the update buffer, softsync's sum, momentum, FASGD's three moving averages, DC-ASGD's
//   moving average and one backup copy per worker;
// - gradients: the server's scratch gradient; batch indices (4 bytes per training sample).
// - the process: 8 MiB (binary, libraries, allocator), measured;
// - the model's own per-sample state (lda: each token's topic), from models/model.hpp model_size,
//   the same account of the model's size the run's model gives (tests/test_estimate.cpp).
// The time-only model has no parameter values: only bookkeeping counts.

#include <cstdint>
#include <optional>
#include <string>

#include "sim/plan/run_plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

struct MemoryEstimate {
  double parameters = 0;            // float32 parameters of the math model (0 for time-only)
  bool deferred_gradients = false;  // whether the run will defer its workers' gradients
  double dataset_bytes = 0;
  double snapshot_bytes = 0;
  double worker_bytes = 0;
  double server_bytes = 0;
  double gradient_bytes = 0;
  double process_bytes = 0;  // the binary, its libraries and the allocator: a measured constant
  double total() const {
    return process_bytes + dataset_bytes + snapshot_bytes + worker_bytes + server_bytes + gradient_bytes;
  }
  // "1.23 GiB (dataset 210 MiB, snapshots 800 MiB, workers' state ..., server ..., gradients ...;
  // 1,234,567 parameters x 4 bytes)".
  std::string describe() const;
};

// `plan`: plan_run(s) (sim/plan/run_plan.hpp), the plan the run follows.
MemoryEstimate estimate_memory(const Scenario& s, const RunPlan& plan);
MemoryEstimate estimate_memory(const Scenario& s);  // with plan_run(s)

// Bytes with binary units: "512 B", "3.4 KiB", "1.21 GiB".
std::string format_bytes(double bytes);

// The memory a run may use, and where that figure comes from.
struct MemoryLimit {
  double bytes = 0;
  std::string source;  // "STALESIM_MEMORY_LIMIT" or "MemAvailable in /proc/meminfo"
};
// STALESIM_MEMORY_LIMIT when set (bytes, or with a K/M/G/T suffix: powers of 1024), else
// MemAvailable from /proc/meminfo; nullopt when neither is known (no check is made then).
// Throws ScenarioError when STALESIM_MEMORY_LIMIT is not a size.
std::optional<MemoryLimit> memory_limit();
// Parses "123", "512K", "1.5G" (binary units); nullopt when not a size.
std::optional<double> parse_size(const std::string& text);

// "needs about X (...), but only Y is available (SOURCE)" when the estimate of `s` exceeds `limit`,
// else "".
std::string memory_shortfall(const Scenario& s, const MemoryLimit& limit);
// What a refused run can do instead, after a memory_shortfall.
inline constexpr const char* kMemoryAdvice =
    "use fewer workers (cluster.workers), a smaller model (model.hidden) or less data, or set "
    "STALESIM_MEMORY_LIMIT to override";

// Throws ScenarioError "<origin>: needs about X ... but only Y is available (SOURCE) ..." when the
// estimate of `s` exceeds `limit`.
void check_memory(const Scenario& s, const std::string& origin, const std::optional<MemoryLimit>& limit);

}  // namespace stalesim
