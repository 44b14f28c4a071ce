#include "sim/sweep.hpp"

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <xxhash.h>

#include "sim/build_info.hpp"
#include "sim/file_read.hpp"
#include "sim/outputs.hpp"
#include "sim/run_folder.hpp"
#include "sim/scenario/fields.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/paths.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim/simulation.hpp"
#include "sim/text.hpp"

namespace stalesim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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
  std::ifstream f(p, std::ios::binary);
  if (!f) throw IoError(fmt::format("{}: cannot read", p.string()));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
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
      return load_scenario_file(spec.scenario_path, all, seed);
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

// ---- Data shared by the runs of one process --------------------------------------------------

// Loaded data by what load_data() reads (the scenario's "data" object, and the seed for every
// generated dataset: all but the Fashion-MNIST files),
// shared read-only between threads and dropped after its last use.
class DataCache {
 public:
  using Ptr = std::shared_ptr<const DataSplit>;

  static std::string key(const Scenario& s) {
    std::string k = scenario_to_json(s)["data"].dump();
    if (s.data.dataset != "fashion-mnist") k += fmt::format("#seed={}", s.seed);
    return k;
  }

  // `uses`: how many runs will call acquire() or release() for each key.
  explicit DataCache(std::map<std::string, size_t> uses) : uses_(std::move(uses)) {}

  // The scenario's data, loaded by the first caller; others wait for it. Throws DataError.
  Ptr acquire(const Scenario& s) {
    const std::string k = key(s);
    std::promise<Ptr> promise;
    std::shared_future<Ptr> future;
    bool load = false;
    {
      std::lock_guard lock(mutex_);
      auto it = loaded_.find(k);
      if (it == loaded_.end()) {
        future = promise.get_future().share();
        loaded_.emplace(k, future);
        load = true;
      } else {
        future = it->second;
      }
    }
    if (load) {
      try {
        promise.set_value(std::make_shared<const DataSplit>(load_data(s)));
      } catch (...) {
        promise.set_exception(std::current_exception());
      }
    }
    return future.get();
  }

  // One use of the scenario's data is over: the last one frees it.
  void release(const Scenario& s) {
    const std::string k = key(s);
    std::lock_guard lock(mutex_);
    if (auto it = uses_.find(k); it != uses_.end() && --it->second == 0) {
      uses_.erase(it);
      loaded_.erase(k);
    }
  }

 private:
  std::mutex mutex_;
  std::map<std::string, size_t> uses_;
  std::map<std::string, std::shared_future<Ptr>> loaded_;
};

RunRecord record_from_summary(const json& summary, bool skipped) {
  RunRecord r;
  r.status = summary.at("status").get<std::string>();
  r.skipped = skipped;
  r.wrote = true;
  if (!sweep_status_ok(r.status) && summary.contains("detail"))
    r.message = summary["detail"].get<std::string>();
  r.cells = result_cells(summary);
  return r;
}

// The record of a folder that already holds this scenario's finished run, or nullopt.
std::optional<RunRecord> read_back(const fs::path& folder, const json& scenario_json) {
  std::error_code ec;
  if (!fs::is_regular_file(folder / "done", ec) || !fs::is_regular_file(folder / "summary.json", ec))
    return std::nullopt;
  try {
    const json summary = json::parse(read_text(folder / "summary.json"));
    if (summary.at("manifest").at("scenario") != scenario_json) return std::nullopt;
    if (read_text(folder / "done") != summary.at("result_hash").get<std::string>() + "\n")
      return std::nullopt;
    return record_from_summary(summary, /*skipped=*/true);
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable: run it again
  }
}

