#include "sim/simulation.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>

#include "sim/engine/engine.hpp"
#include "sim/evaluation.hpp"
#include "sim/output/csv_observers.hpp"
#include "sim/plan/run_plan.hpp"
#include "sim/worker/core.hpp"
#include "sim/worker/faults.hpp"
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

  Impl(const Scenario& s, const DataSplit& d) : core(s, d, plan_run(s)), protocol(make_protocol(core)) {
    if (core.math) {
      const int64_t m =
          s.eval.test_samples > 0 ? std::min(s.eval.test_samples, d.test.size()) : d.test.size();
      eval_indices.resize(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) eval_indices[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    }
  }

  void record_metrics(SimTime now) {
    WorkerCore& c = core;
    MetricsRow row = c.take_metrics_row(now);
    if (c.math) return evals->add(std::move(row), c.store->peek());  // complete_metrics, now or later
    c.complete_metrics(row);
  }

  void on_evaluate(uint64_t k) {
    record_metrics(core.engine.now());
    if (core.stopped) return;
    if (k + 1 >= kMaxEvaluations)
      throw ScenarioError(
          fmt::format("/eval/every_s: {:g} s gives more than {} evaluations by t={:g} s; raise eval.every_s",
                      core.sc.eval.every_s, kMaxEvaluations, core.engine.now().seconds()));
    int64_t next = 0;
    if (__builtin_mul_overflow(static_cast<int64_t>(k + 1), SimTime::from_seconds(core.sc.eval.every_s).ns(),
                               &next))
      throw TimeRangeError("the next evaluation (eval.every_s): past the simulator's time range");
    core.engine.schedule(SimTime::from_ns(next), kEvaluate, 0, k + 1);
  }

  void handle(const Event& e) {
    // At 100,000 workers the next event's worker is a cache miss: start loading its hot fields
    // now, while this event runs (a hint only; issue 21).
    for (const Event* next : {core.engine.peek(), core.engine.peek_second()}) {
      if (!next || next->target >= core.workers.size()) continue;
      const Worker& n = core.workers[next->target];
      const char* hot = reinterpret_cast<const char*>(&n);
      const char* hot_end = reinterpret_cast<const char*>(&n + 1);
      for (const char* line = hot; line < hot_end; line += 64) __builtin_prefetch(line);
    }
    if (e.kind == kOrderStep) return protocol->on_message(e);
    if (e.kind == kEvaluate) return on_evaluate(e.payload);
    if (e.kind == kFlowDone) return core.network.flows()->on_flow_event(core.engine);
    Worker& w = core.workers[e.target];
    if (e.kind == kCrash) return on_crash(core, w);
    if (e.kind == kRejoin) return on_rejoin(core, w);
    if (e.payload != w.gen) return;  // sent before a crash: lost
    switch (e.kind) {
      case kRejoinRequest:
        on_rejoin_request(core, w);
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
    core.obs = events.empty() ? nullptr : &events;
    if (core.network.flows()) core.network.flows()->observe(core.obs);
    if (core.obs) {
      std::vector<std::string> profiles;
      for (const auto& w : core.workers) profiles.push_back(core.profile_of(w));
      core.obs->start(core.clocks, *core.policy, profiles);
    }
    policy_records.start(core.clocks, *core.policy, {});
  }

  RunResult run(const RunOptions& opt) {
    WorkerCore& c = core;
    start_observers(opt);
    c.refuse_from_clock = opt.refuse_from_clock;
    c.defer = c.defer && opt.defer_gradients;
    c.result.deferred_gradients = c.defer;
    if (c.math)
      evals = std::make_unique<Evaluations>(*c.model, c.data.test, eval_indices,
                                            [this](MetricsRow& row) { core.complete_metrics(row); });
    start_pool(opt.threads, opt.observer);
    const SimTime limit =
        c.sc.stop.virtual_time_s ? SimTime::from_seconds(*c.sc.stop.virtual_time_s) : SimTime::max();
    protocol->start();
    c.engine.schedule(SimTime::zero(), kEvaluate, 0, 0);
    Progress progress;
    progress.virtual_time_limit_s = c.sc.stop.virtual_time_s.value_or(0.0);
    progress.max_updates = c.sc.stop.max_updates.value_or(0);
    auto report = [&] {
      if (!opt.on_progress) return;
      if (evals) evals->deliver_ready();
      progress.virtual_time_s = c.engine.now().seconds();
      progress.server_updates = c.result.server_updates;
      if (!c.result.metrics.empty()) progress.last_accuracy = c.result.metrics.back().test_accuracy;
      opt.on_progress(progress);
    };
    const uint64_t every = std::max<uint64_t>(1, opt.progress_every);
    while (!c.stopped) {
      if (opt.interrupt && opt.interrupt->load(std::memory_order_relaxed)) {
        c.result.status = RunStatus::kInterrupted;
        c.result.stop_reason = "interrupted";
        break;
      }
      bool ran = false;
      c.engine.run_until(limit, [&](const Event& e) {
        handle(e);
        ran = true;
        if (c.engine.events_run() % every == 0 ||
            (opt.interrupt && opt.interrupt->load(std::memory_order_relaxed)))
          c.engine.stop();  // an interrupt stops at the next event
      });
      if (c.engine.events_run() % every == 0) report();
      if (!ran) {
        if (!c.stopped) c.result.stop_reason = c.sc.stop.virtual_time_s ? "virtual_time" : "no_events";
        break;
      }
    }
    // The clock ends at the time limit when the run reached it.
    SimTime end = c.engine.now();
    if (c.result.stop_reason == "virtual_time") end = limit;
    finish(end, opt.record_gradients);
    report();
    return std::move(c.result);
  }

  // Pool mode where it applies: pull modes (not the cache modes nor VAP, which compute from a
  // worker's own copy when the compute ends), a model that computes on other threads
  // (Model::clone), on the CPU, with simulated times (measured times follow the order in which
  // gradients are computed), without B-FASGD's skipped pushes.
  // `observer`: RunOptions::observer (it sees rows as they happen).
  void start_pool(int threads, const RunObserver* observer) {
    WorkerCore& c = core;
    if (threads < 1) throw std::invalid_argument(fmt::format("threads: expected >= 1, got {}", threads));
    if (threads == 1 || !c.math || !protocol->pool_allowed() || c.compute.measured() ||
        c.sc.compute.backend != Backend::kCpu)
      return;
    std::vector<std::unique_ptr<Model>> helpers;
    for (int i = 1; i < threads; ++i) {
      auto m = c.model->clone();
      if (!m) return;
      helpers.push_back(std::move(m));
    }
    c.max_ahead = 4 * static_cast<int64_t>(threads);
    c.pool = std::make_unique<GradientPool>(*c.model, std::move(helpers), c.data.train);
    // Unless a row's evaluation decides what happens next (the target stops the run) or an
    // observer sees rows as they happen: at most 2 (their parameter copies) waiting at once.
    if (!observer && !(c.sc.stop.at_target && c.sc.stop.target_accuracy)) evals->use_pool(c.pool.get(), 2);
  }

  void finish(SimTime end, bool record_gradients) {
    WorkerCore& c = core;
    RunResult& result = c.result;
    if (c.obs) c.obs->finish(end);
    policy_records.finish(end);
    for (auto& w : c.workers) c.release_task(w);
    if (evals) {
      evals->use_pool(nullptr, 1);  // the rows still in flight, before the pool goes
      result.background_evaluations = evals->background_count();
    }
    c.pool.reset();
    if (c.in_flight_count)
      result.gradients_in_flight =
          static_cast<double>(c.in_flight_sum) / static_cast<double>(c.in_flight_count);
    // Close every worker's open interval at `end`.
    for (auto& w : c.workers) {
      WorkerCore::close_interval(w, end);
      w.state_since = end;
      w.params.reset();
      result.workers.push_back(
          WorkerStats{w.id, c.profile_of(w), w.iterations, w.compute_ns, w.wait_ns, w.communicate_ns});
    }
    result.end_time = end;
    // A final evaluation at the end, unless the last row already describes this state.
    if (c.needs_final_row(end)) record_metrics(end);
    c.finish_result();
    result.policy_facts = policy_records.take_facts();
    result.decisions_csv = policy_records.take_decisions_csv();
    if (record_gradients) result.gradients_csv = gradients.take();
    if (c.network.flows()) result.links_csv = c.network.flows()->links_csv(c.engine.now());
  }
};

Simulation::Simulation(const Scenario& scenario, const DataSplit& data)
    : impl_(std::make_unique<Impl>(scenario, data)) {}
Simulation::~Simulation() = default;
RunResult Simulation::run(const RunOptions& options) { return impl_->run(options); }

RunResult run_scenario(const Scenario& s, const RunOptions& options) {
  const DataSplit data = load_data(s);
  Simulation sim(s, data);
  return sim.run(options);
}

}  // namespace stalesim
