// Whole-run benchmarks through the library API (parse_scenario / load_scenario_file + Simulation).
// Prints one table per section and then ONE summary table that puts each figure beside its target
// from issue 9, as ratios measured in this run (tools/bench/run-all passes the micro-benchmarks'
// JSON with --micro-json so that their figures join the summary).
//
// Sections (one file each, declared in tools/bench/bench.hpp; this file parses the options and
// prints the summary):
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

#include <unistd.h>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/build_info.hpp"
#include "tools/bench/bench.hpp"

namespace {

using namespace stalesim;
using namespace stalesim::bench;

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
