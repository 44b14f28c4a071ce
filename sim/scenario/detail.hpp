#pragma once
// Internal to sim/scenario/: the bounds, path errors, JSON pointer and value helpers, and the
// predicates that the field table, the loader, the cross-field checks and the overrides share.
// Nothing outside sim/scenario/ includes this header.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/fields.hpp"
#include "sim/scenario/overrides.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim::scenario_detail {

using json = nlohmann::json;

// Bounds are compared as long double, which must hold every int64, uint64 and double exactly.
static_assert(std::numeric_limits<long double>::digits >= 64,
              "scenario bounds need a long double with a 64-bit mantissa (x86-64)");

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxInt53 = int64_t{1} << 53;  // largest count every JSON reader holds exactly
constexpr int64_t kMaxWorkers = 1'000'000;
constexpr int64_t kMaxHiddenWidth = 65536;
constexpr size_t kMaxHiddenLayers = 64;
constexpr size_t kMaxScheduleEvents = 100'000;
constexpr size_t kMaxNameLength = 100;
constexpr double kMaxSeconds = 1e9;  // keeps every time well inside SimTime's int64 nanoseconds
// Bounds that keep every derived duration (compute time x jitter x schedule, transfer time)
// inside SimTime's range; a run that still leaves it stops with a TimeRangeError (sim_time.hpp).
constexpr double kMaxFactor = 1e6;
constexpr double kMaxSigma = 4;
constexpr double kMaxCv = 100;
constexpr double kMaxFlopsPerSample = 1e18;
constexpr double kMinGbps = 1e-6;  // 1 kbit/s
constexpr double kMaxGbps = 1e6;
constexpr size_t kMaxRenderedValue = 60;

// ---- Errors (detail.cpp) -------------------------------------------------------------------

// A problem at a JSON path; the entry points add the origin and turn it into a ScenarioError.
struct PathError {
  std::string path;
  std::string problem;
};

[[noreturn]] void fail(std::string path, std::string problem);

ScenarioError scenario_error(const std::string& origin, const PathError& e);

// ---- Paths and values (detail.cpp) ---------------------------------------------------------

std::string_view parent_path(std::string_view pointer);
std::string_view leaf_name(std::string_view pointer);
// "/policy/type" -> "policy.type", the spelling of --set and of prose.
std::string dotted(std::string_view pointer);
// A pattern with "*" replaced by the element index.
std::string instantiate(std::string_view pattern, size_t index);
// The value as compact JSON, cut to about 60 characters (never inside a UTF-8 sequence).
std::string render(const json& v);
// An integral JSON number (1e3 counts), exactly; nullopt for anything else.
std::optional<long double> integral_value(const json& v);
long double number_value(const json& v);
// The bounds in words; a maximum that is only a representation limit is left out unless asked.
std::string describe_range(const FieldInfo& f, bool with_limit = false);
bool below_maximum(const FieldInfo& f, long double x);
bool in_range(const FieldInfo& f, long double x);
std::string quoted_list(const std::vector<std::string>& values);

// ---- Predicates of the table and the checks (detail.cpp) -----------------------------------

// A built-in name or a profile file's path; whether the file exists and holds a profile is checked
// when the scenario file is loaded (load_scenario_text), which copies it into `device`.
std::string check_profile(const json& v);
bool has_math(const Scenario& s);
bool rule_has(const Scenario& s, uint32_t field);
bool policy_has(const Scenario& s, uint32_t field);
bool is_fasgd(const Scenario& s);
// "bsp, asp, ssp with pull-every-iteration, dssp, softsync": the pull-mode policies, from the traits.
std::string pull_mode_policies();
bool has_data(const Scenario& s);
bool is_workload(const Scenario& s);
// Whether the cnn (models/cnn.hpp) takes images of `features` pixels: S x S, S % 4 == 0, S >= 12.
bool cnn_takes(int64_t features);

// ---- Fields (fields.cpp) -------------------------------------------------------------------

// The object or object array holding `f`, or nullptr at the top level.
const FieldInfo* parent_field(const FieldInfo& f);
bool applies_in(const FieldInfo& f, const Scenario& s);
// "policy.type is \"bsp\"": the value that decides whether `f` applies.
std::string applies_context(const FieldInfo& f, const Scenario& s);

// ---- The rest of the loader ----------------------------------------------------------------

// Rules between fields that no single field can state (checks.cpp). Throws PathError.
void check_cross_fields(const Scenario& s);

// The scenario file's text (parse_json.cpp). Throws ScenarioError naming the file when unreadable.
std::string read_file(const std::string& path);
// Parses JSON text, rejecting duplicate keys. Throws ScenarioError "<origin>:L:C: invalid JSON: ...".
json parse_json_text(const std::string& text, const std::string& origin);

// "PATH=VALUE", "/a/b" of an override, and whether one JSON pointer is the other or lies below it
// (overrides.cpp).
std::string override_text(const Override& o);
std::string override_pointer(const Override& o);
bool related(std::string_view a, std::string_view b);

// The scenario file's relative profile-file and jitter-trace paths rewritten against its folder
// (profiles.cpp); called before --set overrides, whose paths are relative to the working directory.
void resolve_file_paths(json& doc, const std::string& scenario_path);

// Profiles as data (issue 20; profiles.cpp): each group whose profile names a file and that
// carries no `device` yet gets the file's figures as `device` (`profile_dir`: see profile_file_path).
void read_profile_files(json& doc, const std::string& scenario_path, const std::string& profile_dir);

}  // namespace stalesim::scenario_detail
