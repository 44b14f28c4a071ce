// `stalesim compare RUN_A RUN_B [RUN_B2 ...]`: compare run folders, a simulation against real runs
// (sim/analysis/compare.hpp; README "Real runs").

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/analysis/compare.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/text.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

namespace fs = std::filesystem;

int cmd_compare(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  std::string json_path = "compare.json";
  std::optional<std::string> row;
  std::vector<CompareBound> bounds;
  const bool with_bounds = std::find(args.begin(), args.end(), "--bounds") != args.end();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::cout
          << "Usage: stalesim compare RUN_A RUN_B [RUN_B2 ...] [--json FILE] [--row LABEL] [--bounds B]\n"
             "       stalesim compare --row-header [--bounds B]\n\n"
             "Compares run folders: A (e.g. a simulation, run with --record gradients for iteration-time\n"
             "percentiles) against one or more B (e.g. real runs of the same scenario). Prints a table\n"
             "and writes compare.json (or FILE): per worker group and overall, iteration time\n"
             "(mean, p50, p99), updates by the earliest end, mean staleness and the KS distance of the\n"
             "staleness distributions, waiting, accuracy and loss at equal time, time to target; errors\n"
             "are (B - A) / A, and several B runs give their mean and spread. --row prints only the\n"
             "headline figures as one Markdown row (under --row-header's). See README \"Real runs\".\n\n"
             "--bounds NAME=LIMIT,... checks the figures (the mean over the B runs) against limits:\n"
             "iteration, updates, target (|relative error|, 0.1 = 10%) and ks (the staleness KS\n"
             "distance); prints one line per bound (with --row: a verdict cell) and exits 1 when a figure\n"
             "is past its limit or missing. The staleness KS distance is shown with the two-sample test's\n"
             "5% critical value for its sample sizes.\n";
      return kExitOk;
    }
    if (args[i] == "--row" || args[i] == "--row-header") {
      if (args[i] == "--row-header") {
        std::cout << compare_row_header(with_bounds);
        return kExitOk;
      }
      if (i + 1 >= args.size()) throw ScenarioError("compare: --row needs a label");
      row = args[++i];
      continue;
    }
    if (args[i] == "--bounds") {
      if (i + 1 >= args.size())
        throw ScenarioError("compare: --bounds needs NAME=LIMIT,... (e.g. iteration=0.1)");
      bounds = parse_compare_bounds(args[++i]);
      continue;
    }
    if (args[i] == "--json") {
      if (i + 1 >= args.size()) throw ScenarioError("compare: --json needs a file name");
      json_path = args[++i];
      continue;
    }
    if (args[i].starts_with("-")) throw ScenarioError(fmt::format("compare: unknown option '{}'", args[i]));
    dirs.push_back(args[i]);
  }
  if (dirs.size() < 2)
    throw ScenarioError(
        "compare: expected two run folders or more: stalesim compare RUN_A RUN_B [RUN_B2 ...]");
  // compare.json replaces only a compare.json of ours: checked here, before the work, and again
  // when it is swapped out (replace_file_checked), read bounded and not through a link.
  const auto ours = [](const fs::path& p) {
    std::string error;
    const auto j = read_json_file(p.string(), kMaxSummaryBytes, error, false);
    return j && j->is_object() && j->contains("run_a") && j->contains("staleness_ks");
  };
  const auto refuse = [&] {
    return IoError(fmt::format("{}: exists and is not a compare.json of stalesim's; choose another --json",
                               escaped(json_path)));
  };
  std::error_code ec;
  if (fs::symlink_status(json_path, ec).type() != fs::file_type::not_found && !ours(json_path))
    throw refuse();
  const ComparedRun a = read_compared_run(dirs[0]);
  std::vector<ComparedRun> b;
  for (size_t i = 1; i < dirs.size(); ++i) b.push_back(read_compared_run(dirs[i]));
  const nlohmann::json c = compare_runs(a, b);
  const std::vector<BoundCheck> checks = check_compare_bounds(c, bounds);
  const bool missed = std::any_of(checks.begin(), checks.end(), [](const BoundCheck& k) { return !k.pass; });
  if (row) {
    std::cout << compare_row(c, *row, bounds.empty() ? "" : bounds_verdict(checks));
  } else {
    std::cout << compare_table(c);
    if (!checks.empty()) std::cout << "\n";
    for (const auto& k : checks) std::cout << "bound: " << k.line << "\n";
  }
  try {
    replace_file_checked(json_path, c.dump(2) + "\n", ours);
  } catch (const IoError& e) {
    if (std::string(e.what()).find("exists and is not ours") != std::string::npos) throw refuse();
    throw;
  }
  return missed ? 1 : kExitOk;
}

}  // namespace stalesim::cli
