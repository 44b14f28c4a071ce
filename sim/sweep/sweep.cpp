// Sweeps (sim/sweep/sweep.hpp): field paths and cells (sim/sweep/sweep_detail.hpp), parsing --grid, --zip
// and --seeds, run records and sweep.csv. Planning: sweep_plan.cpp; running: sweep_run.cpp.
#include "sim/sweep/sweep.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <xxhash.h>

#include "base/file_read.hpp"
#include "sim/output/names.hpp"
#include "sim/output/outputs.hpp"
#include "sim/scenario/fields.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/paths.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim/sweep/sweep_detail.hpp"
#include "sim/text.hpp"

namespace stalesim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace sweep_detail {

// ---- Paths and fields ------------------------------------------------------------------------

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "cluster.workers.0.count" -> "/cluster/workers/0/count".
std::string dotted_pointer(std::string_view dotted) {
  std::string p;
  for (const auto& part : split_field_path(dotted)) p += "/" + escape_token(part);
  return p;
}

// The field patterns of a dotted path and of each object above it, outermost first:
// "cluster.workers.0.count" -> "/cluster", "/cluster/workers", "/cluster/workers/*",
// "/cluster/workers/*/count".
std::vector<std::string> field_chain(std::string_view dotted) {
  std::vector<std::string> chain;
  std::string p;
  for (const auto& part : split_field_path(dotted)) {
    p += "/" + (all_digits(part) ? std::string("*") : escape_token(part));
    chain.push_back(p);
  }
  return chain;
}

// The field a dotted path sets, or nullptr. An index into an integer array ("model.hidden.0")
// names the array's field.
const FieldInfo* field_of(std::string_view dotted) {
  const auto chain = field_chain(dotted);
  if (const FieldInfo* f = find_scenario_field(chain.back())) return f;
  if (chain.size() >= 2 && chain.back().ends_with("/*"))
    if (const FieldInfo* f = find_scenario_field(chain[chain.size() - 2]);
        f && f->type == FieldType::kIntegerArray)
      return f;
  return nullptr;
}

// The first field on the path (it or an object above it) that does not apply to `s`, or nullptr.
const FieldInfo* inapplicable_field(std::string_view dotted, const Scenario& s) {
  for (const auto& p : field_chain(dotted))
    if (const FieldInfo* f = find_scenario_field(p); f && f->applies && !f->applies(s)) return f;
  return nullptr;
}

bool is_conditional(std::string_view dotted) {
  for (const auto& p : field_chain(dotted))
    if (const FieldInfo* f = find_scenario_field(p); f && f->applies) return true;
  return false;
}

// "/policy/type" -> "policy.type"; "*" reads "N".
std::string pointer_to_dotted(std::string_view pointer) {
  std::string out;
  for (char c : pointer.substr(pointer.empty() ? 0 : 1)) out += c == '/' ? '.' : c;
  size_t star;
  while ((star = out.find('*')) != std::string::npos) out.replace(star, 1, "N");
  return out;
}

// The closest field path to `dotted`, in dotted form, or "".
std::string closest_field(std::string_view dotted) {
  const std::string pattern = pointer_to_dotted(field_chain(dotted).back());
  std::vector<std::string> candidates;
  for (const auto& f : scenario_fields()) candidates.push_back(pointer_to_dotted(f.path));
  const auto close = closest_names(pattern, candidates, std::max<size_t>(2, pattern.size() / 3));
  return close.empty() ? "" : close.front();
}

// "applies to ssp only (policy.type)".
std::string applies_phrase(const FieldInfo& f) {
  if (f.applies_to.empty()) return "does not apply to every scenario";
  return fmt::format("applies to {} only ({})", f.applies_to, pointer_to_dotted(f.applies_key));
}

// ---- Values and cells ------------------------------------------------------------------------

// Splits "a,[1,2],{\"k\":\"x,y\"}" at the commas outside brackets, braces and JSON strings.
std::vector<std::string> split_values(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  JsonStringScanner strings;
  for (char c : text) {
    if (strings.in_string_at(c)) {
      // part of a string: kept as it is
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(std::move(cur));
  return out;
}

// A JSON value as a flat CSV cell: numbers in shortest round-trip form (as in metrics.csv),
// strings without quotes, null as an empty cell; an array's items joined by ';' ("200;100"), an
// object's members as "key=value" joined by ' ' (no JSON brackets or quotes).
std::string cell_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "";
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return std::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(v.get<uint64_t>());
    case json::value_t::number_float:
      return fmt::format("{}", v.get<double>());
    case json::value_t::string:
      return v.get<std::string>();
    case json::value_t::array: {
      std::string out;
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ";" : "") + cell_of(v[i]);
      return out;
    }
    case json::value_t::object: {
      std::string out;
      for (const auto& [k, x] : v.items()) out += (out.empty() ? "" : " ") + k + "=" + cell_of(x);
      return out;
    }
    default:
      return v.dump();
  }
}

