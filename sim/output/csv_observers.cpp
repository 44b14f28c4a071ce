// gradients.csv, decisions.csv and the policy's facts as observers (sim/output/csv_observers.hpp).

#include "sim/output/csv_observers.hpp"

#include <fmt/format.h>

#include "sim/policies/sync_policy.hpp"
#include "sim/rules/learning_rule.hpp"

namespace stalesim {

void GradientRecorder::gradient(SimTime now, const GradientInfo& info, double step) {
  csv_ += fmt::format("{},{},{},{},{},{}\n", now.seconds(), info.worker, info.version_read,
                      info.version_apply, info.missed_updates(), step);
}

void PolicyRecorder::start(const ClockTable&, const SyncPolicy& policy, const std::vector<std::string>&) {
  policy_ = &policy;
}

void PolicyRecorder::finish(SimTime) {
  if (!policy_) return;
  facts_ = policy_->facts();
  const std::vector<ControllerDecision>* calls = policy_->controller_decisions();
  if (!calls) return;
  csv_ =
      "virtual_time_s,worker,clock,granted,fastest_interval_s,slowest_interval_s,predicted_wait_s,gap,"
      "effective_threshold\n";
  for (const auto& d : *calls)
    csv_ += fmt::format("{},{},{},{},{},{},{},{},{}\n", d.time.seconds(), d.worker, d.clock, d.granted,
                        d.fastest_interval.seconds(), d.slowest_interval.seconds(),
                        d.predicted_wait.seconds(), d.gap, d.threshold);
}

}  // namespace stalesim
