#pragma once
// Sweeps (DESIGN.md section 7; REFERENCE.md "Sweeps and reproduction"): a base scenario (a file plus
// --set overrides), a grid of overrides and a list of seeds make a list of points. Each point is
// a fully resolved scenario that runs into its own folder DIR/<name>/, where <name> reads the
// point's swept values ("type=ssp_staleness=2_seed=1", see point_folder_name) followed by '-' and
// the first 8 hex digits of XXH3-64 over the resolved scenario's JSON: identical points share a folder, a
// point's folder holds exactly the files of a lone `stalesim run` of that scenario, and a folder
// that already holds a finished run of the same scenario is not run again (resume).
//
// A sweep file's constraints drop points before they are numbered. Points are numbered in grid order: the
// first --grid key varies slowest, then the next ones, then the --zip keys (advanced together), then the
// seeds (fastest). A --grid or --zip value that does not apply to a point (policy.staleness when the point's
// policy.type is "asp") is dropped for that point, exactly as `--set policy.type=asp` drops a file's
// policy.staleness: the point runs without it, its cell in sweep.csv is empty, and points that become
// identical share a folder.
//
// Runs (folders) are spread over threads (`jobs`) and MPI ranks (run j goes to rank j % ranks).
// Every run is self-contained (DESIGN.md section 2), so a point's files do not depend on either.
// Nothing here prints: progress and failures are reported through callbacks and return values.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/estimate/memory_estimate.hpp"
#include "sim/scenario/overrides.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/sweep/sweep_expr.hpp"
#include "sim/sweep/sweep_status.hpp"

