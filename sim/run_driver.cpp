#include "sim/run_driver.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <string>

#include "base/errors.hpp"
#include "sim/plan/run_plan.hpp"
#include "sim/worker/core.hpp"

namespace stalesim {

RunDriver::RunDriver(WorkerCore& core, std::function<std::span<const float>()> params)
    : core_(core), params_(std::move(params)) {
  if (!core_.math()) return;
  const Scenario& s = core_.scenario();
  const DataSplit& d = core_.data();
  const int64_t m = s.eval.test_samples > 0 ? std::min(s.eval.test_samples, d.test.size()) : d.test.size();
  eval_indices_.resize(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) eval_indices_[static_cast<size_t>(i)] = static_cast<int32_t>(i);
}

RunDriver::~RunDriver() = default;

void RunDriver::start(RunObserver* observer, bool record_gradients) {
  record_gradients_ = record_gradients;
  events_.add(observer);
  if (record_gradients) events_.add(&gradients_);
  core_.set_observer(events_.empty() ? nullptr : &events_);
  core_.network().observe(core_.observer());
  if (core_.observer()) {
    std::vector<std::string> profiles;
    for (const auto& w : core_.workers()) profiles.push_back(core_.profile_of(w));
    core_.observer()->start(core_.clocks(), core_.policy(), profiles);
  }
  policy_records_.start(core_.clocks(), core_.policy(), {});
  if (core_.math())
    evals_ = std::make_unique<Evaluations>(core_.model(), core_.data().test, eval_indices_,
                                           [this](MetricsRow& row) { complete_metrics(row); });
}

void RunDriver::start_pool(int threads, bool allowed, const RunObserver* observer) {
  GradientPool* pool = core_.start_pool(threads, allowed);
  const StopSpec& stop = core_.scenario().stop;
  if (pool && !observer && !(stop.at_target && stop.target_accuracy)) evals_->use_pool(pool, 2);
}

void RunDriver::schedule_first_evaluation() { core_.engine().schedule(SimTime::zero(), kEvaluate, 0, 0); }

void RunDriver::record_metrics(SimTime now) {
  MetricsRow row = core_.take_metrics_row(now);
  if (core_.math()) return evals_->add(std::move(row), params_());  // complete_metrics, now or later
  complete_metrics(row);
}

void RunDriver::complete_metrics(MetricsRow& row) {
  RunResult& result = core_.result();
  const StopSpec& stop = core_.scenario().stop;
  if (core_.observer()) core_.observer()->evaluation(row);
  result.metrics.push_back(row);
  if (row.test_accuracy && stop.target_accuracy && !result.time_to_target_s &&
      *row.test_accuracy >= *stop.target_accuracy) {
    result.time_to_target_s = row.time.seconds();
    if (stop.at_target) {
      result.stop_reason = StopReason::kTargetAccuracy;
      core_.stop();
    }
  }
}

bool RunDriver::needs_final_row(SimTime end) {
  const RunResult& result = core_.result();
  return result.status != RunStatus::kDiverged &&
         (result.metrics.empty() || result.metrics.back().time != end ||
          result.metrics.back().server_version != core_.store().version());
}

void RunDriver::on_evaluate(uint64_t k) {
  Engine& engine = core_.engine();
  record_metrics(engine.now());
  if (core_.stopped()) return;
  const double every_s = core_.scenario().eval.every_s;
  if (k + 1 >= kMaxEvaluations)
    throw ScenarioError(
        fmt::format("/eval/every_s: {:g} s gives more than {} evaluations by t={:g} s; raise eval.every_s",
                    every_s, kMaxEvaluations, engine.now().seconds()));
  int64_t next = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(k + 1), SimTime::from_seconds(every_s).ns(), &next))
    throw TimeRangeError("the next evaluation (eval.every_s): past the simulator's time range");
  engine.schedule(SimTime::from_ns(next), kEvaluate, 0, k + 1);
}

void RunDriver::deliver_ready() {
  if (evals_) evals_->deliver_ready();
}

void RunDriver::finish(SimTime end, const std::function<void()>& close_workers, bool params_known) {
  RunResult& result = core_.result();
  if (core_.observer()) core_.observer()->finish(end);
  policy_records_.finish(end);
  if (evals_) {
    evals_->use_pool(nullptr, 1);  // the rows still in flight, before the pool goes
    result.background_evaluations = evals_->background_count();
  }
  core_.end_pool();
  close_workers();  // every worker's open interval closes at `end`
  result.end_time = end;
  // A final evaluation at the end, unless the last row already describes this state.
  if (params_known && needs_final_row(end)) record_metrics(end);
  core_.finish_result();
  result.policy_facts = policy_records_.take_facts();
  result.recorded["decisions.csv"] = policy_records_.take_decisions_csv();
  if (record_gradients_) result.recorded["gradients.csv"] = gradients_.take();
}

}  // namespace stalesim
