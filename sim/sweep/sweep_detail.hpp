#pragma once
// Helpers shared by the sweep's files (not part of its interface, sim/sweep/sweep.hpp): sweep.cpp
// (field paths, cells, parsing, sweep.csv) defines them; sweep_plan.cpp (points and folders) and
// sweep_run.cpp (the sweep folder, running, resuming) use them.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim::sweep_detail {

// "cluster.workers.0.count" -> "/cluster/workers/0/count".
std::string dotted_pointer(std::string_view dotted);

// The first field on the path (it or an object above it) that does not apply to `s`, or nullptr.
const FieldInfo* inapplicable_field(std::string_view dotted, const Scenario& s);

// Whether the field a dotted path sets, or an object above it, applies to some scenarios only.
bool is_conditional(std::string_view dotted);

// "applies to ssp only (policy.type)".
std::string applies_phrase(const FieldInfo& f);

// A JSON value as a flat CSV cell: numbers in shortest round-trip form (as in metrics.csv),
// strings without quotes, null as an empty cell; an array's items joined by ';' ("200;100"), an
// object's members as "key=value" joined by ' ' (no JSON brackets or quotes).
std::string cell_of(const nlohmann::json& v);

// The short labels of the swept keys in folder names: the path's last part ("staleness"), or the
// whole path when another key ends the same way or the last part is an index.
std::vector<std::string> folder_labels(const std::vector<std::string>& keys);

// A point's folder name (sim/sweep/sweep.hpp): "type=ssp_staleness=2_seed=1-3fa9c2d1".
std::string point_folder_name(const nlohmann::json& scenario_json, const std::vector<std::string>& keys,
                              const std::vector<std::string>& labels, bool seeds);

// "policy.staleness=4, policy.type=ssp, seed=2".
std::string describe_overrides(const std::vector<Override>& overrides, std::optional<uint64_t> seed,
                               uint64_t base_seed);

// The whole file. Throws IoError "PATH: cannot read".
std::string read_text(const std::filesystem::path& p);
// The JSON file `p` read bounded (read_json_file), or IoError "PATH: the problem".
nlohmann::json read_json(const std::filesystem::path& p);

}  // namespace stalesim::sweep_detail
