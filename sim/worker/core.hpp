#pragma once
// The worker core: the state every worker protocol shares (engine, model, server, policy, workers,
// network, compute model, result) and the bookkeeping they all use: time accounting, grant, push,
// gradient application records, release of waiting workers, the gradient pool, deadlock and stop.

#include <cassert>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/gradient_pool.hpp"
#include "sim/output/observer.hpp"
#include "sim/output/recorder.hpp"
#include "sim/param_store.hpp"
#include "sim/plan/run_plan.hpp"
#include "sim/policies/sync_policy.hpp"
#include "sim/rules/server_optimizer.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/worker/changed_rows.hpp"
#include "sim/worker/cluster_schedule.hpp"
#include "sim/worker/compute_time.hpp"
#include "sim/worker/network.hpp"
#include "sim/worker/worker.hpp"

namespace stalesim {

class WorkerProtocol;

struct WorkerCore {
  // Builds the model, the server (store, optimizer), the network, the compute model and the
  // workers, as `plan` says (plan_run(s), sim/plan/run_plan.hpp). The policy is the protocol's
  // to set (make_protocol, sim/worker/protocol.hpp).
  WorkerCore(const Scenario& s, const DataSplit& d, const RunPlan& plan);

  const Scenario& sc;
  const DataSplit& data;
  const RunPlan plan;
  Engine engine;
  std::unique_ptr<Model> model;
  std::unique_ptr<SyncPolicy> policy;
  std::unique_ptr<ServerOptimizer> opt;
  std::unique_ptr<ParamStore> store;
  ClockTable clocks;
  std::vector<Worker> workers;
  // By worker id: the state the pull modes do not touch per event. Empty unless a feature that
  // keeps it is on (need_cold(): cache modes, VAP, deferred gradients, a transfer gate), so that
  // a plain pull-mode run does not build 100,000 of them (issue 21: construction per worker).
  std::vector<WorkerCold> cold;
  std::vector<std::string> group_profiles;  // by cluster.workers group: the device profile's name
  std::vector<int32_t> waiting;             // workers held by the policy
  std::vector<float> grad;
  bool math = false;
  int64_t message_bytes = 0;
  ChangedRows changed_rows;            // cached modes, row-oriented models: copies carry the changed rows
  const TransferGate* gate = nullptr;  // set when the rule decides each transfer (B-FASGD)
  // Uniform order (sim/worker/uniform.cpp): no transfer is simulated; a granted worker holds its
  // parameters at once (order->on_params) and a push is applied when sent (order->on_push_applied).
  WorkerProtocol* order = nullptr;
  // When the parameters of the latest grant leave the server (through its link queue): what
  // order->on_params sees of the transfer (the real mode pads the delivery from it).
  SimTime granted_sent;
  // Pull modes with a model that can split its gradient (Model::can_defer_gradient): a worker
  // begins its gradient when the server reads the parameters for it and holds the factors, not
  // the parameters, until its push is applied. Same gradients; memory grows with live versions
  // only (under ASP every worker would otherwise hold a different version). Where it applies:
  // defers_gradients (sim/estimate/memory_estimate.hpp).
  bool defer = false;
  std::optional<int64_t> refuse_from_clock;    // RunOptions::refuse_from_clock (fault injection)
  std::vector<std::vector<float>> free_grads;  // reusable gradient buffers (cache modes, VAP)
  ClusterSchedule schedule;
  Network network;
  ComputeModel compute;
  int32_t down_count = 0;       // crashed workers not yet rejoined
  int32_t pending_rejoins = 0;  // scheduled rejoins not yet run
  RunResult result;
  // Since the last metrics row:
  double loss_sum = 0.0;
  int64_t loss_count = 0;
  int64_t staleness_sum = 0;
  int64_t staleness_count = 0;
  bool stopped = false;
  RunObserver* obs = nullptr;  // trace, timeline, explain, gradient records (null: none)
  // Pool mode (RunOptions::threads > 1, issue 21): in pull modes, a gradient is queued on the pool
  // when the parameters are read (grant) and collected when its push is applied, at most
  // `max_ahead` at once (beyond that a worker computes as without a pool). Same gradients, same
  // order of application, so the same outputs whatever the thread count.
  int64_t max_ahead = 0;
  int64_t tasks_out = 0;                             // workers holding a task
  std::vector<std::unique_ptr<GradientTask>> spare;  // finished tasks, for reuse
  int64_t in_flight_sum = 0;                         // per applied gradient: begun, not applied
  int64_t in_flight_count = 0;
  int64_t begun = 0;  // gradients begun (parameters read), not applied
  // Declared last: destroyed first, before the workers whose tasks it may still hold.
  std::unique_ptr<GradientPool> pool;

