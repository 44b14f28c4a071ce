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
// - snapshots: parameter versions alive at once: one per worker (all-reduce: one for all, the
//   iteration's) plus the server's current one
//   (DESIGN.md section 1), two per worker in the cache modes (lazy SSP, ESSP: its cached copy and
//   one on its way); two in all where workers defer their gradients (RunPlan::defers_gradients,
//   sim/plan/run_plan.hpp),
//   since a worker then lets its version go once it has begun. Never more than stop.max_updates + 1
//   (each version is an update's), and under the lazy cache no more than the copies its workers
//   fetch, one each staleness + 1 pushes at most;
// - workers' state: deferred: the batch indices, layer deltas and hidden activations,
//   (classes + 2 x hidden) x batch floats; the cache modes (sim/worker/cache.cpp) a local copy per
//   worker and the own pushes its copy does not include yet, each a gradient: at most staleness + 1
//   per worker, and all together no more than the pushes the run computes before its
//   stop.max_updates-th update (the pace of estimate_run: free-running workers compute one per
//   compute time while the links deliver theirs, plus those in transit); VAP an in-transit sum and
//   a held update; B-FASGD the last gradient;
// - server: the update buffer, softsync's sum, momentum, FASGD's three moving averages, DC-ASGD's
//   moving average and one backup copy per worker;
// - gradients: the server's scratch gradient; batch indices (4 bytes per training sample); with
//   more than one gradient thread where the pool applies (sim/gradient_pool.hpp), up to 4 gradients
//   per thread computed ahead and one per worker at most, the versions they pin where the workers
//   defer (else those are the workers' own, counted above), and two evaluations' copies;
// - model scratch: what each model instance (one, or one per gradient thread) holds for its largest
//   batch or evaluation chunk (models/model.hpp model_scratch_bytes): the cnn's im2col matrices and
//   per-sample buffers exceed its parameters many times over on large images;
// - the process: 8 MiB (binary, libraries, allocator), measured;
// - the model's own per-sample state (lda: each token's topic), from models/model.hpp model_size,
//   the same account of the model's size the run's model gives (tests/test_estimate.cpp);
// - off the star, the topology: racks 600 bytes per link (nodes, links, routes, each channel's
//   flow state and links.csv row), a graph 1,100 bytes per node and per link (its JSON besides),
//   both measured (peak RSS of time-only runs of 5,000 to 96,000 hosts, issue 46).
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
  double scratch_bytes = 0;   // the model instances' scratch (models/model.hpp model_scratch_bytes)
  double process_bytes = 0;   // the binary, its libraries and the allocator: a measured constant
  double topology_bytes = 0;  // racks and graphs: nodes, links, routes, flow state
  double total() const {
    return process_bytes + dataset_bytes + snapshot_bytes + worker_bytes + server_bytes + gradient_bytes +
           scratch_bytes + topology_bytes;
  }
  // "1.23 GiB (dataset 210 MiB, snapshots 800 MiB, workers' state ..., server ..., gradients ...;
  // 1,234,567 parameters x 4 bytes)".
  std::string describe() const;
};

struct RunEstimate;  // sim/estimate/estimate.hpp
// `threads`: the run's gradient threads (RunOptions::threads; more than one adds the gradient
// pool's buffers and model instances where the pool applies). The first form plans the run
// (plan_run) and estimates its pace (estimate_run) itself; the second takes the plan the run
// follows (sim/plan/run_plan.hpp) and the pace.
MemoryEstimate estimate_memory(const Scenario& s, int threads = 1);
MemoryEstimate estimate_memory(const Scenario& s, const RunPlan& plan, const RunEstimate& pace,
                               int threads = 1);

// Bytes with binary units: "512 B", "3.4 KiB", "1.21 GiB".
std::string format_bytes(double bytes);

// The memory a run may use, and where that figure comes from.
struct MemoryLimit {
  double bytes = 0;
  std::string source;  // "STALESIM_MEMORY_LIMIT" or "MemAvailable in /proc/meminfo"
};
// `configured` when not empty: the value of the environment variable STALESIM_MEMORY_LIMIT, which
// the CLI reads (bytes, or with a K/M/G/T suffix: powers of 1024); else MemAvailable from
// /proc/meminfo; nullopt when neither is known (no check is made then). Throws ScenarioError
// naming STALESIM_MEMORY_LIMIT when `configured` is not a size.
std::optional<MemoryLimit> memory_limit(const std::string& configured);
// Parses "123", "512K", "1.5G" (binary units); nullopt when not a size.
std::optional<double> parse_size(const std::string& text);

// "needs about X (...), but only Y is available (SOURCE)" when the estimate of `s` exceeds `limit`,
// else "".
std::string memory_shortfall(const Scenario& s, const MemoryLimit& limit, int threads = 1);
// What a refused run can do instead, after a memory_shortfall.
inline constexpr const char* kMemoryAdvice =
    "use fewer workers (cluster.workers), a smaller model (model.hidden) or less data, or set "
    "STALESIM_MEMORY_LIMIT to override";

// Throws ScenarioError "<origin>: needs about X ... but only Y is available (SOURCE) ..." when the
// estimate of `s` exceeds `limit`.
void check_memory(const Scenario& s, const std::string& origin, const std::optional<MemoryLimit>& limit,
                  int threads = 1);

}  // namespace stalesim
