#pragma once
// One name per staleness quantity (issue 32; REFERENCE.md "What is simulated"; DESIGN.md section 6),
// and the older names that the readers (reproduce, summarize, compare, sweeps resuming a folder,
// plots/) still accept in folders written before the rename.
//
//   staleness       per gradient: the reader's clock minus the server clock (the slowest worker's)
//                   when it read its parameters: the quantity SSP's threshold s bounds. Its mean per
//                   evaluation interval is metrics.csv's mean_staleness.
//   missed_updates  per gradient: the server version when it is applied minus the version it read
//                   (tau in the delayed-SGD formulas).
//
// The outputs write only these names. The older ones are read until kOldNamesReadUntil, after which
// the table below and the code reading through it go.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace stalesim {

inline constexpr const char* kOldNamesReadUntil = "2027-06-30";

struct RenamedName {
  const char* where;     // "staleness.csv", "summary.json", ...
  const char* old_name;  // as an older stalesim wrote it
  const char* name;      // as this one writes it
};

// Every renamed column and key (REFERENCE.md's table lists the same).
inline constexpr RenamedName kRenamedNames[] = {
    {"staleness.csv", "staleness", "value"},
    {"staleness.csv", "clock_gradients", "staleness_gradients"},
    {"staleness.csv", "step_gradients", "missed_updates_gradients"},
    {"gradients.csv", "tau", "missed_updates"},
    {"summary.json", "staleness_per_gradient/read_clock_gap", "staleness"},
    {"summary.json", "staleness_per_gradient/missed_updates", "missed_updates"},
    {"summary.json", "step_staleness", "missed_updates"},
    {"sweep.csv", "step_staleness_mean", "missed_updates_mean"},
    {"sweep-summary.csv", "step_staleness_mean", "missed_updates_mean"},
    {"compare.json", "step_staleness_mean", "missed_updates_mean"},
    {"compare.json", "step_staleness_ks", "missed_updates_ks"},
};

// `text` (a CSV file named `file`: "staleness.csv", "sweep.csv", ...) with its header's older
// column names replaced by the current ones; the rows are unchanged. Text without an old name is
// returned as it is.
std::string current_csv_names(std::string_view file, std::string text);

// A run's summary.json in the current layout: an older folder's `staleness_per_gradient`
// (`missed_updates`, `read_clock_gap`) and `step_staleness` become the top-level `missed_updates`
// and `staleness`. A current summary is returned as it is.
nlohmann::json current_summary_names(nlohmann::json summary);

// True when the summary was written under the older names.
bool has_old_summary_names(const nlohmann::json& summary);

}  // namespace stalesim
