#pragma once
// Seed-averaged results of a sweep (`stalesim summarize SWEEP_DIR`; REFERENCE.md "Sweep files"): the
// points of a sweep that differ only in their seed form a group, and each group gets the mean,
// sample standard deviation, minimum, maximum and count of every result column of sweep.csv,
// and its learning curves (metrics.csv) averaged over seeds at each evaluation time, with the same
// spread, for plots/bands.py to draw as bands.
//
// A missed target is never hidden: where the points' scenarios set stop.target_accuracy, each group
// says how many seeds reached it ("2 of 3"), the time-to-target mean is over those, and a censored
// mean counts each miss at its run's end (virtual_time_s), a lower bound over all seeds.
//
// Only points with a result (status completed or diverged) count; an empty cell is left out of
// its column's figures. Sums run over the seeds in sweep.csv order, so the files are the same
// bytes on every run.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stalesim {

struct SweepSummary {
  std::vector<std::string> group_columns;  // sweep.csv's columns before "seed"
  size_t groups = 0;
  size_t points = 0;  // rows of sweep.csv
  size_t points_with_result = 0;
  size_t target_missed = 0;  // points with a result whose scenario sets a target they did not reach
  std::string summary_csv;   // DIR/sweep-summary.csv: one row per group
  std::string curves_csv;    // DIR/curves.csv: one row per group and evaluation time
  std::string table;         // for the terminal: a line per group
};

// Reads DIR/sweep.csv and the metrics.csv of each point with a result. Throws IoError naming the
// file, line and column when sweep.csv is missing or malformed (an unknown status, a repeated header
// or point, a folder outside the sweep or shared by two seeds of a point, a result cell that is not
// a number), or a point's metrics.csv cannot be read or is malformed.
SweepSummary summarize_sweep(const std::string& dir);

// `summarize SWEEP --compare KEY=A,B`: the groups whose column KEY is A against those where it is B
// with every other group column equal (a context), per metric: time to target (each miss counted
// at its run's end, as the paper claims count it, and the misses counted and shown), server
// updates and final test accuracy; the difference of the means over seeds, its standard error and
// the verdict of sim/analysis/seed_difference.hpp. `json`: {"key", "a", "b", "contexts": [{"context":
// {column: value}, "metrics": [{"metric", "n_a", "n_b", "mean_a", "mean_b", "d", "se" (null: a side
// with fewer than 2 seeds), "df" (Welch's; null without se or where se is 0), "verdict", "missed_a",
// "missed_b" (time to target only)}]}]}.
struct SweepComparison {
  std::string table;  // for the terminal
  nlohmann::json json;
};

// Throws IoError naming DIR/sweep.csv when KEY is not a group column (the message lists them), A or
// B is not one of its values, or no context holds both.
SweepComparison compare_sweep(const std::string& dir, const std::string& key, const std::string& a,
                              const std::string& b);

// RFC 4180 CSV text as rows of cells (quotes removed, "" read as "); sim/analysis/csv_input.hpp
// reads and checks a file.
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

// Why the sweep.csv cell `folder` does not name a folder directly inside the sweep folder `dir` (a
// path that leaves it such as "../decoy", a hidden name, a symbolic link, nothing there), or "".
std::string sweep_folder_problem(const std::filesystem::path& dir, const std::string& folder);

}  // namespace stalesim