// `origin`: the scenario file, to name in a message when the scenario does not fit its data.
RunRecord execute(const Scenario& sc, const json& scenario_json, const std::string& origin,
                  const fs::path& folder, DataCache& cache, const std::atomic<bool>* interrupt, bool rerun,
                  int threads, const std::function<void(std::string_view)>& checkpoint) {
  // This run's one use of its data ends on every path out of here, once.
  struct Use {
    DataCache& cache;
    const Scenario& sc;
    Use(DataCache& c, const Scenario& s) : cache(c), sc(s) {}  // clang 14 lacks aggregate ( ) init
    ~Use() { cache.release(sc); }
  };
  std::optional<Use> use(std::in_place, cache, sc);
  if (!rerun)
    if (auto done = read_back(folder, scenario_json)) return *done;
  RunRecord rec;
  if (interrupt && interrupt->load()) return rec;  // not_run
  try {
    OutputFiles files;
    RunStatus status;
    {
      const DataCache::Ptr data = cache.acquire(sc);
      std::unique_ptr<Simulation> sim;
      try {
        sim = std::make_unique<Simulation>(sc, *data);
      } catch (const ScenarioError& e) {  // the scenario does not fit its data
        throw ScenarioError(fmt::format("{}: {}", origin, e.what()));
      }
      RunOptions ro;
      ro.interrupt = interrupt;
      ro.threads = threads;
      const RunResult r = sim->run(ro);
      status = r.status;
      files = render_outputs(sc, r);
    }
    use.reset();  // the data may go before the files are written
    if (status == RunStatus::kInterrupted && holds_finished_run(folder.string())) {
      rec.status = "interrupted";  // a --force rerun stopped: the finished run stays
      rec.wrote = true;
      return rec;
    }
    write_outputs(
        folder.string(), files, status != RunStatus::kInterrupted, /*force=*/true,
        OutputGuard{.checkpoint = checkpoint, .clean_stale = false});  // prepare_sweep_dir cleaned the folder
    return record_from_summary(json::parse(files.summary_json), /*skipped=*/false);
  } catch (const std::exception& e) {
    rec.status = "failed";
    rec.message = e.what();
    rec.wrote = false;
    return rec;
  }
}

}  // namespace

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

// ---- Planning --------------------------------------------------------------------------------

SweepPlan plan_sweep(const SweepSpec& spec, const std::function<void(size_t, size_t)>& on_progress) {
  SweepPlan plan;
  plan.spec = spec;
  // The base is the file with every --set, when that is a valid scenario. A --set may also need a
  // point's values (--set policy.staleness=3 with --grid policy.type=asp,ssp over an asp file):
  // then the base is the file alone, and each point checks the --set after its own values.
  try {
    plan.base = load_scenario_file(spec.scenario_path, spec.sets);
  } catch (const ScenarioError&) {
    if (spec.sets.empty()) throw;
    for (const auto& o : spec.sets)
      if (!is_sweep_field(o.path)) throw;  // an unknown field: no point can fix that
    plan.base = load_scenario_file(spec.scenario_path);
  }
  const json base_json = scenario_to_json(plan.base);

  struct Axis {
    std::vector<const SweepKey*> keys;  // several for the zip axis
    size_t size = 1;
  };
  std::vector<Axis> axes;
  std::map<std::string, std::string> given;  // path -> the option that gives it
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
  const size_t seed_count = spec.seeds.empty() ? 1 : spec.seeds.size();
  size_t total = seed_count;
  for (const auto& a : axes) {
    if (a.size == 0 || total > kMaxSweepPoints / a.size)
      throw SweepError(fmt::format("the sweep has more than {} points", kMaxSweepPoints));
    total *= a.size;
  }
  if (total > kMaxSweepPoints)
    throw SweepError(fmt::format("the sweep has more than {} points", kMaxSweepPoints));

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
    SweepPoint p;
    p.index = plan.points.size();
    // Mixed radix, the seeds fastest, then the zip axis, then the grid keys from last to first.
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
    if (on_progress && i % 1000 == 0 && i > 0) on_progress(i, total);

    // Derived fields and constraints see the point's values as listed, then the base scenario.
    if (!spec.derived.empty() || !spec.constraints.empty()) {
      const size_t swept = p.overrides.size();
      const auto lookup = [&](const std::string& name) -> json {
        for (size_t d = 0; d < p.derived.size(); ++d)
          if (spec.derived[d].name == name) return p.derived[d];
        if (name == "seed") return p.seed.value_or(plan.base.seed);
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
        return SweepError(fmt::format("{}: {} (at the point {})", at, why,
                                      describe_overrides(p.overrides, p.seed, plan.base.seed)));
      };
      for (const auto& d : spec.derived) {
        json v;
        try {
          v = d.expr.eval(lookup);
        } catch (const ExprError& e) {
          throw where(d.where, fmt::format("'{}': {}", d.expr.text(), e.what()));
        }
        if (!d.path.empty()) {
          if (v.is_null())
            throw where(d.where, fmt::format("'{}' is null: it names a field this point does not have",
                                             d.expr.text()));
          p.overrides.push_back({d.path, override_text(v)});
        }
        p.derived.push_back(std::move(v));
      }
      bool keep = true;
      for (const auto& c : spec.constraints) {
        json v;
        try {
          v = c.expr.eval(lookup);
        } catch (const ExprError& e) {
          throw where(c.where, fmt::format("'{}': {}", c.expr.text(), e.what()));
        }
        if (!v.is_boolean())
          throw where(c.where, fmt::format("'{}' is {}, not true or false", c.expr.text(), override_text(v)));
        keep = keep && v.get<bool>();
      }
      if (!keep) {
        ++plan.skipped;
        continue;
      }
    }

    std::vector<std::string> own_labels;
    for (size_t k = 0; k < p.overrides.size(); ++k)
      own_labels.push_back(prefixes[k] + " " + p.overrides[k].path + "=" + p.overrides[k].value);
    Resolved r = resolve_point(spec, p.overrides, own_labels, p.seed);
    const size_t index = p.index;
    plan.points.push_back(std::move(p));
    SweepPoint& pt = plan.points.back();
    if (!r.scenario) {
      pt.error = std::move(r.error);
      continue;
    }
    pt.dropped = std::move(r.dropped);
    pt.scenario_json = scenario_to_json(*r.scenario);
    pt.scenario = std::move(r.scenario);
    pt.folder = point_folder_name(pt.scenario_json, plan.key_columns, labels, !spec.seeds.empty());
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
  if (plan.points.empty())
    throw SweepError(fmt::format("{}the constraints skip all {} points: nothing to run", file_prefix, total));

  // Swept keys that do not apply to some points: a note; to none: an error.
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
    const std::string option = given[key];
    if (dropped == resolved)
      throw SweepError(
          fmt::format("{} {}: {}, and no point of this sweep has it; sweep that too, or remove {} {}", option,
                      key, why, option, key));
    plan.notes.push_back(
        fmt::format("{} is left out of {} of {} points: it {}; their {} cells are empty, and "
                    "points that become identical share a folder",
                    key, dropped, resolved, why, key));
  }

  json grid = json::array(), zip = json::array(), sets = json::array();
  for (const auto& k : spec.grid) grid.push_back({{"path", k.path}, {"values", k.values}});
  for (const auto& k : spec.zip) zip.push_back({{"path", k.path}, {"values", k.values}});
  for (const auto& s : spec.sets) sets.push_back(s.path + "=" + s.value);
  plan.manifest = {{"stalesim_sweep", 1},
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
  return plan;
}

