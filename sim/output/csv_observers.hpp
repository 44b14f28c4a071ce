#pragma once
// Observers that write a run's records (sim/output/observer.hpp): gradients.csv, one row per applied
// gradient (--record gradients); and the policy's records, decisions.csv (the calls of DSSP's
// controller, SyncPolicy::controller_decisions) and summary.json's "policy" facts.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/output/observer.hpp"

namespace stalesim {

class GradientRecorder final : public RunObserver {
 public:
  void gradient(SimTime now, const GradientInfo& info, double step) override;
  // The CSV text: a header line, then time, worker, versions, missed updates and step per gradient.
  std::string take() { return std::move(csv_); }

 private:
  std::string csv_ = "virtual_time_s,worker,version_read,version_apply,missed_updates,step\n";
};

// Needs only start() and finish(): the policy's records are read once the run has ended.
class PolicyRecorder final : public RunObserver {
 public:
  void start(const ClockTable& clocks, const SyncPolicy& policy,
             const std::vector<std::string>& profiles) override;
  void finish(SimTime end) override;
  // decisions.csv: a header line, then time, worker, clock, r*, intervals, predicted wait, gap and
  // threshold per controller call; empty when the policy has no controller.
  std::string take_decisions_csv() { return std::move(csv_); }
  // summary.json's "policy" object: SyncPolicy::facts(), null when the policy states none.
  nlohmann::json take_facts() { return std::move(facts_); }

 private:
  const SyncPolicy* policy_ = nullptr;
  std::string csv_;
  nlohmann::json facts_;
};

}  // namespace stalesim
