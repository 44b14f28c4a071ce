#pragma once
// What the whole-run benchmarks (stalesim_bench_runs, tools/bench/bench_runs.cpp) share: timing,
// options, the summary table, and the time-only runs that several sections measure. One file
// per benchmark family: bench_time_only.cpp (throughput, growth), bench_overhead.cpp,
// bench_memory.cpp, bench_micro_json.cpp.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/dataset.hpp"
#include "sim/simulation.hpp"

namespace stalesim::bench {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0);
double thread_cpu_seconds();

// CPU time of this thread and wall time since construction.
class Stopwatch {
 public:
  double cpu() const { return thread_cpu_seconds() - cpu0_; }
  double wall() const { return seconds_since(wall0_); }

 private:
  Clock::time_point wall0_ = Clock::now();
  double cpu0_ = thread_cpu_seconds();
};

// The 1-minute load average, to judge how shared the machine was.
std::string load_average();
// 1234567 -> "1,234,567".
std::string grouped(int64_t v);
// A progress note on stderr.
void note(const std::string& s);

// ---- Options -------------------------------------------------------------------------------------

struct Options {
  int reps = 3;                    // rounds of time-only runs (best of); overhead: at least 5
  std::set<std::string> sections;  // empty: all
  std::string csv;                 // growth rows
  std::string micro_json;          // Google Benchmark JSON of stalesim_bench_micro
  std::string source_dir = STALESIM_SOURCE_DIR;
  bool quick = false;  // a tenth of every size: a smoke test, not a measurement
  double quickstart_virtual_s = 5.0;
  int32_t memory_workers = 10'000;
  int64_t memory_updates = 20'000;
  bool no_defer = false;  // child: RunOptions::defer_gradients = false
  int64_t throughput_updates = 1'000'000;
  bool wants(const std::string& s) const { return sections.empty() || sections.count(s) > 0; }
  int64_t scaled(int64_t n) const { return quick ? std::max<int64_t>(1, n / 10) : n; }
};

// ---- Summary -------------------------------------------------------------------------------------

enum class Verdict { kPass, kFail, kInfo, kSkip };

struct SummaryRow {
  std::string figure;
  std::string measured;
  std::string target;
  std::string ratio;  // measured / target
  Verdict verdict = Verdict::kInfo;
};

std::string_view verdict_text(Verdict v);
// A row for "measured >= target" (at_least) or "measured <= target".
SummaryRow target_row(std::string figure, double measured, std::string measured_text, double target,
                      std::string target_text, bool at_least);
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<bool>& right_aligned);
void print_summary(const std::vector<SummaryRow>& rows);

// ---- Runs ----------------------------------------------------------------------------------------

struct TimedRuns {
  double cpu_s = 0, wall_s = 0;  // best of reps
  double cpu_median_s = 0;
  double construct_cpu_s = 0;  // of cpu_s: constructing the Simulation (best of reps)
  int reps = 0;
  RunResult result;  // of the last repetition (all are identical: checked)
};
// Times Simulation construction + run() `reps` times; checks every repetition ends the same way.
TimedRuns time_runs(const Scenario& sc, const DataSplit& data, int reps,
                    const std::function<void(const RunResult&)>& check);

// The cluster of the time-only and memory cases: `workers`, half GTX 1060, half GTX 1080 Ti.
json cluster_json(int32_t workers);

// ---- Time-only runs (bench_time_only.cpp) -------------------------------------------------------

struct TimeOnlyCase {
  std::string policy;
  int32_t workers = 0;
  int64_t updates = 0;
  uint64_t events = 0;
  double virtual_s = 0;
  double cpu_s = 0, wall_s = 0, cpu_median_s = 0, construct_cpu_s = 0;
  int reps = 0;
  double updates_per_s() const { return static_cast<double>(updates) / cpu_s; }
  double ns_per_update() const { return cpu_s * 1e9 / static_cast<double>(updates); }
  double ns_per_event() const { return cpu_s * 1e9 / static_cast<double>(events); }
};

using CaseKey = std::tuple<std::string, int32_t, int64_t>;  // policy, workers, updates

// Measures time-only cases in rounds: each round runs every case once (a short case several times:
// its timing is noisier), so that all the cases compared see the same machine conditions; a
// case's figure is its best run. Results are kept, so that sections share measurements.
class TimeOnlyRunner {
 public:
  explicit TimeOnlyRunner(int rounds) : rounds_(rounds) {}
  void measure(const std::vector<CaseKey>& wanted);
  const TimeOnlyCase& get(const std::string& policy, int32_t workers, int64_t updates);

 private:
  int rounds_;
  std::map<CaseKey, TimeOnlyCase> cache_;
};

std::vector<CaseKey> throughput_cases(const Options& opt);
std::vector<CaseKey> growth_cases(const Options& opt);

// ---- The sections: each prints its tables and adds its rows to `summary` ------------------------

void section_throughput(const Options& opt, TimeOnlyRunner& runner, std::vector<SummaryRow>& summary);
void section_growth(const Options& opt, TimeOnlyRunner& runner, std::vector<SummaryRow>& summary);
void section_overhead(const Options& opt, std::vector<SummaryRow>& summary);
void section_memory(const Options& opt, std::vector<SummaryRow>& summary);
void section_micro(const Options& opt, std::vector<SummaryRow>& summary);
// In the child process of section_memory: runs the memory case and prints one JSON line on stdout.
int child_memory(const Options& opt);

}  // namespace stalesim::bench
