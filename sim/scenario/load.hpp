#pragma once
// The scenario loader's entry points: a file or text (with overrides and a seed) or a JSON
// document in, a validated Scenario out, or a ScenarioError naming the origin and JSON path.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/scenario/overrides.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// Reads, applies overrides (then `seed` if given), validates. Throws ScenarioError for bad JSON
// (with line:column), unknown keys, wrong types, out-of-range values, contradictions, and bad
// overrides (naming the --set argument); throws ScenarioError naming the file when unreadable.
// `profile_dir`: where a profile named by a name, not a path, may be found as NAME.json (the
// environment variable STALESIM_PROFILE_DIR, which the CLI reads; "" for none).
Scenario load_scenario_file(const std::string& path, std::span<const Override> sets = {},
                            std::optional<uint64_t> seed = std::nullopt, const std::string& profile_dir = {});
// As load_scenario_file, on text already read; `path` names it in messages and gives the default
// name. Used by the fuzzers (tests/fuzz/).
Scenario load_scenario_text(const std::string& text, const std::string& path,
                            std::span<const Override> sets = {}, std::optional<uint64_t> seed = std::nullopt,
                            const std::string& profile_dir = {});
// Validates a JSON document; `origin` prefixes messages (usually the file path); `default_name`
// is used when "name" is absent.
Scenario parse_scenario(const nlohmann::json& doc, const std::string& origin,
                        const std::string& default_name = "scenario");

}  // namespace stalesim