// A folder-name part: letters, digits and . _ + - kept, '=' kept, anything else '-', at most
// 40 characters.
std::string sanitize_part(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' ||
                      c == '-' || c == '=';
    out += keep ? c : '-';
  }
  if (out.size() > 40) out.resize(40);
  return out;
}

std::string folder_hash(const json& scenario_json) {
  const std::string text = scenario_json.dump();
  return fmt::format("{:08x}", static_cast<uint64_t>(XXH3_64bits(text.data(), text.size())) >> 32);
}

// The short labels of the swept keys in folder names: the path's last part ("staleness"), or the
// whole path when another key ends the same way or the last part is an index.
std::vector<std::string> folder_labels(const std::vector<std::string>& keys) {
  const auto last = [](const std::string& k) {
    return k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1);
  };
  std::vector<std::string> labels;
  for (const auto& k : keys) {
    const std::string l = last(k);
    const bool clash =
        std::count_if(keys.begin(), keys.end(), [&](const std::string& o) { return last(o) == l; }) > 1;
    labels.push_back(clash || all_digits(l) ? k : l);
  }
  return labels;
}

std::string read_text(const fs::path& p) {
  std::string why;
  auto text = read_regular_file(p.string(), kMaxSummaryBytes, why);
  if (!text) throw IoError(fmt::format("{}: cannot read: {}", p.string(), why));
  return std::move(*text);
}

json read_json(const fs::path& p) {
  std::string why;
  auto j = read_json_file(p.string(), kMaxSummaryBytes, why);
  if (!j) throw IoError(fmt::format("{}: {}", p.string(), why));
  return std::move(*j);
}

// "policy.staleness=4, policy.type=ssp, seed=2".
std::string describe_overrides(const std::vector<Override>& overrides, std::optional<uint64_t> seed,
                               uint64_t base_seed) {
  std::string out;
  for (const auto& o : overrides) out += (out.empty() ? "" : ", ") + o.path + "=" + o.value;
  return out + fmt::format("{}seed={}", out.empty() ? "" : ", ", seed.value_or(base_seed));
}

// A point's folder: "label=value" for each swept key the resolved point has (a value left out of
// it has no part), "seed=N" when seeds are swept, joined by '_', then '-' and the hash:
// "type=ssp_staleness=2_seed=1-3fa9c2d1" (at most 200 characters before the '-'). The name is a
// function of the resolved scenario, so
// identical points share it, and the hash keeps different points apart.
std::string point_folder_name(const json& scenario_json, const std::vector<std::string>& keys,
                              const std::vector<std::string>& labels, bool seeds) {
  std::string name;
  for (size_t k = 0; k < keys.size(); ++k) {
    const json::json_pointer ptr(dotted_pointer(keys[k]));
    if (!scenario_json.contains(ptr) || scenario_json[ptr].is_null()) continue;
    name += (name.empty() ? "" : "_") + sanitize_part(labels[k] + "=" + cell_of(scenario_json[ptr]));
  }
  if (seeds)
    name += (name.empty() ? "" : "_") + fmt::format("seed={}", scenario_json.value("seed", uint64_t{0}));
  if (name.size() > 200) name.resize(200);  // a file name has at most 255 bytes
  return (name.empty() ? std::string("point") : name) + "-" + folder_hash(scenario_json);
}

}  // namespace sweep_detail

