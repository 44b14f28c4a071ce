#include "sim/run.hpp"

#include <memory>

#include <fmt/format.h>

#include "sim/output/explain.hpp"
#include "sim/output/observer.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/output/timeline.hpp"

namespace stalesim {

namespace {

std::string named(const std::string& origin, const std::string& message) {
  return origin.empty() ? message : fmt::format("{}: {}", origin, message);
}

}  // namespace

RunOutcome execute_run(const Scenario& s, const RunRequest& request) {
  RunOutcome outcome;
  {
    // The data, the simulation and the recorders go before the files are written.
    std::optional<DataSplit> loaded;
    const DataSplit& data = request.data ? *request.data : loaded.emplace(load_data(s));
    std::unique_ptr<Simulation> sim;
    try {
      sim = std::make_unique<Simulation>(s, data);
    } catch (const ScenarioError& e) {  // the scenario does not fit its data
      throw ScenarioError(named(request.origin, e.what()));
    }
    RunOptions options = request.options;
    std::optional<TraceRecorder> tracer;
    std::optional<ExplainRecorder> explainer;
    ObserverList observers;
    observers.add(request.options.observer);
    if (request.trace) observers.add(&tracer.emplace(s.name, *request.trace));
    if (request.explain) observers.add(&explainer.emplace(s.name));
    options.observer = observers.empty() ? nullptr : &observers;
    try {
      outcome.result = sim->run(options);
    } catch (const TimeRangeError& e) {
      if (request.origin.empty()) throw;
      throw ScenarioError(fmt::format("{}: {}; nothing written", request.origin, e.what()));
    }
    if (tracer) {
      outcome.result.recorded["trace.json"] = tracer->json();
      if (tracer->truncated()) outcome.trace_warning = tracer->truncation_message();
    }
    if (explainer) outcome.result.recorded["explain.txt"] = explainer->text();
    outcome.files = render_outputs(s, outcome.result);
    // The recorders' texts are in the files now: keep one copy (a trace may be 100 MB).
    outcome.result.recorded.clear();
  }
  if (request.out.empty()) return outcome;
  if (request.before_write) request.before_write();
  const bool done = outcome.result.status != RunStatus::kInterrupted;
  const bool interrupted = !done || (request.options.interrupt && request.options.interrupt->load());
  if (interrupted && holds_finished_run(request.out)) {
    outcome.kept_finished = true;  // Ctrl-C during a --force rerun: the finished run stays
    return outcome;
  }
  write_outputs(request.out, outcome.files, done, request.force, request.guard);
  return outcome;
}

std::string timeline_of(const Scenario& scenario, SimTime until, int width, bool color,
                        const std::string& origin) {
  Scenario s = scenario;
  if (!s.stop.virtual_time_s || *s.stop.virtual_time_s > until.seconds())
    s.stop.virtual_time_s = until.seconds();
  TimelineRecorder rec(until);
  RunRequest request;
  request.origin = origin;
  request.options.observer = &rec;
  execute_run(s, request);
  return rec.render(s.name, width, color);
}

}  // namespace stalesim
