#include "sim/sweep/sweep_spec.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "sim/scenario/paths.hpp"

namespace stalesim {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

struct Key {
  const char* name;
  const char* what;
};
// The keys of a sweep file, in documentation order.
constexpr Key kKeys[] = {
    {"comment", "free text"},
    {"scenario", "the base scenario file, relative to the sweep file's folder (required)"},
    {"set", "fields set for every point, as --set: {\"stop.max_updates\": 60}"},
    {"grid",
     "swept fields, the cartesian product (the first varying slowest): {\"policy.type\": [\"ssp\", "
     "\"asp\"]}"},
    {"zip", "fields advanced together (equal lengths), varying faster than the grid"},
    {"seeds",
     "the seeds of every point, varying fastest: [1, 2, 3] or \"1..3\" (default: the scenario's seed)"},
    {"derived",
     "named fields computed from each point's values: {\"NAME\": {\"path\": \"FIELD\", \"expr\": \"...\"}}"},
    {"constraints", "expressions that must all be true for a point to run; the others are skipped"},
    {"out", "the default sweep folder (--out overrides it)"},
};
constexpr Key kDerivedKeys[] = {
    {"expr", "the expression (REFERENCE.md \"Sweep files\"), e.g. \"2 * optimizer.batch_size\""},
    {"path", "the scenario field it sets (optional: without it the value is a column only)"},
    {"comment", "free text"},
};

// The closest of `names` to `key`, or "".
std::string closest(const std::string& key, const std::vector<std::string>& names) {
  const auto close = closest_names(key, names, std::max<size_t>(2, key.size() / 3));
  return close.empty() ? "" : close.front();
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& at, const std::string& why) const {
    throw ScenarioError(fmt::format("{}: {}: {}", file_, at.empty() ? "/" : at, why));
  }

  template <size_t N>
  void check_keys(const ordered_json& obj, const std::string& at, const Key (&keys)[N]) const {
    std::vector<std::string> names;
    for (const auto& k : keys) names.emplace_back(k.name);
    std::string allowed;
    for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
    for (const auto& [k, v] : obj.items()) {
      if (std::find(names.begin(), names.end(), k) != names.end()) continue;
      const std::string close = closest(k, names);
      fail(at + "/" + k, close.empty()
                             ? fmt::format("unknown key; allowed: {}", allowed)
                             : fmt::format("unknown key; did you mean '{}'? (allowed: {})", close, allowed));
    }
  }

  // A field path given as a key of "set", "grid", "zip" or as a derived "path".
  void check_field(const std::string& at, const std::string& path) const {
    if (path == "seed") fail(at, "sweep seeds with \"seeds\" (e.g. \"seeds\": [1, 2, 3] or \"1..3\")");
    if (!is_sweep_field(path)) {
      const std::string close = closest_sweep_field(path);
      fail(at, fmt::format("unknown scenario field '{}'{} ('stalesim fields' lists every field)", path,
                           close.empty() ? "" : fmt::format("; did you mean '{}'?", close)));
    }
  }

  // The names an expression reads must be seed, a derived name before it, or a scenario field.
  void check_names(const std::string& at, const Expr& e, const std::vector<std::string>& derived) const {
    for (const auto& n : e.names()) {
      if (n == "seed" || std::find(derived.begin(), derived.end(), n) != derived.end() || is_sweep_field(n))
        continue;
      std::string close = closest(n, derived);
      if (close.empty()) close = closest_sweep_field(n);
      fail(at,
           fmt::format("'{}': unknown name '{}' (a name is seed, a derived field named before this one, or "
                       "a scenario field path: 'stalesim fields'){}",
                       e.text(), n, close.empty() ? "" : fmt::format("; did you mean '{}'?", close)));
    }
  }

  Expr parse_expr(const std::string& at, const ordered_json& v) const {
    if (!v.is_string() || v.get<std::string>().empty())
      fail(at, fmt::format("expected an expression as a string, e.g. \"2 * optimizer.batch_size\", got {}",
                           v.dump()));
    try {
      return Expr::parse(v.get<std::string>());
    } catch (const ExprError& e) {
      const std::string& text = v.get<std::string>();
      // A long expression is quoted by its start only: the message stays one readable line.
      fail(at, fmt::format("'{}': {}", text.size() > 80 ? text.substr(0, 60) + "..." : text, e.what()));
    }
  }