using namespace sweep_detail;

// ---- Parsing ---------------------------------------------------------------------------------

bool is_sweep_field(std::string_view dotted) { return field_of(dotted) != nullptr; }
std::string closest_sweep_field(std::string_view dotted) { return closest_field(dotted); }

SweepKey parse_sweep_key(std::string_view arg, std::string_view option) {
  const auto bad = [&](const std::string& why) {
    return SweepError(fmt::format("{} '{}': {}", option, arg, why));
  };
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw bad(fmt::format("expected PATH=V1,V2,... (e.g. {} policy.staleness=0,1,2)", option));
  SweepKey k{std::string(arg.substr(0, eq)), split_values(arg.substr(eq + 1))};
  for (const auto& part : split_field_path(k.path))
    if (part.empty()) throw bad(fmt::format("expected PATH=V1,V2,... (empty key in path '{}')", k.path));
  if (k.path == "seed") throw bad("sweep seeds with --seeds (e.g. --seeds 1..5 or --seeds 1,3,9)");
  if (!field_of(k.path)) {
    const std::string close = closest_field(k.path);
    throw bad(fmt::format("unknown scenario field '{}'{} ('stalesim fields' lists every field)", k.path,
                          close.empty() ? "" : fmt::format("; did you mean '{}'?", close)));
  }
  if (arg.substr(eq + 1).empty()) throw bad("expected at least one value after '='");
  std::set<std::string> seen;
  for (size_t i = 0; i < k.values.size(); ++i) {
    if (k.values[i].empty()) throw bad(fmt::format("value {} of {} is empty", i + 1, k.values.size()));
    // A --zip list may repeat a value (policy.type=ssp,ssp with staleness=3,15); its tuples may not.
    if (option != "--zip" && !seen.insert(k.values[i]).second)
      throw bad(fmt::format("value '{}' is listed twice", k.values[i]));
  }
  return k;
}

std::vector<uint64_t> parse_seeds(std::string_view arg) {
  const auto bad = [&](const std::string& why) {
    return SweepError(
        fmt::format("--seeds '{}': {}; expected A..B or a comma-separated list of integers >= 0 "
                    "(e.g. --seeds 1..5 or --seeds 1,3,9)",
                    arg, why));
  };
  const auto number = [&](std::string_view s) {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!all_digits(s) || ec != std::errc() || end != s.data() + s.size())
      throw bad(s.empty() ? std::string("a seed is missing") : fmt::format("'{}' is not an integer >= 0", s));
    return v;
  };
  std::vector<uint64_t> seeds;
  if (const size_t dots = arg.find(".."); dots != std::string_view::npos) {
    const uint64_t a = number(arg.substr(0, dots)), b = number(arg.substr(dots + 2));
    if (a > b) throw bad(fmt::format("the range is empty ({} > {})", a, b));
    if (b - a >= kMaxSweepPoints) throw bad(fmt::format("more than {} seeds", kMaxSweepPoints));
    for (uint64_t s = a;; ++s) {
      seeds.push_back(s);
      if (s == b) break;
    }
    return seeds;
  }
  std::set<uint64_t> seen;
  for (const auto& part : split_values(arg)) {
    const uint64_t s = number(part);
    if (!seen.insert(s).second) throw bad(fmt::format("seed {} is listed twice", s));
    seeds.push_back(s);
  }
  if (seeds.size() > kMaxSweepPoints) throw bad(fmt::format("more than {} seeds", kMaxSweepPoints));
  return seeds;
}

// ---- Records and rows ------------------------------------------------------------------------

