#pragma once
// The one entry point of a run (issue 17 point 5): `stalesim run`, each sweep point, `stalesim
// reproduce` and `stalesim timeline` all set up, run and write a run through execute_run.
//
// execute_run loads the scenario's data (unless the caller shares it), builds the Simulation, runs
// it with the caller's options and observers plus the trace and explain recorders asked for,
// renders the run's files (sim/output/outputs.hpp) and writes them as a run folder
// (sim/output/run_folder.hpp). What stays with the callers is what differs between them: checks made before a
// run (output folder, memory), progress display, and what a finished run's files are compared with or
// summarised into.

#include <functional>
#include <optional>
#include <string>

#include "base/sim_time.hpp"
#include "models/dataset.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/trace.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulation.hpp"

namespace stalesim {

struct RunRequest {
  // Names the scenario in messages ("x.json: ..."): a scenario that does not fit its data (a batch
  // larger than a shard), a virtual time past the simulator's range. "": the message as the
  // simulation words it.
  std::string origin;
  // The scenario's data, already loaded (a sweep shares it between points); null: loaded here
  // (load_data) and freed before the files are written.
  const DataSplit* data = nullptr;
  // Progress, interrupt, threads, --record gradients, fault injection; `options.observer` sees the
  // run besides the recorders below (the timeline's chart).
  RunOptions options;
  std::optional<TraceOptions> trace;  // record trace.json (--trace)
  bool explain = false;               // record explain.txt (--explain)
  // The run folder written (write_outputs; REFERENCE.md "Safety and errors"); "": nothing is written
  // (timeline).
  std::string out;
  bool force = false;  // replace `out` when it holds a stalesim run
  OutputGuard guard;
  // Fault injection for tests: called after the run, before its folder is written (the CLI's
  // STALESIM_INJECT_INTERRUPT_BEFORE_WRITE raises SIGINT there).
  std::function<void()> before_write;
};

struct RunOutcome {
  RunResult result;   // its recorders' texts (RunResult::recorded) moved to `files`
  OutputFiles files;  // the rendered files, as written
  // An interrupted --force rerun: `out` held a finished run, which is kept; nothing was written.
  bool kept_finished = false;
  // Why trace.json was cut at its size limit (TraceRecorder::truncation_message), or "".
  std::string trace_warning;
};

// Runs `s` as `request` says and writes its folder when `request.out` is set: with its done
// marker when the run was not interrupted; an interrupted run's partial files go to `out` unless
// `out` holds a finished run (kept_finished), which is also kept when the interrupt comes after the
// run ended but before its folder is written. Throws ScenarioError (naming `origin`) when the
// scenario does not fit its data or leaves the simulator's time range, DataError when its data
// cannot be loaded, IoError when the folder cannot be written.
RunOutcome execute_run(const Scenario& s, const RunRequest& request);

// Runs `scenario` up to `until` (its own stop conditions still apply), writing nothing, and
// renders its timeline (sim/output/timeline.hpp). Throws what execute_run throws.
std::string timeline_of(const Scenario& scenario, SimTime until, int width, bool color,
                        const std::string& origin = "");

}  // namespace stalesim
