#include "sim/simulation.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>

#include "sim/engine/engine.hpp"
#include "sim/evaluation.hpp"
#include "sim/output/csv_observers.hpp"
#include "sim/plan/run_plan.hpp"
#include "sim/worker/core.hpp"
#include "sim/worker/protocol.hpp"
#include "sim/workloads.hpp"

namespace stalesim {

DataSplit load_data(const Scenario& s) { return make_data(s.data, s.seed); }

// The run: the worker core (sim/worker/core.hpp) and the run's worker protocol, driven event by
// event; evaluation points, progress, interruption and the end of the run.
struct Simulation::Impl {
  WorkerCore core;
  std::unique_ptr<WorkerProtocol> protocol;
  std::vector<int32_t> eval_indices;
  ObserverList events;            // what sees the run as it happens (RunOptions::observer, gradients)
  GradientRecorder gradients;     // --record gradients
  PolicyRecorder policy_records;  // decisions.csv and summary.json's policy facts
  // The metrics rows' evaluations (math only), in the background on the pool where nothing waits
  // for them (start_pool; sim/evaluation.hpp). Declared after the core and its pool: destroyed
  // before them.
  std::unique_ptr<Evaluations> evals;

  Impl(const Scenario& s, const DataSplit& d, ProtocolFactory own)
      : core(s, d, plan_run(s)), protocol(own ? own(core) : make_protocol(core)) {
    if (core.math()) {
      const int64_t m =
          s.eval.test_samples > 0 ? std::min(s.eval.test_samples, d.test.size()) : d.test.size();
      eval_indices.resize(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) eval_indices[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    }
  }

  void record_metrics(SimTime now) {
    WorkerCore& c = core;
    MetricsRow row = c.take_metrics_row(now);
    if (c.math()) return evals->add(std::move(row), c.store().peek());  // complete_metrics, now or later
    c.complete_metrics(row);
  }

  void on_evaluate(uint64_t k) {
    record_metrics(core.engine().now());
    if (core.stopped()) return;
    if (k + 1 >= kMaxEvaluations)
      throw ScenarioError(
          fmt::format("/eval/every_s: {:g} s gives more than {} evaluations by t={:g} s; raise eval.every_s",
                      core.scenario().eval.every_s, kMaxEvaluations, core.engine().now().seconds()));
    int64_t next = 0;
    if (__builtin_mul_overflow(static_cast<int64_t>(k + 1),
                               SimTime::from_seconds(core.scenario().eval.every_s).ns(), &next))
      throw TimeRangeError("the next evaluation (eval.every_s): past the simulator's time range");
    core.engine().schedule(SimTime::from_ns(next), kEvaluate, 0, k + 1);
  }

  void handle(const Event& e) {
    // At 100,000 workers the next event's worker is a cache miss: start loading its hot fields
    // now, while this event runs (a hint only; issue 21).
    for (const Event* next : {core.engine().peek(), core.engine().peek_second()}) {
      if (!next || next->target >= core.workers().size()) continue;
      const Worker& n = core.worker(next->target);
      const char* hot = reinterpret_cast<const char*>(&n);
      const char* hot_end = reinterpret_cast<const char*>(&n + 1);
      for (const char* line = hot; line < hot_end; line += 64) __builtin_prefetch(line);
    }
    if (e.kind == kOrderStep || e.kind == kCollective) return protocol->on_message(e);
    if (e.kind == kEvaluate) return on_evaluate(e.payload);
    if (e.kind == kFlowDone) return core.network().on_flow_event(core.engine());
    Worker& w = core.worker(e.target);
    if (e.kind == kCrash) {
      if (core.crash(w)) protocol->on_crash(w);
      return;
    }
    if (e.kind == kRejoin) return core.rejoin(w);
    if (e.payload != w.gen) return;  // sent before a crash: lost
    switch (e.kind) {
      case kRejoinRequest:
        core.on_rejoin_request(w);
        break;
      case kParamsArrive:
      case kSnapshotArrives:
        protocol->on_params(w);
        break;
      case kComputeDone:
        protocol->on_compute_done(w);
        break;
      case kPushAtServer:
        core.on_push_at_server(w);
        break;
      case kPushApplied:
        protocol->on_push_applied(w);
        break;
      default:
        protocol->on_message(e);
        break;
    }
  }

  // Connects the observers: RunOptions::observer and the gradient records see the run as it
  // happens; the policy's records (decisions.csv, its facts) are read at the end.
  void start_observers(const RunOptions& opt) {
    events.add(opt.observer);
    if (opt.record_gradients) events.add(&gradients);
    core.set_observer(events.empty() ? nullptr : &events);
    core.network().observe(core.observer());
    if (core.observer()) {
      std::vector<std::string> profiles;
      for (const auto& w : core.workers()) profiles.push_back(core.profile_of(w));
      core.observer()->start(core.clocks(), core.policy(), profiles);
    }
    policy_records.start(core.clocks(), core.policy(), {});
  }

  RunResult run(const RunOptions& opt) {
    WorkerCore& c = core;
    start_observers(opt);
    c.set_run_options(opt.refuse_from_clock, opt.defer_gradients);
    if (c.math())
      evals = std::make_unique<Evaluations>(c.model(), c.data().test, eval_indices,
                                            [this](MetricsRow& row) { core.complete_metrics(row); });
    start_pool(opt.threads, opt.observer);
    const StopSpec& stop = c.scenario().stop;
    const SimTime limit = stop.virtual_time_s ? SimTime::from_seconds(*stop.virtual_time_s) : SimTime::max();
    protocol->start();
    c.engine().schedule(SimTime::zero(), kEvaluate, 0, 0);
    Progress progress;
    progress.virtual_time_limit_s = stop.virtual_time_s.value_or(0.0);
    progress.max_updates = stop.max_updates.value_or(0);
    RunResult& result = c.result();
    auto report = [&] {
      if (!opt.on_progress) return;
      if (evals) evals->deliver_ready();
      progress.virtual_time_s = c.engine().now().seconds();
      progress.server_updates = result.server_updates;
      if (!result.metrics.empty()) progress.last_accuracy = result.metrics.back().test_accuracy;
      opt.on_progress(progress);
    };
    const uint64_t every = std::max<uint64_t>(1, opt.progress_every);
    Engine& engine = c.engine();
    while (!c.stopped()) {
      if (opt.interrupt && opt.interrupt->load(std::memory_order_relaxed)) {
        result.status = RunStatus::kInterrupted;
        result.stop_reason = StopReason::kInterrupted;
        break;
      }
      bool ran = false;
      engine.run_until(limit, [&](const Event& e) {
        handle(e);
        ran = true;
        if (engine.events_run() % every == 0 ||
            (opt.interrupt && opt.interrupt->load(std::memory_order_relaxed)))
          engine.stop();  // an interrupt stops at the next event
      });
      if (engine.events_run() % every == 0) report();
      if (!ran) {
        if (!c.stopped())
          result.stop_reason = stop.virtual_time_s ? StopReason::kVirtualTime : StopReason::kNoEvents;
        break;
      }
    }
    // The clock ends at the time limit when the run reached it.
    SimTime end = engine.now();
    if (result.stop_reason == StopReason::kVirtualTime) end = limit;
    finish(end, opt.record_gradients);
    report();
    return std::move(result);
  }

  // Pool mode where it applies (WorkerCore::start_pool): the pull modes (not the cache modes nor
  // VAP, which compute from a worker's own copy when the compute ends), without B-FASGD's skipped
  // pushes. `observer`: RunOptions::observer (it sees rows as they happen).
  void start_pool(int threads, const RunObserver* observer) {
    GradientPool* pool = core.start_pool(threads, protocol->pool_allowed());
    // Unless a row's evaluation decides what happens next (the target stops the run) or an
    // observer sees rows as they happen: at most 2 (their parameter copies) waiting at once.
    const StopSpec& stop = core.scenario().stop;
    if (pool && !observer && !(stop.at_target && stop.target_accuracy)) evals->use_pool(pool, 2);
  }

  void finish(SimTime end, bool record_gradients) {
    WorkerCore& c = core;
    RunResult& result = c.result();
    if (c.observer()) c.observer()->finish(end);
    policy_records.finish(end);
    c.release_tasks();
    if (evals) {
      evals->use_pool(nullptr, 1);  // the rows still in flight, before the pool goes
      result.background_evaluations = evals->background_count();
    }
    c.end_pool();
    c.finish_workers(end);  // every worker's open interval closes at `end`
    result.end_time = end;
    // A final evaluation at the end, unless the last row already describes this state.
    if (c.needs_final_row(end)) record_metrics(end);
    c.finish_result();
    result.policy_facts = policy_records.take_facts();
    result.recorded["decisions.csv"] = policy_records.take_decisions_csv();
    if (record_gradients) result.recorded["gradients.csv"] = gradients.take();
    result.recorded["links.csv"] = c.network().links_csv(c.engine().now());
  }
};

Simulation::Simulation(const Scenario& scenario, const DataSplit& data, ProtocolFactory protocol)
    : impl_(std::make_unique<Impl>(scenario, data, protocol)) {}
Simulation::~Simulation() = default;
RunResult Simulation::run(const RunOptions& options) { return impl_->run(options); }

RunResult run_scenario(const Scenario& s, const RunOptions& options) {
  const DataSplit data = load_data(s);
  Simulation sim(s, data);
  return sim.run(options);
}

}  // namespace stalesim