json to_json(const RunRecord& r) {
  return {{"status", std::string(enum_name(r.status))},
          {"skipped", r.skipped},
          {"wrote", r.wrote},
          {"message", r.message},
          {"cells", r.cells}};
}

RunRecord run_record_from_json(const json& j) {
  RunRecord r;
  const std::string status = j.at("status").get<std::string>();
  const std::optional<SweepStatus> parsed = enum_from_name<SweepStatus>(status);
  if (!parsed) throw std::invalid_argument("a run record's status '" + status + "' is not a sweep status");
  r.status = *parsed;
  r.skipped = j.at("skipped").get<bool>();
  r.wrote = j.at("wrote").get<bool>();
  r.message = j.at("message").get<std::string>();
  r.cells = j.at("cells").get<std::vector<std::string>>();
  return r;
}

std::vector<std::string> result_cells(const json& summary) {
  // A folder written before the rename (a resumed sweep) is read under the current names.
  const json s = current_summary_names(summary);
  const auto at = [&](const char* pointer) {
    const json::json_pointer p(pointer);
    return s.contains(p) ? cell_of(s[p]) : std::string();
  };
  std::string wait;
  if (s.contains("workers") && s["workers"].is_array() && !s["workers"].empty()) {
    double sum = 0.0;
    for (const auto& w : s["workers"]) sum += w.at("wait_fraction").get<double>();
    wait = fmt::format("{}", sum / static_cast<double>(s["workers"].size()));
  }
  // The model's quality: its own metric (a key of "final" other than the three every run has),
  // else test accuracy, else test loss.
  std::string quality_name, quality;
  if (s.contains("final") && s["final"].is_object()) {
    const json& f = s["final"];
    for (const auto& [k, v] : f.items())
      if (k != "test_accuracy" && k != "test_loss" && k != "train_loss") {
        quality_name = k;
        quality = cell_of(v);
      }
    for (const char* k : {"test_accuracy", "test_loss"})
      if (quality_name.empty() && f.contains(k) && !f[k].is_null()) {
        quality_name = k;
        quality = cell_of(f[k]);
      }
  }
  return {at("/result_hash"),
          at("/virtual_time_s"),
          at("/server_updates"),
          at("/final/test_accuracy"),
          at("/final/test_loss"),
          at("/time_to_target_s"),
          at("/staleness/mean"),
          at("/staleness/max"),
          at("/missed_updates/mean"),
          at("/bytes/push"),
          at("/bytes/pull"),
          wait,
          quality_name,
          quality};
}

namespace {
// The point's seed: resolved, else from --seeds, else the base scenario's.
uint64_t point_seed(const SweepPlan& plan, const SweepPoint& p) {
  return p.scenario ? p.scenario->seed : p.seed.value_or(plan.base.seed);
}
}  // namespace

SweepStatus point_status(const SweepPlan& plan, const std::vector<RunRecord>& records, size_t point) {
  const SweepPoint& p = plan.points.at(point);
  return p.scenario ? records.at(p.run).status : SweepStatus::kFailed;
}

SweepTally tally_sweep(const SweepPlan& plan, const std::vector<RunRecord>& records) {
  SweepTally t;
  for (size_t i = 0; i < plan.points.size(); ++i) {
    const SweepStatus status = point_status(plan, records, i);
    if (status == SweepStatus::kInterrupted)
      ++t.interrupted;
    else if (status == SweepStatus::kNotRun)
      ++t.not_run;
    else if (!sweep_status_ok(status))
      ++t.failed;
    else if (records[plan.points[i].run].skipped)
      ++t.skipped;
    else
      ++t.ran;
  }
  return t;
}

std::string describe_point(const SweepPlan& plan, size_t point) {
  const SweepPoint& p = plan.points.at(point);
  std::string out;
  for (const auto& o : p.overrides) out += (out.empty() ? "" : ", ") + o.path + "=" + o.value;
  return out + fmt::format("{}seed={}", out.empty() ? "" : ", ", point_seed(plan, p));
}

