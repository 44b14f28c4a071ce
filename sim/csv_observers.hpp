#pragma once
// Observers that write a run's CSV records (sim/observer.hpp): gradients.csv, one row per applied
// gradient (--record gradients), and decisions.csv, the policy's decision log (DSSP's controller).

#include <string>
#include <vector>

#include "sim/observer.hpp"

namespace stalesim {

class GradientRecorder final : public RunObserver {
 public:
  void gradient(SimTime now, const GradientInfo& info, double step) override;
  // The CSV text: a header line, then time, worker, versions, tau and step per gradient.
  std::string take() { return std::move(csv_); }

 private:
  std::string csv_ = "virtual_time_s,worker,version_read,version_apply,tau,step\n";
};

// Needs only start() and finish(): the log is the policy's, read once the run has ended.
class DecisionRecorder final : public RunObserver {
 public:
  void start(const ClockTable& clocks, const SyncPolicy& policy,
             const std::vector<std::string>& profiles) override;
  void finish(SimTime end) override;
  // The CSV text with a header line; empty when the policy keeps no log.
  std::string take() { return std::move(csv_); }

 private:
  const SyncPolicy* policy_ = nullptr;
  std::string csv_;
};

}  // namespace stalesim
