#pragma once
// ASP, asynchronous parallel (the Hogwild!/Downpour style: Recht et al., NIPS 2011; Dean et al.,
// NIPS 2012): a worker never waits; it reads whatever the server holds.

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class AspPolicy final : public SyncPolicy {
 public:
  std::string bound_text() const override { return "ASP (no bound)"; }
  bool may_start(int32_t, const ClockTable&) override { return true; }
  std::optional<int64_t> clock_bound() const override { return std::nullopt; }
};

}  // namespace stalesim
