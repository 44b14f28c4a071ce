#pragma once
// VAP(v), value-bounded asynchronous parallel (Wei, Dai, Kumar, Zheng, Ho, Xing, "Managed
// communication and consistency for fast data-parallel iterative analytics", 2013; Dai et al.,
// AAAI 2015). A worker's updates that not every other worker has yet received are "in transit".
// A worker may not send an update that would take the infinity norm of its in-transit sum above
// v; it holds the update until its older updates have reached everyone. The simulator sees every
// copy, so it enforces this exactly: an idealized model, useful as a reference line.
//
// Here an update of worker p applied at server version V has reached worker q once q has
// received a copy of the parameters of a version > V. A holding worker asks the server for a
// fresh copy (a read, counted in bytes.pull); without that, two holders could each wait for the
// other's next read forever. An update whose own norm exceeds v is sent alone once nothing else
// is in transit (the bound cannot hold for it), and counted as oversized.
// Clocks are not bounded: the start rule is ASP's.

#include <fmt/format.h>

#include <algorithm>

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class VapPolicy final : public SyncPolicy, public ValueGate {
 public:
  // REQUIRES: value_bound > 0.
  explicit VapPolicy(double value_bound) : v_(value_bound) {}
  bool may_start(int32_t, const ClockTable&) override { return true; }
  std::optional<int64_t> clock_bound() const override { return std::nullopt; }
  std::string bound_text() const override { return fmt::format("v = {}", v_); }
  ValueGate* value_gate() override { return this; }

  // The value gate, asked by VAP's worker protocol (sim/worker/vap_protocol.cpp), which sees the values.
  double value_bound() const override { return v_; }
  void note_send(double norm, bool oversized) override {
    if (oversized)
      ++oversized_;
    else
      max_norm_ = std::max(max_norm_, norm);
  }
  void note_hold() override { ++holds_; }
  double max_in_transit_norm() const { return max_norm_; }
  int64_t oversized() const { return oversized_; }

  nlohmann::json facts() const override {
    return {{"type", "vap"},
            {"value_bound", v_},
            {"max_in_transit_norm", max_norm_},
            {"holds", holds_},
            {"oversized_updates", oversized_}};
  }

 private:
  double v_;
  double max_norm_ = 0.0;
  int64_t holds_ = 0;
  int64_t oversized_ = 0;
};

}  // namespace stalesim
