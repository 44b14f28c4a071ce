#pragma once
// The run plan (DESIGN.md section 1): what a scenario implies about how it runs, decided once from
// the scenario alone, below both the run (sim/simulation.*, sim/worker/) and the estimates made
// before it (sim/estimate/). The run is handed the plan and the estimator reads the same one, so
// neither asks the other how to run: the model's size, whether workers defer their gradients,
// whether the policy runs in lock step, and which cost architecture (if any) times the run.

#include <cstdint>
#include <optional>

#include "models/cost_arch.hpp"
#include "models/model.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

struct RunPlan {
  ModelShape shape;  // the data's shape (DatasetTraits::shape, sim/data/dataset.hpp)
  ModelSize size;    // model_size (models/model.hpp) of the math model on that shape
  // model.cost's architecture, which times every iteration and sizes every message; nullopt for
  // "derived" (the model's own time and sizes).
  std::optional<CostArchitecture> cost;
  // Every worker reads the same version each clock: bsp, and ssp or dssp with no slack
  // (decided in one place, run_plan.cpp's lockstep_of).
  bool lockstep = false;
  // Workers begin a gradient when their parameters are read and hold its factors instead of the
  // parameters (defers_gradients below), for the dense classifier: what the run does and what the
  // memory estimate counts.
  bool defers_gradients = false;
  // Floats of one deferred gradient besides its batch indices: each layer's delta and the hidden
  // activations (DenseClassifier::deferred_floats); 0 for other models.
  double deferred_floats = 0;
};

// The most evaluations one run makes (eval.every_s over the virtual time): the estimate
// (check_feasible, sim/estimate/estimate.hpp) and the simulation each refuse a run past it.
inline constexpr uint64_t kMaxEvaluations = 10'000'000;

// REQUIRES: a loaded (validated) scenario.
RunPlan plan_run(const Scenario& s);

// Deferred gradients (Simulation; RunOptions::defer_gradients): whether this scenario's policy,
// rule, backend and timing let a worker begin its gradient when its parameters are read and hold
// the gradient's `factor_floats` floats instead of the `parameters` it read. The model must also
// be able to split its gradient (Model::can_defer_gradient: the CPU mlp and softmax). Off where the
// parameters read are needed later (lazy SSP, ESSP, VAP, B-FASGD, DC-ASGD, measured timing), and
// where the factors of the workers that share one version outweigh that version: all of them
// under BSP (and SSP or DSSP that reduce to it), floor(workers / n) under n-softsync, one
// elsewhere. plan_run decides by this function.
bool defers_gradients(const Scenario& s, double factor_floats, double parameters);

// The shape of the scenario's data, from its spec alone (nothing is loaded), and model_size of
// the scenario's math model on it: RunPlan::shape and RunPlan::size.
ModelShape scenario_model_shape(const Scenario& s);
ModelSize scenario_model_size(const Scenario& s);

}  // namespace stalesim
