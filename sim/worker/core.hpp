#pragma once
// The worker core (DESIGN.md section 3): what every worker protocol shares. It owns the engine,
// the model, the server (store, optimizer), the policy, the workers' hot state, the network and
// compute models and the run's result; its members are private, behind public methods that are
// still many (60; several hand out its parts: issue 47 narrows them). The run driver
// (sim/run_driver.hpp) evaluates the metrics rows and ends the run; the pieces the scenario
// decides are built by sim/worker/assemble.hpp. A protocol (sim/worker/protocol.hpp) keeps its
// own per-worker state and moves a worker through the core:
//   grant -> parameters arrive -> schedule_compute -> push -> on_push_at_server -> (push applied)
//   -> apply_to_server -> applied -> next_clock
// The tail every protocol shares is written here once: the loss (check_loss, count_loss), the
// records of an applied gradient and the stop.max_updates stop (applied), the policy's leave, the
// release of waiting workers and deadlock detection (next_clock), crashes and rejoins (faults.cpp).

#include <algorithm>
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
#include "sim/output/run_result.hpp"
#include "sim/param_store.hpp"
#include "sim/plan/run_plan.hpp"
#include "sim/policies/sync_policy.hpp"
#include "sim/rules/server_optimizer.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/worker/cluster_schedule.hpp"
#include "sim/worker/compute_time.hpp"
#include "sim/worker/network.hpp"
#include "sim/worker/worker.hpp"

namespace stalesim {

// Where a grant's parameters and a push go when they do not travel the simulated links: the
// uniform order (no transfer is simulated: a granted worker holds its parameters at once, a push
// is applied when sent) and the real run's server (the parameters go to the worker's rank).
class DirectDelivery {
 public:
  // w was granted parameters; `through`: when those of the latest grant had left the server's
  // and w's links (WorkerCore::pull_through; the real mode pads the delivery from it).
  virtual void params_granted(Worker& w, SimTime through) = 0;
  // w's push (or B-FASGD's notice in its place) left w.
  virtual void push_sent(Worker& w) = 0;

 protected:
  ~DirectDelivery() = default;
};

class WorkerCore {
 public:
  // Builds the model, the server (store, optimizer), the policy (make_policy, its one factory),
  // the network, the compute model and the workers, as `plan` says (plan_run(s),
  // sim/plan/run_plan.hpp).
  WorkerCore(const Scenario& s, const DataSplit& d, const RunPlan& plan);

  // ---- What the run is made of ----
  const Scenario& scenario() const { return sc_; }
  const DataSplit& data() const { return data_; }
  const RunPlan& plan() const { return plan_; }  // what the scenario implies about how it runs
  Engine& engine() { return engine_; }
  Model& model() { return *model_; }
  SyncPolicy& policy() { return *policy_; }
  const ServerOptimizer& optimizer() const { return *opt_; }
  ParamStore& store() { return *store_; }
  const ClockTable& clocks() const { return clocks_; }
  std::span<Worker> workers() { return workers_; }
  Worker& worker(size_t id) { return workers_[id]; }
  bool math() const { return math_; }                       // the model computes (not the time-only model)
  int64_t message_bytes() const { return message_bytes_; }  // one copy of the parameters on the wire
  size_t gradient_size() const { return grad_.size(); }     // floats in a gradient (0 without math)
  const std::string& profile_of(const Worker& w) const {
    return group_profiles_[static_cast<size_t>(w.group)];
  }
  Network& network() { return network_; }  // the links, whichever network carries the messages
  bool stopped() const { return stopped_; }
  RunObserver* observer() const { return obs_; }
  // The run's result so far. The run driver (sim/run_driver.hpp: its metrics rows and the end of
  // the run) completes it; the protocols count through count_push, count_pull and the methods below.
  RunResult& result() { return result_; }

