#pragma once
// The one table of scenario fields (style.md habits 5-7). Every key a scenario file may hold is a
// row here: its JSON path, type, unit, bounds, allowed values, default and a one-line doc, plus
// the functions that move its value between JSON and `Scenario`. The loader (parse_scenario),
// scenario_to_json, the Markdown field reference and `stalesim schema` are all driven by this
// table; there is no second list of fields. The rows live in sim/scenario/fields_*.cpp, one file
// per section (data, model, optimizer, policy, cluster; fields_run.cpp: the top level, compute,
// stop and eval), joined in documentation order by fields.cpp.
//
// Paths are JSON pointers; "*" stands for every index of an array ("/cluster/workers/*/count").
// A field "applies" when its `applies` predicate (and that of every enclosing object) holds for
// the scenario: giving a field that does not apply is an error, and scenario_to_json omits it.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace stalesim {

enum class FieldType {
  kString,        // a JSON string; `allowed` lists the values when it is an enumeration
  kInteger,       // a JSON integer (an integral number such as 1e3 is accepted too)
  kNumber,        // any JSON number
  kBool,          // true or false
  kIntegerArray,  // an array of integers; bounds apply to each item
  kObject,        // a JSON object whose keys are the fields below it
  kObjectArray,   // an array of objects whose keys are the fields below "<path>/*"
};
// "string", "integer", "number", "boolean", "array of integers", "object", "array of objects".
std::string_view to_string(FieldType t);

struct FieldInfo {
  std::string path{};  // JSON pointer, e.g. "/policy/staleness"; "*" for each array index
  FieldType type = FieldType::kString;
  std::string unit{};  // e.g. "s", "us", "Gbit/s"; empty when dimensionless
  // Bounds of a number, of an integer, or of each item of an integer array; null = unbounded.
  nlohmann::json minimum{};
  nlohmann::json maximum{};
  bool exclusive_minimum = false;
  bool exclusive_maximum = false;
  // The maximum only keeps values representable (in the C++ type, in SimTime, exactly in JSON):
  // docs and messages leave it out unless a value exceeds it.
  bool maximum_is_limit = false;
  std::size_t min_items = 0;           // arrays: the fewest items allowed
  std::size_t max_items = 1'000'000;   // arrays: the most items allowed
  std::size_t min_length = 0;          // strings: the fewest characters (bytes) allowed
  std::size_t max_length = 4096;       // strings: the most characters (bytes) allowed
  std::vector<std::string> allowed{};  // strings: allowed values in documentation order; empty = any
  bool nullable = false;               // null is accepted and means "unset"
  bool required = false;               // must be given wherever the field applies
  // The default as JSON; null when the field is required, unset by default, or computed.
  nlohmann::json default_value{};
  std::string default_note{};  // words for a default that depends on other fields, or ""
  // Where the field applies: "" = always; else e.g. applies_to "ssp" and applies_key
  // "/policy/type", read "applies to ssp only (policy.type)".
  std::string applies_to{};
  std::string applies_key{};
  std::string doc{};  // one line

  // Behaviour. `index` is the array index for fields below "*", else 0.
  bool (*applies)(const Scenario&) = nullptr;             // nullptr = always applies
  std::string (*check)(const nlohmann::json&) = nullptr;  // extra check: a problem, or ""
  // Stores a validated value (null for an unset nullable field). Objects: nullptr. Object arrays:
  // sizes the vector to the array's length.
  void (*set)(Scenario&, std::size_t index, const nlohmann::json& value) = nullptr;
  // The value as JSON (null for an unset optional). Object arrays: an array of empty objects, one
  // per element. Objects: nullptr.
  nlohmann::json (*get)(const Scenario&, std::size_t index) = nullptr;
  // Computes the default when the field is absent and the default depends on other fields.
  void (*resolve)(Scenario&) = nullptr;
};

// A scenario name goes into folder names: 1 to 100 characters, letters, digits and . _ - + = , @,
// not starting with '.' (kScenarioNamePattern, a JSON Schema pattern). The check of /name: a
// problem in words, or "".
inline constexpr const char* kScenarioNamePattern = "^[A-Za-z0-9_+=,@-][A-Za-z0-9._+=,@-]{0,99}$";
std::string check_scenario_name(const nlohmann::json& v);
// A file's stem made into a valid name (other characters become '_'), for a scenario without one.
std::string sanitize_scenario_name(std::string_view stem);

// Every field, parents before children, in documentation order.
const std::vector<FieldInfo>& scenario_fields();
// The field with this path ("/policy/staleness", "/cluster/workers/*/count"), or nullptr.
const FieldInfo* find_scenario_field(std::string_view path);
// An object key as one JSON pointer token (RFC 6901: "~" -> "~0", "/" -> "~1").
std::string escape_token(std::string_view key);
// Bounds and allowed values in words, e.g. `>= 0`, `in (0, 1]`, `"bsp", "asp", "ssp"`,
// `non-empty; each in [1, 65536]`; "" when anything of the type goes.
std::string describe_allowed(const FieldInfo& f);
// A Markdown table of every field: path | type | unit | default | allowed / range | description.
std::string scenario_fields_markdown();

}  // namespace stalesim
