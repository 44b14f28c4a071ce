#pragma once
// Simulation = Engine + Cluster + Server + Policy + Rule + Model + Recorder, for one run on one
// thread (DESIGN.md section 1). Construct it from a validated Scenario and the data it names,
// call run() once.
//
// The cluster model (DESIGN.md section 3), per worker: receive parameters, compute a gradient on
// the next batch, push it; the push and the request for the next parameters travel as one RPC.
// When the push is applied the server asks the policy whether the worker may start its next
// clock; if not, the worker waits at the server. Message timing: a message of B bytes from or to
// worker w occupies w's link for B/bandwidth, takes latency_us once, and occupies the server's
// link (full duplex: one FIFO per direction, pushes in, pulls out, each in arrival order) for
// B/server_bandwidth.
//   push:  leaves at t; reaches the server at t + B/bw_w + lat; served on the server link.
//   reply: queued on the server link when granted; arrives at end + lat + B/bw_w.
// The gradient is computed from the parameters and batch fixed when compute starts; it is
// evaluated when the push is applied (results are identical and no gradient buffer per worker
// is held).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "models/dataset.hpp"
#include "sim/output/observer.hpp"
#include "sim/output/run_result.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

struct Progress {
  double virtual_time_s = 0.0;
  double virtual_time_limit_s = 0.0;  // 0 when the run has no time limit
  int64_t server_updates = 0;
  int64_t max_updates = 0;  // 0 when unset
  std::optional<double> last_accuracy;
};

struct RunOptions {
  // Called every `progress_every` events and at the end; for progress display only.
  std::function<void(const Progress&)> on_progress;
  uint64_t progress_every = 1u << 14;
  // When set and true, the run stops at the next event with status "interrupted".
  const std::atomic<bool>* interrupt = nullptr;
  // Keep one record per applied gradient (gradients.csv in RunResult::recorded; --record gradients).
  bool record_gradients = false;
  // Sees the run as it happens (trace, timeline, explain; sim/output/observer.hpp); null: nothing.
  RunObserver* observer = nullptr;
  // Fault injection, to test the deadlock path (a correct policy never deadlocks): when set, the
  // policy's leave is refused to every worker whose clock has reached this value, so the run ends
  // in status "deadlock". The CLI sets it from STALESIM_INJECT_DEADLOCK_AT_CLOCK.
  std::optional<int64_t> refuse_from_clock;
  // Deferred gradients (Model::can_defer_gradient): where the model and the policy allow, a worker
  // begins its gradient when its parameters are read and holds the factors instead of the
  // parameters. False: the reference path that holds the parameters until the push is applied.
  // Both give the same gradients, so the same outputs (tests/test_simulation.cpp compares them)
  // but for summary.json's peak_live_versions, which counts the versions held.
  bool defer_gradients = true;
  // Threads computing gradients (issue 21; sim/gradient_pool.hpp), the caller's included: 1 runs
  // everything on the caller's thread; N > 1 computes begun gradients ahead on N - 1 more threads
  // where the run allows (pull modes, a model with Model::clone, simulated times). Outputs are
  // the same bytes for every N (tests/test_threads.cpp). >= 1.
  int threads = 1;
};

// Loads the data a scenario names (Fashion-MNIST, blobs, or none); applies train_samples.
// Throws DataError.
DataSplit load_data(const Scenario& s);

class WorkerCore;
class WorkerProtocol;
// Builds a worker protocol over a run's core (sim/worker/protocol.hpp).
using ProtocolFactory = std::unique_ptr<WorkerProtocol> (*)(WorkerCore&);

class Simulation {
 public:
  // `data` must outlive the Simulation (unused for the time-only model). Throws ScenarioError
  // when the scenario does not fit the data (e.g. a batch larger than a worker's shard).
  // `protocol`, when set, builds the worker protocol in place of the one the policy names
  // (make_protocol, sim/worker/protocol.hpp): for tests of a protocol that is not shipped, such as
  // CONTRIBUTING.md's worked example.
  Simulation(const Scenario& scenario, const DataSplit& data, ProtocolFactory protocol = nullptr);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  RunResult run(const RunOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convenience: load data, run.
RunResult run_scenario(const Scenario& s, const RunOptions& options = {});

}  // namespace stalesim
