#pragma once
// What a run records (DESIGN.md section 1, Recorder): metrics at evaluation points, staleness
// histograms, per-worker time split, bytes moved, time to target, and how the run ended.
// Everything here is virtual-time or count data: wall-clock figures never enter it.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.hpp"
#include "base/sim_time.hpp"
#include "models/dataset.hpp"

namespace stalesim {

// How a run ended (summary.json's "status").
enum class RunStatus { kCompleted, kDiverged, kDeadlock, kInterrupted };
STALESIM_ENUM_NAMES(RunStatus, {RunStatus::kCompleted, "completed"}, {RunStatus::kDiverged, "diverged"},
                    {RunStatus::kDeadlock, "deadlock"}, {RunStatus::kInterrupted, "interrupted"})
inline std::string_view to_string(RunStatus s) { return enum_name(s); }

// Why a run stopped (summary.json's "stop_reason"): the stop condition that ended it (stop.*),
// the event queue running dry, a divergence or deadlock, an interruption; a real run (sim/real/)
// also stops when a rank falls silent or fails.
enum class StopReason {
  kVirtualTime,     // stop.virtual_time_s reached
  kMaxUpdates,      // stop.max_updates applied
  kTargetAccuracy,  // stop.at_target and the target reached
  kNoEvents,        // nothing left to happen (no virtual-time limit)
  kDiverged,        // a non-finite loss
  kDeadlock,        // no worker can ever go on
  kInterrupted,     // SIGINT/SIGTERM
  kRankSilent,      // real runs: a worker sent nothing for the watchdog's time
  kRankFailed,      // real runs: an MPI error or a rank's failure
};
STALESIM_ENUM_NAMES(StopReason, {StopReason::kVirtualTime, "virtual_time"},
                    {StopReason::kMaxUpdates, "max_updates"},
                    {StopReason::kTargetAccuracy, "target_accuracy"}, {StopReason::kNoEvents, "no_events"},
                    {StopReason::kDiverged, "diverged"}, {StopReason::kDeadlock, "deadlock"},
                    {StopReason::kInterrupted, "interrupted"}, {StopReason::kRankSilent, "rank_silent"},
                    {StopReason::kRankFailed, "rank_failed"})
inline std::string_view to_string(StopReason r) { return enum_name(r); }

struct WorkerStats {
  int32_t id = 0;
  std::string profile;
  int64_t iterations = 0;      // pushes applied at the server
  int64_t compute_ns = 0;      // computing a gradient
  int64_t wait_ns = 0;         // held at the server by the policy
  int64_t communicate_ns = 0;  // pushes and parameter transfers in flight, queueing included
  bool operator==(const WorkerStats&) const = default;
};

// One evaluation point. Optional fields are empty for the time-only model, or when no gradient
// was applied since the previous row (train_loss, mean_staleness).
struct MetricsRow {
  SimTime time;
  int64_t server_version = 0;
  std::optional<double> test_loss;
  std::optional<double> test_accuracy;
  std::optional<double> train_loss;      // mean loss of gradients applied since the last row
  std::optional<double> mean_staleness;  // mean staleness of those gradients
  int64_t bytes = 0;                     // push + pull bytes so far
  std::optional<double> metric;          // the model's own metric (RunResult::metric_name), if any
  bool operator==(const MetricsRow&) const = default;
};

// A running histogram of non-negative integers.
class Histogram {
 public:
  void add(int64_t v);
  int64_t count() const { return count_; }
  int64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  // The q-quantile by the nearest-rank rule: the smallest value v such that at least
  // ceil(q x count) of the values are <= v (q = 0.5: the median, q = 1: the max). 0 when empty.
  // Exact integer arithmetic on the bins, so it is the same on every machine.
  // REQUIRES: 0 < q <= 1.
  int64_t percentile(double q) const;
  const std::vector<int64_t>& bins() const { return bins_; }
  bool operator==(const Histogram&) const = default;

 private:
  std::vector<int64_t> bins_;
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t max_ = 0;
};

struct RunResult {
  RunStatus status = RunStatus::kCompleted;
  StopReason stop_reason = StopReason::kNoEvents;
  std::string detail;  // human-readable account of a deadlock or divergence
  SimTime end_time;
  int64_t server_updates = 0;
  std::vector<MetricsRow> metrics;
  // Name of MetricsRow::metric ("test_rmse" for mf, "loglik_per_token" for lda), or "" for the
  // classifiers: then metrics.csv has no extra column and summary.json no extra final entry.
  std::string metric_name;
  Histogram staleness;        // per gradient: worker clock at read - server clock at read
  Histogram missed_updates;   // per gradient: tau = version at apply - version read
  int64_t max_clock_gap = 0;  // max over granted clocks of (worker clock - minimum clock)
  int64_t bytes_push = 0;
  int64_t bytes_pull = 0;
  int64_t messages_push = 0;
  int64_t messages_pull = 0;
  int64_t skipped_fetch = 0;  // B-FASGD: fetches a worker chose not to make
  int64_t skipped_push = 0;   // B-FASGD: pushes replaced by a re-application of the last one
  std::optional<double> time_to_target_s;
  std::vector<WorkerStats> workers;
  std::vector<float> final_params;  // empty for the time-only model
  std::vector<DataFile> data_files;
  nlohmann::json policy_facts;  // the policy's own facts (DSSP grants, ...), or null
  // The texts the run's recorders wrote, by the output file each becomes (a row of
  // sim/output/output_table.cpp): decisions.csv (the policy's decision log), gradients.csv
  // (--record gradients), links.csv (off the star: TopologyNetwork::links_csv), trace.json
  // (--trace), explain.txt (--explain), timing.csv (a real run's measured times). An empty text is
  // not written.
  std::map<std::string, std::string, std::less<>> recorded;
  // recorded's text for `file`; "" when there is none.
  const std::string& recording(std::string_view file) const;
  int64_t peak_live_versions = 0;
  // Whether workers deferred their gradients (RunOptions::defer_gradients, where the model and the
  // policy allow it). Not written to the outputs, which are the same either way but for
  // peak_live_versions.
  bool deferred_gradients = false;
  // Mean, over applied gradients, of the gradients begun (parameters read) and not yet applied at
  // that moment, this one included: the parallelism a gradient pool can use (issue 21). Written
  // to no output; for tools/bench. 0 without math.
  double gradients_in_flight = 0.0;
  // Gradients computed on a gradient pool (RunOptions::threads > 1), of server_updates. Written to
  // no output (the outputs are the same with or without a pool).
  int64_t pooled_gradients = 0;
  // Metrics rows whose test-set evaluation ran in the background on the pool (sim/evaluation.hpp),
  // of metrics.size(). Written to no output, likewise.
  int64_t background_evaluations = 0;
  uint64_t events = 0;
  // Divergence: when, which worker, and the last finite training loss seen.
  std::optional<double> diverged_at_s;
  std::optional<int32_t> diverged_worker;
  std::optional<double> last_finite_loss;
};

}  // namespace stalesim
