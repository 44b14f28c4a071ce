#pragma once
// --explain: every policy decision that holds a worker back or lets it run ahead, in words, one
// line each (README "See it happen"):
//   t=0.012345 s  worker 3 waits at clock 9: slowest is worker 0 at clock 5, s = 3
//   t=0.020001 s  worker 3 resumes at clock 9 after waiting 0.007656 s: slowest is now worker 0 at clock 6
//   t=0.030000 s  DSSP: worker 2 is 4 clocks ahead of worker 0 (s_L = 3): ... grants 3 extra clocks
// A worker's clock is the number of iterations it has pushed; "waits at clock c" means it asked
// to start iteration c + 1. A decision that lets the worker go on at once is not listed (it would
// be one line per update); the closing line counts them. DSSP's controller calls are read from
// the policy's own decision record (SyncPolicy::controller_decisions, the rows of decisions.csv)
// and put in words here, with the predicted push times F_k and S_j that chose r* (Zhao et al.,
// ICDCS 2019; DESIGN.md section 6). Times are virtual seconds with 6 decimals (microseconds); the text is
// deterministic.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/output/observer.hpp"

namespace stalesim {

// Words for decisions, shared by the explain log and the trace's instant events.
class Narrator {
 public:
  struct Line {
    SimTime time;
    int32_t worker = 0;
    std::string text;  // without the "t=... s  " prefix
  };
  void start(const ClockTable& clocks, const SyncPolicy& policy);
  // The policy's own decisions (DSSP's controller calls) made since the previous call of this
  // function, oldest first (SyncPolicy::controller_decisions).
  std::vector<Line> new_controller_calls();
  // Why `worker` (at `clock`) waits; `have` as in RunObserver::blocked.
  std::string blocked(int32_t worker, WaitCause cause, int64_t clock, int64_t have) const;
  // The worker a wait of `cause` waits for: the slowest worker (the one at the minimum clock) for a
  // policy or stale-copy wait; none for a value-bound hold, which waits for no one worker.
  std::optional<int32_t> waits_for(WaitCause cause) const;
  // `worker` leaves a wait of `waited` that began with `cause` at `clock`.
  std::string resumed(int32_t worker, WaitCause cause, int64_t clock, SimTime waited) const;
  // "s = 3", "BSP (s = 0)", "s_L = 3, r_max = 12", ...: the policy's bound in words.
  std::string bound() const;

 private:
  const ClockTable* clocks_ = nullptr;
  const SyncPolicy* policy_ = nullptr;
  size_t calls_seen_ = 0;                 // the controller calls read so far
  std::vector<int64_t> last_call_clock_;  // per worker: the clock of its latest controller call (-1: none)
};

// Seconds with 6 decimals, as the log prints them: "12.500000".
std::string explain_seconds(SimTime t);

class ExplainRecorder final : public RunObserver {
 public:
  // `title`: the first line's subject (e.g. the scenario's name).
  explicit ExplainRecorder(std::string title) : title_(std::move(title)) {}
  void start(const ClockTable& clocks, const SyncPolicy& policy,
             const std::vector<std::string>& profiles) override;
  void activity(SimTime now, int32_t worker, Activity a) override;
  void blocked(SimTime now, int32_t worker, WaitCause cause, int64_t clock, int64_t have) override;
  void update(SimTime now, int32_t worker, int64_t version, int64_t staleness,
              int64_t missed_updates) override;
  void finish(SimTime end) override;
  // The whole log, a header line first and a closing line last.
  const std::string& text() const { return text_; }

 private:
  struct Waiting {
    bool on = false;
    WaitCause cause = WaitCause::kPolicy;
    int64_t clock = 0;
    SimTime since;
  };
  void add(SimTime t, const std::string& line);
  void drain();

  std::string title_;
  std::string text_;
  Narrator narrator_;
  const ClockTable* clocks_ = nullptr;
  std::vector<Waiting> waiting_;
  int64_t updates_ = 0;
  int64_t waits_ = 0;
  int64_t grants_ = 0;
  int64_t calls_ = 0;
};

}  // namespace stalesim
