#include "sim/simulation.hpp"

#include <algorithm>

#include "sim/engine/engine.hpp"
#include "sim/plan/run_plan.hpp"
#include "sim/run_driver.hpp"
#include "sim/worker/core.hpp"
#include "sim/worker/protocol.hpp"
#include "sim/workloads.hpp"

namespace stalesim {

DataSplit load_data(const Scenario& s) { return make_data(s.data, s.seed); }

// The run: the worker core (sim/worker/core.hpp) and the run's worker protocol, driven event by
// event; the driver (sim/run_driver.hpp) connects the observers, evaluates the metrics rows and
// ends the run; progress and interruption here.
struct Simulation::Impl {
  WorkerCore core;
  std::unique_ptr<WorkerProtocol> protocol;
  // Declared after the core and its pool: destroyed before them.
  RunDriver driver;

  Impl(const Scenario& s, const DataSplit& d, ProtocolFactory own)
      : core(s, d, plan_run(s)),
        protocol(own ? own(core) : make_protocol(core)),
        driver(core, [this] { return core.store().peek(); }) {}

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
    if (e.kind == kEvaluate) return driver.on_evaluate(e.payload);
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

  RunResult run(const RunOptions& opt) {
    WorkerCore& c = core;
    driver.start(opt.observer, opt.record_gradients);
    c.set_run_options(opt.refuse_from_clock, opt.defer_gradients);
    // Pool mode where it applies: the pull modes (not the cache modes nor VAP, which compute from
    // a worker's own copy when the compute ends), without B-FASGD's skipped pushes.
    driver.start_pool(opt.threads, protocol->pool_allowed(), opt.observer);
    const StopSpec& stop = c.scenario().stop;
    const SimTime limit = stop.virtual_time_s ? SimTime::from_seconds(*stop.virtual_time_s) : SimTime::max();
    protocol->start();
    driver.schedule_first_evaluation();
    Progress progress;
    progress.virtual_time_limit_s = stop.virtual_time_s.value_or(0.0);
    progress.max_updates = stop.max_updates.value_or(0);
    RunResult& result = c.result();
    auto report = [&] {
      if (!opt.on_progress) return;
      driver.deliver_ready();
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
    driver.finish(end, [&] { c.finish_workers(end); });
    result.recorded["links.csv"] = c.network().links_csv(engine.now());
    report();
    return std::move(result);
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