std::string default_sweep_dir(const SweepPlan& plan) { return "results/" + plan.base.name + "-sweep"; }

// ---- The sweep folder ------------------------------------------------------------------------

void write_file_atomically(const std::string& path, const std::string& text) {
  const fs::path target(path);
  const fs::path tmp =
      target.parent_path() / fmt::format(".{}.tmp-{}", target.filename().string(), ::getpid());
  try {
    write_text_file(tmp, text);
  } catch (const IoError&) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    throw IoError(fmt::format("{}: cannot write: {}", path, why));
  }
}

void prepare_sweep_dir(const std::string& dir, const SweepPlan& plan, bool force,
                       const std::vector<fs::path>& protect) {
  const fs::path root = resolve_output_path(dir);
  std::error_code ec;
  const auto how = "(use --force to rerun every point into it, or --out another folder)";
  fs::create_directories(root.parent_path(), ec);
  if (ec)
    throw IoError(fmt::format("{}: cannot create folder: {}", root.parent_path().string(), ec.message()));
  clean_stale_temporaries(root.parent_path(), root.filename().string());
  const FolderCheck c = inspect_folder(root);
  if (c.kind == FolderKind::kOther) {
    if (c.why == "exists and is not a folder")
      throw IoError(fmt::format("{}: exists and is not a folder", dir));
    throw IoError(fmt::format(
        "{}: exists, is not empty and is not a sweep folder: it {}; a sweep (with or without --force) writes "
        "only into a sweep folder or an empty one, so it is left as it is: choose another --out",
        dir, c.why));
  }
  if (c.kind == FolderKind::kRun)
    throw IoError(fmt::format("{}: is a run folder, not a sweep folder; choose another --out", dir));
  if (c.kind == FolderKind::kSweep) {
    if (force) {
      // Nothing is deleted here: every point runs again and replaces its own folder when its new
      // run is written; folders of points no longer in the plan go when the sweep completes.
      refuse_protected(dir, root, protect);
    } else {
      const fs::path manifest = root / "sweep.json";
      json old;
      try {
        old = json::parse(read_text(manifest));
      } catch (const std::exception& e) {
        throw IoError(fmt::format("{}: not a sweep manifest ({}) {}", manifest.string(), e.what(), how));
      }
      const json& base = plan.manifest["base"];
      if (!old.is_object() || !old.contains("base")) {
        throw IoError(fmt::format("{}: not a sweep manifest (no \"base\") {}", manifest.string(), how));
      }
      if (old["base"] != base) {
        std::string where = "it differs";
        const json d = json::diff(old["base"], base);
        if (!d.empty()) {
          const json& op = d.front();
          const std::string path = op.value("path", "");
          const json::json_pointer ptr(path);
          const std::string there = old["base"].contains(ptr) ? old["base"][ptr].dump() : "absent";
          const std::string here = base.contains(ptr) ? base[ptr].dump() : "absent";
          where = fmt::format("{}: {} there, {} here", path.empty() ? "/" : path, there, here);
        }
        throw IoError(fmt::format("{}: holds a sweep of another base scenario ({}) {}", dir, where, how));
      }
    }
  }
  fs::create_directories(root, ec);
  if (ec) throw IoError(fmt::format("{}: cannot create folder: {}", dir, ec.message()));
  clean_stale_temporaries(root, "");  // killed points' leftovers, once for the whole sweep
  write_file_atomically((root / "sweep.json").string(), plan.manifest.dump(2) + "\n");
}

