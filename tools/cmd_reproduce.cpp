// `stalesim reproduce SUMMARY | SWEEP_DIR`: rerun finished runs and compare their files byte for
// byte (sim/analysis/reproduce.hpp; REFERENCE.md "Sweeps and reproduction").

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "sim/analysis/csv_input.hpp"
#include "sim/analysis/reproduce.hpp"
#include "sim/analysis/summarize.hpp"
#include "sim/build_info.hpp"
#include "sim/output/names.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/text.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

namespace {

// `stalesim reproduce SWEEP_DIR`: every folder of the sweep's sweep.csv, point by point.
int reproduce_sweep(const std::string& dir, int threads) {
  namespace fs = std::filesystem;
  const fs::path csv_path = fs::path(dir) / "sweep.csv";
  std::string error;
  const auto text = read_regular_file(csv_path.string(), kMaxSummaryBytes, error);
  if (!text)
    throw IoError(
        fmt::format("{}: cannot read ({}): the sweep has not finished; rerun it to complete it first",
                    csv_path.string(), error));
  // Checked as summarize checks it (sim/analysis/csv_input.hpp): the columns, a cell count per row,
  // no repeated header; each row's cells against its folder below.
  const CsvInput in = CsvInput::parse(csv_path.string(), *text, {"seed", "folder", "status"});
  std::vector<std::vector<std::string>> rows = {in.header()};
  for (size_t i = 0; i < in.rows(); ++i) rows.push_back(in.cells(i));
  const auto& header = rows[0];
  const size_t seed_col = in.column("seed"), folder_col = in.column("folder"),
               status_col = in.column("status");
  // Folders in order of their first point, with the points that share them.
  std::vector<std::pair<std::string, std::vector<size_t>>> folders;
  std::vector<size_t> not_run;
  for (size_t r = 1; r < rows.size(); ++r) {
    const std::string& f = rows[r][folder_col];
    const std::optional<SweepStatus> status = enum_from_name<SweepStatus>(rows[r][status_col]);
    if (f.empty() || status == SweepStatus::kInterrupted || status == SweepStatus::kNotRun) {
      not_run.push_back(r);
      continue;
    }
    // A row names a folder directly inside the sweep folder, never a path that leaves it (an
    // edited "../decoy" would otherwise be compared and reported as a match).
    if (const std::string why = sweep_folder_problem(dir, f); !why.empty())
      throw IoError(
          fmt::format("{}: line {}: {}; nothing was rerun", escaped(csv_path.string()), in.line(r - 1), why));

    auto it = std::find_if(folders.begin(), folders.end(), [&](const auto& e) { return e.first == f; });
    if (it == folders.end())
      folders.push_back({f, {r}});
    else
      it->second.push_back(r);
  }
  const auto describe_row = [&](size_t r) {
    std::string d;
    for (size_t c = 0; c <= seed_col; ++c)
      if (!rows[r][c].empty()) d += (d.empty() ? "" : ", ") + escaped(header[c]) + "=" + escaped(rows[r][c]);
    return fmt::format("point {} ({})", r - 1, d);
  };
  pin_eigen_cache_sizes();
  catch_signals();
  size_t matched = 0, mismatched = 0;
  bool warned = false;
  for (const auto& [folder, points] : folders) {
    const std::string what =
        describe_row(points.front()) +
        (points.size() > 1 ? fmt::format(" and {} identical point(s)", points.size() - 1) : std::string());
    const std::string run_dir = (fs::path(dir) / folder).string();
    try {
      const Reproduction r = prepare_reproduction(run_dir);
      // sweep.csv must say what the folder holds: each of its rows against the folder's summary.
      std::string row_problem;
      for (size_t row : points)
        if (const std::string d = sweep_row_mismatch(header, rows[row], r.summary); !d.empty()) {
          row_problem = fmt::format("sweep.csv line {}: {}", in.line(row - 1), d);
          break;
        }
      if (!row_problem.empty()) {
        ++mismatched;
        fmt::print("MISMATCH: {}: {}/: {}\n", what, escaped(folder), escaped(row_problem));
        continue;
      }
      if (!warned && !r.build_differences.empty()) {
        std::string list;
        for (const auto& d : r.build_differences) list += (list.empty() ? "" : "; ") + escaped(d);
        fmt::print(stderr, "warning: built differently ({}): a mismatch may come from the build\n", list);
        warned = true;
      }
      for (const auto& c : r.dataset_changes)
        fmt::print(stderr, "warning: {}: dataset file {}: a mismatch may come from the data\n",
                   escaped(folder), escaped(c));
      RunOptions ro;
      ro.interrupt = &g_interrupt;
      ro.threads = threads;
      const ReproduceResult res = reproduce(r, ro);
      if (res.status == RunStatus::kInterrupted) {
        fmt::print(stderr, "stalesim: interrupted after {} of {} folders\n", matched + mismatched,
                   folders.size());
        return kExitInterrupted;
      }
      if (res.differences.empty()) {
        ++matched;
        fmt::print("MATCH: {}: {}/ (result_hash {})\n", what, escaped(folder), res.result_hash);
      } else {
        ++mismatched;
        for (const auto& d : res.differences)
          fmt::print("MISMATCH: {}: {}/{}\n", what, escaped(folder), escaped(describe(d)));
      }
    } catch (const std::exception& e) {
      ++mismatched;
      fmt::print("MISMATCH: {}: {}\n", what, escaped(e.what()));
    }
  }
  for (size_t r : not_run)
    fmt::print("NOT RUN: {}: status {}, no finished folder to compare\n", describe_row(r),
               escaped(rows[r][status_col]));
  fmt::print("{}: {} of {} folders match ({} points), {} mismatch, {} points not run\n",
             escaped(fs::path(dir).lexically_normal().string()), matched, folders.size(), rows.size() - 1,
             mismatched, not_run.size());
  return mismatched + not_run.size() > 0 ? kExitFailed : kExitOk;
}

}  // namespace