  // ---- Set up by the driver before the run ----
  void set_observer(RunObserver* obs) { obs_ = obs; }  // null: none
  // RunOptions::refuse_from_clock (fault injection) and defer_gradients (deferred mode may be
  // turned off).
  void set_run_options(std::optional<int64_t> refuse_from_clock, bool defer_gradients);
  // Instead of the links, grants and pushes go to `d` (DirectDelivery).
  void deliver_directly(DirectDelivery* d) { direct_ = d; }
  // Pool mode (RunOptions::threads > 1, issue 21) where it applies: `allowed` by the protocol
  // (the parameters are fixed when the server reads them), a model that computes on other
  // threads (Model::clone), on the CPU, with simulated times. In pull modes a gradient is then
  // queued on the pool when the parameters are read (grant) and collected when its push is
  // applied, at most 4 x threads at once. Same gradients, same order of application, so the same
  // outputs whatever the thread count. Returns the pool, or null when none was started.
  GradientPool* start_pool(int threads, bool allowed);
  // The real mode's server shards (sim/real/real_run.hpp): the server keeps only the parameters
  // [begin, begin + count) of its initial ones, with a ServerOptimizer (the same rule, momentum
  // and averaging) sized to them; grants read that slice and apply_to_server takes gradients of
  // that slice. Versions count as before (one per applied gradient). Turns deferred gradients off.
  // REQUIRES: a model with math, before the run, no snapshot held.
  void keep_slice(int64_t begin, int64_t count);

  // ---- Links and compute ----
  SimTime worker_link(const Worker& w, int64_t bytes) const { return network_.worker_link(w.group, bytes); }
  SimTime latency_of(const Worker& w) { return network_.latency(w.id, w.group); }
  // A pull of `bytes` for w leaving the server at `at`: when its last byte has left the server's
  // and w's links (cut-through, sim/worker/network.hpp); it reaches w a latency later.
  SimTime pull_through(const Worker& w, SimTime at, int64_t bytes) {
    return network_.pull(at, bytes, w.id, w.group, obs_);
  }
  // How long w's next gradient takes when it starts at `start` (a draw of w's jitter stream).
  SimTime compute_time(Worker& w, SimTime start) { return compute_.time(w, start); }
  // w starts computing its next gradient now: kComputeDone when it ends.
  void schedule_compute(Worker& w) {
    engine_.schedule_in(compute_time(w, engine_.now()), kComputeDone, static_cast<uint32_t>(w.id), w.gen);
  }
  // `a` names a kCommunicating state for observers: the push, or (default) the parameters' way back.
  void set_state(Worker& w, WorkerState s, Activity a = Activity::kPull);
  // w is held back (`cause`; `a` and `b` as RunObserver::blocked says).
  void note_blocked(const Worker& w, WaitCause cause, int64_t a, int64_t b) {
    if (obs_) obs_->blocked(engine_.now(), w.id, cause, a, b);
  }
  // Counts a push or a copy of the parameters on the wire (bytes.push/pull, messages).
  void count_push(int64_t bytes) {
    result_.bytes_push += bytes;
    ++result_.messages_push;
  }
  void count_pull(int64_t bytes) {
    result_.bytes_pull += bytes;
    ++result_.messages_pull;
  }
  // A worker starts a clock `gap` clocks ahead of the minimum clock (max_clock_gap).
  void note_clock_gap(int64_t gap) { result_.max_clock_gap = std::max(result_.max_clock_gap, gap); }

  // ---- Pull modes: grant, push, what follows an applied push ----
  // The server grants worker w its next clock: it reads the current parameters and sends them
  // (B-FASGD's skipped fetch: only a "go on").
  void grant(Worker& w);
  // A push of `bytes` leaves w now.
  void push(Worker& w, int64_t bytes);
  // B-FASGD's skipped push: only a notice goes; the server re-applies the last gradient.
  void push_notice(Worker& w);
  // A push's first byte reached the server (cut-through: it is applied when the last is in).
  void on_push_at_server(Worker& w);
  // After w's push was applied (and the run goes on): w starts its next clock if the policy lets
  // it, else waits at the server; waiting workers the policy now allows are granted, in worker
  // order (when the minimum clock rose or the policy rechecks every push); a run in which every
  // worker is blocked and nothing is pending ends in a deadlock.
  void next_clock(Worker& w, bool min_rose);
  // Bytes of a push: the model's size for the batch (sparse for mf and lda) unless a cost
  // architecture sizes every message. Pull mode draws the batch when the push is applied, so the
  // size comes from the batch the worker's sampler will hand out next.
  int64_t push_bytes_for(std::span<const int32_t> batch);
  int64_t next_push_bytes(Worker& w);

