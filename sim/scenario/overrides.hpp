#pragma once
// Overrides: --set PATH=VALUE (and the sweeps' points, which are overrides too) applied to a
// scenario's JSON before it is loaded. Paths are split by split_field_path (sim/scenario/paths.hpp).

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace stalesim {

// One --set override: a dotted path into the scenario ("policy.staleness", "cluster.workers.0.count")
// and the value text. The value is read as JSON when it parses as JSON, else as a string.
struct Override {
  std::string path;
  std::string value;
  bool operator==(const Override&) const = default;
};
// Parses "a.b=v". Throws ScenarioError ("--set 'x': expected PATH=VALUE") when there is no '='
// or the path is empty.
Override parse_override(std::string_view arg);

// Applies overrides to a JSON document in place (creating missing object keys; array indices
// must exist). Throws ScenarioError naming the --set argument.
void apply_overrides(nlohmann::json& doc, std::span<const Override> sets);

}  // namespace stalesim
