#pragma once
// SyncPolicy: the server's consistency model (DESIGN.md sections 4 and 6). It decides when a
// worker may start its next clock. It sees clocks and times, never parameter values.
//
// Clocks: clocks[w] is the number of iterations worker w has completed and pushed (the push has
// been applied at the server). The server clock is the minimum worker clock. A worker asks to
// start its next iteration right after its push is applied (push and pull travel as one RPC);
// when the policy refuses, the worker waits at the server until a later push makes may_start true.
//
// Adding a policy: its header in sim/policies/ and its registration row (sim/algorithms.hpp,
// PolicyTraits) in sync_policy.cpp; CONTRIBUTING.md shows an example.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sim_time.hpp"
#include "sim/scenario/spec.hpp"

namespace stalesim {

// Worker clocks, maintained by the simulation; min and max are kept up to date in O(1)
// amortized per push.
class ClockTable {
 public:
  explicit ClockTable(int32_t workers);
  int32_t workers() const { return static_cast<int32_t>(clocks_.size()); }
  int64_t clock(int32_t w) const { return clocks_[static_cast<size_t>(w)]; }
  int64_t min_clock() const { return min_; }
  int64_t max_clock() const { return max_; }
  // Worker w completed one more clock. Returns true when the minimum clock rose.
  bool advance(int32_t w);
  // The lowest-numbered live worker at the minimum clock (the "slowest"). O(log n): a tournament
  // tree over (clock, id), built on the first call and kept up to date from then on.
  int32_t slowest() const;
  // Crash handling "drop" (issue 5): worker w leaves the minimum-clock computation until rejoin().
  // Returns true when the minimum clock rose. REQUIRES: w is live and not the last live worker.
  bool drop(int32_t w);
  // Worker w counts again, at max(its clock, the minimum clock). REQUIRES: w was dropped.
  void rejoin(int32_t w);
  bool dropped(int32_t w) const { return !dropped_.empty() && dropped_[static_cast<size_t>(w)]; }

 private:
  std::vector<int64_t> clocks_;
  std::deque<int64_t> at_clock_;  // at_clock_[c - min_] = workers whose clock is c
  int64_t min_ = 0;
  int64_t max_ = 0;
  std::vector<bool> dropped_;  // sized on the first drop
  // Tournament tree for slowest(): leaves at [size_, 2 size_), each inner node the better of its
  // children; empty until slowest() is first called.
  mutable std::vector<int32_t> tree_;
  mutable size_t size_ = 0;
  bool better(int32_t a, int32_t b) const;
  void update_tree(int32_t w);
};

// CacheMode: sim/algorithms.hpp.

// One call of a policy's synchronization controller (DSSP's, sim/policies/dssp.hpp), as data: the
// observers put it in words, decisions.csv (sim/output/csv_observers.hpp) and the explain log and trace
// (sim/output/explain.hpp).
struct ControllerDecision {
  SimTime time;
  int32_t worker = 0;
  int64_t clock = 0;    // the worker's clock when the controller was asked
  int64_t granted = 0;  // r*
  SimTime fastest_interval;
  SimTime slowest_interval;
  SimTime predicted_wait;  // |F_r* - S_j| for the chosen k
  // The clock gap (worker clock - minimum clock) when the controller was asked, > s_L, and the
  // threshold the decision put in force: the largest gap at which the worker may still start a
  // clock before it is stopped again, gap - 1 + r* (plus one for a literal grant of r* > 0).
  // s_L + r* at a first decision (gap s_L + 1); up to s_L + r_max after repeated grants.
  int64_t gap = 0;
  int64_t threshold = 0;
  // For explanations: the slowest worker and its clock, and the predicted push times that chose
  // r*: F_r* (the fastest's) and S_j (the slowest's), j in [1, r_max].
  int32_t slowest = 0;
  int64_t slowest_clock = 0;
  SimTime fastest_at;
  SimTime slowest_at;
  int64_t slowest_step = 0;  // j; 0 when there was no estimate (fewer than two pushes)
};

// A bound on the values a worker's updates hold in transit (VAP, sim/policies/vap.hpp). The policy
// sees clocks only; the worker protocol that sees the values (sim/worker/vap_protocol.cpp) asks the
// bound before it sends an update and tells the gate what it did, for the policy's facts.
class ValueGate {
 public:
  virtual double value_bound() const = 0;
  // An update sent with in-transit norm `norm` afterwards; `oversized` when it went alone above v.
  virtual void note_send(double norm, bool oversized) = 0;
  // An update held back.
  virtual void note_hold() = 0;