 private:
  std::string file_;
};

// A JSON value as the text of an override (read back by the loader as the same value).
std::string value_text(const ordered_json& v) {
  if (v.is_string()) return override_text(json(v.get<std::string>()));
  return v.dump();
}

// The sweep file's text as JSON; a syntax error names its line and column.
ordered_json parse_sweep_json(const std::string& path) {
  std::string error;
  const auto text = read_regular_file(path, kMaxScenarioBytes, error);
  if (!text) throw ScenarioError(fmt::format("{}: cannot read the sweep file: {}", path, error));
  if (const std::string shape = json_shape_problem(*text); !shape.empty())
    throw ScenarioError(fmt::format("{}: {}", path, shape));
  if (const auto dup = duplicate_key(*text))
    throw ScenarioError(fmt::format("{}: {}: duplicate key (a JSON object names each key once)", path, *dup));
  ordered_json doc;
  try {
    doc = ordered_json::parse(*text);
  } catch (const json::parse_error& e) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text->size(); ++i) {
      if ((*text)[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw ScenarioError(fmt::format("{}:{}:{}: not valid JSON: {}", path, line, col, e.what()));
  }
  return doc;
}

// "set", "grid" and "zip": the fields set for every point and the swept ones, each given once.
void read_sets_and_axes(const Reader& r, const ordered_json& doc, std::set<std::string>& given,
                        SweepSpec& spec) {
  const auto object_at = [&](const char* key) -> const ordered_json* {
    if (!doc.contains(key)) return nullptr;
    const ordered_json& o = doc[key];
    if (!o.is_object())
      r.fail(std::string("/") + key,
             fmt::format("expected an object of field paths, e.g. {{\"policy.staleness\": {}}}, got {}",
                         std::string_view(key) == "set" ? "3" : "[0, 1, 2]", o.dump()));
    return &o;
  };
  if (const auto* set = object_at("set"))
    for (const auto& [k, v] : set->items()) {
      const std::string at = "/set/" + k;
      r.check_field(at, k);
      given.insert(k);
      spec.sets.push_back({k, value_text(v)});
    }
  spec.file_sets = spec.sets.size();
  size_t zip_size = 0;
  std::string zip_first;
  for (const char* which : {"grid", "zip"}) {
    const auto* axes = object_at(which);
    if (!axes) continue;
    const bool zip = std::string_view(which) == "zip";
    for (const auto& [k, v] : axes->items()) {
      const std::string at = std::string("/") + which + "/" + k;
      r.check_field(at, k);
      if (given.contains(k))
        r.fail(at, fmt::format("'{}' is already set or swept in this file; give each field once", k));
      given.insert(k);
      if (!v.is_array() || v.empty())
        r.fail(at, fmt::format("expected a non-empty array of values, e.g. [0, 1, 2], got {}", v.dump()));
      SweepKey key{k, {}};
      std::set<std::string> seen;
      for (size_t i = 0; i < v.size(); ++i) {
        if (!zip && !seen.insert(v[i].dump()).second)
          r.fail(fmt::format("{}/{}", at, i), fmt::format("the value {} is listed twice", v[i].dump()));
        key.values.push_back(value_text(v[i]));
      }
      if (zip) {
        if (zip_first.empty()) {
          zip_first = k;
          zip_size = v.size();
        } else if (v.size() != zip_size) {
          r.fail(at, fmt::format("zip lists must have equal lengths: {} has {}, {} has {}", zip_first,
                                 zip_size, k, v.size()));
        }
        spec.zip.push_back(std::move(key));
      } else {
        spec.grid.push_back(std::move(key));
      }
    }
  }
}

// "seeds": an array of distinct integers >= 0 or a range text such as "1..3".
void read_seeds(const Reader& r, const ordered_json& s, SweepSpec& spec) {
  const auto bad_seeds = [&](const std::string& why) {
    r.fail("/seeds", fmt::format("{}; expected [1, 2, 3] (integers >= 0, each once) or \"1..3\"", why));
  };
  if (s.is_string()) {
    try {
      spec.seeds = parse_seeds(s.get<std::string>());
    } catch (const SweepError& e) {
      bad_seeds(e.what());
    }
  } else if (s.is_array() && !s.empty()) {
    std::set<uint64_t> seen;
    for (const auto& x : s) {
      if (!x.is_number_unsigned()) bad_seeds(fmt::format("{} is not an integer >= 0", x.dump()));
      if (!seen.insert(x.get<uint64_t>()).second) bad_seeds(fmt::format("seed {} is listed twice", x.dump()));
      spec.seeds.push_back(x.get<uint64_t>());
    }
    if (spec.seeds.size() > kMaxSweepPoints) bad_seeds(fmt::format("more than {} seeds", kMaxSweepPoints));
  } else {
    bad_seeds(fmt::format("got {}", s.dump()));
  }
}

// "derived": named expressions, each reading only seed, scenario fields and the names before it;
// appends their names to `derived_names`.
void read_derived(const Reader& r, const std::string& path, const ordered_json& d,
                  std::set<std::string>& given, std::vector<std::string>& derived_names, SweepSpec& spec) {
  if (!d.is_object())
    r.fail("/derived", fmt::format("expected an object, e.g. {{\"global_batch\": {{\"expr\": \"3 * "
                                   "optimizer.batch_size\"}}}}, got {}",
                                   d.dump()));
  for (const auto& [name, v] : d.items()) {
    const std::string at = "/derived/" + name;
    const bool identifier =
        !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
        std::all_of(name.begin(), name.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!identifier)
      r.fail(at,
             "a derived field's name is letters, digits and '_', starting with a letter (e.g. global_batch)");
    if (name == "seed" || is_sweep_field(name) ||
        std::find(derived_names.begin(), derived_names.end(), name) != derived_names.end())
      r.fail(at,
             fmt::format("the name '{}' is taken (seed, a scenario field or another derived field)", name));
    if (!v.is_object())
      r.fail(at, fmt::format("expected {{\"expr\": \"...\"}} with an optional \"path\", got {}", v.dump()));
    r.check_keys(v, at, kDerivedKeys);
    if (!v.contains("expr"))
      r.fail(at + "/expr", "missing: the expression, e.g. \"2 * optimizer.batch_size\"");
    SweepDerived field{name, "", r.parse_expr(at + "/expr", v["expr"]), fmt::format("{}: {}", path, at)};
    r.check_names(at + "/expr", field.expr, derived_names);
    if (v.contains("path")) {
      if (!v["path"].is_string())
        r.fail(at + "/path", fmt::format("expected a field path (a string), got {}", v["path"].dump()));
      field.path = v["path"].get<std::string>();
      r.check_field(at + "/path", field.path);
      if (given.contains(field.path))
        r.fail(at + "/path",
               fmt::format("'{}' is already set or swept in this file; give each field once", field.path));
      given.insert(field.path);
    }
    derived_names.push_back(name);
    spec.derived.push_back(std::move(field));
  }
}

// "constraints": expressions over seed, scenario fields and the derived names.
void read_constraints(const Reader& r, const std::string& path, const ordered_json& c,
                      const std::vector<std::string>& derived_names, SweepSpec& spec) {
  if (!c.is_array())
    r.fail(
        "/constraints",
        fmt::format("expected an array of expressions, e.g. [\"policy.type != 'asp'\"], got {}", c.dump()));
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string at = fmt::format("/constraints/{}", i);
    SweepConstraint k{r.parse_expr(at, c[i]), fmt::format("{}: {}", path, at)};
    r.check_names(at, k.expr, derived_names);
    spec.constraints.push_back(std::move(k));
  }
}

}  // namespace

