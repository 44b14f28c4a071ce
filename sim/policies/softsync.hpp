#pragma once
// n-softsync (Zhang, Gupta, Lian, Liu, IJCAI 2016, arXiv 1511.05950): workers never wait, and the
// server applies the average of every c = floor(workers / n) gradients it receives as one update
// (ServerOptimizer does the averaging). n = 1 is close to BSP (one update per workers gradients),
// n = workers is ASP. Pair it with optimizer.rule "sasgd" for the paper's staleness-dependent step.

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class SoftsyncPolicy final : public SyncPolicy {
 public:
  explicit SoftsyncPolicy(int64_t n) : n_(n) {}
  bool may_start(int32_t, const ClockTable&) override { return true; }
  std::optional<int64_t> clock_bound() const override { return std::nullopt; }
  nlohmann::json facts() const override { return {{"type", "softsync"}, {"n", n_}}; }

 private:
  int64_t n_;
};

}  // namespace stalesim