std::string sweep_row_mismatch(const std::vector<std::string>& header, const std::vector<std::string>& row,
                               const json& summary) {
  const auto differs = [](const std::string& column, const std::string& said, const std::string& there) {
    return fmt::format("column '{}' says '{}' but the folder's summary.json gives '{}'", column, said, there);
  };
  try {
    if (!summary.is_object()) return "the folder's summary.json is not an object";
    const json::json_pointer scenario_ptr("/manifest/scenario");
    if (!summary.contains(scenario_ptr) || !summary[scenario_ptr].is_object())
      return "the folder's summary.json has no manifest scenario";
    const json& scenario = summary[scenario_ptr];
    const std::vector<std::string> results = result_cells(summary);
    const auto seed_at = std::find(header.begin(), header.end(), "seed");
    const auto seed_col = static_cast<size_t>(seed_at - header.begin());
    for (size_t c = 0; c < header.size() && c < row.size(); ++c) {
      const std::string& name = header[c];
      std::optional<std::string> there;
      if (name == "status") {
        there = summary.contains("status") ? cell_of(summary["status"]) : std::string();
      } else if (name == "seed") {
        there = scenario.contains("seed") ? cell_of(scenario["seed"]) : std::string();
      } else if (const auto r = std::find(kResultColumns.begin() + 2, kResultColumns.end(), name);
                 r != kResultColumns.end()) {
        const auto i = static_cast<size_t>(r - (kResultColumns.begin() + 2));
        if (i < results.size()) there = results[i];
      } else if (c < seed_col) {
        // A grid key names a scenario field; a derived column without a path names none.
        try {
          const json::json_pointer ptr(dotted_pointer(name));
          if (scenario.contains(ptr)) there = cell_of(scenario[ptr]);
        } catch (const std::exception&) {
        }
      }
      if (there && *there != row[c]) {
        const std::string why = differs(name, row[c], *there);
        return c <= seed_col ? why + ": the folder holds another point's run" : why;
      }
    }
  } catch (const std::exception& e) {
    return fmt::format("the folder's summary.json cannot be read as a run's ({})", e.what());
  }
  return "";
}

std::string sweep_csv(const SweepPlan& plan, const std::vector<RunRecord>& records) {
  std::string out;
  for (const auto& k : plan.key_columns) out += csv_escape(k) + ",";
  for (const auto& k : plan.derived_columns) out += csv_escape(k) + ",";
  out += "seed";
  for (const char* c : kResultColumns) out += std::string(",") + c;
  out += "\n";
  for (const auto& p : plan.points) {
    std::string row;
    for (size_t k = 0; k < plan.key_columns.size(); ++k) {
      std::string cell = p.overrides[k].value;  // as given when the point does not resolve
      if (json::accept(cell)) cell = cell_of(json::parse(cell));
      if (p.scenario) {
        const json::json_pointer ptr(dotted_pointer(plan.key_columns[k]));
        cell = p.scenario_json.contains(ptr) ? cell_of(p.scenario_json[ptr]) : std::string();
      }
      row += csv_escape(cell) + ",";
    }
    for (size_t d = 0; d < plan.derived_columns.size(); ++d)
      row += csv_escape(d < p.derived.size() ? cell_of(p.derived[d]) : std::string()) + ",";
    row += std::to_string(point_seed(plan, p));
    if (!p.scenario) {
      row += ",,failed";
      for (size_t c = 2; c < kResultColumns.size(); ++c) row += ",";
    } else {
      const RunRecord& r = records.at(p.run);
      row += "," + (r.wrote ? p.folder : std::string()) + "," + csv_escape(std::string(enum_name(r.status)));
      for (size_t c = 2; c < kResultColumns.size(); ++c)
        row += "," + (c - 2 < r.cells.size() ? csv_escape(r.cells[c - 2]) : std::string());
    }
    out += row + "\n";
  }
  return out;
}

}  // namespace stalesim
