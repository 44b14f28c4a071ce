#pragma once
// Scenario: the plain values of one run, every default resolved (DESIGN.md section 1; style.md
// habits 5-7). Loading parses strictly, once (sim/scenario/load.hpp): unknown keys are errors with
// a "did you mean", every value is range-checked, and errors name the file, the JSON path, the
// value and what is allowed. After loading nothing touches JSON; scenario_to_json()
// (sim/scenario/to_json.hpp) writes the resolved scenario back for the manifest, and loading that
// JSON again yields an equal Scenario. The specs that need no model are in sim/scenario/spec.hpp, the
// data spec in sim/data/dataset.hpp.

#include <cstdint>
#include <string>

#include "models/model.hpp"
#include "sim/data/dataset.hpp"
#include "sim/scenario/cluster_spec.hpp"
#include "sim/scenario/spec.hpp"

namespace stalesim {

struct Scenario {
  std::string name;  // default: the file name without .json
  uint64_t seed = 1;
  std::string comment;  // free text (paper, figure, what is scaled down)
  DataSpec data;
  ModelSpec model;
  OptimizerSpec optimizer;
  PolicySpec policy;
  ClusterSpec cluster;
  ComputeSpec compute;
  StopSpec stop;
  EvalSpec eval;
  bool operator==(const Scenario&) const = default;
};

}  // namespace stalesim