size_t prune_sweep_dir(const std::string& dir, const SweepPlan& plan) {
  const fs::path root = resolve_output_path(dir);
  std::set<std::string> keep;
  for (const auto& run : plan.runs) keep.insert(run.folder);
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!keep.contains(name) && it->is_directory(ec) && !it->is_symlink(ec) &&
        inspect_folder(it->path()).kind == FolderKind::kRun)
      stale.push_back(it->path());
  }
  std::sort(stale.begin(), stale.end());
  for (const auto& p : stale) fs::remove_all(p, ec);
  return stale.size();
}

// ---- Records and rows ------------------------------------------------------------------------

json to_json(const RunRecord& r) {
  return {{"status", r.status},
          {"skipped", r.skipped},
          {"wrote", r.wrote},
          {"message", r.message},
          {"cells", r.cells}};
}

RunRecord run_record_from_json(const json& j) {
  RunRecord r;
  r.status = j.at("status").get<std::string>();
  r.skipped = j.at("skipped").get<bool>();
  r.wrote = j.at("wrote").get<bool>();
  r.message = j.at("message").get<std::string>();
  r.cells = j.at("cells").get<std::vector<std::string>>();
  return r;
}

bool sweep_status_ok(std::string_view status) { return status == "completed" || status == "diverged"; }

std::vector<std::string> result_cells(const json& s) {
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
          at("/step_staleness/mean"),
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

std::string point_status(const SweepPlan& plan, const std::vector<RunRecord>& records, size_t point) {
  const SweepPoint& p = plan.points.at(point);
  return p.scenario ? records.at(p.run).status : std::string("failed");
}

std::string describe_point(const SweepPlan& plan, size_t point) {
  const SweepPoint& p = plan.points.at(point);
  std::string out;
  for (const auto& o : p.overrides) out += (out.empty() ? "" : ", ") + o.path + "=" + o.value;
  return out + fmt::format("{}seed={}", out.empty() ? "" : ", ", point_seed(plan, p));
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
      row += "," + (r.wrote ? p.folder : std::string()) + "," + csv_escape(r.status);
      for (size_t c = 2; c < kResultColumns.size(); ++c)
        row += "," + (c - 2 < r.cells.size() ? csv_escape(r.cells[c - 2]) : std::string());
    }
    out += row + "\n";
  }
  return out;
}

// ---- Running ---------------------------------------------------------------------------------

std::vector<RunRecord> run_sweep(const SweepPlan& plan, const std::string& dir, const SweepOptions& options) {
  std::vector<RunRecord> records(plan.runs.size());
  const int ranks = std::max(1, options.ranks);
  std::vector<size_t> mine;
  for (size_t j = 0; j < plan.runs.size(); ++j)
    if (static_cast<int>(j % static_cast<size_t>(ranks)) == options.rank) mine.push_back(j);

  std::map<std::string, size_t> uses;
  for (size_t j : mine) ++uses[DataCache::key(*plan.points[plan.runs[j].points.front()].scenario)];
  DataCache cache(std::move(uses));
  const fs::path root = fs::path(dir).lexically_normal();

  std::mutex report;
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < mine.size();) {
      const SweepRun& run = plan.runs[mine[k]];
      const SweepPoint& first = plan.points[run.points.front()];
      RunRecord rec =
          execute(*first.scenario, first.scenario_json, plan.spec.scenario_path, root / run.folder, cache,
                  options.interrupt, options.rerun, std::max(1, options.threads), options.checkpoint);
      std::lock_guard lock(report);
      records[mine[k]] = std::move(rec);
      if (options.on_run_done) options.on_run_done(run, records[mine[k]]);
    }
  };
  const size_t threads = std::min(mine.size(), static_cast<size_t>(std::max(1, options.jobs)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return records;
}

}  // namespace stalesim
