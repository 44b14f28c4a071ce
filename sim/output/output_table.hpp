#pragma once
// Every file a run folder may hold, one row each (REFERENCE.md "Outputs"; CONTRIBUTING.md "An
// output file"): its name, when a run writes it, whether `stalesim reproduce` compares it, and its
// writer. The run (`render_outputs`, `write_outputs`), the real run, `--force`'s recognition of a
// run folder (`inspect_folder`) and `reproduce` all read this table: a new output file is one row
// and one writer in output_table.cpp.

#include <span>
#include <string>
#include <string_view>

#include "sim/output/run_result.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// What a writer renders a file from. The result hash covers the final parameters and metrics.csv,
// so metrics.csv is rendered once, before the other files, and handed in.
struct RunOutput {
  const Scenario& scenario;
  const RunResult& result;
  const std::string& metrics_csv;
  const std::string& result_hash;
};

// When a run writes the file.
enum class Written {
  kAlways,         // by every run, interrupted ones too
  kWhenNotEmpty,   // when its writer gives text (a recorder's file the run made: RunResult::recorded)
  kWhenFinished,   // last, by a run that was not interrupted (the `done` marker)
  kByPlotScripts,  // never by a run: our plot scripts record it (plots/stalesim_runs.py)
};

struct OutputRow {
  std::string_view name;
  Written when;
  bool reproduce_compares;  // `stalesim reproduce` reruns the run and compares this file
  // The file's text (given the row's name); null for kByPlotScripts.
  std::string (*write)(const RunOutput&, std::string_view name);
};

// metrics.csv's text, which the result hash covers (render_outputs renders it first).
std::string metrics_csv(const RunResult& r);

// The rows in the order a run writes its files: summary.json first (from then on a folder reads as
// a run), `done` last.
std::span<const OutputRow> output_table();
// The row named `name`, or null when no run writes a file of that name.
const OutputRow* find_output(std::string_view name);

}  // namespace stalesim
