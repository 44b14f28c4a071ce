#pragma once
// `stalesim timeline`: a Gantt chart of a run's first seconds in the terminal (README "See it
// happen"). One row per worker, one cell per (until / width) seconds of virtual time; a cell shows
// what the worker did for most of that time:
//   █ compute   ▄ communicate (push or pull)   ░ wait   (blank: the run had ended)
//   ▼ the policy blocks the worker here: a wait that it caused begins in this cell and lasts at
//     least half a cell (shorter waits still count in the row's figures)
// Each row ends with the worker's updates applied, the waits the policy imposed and the share of
// time spent waiting, all within [0, until). Ties between activities in a cell go to compute,
// then communicate, then wait. The text is deterministic; ANSI colours only when asked.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/output/observer.hpp"

namespace stalesim {

class TimelineRecorder final : public RunObserver {
 public:
  // REQUIRES: until > 0.
  explicit TimelineRecorder(SimTime until) : until_(until) {}
  void start(const ClockTable& clocks, const SyncPolicy& policy,
             const std::vector<std::string>& profiles) override;
  void activity(SimTime now, int32_t worker, Activity a) override;
  void blocked(SimTime now, int32_t worker, WaitCause cause, int64_t clock, int64_t have) override;
  void update(SimTime now, int32_t worker, int64_t version, int64_t staleness,
              int64_t missed_updates) override;
  void finish(SimTime end) override;

  // The chart. `title`: the first line's subject. REQUIRES: finish() called, width >= 10.
  // `color`: ANSI colours (the CLI asks only when stdout is a terminal and NO_COLOR is unset).
  std::string render(const std::string& title, int width, bool color) const;

 private:
  struct Span {
    Activity activity;
    SimTime start, end;
    bool blocked = false;  // a wait the policy caused
  };
  struct Row {
    std::string profile;
    std::vector<Span> spans;
    Activity current = Activity::kPull;
    SimTime since;
    bool current_blocked = false;
    int64_t updates = 0;
    int64_t blocks = 0;
    std::map<int32_t, int64_t> blocked_for;  // the worker waited for -> waits (value-bound holds: -1)
  };
  void close(Row& row, SimTime end);

  const ClockTable* clocks_ = nullptr;
  SimTime until_;
  SimTime end_;
  std::string policy_;
  std::vector<Row> rows_;
};

// Running a scenario and rendering its timeline: timeline_of (sim/run.hpp).

// Parses a duration: "5s", "250ms", "2.5" (seconds). > 0. Throws std::invalid_argument.
SimTime parse_duration(const std::string& text);

}  // namespace stalesim
