// Running a sweep (sim/sweep/sweep.hpp): the sweep folder, each rank's share of the runs on its
// threads, and resuming (a folder that holds its point's finished run is read back, not rerun).
#include "sim/sweep/sweep.hpp"

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "sim/output/outputs.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/run.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim/simulation.hpp"
#include "sim/sweep/sweep_detail.hpp"

namespace stalesim {

namespace fs = std::filesystem;
using nlohmann::json;
using sweep_detail::read_json;
using sweep_detail::read_text;

namespace {

// ---- Data shared by the runs of one process --------------------------------------------------

// Loaded data by what load_data() reads (the scenario's "data" object, and the seed for every
// dataset generated from it: DatasetTraits::seeded),
// shared read-only between threads and dropped after its last use.
class DataCache {
 public:
  using Ptr = std::shared_ptr<const DataSplit>;

  static std::string key(const Scenario& s) {
    std::string k = scenario_to_json(s)["data"].dump();
    if (traits(s.data.dataset).seeded) k += fmt::format("#seed={}", s.seed);
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
  const std::string status = summary.at("status").get<std::string>();
  const std::optional<SweepStatus> parsed = enum_from_name<SweepStatus>(status);
  if (!parsed) throw std::invalid_argument("summary.json's status '" + status + "' is not a run status");
  r.status = *parsed;
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
    const json summary = read_json(folder / "summary.json");
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
                  const fs::path& folder, DataCache& cache, const SweepOptions& options) {
  const std::atomic<bool>* interrupt = options.interrupt;
  // This run's one use of its data ends on every path out of here, once.
  struct Use {
    DataCache& cache;
    const Scenario& sc;
    Use(DataCache& c, const Scenario& s) : cache(c), sc(s) {}  // clang 14 lacks aggregate ( ) init
    ~Use() { cache.release(sc); }
  };
  std::optional<Use> use(std::in_place, cache, sc);
  if (!options.rerun)
    if (auto done = read_back(folder, scenario_json)) return *done;
  RunRecord rec;
  if (interrupt && interrupt->load()) return rec;  // not_run
  try {
    const DataCache::Ptr data = cache.acquire(sc);
    RunRequest request;
    request.origin = origin;
    request.data = data.get();
    request.options.interrupt = interrupt;
    request.options.threads = std::max(1, options.threads);
    request.out = folder.string();
    request.force = true;
    // prepare_sweep_dir cleaned the sweep folder of killed writers' temporaries, once for all points.
    request.guard = OutputGuard{.home = options.home, .checkpoint = options.checkpoint, .clean_stale = false};
    const RunOutcome outcome = execute_run(sc, request);
    if (outcome.kept_finished) {
      rec.status = SweepStatus::kInterrupted;  // a --force rerun stopped: the finished run stays
      rec.wrote = true;
      return rec;
    }
    return record_from_summary(json::parse(outcome.files.text("summary.json")), /*skipped=*/false);
  } catch (const std::exception& e) {
    rec.status = SweepStatus::kFailed;
    rec.message = e.what();
    rec.wrote = false;
    return rec;
  }
}

}  // namespace

// ---- The sweep folder ------------------------------------------------------------------------

void write_file_atomically(const std::string& path, const std::string& text) {
  const fs::path target(path);
  const fs::path temporary = create_temporary(target.parent_path(), "tmp", target.filename().string());
  std::error_code ec;
  try {
    write_text_file(temporary / target.filename(), text);
  } catch (const IoError&) {
    fs::remove_all(temporary, ec);
    throw;
  }
  fs::rename(temporary / target.filename(), target, ec);
  const std::string why = ec.message();
  const bool failed = static_cast<bool>(ec);
  fs::remove_all(temporary, ec);
  if (failed) throw IoError(fmt::format("{}: cannot write: {}", path, why));
}

void prepare_sweep_dir(const std::string& dir, const SweepPlan& plan, bool force,
                       const std::vector<fs::path>& protect, const fs::path& home) {
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
  if (c.kind == FolderKind::kReport)
    throw IoError(fmt::format("{}: is a report folder, not a sweep folder; choose another --out", dir));
  if (c.kind == FolderKind::kSweep) {
    if (force) {
      // Nothing is deleted here: every point runs again and replaces its own folder when its new
      // run is written; folders of points no longer in the plan go when the sweep completes.
      refuse_protected(dir, root, protect, home);
    } else {
      const fs::path manifest = root / "sweep.json";
      json old;
      try {
        old = read_json(manifest);
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
          const std::string there = old["base"].contains(ptr) ? old["base"][ptr].dump() : "not set";
          const std::string here = base.contains(ptr) ? base[ptr].dump() : "not set";
          where = fmt::format("{}: {} in the sweep already in {}, {} in this one", path.empty() ? "/" : path,
                              there, dir, here);
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
      RunRecord rec = execute(*first.scenario, first.scenario_json, plan.spec.scenario_path,
                              root / run.folder, cache, options);
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
