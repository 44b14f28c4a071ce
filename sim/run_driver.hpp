#pragma once
// The run driver (DESIGN.md section 1): what every run of a WorkerCore does around its event
// loop, written once for the simulation (sim/simulation.cpp) and the real run's server
// (sim/real/real_server.cpp). It connects the observers and the policy's records, evaluates the
// metrics rows (eval.every_s: immediately, or in the background on the gradient pool) and runs
// the end of the run in one order. The core keeps the run's state; each caller keeps its own
// loop: the simulation runs events in virtual time, the real server polls MPI against the wall
// clock.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/evaluation.hpp"
#include "sim/output/csv_observers.hpp"
#include "sim/output/observer.hpp"

namespace stalesim {

class WorkerCore;

class RunDriver {
 public:
  // `params` returns the whole parameters an evaluation scores, now (the store's; the real run's
  // server with shards gathers every shard's slice). Only called for a model with math.
  RunDriver(WorkerCore& core, std::function<std::span<const float>()> params);
  ~RunDriver();
  RunDriver(const RunDriver&) = delete;
  RunDriver& operator=(const RunDriver&) = delete;

  // Before the run. `observer` (RunOptions::observer; null: none) and, with `record_gradients`,
  // the gradient records see the run as it happens (the network's links too); the policy's
  // records (decisions.csv, summary.json's policy facts) are read at the end. Builds the
  // evaluations (a model with math).
  void start(RunObserver* observer, bool record_gradients);
  // Pool mode where it applies (WorkerCore::start_pool; `allowed` by the protocol). The metrics
  // rows are then evaluated in the background too, unless a row's evaluation decides what
  // happens next (stop.at_target with a target) or `observer` sees rows as they happen: at most
  // 2 (their parameter copies) waiting at once.
  void start_pool(int threads, bool allowed, const RunObserver* observer);
  // The first evaluation, at time 0. Call it after the protocol's first events are scheduled:
  // events at one time run in the order scheduled.
  void schedule_first_evaluation();
  // Event kEvaluate number k: the metrics row now; the next evaluation unless the run stopped.
  // Throws ScenarioError past kMaxEvaluations rows, TimeRangeError past the time range.
  void on_evaluate(uint64_t k);
  // Completes the rows evaluated in the background that are done (before a progress report).
  void deliver_ready();

  // The end of the run at `end`, in this order: the observers and the policy's records end; the
  // evaluations in flight are completed, then the pooled gradient tasks let go and the pool ends;
  // `close_workers` appends every worker's WorkerStats (the simulation: WorkerCore::finish_workers; the real
  // run: the times it measured); the last metrics row unless the previous one describes this state (or
  // `params_known` is false: a real run whose shards' last gather failed); the result's tail
  // (WorkerCore::finish_result) and the records: the policy's facts, decisions.csv and, when
  // recorded, gradients.csv.
  void finish(SimTime end, const std::function<void()>& close_workers, bool params_known = true);

 private:
  void record_metrics(SimTime now);
  // Appends an evaluated row; the first that reaches stop.target_accuracy sets the time to target
  // (and stops the run with stop.at_target).
  void complete_metrics(MetricsRow& row);
  // Whether a run ending at `end` needs a last metrics row: unless it diverged or its last row
  // already describes this state.
  bool needs_final_row(SimTime end);

  WorkerCore& core_;
  std::function<std::span<const float>()> params_;
  std::vector<int32_t> eval_indices_;  // the test samples an evaluation scores (eval.test_samples)
  ObserverList events_;                // what sees the run as it happens
  GradientRecorder gradients_;         // --record gradients
  bool record_gradients_ = false;
  PolicyRecorder policy_records_;
  // Declared last: destroyed first, while the core's pool still exists.
  std::unique_ptr<Evaluations> evals_;
};

}  // namespace stalesim