namespace stalesim {

// Bad sweep arguments: a --grid, --zip or --seeds argument that does not parse, names an unknown
// field, or does not fit the others. what() names the argument and what is allowed.
class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One swept key: a dotted scenario path (as in --set) and its value texts (read as --set reads
// them: JSON when they parse as JSON, else a string).
struct SweepKey {
  std::string path;                 // e.g. "policy.staleness"
  std::vector<std::string> values;  // e.g. {"0", "1", "2"}
  bool operator==(const SweepKey&) const = default;
};

// Parses a --grid or --zip argument "PATH=V1,V2,...". Commas inside [], {} or a JSON string do not
// split values ("model.hidden=[100],[200,100]" has two values). `option` ("--grid", "--zip")
// prefixes messages. Throws SweepError for a missing '=', an empty path or value, a repeated
// value, and a path that is not a scenario field (with a "did you mean").
SweepKey parse_sweep_key(std::string_view arg, std::string_view option);

// Parses --seeds: "A..B" (A <= B, both included), "S1,S2,..." or "S". Seeds are integers >= 0,
// each listed once, at most kMaxSweepPoints of them. Throws SweepError.
std::vector<uint64_t> parse_seeds(std::string_view arg);

// The most points one sweep may have (each resolved point holds its scenario in memory while
// the sweep is planned and run: about 10 KB each). Split a larger study into several sweeps.
inline constexpr size_t kMaxSweepPoints = 100000;

// Whether a dotted path names a scenario field a sweep may set (as --set may); the closest field
// path for a "did you mean", or "".
bool is_sweep_field(std::string_view dotted);
std::string closest_sweep_field(std::string_view dotted);

// A named derived field of a sweep file: computed for every point from its values (sim/sweep/sweep_expr.hpp),
// a column of sweep.csv, and, when `path` is set, the value of that scenario field.
struct SweepDerived {
  std::string name;
  std::string path;  // "" : a column only (and a name other expressions may read)
  Expr expr;
  std::string where;  // "FILE: /derived/NAME", for messages
};

// A constraint of a sweep file: points where it is false are skipped (not run, not in sweep.csv).
struct SweepConstraint {
  Expr expr;
  std::string where;  // "FILE: /constraints/0"
};

struct SweepSpec {
  std::string scenario_path;                 // the base scenario file
  std::vector<Override> sets;                // --set, applied to every point before the point's own values
  std::vector<SweepKey> grid;                // cartesian product, the first key varying slowest
  std::vector<SweepKey> zip;                 // advanced together: equal lengths; vary faster than the grid
  std::vector<uint64_t> seeds;               // vary fastest; empty = the scenario's own seed
  std::vector<SweepDerived> derived;         // in order: each may read the ones before it
  std::vector<SweepConstraint> constraints;  // all must hold for a point to run
  std::string spec_file;                     // the sweep file, or "" for a sweep given by flags
  size_t file_sets = 0;                      // the first file_sets of `sets` come from the sweep file
  nlohmann::json spec_json;                  // the sweep file as read (for sweep.json), or null
  std::string profile_dir;                   // STALESIM_PROFILE_DIR, read by the CLI (load_scenario_file)
};

// One point of the sweep.
struct SweepPoint {
  size_t index = 0;                     // in grid order, from 0
  std::vector<Override> overrides;      // the point's own values: grid keys, zip keys, derived paths
  std::vector<nlohmann::json> derived;  // the value of each SweepSpec::derived, in order
  std::optional<uint64_t> seed;         // from --seeds
  std::vector<std::string> dropped;     // paths of the point's values that do not apply to it
  std::optional<Scenario> scenario;     // resolved; empty when the point does not resolve
  nlohmann::json scenario_json;         // scenario_to_json(*scenario), or null
  std::string folder;                   // readable name + hash (see above); "" when unresolved
  std::string error;                    // why the point does not resolve; "" when it does
  size_t run = 0;                       // index into SweepPlan::runs (resolved points only)
};

// One folder to run: the points that resolve to the same scenario share it.
struct SweepRun {
  std::string folder;
  std::vector<size_t> points;  // ascending; points[0] is the first point with this scenario
};

struct SweepPlan {
  SweepSpec spec;
  Scenario base;                             // the file with --set applied, the scenario's own seed
  nlohmann::json manifest;                   // DIR/sweep.json
  std::vector<std::string> key_columns;      // grid paths, then zip paths
  std::vector<std::string> derived_columns;  // the sweep file's derived names, after the key columns
  size_t skipped = 0;                        // points skipped by the sweep file's constraints
  std::vector<SweepPoint> points;            // in grid order
  std::vector<SweepRun> runs;                // in order of first point
  // Swept keys that do not apply to some points, in words, for the user (not errors).
  std::vector<std::string> notes;
};

// Expands and resolves every point (no I/O but reading the scenario file). Throws ScenarioError
// when the base scenario (file + --set) is invalid, SweepError for unequal --zip lengths, a key
// given twice (in --grid, --zip or --set), "seed" swept by --grid or --zip (use --seeds), a swept
// key that applies to no point, or more than kMaxSweepPoints points. A point that does not
// resolve (a value out of range) is not an error here: it keeps its message in `error`.
// `on_progress(resolved, total)`, when set, is called every 1000 points while resolving.
SweepPlan plan_sweep(const SweepSpec& spec, const std::function<void(size_t, size_t)>& on_progress = {});

// Estimates the memory of every folder of the plan (sim/estimate/memory_estimate.hpp: the estimate `stalesim
// run` checks) and throws ScenarioError when any exceeds `limit`, before anything runs or is
// written: the message names the sweep file (or the scenario file of a sweep given by flags), how
// many points exceed, and the first three (index, values, folder, estimate against the limit).
// Nothing is checked when `limit` is nullopt. `threads`: each point's gradient threads
// (SweepOptions::threads), as its run will have them. `jobs` (SweepOptions::jobs): points run at
// once in this process, so the `jobs` largest together (one process's own share) must fit too;
// refused otherwise, naming --jobs.
void check_sweep_memory(const SweepPlan& plan, const std::optional<MemoryLimit>& limit, int threads = 1,
                        int jobs = 1);

// "ROOT/<base name>-sweep" (ROOT: the results root, tools/cli.hpp results_root).
std::string default_sweep_dir(const SweepPlan& plan, const std::string& root = "results");

// Makes `dir` ready: creates it, or checks that it holds a sweep of the same base scenario (its
// sweep.json has the same "base"), then writes sweep.json (atomically). With `force` the base may
// differ and nothing is deleted here: the caller reruns every point (SweepOptions::rerun), each
// replacing its own folder, then calls prune_sweep_dir. A folder that is not a sweep folder (a
// run, foreign files) is refused, with or without `force`, as are the protected places of
// sim/output/run_folder.hpp (`protect`: e.g. the scenario file; `home`: $HOME). Throws IoError naming the
// folder, what it holds and how to proceed (--force, or another --out).
void prepare_sweep_dir(const std::string& dir, const SweepPlan& plan, bool force,
                       const std::vector<std::filesystem::path>& protect = {},
                       const std::filesystem::path& home = {});
// Removes the run folders in `dir` that belong to no point of `plan` (after a completed --force
// sweep). Returns how many.
size_t prune_sweep_dir(const std::string& dir, const SweepPlan& plan);

// What happened to one run (folder).
struct RunRecord {
  // The run's status from its summary.json (completed, diverged, deadlock, interrupted), failed
  // when it could not run (data error, a scenario that does not fit its data, an exception), or
  // not_run when the sweep was interrupted before it started.
  SweepStatus status = SweepStatus::kNotRun;
  bool skipped = false;            // its folder already held this finished run: read back, not run
  bool wrote = false;              // its folder holds outputs
  std::string message;             // why it failed ("" otherwise)
  std::vector<std::string> cells;  // the kResultColumns after "status"; empty when none
  bool operator==(const RunRecord&) const = default;
};
nlohmann::json to_json(const RunRecord& r);
RunRecord run_record_from_json(const nlohmann::json& j);

// The columns of sweep.csv after the key columns and "seed".
// quality_metric names the model's own quality measure and quality is its final value: the
// model's extra metric when it has one (LDA: loglik_per_token, MF: test_rmse), else
// test_accuracy (classifiers), else test_loss (lstsq); empty for time-only models.
inline constexpr std::array<const char*, 16> kResultColumns = {"folder",
                                                               "status",
                                                               "result_hash",
                                                               "virtual_time_s",
                                                               "server_updates",
                                                               "final_test_accuracy",
                                                               "final_test_loss",
                                                               "time_to_target_s",
                                                               "staleness_mean",
                                                               "staleness_max",
                                                               "missed_updates_mean",
                                                               "bytes_push",
                                                               "bytes_pull",
                                                               "mean_wait_fraction",
                                                               "quality_metric",
                                                               "quality"};

// The result cells of a run (kResultColumns from "result_hash" on) read from its summary.json.
std::vector<std::string> result_cells(const nlohmann::json& summary);

// How a row of sweep.csv (under `header`) disagrees with the summary.json of the folder it
// names, in words ("column 'final_test_accuracy' says '0.9' but summary.json gives '0.5'"), or ""
// when it agrees: its status and result cells, its seed, and each column before "seed" that
// names a scenario field (a grid key), against the scenario in the summary's manifest. A
// folder holding another point's run disagrees on a key or the seed.
std::string sweep_row_mismatch(const std::vector<std::string>& header, const std::vector<std::string>& row,
                               const nlohmann::json& summary);

struct SweepOptions {
  int jobs = 1;  // threads running points concurrently, >= 1
  // Threads of each point's run (RunOptions::threads, >= 1): a sweep keeps jobs x threads threads
  // busy at most; the CLI's default shares the cores, cores / jobs each (PERFORMANCE.md).
  int threads = 1;
  int rank = 0;  // this process's share: run j is executed when j % ranks == rank
  int ranks = 1;
  // When set and true, running points stop (status "interrupted", no done marker) and no new
  // point starts (status "not_run").
  const std::atomic<bool>* interrupt = nullptr;
  // Run every point again even when its folder holds its finished run (--force).
  bool rerun = false;
  // Called between the steps of writing each point's folder (OutputGuard::checkpoint), from the
  // thread that writes it: the STALESIM_INJECT_KILL_AT_STEP test hook (REFERENCE.md "Safety and errors").
  std::function<void(std::string_view)> checkpoint;
  // The user's home folder ($HOME, read by the CLI): no point's --force replaces it (OutputGuard::home).
  std::filesystem::path home;
  // Called after each run of this rank finishes or is skipped, one call at a time, from the
  // thread that ran it. For progress and failure reports only.
  std::function<void(const SweepRun&, const RunRecord&)> on_run_done;
};

// Runs this rank's share of plan.runs into dir/<folder>/ (a finished run of the same scenario is
// skipped and read back). Returns one record per run of the plan; runs of other ranks keep the
// default record. Never throws for a failing point: its record says why. REQUIRES:
// prepare_sweep_dir(dir, plan, ...) and pin_eigen_cache_sizes() were called.
std::vector<RunRecord> run_sweep(const SweepPlan& plan, const std::string& dir, const SweepOptions& options);

// sweep.csv: a header (key columns, derived columns, "seed", kResultColumns) and one row per point
// in grid order. Every cell is flat (cell text, no JSON): an array's items joined by ';'.
// `records` has one entry per run.
std::string sweep_csv(const SweepPlan& plan, const std::vector<RunRecord>& records);

// The status of a point: its run's status, or failed when it does not resolve.
SweepStatus point_status(const SweepPlan& plan, const std::vector<RunRecord>& records, size_t point);

// How the points of a sweep ended, after run_sweep (and gather_records under mpirun): each point
// counts once, by point_status. The sweep succeeded when every point did (ok()).
struct SweepTally {
  size_t ran = 0;          // ran now and completed or diverged
  size_t skipped = 0;      // its folder held its finished run already
  size_t failed = 0;       // did not resolve, failed, or deadlocked
  size_t interrupted = 0;  // stopped by an interrupt
  size_t not_run = 0;      // not started before an interrupt
  bool ok() const { return failed + interrupted + not_run == 0; }
};
SweepTally tally_sweep(const SweepPlan& plan, const std::vector<RunRecord>& records);

// "policy.staleness=4, policy.type=ssp, seed=2": a point's values, for messages.
std::string describe_point(const SweepPlan& plan, size_t point);

// Writes `text` to `path` through a temporary file in the same folder and a rename. Throws IoError.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace stalesim