SweepSpec load_sweep_file(const std::string& path, std::string* out) {
  const Reader r(path);
  const ordered_json doc = parse_sweep_json(path);
  if (!doc.is_object())
    r.fail("", "expected a JSON object (a sweep file: {\"scenario\": ..., \"grid\": {...}})");
  r.check_keys(doc, "", kKeys);

  SweepSpec spec;
  spec.spec_file = path;
  spec.spec_json = json::parse(doc.dump());
  if (doc.contains("comment") && !doc["comment"].is_string()) r.fail("/comment", "expected a string");
  if (!doc.contains("scenario"))
    r.fail("/scenario", "missing: the base scenario file, e.g. \"scenario\": \"quickstart.json\"");
  if (!doc["scenario"].is_string() || doc["scenario"].get<std::string>().empty())
    r.fail("/scenario", fmt::format("expected a file name (a string), got {}", doc["scenario"].dump()));
  {
    const fs::path s(doc["scenario"].get<std::string>());
    spec.scenario_path =
        s.is_absolute() ? s.string() : (fs::path(path).parent_path() / s).lexically_normal().string();
  }

  std::set<std::string> given;  // field paths set or swept
  read_sets_and_axes(r, doc, given, spec);
  if (doc.contains("seeds")) read_seeds(r, doc["seeds"], spec);
  std::vector<std::string> derived_names;
  if (doc.contains("derived")) read_derived(r, path, doc["derived"], given, derived_names, spec);
  if (doc.contains("constraints")) read_constraints(r, path, doc["constraints"], derived_names, spec);
  if (doc.contains("out")) {
    if (!doc["out"].is_string() || doc["out"].get<std::string>().empty())
      r.fail("/out", fmt::format("expected a folder (a string), got {}", doc["out"].dump()));
    if (out) *out = doc["out"].get<std::string>();
  }
  return spec;
}

