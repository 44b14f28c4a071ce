// `stalesim summarize SWEEP_DIR`: mean and spread over seeds per sweep point (sim/analysis/summarize.hpp).

#include <filesystem>
#include <iostream>
#include <utility>

#include <fmt/format.h>

#include "sim/analysis/summarize.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/text.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

int cmd_summarize(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim summarize SWEEP_DIR [options]\n\nOptions");
  o.add_options()("dir", po::value<std::string>()->required(), "a sweep folder (with sweep.csv)")(
      "quiet", "write the files without printing the table")(
      "compare", po::value<std::string>(), "KEY=A,B: A against B over seeds, per other point (see below)")(
      "json", "with --compare: print the comparison as JSON instead of the table")("help,h",
                                                                                   "show this help");
  po::positional_options_description pos;
  pos.add("dir", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << R"(
Groups the points of a sweep that differ only in their seed and writes, in SWEEP_DIR:
  sweep-summary.csv  per group: seeds, with_result, quality_metric, and for every result column of
                     sweep.csv its _mean, _std (sample), _min, _max and _n over the seeds
  curves.csv         per group and evaluation time: the seeds with a row there, and the mean, std,
                     min and max of every metrics.csv column (plots/bands.py draws them as bands)
and prints a table: per group the quality (mean ± std, min, max), final test loss and time to
target as "k of n: mean ± std" (k of the n seeds reached the target, the mean over those) with,
when some missed, all ≥ X in brackets: the mean with each miss counted at its run's end. sweep-summary.csv
gives target_reached, target_missed and time_to_target_s_censored_mean likewise. Only points with a result (completed or diverged) count. Exit 2 when the folder holds no
sweep.csv or a point's metrics.csv cannot be read.

--compare KEY=A,B (e.g. policy.type=asp,ssp) prints, instead of the table, for each setting of the
other columns where both A and B ran: per metric (time_to_target_s, server_updates,
final_test_accuracy) the means of A and B over their seeds, the difference A - B, its standard
error, the number of seeds and the verdict: "A higher" or "A lower" where the difference is beyond
the rule's level by Welch's t (one-sided 0.0228, two standard errors in large samples), else
"inconclusive" (the rule of the paper claims, scenarios/papers/README.md). Time to target counts each miss at its
run's end and says how many missed. --json prints the same as JSON. Nothing is written.
)";
    return kExitOk;
  }
  const std::string dir = display_path(p.vm["dir"].as<std::string>());
  if (p.vm.count("compare")) {
    const CompareOption k = parse_compare(p.vm["compare"].as<std::string>());
    const SweepComparison c = compare_sweep(dir, k.key, k.a, k.b);
    std::cout << (p.vm.count("json") ? c.json.dump(2) + "\n" : c.table);
    return kExitOk;
  }
  if (p.vm.count("json")) throw UsageError("--json: only with --compare");
  const SweepSummary s = summarize_sweep(dir);
  const std::filesystem::path root(dir);
  // Written beside and renamed in (sim/output/run_folder.hpp): never through a symbolic link, and
  // over an existing entry only when it is a plain file (an earlier summarize's).
  const auto ours = [](const std::filesystem::path& f) {
    std::error_code ec;
    return std::filesystem::symlink_status(f, ec).type() == std::filesystem::file_type::regular;
  };
  for (const auto& [name, text] :
       {std::pair{"sweep-summary.csv", &s.summary_csv}, std::pair{"curves.csv", &s.curves_csv}})
    try {
      replace_file_checked(root / name, *text, ours);
    } catch (const IoError& e) {
      if (std::string(e.what()).find("exists and is not ours") == std::string::npos) throw;
      throw IoError(
          fmt::format("{}: exists and is not a file (a symbolic link or a folder); summarize writes "
                      "only plain files and left it as it is",
                      escaped((root / name).string())));
    }
  if (p.vm.count("quiet") == 0) std::cout << s.table;
  fmt::print(
      "{}: {} points in {} groups over seeds ({} with a result{}); wrote {}/sweep-summary.csv and "
      "{}/curves.csv\n",
      escaped(dir), s.points, s.groups, s.points_with_result,
      s.target_missed ? fmt::format(", {} of them missed the target", s.target_missed) : std::string(),
      escaped(dir), escaped(dir));
  return kExitOk;
}

}  // namespace stalesim::cli
