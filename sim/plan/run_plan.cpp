#include "sim/plan/run_plan.hpp"

#include <algorithm>
#include <cmath>

namespace stalesim {
namespace {

// Every worker reads the same version each clock: the policy's answer (SyncPolicy::lockstep, asked
// through PolicySpec::lockstep, sim/policies/sync_policy.cpp); no list of policies here.
bool lockstep_of(const Scenario& s) { return s.policy.lockstep(); }

}  // namespace

bool defers_gradients(const Scenario& s, double factor_floats, double parameters) {
  // Only pull mode reads a fresh version at every clock and computes the gradient when the push is
  // applied; a rule that gates transfers or reads the parameters keeps the worker's copy.
  const auto& rule = traits(s.optimizer.rule);
  if (!s.policy.pulls_every_clock() || rule.gates_transfers || rule.reads_params ||
      s.compute.timing == Timing::kMeasured || s.compute.backend != Backend::kCpu)
    return false;
  const double n = s.cluster.worker_count();
  double sharing = 1;  // workers that read one version
  if (lockstep_of(s)) sharing = n;
  if (traits(s.policy.type).averages_pushes) sharing = std::floor(n / static_cast<double>(s.policy.n));
  return factor_floats * std::max(sharing, 1.0) < parameters;
}

ModelShape scenario_model_shape(const Scenario& s) { return traits(s.data.dataset).shape(s.data); }

ModelSize scenario_model_size(const Scenario& s) { return model_size(s.model, scenario_model_shape(s)); }

RunPlan plan_run(const Scenario& s) {
  RunPlan p;
  p.shape = scenario_model_shape(s);
  p.size = model_size(s.model, p.shape);
  p.cost = find_cost_architecture(s.model.cost);
  p.lockstep = lockstep_of(s);
  if (traits(s.model.type).dense) {
    double rows = p.shape.classes;
    if (s.model.type == ModelType::kMlp)
      for (int64_t h : s.model.hidden) rows += 2.0 * static_cast<double>(h);
    p.deferred_floats = static_cast<double>(s.optimizer.batch_size) * rows;
    p.defers_gradients = defers_gradients(s, p.deferred_floats, p.size.parameters);
  }
  return p;
}

}  // namespace stalesim
