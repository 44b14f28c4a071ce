#pragma once
// How one run of a sweep ended: sweep.csv's and sweep.json's "status" column. The names are the
// run's own status (summary.json's "status", RunStatus in sim/output/run_result.hpp) and two of
// the sweep's: "failed" (the point could not run: a scenario that does not resolve, a data error,
// an exception) and "not_run" (the sweep was interrupted before the run started). Parsed once,
// where a summary.json, sweep.json or sweep.csv is read (enum_from_name); everything else
// switches on the enum.

#include "base/enum_names.hpp"

namespace stalesim {

enum class SweepStatus { kCompleted, kDiverged, kDeadlock, kInterrupted, kFailed, kNotRun };
STALESIM_ENUM_NAMES(SweepStatus, {SweepStatus::kCompleted, "completed"}, {SweepStatus::kDiverged, "diverged"},
                    {SweepStatus::kDeadlock, "deadlock"}, {SweepStatus::kInterrupted, "interrupted"},
                    {SweepStatus::kFailed, "failed"}, {SweepStatus::kNotRun, "not_run"})

// Whether a status counts as success: completed or diverged (a diverged run is a result, as for
// `stalesim run`). Everything else makes the sweep exit 3.
constexpr bool sweep_status_ok(SweepStatus s) {
  return s == SweepStatus::kCompleted || s == SweepStatus::kDiverged;
}

}  // namespace stalesim