  // ---- Gradients ----
  // Pull modes: w's gradient on the parameters it read and `batch` (from the pool, the deferred
  // factors or computed now); its training loss. The gradient is then gradient_of(w).
  double compute_gradient(Worker& w, std::span<const int32_t> batch);
  std::span<const float> gradient_of(const Worker& w) const {
    return w.task ? std::span<const float>(w.task->grad) : std::span<const float>(grad_);
  }
  // A parameter-sized buffer for a gradient kept beyond its event (cache modes, VAP), and its return.
  std::vector<float> take_grad_buffer();
  void recycle_grad_buffer(std::vector<float>&& g) { free_grads_.push_back(std::move(g)); }
  // Pull modes: the gradients begun (parameters read) and not yet applied, sampled at each applied
  // push: the run's available parallelism (RunResult::gradients_in_flight).
  void count_in_flight();

  // ---- The tail of an applied gradient ----
  // A training loss: false (and the run stopped as diverged) when it is not finite.
  bool check_loss(Worker& w, double loss);
  // Adds an applied gradient's loss to the next metrics row's mean.
  void count_loss(double loss) {
    loss_sum_ += loss;
    ++loss_count_;
  }
  // Applies gradient g of w (computed on `read`, for rules that need it) at the server; returns
  // the rule's step and lets go of w's pooled task.
  double apply_to_server(Worker& w, std::span<const float> g, const GradientInfo& info, const Snapshot& read);
  // Books a gradient the server has applied for w with `step`: the observers, the counters, the
  // staleness statistics, w's clock and the policy; then stops the run once stop.max_updates
  // gradients are applied (`wait_at_stop`: w waits from then on; the pull modes, where w is idle
  // at the server, not the cache modes, where it may be computing). Returns whether the minimum
  // clock rose; stopped() says whether the run goes on.
  bool applied(Worker& w, const GradientInfo& info, double step, bool wait_at_stop);

  // ---- Metrics rows and the end of the run ----
  // The metrics row of the state at `now`: version, bytes, and the means of the training loss
  // and staleness since the previous row (which start again from here). Its evaluation is the
  // caller's (sim/evaluation.hpp).
  MetricsRow take_metrics_row(SimTime now);
  // Lets go of the pooled tasks, then the pool (take the evaluations off it first); the mean
  // gradients in flight.
  void end_pool();
  // Closes every worker's open interval at `end` and appends its WorkerStats.
  void finish_workers(SimTime end);
  // The end of a run's result: final parameters, data files, peak live versions, events.
  void finish_result();
  void deadlock();
  void stop() {
    stopped_ = true;
    engine_.stop();
  }

  // ---- Crashes and rejoins of the cluster schedule (issue 5; faults.cpp) ----
  // A crash loses whatever the worker had in flight: its compute, its push (unless applied), its
  // pull. Under on_crash "drop" it also leaves the minimum-clock computation, so synchronous
  // policies proceed without it; under "wait" they wait for it. The time down counts as waiting.
  // At time 0: one kCrash event per crash, and one kRejoin for each crash that rejoins.
  void schedule_crashes();
  // Returns whether w crashed (false when it was down already or the run has stopped).
  bool crash(Worker& w);
  void rejoin(Worker& w);
  // The rejoined worker asks for leave and parameters like any worker after a push.
  void on_rejoin_request(Worker& w);

