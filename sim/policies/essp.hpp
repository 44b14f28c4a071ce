#pragma once
// ESSP(s), eager stale synchronous parallel (Dai, Kumar, Wei, Ho, Gibson, Xing, "High-performance
// distributed ML at scale through parameter server consistency models", AAAI 2015, arXiv
// 1410.8043; Petuum Bosen's SSPPush). SSP's bound, but whenever the server clock advances the
// server pushes the parameters to every worker, stamped with the new clock, instead of waiting to
// be asked. A worker computes from its copy unless it is older than c - s, in which case it waits
// for the next push. Reads are mostly 0 to 1 clocks old instead of close to s; the bound stays;
// the server sends about workers x model size more per clock.

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class EsspPolicy final : public SyncPolicy {
 public:
  // REQUIRES: staleness >= 0.
  explicit EsspPolicy(int64_t staleness) : s_(staleness) {}
  CacheMode cache_mode() const override { return CacheMode::kEager; }
  bool may_start(int32_t w, const ClockTable& clocks) override {
    return clocks.clock(w) - clocks.min_clock() <= s_;
  }
  std::optional<int64_t> clock_bound() const override { return s_; }

 private:
  int64_t s_;
};

}  // namespace stalesim
