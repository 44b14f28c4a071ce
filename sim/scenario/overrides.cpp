// Overrides (sim/scenario/overrides.hpp): --set PATH=VALUE parsed and applied to a scenario's JSON,
// paths split by split_field_path, string fields taking the value text as it is.
#include "sim/scenario/overrides.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "sim/scenario/detail.hpp"
#include "sim/scenario/paths.hpp"

namespace stalesim {

namespace scenario_detail {

std::string override_text(const Override& o) { return o.path + "=" + o.value; }

std::string override_pointer(const Override& o) {
  std::string p;
  for (const auto& part : split_field_path(o.path)) p += "/" + escape_token(part);
  return p;
}

// Whether one JSON pointer is the other or lies below it.
bool related(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.starts_with(a) && (b.size() == a.size() || b[a.size()] == '/');
}

namespace {

std::string_view type_phrase(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

}  // namespace
}  // namespace scenario_detail

using namespace scenario_detail;

Override parse_override(std::string_view arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw ScenarioError(fmt::format("--set '{}': expected PATH=VALUE", arg));
  Override o{std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1))};
  for (const auto& part : split_field_path(o.path))
    if (part.empty())
      throw ScenarioError(
          fmt::format("--set '{}': expected PATH=VALUE (empty key in path '{}')", arg, o.path));
  return o;
}

void apply_overrides(nlohmann::json& doc, std::span<const Override> sets) {
  for (const auto& o : sets) {
    const std::string origin = "--set " + override_text(o);
    if (const std::string shape = json_shape_problem(o.value); !shape.empty())
      throw ScenarioError(fmt::format("{}: {}", origin, shape));
    if (const auto dup = duplicate_key(o.value))
      throw ScenarioError(fmt::format("{}: {}: duplicate key (a JSON object names each key once)", origin, *dup));
    try {
      json value = json::parse(o.value, nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded()) value = o.value;
      const auto parts = split_field_path(o.path);
      json* cur = &doc;
      std::string at;
      std::string pattern;  // `at` with "*" for array indices, to look the field up
      for (size_t k = 0; k < parts.size(); ++k) {
        const std::string& part = parts[k];
        if (part.empty()) fail(at, fmt::format("empty key in path '{}'", o.path));
        if (cur->is_array()) {
          const bool digits =
              !part.empty() && part.size() <= 9 &&
              std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
          if (!digits) fail(at, fmt::format("expected an array index, got '{}'", part));
          const size_t i = std::stoul(part);
          at += "/" + part;
          pattern += "/*";
          if (i >= cur->size())
            fail(at, fmt::format("index out of range (array has {} element{})", cur->size(),
                                 cur->size() == 1 ? "" : "s"));
          cur = &(*cur)[i];
        } else if (cur->is_object()) {
          at += "/" + escape_token(part);
          pattern += "/" + escape_token(part);
          if (!cur->contains(part) && k + 1 < parts.size()) (*cur)[part] = json::object();
          cur = &(*cur)[part];
        } else {
          fail(at, cur->is_null() ? fmt::format("cannot set key '{}' inside null", part)
                                  : fmt::format("cannot set key '{}' inside {} ({})", part, type_phrase(*cur),
                                                render(*cur)));
        }
      }
      // A string field takes the text as it is ("name=2024"), unless it is a quoted JSON string.
      const FieldInfo* field = find_scenario_field(pattern);
      if (field && field->type == FieldType::kString && !value.is_string()) value = o.value;
      *cur = std::move(value);
    } catch (const PathError& e) {
      throw scenario_error(origin, e);
    }
  }
}

}  // namespace stalesim
