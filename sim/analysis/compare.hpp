#pragma once
// `stalesim compare RUN_A RUN_B [RUN_B2 ...]` (issue 28): how far runs B are from run A, typically
// a simulation (A) and real runs of the same scenario (B, sim/real/real_run.hpp), or any two runs.
//
// Figures, per worker group (the workers' device profile) and overall:
//  - iteration time: per worker, the times between its consecutive applied gradients (the first
//    from 0), from gradients.csv (`--record gradients`; a real run always writes it); mean, p50,
//    p99, and the relative error of the mean. Without gradients.csv: the mean only, end time /
//    iterations per worker.
//  - updates completed by t, where t is the earliest end of the runs compared (gradients.csv, else
//    the server version of the last metrics row at or before t), and their relative error.
//  - staleness: the mean staleness and the mean missed updates per gradient (summary.json)
//    and the Kolmogorov-Smirnov distance between the two runs' distributions (staleness.csv).
//  - waiting: per worker the wait time and its fraction of the worker's time (summary.json).
//  - accuracy and loss at equal time: the last metrics row at or before t; time to target.
// Relative errors are (B - A) / A: signed, B above A positive. With several B runs each figure of
// B is their mean, with its spread (sd, min, max) over the runs beside it (a real run is not
// deterministic). compare.json names the overall figures plainly: iteration_time_rel_error,
// updates_rel_error, staleness_mean_rel_error, staleness_ks, missed_updates_ks,
// wait_fraction_abs_error, accuracy_abs_error, loss_rel_error, time_to_target_rel_error (null where
// a run lacks the figure, e.g. a target not reached).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stalesim {

// One run folder, as compare reads it.
struct ComparedRun {
  std::string dir;
  nlohmann::json summary;
  bool real = false;
  double end_s = 0;
  double staleness_mean = 0;       // summary.json /staleness/mean
  double missed_updates_mean = 0;  // summary.json /missed_updates/mean
  struct Worker {
    int32_t id = 0;
    std::string profile;
    int64_t iterations = 0;
    double wait_s = 0;
    double wait_fraction = 0;
    std::vector<double> iteration_s;  // from gradients.csv; empty without it
  };
  std::vector<Worker> workers;
  std::vector<double> gradient_times;   // every applied gradient's time, ascending (empty: no gradients.csv)
  std::vector<int64_t> staleness;       // staleness.csv: gradients per staleness
  std::vector<int64_t> missed_updates;  // staleness.csv: gradients per missed-updates count
  struct Row {
    double time = 0;
    int64_t version = 0;
    std::optional<double> accuracy, loss;
  };
  std::vector<Row> metrics;
  std::optional<double> time_to_target_s;
};

// Reads a run folder, every value checked (sim/analysis/csv_input.hpp): a missing key or column, a
// wrong type, a NaN, a negative count, a staleness.csv without rows or a repeated header is IoError
// (exit 2) naming the file, the JSON pointer or line and column, and what was allowed.
ComparedRun read_compared_run(const std::string& dir);

// The Kolmogorov-Smirnov distance between two distributions on 0, 1, 2, ... given as counts
// (histograms): the largest difference of their cumulative distributions. 0 when either is empty.
double ks_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// The nearest-rank q-quantile of `v` (0 < q <= 1); 0 when empty.
double quantile(std::vector<double> v, double q);

// compare.json: run A against each run of `b` (at least one).
nlohmann::json compare_runs(const ComparedRun& a, const std::vector<ComparedRun>& b);

// The table printed by `stalesim compare` (Markdown).
std::string compare_table(const nlohmann::json& comparison);

// The headline figures as one Markdown table row labelled `label` (`stalesim compare --row`),
// under compare_row_header(): mean iteration time, updates by t, mean staleness (A -> B, error),
// staleness KS distance, time to target (A -> B, error), each error the mean over the B runs with
// its range.
std::string compare_row_header(bool verdict = false);
// With `verdict`, a last cell: "pass", or "miss: " and the figures past their bounds.
std::string compare_row(const nlohmann::json& comparison, const std::string& label,
                        const std::string& verdict = "");

// Bounds a comparison must hold (`stalesim compare --bounds iteration=0.1,ks=0.1,...`): each a
// figure of compare.json (the mean over the B runs) and its limit: |relative error| for iteration
// (iteration_time_rel_error), updates (updates_rel_error) and target (time_to_target_rel_error),
// the distance itself for ks (staleness_ks). A figure that is missing (null: a target not reached
// by a run, say) fails its bound: what was not measured does not pass.
struct CompareBound {
  std::string name;  // iteration, updates, target, ks
  double limit = 0;
};
// Parses "NAME=LIMIT,..." (limits > 0); throws ScenarioError naming the part and the allowed names.
std::vector<CompareBound> parse_compare_bounds(const std::string& text);

struct BoundCheck {
  CompareBound bound;
  std::optional<double> value;  // the figure (signed for relative errors); nullopt: missing
  bool pass = false;
  std::string line;  // "iteration time error +4.2%: within 10% (pass)"
};
std::vector<BoundCheck> check_compare_bounds(const nlohmann::json& comparison,
                                             const std::vector<CompareBound>& bounds);
// "pass", or "miss: " and each missed figure ("iteration +44.7% > 10%").
std::string bounds_verdict(const std::vector<BoundCheck>& checks);

}  // namespace stalesim
