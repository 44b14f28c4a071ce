// `stalesim compare RUN_A RUN_B [RUN_B2 ...]`: compare run folders, a simulation against real runs
// (sim/analysis/compare.hpp; README "Real runs").

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
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::cout
          << "Usage: stalesim compare RUN_A RUN_B [RUN_B2 ...] [--json FILE] [--row LABEL]\n"
             "       stalesim compare --row-header\n\n"
             "Compares run folders: A (e.g. a simulation, run with --record gradients for iteration-time\n"
             "percentiles) against one or more B (e.g. real runs of the same scenario). Prints a table\n"
             "and writes compare.json (or FILE): per worker group and overall, iteration time\n"
             "(mean, p50, p99), updates by the earliest end, mean staleness and the KS distance of the\n"
             "staleness distributions, waiting, accuracy and loss at equal time, time to target; errors\n"
             "are (B - A) / A, and several B runs give their mean and spread. --row prints only the\n"
             "headline figures as one Markdown row (under --row-header's). See README \"Real runs\".\n";
      return kExitOk;
    }
    if (args[i] == "--row" || args[i] == "--row-header") {
      if (args[i] == "--row-header") {
        std::cout << compare_row_header();
        return kExitOk;
      }
      if (i + 1 >= args.size()) throw ScenarioError("compare: --row needs a label");
      row = args[++i];
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
  std::cout << (row ? compare_row(c, *row) : compare_table(c));
  try {
    replace_file_checked(json_path, c.dump(2) + "\n", ours);
  } catch (const IoError& e) {
    if (std::string(e.what()).find("exists and is not ours") != std::string::npos) throw refuse();
    throw;
  }
  return kExitOk;
}

}  // namespace stalesim::cli
