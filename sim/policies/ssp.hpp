#pragma once
// SSP(s), stale synchronous parallel (Ho, Cipar, Cui, Kim, Lee, Gibbons, Gibson, Ganger, Xing,
// "More effective distributed ML via a stale synchronous parallel parameter server", NIPS 2013;
// semantics of Petuum Bosen). A worker that has completed c clocks may start its next one while
// c - min_clock <= s, so it reads parameters holding every update of clocks <= c - s - 1 plus its
// own. The fastest worker runs at most s clocks ahead of the slowest; s = 0 is BSP.
// Cache behaviour (policy.cache): pull every iteration (the DSSP paper's MXNet style), or lazy
// (Bosen): a worker at clock c computes from its cached copy while the copy's server clock is
// >= c - s, and fetches only when it is not. Either way the worker sees its own updates.

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class SspPolicy final : public SyncPolicy {
 public:
  // REQUIRES: staleness >= 0.
  explicit SspPolicy(int64_t staleness, CacheMode cache = CacheMode::kPullEveryIteration)
      : s_(staleness), cache_(cache) {}
  CacheMode cache_mode() const override { return cache_; }
  bool may_start(int32_t w, const ClockTable& clocks) override {
    return clocks.clock(w) - clocks.min_clock() <= s_;
  }
  std::optional<int64_t> clock_bound() const override { return s_; }
  bool lockstep() const override { return s_ == 0; }
  int64_t staleness() const { return s_; }

 private:
  int64_t s_;
  CacheMode cache_;
};

}  // namespace stalesim