  // REQUIRES: need_cold() was called (the caller's feature keeps cold state).
  WorkerCold& cold_of(const Worker& w) {
    assert(!cold.empty() && "a feature that keeps cold worker state did not call need_cold()");
    return cold[static_cast<size_t>(w.id)];
  }
  // Builds the cold state of every worker, once; called by the features that use it.
  void need_cold();
  const std::string& profile_of(const Worker& w) const {
    return group_profiles[static_cast<size_t>(w.group)];
  }

  // ---- Links and compute ----
  SimTime worker_link(const Worker& w, int64_t bytes) const { return network.worker_link(w.group, bytes); }
  SimTime latency_of(const Worker& w) { return network.latency(w.id, w.group); }
  SimTime server_transfer(SimTime arrive, int64_t bytes, int32_t worker, WireKind kind) {
    return network.server_transfer(arrive, bytes, worker, kind, obs);
  }
  // w starts computing its next gradient now: kComputeDone when it ends.
  void schedule_compute(Worker& w) {
    engine.schedule_in(compute.time(w, engine.now()), kComputeDone, static_cast<uint32_t>(w.id), w.gen);
  }

  // ---- Time accounting ----
  // Adds the time since w.state_since to the counter of w's current state.
  static void close_interval(Worker& w, SimTime end);
  // `a` names a kCommunicating state for observers: the push, or (default) the parameters' way back.
  void set_state(Worker& w, WorkerState s, Activity a = Activity::kPull);

  // ---- Pull modes: grant, push, release ----
  // The server grants worker w its next clock: it reads the current parameters and sends them.
  void grant(Worker& w);
  // The push leaves (after the transfer gate's say, when the rule has one); the request for the
  // next parameters rides on it.
  void send_push(Worker& w);
  // A push of `bytes` leaves w now.
  void push(Worker& w, int64_t bytes);
  void on_push_at_server(Worker& w);
  // Grants every waiting worker the policy now allows, in worker order.
  void release_waiting();

  // Bytes of a push: the model's size for the batch (sparse for mf and lda) unless a cost
  // architecture sizes every message. Pull mode draws the batch when the push is applied, so the
  // size comes from the batch the worker's sampler will hand out next.
  int64_t push_bytes_for(std::span<const int32_t> batch);
  int64_t next_push_bytes(Worker& w);

  // ---- Gradients ----
  // Pool mode: queues w's gradient on the parameters just read and the batch its push will draw.
  void start_task(Worker& w);
  // Pool mode: w's gradient, once computed; its loss. The gradient stays in w.task->grad until
  // release_task.
  double collect_task(Worker& w, std::span<const int32_t> batch);
  void release_task(Worker& w);
  // Deferred mode: the gradient w began when its parameters were read, finished into `grad`.
  double finish_deferred(Worker& w, std::span<const int32_t> batch);
  // A parameter-sized buffer for a gradient (reused from free_grads when one is there).
  std::vector<float> take_grad_buffer();
  // The parameters a gradient was computed on, for rules that need them (DC-ASGD's w_bak).
  std::span<const float> read_params(const Snapshot& s) const {
    return opt->rule().needs_read_params() && s ? s.values() : std::span<const float>();
  }

  // ---- Records ----
  // Books a gradient the server has applied for w: the counters, the staleness statistics, w's
  // clock, the policy and the observers. Returns whether the minimum clock rose.
  bool book_applied(Worker& w, const GradientInfo& info);
  // One applied gradient and its step, for the observers (--record gradients).
  void note_gradient(const GradientInfo& info, double step) {
    if (obs) obs->gradient(engine.now(), info, step);
  }
  // The metrics row of the state at `now`: version, bytes, and the means of the training loss
  // and staleness since the previous row (which start again from here). Its evaluation is the
  // caller's (sim/evaluation.hpp).
  MetricsRow take_metrics_row(SimTime now);
  // Appends an evaluated row; the first that reaches stop.target_accuracy sets the time to target
  // (and stops the run with stop.at_target).
  void complete_metrics(MetricsRow& row);
  // Whether a run ending at `end` needs a last metrics row: unless it diverged or its last row
  // already describes this state.
  bool needs_final_row(SimTime end) const {
    return result.status != RunStatus::kDiverged &&
           (result.metrics.empty() || result.metrics.back().time != end ||
            result.metrics.back().server_version != store->version());
  }
  // The end of a run's result: final parameters, data files, peak live versions, events.
  void finish_result() {
    if (math) {
      auto p = store->peek();
      result.final_params.assign(p.begin(), p.end());
    }
    result.data_files = data.files;
    result.peak_live_versions = store->peak_live_blocks();
    result.events = engine.events_run();
  }
  void diverge(Worker& w, double loss);
  void deadlock();
  void stop() {
    stopped = true;
    engine.stop();
  }
  bool all_blocked() const {
    return static_cast<int32_t>(waiting.size()) + down_count == clocks.workers() && pending_rejoins == 0;
  }

 private:
  void init_math(const Scenario& s, const DataSplit& d);
  void init_workers(const Scenario& s, const DataSplit& d);
};

}  // namespace stalesim
