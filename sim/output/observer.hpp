#pragma once
// RunObserver: what a run looks like from outside, for the trace (sim/output/trace.hpp), the terminal
// timeline (sim/output/timeline.hpp), the decision log (sim/output/explain.hpp) and the records
// gradients.csv, decisions.csv and the policy's facts (sim/output/csv_observers.hpp). The simulation calls it
// at the few points that matter, with one-line hooks that cost a null-pointer test when nothing observes
// (RunOptions::observer is null): a normal run's speed and result hash are unchanged. Observers only read:
// they never change the simulation's state, draws or event order.
//
// Worker activity: every worker starts at time 0 fetching its first parameters (kPull) and then
// moves from one activity to the next; activity(t, w, a) says that w's previous activity ended and
// `a` began at t. finish(end) closes every open activity. kPush covers the push from its departure
// to its application at the server (link, latency and queueing included), kPull the parameters'
// way back; under the cache modes (lazy SSP, ESSP) and VAP transfers run while the worker
// computes, so its activities are compute and wait only (their transfers show on the wire).

#include <cstdint>
#include <string>
#include <vector>

#include "base/sim_time.hpp"
#include "sim/output/run_result.hpp"

namespace stalesim {

class ClockTable;
class SyncPolicy;
struct GradientInfo;

enum class Activity { kCompute, kWait, kPush, kPull };
const char* to_string(Activity a);

// Why a worker waits.
enum class WaitCause {
  kPolicy,      // pull mode: the policy refused its next clock (BSP, SSP, DSSP)
  kStaleCache,  // cache modes: its copy is older than c - s; it waits for fresher parameters
  kValueBound,  // VAP: sending its update would exceed the value bound v
};

// A transfer on the server's link, in its direction: pushes in, pulls out (full duplex, one FIFO
// per direction, DESIGN.md section 3).
enum class WireKind { kPush, kPull };

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Once, before the first event. `clocks` and `policy` outlive the run and may be read by any
  // later call (they show the state at that call). `profiles` names each worker's device.
  virtual void start(const ClockTable& clocks, const SyncPolicy& policy,
                     const std::vector<std::string>& profiles) {
    (void)clocks, (void)policy, (void)profiles;
  }
  virtual void activity(SimTime now, int32_t worker, Activity a) { (void)now, (void)worker, (void)a; }
  // w starts waiting at `clock` (its own clock: pushes applied in pull mode, pushes sent in the
  // cache modes and VAP). `have`: the cache's server clock (kStaleCache), else unused.
  virtual void blocked(SimTime now, int32_t worker, WaitCause cause, int64_t clock, int64_t have) {
    (void)now, (void)worker, (void)cause, (void)clock, (void)have;
  }
  // The server's link carries a message for `worker` over [start, end].
  virtual void wire(SimTime start, SimTime end, int32_t worker, WireKind kind, int64_t bytes) {
    (void)start, (void)end, (void)worker, (void)kind, (void)bytes;
  }
  // The server applied a gradient (`version` is the server version after it); called after the
  // policy has seen the push.
  virtual void update(SimTime now, int32_t worker, int64_t version, int64_t staleness,
                      int64_t missed_updates) {
    (void)now, (void)worker, (void)version, (void)staleness, (void)missed_updates;
  }
  // The server applied a gradient (`info`: what it was computed on; `step`: the rule's step
  // factor); called before update() for the same push.
  virtual void gradient(SimTime now, const GradientInfo& info, double step) {
    (void)now, (void)info, (void)step;
  }
  virtual void evaluation(const MetricsRow& row) { (void)row; }
  // Off the star (sim/network/flows.hpp): the link direction `link` ("tor0->spine") now carries
  // `flows` flows using `utilisation` (0 to 1) of its bandwidth; called when either changes.
  virtual void link_load(SimTime now, const std::string& link, double utilisation, int32_t flows) {
    (void)now, (void)link, (void)utilisation, (void)flows;
  }
  // The run ended at `end`: close open activities.
  virtual void finish(SimTime end) { (void)end; }
};

// Forwards every call to each observer in order.
class ObserverList final : public RunObserver {
 public:
  void add(RunObserver* o) {
    if (o) list_.push_back(o);
  }
  bool empty() const { return list_.empty(); }
  void start(const ClockTable& c, const SyncPolicy& p, const std::vector<std::string>& profiles) override {
    for (auto* o : list_) o->start(c, p, profiles);
  }
  void activity(SimTime now, int32_t w, Activity a) override {
    for (auto* o : list_) o->activity(now, w, a);
  }
  void blocked(SimTime now, int32_t w, WaitCause cause, int64_t clock, int64_t have) override {
    for (auto* o : list_) o->blocked(now, w, cause, clock, have);
  }
  void wire(SimTime start, SimTime end, int32_t w, WireKind kind, int64_t bytes) override {
    for (auto* o : list_) o->wire(start, end, w, kind, bytes);
  }
  void update(SimTime now, int32_t w, int64_t version, int64_t cs, int64_t ss) override {
    for (auto* o : list_) o->update(now, w, version, cs, ss);
  }
  void gradient(SimTime now, const GradientInfo& info, double step) override {
    for (auto* o : list_) o->gradient(now, info, step);
  }
  void evaluation(const MetricsRow& row) override {
    for (auto* o : list_) o->evaluation(row);
  }
  void link_load(SimTime now, const std::string& link, double utilisation, int32_t flows) override {
    for (auto* o : list_) o->link_load(now, link, utilisation, flows);
  }
  void finish(SimTime end) override {
    for (auto* o : list_) o->finish(end);
  }

 private:
  std::vector<RunObserver*> list_;
};

}  // namespace stalesim
