#pragma once
// A run's output folder (README "Outputs"): summary.json with the manifest, metrics.csv,
// staleness.csv, then a `done` marker written last. Files are first written to a fresh sibling
// folder and the folder is renamed into place, so a reader never sees a half-written run and a
// rerun never mixes old and new files. Numbers are written in shortest round-trip form.

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/recorder.hpp"
#include "sim/scenario.hpp"

namespace stalesim {

// An output folder that cannot be written, or exists and may not be replaced.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OutputFiles {
  std::string summary_json;
  std::string metrics_csv;
  std::string staleness_csv;
  std::string decisions_csv;  // written as decisions.csv when not empty
  std::string gradients_csv;  // written as gradients.csv when not empty (--record gradients)
  std::string trace_json;     // written as trace.json when not empty (--trace; sim/trace.hpp)
  std::string explain_txt;    // written as explain.txt when not empty (--explain; sim/explain.hpp)
  std::string result_hash;    // 32 hex digits of XXH3-128
};

// Renders the outputs of a run. Pure: no I/O.
OutputFiles render_outputs(const Scenario& s, const RunResult& r);
// The summary as JSON (also used by the CLI's closing line).
nlohmann::json summary_json(const Scenario& s, const RunResult& r, const std::string& result_hash);

// Writes the files into `dir`. When `dir` exists and is not empty it is replaced only if `force`,
// else IoError. The `done` marker is written only for runs that were not interrupted.
void write_outputs(const std::string& dir, const OutputFiles& files, bool done, bool force);
// Checks, before a run, that write_outputs(dir, ..., force) will be able to write: IoError when
// `dir` is a file, is occupied and not `force`, or its parent cannot be created or written to
// (probed by creating and removing a hidden folder there).
void check_output_dir(const std::string& dir, bool force);

}  // namespace stalesim
