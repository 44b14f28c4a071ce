// Whole-run benchmarks through the library API (parse_scenario / load_scenario_file + Simulation).
// Prints one table per section and then ONE summary table that puts each figure beside its target
// from issue 9, as ratios measured in this run (tools/bench/run-all passes the micro-benchmarks'
// JSON with --micro-json so that their figures join the summary).
//
// Sections:
//   throughput  time-only model: simulated iterations (server updates) per second under ASP,
//               SSP(3) and BSP with 1,000 and 100,000 workers
//   overhead    the share of the quick-start scenario's run time spent outside model math:
//               1 - (the same math calls replayed outside the simulator) / (the whole run)
//   memory      peak RSS of a 10,000-worker ASP MLP run on Fashion-MNIST, in a child process,
//               against the inherent bound (peak live versions x parameters x 4 B + the
//               workers' deferred gradients + dataset), and again with deferred gradients off
//               (every worker holds the version it read) for the ratio of the two; that second
//               child needs workers x parameters x 4 B (6 GB at the default 10,000 workers)
//   growth      time-only ASP time against updates (1,000 workers) and against workers (fixed
//               updates); --csv FILE writes these rows for plots/bench_scale.py
//
// Timing: the figure judged is the CPU time of the (single) simulation thread
// (CLOCK_THREAD_CPUTIME_ID: user + system), which equals the wall time on an idle core and, unlike
// it, does not count the time spent descheduled while other processes share the cores; the best
// wall time is printed beside it. Time-only cases run in rounds over all cases and report their
// best run (noise only ever adds time); the overhead is computed per repetition from a run and its
// replay taken back to back, and the median reported. A run's time covers constructing the
// Simulation and run(), not loading data.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "base/rng.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/build_info.hpp"
#include "sim/param_store.hpp"
#include "sim/scenario/load.hpp"
#include "sim/simulation.hpp"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace stalesim;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

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
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return one.empty() ? "unknown" : one;
}

// 1234567 -> "1,234,567".
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

void note(const std::string& s) {
  fmt::print(stderr, "bench: {}\n", s);
  std::fflush(stderr);
}

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

const char* kUsage = R"(Usage: stalesim_bench_runs [options]

Options:
  --section NAME      throughput | overhead | memory | growth (repeatable; default: all)
  --reps N            rounds of the time-only runs, best reported (default 3); the overhead
                      takes max(N, 5) paired repetitions and reports their median
  --csv FILE          write the growth rows as CSV (for plots/bench_scale.py)
  --micro-json FILE   Google Benchmark JSON of stalesim_bench_micro, joined into the summary
  --source-dir DIR    the checkout (for scenarios/quickstart.json; default: the build's)
  --quickstart-virtual-s S   shorten the quick start to S virtual seconds (default 5)
  --memory-workers N  workers of the memory case (default 10000)
  --memory-updates N  updates of the memory case (default 20000)
  --quick             a tenth of every size: a smoke test of the benchmark, not a measurement
  --help
)";

// ---- Summary -------------------------------------------------------------------------------------

enum class Verdict { kPass, kFail, kInfo, kSkip };

struct SummaryRow {
  std::string figure;
  std::string measured;
  std::string target;
  std::string ratio;  // measured / target
  Verdict verdict = Verdict::kInfo;
};

std::string_view verdict_text(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kInfo:
      return "info";
    case Verdict::kSkip:
      return "SKIP";
  }
  return "?";
}

// A row for "measured >= target" (at_least) or "measured <= target".
SummaryRow target_row(std::string figure, double measured, std::string measured_text, double target,
                      std::string target_text, bool at_least) {
  const double ratio = measured / target;
  const bool pass = at_least ? measured >= target : measured <= target;
  return {std::move(figure), std::move(measured_text), std::move(target_text), fmt::format("{:.2f}x", ratio),
          pass ? Verdict::kPass : Verdict::kFail};
}

void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<bool>& right_aligned) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t c = 0; c < r.size(); ++c) {
      if (c) s += "  ";
      s += right_aligned[c] ? fmt::format("{:>{}}", r[c], width[c]) : fmt::format("{:<{}}", r[c], width[c]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    fmt::print("{}\n", s);
  };
  line(header);
  std::vector<std::string> rule;
  for (size_t w : width) rule.emplace_back(w, '-');
  line(rule);
  for (const auto& r : rows) line(r);
}

void print_summary(const std::vector<SummaryRow>& rows) {
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows)
    cells.push_back({r.figure, r.measured, r.target, r.ratio, std::string(verdict_text(r.verdict))});
  fmt::print("\n=== Summary: issue 9 targets, measured in this run ===\n");
  print_table({"Figure", "Measured", "Target", "Measured/target", "Verdict"}, cells,
              {false, true, false, true, false});
  int pass = 0, fail = 0;
  for (const auto& r : rows) {
    pass += r.verdict == Verdict::kPass;
    fail += r.verdict == Verdict::kFail;
  }
  fmt::print("{} of {} targets pass, {} fail.\n", pass, pass + fail, fail);
}

// ---- Time-only runs (throughput and growth) -----------------------------------------------------

constexpr double kTimeOnlyParameters = 1e6;
constexpr double kTimeOnlyFlopsPerSample = 1e8;

json cluster_json(int32_t workers) {
  // Half GTX 1060, half GTX 1080 Ti, as the quick start mixes them.
  json groups = json::array();
  const int32_t slow = workers / 2, fast = workers - workers / 2;
  if (slow > 0) groups.push_back({{"profile", "gtx1060"}, {"count", slow}});
  if (fast > 0) groups.push_back({{"profile", "gtx1080ti"}, {"count", fast}});
  return {{"workers", groups},
          {"network", {{"latency_us", 50}, {"bandwidth_gbps", 10}}},
          {"jitter", {{"type", "lognormal"}, {"sigma", 0.05}}}};
}

json policy_json(const std::string& policy) {
  if (policy == "ssp3") return {{"type", "ssp"}, {"staleness", 3}};
  return {{"type", policy}};
}

