#pragma once
// DSSP(s_L, r_max), dynamic stale synchronous parallel (Zhao, An, Liu, Chen, "Dynamic Stale
// Synchronous Parallel Distributed Training for Deep Learning", ICDCS 2019, arXiv 1908.11848).
// SSP whose threshold moves at run time inside [s_L, s_L + r_max]. On a push from worker p:
//   - if p still holds extra clocks granted earlier, it spends one and goes on;
//   - else if t[p] - min(t) <= s_L it goes on (SSP(s_L));
//   - else if p is the fastest worker, the synchronization controller picks r* in [0, r_max]:
//     from the fastest's and slowest's last two push times it predicts the fastest's next pushes
//     F_k = last_f + k I_f (k = 0..r_max) and the slowest's S_j = last_s + j I_s (j = 1..r_max),
//     and takes the first k whose F_k is closest to any S_j: the fast worker then stops where the
//     slow one is about to catch up. r* > 0 lets p go on;
//   - else p waits; waiting workers are re-checked on every push.
// Bound: with "bounded" grants the grant counts as the first extra clock and the gap never exceeds
// s_L + r_max; the paper's literal reading ("literal") lets it reach s_L + r_max + 1. A fastest
// worker that has spent its grant and is still beyond s_L may be asked about again; its r* is
// then capped (k <= s_L + r_max + 1 - gap) so that the bound holds: without the cap, repeated
// grants would let the gap grow without limit, which the design's bound excludes.
// "unbounded" is the paper's pseudo-code (Algorithm 1 and the controller) read literally: the
// fastest worker beyond s_L asks the controller again after each grant is spent, r* is capped by
// r_max alone, and grants add up without a cumulative cap. It gives up SSP's staleness bound (no
// clock_bound()): under a steady speed gap the fast workers keep asking, the controller keeps
// granting, and the run approaches ASP's throughput while reads grow staler without limit.
// When the slowest worker has pushed fewer than twice, its interval is taken as the time since its
// last push (or since the start): it is at least that slow.

#include <string>
#include <vector>

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class DsspPolicy final : public SyncPolicy {
 public:
  // How a grant counts (policy.dssp_grant): see the header comment.
  using Grant = DsspGrant;  // sim/scenario/options.hpp
  // REQUIRES: s_lower >= 0, r_max >= 0, workers >= 1 (the scenario loader checks them).
  DsspPolicy(int64_t s_lower, int64_t r_max, Grant grant, int32_t workers);
  void on_push(int32_t w, SimTime now, const ClockTable& clocks) override;
  bool may_start(int32_t w, const ClockTable& clocks) override;
  bool recheck_every_push() const override { return true; }
  std::optional<int64_t> clock_bound() const override {
    if (grant_ == Grant::kUnbounded) return std::nullopt;
    return s_ + r_max_ + (grant_ == Grant::kLiteral ? 1 : 0);
  }
  bool lockstep() const override { return s_ == 0 && r_max_ == 0; }
  nlohmann::json facts() const override;
  const std::vector<ControllerDecision>* controller_decisions() const override { return &decisions_; }
  std::string bound_text() const override;
  // Why a worker beyond s_L got no grant: not the fastest, the controller granted none, or a
  // grant would break the bound.
  std::string wait_detail(int32_t w, int64_t clock, const ClockTable& clocks,
                          int64_t noted_clock) const override;

  // One call of the synchronization controller.
  using Decision = ControllerDecision;
  const std::vector<Decision>& decisions() const { return decisions_; }

 private:
  struct WorkerState {
    int64_t extra = 0;  // granted clocks still to spend
    int64_t pushes = 0;
    SimTime last, prev;  // the last two push times (valid when pushes >= 1, >= 2)
    bool fresh = false;  // `decision` was made by on_push for the may_start that follows
    bool decision = false;
  };
  bool decide(int32_t w, const ClockTable& clocks);
  // r* in [0, cap].
  int64_t controller(int32_t fastest, int32_t slowest, const ClockTable& clocks, int64_t cap);

  int64_t s_;
  int64_t r_max_;
  Grant grant_;
  std::vector<WorkerState> w_;
  std::vector<Decision> decisions_;
  SimTime now_;
};

}  // namespace stalesim
