// The field table's public side (sim/scenario/fields.hpp): the sections joined in documentation
// order, lookup by path, names, allowed values in words and the Markdown field reference.
#include "sim/scenario/fields.hpp"

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/scenario/detail.hpp"
#include "sim/scenario/table.hpp"

namespace stalesim {

namespace scenario_detail {
namespace {

std::vector<FieldInfo> build_fields() {
  Scenario d;  // the defaults of scenario.hpp, with one default worker group
  d.cluster.workers.resize(1);
  std::vector<FieldInfo> t = top_fields(d);
  append(t, data_fields(d));
  append(t, model_fields(d));
  append(t, optimizer_fields(d));
  append(t, policy_fields(d));
  append(t, cluster_fields(d));
  append(t, run_fields(d));
  return t;
}

const std::map<std::string, size_t, std::less<>>& field_index() {
  static const auto index = [] {
    std::map<std::string, size_t, std::less<>> m;
    const auto& fields = scenario_fields();
    for (size_t i = 0; i < fields.size(); ++i) m.emplace(fields[i].path, i);
    return m;
  }();
  return index;
}

}  // namespace

// The object or object array holding `f`, or nullptr at the top level.
const FieldInfo* parent_field(const FieldInfo& f) {
  std::string_view p = parent_path(f.path);
  if (p.ends_with("/*")) p.remove_suffix(2);
  return p.empty() ? nullptr : find_scenario_field(p);
}

bool applies_in(const FieldInfo& f, const Scenario& s) {
  for (const FieldInfo* p = &f; p != nullptr; p = parent_field(*p))
    if (p->applies && !p->applies(s)) return false;
  return true;
}

// "policy.type is \"bsp\"": the value that decides whether `f` applies.
std::string applies_context(const FieldInfo& f, const Scenario& s) {
  const FieldInfo* key = find_scenario_field(f.applies_key);
  return fmt::format("{} is {}", dotted(f.applies_key), key ? render(key->get(s, 0)) : "?");
}

}  // namespace scenario_detail

using namespace scenario_detail;

// ---- Public: the field table ---------------------------------------------------------------

std::string_view to_string(FieldType t) {
  switch (t) {
    case FieldType::kString:
      return "string";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kNumber:
      return "number";
    case FieldType::kBool:
      return "boolean";
    case FieldType::kIntegerArray:
      return "array of integers";
    case FieldType::kObject:
      return "object";
    case FieldType::kObjectArray:
      return "array of objects";
  }
  return "?";
}

const std::vector<FieldInfo>& scenario_fields() {
  static const std::vector<FieldInfo> fields = build_fields();
  return fields;
}

std::string escape_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

const FieldInfo* find_scenario_field(std::string_view path) {
  const auto& index = field_index();
  const auto it = index.find(path);
  return it == index.end() ? nullptr : &scenario_fields()[it->second];
}

namespace {
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '+' || c == '=' || c == ',' || c == '@';
}
}  // namespace

std::string check_scenario_name(const json& v) {
  const std::string& n = v.get_ref<const std::string&>();
  if (n.size() > kMaxNameLength)
    return fmt::format("expected at most {} characters, got {}", kMaxNameLength, n.size());
  for (char c : n)
    if (!name_char(c))
      return fmt::format(
          "expected letters, digits and . _ - + = , @ only (the name becomes a folder name), got {} "
          "(character {:#04x})",
          render(v), static_cast<unsigned char>(c));
  if (n.front() == '.') return fmt::format("expected a name not starting with '.', got {}", render(v));
  return "";
}

std::string sanitize_scenario_name(std::string_view stem) {
  std::string out;
  for (char c : stem) out += name_char(c) ? c : '_';
  while (!out.empty() && out.front() == '.') out.front() = '_';
  if (out.size() > kMaxNameLength) out.resize(kMaxNameLength);
  return out;
}

std::string describe_allowed(const FieldInfo& f) {
  switch (f.type) {
    case FieldType::kString:
      if (!f.allowed.empty()) return quoted_list(f.allowed);
      if (f.check == check_scenario_name)
        return fmt::format("1 to {} characters: letters, digits, . _ - + = , @; not starting with .",
                           f.max_length);
      return fmt::format("{} {} characters", f.min_length > 0 ? "1 to" : "at most", f.max_length);
    case FieldType::kInteger:
    case FieldType::kNumber:
      return describe_range(f, /*with_limit=*/true);
    case FieldType::kIntegerArray: {
      std::string out = fmt::format("{} {} items", f.min_items == 1 ? "1 to" : "at most", f.max_items);
      const std::string range = describe_range(f, /*with_limit=*/true);
      if (!range.empty()) out += "; each " + range;
      return out;
    }
    case FieldType::kObjectArray:
      return fmt::format("{} {} items", f.min_items == 1 ? "1 to" : "at most", f.max_items);
    case FieldType::kBool:
    case FieldType::kObject:
      return "";
  }
  return "";
}

std::string scenario_fields_markdown() {
  auto cell = [](std::string text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string md =
      "| Path | Type | Unit | Default | Allowed / range | Description |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& f : scenario_fields()) {
    std::string def = f.required ? "required" : "";  // values as code, words as words
    if (!f.default_value.is_null()) def = "`" + cell(f.default_value.dump()) + "`";
    if (!f.default_note.empty()) def += (def.empty() ? "" : "; ") + cell(f.default_note);
    std::string doc = f.doc;
    if (!f.applies_to.empty())
      doc += fmt::format(" Applies to {} only ({}).", f.applies_to, dotted(f.applies_key));
    if (f.nullable) doc += " null = unset.";
    const std::string allowed = describe_allowed(f);
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", f.path, to_string(f.type), cell(f.unit), def,
                      cell(allowed), cell(doc));
  }
  return md;
}

}  // namespace stalesim