Scenario time_only_scenario(const std::string& policy, int32_t workers, int64_t updates) {
  const std::string name = fmt::format("bench-time-only-{}-{}w-{}u", policy, workers, updates);
  const json doc = {
      {"name", name},
      {"seed", 1},
      {"data", {{"dataset", "none"}}},
      {"model",
       {{"type", "time-only"},
        {"parameters", kTimeOnlyParameters},
        {"flops_per_sample", kTimeOnlyFlopsPerSample}}},
      {"optimizer", {{"batch_size", 32}}},
      {"policy", policy_json(policy)},
      {"cluster", cluster_json(workers)},
      {"stop", {{"max_updates", updates}}},
      {"eval", {{"every_s", 10}}},
  };
  return parse_scenario(doc, "bench", name);
}

std::string policy_label(const std::string& p) { return p == "ssp3" ? "SSP(3)" : p == "asp" ? "ASP" : "BSP"; }

struct TimedRuns {
  double cpu_s = 0, wall_s = 0;  // best of reps
  double cpu_median_s = 0;
  double construct_cpu_s = 0;  // of cpu_s: constructing the Simulation (best of reps)
  int reps = 0;
  RunResult result;  // of the last repetition (all are identical: checked)
};

// Times Simulation construction + run() `reps` times; checks every repetition ends the same way.
TimedRuns time_runs(const Scenario& sc, const DataSplit& data, int reps,
                    const std::function<void(const RunResult&)>& check) {
  std::vector<double> cpus, walls, constructs;
  TimedRuns t;
  for (int i = 0; i < reps; ++i) {
    RunResult r;
    {
      const Stopwatch sw;
      Simulation sim(sc, data);
      constructs.push_back(sw.cpu());
      r = sim.run();
      cpus.push_back(sw.cpu());
      walls.push_back(sw.wall());
    }
    check(r);
    if (i > 0 && (r.events != t.result.events || r.server_updates != t.result.server_updates))
      throw std::runtime_error(sc.name + ": repetitions differ (" + std::to_string(r.events) + " vs " +
                               std::to_string(t.result.events) + " events): the run is not deterministic");
    t.result = std::move(r);
  }
  std::sort(cpus.begin(), cpus.end());
  t.cpu_s = cpus.front();
  t.cpu_median_s = cpus[cpus.size() / 2];
  t.wall_s = *std::min_element(walls.begin(), walls.end());
  t.construct_cpu_s = *std::min_element(constructs.begin(), constructs.end());
  t.reps = reps;
  return t;
}

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

  void measure(const std::vector<CaseKey>& wanted) {
    std::vector<CaseKey> todo;
    for (const auto& k : wanted)
      if (!cache_.count(k) && std::find(todo.begin(), todo.end(), k) == todo.end()) todo.push_back(k);
    if (todo.empty()) return;
    struct Runs {
      Scenario sc;
      std::vector<double> cpu, wall, construct;
      RunResult first;
    };
    std::vector<Runs> runs;
    for (const auto& [policy, workers, updates] : todo)
      runs.push_back({time_only_scenario(policy, workers, updates), {}, {}, {}, {}});
    const DataSplit none;
    for (int round = 0; round < rounds_; ++round) {
      note(fmt::format("time-only runs, round {} of {}: {} cases", round + 1, rounds_, todo.size()));
      for (size_t i = 0; i < todo.size(); ++i) {
        const int64_t updates = std::get<2>(todo[i]);
        const auto inner = static_cast<int>(std::clamp<int64_t>(100'000 / updates, 1, 10));
        for (int k = 0; k < inner; ++k) {
          TimedRuns t = time_runs(runs[i].sc, none, 1, [&](const RunResult& r) {
            if (r.status != RunStatus::kCompleted || r.stop_reason != "max_updates" ||
                r.server_updates != updates)
              throw std::runtime_error(fmt::format("{}: ended {} ({}) after {} updates: {}", runs[i].sc.name,
                                                   to_string(r.status), r.stop_reason, r.server_updates,
                                                   r.detail));
          });
          if (runs[i].cpu.empty()) {
            runs[i].first = std::move(t.result);
          } else if (t.result.events != runs[i].first.events) {
            throw std::runtime_error(
                runs[i].sc.name + ": repetitions differ (" + std::to_string(t.result.events) + " vs " +
                std::to_string(runs[i].first.events) + " events): the run is not deterministic");
          }
          runs[i].cpu.push_back(t.cpu_s);
          runs[i].wall.push_back(t.wall_s);
          runs[i].construct.push_back(t.construct_cpu_s);
        }
      }
    }
    for (size_t i = 0; i < todo.size(); ++i) {
      auto& r = runs[i];
      std::sort(r.cpu.begin(), r.cpu.end());
      const auto& [policy, workers, updates] = todo[i];
      cache_.emplace(
          todo[i],
          TimeOnlyCase{policy, workers, updates, r.first.events, r.first.end_time.seconds(), r.cpu.front(),
                       *std::min_element(r.wall.begin(), r.wall.end()), r.cpu[r.cpu.size() / 2],
                       *std::min_element(r.construct.begin(), r.construct.end()),
                       static_cast<int>(r.cpu.size())});
    }
  }

  const TimeOnlyCase& get(const std::string& policy, int32_t workers, int64_t updates) {
    const CaseKey key{policy, workers, updates};
    measure({key});
    return cache_.at(key);
  }

 private:
  int rounds_;
  std::map<CaseKey, TimeOnlyCase> cache_;
};

std::vector<std::string> time_only_cells(const TimeOnlyCase& c) {
  return {policy_label(c.policy),
          grouped(c.workers),
          grouped(c.updates),
          grouped(static_cast<int64_t>(c.events)),
          fmt::format("{:.0f}", c.virtual_s),
          fmt::format("{:.3f}", c.cpu_s),
          fmt::format("{:.3f}", c.construct_cpu_s),
          fmt::format("{:.3f}", c.cpu_median_s),
          fmt::format("{:.3f}", c.wall_s),
          fmt::format("{:.3f}", c.updates_per_s() / 1e6),
          fmt::format("{:.1f}", c.ns_per_event())};
}
const std::vector<std::string> kTimeOnlyHeader = {"policy",    "workers",     "updates",     "events",
                                                  "virtual s", "CPU s",       "of it setup", "CPU s median",
                                                  "wall s",    "M updates/s", "ns/event"};
const std::vector<bool> kTimeOnlyRight = {false, true, true, true, true, true, true, true, true, true, true};

const std::vector<std::string> kPolicies = {"asp", "ssp3", "bsp"};

std::vector<CaseKey> throughput_cases(const Options& opt) {
  std::vector<CaseKey> keys;
  for (int32_t workers : {1'000, 100'000})
    for (const auto& policy : kPolicies)
      keys.emplace_back(policy, workers, opt.scaled(opt.throughput_updates));
  return keys;
}

constexpr int64_t kGrowthUpdates[] = {10'000, 100'000, 1'000'000};   // with 1,000 workers
constexpr int32_t kGrowthWorkers[] = {100, 1'000, 10'000, 100'000};  // at the throughput updates

std::vector<CaseKey> growth_cases(const Options& opt) {
  std::vector<CaseKey> keys;
  for (int64_t u : kGrowthUpdates) keys.emplace_back("asp", 1'000, opt.scaled(u));
  for (int32_t w : kGrowthWorkers) keys.emplace_back("asp", w, opt.scaled(opt.throughput_updates));
  return keys;
}

void section_throughput(const Options& opt, TimeOnlyRunner& runner, std::vector<SummaryRow>& summary) {
  const int64_t updates = opt.scaled(opt.throughput_updates);
  fmt::print(
      "\n=== Throughput: time-only model ({:g} parameters, {:g} FLOP/sample, batch 32, lognormal jitter "
      "0.05, 10 Gbit/s), {} updates; Simulation construction + run(), best of {} rounds ===\n",
      kTimeOnlyParameters, kTimeOnlyFlopsPerSample, grouped(updates), opt.reps);
  runner.measure(throughput_cases(opt));
  std::vector<std::vector<std::string>> rows;
  for (const auto& [policy, workers, u] : throughput_cases(opt))
    rows.push_back(time_only_cells(runner.get(policy, workers, u)));
  print_table(kTimeOnlyHeader, rows, kTimeOnlyRight);

  const auto& asp = runner.get("asp", 1'000, updates);
  summary.push_back(target_row("Time-only ASP, 1,000 workers: updates per CPU second", asp.updates_per_s(),
                               fmt::format("{:.2f} M/s", asp.updates_per_s() / 1e6), 1e6, ">= 1 M/s", true));
  for (int32_t workers : {1'000, 100'000})
    for (const char* policy : {"asp", "ssp3", "bsp"}) {
      if (workers == 1'000 && std::string(policy) == "asp") continue;
      const auto& c = runner.get(policy, workers, updates);
      summary.push_back({fmt::format("Time-only {}, {} workers: updates per CPU second", policy_label(policy),
                                     grouped(workers)),
                         fmt::format("{:.2f} M/s", c.updates_per_s() / 1e6), "(none)", "", Verdict::kInfo});
    }
}

void section_growth(const Options& opt, TimeOnlyRunner& runner, std::vector<SummaryRow>& summary) {
  const int64_t fixed_updates = opt.scaled(opt.throughput_updates);
  fmt::print(
      "\n=== Growth: time-only ASP; time against updates (1,000 workers) and against workers "
      "({} updates); CPU time, best of {} rounds (runs below 100,000 updates repeated within a round) ===\n",
      grouped(fixed_updates), opt.reps);
  std::vector<const TimeOnlyCase*> by_updates, by_workers;
  runner.measure(growth_cases(opt));
  for (int64_t u : kGrowthUpdates) by_updates.push_back(&runner.get("asp", 1'000, opt.scaled(u)));
  for (int32_t w : kGrowthWorkers) by_workers.push_back(&runner.get("asp", w, fixed_updates));

  std::vector<std::vector<std::string>> rows;
  double worst = 0.0;
  std::vector<std::string> decade_text;
  for (size_t i = 0; i < by_updates.size(); ++i) {
    const auto& c = *by_updates[i];
    auto cells = time_only_cells(c);
    cells.push_back(fmt::format("{:.1f}", c.ns_per_update()));
    if (i > 0) {
      const auto& prev = *by_updates[i - 1];
      const double dev = c.ns_per_update() / prev.ns_per_update() - 1.0;
      worst = std::max(worst, std::abs(dev));
      decade_text.push_back(fmt::format("{:+.1f}%", 100 * dev));
      cells.push_back(fmt::format("{:+.1f}%", 100 * dev));
    } else {
      cells.push_back("");
    }
    rows.push_back(cells);
  }
  auto header = kTimeOnlyHeader;
  header.push_back("ns/update");
  header.push_back("vs previous decade");
  auto right = kTimeOnlyRight;
  right.push_back(true);
  right.push_back(true);
  fmt::print(
      "Against updates (time per update per decade; deviation from linear = change of time per update):\n");
  print_table(header, rows, right);

  rows.clear();
  const double base = by_workers[1]->ns_per_event();
  for (const auto* c : by_workers) {
    auto cells = time_only_cells(*c);
    cells.push_back(fmt::format("{:.1f}", c->ns_per_update()));
    cells.push_back(fmt::format("{:.2f}x", c->ns_per_event() / base));
    rows.push_back(cells);
  }
  header.back() = "ns/event vs 1,000 workers";
  fmt::print("Against workers (per-event cost):\n");
  print_table(header, rows, right);

  std::string joined;
  for (const auto& t : decade_text) joined += (joined.empty() ? "" : ", ") + t;
  summary.push_back(target_row("Time grows linearly with updates (ASP, 1,000 workers; worst decade of " +
                                   grouped(by_updates.front()->updates) + " to " +
                                   grouped(by_updates.back()->updates) + ": " + joined + ")",
                               100 * worst, fmt::format("{:.1f}%", 100 * worst), 10.0, "<= 10% per decade",
                               false));
  summary.push_back({"Per-event cost at 100,000 vs 1,000 workers (ASP)",
                     fmt::format("{:.2f}x", by_workers.back()->ns_per_event() / base), "near-flat", "",
                     Verdict::kInfo});

  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    if (!f) throw std::runtime_error(opt.csv + ": cannot write");
    f << "series,policy,workers,updates,events,cpu_s,construct_cpu_s,cpu_median_s,wall_s,reps,ns_per_update,"
         "ns_per_event\n";
    auto row = [&f](const char* series, const TimeOnlyCase& c) {
      f << fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{},{:.3f},{:.3f}\n", series, c.policy,
                       c.workers, c.updates, c.events, c.cpu_s, c.construct_cpu_s, c.cpu_median_s, c.wall_s,
                       c.reps, c.ns_per_update(), c.ns_per_event());
    };
    for (const auto* c : by_updates) row("updates", *c);
    for (const auto* c : by_workers) row("workers", *c);
    note("wrote " + opt.csv);
  }
}

// ---- Overhead outside model math ----------------------------------------------------------------

struct Replay {
  double gradient_s = 0;  // loss_and_gradient calls
  double evaluate_s = 0;  // evaluate calls
  double math_s() const { return gradient_s + evaluate_s; }
};

// The run's model math, replayed outside the simulator: `updates` loss_and_gradient calls at the
// scenario's batch size on batches drawn as a worker draws them (random samples of the training
// set), cycling through `versions` parameter copies as the run's live versions do, and `evals`
// evaluate calls on the same test samples. Batches are drawn before the clock starts.
Replay replay_math(const Scenario& sc, const DataSplit& data, int64_t updates, size_t evals,
                   int64_t versions) {
  auto model = make_model(sc.model, data.train.features, data.train.classes);
  const auto p = static_cast<size_t>(model->parameter_count());
  std::vector<std::vector<float>> params(static_cast<size_t>(std::max<int64_t>(1, versions)),
                                         std::vector<float>(p));
  Rng init_rng(sc.seed, Purpose::kInit, 0);
  model->init(params[0], init_rng);
  for (auto& v : params) v = params[0];
  std::vector<float> grad(p);
  const int64_t m =
      sc.eval.test_samples > 0 ? std::min(sc.eval.test_samples, data.test.size()) : data.test.size();
  std::vector<int32_t> eval_indices(static_cast<size_t>(m));
  std::iota(eval_indices.begin(), eval_indices.end(), 0);
  std::vector<int32_t> all(static_cast<size_t>(data.train.size()));
  std::iota(all.begin(), all.end(), 0);
  BatchSampler sampler(std::move(all), sc.seed, 0);
  const auto batch = static_cast<size_t>(sc.optimizer.batch_size);
  std::vector<int32_t> batches(static_cast<size_t>(updates) * batch);
  for (int64_t i = 0; i < updates; ++i) {
    const auto b = sampler.next(sc.optimizer.batch_size);
    std::copy(b.begin(), b.end(),
              batches.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(i) * batch));
  }
  // Each kind of call is timed as one loop: reading this thread's CPU clock is a system call
  // (about a microsecond here), too costly to wrap around every call.
  Replay r;
  double loss_sum = 0;
  const double t0 = thread_cpu_seconds();
  for (int64_t i = 0; i < updates; ++i) {
    const std::span<const int32_t> idx(batches.data() + static_cast<size_t>(i) * batch, batch);
    loss_sum +=
        model->loss_and_gradient(params[static_cast<size_t>(i) % params.size()], data.train, idx, grad);
  }
  const double t1 = thread_cpu_seconds();
  for (size_t i = 0; i < evals; ++i) {
    const Evaluation e = model->evaluate(params[i % params.size()], data.test, eval_indices);
    if (!std::isfinite(e.loss)) throw std::runtime_error("replay: evaluation loss is not finite");
  }
  r.gradient_s = t1 - t0;
  r.evaluate_s = thread_cpu_seconds() - t1;
  if (!std::isfinite(loss_sum)) throw std::runtime_error("replay: training loss is not finite");
  return r;
}

// The server's own per-update math, replayed: a copy-on-write of the parameters when the run held
// more than one version (a reader holds the current version, as a re-granted worker that keeps
// its parameters does; a worker that defers its gradient holds none, and the server then updates
// in place: no copy) and an SGD step w -= lr g as the sgd rule
// takes it (an Eigen axpy; written here rather than through LearningRule, so that this stays an
// estimate of the same work whatever that interface becomes).
struct ServerReplay {
  double copy_s = 0, apply_s = 0;
};
ServerReplay replay_server(const Scenario& sc, int64_t parameters, int64_t updates, int64_t versions) {
  ParamStore store(parameters);
  const auto step = static_cast<float>(sc.optimizer.lr);
  std::vector<float> grad(static_cast<size_t>(parameters), 1e-3f);
  const Eigen::Map<const Eigen::VectorXf> g(grad.data(), static_cast<Eigen::Index>(parameters));
  std::vector<Snapshot> held(static_cast<size_t>(std::max<int64_t>(0, versions - 1)));
  ServerReplay r;
  // Two loops, each timed whole (see replay_math): the copies, then the steps on one block.
  double check = 0;  // read back, so that no work can be optimized away
  double t0 = thread_cpu_seconds();
  for (int64_t i = 0; i < updates; ++i) {
    if (!held.empty()) held[static_cast<size_t>(i) % held.size()] = store.read();
    check +=
        store.write()[static_cast<size_t>(i) %
                      static_cast<size_t>(parameters)];  // copies when a reader holds the current version
    store.commit();
  }
  r.copy_s = thread_cpu_seconds() - t0;
  for (auto& h : held) h.reset();
  const auto w = store.write();  // nobody else holds it now: no copy
  Eigen::Map<Eigen::VectorXf> wm(w.data(), static_cast<Eigen::Index>(w.size()));
  t0 = thread_cpu_seconds();
  for (int64_t i = 0; i < updates; ++i) {
    wm.noalias() -= step * g;
    check += w[static_cast<size_t>(i) % w.size()];
  }
  r.apply_s = thread_cpu_seconds() - t0;
  if (!std::isfinite(check)) throw std::runtime_error("server replay: parameters are not finite");
  return r;
}

void section_overhead(const Options& opt, std::vector<SummaryRow>& summary) {
  const std::string path = opt.source_dir + "/scenarios/quickstart.json";
  const std::vector<Override> sets{
      {"stop.virtual_time_s", fmt::format("{}", opt.quickstart_virtual_s * (opt.quick ? 0.1 : 1.0))}};
  const Scenario sc = load_scenario_file(path, sets);
  note(fmt::format("quick start shortened to {:g} virtual s: loading data", *sc.stop.virtual_time_s));
  const Stopwatch load_sw;
  const DataSplit data = load_data(sc);
  const double load_s = load_sw.cpu();
  // The share is small against the noise of a shared machine: more repetitions than elsewhere.
  const int reps = std::max(opt.reps, 5);
  note(fmt::format("quick start: {} repetitions of the run, each followed by the replay of its math", reps));
  // Each repetition runs the simulation and then replays its math at once, so that both see the
  // same machine conditions; the share is computed per repetition and its median reported.
  std::vector<double> a_cpu, a_wall, b_grad, b_eval, c_copy, c_apply, shares;
  RunResult r;
  for (int i = 0; i < reps; ++i) {
    TimedRuns one = time_runs(sc, data, 1, [&](const RunResult& x) {
      if (x.status != RunStatus::kCompleted)
        throw std::runtime_error("quickstart ended " + std::string(to_string(x.status)));
    });
    if (i > 0 && one.result.events != r.events)
      throw std::runtime_error(sc.name + ": repetitions differ: the run is not deterministic");
    r = std::move(one.result);
    const Replay b = replay_math(sc, data, r.server_updates, r.metrics.size(), r.peak_live_versions);
    const ServerReplay c = replay_server(sc, static_cast<int64_t>(r.final_params.size()), r.server_updates,
                                         r.peak_live_versions);
    a_cpu.push_back(one.cpu_s);
    a_wall.push_back(one.wall_s);
    b_grad.push_back(b.gradient_s);
    b_eval.push_back(b.evaluate_s);
    c_copy.push_back(c.copy_s);
    c_apply.push_back(c.apply_s);
    shares.push_back(1.0 - b.math_s() / one.cpu_s);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  const double a = median(a_cpu);
  const double math = median(b_grad) + median(b_eval);
  const double share = median(shares);
  const auto evals = r.metrics.size();
  const int64_t eval_samples =
      sc.eval.test_samples > 0 ? std::min(sc.eval.test_samples, data.test.size()) : data.test.size();
  auto pct = [a](double x) { return fmt::format("{:.1f}%", 100 * x / a); };
  fmt::print("\n=== Overhead outside model math: {} shortened to {:g} virtual s ===\n", path,
             *sc.stop.virtual_time_s);
  fmt::print(
      "Method: all times are CPU time of this thread; {} repetitions, each running (a) then (b) and (c):\n"
      "(a) the run (Simulation construction + run(), data already loaded);\n"
      "(b) the same model math replayed outside the simulator: as many loss_and_gradient calls at batch {} "
      "as\n"
      "the run applied updates, on batches of random training samples drawn beforehand, cycling through as "
      "many\n"
      "parameter copies as the run's peak live versions, plus as many evaluate calls on the same {} test\n"
      "samples as the run has metrics rows. Overhead = 1 - b/a, per repetition; the median is judged.\n"
      "It is everything the run does besides the model's math (events, policy, server copy-on-write and\n"
      "update, bookkeeping, cache effects); (c) replays the server's own per-update math alone, to "
      "attribute\n"
      "part of it. The table shows medians over the repetitions (and bests for (a)).\n",
      reps, sc.optimizer.batch_size, grouped(eval_samples));
  auto sec = [](double x) { return fmt::format("{:.3f}", x); };
  const double outside = a - math;
  const double rest = outside - median(c_copy) - median(c_apply);
  std::string per_rep;
  for (double x : shares) per_rep += fmt::format("{}{:.1f}%", per_rep.empty() ? "" : ", ", 100 * x);
  std::vector<std::vector<std::string>> rows = {
      {"data loading (not in a)", sec(load_s), ""},
      {"(a) whole run", sec(a), pct(a)},
      {"(a) whole run, best", sec(best(a_cpu)), ""},
      {"(a) whole run, best wall time", sec(best(a_wall)), ""},
      {fmt::format("(b) {} gradients", grouped(r.server_updates)), sec(median(b_grad)), pct(median(b_grad))},
      {fmt::format("(b) {} evaluations", evals), sec(median(b_eval)), pct(median(b_eval))},
      {"(b) model math, total", sec(math), pct(math)},
      {"a - b: outside model math", sec(outside), pct(outside)},
      {"  (c) of which server copy-on-write", sec(median(c_copy)), pct(median(c_copy))},
      {"  (c) of which SGD step (w -= lr g)", sec(median(c_apply)), pct(median(c_apply))},
      {"  rest (events, policy, bookkeeping, cache)", sec(rest), pct(rest)},
  };
  fmt::print("run: {} updates, {} events, {} metrics rows, peak live versions {}\n",
             grouped(r.server_updates), grouped(static_cast<int64_t>(r.events)), evals, r.peak_live_versions);
  print_table({"part (median of repetitions)", "CPU s", "share of (a)"}, rows, {false, true, true});
  fmt::print("1 - b/a per repetition: {}; median {:.1f}%\n", per_rep, 100 * share);
  summary.push_back(
      target_row(fmt::format("Quick start: share of run time outside model math (median of {} pairs)", reps),
                 100 * share, fmt::format("{:.1f}%", 100 * share), 10.0, "<= 10%", false));
}

// ---- Memory --------------------------------------------------------------------------------------

// VmHWM (peak resident set) or VmRSS of this process, bytes.
int64_t proc_status_bytes(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream in(line.substr(std::string(key).size()));
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  throw std::runtime_error(std::string("/proc/self/status has no ") + key);
}

// In the child: runs the memory case and prints one JSON line on stdout.
int child_memory(const Options& opt) {
  pin_eigen_cache_sizes();
  const int64_t baseline = proc_status_bytes("VmHWM:");
  const json data_doc = {{"dataset", "fashion-mnist"}};
  // The batch: 32, or the worker's whole shard when a shard is smaller (60,000 samples over 10,000
  // workers leave 6 each, and the simulator refuses a batch larger than a shard).
  json doc = {
      {"name", "bench-memory"},
      {"seed", 1},
      {"data", data_doc},
      {"model", {{"type", "mlp"}, {"hidden", {200}}}},
      {"optimizer", {{"lr", 0.05}, {"batch_size", 32}}},
      {"policy", {{"type", "asp"}}},
      {"cluster", cluster_json(opt.memory_workers)},
      {"stop", {{"max_updates", opt.scaled(opt.memory_updates)}}},
      {"eval", {{"every_s", 10}}},
  };
  Scenario sc = parse_scenario(doc, "bench", "bench-memory");
  const DataSplit data = load_data(sc);
  const int64_t after_load = proc_status_bytes("VmHWM:");
  const int64_t shard = data.train.size() / opt.memory_workers;
  if (shard < 1) throw std::runtime_error("memory case: fewer training samples than workers");
  doc["optimizer"]["batch_size"] = std::min<int64_t>(32, shard);
  sc = parse_scenario(doc, "bench", "bench-memory");
  const Stopwatch sw;
  RunResult r;
  RunOptions run_options;
  run_options.defer_gradients = !opt.no_defer;
  {
    Simulation sim(sc, data);
    r = sim.run(run_options);
  }
  // What the workers' deferred gradients hold: batch indices and factors, per worker.
  const int64_t deferred_bytes =
      r.deferred_gradients
          ? opt.memory_workers * sc.optimizer.batch_size *
                (4 + 4 * make_model(sc.model, data.train.features, data.train.classes)->deferred_floats(1))
          : 0;
  const double wall = sw.wall(), cpu = sw.cpu();
  const int64_t dataset_bytes =
      static_cast<int64_t>((data.train.x.size() + data.test.x.size()) * sizeof(float));
  const json out = {{"vmhwm_bytes", proc_status_bytes("VmHWM:")},
                    {"baseline_bytes", baseline},
                    {"after_load_bytes", after_load},
                    {"peak_live_versions", r.peak_live_versions},
                    {"deferred", r.deferred_gradients},
                    {"deferred_bytes", deferred_bytes},
                    {"parameters", static_cast<int64_t>(r.final_params.size())},
                    {"dataset_bytes", dataset_bytes},
                    {"updates", r.server_updates},
                    {"workers", opt.memory_workers},
                    {"batch", sc.optimizer.batch_size},
                    {"status", std::string(to_string(r.status))},
                    {"stop_reason", r.stop_reason},
                    {"wall_s", wall},
                    {"cpu_s", cpu}};
  fmt::print("{}\n", out.dump());
  return 0;
}

// Runs this binary again with --child-memory and reads its JSON line: the child's peak RSS is the
// run's alone, not this process's (which has run other sections).
json run_child_memory(const Options& opt, bool defer) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args = {"/proc/self/exe",   "--child-memory",
                                   "--memory-workers", std::to_string(opt.memory_workers),
                                   "--memory-updates", std::to_string(opt.memory_updates)};
  if (opt.quick) args.push_back("--quick");
  if (!defer) args.push_back("--no-defer");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(fmt::format("memory child failed (status {}): {}", status, text));
  return json::parse(text);
}

void section_memory(const Options& opt, std::vector<SummaryRow>& summary) {
  note(fmt::format("memory: {}-worker ASP MLP run in a child process, with and without deferred gradients",
                   grouped(opt.memory_workers)));
  const json m = run_child_memory(opt, true), held = run_child_memory(opt, false);
  const auto peak = m["vmhwm_bytes"].get<int64_t>();
  const auto held_peak = held["vmhwm_bytes"].get<int64_t>();
  const auto versions = m["peak_live_versions"].get<int64_t>();
  const auto held_versions = held["peak_live_versions"].get<int64_t>();
  const auto params = m["parameters"].get<int64_t>();
  const auto dataset = m["dataset_bytes"].get<int64_t>();
  const auto deferred = m["deferred_bytes"].get<int64_t>();
  const int64_t bound = versions * params * 4 + deferred + dataset;
  const int64_t held_bound = held_versions * params * 4 + dataset;
  const double ratio = static_cast<double>(peak) / static_cast<double>(bound);
  const double mib = 1024.0 * 1024.0;
  const auto in_mib = [mib](int64_t bytes) {
    return fmt::format("{:.1f}", static_cast<double>(bytes) / mib);
  };
  fmt::print(
      "\n=== Memory: {}-worker ASP, MLP 784-200-10 on Fashion-MNIST, batch {}, {} updates ({}; deferred "
      "{:.1f} s "
      "CPU, {:.1f} s wall; held {:.1f} s CPU, {:.1f} s wall) ===\n",
      grouped(m["workers"].get<int64_t>()), m["batch"].get<int64_t>(), grouped(m["updates"].get<int64_t>()),
      m["stop_reason"].get<std::string>(), m["cpu_s"].get<double>(), m["wall_s"].get<double>(),
      held["cpu_s"].get<double>(), held["wall_s"].get<double>());
  if (m["batch"].get<int64_t>() != 32)
    fmt::print(
        "(batch {}: the simulator refuses a batch larger than a worker's shard, and {} training samples\n"
        "over {} workers leave {} each)\n",
        m["batch"].get<int64_t>(), grouped(60'000), grouped(m["workers"].get<int64_t>()),
        m["batch"].get<int64_t>());
  if (!m["deferred"].get<bool>())
    fmt::print("(the run did not defer its gradients: both columns hold versions)\n");
  const std::vector<std::vector<std::string>> rows = {
      {"peak RSS of the child (VmHWM)", in_mib(peak), in_mib(held_peak)},
      {"  peak RSS before loading data", in_mib(m["baseline_bytes"].get<int64_t>()),
       in_mib(held["baseline_bytes"].get<int64_t>())},
      {"  peak RSS after loading data", in_mib(m["after_load_bytes"].get<int64_t>()),
       in_mib(held["after_load_bytes"].get<int64_t>())},
      {fmt::format("peak live versions x {} parameters x 4 B ({} / {} versions)", grouped(params),
                   grouped(versions), grouped(held_versions)),
       in_mib(versions * params * 4), in_mib(held_versions * params * 4)},
      {"workers' deferred gradients (indices and factors)", in_mib(deferred), in_mib(0)},
      {"dataset (train + test features, float32)", in_mib(dataset), in_mib(dataset)},
      {"inherent bound (sum of the three above)", in_mib(bound), in_mib(held_bound)},
      {"peak RSS / bound", fmt::format("{:.3f}", ratio),
       fmt::format("{:.3f}", static_cast<double>(held_peak) / static_cast<double>(held_bound))},
  };
  print_table({"quantity", "deferred MiB", "held MiB"}, rows, {false, true, true});
  summary.push_back(
      target_row(fmt::format("{}-worker ASP MLP: peak RSS / inherent bound ({} peak live versions)",
                             grouped(m["workers"].get<int64_t>()), grouped(versions)),
                 ratio, fmt::format("{:.3f}", ratio), 1.3, "<= 1.3", false));
  summary.push_back({fmt::format("{}-worker ASP MLP: peak RSS, versions held / gradients deferred",
                                 grouped(m["workers"].get<int64_t>())),
                     fmt::format("{:.1f}x", static_cast<double>(held_peak) / static_cast<double>(peak)),
                     "(none)", "", Verdict::kInfo});
}

// ---- Micro-benchmarks (from stalesim_bench_micro's JSON) ----------------------------------------

// run name -> the median aggregate (or the single run when there are no repetitions).
std::map<std::string, json> read_micro(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot read");
  const json doc = json::parse(f);
  std::map<std::string, json> out;
  for (const auto& b : doc.at("benchmarks")) {
    const std::string name = b.value("run_name", b.at("name").get<std::string>());
    if (b.value("run_type", "iteration") == "aggregate") {
      if (b.value("aggregate_name", "") == "median") out[name] = b;
    } else if (!out.count(name)) {
      out[name] = b;
    }
  }
  return out;
}

void section_micro(const Options& opt, std::vector<SummaryRow>& summary) {
  const auto micro = read_micro(opt.micro_json);
  auto get = [&](const std::string& name, const char* field) {
    const auto it = micro.find(name);
    if (it == micro.end() || !it->second.contains(field))
      throw std::runtime_error(opt.micro_json + ": no " + field + " for " + name);
    return it->second.at(field).get<double>();
  };
  fmt::print(
      "\n=== Micro-benchmarks (stalesim_bench_micro; medians of its repetitions, per CPU second) ===\n");
  std::vector<std::vector<std::string>> rows;
  for (int pending : {1'000, 100'000}) {
    const double eps = get(fmt::format("engine_steady_state/pending:{}", pending), "items_per_second");
    rows.push_back({fmt::format("event queue, {} pending", grouped(pending)),
                    fmt::format("{:.2f} M events/s", eps / 1e6)});
  }
  auto sgemm_name = [](int m, int k, int n) { return fmt::format("eigen_sgemm/m:{}/k:{}/n:{}", m, k, n); };
  const double ceiling = get(sgemm_name(512, 512, 512), "flops");
  for (int b : {1, 32, 128}) {
    const std::string mlp = fmt::format("mlp_gradient/batch:{}", b);
    const double nominal = get(mlp, "flops_nominal"), performed = get(mlp, "flops_performed");
    const double sgemm = get(sgemm_name(200, 784, b), "flops");
    rows.push_back({fmt::format("MLP 784-200-10 gradient, batch {}", b),
                    fmt::format("{:.1f} GFLOP/s nominal, {:.1f} performed", nominal / 1e9, performed / 1e9)});
    rows.push_back(
        {fmt::format("Eigen SGEMM 200x784 * 784x{}", b), fmt::format("{:.1f} GFLOP/s", sgemm / 1e9)});
  }
  for (int b : {32, 128}) {  // absent from JSON written before the CNN was benchmarked
    const std::string cnn = fmt::format("cnn_gradient/batch:{}", b);
    if (!micro.count(cnn)) continue;
    rows.push_back({fmt::format("CNN (LeNet-5, 28x28) gradient, batch {}", b),
                    fmt::format("{:.1f} GFLOP/s nominal", get(cnn, "flops_nominal") / 1e9)});
  }
  rows.push_back({"Eigen SGEMM 512^3 (ceiling)", fmt::format("{:.1f} GFLOP/s", ceiling / 1e9)});
  print_table({"benchmark", "median"}, rows, {false, true});
  fmt::print(
      "nominal FLOPs = Model::flops_per_sample() x batch (6 x weights); performed = the GEMM FLOPs the\n"
      "code does (it skips the first layer's input gradient: 4 x weights + 2 x 200 x 10 per sample).\n");

  const double eps = get("engine_steady_state/pending:1000", "items_per_second");
  summary.push_back(target_row("Bare event queue, 1,000 pending: events per CPU second", eps,
                               fmt::format("{:.2f} M/s", eps / 1e6), 5e6, ">= 5 M/s", true));
  const double eps_big = get("engine_steady_state/pending:100000", "items_per_second");
  summary.push_back({"Bare event queue, 100,000 pending: events per CPU second",
                     fmt::format("{:.2f} M/s", eps_big / 1e6), "(none)", "", Verdict::kInfo});
  for (int b : {32, 128}) {
    const std::string mlp = fmt::format("mlp_gradient/batch:{}", b);
    const double nominal = get(mlp, "flops_nominal"), performed = get(mlp, "flops_performed");
    const double same = get(sgemm_name(200, 784, b), "flops");
    summary.push_back(
        target_row(fmt::format("MLP gradient b={} (nominal FLOPs) / SGEMM 200x784x{}", b, b), nominal / same,
                   fmt::format("{:.2f} ({:.1f}/{:.1f} GFLOP/s)", nominal / same, nominal / 1e9, same / 1e9),
                   0.5, ">= 0.50", true));
    summary.push_back(target_row(
        fmt::format("MLP gradient b={} (nominal FLOPs) / SGEMM 512^3", b), nominal / ceiling,
        fmt::format("{:.2f} ({:.1f}/{:.1f} GFLOP/s)", nominal / ceiling, nominal / 1e9, ceiling / 1e9), 0.5,
        ">= 0.50", true));
    summary.push_back({fmt::format("MLP gradient b={} (performed FLOPs) / SGEMM 200x784x{}", b, b),
                       fmt::format("{:.2f}", performed / same), "(same target, other count)", "",
                       Verdict::kInfo});
  }
  for (int b : {32, 128}) {
    const std::string cnn = fmt::format("cnn_gradient/batch:{}", b);
    if (!micro.count(cnn)) continue;
    const double nominal = get(cnn, "flops_nominal");
    summary.push_back(
        {fmt::format("CNN gradient b={} (nominal FLOPs) / SGEMM 512^3", b),
         fmt::format("{:.2f} ({:.1f}/{:.1f} GFLOP/s)", nominal / ceiling, nominal / 1e9, ceiling / 1e9),
         "(none)", "", Verdict::kInfo});
  }
}

int run(const Options& opt) {
  pin_eigen_cache_sizes();
  std::vector<SummaryRow> summary;
  const auto t0 = Clock::now();
  const std::string load_before = load_average();
  if (!opt.micro_json.empty()) {
    section_micro(opt, summary);
  } else if (opt.sections.empty()) {
    summary.push_back({"Micro-benchmarks (event queue, MLP vs SGEMM)", "not measured",
                       "needs --micro-json (tools/bench/run-all)", "", Verdict::kSkip});
  }
  TimeOnlyRunner runner(opt.reps);
  // All the time-only cases first, in rounds over all of them (see TimeOnlyRunner).
  {
    std::vector<CaseKey> keys;
    if (opt.wants("throughput")) keys = throughput_cases(opt);
    if (opt.wants("growth"))
      for (const auto& k : growth_cases(opt)) keys.push_back(k);
    try {
      runner.measure(keys);
    } catch (const std::exception&) {
      // Reported by the section that needs the failed case.
    }
  }
  // Each section runs on its own: a failure is reported in the summary, the others still run.
  auto guarded = [&](const char* name, const std::function<void()>& body) {
    if (!opt.wants(name)) return;
    try {
      body();
    } catch (const std::exception& e) {
      fmt::print("\n=== {}: FAILED TO RUN: {} ===\n", name, e.what());
      summary.push_back({std::string(name) + " section", "not measured", e.what(), "", Verdict::kSkip});
    }
  };
  guarded("throughput", [&] { section_throughput(opt, runner, summary); });
  guarded("growth", [&] { section_growth(opt, runner, summary); });
  guarded("overhead", [&] { section_overhead(opt, summary); });
  guarded("memory", [&] { section_memory(opt, summary); });
  if (opt.quick) fmt::print("\n--quick: a tenth of every size; a smoke test, not a measurement.\n");
  print_summary(summary);
  const auto& b = build_info();
  fmt::print(
      "Times are CPU time of the simulation thread (= wall time on an idle core): time-only runs best of {}\n"
      "rounds, overhead the median of its paired repetitions, micro-benchmarks medians. Load average (1 "
      "min)\n"
      "on this {}-core machine: {} when the whole-run benchmarks started, {} at the end.\n",
      opt.reps, sysconf(_SC_NPROCESSORS_ONLN), load_before, load_average());
  fmt::print("stalesim {} ({}), {} {}, -march={}, Eigen {}; whole-run benchmarks took {:.0f} s\n", b.version,
             b.git_revision, b.compiler, b.build_type, b.isa, b.eigen_version, seconds_since(t0));
  for (const auto& r : summary)
    if (r.verdict == Verdict::kSkip) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  bool child = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        fmt::print("{}", kUsage);
        return 0;
      } else if (a == "--section") {
        const std::string s = value();
        if (s != "throughput" && s != "overhead" && s != "memory" && s != "growth")
          throw std::invalid_argument("unknown section '" + s + "'");
        opt.sections.insert(s);
      } else if (a == "--reps") {
        opt.reps = std::stoi(value());
        if (opt.reps < 1) throw std::invalid_argument("--reps must be >= 1");
      } else if (a == "--csv") {
        opt.csv = value();
      } else if (a == "--micro-json") {
        opt.micro_json = value();
      } else if (a == "--source-dir") {
        opt.source_dir = value();
      } else if (a == "--quickstart-virtual-s") {
        opt.quickstart_virtual_s = std::stod(value());
      } else if (a == "--memory-workers") {
        opt.memory_workers = std::stoi(value());
      } else if (a == "--memory-updates") {
        opt.memory_updates = std::stoll(value());
      } else if (a == "--quick") {
        opt.quick = true;
      } else if (a == "--child-memory") {
        child = true;
      } else if (a == "--no-defer") {
        opt.no_defer = true;
      } else {
        throw std::invalid_argument("unknown argument '" + a + "'");
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "stalesim_bench_runs: {}\n{}", e.what(), kUsage);
    return 2;
  }
  try {
    return child ? child_memory(opt) : run(opt);
  } catch (const std::exception& e) {
    fmt::print(stderr, "stalesim_bench_runs: {}\n", e.what());
    return 1;
  }
}
