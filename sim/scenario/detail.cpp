// The shared helpers of sim/scenario/ (detail.hpp): path errors, JSON pointers, values in words,
// and the predicates of the field table and the cross-field checks.
#include "sim/scenario/detail.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/device_profile.hpp"

namespace stalesim::scenario_detail {

[[noreturn]] void fail(std::string path, std::string problem) {
  throw PathError{std::move(path), std::move(problem)};
}

ScenarioError scenario_error(const std::string& origin, const PathError& e) {
  return ScenarioError(fmt::format("{}: {}: {}", origin, e.path.empty() ? "/" : e.path, e.problem));
}

// ---- Paths and values ----------------------------------------------------------------------

std::string_view parent_path(std::string_view pointer) {
  return pointer.substr(0, pointer.rfind('/') == std::string_view::npos ? 0 : pointer.rfind('/'));
}

std::string_view leaf_name(std::string_view pointer) {
  const size_t slash = pointer.rfind('/');
  return slash == std::string_view::npos ? pointer : pointer.substr(slash + 1);
}

// "/policy/type" -> "policy.type", the spelling of --set and of prose.
std::string dotted(std::string_view pointer) {
  std::string out(pointer.substr(pointer.empty() ? 0 : 1));
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

// A pattern with "*" replaced by the element index.
std::string instantiate(std::string_view pattern, size_t index) {
  std::string out(pattern);
  if (const size_t star = out.find('*'); star != std::string::npos)
    out.replace(star, 1, std::to_string(index));
  return out;
}

// The value as compact JSON, cut to about 60 characters (never inside a UTF-8 sequence).
std::string render(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= kMaxRenderedValue) return text;
  size_t cut = kMaxRenderedValue - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

// An integral JSON number (1e3 counts), exactly; nullopt for anything else.
std::optional<long double> integral_value(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d) return static_cast<long double>(d);
  }
  return std::nullopt;
}

long double number_value(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

namespace {
// A bound for messages: integral values without a fraction ("1000000000", not "1e+09").
std::string format_bound(const json& b) {
  if (b.is_number_integer()) return b.dump();
  const double d = b.get<double>();
  if (std::floor(d) == d && std::fabs(d) < 1e15) return fmt::format("{}", static_cast<int64_t>(d));
  return fmt::format("{}", d);
}
}  // namespace

// The bounds in words; a maximum that is only a representation limit is left out unless asked.
std::string describe_range(const FieldInfo& f, bool with_limit) {
  const bool lo = !f.minimum.is_null(), hi = !f.maximum.is_null() && (with_limit || !f.maximum_is_limit);
  if (lo && hi)
    return fmt::format("in {}{}, {}{}", f.exclusive_minimum ? '(' : '[', format_bound(f.minimum),
                       format_bound(f.maximum), f.exclusive_maximum ? ')' : ']');
  if (lo) return fmt::format("{} {}", f.exclusive_minimum ? ">" : ">=", format_bound(f.minimum));
  if (hi) return fmt::format("{} {}", f.exclusive_maximum ? "<" : "<=", format_bound(f.maximum));
  return "";
}

bool below_maximum(const FieldInfo& f, long double x) {
  if (f.maximum.is_null()) return true;
  const long double m = number_value(f.maximum);
  return f.exclusive_maximum ? x < m : x <= m;
}

bool in_range(const FieldInfo& f, long double x) {
  if (!f.minimum.is_null()) {
    const long double m = number_value(f.minimum);
    if (f.exclusive_minimum ? !(x > m) : !(x >= m)) return false;
  }
  return below_maximum(f, x);
}

std::string quoted_list(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + json(v).dump();
  return out;
}

// ---- Checks used by the table --------------------------------------------------------------

// A built-in name or a profile file's path; whether the file exists and holds a profile is checked
// when the scenario file is loaded (load_scenario_text), which copies it into `device`.
std::string check_profile(const json& v) {
  const auto name = v.get<std::string>();
  if (find_profile(name) || name.ends_with(".json")) return "";
  std::string known;
  for (const auto& p : builtin_profiles()) known += (known.empty() ? "" : ", ") + p.name;
  return fmt::format(
      "unknown device profile {}; built-in: {}; or a profile file: a path ending in .json (relative to the "
      "scenario file's folder, or to the working directory with --set), or NAME for NAME.json in "
      "$STALESIM_PROFILE_DIR",
      render(v), known);
}

bool has_math(const Scenario& s) { return traits(s.model.type).has_math; }
bool rule_has(const Scenario& s, uint32_t field) { return (traits(s.optimizer.rule).fields & field) != 0; }
bool policy_has(const Scenario& s, uint32_t field) { return (traits(s.policy.type).fields & field) != 0; }
bool is_fasgd(const Scenario& s) { return rule_has(s, kRuleFasgd); }
// "bsp, asp, ssp with pull-every-iteration, dssp, softsync": the pull-mode policies, from the traits.
std::string pull_mode_policies() {
  std::string out;
  for (const auto& [type, name] : enum_names(PolicyType{})) {
    if (!traits(type).pull_mode) continue;
    out += fmt::format("{}{}{}", out.empty() ? "" : ", ", name,
                       (traits(type).fields & kPolicyCache) ? " with pull-every-iteration" : "");
  }
  return out;
}
bool has_data(const Scenario& s) { return s.data.dataset != DatasetType::kNone; }
bool is_workload(const Scenario& s) { return !traits(s.model.type).dataset.empty(); }
// Whether the cnn (models/cnn.hpp) takes images of `features` pixels: S x S, S % 4 == 0, S >= 12.
bool cnn_takes(int64_t features) {
  for (int64_t side = 12; side * side <= features; side += 4)
    if (side * side == features) return true;
  return false;
}

}  // namespace stalesim::scenario_detail
