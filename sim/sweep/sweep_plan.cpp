// Planning a sweep (sim/sweep/sweep.hpp): its points in grid order, each resolved into a scenario and
// a folder, and the checks made before anything runs.
#include "sim/sweep/sweep.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "sim/build_info.hpp"
#include "sim/scenario/fields.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim/sweep/sweep_detail.hpp"

namespace stalesim {

using nlohmann::json;
using sweep_detail::applies_phrase;
using sweep_detail::describe_overrides;
using sweep_detail::dotted_pointer;
using sweep_detail::folder_labels;
using sweep_detail::inapplicable_field;
using sweep_detail::is_conditional;
using sweep_detail::point_folder_name;

namespace {

// ---- Resolution of one point -----------------------------------------------------------------

struct Resolved {
  std::optional<Scenario> scenario;
  std::vector<std::string> dropped;
  std::string error;
};

// The loader names overrides "--set PATH=VALUE"; a point's own values came from --grid, --zip or
// the sweep file: `labels[k]` is what to call own[k] instead ("--grid policy.staleness=3").
std::string relabel(std::string message, const std::vector<Override>& own,
                    const std::vector<std::string>& labels) {
  for (size_t k = 0; k < own.size(); ++k) {
    const std::string from = "--set " + own[k].path + "=" + own[k].value;
    const std::string& to = labels[k];
    for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
      message.replace(at, from.size(), to);
  }
  return message;
}

Resolved resolve_point(const SweepSpec& spec, const std::vector<Override>& own,
                       const std::vector<std::string>& labels, std::optional<uint64_t> seed) {
  const auto load = [&](const std::vector<Override>& mine) {
    std::vector<Override> all = spec.sets;
    all.insert(all.end(), mine.begin(), mine.end());
    try {
      return load_scenario_file(spec.scenario_path, all, seed, spec.profile_dir);
    } catch (const ScenarioError& e) {
      // The sweep file's own "set" entries are named as the file's.
      std::string message = relabel(e.what(), own, labels);
      if (!spec.spec_file.empty()) {
        const std::vector<Override> file_sets(
            spec.sets.begin(),
            spec.sets.begin() + static_cast<long>(std::min(spec.file_sets, spec.sets.size())));
        std::vector<std::string> set_labels;
        for (const auto& o : file_sets)
          set_labels.push_back(spec.spec_file + ": set " + o.path + "=" + o.value);
        message = relabel(message, file_sets, set_labels);
      }
      throw ScenarioError(message);
    }
  };
  try {
    return {load(own), {}, {}};
  } catch (const ScenarioError& first) {
    // Values whose field may not apply to this point (policy.staleness for an asp point): load
    // the point without them, keep those that apply, drop the others.
    std::vector<Override> fixed;
    bool any_conditional = false;
    for (const auto& o : own) {
      if (is_conditional(o.path))
        any_conditional = true;
      else
        fixed.push_back(o);
    }
    if (!any_conditional) return {std::nullopt, {}, first.what()};
    std::optional<Scenario> without;
    try {
      without = load(fixed);
    } catch (const ScenarioError&) {
      return {std::nullopt, {}, first.what()};
    }
    std::vector<Override> kept;
    std::vector<std::string> dropped;
    for (const auto& o : own) {
      if (is_conditional(o.path) && inapplicable_field(o.path, *without))
        dropped.push_back(o.path);
      else
        kept.push_back(o);
    }
    if (dropped.empty()) return {std::nullopt, {}, first.what()};
    try {
      return {load(kept), dropped, {}};
    } catch (const ScenarioError& e) {
      return {std::nullopt, {}, e.what()};
    }
  }
}

// ---- Planning --------------------------------------------------------------------------------

// The base is the file with every --set, when that is a valid scenario. A --set may also need a
// point's values (--set policy.staleness=3 with --grid policy.type=asp,ssp over an asp file):
// then the base is the file alone, and each point checks the --set after its own values.
Scenario load_base(const SweepSpec& spec) {
  try {
    return load_scenario_file(spec.scenario_path, spec.sets, std::nullopt, spec.profile_dir);
  } catch (const ScenarioError&) {
    if (spec.sets.empty()) throw;
    for (const auto& o : spec.sets)
      if (!is_sweep_field(o.path)) throw;  // an unknown field: no point can fix that
    return load_scenario_file(spec.scenario_path, {}, std::nullopt, spec.profile_dir);
  }
}

// One dimension of the grid: a --grid key, or all the --zip keys together.
struct Axis {
  std::vector<const SweepKey*> keys;  // several for the zip axis
  size_t size = 1;
};

// The grid's axes, the first --grid key first and the zip axis last. Fills plan.key_columns and
// `given` (path -> the option that sweeps it). Throws SweepError for a key swept twice or also
// given by --set, unequal --zip lengths, a repeated --zip tuple, and a derived path also set.
std::vector<Axis> sweep_axes(const SweepSpec& spec, SweepPlan& plan,
                             std::map<std::string, std::string>& given) {
  std::vector<Axis> axes;
  const std::string grid_option = spec.spec_file.empty() ? "--grid" : spec.spec_file + ": grid";
  const std::string zip_option = spec.spec_file.empty() ? "--zip" : spec.spec_file + ": zip";
  const auto check_key = [&](const SweepKey& k, const std::string& option) {
    if (auto it = given.find(k.path); it != given.end())
      throw SweepError(fmt::format("{} {}: {} is already swept by {}; give each key once", option, k.path,
                                   k.path, it->second));
    for (const auto& s : spec.sets)
      if (s.path == k.path)
        throw SweepError(
            fmt::format("{} {}: also given by --set {}={}; give it once", option, k.path, s.path, s.value));
    given.emplace(k.path, option);
    plan.key_columns.push_back(k.path);
  };
  for (const auto& k : spec.grid) {
    check_key(k, grid_option);
    axes.push_back({{&k}, k.values.size()});
  }
  if (!spec.zip.empty()) {
    Axis zip;
    zip.size = spec.zip.front().values.size();
    for (const auto& k : spec.zip) {
      check_key(k, zip_option);
      if (k.values.size() != zip.size)
        throw SweepError(fmt::format("--zip lists must have equal lengths: {} has {} value{}, {} has {}",
                                     spec.zip.front().path, zip.size, zip.size == 1 ? "" : "s", k.path,
                                     k.values.size()));
      zip.keys.push_back(&k);
    }
    std::set<std::vector<std::string>> tuples;
    for (size_t i = 0; i < zip.size; ++i) {
      std::vector<std::string> t;
      for (const auto* k : zip.keys) t.push_back(k->values[i]);
      if (!tuples.insert(t).second) {
        std::string shown;
        for (size_t j = 0; j < t.size(); ++j)
          shown += fmt::format("{}{}={}", j ? ", " : "", zip.keys[j]->path, t[j]);
        throw SweepError(fmt::format("--zip: the point ({}) is listed twice", shown));
      }
    }
    axes.push_back(zip);
  }
  for (const auto& d : spec.derived)
    for (const auto& o : spec.sets)
      if (!d.path.empty() && o.path == d.path)
        throw SweepError(fmt::format("{}: sets {}, also given by --set {}={}; give it once", d.where, d.path,
                                     o.path, o.value));
  return axes;
}

// The number of points before constraints: the axes' sizes times the seeds'. Throws SweepError
// above kMaxSweepPoints.
size_t count_points(const std::vector<Axis>& axes, size_t seed_count) {
  size_t total = seed_count;
  for (const auto& a : axes) {
    if (a.size == 0 || total > kMaxSweepPoints / a.size)
      throw SweepError(fmt::format("the sweep has more than {} points", kMaxSweepPoints));
    total *= a.size;
  }
  if (total > kMaxSweepPoints)
    throw SweepError(fmt::format("the sweep has more than {} points", kMaxSweepPoints));
  return total;
}

// Point `i` in grid order, its values and seed (mixed radix: the seeds fastest, then the zip
// axis, then the grid keys from last to first).
SweepPoint grid_point(const SweepSpec& spec, const std::vector<Axis>& axes, size_t i) {
  SweepPoint p;
  const size_t seed_count = spec.seeds.empty() ? 1 : spec.seeds.size();
  size_t rest = i;
  if (!spec.seeds.empty()) p.seed = spec.seeds[rest % seed_count];
  rest /= seed_count;
  std::vector<size_t> digit(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    digit[a] = rest % axes[a].size;
    rest /= axes[a].size;
  }
  for (size_t a = 0; a < axes.size(); ++a)
    for (const SweepKey* k : axes[a].keys) p.overrides.push_back({k->path, k->values[digit[a]]});
  return p;
}

// Evaluates the sweep file's derived fields (a derived path becomes one of the point's values) and
// constraints at point `p`; returns whether every constraint holds. Derived fields and
// constraints see the point's values as listed, then --set, then the base scenario. Throws
// SweepError naming the expression and the point.
bool derive(const SweepSpec& spec, const Scenario& base, const json& base_json, SweepPoint& p) {
  if (spec.derived.empty() && spec.constraints.empty()) return true;
  const size_t swept = p.overrides.size();
  const auto lookup = [&](const std::string& name) -> json {
    for (size_t d = 0; d < p.derived.size(); ++d)
      if (spec.derived[d].name == name) return p.derived[d];
    if (name == "seed") return p.seed.value_or(base.seed);
    for (size_t k = 0; k < swept; ++k)
      if (p.overrides[k].path == name) {
        const std::string& v = p.overrides[k].value;
        return json::accept(v) ? json::parse(v) : json(v);
      }
    for (const auto& o : spec.sets)
      if (o.path == name) return json::accept(o.value) ? json::parse(o.value) : json(o.value);
    const json::json_pointer ptr(dotted_pointer(name));
    return base_json.contains(ptr) ? base_json[ptr] : json(nullptr);
  };
  const auto where = [&](const std::string& at, const std::string& why) {
    return SweepError(
        fmt::format("{}: {} (at the point {})", at, why, describe_overrides(p.overrides, p.seed, base.seed)));
  };
  // The value of `expr` at this point; an error names `at` and the expression.
  const auto eval = [&](const Expr& expr, const std::string& at) {
    try {
      return expr.eval(lookup);
    } catch (const ExprError& e) {
      throw where(at, fmt::format("'{}': {}", expr.text(), e.what()));
    }
  };
  for (const auto& d : spec.derived) {
    json v = eval(d.expr, d.where);
    if (!d.path.empty()) {
      if (v.is_null())
        throw where(d.where,
                    fmt::format("'{}' is null: it names a field this point does not have", d.expr.text()));
      p.overrides.push_back({d.path, override_text(v)});
    }
    p.derived.push_back(std::move(v));
  }
  bool keep = true;
  for (const auto& c : spec.constraints) {
    const json v = eval(c.expr, c.where);
    if (!v.is_boolean())
      throw where(c.where, fmt::format("'{}' is {}, not true or false", c.expr.text(), override_text(v)));
    keep = keep && v.get<bool>();
  }
  return keep;
}

// Appends point `p`, resolved as `r`, to the plan, and gives it its folder: a new run, or the run
// of an identical earlier point. `run_of`: folder -> run. Throws SweepError when two different
// points are named the same folder.
void add_point(SweepPlan& plan, SweepPoint p, Resolved r, const std::vector<std::string>& labels,
               std::map<std::string, size_t>& run_of) {
  const size_t index = p.index;
  plan.points.push_back(std::move(p));
  SweepPoint& pt = plan.points.back();
  if (!r.scenario) {
    pt.error = std::move(r.error);
    return;
  }
  pt.dropped = std::move(r.dropped);
  pt.scenario_json = scenario_to_json(*r.scenario);
  pt.scenario = std::move(r.scenario);
  pt.folder = point_folder_name(pt.scenario_json, plan.key_columns, labels, !plan.spec.seeds.empty());
  auto [it, fresh] = run_of.emplace(pt.folder, plan.runs.size());
  if (fresh) {
    plan.runs.push_back({pt.folder, {}});
  } else if (plan.points[plan.runs[it->second].points.front()].scenario_json != pt.scenario_json) {
    throw SweepError(fmt::format("points {} and {} differ but are named the same folder {}",
                                 plan.runs[it->second].points.front(), index, pt.folder));
  }
  pt.run = it->second;
  plan.runs[it->second].points.push_back(index);
}

// Swept keys that do not apply to some points: a note; to none: a SweepError.
void note_dropped_keys(SweepPlan& plan, const std::map<std::string, std::string>& given) {
  size_t resolved = 0;
  for (const auto& p : plan.points) resolved += p.scenario ? 1 : 0;
  for (const auto& key : plan.key_columns) {
    size_t dropped = 0;
    const SweepPoint* example = nullptr;
    for (const auto& p : plan.points)
      if (std::find(p.dropped.begin(), p.dropped.end(), key) != p.dropped.end()) {
        ++dropped;
        if (!example) example = &p;
      }
    if (dropped == 0) continue;
    const FieldInfo* f = inapplicable_field(key, *example->scenario);
    const std::string why = f ? applies_phrase(*f) : std::string("does not apply");
    const std::string& option = given.at(key);
    if (dropped == resolved)
      throw SweepError(
          fmt::format("{} {}: {}, and no point of this sweep has it; sweep that too, or remove {} {}", option,
                      key, why, option, key));
    plan.notes.push_back(
        fmt::format("{} is left out of {} of {} points: it {}; their {} cells are empty, and "
                    "points that become identical share a folder",
                    key, dropped, resolved, why, key));
  }
}

// DIR/sweep.json.
json sweep_manifest(const SweepPlan& plan) {
  const SweepSpec& spec = plan.spec;
  json grid = json::array(), zip = json::array(), sets = json::array();
  for (const auto& k : spec.grid) grid.push_back({{"path", k.path}, {"values", k.values}});
  for (const auto& k : spec.zip) zip.push_back({{"path", k.path}, {"values", k.values}});
  for (const auto& s : spec.sets) sets.push_back(s.path + "=" + s.value);
  return {{"stalesim_sweep", 1},
          {"sweep_file", spec.spec_file.empty() ? json(nullptr) : json(spec.spec_file)},
          {"sweep_spec", spec.spec_json},
          {"scenario_file", spec.scenario_path},
          {"base", scenario_to_json(plan.base)},
          {"sets", sets},
          {"grid", grid},
          {"zip", zip},
          {"seeds", spec.seeds.empty() ? json(nullptr) : json(spec.seeds)},
          {"points", plan.points.size()},
          {"skipped_by_constraints", plan.skipped},
          {"folders", plan.runs.size()},
          {"build", build_info_json()}};
}

}  // namespace

SweepPlan plan_sweep(const SweepSpec& spec, const std::function<void(size_t, size_t)>& on_progress) {
  SweepPlan plan;
  plan.spec = spec;
  plan.base = load_base(spec);
  const json base_json = scenario_to_json(plan.base);
  std::map<std::string, std::string> given;  // path -> the option that gives it
  const std::vector<Axis> axes = sweep_axes(spec, plan, given);
  const size_t total = count_points(axes, spec.seeds.empty() ? 1 : spec.seeds.size());

  // What messages call each of a point's own values: the option, or the sweep file's key.
  std::vector<std::string> prefixes;
  const std::string file_prefix = spec.spec_file.empty() ? "" : spec.spec_file + ": ";
  for (size_t a = 0; a < axes.size(); ++a)
    for (size_t k = 0; k < axes[a].keys.size(); ++k)
      prefixes.push_back(file_prefix + (a < spec.grid.size() ? (spec.spec_file.empty() ? "--grid" : "grid")
                                                             : (spec.spec_file.empty() ? "--zip" : "zip")));
  for (const auto& d : spec.derived)
    if (!d.path.empty()) prefixes.push_back(file_prefix + "derived '" + d.name + "':");
  const std::vector<std::string> labels = folder_labels(plan.key_columns);
  for (const auto& d : spec.derived) plan.derived_columns.push_back(d.name);

  std::map<std::string, size_t> run_of;  // folder -> run
  plan.points.reserve(total);
  for (size_t i = 0; i < total; ++i) {
    SweepPoint p = grid_point(spec, axes, i);
    p.index = plan.points.size();
    if (on_progress && i % 1000 == 0 && i > 0) on_progress(i, total);
    if (!derive(spec, plan.base, base_json, p)) {
      ++plan.skipped;
      continue;
    }
    std::vector<std::string> own_labels;
    for (size_t k = 0; k < p.overrides.size(); ++k)
      own_labels.push_back(prefixes[k] + " " + p.overrides[k].path + "=" + p.overrides[k].value);
    Resolved r = resolve_point(spec, p.overrides, own_labels, p.seed);
    add_point(plan, std::move(p), std::move(r), labels, run_of);
  }
  if (plan.points.empty())
    throw SweepError(fmt::format("{}the constraints skip all {} points: nothing to run", file_prefix, total));
  note_dropped_keys(plan, given);
  plan.manifest = sweep_manifest(plan);
  return plan;
}

void check_sweep_memory(const SweepPlan& plan, const std::optional<MemoryLimit>& limit, int threads,
                        int jobs) {
  if (!limit) return;
  std::string listed;
  size_t over = 0, over_points = 0;
  std::vector<double> each;  // each run's estimate less the process's own share
  double process = 0;
  for (const auto& run : plan.runs) {
    const SweepPoint& first = plan.points[run.points.front()];
    const std::string shortfall = memory_shortfall(*first.scenario, *limit, threads);
    if (shortfall.empty()) {
      const MemoryEstimate e = estimate_memory(*first.scenario, threads);
      each.push_back(e.total() - e.process_bytes);
      process = e.process_bytes;
      continue;
    }
    over_points += run.points.size();
    if (++over > 3) continue;
    const std::string shared =
        run.points.size() > 1 ? fmt::format(" and {} identical point(s)", run.points.size() - 1) : "";
    listed += fmt::format("\n  point {} ({}){}, folder {}: {}", first.index,
                          describe_point(plan, first.index), shared, run.folder, shortfall);
  }
  const std::string origin = plan.spec.spec_file.empty() ? plan.spec.scenario_path : plan.spec.spec_file;
  if (over > 0)
    throw ScenarioError(fmt::format(
        "{}: {} of {} sweep points need more memory than is available; nothing was run:{}{}\n  {}", origin,
        over_points, plan.points.size(), listed,
        over > 3 ? fmt::format("\n  and {} more folder(s)", over - 3) : std::string(), kMemoryAdvice));
  // Every point fits alone; `jobs` of them run at once in this process (the largest, at worst).
  const size_t at_once = std::min(each.size(), static_cast<size_t>(std::max(jobs, 1)));
  if (at_once < 2) return;
  std::partial_sort(each.begin(), each.begin() + static_cast<std::ptrdiff_t>(at_once), each.end(),
                    std::greater<>());
  double together = process;
  for (size_t i = 0; i < at_once; ++i) together += each[i];
  if (together <= limit->bytes) return;
  throw ScenarioError(fmt::format(
      "{}: --jobs {}: the {} largest sweep points run at once need about {} together, but only {} is "
      "available ({}); nothing was run; run fewer points at once (--jobs), or {}",
      origin, jobs, at_once, format_bytes(together), format_bytes(limit->bytes), limit->source,
      kMemoryAdvice));
}

std::string default_sweep_dir(const SweepPlan& plan, const std::string& root) {
  return root + "/" + plan.base.name + "-sweep";
}

}  // namespace stalesim
