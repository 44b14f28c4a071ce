#pragma once
// BSP, bulk synchronous parallel (Valiant, "A bridging model for parallel computation", CACM
// 1990): a worker may start clock c+1 only when every worker has pushed clock c, so it reads
// parameters holding every update of clock c. Staleness is always 0.

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class BspPolicy final : public SyncPolicy {
 public:
  std::string bound_text() const override { return "BSP (s = 0)"; }
  bool may_start(int32_t w, const ClockTable& clocks) override {
    return clocks.clock(w) <= clocks.min_clock();
  }
  std::optional<int64_t> clock_bound() const override { return 0; }
  bool lockstep() const override { return true; }
};

}  // namespace stalesim
