// The loader: JSON -> Scenario. Walks the document against the field table (with a "did you mean"
// for unknown keys), checks each value, resolves defaults, applicability and requirements, runs
// the cross-field checks; and the public entry points load_scenario_file/text, parse_scenario.
#include "sim/scenario/load.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/scenario/detail.hpp"
#include "sim/scenario/paths.hpp"

namespace stalesim {

namespace scenario_detail {
namespace {

// ---- Validation of one value ---------------------------------------------------------------

struct Problem {
  std::string suffix;  // path below the field, e.g. "/1" for an array item
  std::string text;
};

std::string check_number(const FieldInfo& f, const json& v, bool integer) {
  const char* noun = integer ? "an integer" : "a number";
  if (integer ? !integral_value(v) : !v.is_number())
    return fmt::format("expected {}, got {}", noun, render(v));
  const long double x = number_value(v);
  if (!in_range(f, x))
    return fmt::format("expected {} {}, got {}", noun, describe_range(f, !below_maximum(f, x)), render(v));
  return "";
}

std::optional<Problem> check_value(const FieldInfo& f, const json& v) {
  std::string text;
  switch (f.type) {
    case FieldType::kString:
      if (!v.is_string()) {
        text = f.allowed.empty() || f.check
                   ? fmt::format("expected a string, got {}", render(v))
                   : fmt::format("expected one of {}, got {}", quoted_list(f.allowed), render(v));
      } else if (v.get_ref<const std::string&>().size() < f.min_length) {
        text = fmt::format("expected a non-empty string, got {}", render(v));
      } else if (v.get_ref<const std::string&>().size() > f.max_length) {
        text = fmt::format("expected at most {} characters, got {}", f.max_length,
                           v.get_ref<const std::string&>().size());
      } else if (f.check) {
        text = f.check(v);
      } else if (!f.allowed.empty() && std::find(f.allowed.begin(), f.allowed.end(),
                                                 v.get_ref<const std::string&>()) == f.allowed.end()) {
        text = fmt::format("expected one of {}, got {}", quoted_list(f.allowed), render(v));
      }
      break;
    case FieldType::kBool:
      if (!v.is_boolean()) text = fmt::format("expected true or false, got {}", render(v));
      break;
    case FieldType::kInteger:
    case FieldType::kNumber:
      text = check_number(f, v, f.type == FieldType::kInteger);
      break;
    case FieldType::kIntegerArray:
      if (!v.is_array()) {
        text = fmt::format("expected an array of integers, got {}", render(v));
      } else if (v.size() < f.min_items) {
        text =
            fmt::format("expected {} array of integers, got {}",
                        f.min_items == 1 ? "a non-empty" : fmt::format("a {}+ item", f.min_items), render(v));
      } else if (v.size() > f.max_items) {
        text = fmt::format("expected at most {} items, got {}", f.max_items, v.size());
      } else {
        for (size_t i = 0; i < v.size(); ++i)
          if (auto t = check_number(f, v[i], true); !t.empty())
            return Problem{"/" + std::to_string(i), std::move(t)};
      }
      break;
    case FieldType::kObject:
    case FieldType::kObjectArray:
      break;  // handled by the walk
  }
  if (text.empty()) return std::nullopt;
  return Problem{"", std::move(text)};
}

// ---- Did you mean --------------------------------------------------------------------------

[[noreturn]] void unknown_key(std::string_view pattern, const std::string& at, const std::string& key) {
  std::vector<std::string> allowed;  // sorted: the table's order is not the reader's concern here
  for (const auto& f : scenario_fields())
    if (parent_path(f.path) == pattern) allowed.emplace_back(leaf_name(f.path));
  std::sort(allowed.begin(), allowed.end());
  std::string allowed_text;
  for (const auto& a : allowed) allowed_text += (allowed_text.empty() ? "" : ", ") + a;

  // Keys up to min(2, max(1, length / 3)) + 1 edits away.
  const size_t limit = std::min<size_t>(2, std::max<size_t>(1, key.size() / 3)) + 1;
  const std::vector<std::string> close = closest_names(key, allowed, limit);
  if (!close.empty()) {
    std::string names;
    for (size_t i = 0; i < close.size(); ++i)
      names += (i == 0 ? "" : i + 1 == close.size() ? " or " : ", ") + ("'" + close[i] + "'");
    fail(at, fmt::format("unknown key; did you mean {}?", names));
  }
  std::vector<std::string> elsewhere;
  for (const auto& f : scenario_fields())
    if (leaf_name(f.path) == key) elsewhere.push_back(f.path);
  if (!elsewhere.empty()) {
    std::string names;
    for (size_t i = 0; i < elsewhere.size(); ++i)
      names += (i == 0 ? "" : i + 1 == elsewhere.size() ? " or " : ", ") + elsewhere[i];
    fail(at, fmt::format("unknown key here; did you mean {}? (allowed here: {})", names, allowed_text));
  }
  fail(at, fmt::format("unknown key; allowed: {}", allowed_text));
}

// ---- The loader ----------------------------------------------------------------------------

class Loader {
 public:
  Scenario load(const json& doc, const std::string& default_name) {
    if (!doc.is_object()) fail("", fmt::format("the top level must be an object, got {}", render(doc)));
    s_.name = default_name;
    walk(doc, "", "", 0);
    const auto& fields = scenario_fields();
    for (const auto& f : fields)
      if (f.resolve && !given(f, 0)) f.resolve(s_);
    for (const auto& g : given_)
      if (g.field->applies && !g.field->applies(s_))
        fail(g.path, fmt::format("{} applies to {} only ({}); remove it", leaf_name(g.field->path),
                                 g.field->applies_to, applies_context(*g.field, s_)));
    for (const auto& f : fields) {
      if (!f.required) continue;
      if (f.path.find('*') == std::string::npos) {
        if (applies_in(f, s_) && !given(f, 0))
          fail(f.path, f.applies ? fmt::format("required when {}", applies_context(f, s_)) : "required");
      } else {  // a key of each element of an array of objects
        const size_t elements = parent_field(f)->get(s_, 0).size();
        for (size_t i = 0; i < elements; ++i)
          if (!given(f, i)) fail(instantiate(f.path, i), "required");
      }
    }
    if (s_.name.empty()) fail("/name", "required (there is no file name to take it from)");
    check_cross_fields(s_);
    return std::move(s_);
  }

