#pragma once
// --trace: trace.json in the Chrome Trace Event format (JSON object form; opens in Perfetto,
// ui.perfetto.dev, and chrome://tracing). Reference: "Trace Event Format", Google, 2016
// (docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
//
// Layout (ts and dur in microseconds of virtual time; the file is deterministic):
//   pid 1 "workers": one track per worker (tid = worker id, named "worker 3 (gtx1060)") with
//     "X" spans compute, wait, push, pull (args: the worker's clock when the span began) and
//     "i" instants "blocked" where the policy holds the worker (args.why: the --explain text);
//   pid 2 "server": tid 0 "updates" ("i" per applied update: worker, version, staleness),
//     tid 1 "link" ("X" per message on the server's FIFO link: "push w3" / "pull w3", bytes),
//     tid 2 "policy" ("i" per DSSP controller call, args.why with the predicted times);
//   counters ("C", pid 2): "applied gradient" (its staleness and missed updates), "accuracy" and
//     "loss" at evaluation points;
//   "M" metadata: process_name, process_sort_index, thread_name, thread_sort_index.
// A window [from, to) keeps spans that overlap it, cut to it, and the instants and counters
// inside it. When the text would pass max_bytes the recorder stops adding events, marks the
// file truncated (otherData.truncated) and says so in truncation_message().

#include <cstdint>
#include <string>
#include <vector>

#include "sim/output/explain.hpp"
#include "sim/output/observer.hpp"

namespace stalesim {

struct TraceOptions {
  SimTime from = SimTime::zero();   // window start (virtual time)
  SimTime to = SimTime::max();      // window end; Default: the whole run
  int64_t max_bytes = 100'000'000;  // size limit of trace.json; Default: 100 MB
};

class TraceRecorder final : public RunObserver {
 public:
  // `title`: the scenario's name, written into otherData.
  TraceRecorder(std::string title, TraceOptions options);
  void start(const ClockTable& clocks, const SyncPolicy& policy,
             const std::vector<std::string>& profiles) override;
  void activity(SimTime now, int32_t worker, Activity a) override;
  void blocked(SimTime now, int32_t worker, WaitCause cause, int64_t clock, int64_t have) override;
  void wire(SimTime start, SimTime end, int32_t worker, WireKind kind, int64_t bytes) override;
  void update(SimTime now, int32_t worker, int64_t version, int64_t staleness,
              int64_t missed_updates) override;
  void evaluation(const MetricsRow& row) override;
  void link_load(SimTime now, const std::string& link, double utilisation, int32_t flows) override;
  void finish(SimTime end) override;

  // trace.json; valid after finish().
  std::string json() const;
  bool truncated() const { return truncated_; }
  // Empty when complete; else what was cut and how to get the rest.
  std::string truncation_message() const;

 private:
  struct Open {
    Activity activity = Activity::kPull;
    SimTime since;
    int64_t clock = 0;
  };
  bool inside(SimTime t) const { return t >= opt_.from && t < opt_.to; }
  void span(int pid, int tid, const std::string& name, SimTime start, SimTime end, const std::string& args);
  void instant(int pid, int tid, const std::string& name, SimTime t, const std::string& args);
  void counter(const std::string& name, SimTime t, const std::string& args);
  void emit(SimTime t, std::string event);
  void drain();

  std::string title_;
  TraceOptions opt_;
  const ClockTable* clocks_ = nullptr;
  Narrator narrator_;
  std::string meta_;
  std::string body_;
  std::vector<Open> open_;
  std::string policy_;
  bool truncated_ = false;
  SimTime truncated_at_;
  int64_t events_ = 0;
};

// Parses --trace-window "FROM:TO" (virtual seconds, FROM >= 0, TO > FROM; either may be empty:
// ":2" is [0, 2), "1:" is [1, end)). Throws std::invalid_argument with the reason.
void parse_trace_window(const std::string& text, TraceOptions& options);

// The options a trace.json was written with (its otherData), for `stalesim reproduce`; the
// defaults when the text is not a trace stalesim wrote.
TraceOptions trace_options_of(const std::string& trace_json);

}  // namespace stalesim
