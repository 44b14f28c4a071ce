#pragma once
// The error every layer throws for bad scenario input. It lives in base/ so that the layers below
// the scenario loader (sim/data/'s generators and loaders, models/) can report a bad field without
// including the loader's headers (issue 47: sim/data/ included sim/scenario/spec.hpp for it alone).

#include <stdexcept>

namespace stalesim {

// Bad scenario input. what() reads "<origin>: <json path>: <problem>", e.g.
// "scenarios/ssp.json: /policy/staleness: expected an integer >= 0, got -3".
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace stalesim
