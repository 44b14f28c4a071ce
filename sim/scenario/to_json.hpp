#pragma once
// The resolved scenario as JSON (the manifest's "scenario"): every field that applies, with its
// value or default; loading it again yields an equal Scenario.

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace stalesim {

// The resolved scenario: every field present with its value or default.
nlohmann::json scenario_to_json(const Scenario& s);

}  // namespace stalesim