 private:
  struct Given {
    const FieldInfo* field;
    std::string path;
    size_t index;
  };

  bool given(const FieldInfo& f, size_t index) const { return given_set_.contains({&f, index}); }

  void mark_given(const FieldInfo& f, const std::string& at, size_t index) {
    given_.push_back({&f, at, index});
    given_set_.insert({&f, index});
  }

  void walk(const json& obj, const std::string& pattern, const std::string& at, size_t index) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string child = at + "/" + escape_token(it.key());
      const FieldInfo* f = find_scenario_field(pattern + "/" + escape_token(it.key()));
      if (f == nullptr) unknown_key(pattern, child, it.key());
      visit(*f, it.value(), child, index);
    }
  }

  void visit(const FieldInfo& f, const json& v, const std::string& at, size_t index) {
    if (f.type == FieldType::kObject) {
      if (!v.is_object()) fail(at, fmt::format("expected an object, got {}", render(v)));
      mark_given(f, at, index);
      walk(v, f.path, at, index);
    } else if (f.type == FieldType::kObjectArray) {
      if (!v.is_array()) fail(at, fmt::format("expected an array of objects, got {}", render(v)));
      if (v.size() < f.min_items)
        fail(at, fmt::format("expected a non-empty array of objects, got {}", render(v)));
      if (v.size() > f.max_items)
        fail(at, fmt::format("expected at most {} items, got {}", f.max_items, v.size()));
      f.set(s_, 0, v);
      mark_given(f, at, index);
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string item = at + "/" + std::to_string(i);
        if (!v[i].is_object()) fail(item, fmt::format("expected an object, got {}", render(v[i])));
        walk(v[i], f.path + "/*", item, i);
      }
    } else if (v.is_null() && f.nullable) {
      f.set(s_, index, v);  // unset; not "given" for applicability and requirements
    } else {
      if (auto p = check_value(f, v)) fail(at + p->suffix, p->text);
      f.set(s_, index, v);
      mark_given(f, at, index);
    }
  }

  Scenario s_;
  std::vector<Given> given_;  // in document order (keys sorted), objects before their keys
  std::set<std::pair<const FieldInfo*, size_t>> given_set_;
};

}  // namespace
}  // namespace scenario_detail

using namespace scenario_detail;

Scenario parse_scenario(const nlohmann::json& doc, const std::string& origin,
                        const std::string& default_name) {
  try {
    return Loader().load(doc, default_name);
  } catch (const PathError& e) {
    throw scenario_error(origin, e);
  }
}

Scenario load_scenario_file(const std::string& path, std::span<const Override> sets,
                            std::optional<uint64_t> seed, const std::string& profile_dir) {
  return load_scenario_text(read_file(path), path, sets, seed, profile_dir);
}

Scenario load_scenario_text(const std::string& text, const std::string& path, std::span<const Override> sets,
                            std::optional<uint64_t> seed, const std::string& profile_dir) {
  json doc = parse_json_text(text, path);
  resolve_file_paths(doc, path);  // the file's paths: from its folder; the --set paths: as typed
  apply_overrides(doc, sets);
  if (seed && doc.is_object()) doc["seed"] = *seed;
  read_profile_files(doc, path, profile_dir);
  std::string name = std::filesystem::path(path).filename().string();
  if (name.ends_with(".json") && name.size() > 5) name.resize(name.size() - 5);
  name = sanitize_scenario_name(name);
  // A --set that changes what another field depends on (`--set policy.type=bsp` on a file that
  // gives policy.staleness) drops the file's fields that no longer apply, instead of failing: the
  // user asked for the change, and the resolved scenario in the manifest shows what ran.
  for (size_t attempt = 0; attempt < scenario_fields().size(); ++attempt) {
    try {
      return Loader().load(doc, name);
    } catch (const PathError& e) {
      const FieldInfo* f = find_scenario_field(e.path);
      const auto touched = [&](std::string_view pointer) {
        return std::any_of(sets.begin(), sets.end(),
                           [&](const Override& o) { return related(override_pointer(o), pointer); });
      };
      const bool inapplicable =
          f && !f->applies_key.empty() && e.problem.find(" applies to ") != std::string::npos;
      if (!inapplicable || !touched(f->applies_key) || touched(e.path)) break;
      const json::json_pointer ptr(e.path);
      doc[ptr.parent_pointer()].erase(ptr.back());
    }
  }
  try {
    return Loader().load(doc, name);
  } catch (const PathError& e) {
    // Name the --set arguments that touch the failing path (all of them if none does), so that
    // an error caused by an override does not send the reader looking in the file.
    std::string after;
    for (const auto& o : sets)
      if (related(override_pointer(o), e.path))
        after += (after.empty() ? "" : ", ") + ("--set " + override_text(o));
    if (after.empty())
      for (const auto& o : sets) after += (after.empty() ? "" : ", ") + ("--set " + override_text(o));
    throw scenario_error(after.empty() ? path : fmt::format("{} (after {})", path, after), e);
  }
}

}  // namespace stalesim
