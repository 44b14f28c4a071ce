// gradients.csv and decisions.csv as observers (sim/csv_observers.hpp).

#include "sim/csv_observers.hpp"

#include <fmt/format.h>

#include "sim/policies/sync_policy.hpp"
#include "sim/rules/learning_rule.hpp"

namespace stalesim {

void GradientRecorder::gradient(SimTime now, const GradientInfo& info, double step) {
  csv_ += fmt::format("{},{},{},{},{},{}\n", now.seconds(), info.worker, info.version_read,
                      info.version_apply, info.step_staleness(), step);
}

void DecisionRecorder::start(const ClockTable&, const SyncPolicy& policy, const std::vector<std::string>&) {
  policy_ = &policy;
}

void DecisionRecorder::finish(SimTime) {
  if (policy_) csv_ = policy_->decisions_csv();
}

}  // namespace stalesim