 private:
  // A push of `bytes` from w whose kPushAtServer runs at `first`: when the server holds all of it
  // (Network::push_through).
  SimTime push_through(const Worker& w, SimTime first, int64_t bytes) {
    return network_.push_through(first, bytes, w.id, w.group, obs_);
  }
  // When a push of `bytes`, whole at the server at `through`, has been applied: `through` plus
  // its shards' apply time, behind the applies before it (cluster.network.server_apply_ns_per_parameter).
  SimTime server_apply(SimTime through, int64_t bytes);
  void init_math(const Scenario& s, const DataSplit& d);
  void init_workers(const Scenario& s, const DataSplit& d);
  static void close_interval(Worker& w, SimTime end);
  void release_waiting();
  void start_task(Worker& w);
  double collect_task(Worker& w, std::span<const int32_t> batch);
  void release_task(Worker& w);
  double finish_deferred(Worker& w, std::span<const int32_t> batch);
  std::span<const float> read_params(const Snapshot& s) const {
    return opt_->rule().needs_read_params() && s ? s.values() : std::span<const float>();
  }
  void diverge(Worker& w, double loss);
  bool all_blocked() const {
    return static_cast<int32_t>(waiting_.size()) + down_count_ == clocks_.workers() && pending_rejoins_ == 0;
  }

  const Scenario& sc_;
  const DataSplit& data_;
  const RunPlan plan_;
  Engine engine_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<SyncPolicy> policy_;
  std::unique_ptr<ServerOptimizer> opt_;
  std::unique_ptr<ParamStore> store_;
  ClockTable clocks_;
  std::vector<Worker> workers_;
  std::vector<std::string> group_profiles_;  // by cluster.workers group: the device profile's name
  std::vector<int32_t> waiting_;             // workers held by the policy
  std::vector<float> grad_;                  // the gradient computed at the current event
  bool math_ = false;
  int64_t message_bytes_ = 0;
  DirectDelivery* direct_ = nullptr;
  SimTime granted_through_;  // when the parameters of the latest grant had left the links
  // The server's own work (cluster.network.server_apply_ns_per_parameter; 0: free): every shard applies
  // its part of each push, one at a time; the shards split the parameters evenly and receive every
  // push, so one timeline serves them all: when the last apply ends.
  double apply_ns_per_float_ = 0;
  SimTime apply_free_;
  // Pull modes with a model that can split its gradient (Model::can_defer_gradient): a worker
  // begins its gradient when the server reads the parameters for it and holds the factors, not
  // the parameters, until its push is applied. Same gradients; memory grows with live versions
  // only (under ASP every worker would otherwise hold a different version). Where it applies:
  // RunPlan::defers_gradients (sim/plan/run_plan.hpp). By worker id: the factors (sized when
  // defer_ is set at construction).
  bool defer_ = false;
  std::vector<DeferredGradient> pending_;
  std::optional<int64_t> refuse_from_clock_;    // RunOptions::refuse_from_clock (fault injection)
  std::vector<std::vector<float>> free_grads_;  // reusable gradient buffers (cache modes, VAP)
  ClusterSchedule schedule_;
  Network network_;
  ComputeModel compute_;
  int32_t down_count_ = 0;       // crashed workers not yet rejoined
  int32_t pending_rejoins_ = 0;  // scheduled rejoins not yet run
  RunResult result_;
  // Since the last metrics row:
  double loss_sum_ = 0.0;
  int64_t loss_count_ = 0;
  int64_t staleness_sum_ = 0;
  int64_t staleness_count_ = 0;
  bool stopped_ = false;
  RunObserver* obs_ = nullptr;  // trace, timeline, explain, gradient records (null: none)
  // Pool mode (start_pool): at most max_ahead_ tasks out at once (beyond that a worker computes
  // as without a pool).
  int64_t max_ahead_ = 0;
  int64_t tasks_out_ = 0;                             // workers holding a task
  std::vector<std::unique_ptr<GradientTask>> spare_;  // finished tasks, for reuse
  int64_t in_flight_sum_ = 0;                         // per applied gradient: begun, not applied
  int64_t in_flight_count_ = 0;
  int64_t begun_ = 0;  // gradients begun (parameters read), not applied
  // Declared last: destroyed first, before the workers whose tasks it may still hold.
  std::unique_ptr<GradientPool> pool_;
};

}  // namespace stalesim