bool is_sweep_file(const std::string& path) {
  if (path.ends_with(".sweep.json")) return true;
  std::string error;
  const auto text = read_regular_file(path, kMaxScenarioBytes, error);
  if (!text || !json_shape_problem(*text).empty()) return false;
  const json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() && doc.contains("scenario");
}

ordered_json sweep_file_schema() {
  const auto describe = [](const char* key) {
    for (const auto& k : kKeys)
      if (std::string_view(k.name) == key) return std::string(k.what);
    return std::string();
  };
  const ordered_json values = {{"type", "array"}, {"minItems", 1}};
  ordered_json props = ordered_json::object();
  props["comment"] = {{"type", "string"}, {"description", describe("comment")}};
  props["scenario"] = {{"type", "string"}, {"minLength", 1}, {"description", describe("scenario")}};
  props["set"] = {{"type", "object"},
                  {"description", describe("set") + "; keys are scenario field paths ('stalesim fields')"}};
  props["grid"] = {{"type", "object"},
                   {"additionalProperties", values},
                   {"description", describe("grid") + "; keys are scenario field paths"}};
  props["zip"] = {{"type", "object"}, {"additionalProperties", values}, {"description", describe("zip")}};
  props["seeds"] = {{"oneOf",
                     {{{"type", "array"},
                       {"items", {{"type", "integer"}, {"minimum", 0}}},
                       {"minItems", 1},
                       {"uniqueItems", true}},
                      {{"type", "string"}, {"pattern", "^[0-9]+(\\.\\.[0-9]+|(,[0-9]+)*)$"}}}},
                    {"description", describe("seeds")}};
  ordered_json derived_props = ordered_json::object();
  for (const auto& k : kDerivedKeys) derived_props[k.name] = {{"type", "string"}, {"description", k.what}};
  props["derived"] = {{"type", "object"},
                      {"propertyNames", {{"pattern", "^[A-Za-z_][A-Za-z0-9_]*$"}}},
                      {"additionalProperties",
                       {{"type", "object"},
                        {"properties", derived_props},
                        {"required", {"expr"}},
                        {"additionalProperties", false}}},
                      {"description", describe("derived")}};
  props["constraints"] = {{"type", "array"},
                          {"items", {{"type", "string"}, {"minLength", 1}}},
                          {"description", describe("constraints")}};
  props["out"] = {{"type", "string"}, {"minLength", 1}, {"description", describe("out")}};
  return {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", "https://stalesim.invalid/sweep.schema.json"},
      {"title", "stalesim sweep file"},
      {"description",
       "A sweep for `stalesim sweep FILE.sweep.json` (REFERENCE.md \"Sweep files\"). Field paths are checked "
       "against the scenario fields by the loader."},
      {"type", "object"},
      {"properties", props},
      {"required", {"scenario"}},
      {"additionalProperties", false}};
}

}  // namespace stalesim