 protected:
  ~ValueGate() = default;
};

class SyncPolicy {
 public:
  virtual ~SyncPolicy() = default;
  virtual CacheMode cache_mode() const { return CacheMode::kPullEveryIteration; }
  // policy.type's value, from the policy's registration row (make_policy sets it); "" for a
  // policy built otherwise (a test's).
  std::string name() const;
  // May worker w (which has completed clocks.clock(w) iterations) start its next one?
  virtual bool may_start(int32_t w, const ClockTable& clocks) = 0;
  // Called after the server applied a push of worker w and advanced its clock.
  virtual void on_push(int32_t w, SimTime now, const ClockTable& clocks) { (void)w, (void)now, (void)clocks; }
  // True when waiting workers must be re-checked after every push; false when only a rise of
  // the minimum clock can release them (BSP, SSP).
  virtual bool recheck_every_push() const { return false; }
  // The largest gap (clock of a worker starting an iteration minus the minimum clock) the policy
  // allows; nullopt when unbounded (ASP).
  virtual std::optional<int64_t> clock_bound() const = 0;
  // Whether every worker reads the same version each clock and so goes at the slowest worker's
  // pace, clock by clock (the estimates, sim/estimate/, model such a run so): BSP, and SSP and
  // DSSP with no slack. Not ESSP(0): its server pushes copies, which the estimates model apart.
  virtual bool lockstep() const { return false; }
  // The value bound the workers' sends obey (VAP); null when the policy bounds clocks only. Its
  // worker protocol is VAP's (make_protocol, sim/worker/protocol.cpp).
  virtual ValueGate* value_gate() { return nullptr; }
  // The collective that replaces the server (all-reduce); nullopt for a parameter-server policy.
  // Its worker protocol is all-reduce's (make_protocol, sim/worker/protocol.cpp).
  virtual std::optional<AllReduce> all_reduce() const { return std::nullopt; }
  // Policy-specific facts for summary.json's "policy" object (null when none).
  virtual nlohmann::json facts() const { return nullptr; }
  // Every call of the policy's controller so far, oldest first; null when it has none (all but
  // DSSP). The run's observers read it: decisions.csv, the explain log, the trace.
  virtual const std::vector<ControllerDecision>* controller_decisions() const { return nullptr; }
  // The bound in words for explanations: "s = 3" (the default, from clock_bound(); "policy NAME"
  // when unbounded), "BSP (s = 0)", "s_L = 3, r_max = 12", "v = 0.5".
  virtual std::string bound_text() const;
  // Words appended to "worker w waits at clock c: slowest is ..., <bound>" when the policy holds
  // worker w back at `clock`; `noted_clock` is w's clock at its latest controller call (-1: none).
  virtual std::string wait_detail(int32_t w, int64_t clock, const ClockTable& clocks,
                                  int64_t noted_clock) const {
    (void)w, (void)clock, (void)clocks, (void)noted_clock;
    return {};
  }

 private:
  friend std::unique_ptr<SyncPolicy> make_policy(const PolicySpec& spec, int32_t workers);
  std::optional<PolicyType> type_;
};

// The policy `spec` names, built by its registration row (sim/algorithms.hpp); `workers` sizes
// per-worker state.
std::unique_ptr<SyncPolicy> make_policy(const PolicySpec& spec, int32_t workers);

}  // namespace stalesim