int cmd_reproduce(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim reproduce RUN_DIR/summary.json [options]\n\nOptions");
  o.add_options()("summary", po::value<std::string>()->required(),
                  "a finished run's summary.json (or its folder), or a sweep folder")(
      "quiet", "no progress line and no wall time on stderr")(
      "threads", po::value<int>(),
      "threads computing gradients (default: STALESIM_THREADS, else the machine's cores)")(
      "out", po::value<std::string>(),
      "keep the rerun as a run folder DIR (the rules of run --out: an occupied DIR needs --force)")(
      "force", "with --out: replace DIR when it holds a stalesim run")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("summary", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << R"(
Rebuilds the scenario from the manifest in summary.json, reruns it, and compares every file the run
writes (summary.json, metrics.csv, staleness.csv, done) with the folder's, byte for byte. Prints
MATCH (exit 0), or one 'MISMATCH: FILE: first difference at line N (COLUMN): ...' line per
differing file (exit 3). Warns when this binary was built differently from the run's, or when a
dataset file changed since the run.
Given a sweep folder (it holds sweep.json), reruns every folder of its sweep.csv and prints one
MATCH or MISMATCH line per folder (naming its points), NOT RUN per point without a finished
folder, and a closing count; exit 0 when every point matches, 3 otherwise.
With --out DIR (a single run) the rerun is kept in DIR, matching or not, written as 'run --out'
writes (never into or above the folder reproduced; an occupied DIR only with --force).
)";
    return kExitOk;
  }
  {
    const std::string target = display_path(p.vm["summary"].as<std::string>());
    std::error_code ec;
    if (std::filesystem::is_directory(target, ec) &&
        std::filesystem::is_regular_file(std::filesystem::path(target) / "sweep.json", ec)) {
      if (p.vm.count("out"))
        throw UsageError(
            fmt::format("--out: {} is a sweep folder; --out keeps the rerun of a single run", target));
      return reproduce_sweep(target, threads_option(p.vm, 1));
    }
  }
  const Reproduction r = prepare_reproduction(p.vm["summary"].as<std::string>());
  const bool quiet = p.vm.count("quiet") > 0;
  // --out: the rerun's folder, checked before the rerun as `run` checks it; the folder reproduced
  // (its summary.json) is protected from --force.
  const std::string keep = p.vm.count("out") ? display_path(p.vm["out"].as<std::string>()) : "";
  const bool force = p.vm.count("force") > 0;
  if (force && keep.empty()) throw UsageError("--force needs --out");
  const OutputGuard guard = output_guard(r.summary_path);
  if (!keep.empty()) {
    // Never into (nor above: the guard) the folder reproduced: a rerun kept inside it would make it
    // a folder no run writes, and --force would then refuse it.
    namespace fs = std::filesystem;
    const auto real_path = [](const fs::path& p) {
      std::error_code ec;
      const fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
      return ec ? fs::absolute(p).lexically_normal() : c;
    };
    const fs::path run = real_path(r.dir), target = real_path(resolve_output_path(keep));
    if (std::mismatch(run.begin(), run.end(), target.begin(), target.end()).first == run.end())
      throw UsageError(fmt::format("--out {}: inside the folder reproduced ({}); keep the rerun elsewhere",
                                   escaped(keep), escaped(r.dir)));
    check_output_dir(keep, force, guard);
  }
  if (!r.build_differences.empty()) {
    std::string list;
    for (const auto& d : r.build_differences) list += (list.empty() ? "" : "; ") + escaped(d);
    fmt::print(stderr, "warning: built differently ({}): a mismatch may come from the build\n", list);
  }
  for (const auto& c : r.dataset_changes)
    fmt::print(stderr, "warning: dataset file {}: a mismatch may come from the data\n", escaped(c));

  pin_eigen_cache_sizes();
  catch_signals();
  const auto wall0 = std::chrono::steady_clock::now();
  const bool tty = !quiet && ::isatty(STDERR_FILENO);
  RunOptions ro;
  ro.interrupt = &g_interrupt;
  ro.threads = threads_option(p.vm, 1);
  auto last_print = wall0;
  if (tty) {
    ro.on_progress = [&](const Progress& pr) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_print < std::chrono::milliseconds(200)) return;
      last_print = now;
      fmt::print(stderr, "\r\033[Kreproducing {}: t={:.1f} s  updates {}", r.scenario.name, pr.virtual_time_s,
                 pr.server_updates);
      std::fflush(stderr);
    };
  }
  const ReproduceResult res = reproduce(r, ro);
  if (tty) fmt::print(stderr, "\r\033[K");
  if (res.status == RunStatus::kInterrupted) {
    fmt::print(stderr, "stalesim: interrupted; nothing compared\n");
    return kExitInterrupted;
  }
  if (!quiet)
    fmt::print(stderr, "wall time {:.2f} s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count());
  if (!keep.empty()) {
    write_outputs(keep, res.files, /*done=*/true, force, guard);
    fmt::print(stderr, "kept the rerun in {}/\n", escaped(keep));
  }
  for (const auto& f : res.renamed)
    fmt::print(stderr, "note: {} holds the staleness names read until {}; compared under the current ones\n",
               f, kOldNamesReadUntil);
  if (res.differences.empty()) {
    std::string list;
    for (const auto& f : res.compared) list += (list.empty() ? "" : ", ") + f;
    fmt::print("MATCH: {}/ ({} identical; result_hash {})\n", escaped(r.dir), list, res.result_hash);
    return kExitOk;
  }
  for (const auto& d : res.differences) fmt::print("MISMATCH: {}\n", escaped(describe(d)));
  return kExitFailed;
}

}  // namespace stalesim::cli
