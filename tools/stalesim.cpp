// stalesim: the command-line front end. It parses arguments, loads a scenario, runs it and writes
// its outputs; the simulator itself lives in the stalesim::sim and stalesim::models libraries.
//
// Exit codes: 0 success (a diverged run included: its outputs say so), 2 bad input (usage,
// scenario, data, output folder), 3 failed simulation (deadlock), 4 out of memory (std::bad_alloc),
// 130 interrupted.
// sweep: 3 when any point failed. reproduce: 3 on MISMATCH.

#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "models/cost_arch.hpp"
#include "models/cuda/cuda_model.hpp"
#include "models/device_profile.hpp"
#include "models/profile_calibration.hpp"
#include "sim/build_info.hpp"
#include "sim/estimate/estimate.hpp"
#include "sim/output/explain.hpp"
#include "base/file_read.hpp"
#include "sim/gradient_pool.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/output/outputs.hpp"
#include "sim/analysis/reproduce.hpp"
#include "sim/run.hpp"
#include "sim/scenario/fields.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/schema.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim/simulation.hpp"
#include "sim/analysis/summarize.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "sim/sweep/sweep_spec.hpp"
#include "sim/text.hpp"
#include "sim/output/timeline.hpp"
#include "sim/output/trace.hpp"
#include "tools/cmd_real.hpp"

namespace po = boost::program_options;
using namespace stalesim;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;
constexpr int kExitFailed = 3;  // a failed simulation (deadlock), a reproduction mismatch, an internal error
constexpr int kExitOutOfMemory = 4;
constexpr int kExitInterrupted = 130;

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::atomic<bool> g_interrupt{false};
extern "C" void on_signal(int) { g_interrupt.store(true); }
// SIGINT, SIGTERM and SIGHUP (a closed terminal) stop a run the same way: outputs marked
// interrupted, exit 130.
void catch_signals() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_signal);
}

// `dir` as the user wrote it, without trailing separators ("out/" -> "out"), for messages.
std::string display_path(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// What --force must not delete (the scenario file, this program), and the fault-injection hook
// STALESIM_INJECT_KILL_AT_STEP=N: SIGKILL at the N-th step (1-based) of writing and installing
// the output folder, to test that a kill at any instant leaves a complete run (REFERENCE.md "Safety and errors").
OutputGuard output_guard(const std::string& scenario_path) {
  OutputGuard g;
  g.protect.emplace_back(scenario_path);
  std::error_code ec;
  if (auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) g.protect.push_back(self);
  if (const char* f = std::getenv("STALESIM_INJECT_KILL_AT_STEP"); f != nullptr && *f != '\0') {
    char* end = nullptr;
    const long long n = std::strtoll(f, &end, 10);
    if (*end != '\0' || n < 1)
      throw UsageError(fmt::format("STALESIM_INJECT_KILL_AT_STEP='{}': expected an integer >= 1", f));
    g.checkpoint = [n, count = 0LL](std::string_view) mutable {
      if (++count == n) ::kill(::getpid(), SIGKILL);
    };
  }
  return g;
}

const char* kMainHelp = R"(stalesim: a deterministic simulator of distributed SGD on a parameter server

Usage: stalesim COMMAND [options]

Commands:
  run SCENARIO       run a scenario and write its outputs
  validate SCENARIO  check a scenario and print it with every default resolved
  sweep SCENARIO     run a grid of variants and seeds of a scenario, one folder each (resumable)
  sweep FILE         run a sweep file (*.sweep.json: grid, zip, seeds, derived fields, constraints)
  reproduce SUMMARY  rerun a finished run from its summary.json and compare its files byte for byte
  reproduce DIR      rerun every point of a sweep folder and compare, point by point
  summarize DIR      mean and spread over seeds per sweep point, seed-averaged curves with bands
  timeline SCENARIO  draw the first seconds of a run in the terminal, a row per worker
  real SCENARIO      run a scenario for real: a parameter server and workers over MPI (wall clock)
  compare A B [B..]  compare run folders (a simulation and real runs): errors, KS distance, spread
  profiles [FILE]    list the built-in device profiles (or check profile files) and how to add yours
  costs              list the cost architectures (model.cost): parameters, FLOPs per sample, source
  calibrate          time a model on this machine's GPU and write its device profile (CUDA builds)
  fields             print the scenario field reference (Markdown)
  schema [--sweep]   print the scenario (or sweep file) format as JSON Schema 2020-12 (for editors)
  version            print the version and build

Run 'stalesim COMMAND --help' for a command's options.
Exit codes: 0 success, 2 bad input, 3 failed simulation (deadlock), 4 out of memory, 130 interrupted.
            sweep: 3 when a point failed; reproduce: 3 on MISMATCH.
)";

struct Parsed {
  po::variables_map vm;
  bool help = false;
};

Parsed parse(const std::vector<std::string>& args, const po::options_description& opts,
             const po::positional_options_description& pos) {
  Parsed p;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), p.vm);
    p.help = p.vm.count("help") > 0;
    if (!p.help) po::notify(p.vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return p;
}

// --seed: digits only, 0 to 2^64 - 1 (a leading '-' or '+' is refused, not wrapped around).
uint64_t parse_seed(const std::string& text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || ec != std::errc() || end != text.data() + text.size())
    throw UsageError(fmt::format("--seed '{}': expected an integer from 0 to 18446744073709551615", text));
  return v;
}

Scenario load(const po::variables_map& vm) {
  std::vector<Override> sets;
  if (vm.count("set"))
    for (const auto& s : vm["set"].as<std::vector<std::string>>()) sets.push_back(parse_override(s));
  std::optional<uint64_t> seed;
  if (vm.count("seed")) seed = parse_seed(vm["seed"].as<std::string>());
  const std::string path = vm["scenario"].as<std::string>();
  if (path.ends_with(".sweep.json"))
    throw UsageError(
        fmt::format("{} is a sweep file, not a scenario: run it with 'stalesim sweep {}'", path, path));
  return load_scenario_file(path, sets, seed);
}

// --threads, else STALESIM_THREADS, else the machine's cores; the default divided by `share`
// (sweeps: --jobs runs share the cores).
int threads_option(const po::variables_map& vm, int share) {
  if (vm.count("threads")) {
    const int t = vm["threads"].as<int>();
    if (t < 1 || t > 1024)
      throw UsageError(fmt::format("--threads: expected an integer in [1, 1024], got {}", t));
    return t;
  }
  try {
    return std::max(1, default_threads() / std::max(1, share));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

void add_scenario_options(po::options_description& o) {
  o.add_options()("scenario", po::value<std::string>()->required(), "scenario JSON file")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field by dotted path, e.g. --set policy.staleness=8 (repeatable)")(
      "seed", po::value<std::string>(),
      "override the scenario's seed: an integer from 0 to 18446744073709551615");
}

std::string fmt_opt(const std::optional<double>& v, const char* f = "{:.4f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("n/a");
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim run SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("out", po::value<std::string>(), "output folder (default: results/<scenario name>)")(
      "force",
      "replace the output folder when it holds a stalesim run (never anything else; REFERENCE.md \"Safety and errors\")")(
      "quiet", "no progress line and no closing summary on stderr")(
      "record", po::value<std::vector<std::string>>()->composing(),
      "extra records: 'gradients' writes gradients.csv (one row per applied gradient)")(
      "trace",
      "write trace.json (Chrome Trace Event format: open it in ui.perfetto.dev or chrome://tracing)")(
      "trace-window", po::value<std::string>(),
      "keep only FROM:TO seconds of virtual time in trace.json, e.g. 0:2")(
      "trace-max-mb", po::value<double>()->default_value(100),
      "size limit of trace.json in MB (cut beyond it)")(
      "explain", "write explain.txt: every wait, resume and DSSP grant, in words")(
      "threads", po::value<int>(),
      "threads computing gradients (default: STALESIM_THREADS, else the machine's cores); outputs are the "
      "same for every count")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << "\nWrites summary.json, metrics.csv, staleness.csv and a done marker; see REFERENCE.md \"Outputs\".\n";
    return kExitOk;
  }
  bool record_gradients = false;
  if (p.vm.count("record"))
    for (const auto& r : p.vm["record"].as<std::vector<std::string>>()) {
      if (r != "gradients") throw UsageError(fmt::format("--record '{}': allowed: gradients", r));
      record_gradients = true;
    }
  TraceOptions trace_options;
  if (p.vm.count("trace-window")) {
    try {
      parse_trace_window(p.vm["trace-window"].as<std::string>(), trace_options);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("--trace-window: {}", e.what()));
    }
  }
  const double trace_mb = p.vm["trace-max-mb"].as<double>();
  if (!(trace_mb > 0 && trace_mb < 1e6))
    throw UsageError(fmt::format("--trace-max-mb: expected a number in (0, 1e6), got {}", trace_mb));
  trace_options.max_bytes = static_cast<int64_t>(trace_mb * 1e6);
  if ((p.vm.count("trace-window") || !p.vm["trace-max-mb"].defaulted()) && !p.vm.count("trace"))
    throw UsageError("--trace-window and --trace-max-mb need --trace");
  const Scenario sc = load(p.vm);
  const std::string out =
      display_path(p.vm.count("out") ? p.vm["out"].as<std::string>() : "results/" + sc.name);
  const bool quiet = p.vm.count("quiet") > 0;
  const bool force = p.vm.count("force") > 0;
  // Refuse an occupied or unwritable output folder, and a scenario too big for this machine,
  // before spending time (or memory) on the run.
  const OutputGuard guard = output_guard(p.vm["scenario"].as<std::string>());
  check_output_dir(out, force, guard);
  check_memory(sc, p.vm["scenario"].as<std::string>(), memory_limit());
  const RunEstimate estimate = estimate_run(sc);
  check_feasible(sc, estimate, p.vm["scenario"].as<std::string>());
  if (!quiet) fmt::print(stderr, "{}\n", estimate.one_line());

  pin_eigen_cache_sizes();
  catch_signals();
  const auto wall0 = std::chrono::steady_clock::now();
  const bool tty = !quiet && ::isatty(STDERR_FILENO);
  RunRequest request;
  request.origin = p.vm["scenario"].as<std::string>();
  request.out = out;
  request.force = force;
  request.guard = guard;
  if (p.vm.count("trace")) request.trace = trace_options;
  request.explain = p.vm.count("explain") > 0;
  RunOptions& ro = request.options;
  ro.interrupt = &g_interrupt;
  ro.record_gradients = record_gradients;
  ro.threads = threads_option(p.vm, 1);
  if (const char* f = std::getenv("STALESIM_INJECT_DEADLOCK_AT_CLOCK"); f != nullptr && *f != '\0') {
    char* end = nullptr;
    const long long c = std::strtoll(f, &end, 10);
    if (*end != '\0' || c < 0)
      throw UsageError(fmt::format("STALESIM_INJECT_DEADLOCK_AT_CLOCK='{}': expected an integer >= 0", f));
    ro.refuse_from_clock = c;  // fault injection: tests the deadlock path (REFERENCE.md "Safety and errors")
  }
  auto last_print = wall0;
  if (tty) {
    ro.on_progress = [&](const Progress& pr) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_print < std::chrono::milliseconds(200)) return;
      last_print = now;
      std::string limit = pr.virtual_time_limit_s > 0 ? fmt::format("/{:g}", pr.virtual_time_limit_s) : "";
      fmt::print(stderr, "\r\033[K{}: t={:.1f}{} s  updates {}  accuracy {}  ({:.1f} s wall)", sc.name,
                 pr.virtual_time_s, limit, pr.server_updates, fmt_opt(pr.last_accuracy),
                 std::chrono::duration<double>(now - wall0).count());
      std::fflush(stderr);
    };
  }
  RunOutcome outcome;
  try {
    outcome = execute_run(sc, request);
  } catch (const ScenarioError&) {
    if (tty) fmt::print(stderr, "\r\033[K");
    throw;
  }
  if (tty) fmt::print(stderr, "\r\033[K");
  const RunResult& r = outcome.result;
  const OutputFiles& files = outcome.files;
  if (outcome.kept_finished) {
    // Ctrl-C during a --force rerun: the finished run stays; the interrupted one is dropped.
    fmt::print(stderr, "stalesim: interrupted at t={:g} s; kept the finished run in {}/ (nothing written)\n",
               r.end_time.seconds(), out);
    return kExitInterrupted;
  }
  if (!outcome.trace_warning.empty()) fmt::print(stderr, "stalesim: warning: {}\n", outcome.trace_warning);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  const MetricsRow* last = r.metrics.empty() ? nullptr : &r.metrics.back();
  fmt::print(
      "{}: {} ({}) at t={:g} s after {} updates; test accuracy {}, test loss {}; "
      "time to target {}; missed updates mean {:.3f} p50 {} p99 {} max {}, read clock gap mean {:.3f} "
      "p50 {} p99 {} max {}; wrote {}/ (result_hash {})\n",
      sc.name, to_string(r.status), r.stop_reason, r.end_time.seconds(), r.server_updates,
      last ? fmt_opt(last->test_accuracy) : "n/a", last ? fmt_opt(last->test_loss) : "n/a",
      r.time_to_target_s ? fmt::format("{:g} s", *r.time_to_target_s) : std::string("not reached"),
      r.step_staleness.mean(), r.step_staleness.percentile(0.5), r.step_staleness.percentile(0.99),
      r.step_staleness.max(), r.clock_staleness.mean(), r.clock_staleness.percentile(0.5),
      r.clock_staleness.percentile(0.99), r.clock_staleness.max(), out, files.result_hash);
  if (!r.metric_name.empty())  // mf, lda: the model's own metric
    fmt::print("{}: final {} {}\n", sc.name, r.metric_name, last ? fmt_opt(last->metric) : "n/a");
  if (!quiet) fmt::print(stderr, "wall time {:.2f} s, {} events\n", wall, r.events);
  if (r.status == RunStatus::kDeadlock) {
    fmt::print(stderr, "stalesim: deadlock: {}\n", r.detail);
    return kExitFailed;
  }
  if (r.status == RunStatus::kDiverged) fmt::print(stderr, "stalesim: diverged: {}\n", r.detail);
  if (r.status == RunStatus::kInterrupted) {
    fmt::print(stderr, "stalesim: interrupted at t={:g} s; partial outputs in {}/ (no done marker)\n",
               r.end_time.seconds(), out);
    return kExitInterrupted;
  }
  return kExitOk;
}

// `real`: the scenario options here; the run itself in tools/cmd_real.cpp.
int cmd_real(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim real SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("out", po::value<std::string>(), "output folder (default: results/<scenario name>-real)")(
      "force", "replace the output folder when it holds a stalesim run")(
      "timing", po::value<std::string>()->default_value("emulated"),
      "emulated: pad compute and messages to the scenario's devices and network; measured: no padding")(
      "watchdog-s", po::value<double>()->default_value(60),
      "abort the job when a worker sends nothing for this many seconds")(
      "quiet", "no mpirun line on stderr")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  try {
    const auto p = parse(args, o, pos);
    if (p.help) {
      std::cout << o
                << "\nRuns rank 0 as the parameter server and one rank per worker. Under mpirun give it\n"
                   "-n WORKERS+1; alone it starts mpirun itself. Writes summary.json, metrics.csv,\n"
                   "staleness.csv, gradients.csv, timing.csv (wall-clock seconds); see README \"Real runs\".\n";
      return kExitOk;
    }
    cli::RealCommand c;
    c.scenario = load(p.vm);
    c.origin = p.vm["scenario"].as<std::string>();
    c.args = args;
    const std::string timing = p.vm["timing"].as<std::string>();
    if (timing != "emulated" && timing != "measured")
      throw UsageError(fmt::format("--timing '{}': allowed: emulated, measured", timing));
    c.options.emulated = timing == "emulated";
    c.options.watchdog_s = p.vm["watchdog-s"].as<double>();
    if (!(c.options.watchdog_s > 0 && c.options.watchdog_s <= 86400))
      throw UsageError(fmt::format("--watchdog-s: expected a number in (0, 86400], got {}", c.options.watchdog_s));
    c.options.out = display_path(p.vm.count("out") ? p.vm["out"].as<std::string>() : "results/" + c.scenario.name + "-real");
    c.options.force = p.vm.count("force") > 0;
    c.options.guard = output_guard(c.origin);
    c.quiet = p.vm.count("quiet") > 0;
    return cli::real_main(std::move(c));
  } catch (const ScenarioError&) {
    if (cli::quiet_rank()) return kExitBadInput;  // bad input: rank 0 says it, once
    throw;
  } catch (const UsageError&) {
    if (cli::quiet_rank()) return kExitBadInput;
    throw;
  } catch (const DataError&) {
    if (cli::quiet_rank()) return kExitBadInput;
    throw;
  } catch (const std::exception&) {
    // A worker rank's failure (an MPI send after rank 0 died, say) is a failed run, not bad input:
    // mpirun passes the first non-zero code on to the launcher.
    if (cli::quiet_rank()) return kExitFailed;
    throw;
  }
}

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim validate SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o
              << "\nPrints the scenario with every default resolved on stdout, or the first error (exit 2),\n"
                 "and on stderr the up-front estimate (lines starting 'estimate: '): each worker group's\n"
                 "iteration time split into compute, worker link and server link, the message sizes, the\n"
                 "links' utilisation, the bottleneck, the updates expected in the virtual time, the wall\n"
                 "time and memory on this machine, and a warning when one resource makes the policy\n"
                 "comparison moot (see REFERENCE.md, \"Before you run: the estimate\").\n";
    return kExitOk;
  }
  const Scenario sc = load(p.vm);
  const RunEstimate estimate = estimate_run(sc);
  check_feasible(sc, estimate, p.vm["scenario"].as<std::string>());
  std::cout << scenario_to_json(sc).dump(2) << "\n";
  std::cout.flush();
  fmt::print(stderr, "{}", estimate.describe());
  return kExitOk;
}

int cmd_profiles(const std::vector<std::string>& args) {
  constexpr const char* kOwn =
      "\nYour own profile: a JSON file with the keys name, description, peak_fp32_tflops,\n"
      "memory_bandwidth_gbs, efficiency (0 < e <= 1), overhead_us, source (optional: peak_fp16_tflops,\n"
      "peak_bf16_tflops), as models/profiles/*.json or what `stalesim calibrate --out my-gpu.json` writes.\n"
      "A scenario uses it without rebuilding: \"profile\": \"my-gpu.json\" (a path relative to the\n"
      "scenario's folder), or \"profile\": \"my-gpu\" with my-gpu.json in $STALESIM_PROFILE_DIR.\n"
      "The manifest keeps the file's figures (cluster.workers[*].device). `stalesim profiles FILE...`\n"
      "checks files and lists them. An optional \"calibration\" array lists published training figures\n"
      "({\"source\", \"model\", \"forward_flops\", \"batch\", \"images_per_s\"}); the listing then shows "
      "the\n"
      "efficiency that fits them and the error of the profile's efficiency against each.\n";
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: stalesim profiles [FILE...]\n\nLists the built-in device profiles "
                 "(models/profiles/*.json), or checks and lists the profile files given.\n"
              << kOwn;
    return kExitOk;
  }
  std::vector<DeviceProfile> list;
  std::vector<std::vector<CalibrationFigure>> figures;  // published figures, per profile
  if (args.empty()) {
    list = builtin_profiles();
    for (const auto& p : list) figures.push_back(builtin_calibration(p.name));
  } else {
    for (const auto& a : args) {
      try {
        list.push_back(load_profile_file(a));
        std::string error;  // read and checked by load_profile_file just above
        const auto j = read_json_file(a, kMaxProfileBytes, error);
        if (!j) throw ScenarioError(fmt::format("{}: {}", escaped(a), error));
        figures.push_back(calibration_figures(*j));
      } catch (const ProfileError& e) {
        throw ScenarioError(e.what());  // bad input: exit 2
      }
    }
  }
  fmt::print("{:<12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}  {}\n", "name", "fp32 TFLOP/s", "fp16 TFLOP/s",
             "bf16 TFLOP/s", "mem GB/s", "efficiency", "overhead us", "description");
  auto opt = [](double x) { return x > 0 ? fmt::format("{:g}", x) : std::string("-"); };
  for (const auto& pr : list)
    fmt::print("{:<12} {:>12g} {:>12} {:>12} {:>12g} {:>10g} {:>12g}  {}\n", escaped(pr.name),
               pr.peak_fp32_tflops, opt(pr.peak_fp16_tflops), opt(pr.peak_bf16_tflops), pr.memory_bandwidth_gbs,
               pr.efficiency, pr.overhead_us, escaped(pr.description));
  // Calibration (models/profile_calibration.hpp): the efficiency that fits the profile's published
  // figures, and the error of the predicted images/s against each at the profile's efficiency and
  // at the fitted one.
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& pr = list[i];
    const auto fit = fitted_efficiency(pr, figures[i]);
    if (!fit) continue;
    fmt::print("\n{}: efficiency {:g} (what runs use); fitted to {} published figure{}: {:.3f}\n", escaped(pr.name),
               pr.efficiency, figures[i].size(), figures[i].size() == 1 ? "" : "s", *fit);
    for (const auto& f : figures[i]) {
      const auto err = [&](double e) {
        return 100.0 * (predicted_images_per_s(pr, f, e) / f.images_per_s - 1.0);
      };
      fmt::print(
          "  {}, batch {}: published {:g} images/s; predicted at {:g}: {:+.1f}%, at {:.3f}: {:+.1f}%\n"
          "    source: {}\n",
          escaped(f.model), f.batch, f.images_per_s, pr.efficiency, err(pr.efficiency), *fit, err(*fit),
          escaped(f.source));
    }
  }
  if (args.empty()) std::cout << kOwn;
  return kExitOk;
}

int cmd_costs(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout
        << "Usage: stalesim costs\n\nLists the cost architectures (model.cost, models/cost_arch.cpp): the "
           "parameters\n(message bytes = 4 x parameters), the training FLOPs per sample (3 x forward; "
           "a multiply-add\ncounts 2) that time every iteration, and where the figures come from.\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("costs takes no arguments, got '" + args[0] + "'");
  fmt::print("{:<15} {:>12} {:>14} {:>22}  {}\n", "name", "parameters", "message bytes",
             "training FLOP/sample", "description");
  for (const auto& a : cost_architectures())
    fmt::print("{:<15} {:>12.0f} {:>14.0f} {:>22.4g}  {}\n", a.name, a.parameters,
               std::round(a.parameters * 4.0), a.training_flops(), a.description);
  std::cout << "\nSources:\n";
  for (const auto& a : cost_architectures()) fmt::print("  {}: {}\n", a.name, a.source);
  std::cout << "\nmodel.cost \"derived\" (the default) times and sizes the run by its own model instead.\n";
  return kExitOk;
}

int cmd_fields(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout
        << "Usage: stalesim fields\n\nPrints the reference of every scenario field as a Markdown table.\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("fields takes no arguments, got '" + args[0] + "'");
  std::cout << scenario_fields_markdown();
  return kExitOk;
}

int cmd_schema(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout
        << "Usage: stalesim schema [--sweep]\n\nPrints the scenario format as JSON Schema (draft 2020-12), "
           "generated "
           "from\n"
           "the same field table as validation and `stalesim fields`. Save it and point your editor at it.\n"
           "--sweep prints the format of sweep files (REFERENCE.md \"Sweep files\") instead.\n";
    return kExitOk;
  }
  if (args.size() == 1 && args[0] == "--sweep") {
    std::cout << sweep_file_schema().dump(2) << "\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("schema takes no arguments but --sweep, got '" + args[0] + "'");
  std::cout << scenario_json_schema().dump(2) << "\n";
  return kExitOk;
}

// ---- sweep and reproduce (REFERENCE.md "Sweeps and reproduction") ----------------------------------

// "45s", "1m12s", "2h03m".
std::string fmt_duration(double s) {
  const auto t = static_cast<int64_t>(s + 0.5);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

// The sweep on this process: one rank of an mpirun (mpi != nullptr) or the whole machine.
int sweep_body(const std::vector<std::string>& args, const MpiSession* mpi) {
  const int rank = mpi ? mpi->rank() : 0;
  const int ranks = mpi ? mpi->size() : 1;
  po::options_description o(
      "Usage: stalesim sweep SCENARIO [--grid PATH=V1,V2,...]... [--zip PATH=V1,V2,...]... "
      "[options]\n       stalesim sweep FILE.sweep.json [options]\n\nOptions");
  o.add_options()("scenario", po::value<std::string>()->required(),
                  "base scenario JSON file, or a sweep file")(
      "grid", po::value<std::vector<std::string>>()->composing(),
      "sweep a field over values, e.g. --grid policy.staleness=0,1,2,4 (repeatable: the cartesian product, "
      "the first --grid varying slowest)")(
      "zip", po::value<std::vector<std::string>>()->composing(),
      "values advanced together, e.g. --zip optimizer.lr=0.1,0.05 --zip optimizer.batch_size=32,64 "
      "(equal lengths; vary faster than the grid)")(
      "seeds", po::value<std::string>(),
      "seeds of every point, varying fastest: 1..5 or 1,3,9 (default: the scenario's seed)")(
      "jobs,j", po::value<int>()->default_value(1), "points run at once on this machine (threads)")(
      "threads", po::value<int>(),
      "threads computing each point's gradients (default: STALESIM_THREADS, else the machine's cores, "
      "divided by --jobs)")("out", po::value<std::string>(),
                            "sweep folder (default: results/<scenario name>-sweep)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field of every point, e.g. --set stop.max_updates=1000 (repeatable)")(
      "force",
      "rerun every point, each replacing its own folder when its new run is written (nothing is deleted "
      "first)")("quiet", "no progress bar, notes or wall time on stderr")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    if (rank == 0)
      std::cout << o << R"(
Each point (the scenario + --set + its grid values and seed, fully resolved) runs into
DIR/<name>/ (its swept values and seed, then 8 hex digits of its hash: type=ssp_staleness=2_seed=1-5c0e3a4d)
with the files of a lone 'stalesim run'; identical points share a folder. A folder
that already holds the point's finished run is skipped, so rerunning a sweep resumes it.
DIR/sweep.csv has one row per point in grid order. A failed point does not stop the others.
Under 'mpirun -n K stalesim sweep ...' (a build with MPI) the ranks split the points.
A sweep file (REFERENCE.md "Sweep files"; 'stalesim schema --sweep') gives the base scenario, grid, zip,
seeds, derived fields and constraints itself; --set, --out, --jobs and --force still apply.
Exit codes: 0 every point ok, 2 bad input, 3 a point failed, 130 interrupted.
)";
    return kExitOk;
  }
  const auto strings = [&](const char* key) {
    return p.vm.count(key) ? p.vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  SweepSpec spec;
  std::string file_out;  // the sweep file's "out"
  const std::string input = p.vm["scenario"].as<std::string>();
  const bool from_file = is_sweep_file(input);
  if (from_file) {
    for (const char* flag : {"grid", "zip", "seeds"})
      if (p.vm.count(flag))
        throw UsageError(
            fmt::format("--{}: {} is a sweep file, which gives grid, zip and seeds itself; edit the "
                        "file, or drop --{}",
                        flag, input, flag));
    spec = load_sweep_file(input, &file_out);
  } else {
    spec.scenario_path = input;
  }
  for (const auto& s : strings("set")) spec.sets.push_back(parse_override(s));
  const int jobs = p.vm["jobs"].as<int>();
  if (jobs < 1) throw UsageError(fmt::format("--jobs: expected an integer >= 1, got {}", jobs));
  const bool quiet = p.vm.count("quiet") > 0;
  const bool force = p.vm.count("force") > 0;
  SweepPlan plan;
  try {
    for (const auto& g : strings("grid")) spec.grid.push_back(parse_sweep_key(g, "--grid"));
    for (const auto& z : strings("zip")) spec.zip.push_back(parse_sweep_key(z, "--zip"));
    if (p.vm.count("seeds")) spec.seeds = parse_seeds(p.vm["seeds"].as<std::string>());
    const bool planning_tty = rank == 0 && !quiet && ::isatty(STDERR_FILENO);
    plan = plan_sweep(spec, [&](size_t done, size_t total) {
      if (planning_tty) fmt::print(stderr, "\r\033[Kplanning the sweep: {}/{} points resolved", done, total);
    });
    if (planning_tty) fmt::print(stderr, "\r\033[K");
  } catch (const SweepError& e) {
    throw UsageError(e.what());
  }
  // A grid value that makes a point invalid is bad input, found before anything runs.
  {
    std::string bad;
    size_t count = 0;
    for (const auto& pt : plan.points)
      if (!pt.scenario && ++count <= 3)
        bad += fmt::format("\n  point {} ({}): {}", pt.index, describe_point(plan, pt.index), pt.error);
    if (count > 0)
      throw UsageError(fmt::format("{} of {} sweep points are invalid; nothing was run:{}{}", count,
                                   plan.points.size(), bad,
                                   count > 3 ? fmt::format("\n  and {} more", count - 3) : std::string()));
  }
  const std::string dir = display_path(p.vm.count("out")   ? p.vm["out"].as<std::string>()
                                       : !file_out.empty() ? file_out
                                                           : default_sweep_dir(plan));

  // Rank 0 checks that every point fits in memory (the limit `run` checks), then prepares the
  // folder; every rank follows its verdict. A refused sweep runs and writes nothing.
  std::exception_ptr prepare_error;
  int verdict = kExitOk;
  if (rank == 0) {
    try {
      check_sweep_memory(plan, memory_limit());
      auto protect = output_guard(spec.scenario_path).protect;
      if (from_file) protect.emplace_back(input);
      prepare_sweep_dir(dir, plan, force, protect);
    } catch (const ScenarioError&) {
      prepare_error = std::current_exception();
      verdict = kExitBadInput;
    } catch (const IoError&) {
      prepare_error = std::current_exception();
      verdict = kExitBadInput;
    }
  }
  if (mpi) verdict = mpi->broadcast(verdict);
  if (verdict != kExitOk) {
    if (!mpi) std::rethrow_exception(prepare_error);
    // Under mpirun rank 0 writes the refusal before any rank exits: mpirun ends the job at the
    // first non-zero exit and may drop what a slower rank still had to print.
    if (rank == 0) {
      try {
        std::rethrow_exception(prepare_error);
      } catch (const std::exception& e) {
        fmt::print(stderr, "stalesim: {}\n", e.what());
      }
    }
    mpi->broadcast(verdict);  // every rank waits until rank 0 has written
    return verdict;
  }
  if (rank == 0 && !quiet) {
    for (const auto& n : plan.notes) fmt::print(stderr, "stalesim: note: {}\n", n);
    if (plan.skipped > 0)
      fmt::print(stderr, "stalesim: note: the constraints skip {} of {} points\n", plan.skipped,
                 plan.skipped + plan.points.size());
  }

  pin_eigen_cache_sizes();
  catch_signals();
  const auto wall0 = std::chrono::steady_clock::now();
  const bool tty = rank == 0 && !quiet && ::isatty(STDERR_FILENO);

  // Progress of this rank's points (rank 0's share under mpirun).
  size_t total = 0, done = 0, failed = 0, ran = 0;
  for (size_t j = 0; j < plan.runs.size(); ++j)
    if (static_cast<int>(j % static_cast<size_t>(ranks)) == rank) total += plan.runs[j].points.size();
  const auto bar = [&] {
    if (!tty) return;
    constexpr size_t kWidth = 20;
    const size_t filled = total ? done * kWidth / total : kWidth;
    std::string eta = "--";
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if (ran > 0 && done < total)
      eta = fmt_duration(wall / static_cast<double>(ran) * static_cast<double>(total - done));
    fmt::print(stderr, "\r\033[K[{}{}] {}/{} points, {} failed, ETA {}{}", std::string(filled, '#'),
               std::string(kWidth - filled, '.'), done, total, failed, eta,
               ranks > 1 ? fmt::format(" (rank 0 of {})", ranks) : "");
    std::fflush(stderr);
  };
  const auto report = [&](const std::string& line) {
    if (tty) fmt::print(stderr, "\r\033[K");
    fmt::print(stderr, "stalesim: {}\n", line);
    bar();
  };
  if (rank == 0) {
    for (const auto& pt : plan.points)
      if (!pt.scenario) {
        total += 1;
        done += 1;
        failed += 1;
        report(fmt::format("point {} ({}): {}", pt.index, describe_point(plan, pt.index), pt.error));
      }
  }
  bar();

  SweepOptions so;
  so.jobs = jobs;
  so.threads = threads_option(p.vm, jobs);
  so.rank = rank;
  so.ranks = ranks;
  so.interrupt = &g_interrupt;
  so.rerun = force;
  if (auto hook = output_guard(spec.scenario_path).checkpoint) {
    // One counter for the whole sweep: every point's OutputGuard holds a copy of this function,
    // so the hook's state lives behind a shared pointer.
    auto shared = std::make_shared<std::pair<std::mutex, std::function<void(std::string_view)>>>();
    shared->second = std::move(hook);
    so.checkpoint = [shared](std::string_view step) {
      std::lock_guard guard(shared->first);
      shared->second(step);
    };
  }
  so.on_run_done = [&](const SweepRun& run, const RunRecord& rec) {
    done += run.points.size();
    if (!rec.skipped) ran += run.points.size();
    if (!sweep_status_ok(rec.status)) {
      failed += run.points.size();
      if (rec.status != "not_run" && rec.status != "interrupted") {
        const std::string shared =
            run.points.size() > 1 ? fmt::format(" and {} identical point(s)", run.points.size() - 1) : "";
        report(fmt::format("point {} ({}){}: {}{}", run.points.front(),
                           describe_point(plan, run.points.front()), shared,
                           rec.status == "failed" ? "" : rec.status + ": ", rec.message));
      }
    }
    bar();
  };
  std::vector<RunRecord> records;
  try {
    records = run_sweep(plan, dir, so);
    if (mpi && ranks > 1) {
      nlohmann::json mine = nlohmann::json::array();
      for (size_t j = 0; j < records.size(); ++j)
        if (static_cast<int>(j % static_cast<size_t>(ranks)) == rank)
          mine.push_back({j, to_json(records[j])});
      for (const auto& text : mpi->gather(mine.dump()))
        for (const auto& item : nlohmann::json::parse(text))
          records.at(item[0].get<size_t>()) = run_record_from_json(item[1]);
    }
  } catch (const std::exception& e) {
    if (mpi && ranks > 1) {
      fmt::print(stderr, "stalesim: rank {}: internal error: {}\n", rank, e.what());
      mpi->abort(kExitFailed);
    }
    throw;
  }
  if (tty) fmt::print(stderr, "\r\033[K");

  int code = kExitOk;
  if (rank == 0) {
    write_file_atomically((std::filesystem::path(dir) / "sweep.csv").string(), sweep_csv(plan, records));
    if (force && !g_interrupt.load()) prune_sweep_dir(dir, plan);  // points of an earlier plan
    size_t n_ran = 0, n_skipped = 0, n_failed = 0, n_interrupted = 0, n_not_run = 0;
    for (size_t i = 0; i < plan.points.size(); ++i) {
      const std::string status = point_status(plan, records, i);
      if (status == "interrupted")
        ++n_interrupted;
      else if (status == "not_run")
        ++n_not_run;
      else if (!sweep_status_ok(status))
        ++n_failed;
      else if (records[plan.points[i].run].skipped)
        ++n_skipped;
      else
        ++n_ran;
    }
    std::string stopped;
    if (n_interrupted + n_not_run > 0)
      stopped = fmt::format(", {} interrupted, {} not run", n_interrupted, n_not_run);
    fmt::print(
        "{}: {} points in {} folders: {} run, {} skipped (done before), {} failed{}; wrote {}/sweep.csv\n",
        plan.base.name, plan.points.size(), plan.runs.size(), n_ran, n_skipped, n_failed, stopped,
        std::filesystem::path(dir).lexically_normal().string());
    if (!quiet)
      fmt::print(stderr, "wall time {:.2f} s ({} job{}{})\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(), jobs,
                 jobs == 1 ? "" : "s", ranks > 1 ? fmt::format(" on each of {} ranks", ranks) : "");
    if (g_interrupt.load()) {
      fmt::print(stderr, "stalesim: interrupted; rerun the same command to resume\n");
      code = kExitInterrupted;
    } else if (n_failed + n_interrupted + n_not_run > 0) {
      code = kExitFailed;
    }
  }
  if (mpi) code = mpi->broadcast(code);
  return code;
}

int cmd_sweep(const std::vector<std::string>& args) {
  const int launched = mpi_launch_size();
  if (launched > 1 && !mpi_built())
    throw UsageError(fmt::format(
        "started by mpirun with {} processes, but this stalesim was built without MPI (configure with "
        "-DSTALESIM_MPI=ON and OpenMPI installed: tools/install-deps.sh --all); run it without mpirun, "
        "with --jobs N",
        launched));
  std::optional<MpiSession> mpi;
  if (launched > 0 && mpi_built()) mpi.emplace();
  try {
    return sweep_body(args, mpi ? &*mpi : nullptr);
  } catch (const std::runtime_error& e) {
    // Bad input is the same on every rank: rank 0 alone says so.
    const bool input = dynamic_cast<const UsageError*>(&e) || dynamic_cast<const ScenarioError*>(&e) ||
                       dynamic_cast<const IoError*>(&e) || dynamic_cast<const DataError*>(&e);
    if (mpi && mpi->rank() != 0 && input) return kExitBadInput;
    throw;
  }
}

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
  const auto rows = parse_csv(*text);
  if (rows.empty()) throw IoError(fmt::format("{}: empty", csv_path.string()));
  const auto& header = rows[0];
  const auto col = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw IoError(fmt::format("{}: no column '{}'", csv_path.string(), name));
    return static_cast<size_t>(it - header.begin());
  };
  const size_t seed_col = col("seed"), folder_col = col("folder"), status_col = col("status");
  // Folders in order of their first point, with the points that share them.
  std::vector<std::pair<std::string, std::vector<size_t>>> folders;
  std::vector<size_t> not_run;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != header.size())
      throw IoError(fmt::format("{}: line {} is malformed", csv_path.string(), r + 1));
    const std::string& f = rows[r][folder_col];
    if (f.empty() || rows[r][status_col] == "interrupted" || rows[r][status_col] == "not_run") {
      not_run.push_back(r);
      continue;
    }
    // A row names a folder directly inside the sweep folder, never a path that leaves it (an
    // edited "../decoy" would otherwise be compared and reported as a match).
    std::error_code ec;
    if (f.find('/') != std::string::npos || f == "." || f == ".." || f.starts_with(".") ||
        fs::symlink_status(fs::path(dir) / f, ec).type() != fs::file_type::directory)
      throw IoError(fmt::format("{}: line {}: folder '{}' is not a folder of this sweep (a row names a folder "
                                "directly inside {}); nothing was rerun",
                                csv_path.string(), r + 1, escaped(f), dir));

    auto it = std::find_if(folders.begin(), folders.end(), [&](const auto& e) { return e.first == f; });
    if (it == folders.end())
      folders.push_back({f, {r}});
    else
      it->second.push_back(r);
  }
  const auto describe_row = [&](size_t r) {
    std::string d;
    for (size_t c = 0; c <= seed_col; ++c)
      if (!rows[r][c].empty()) d += (d.empty() ? "" : ", ") + header[c] + "=" + rows[r][c];
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
          row_problem = fmt::format("sweep.csv line {}: {}", row + 1, d);
          break;
        }
      if (!row_problem.empty()) {
        ++mismatched;
        fmt::print("MISMATCH: {}: {}/: {}\n", what, folder, row_problem);
        continue;
      }
      if (!warned && !r.build_differences.empty()) {
        std::string list;
        for (const auto& d : r.build_differences) list += (list.empty() ? "" : "; ") + escaped(d);
        fmt::print(stderr, "warning: built differently ({}): a mismatch may come from the build\n", list);
        warned = true;
      }
      for (const auto& c : r.dataset_changes)
        fmt::print(stderr, "warning: {}: dataset file {}: a mismatch may come from the data\n", escaped(folder),
                   escaped(c));
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
        fmt::print("MATCH: {}: {}/ (result_hash {})\n", what, folder, res.result_hash);
      } else {
        ++mismatched;
        for (const auto& d : res.differences) fmt::print("MISMATCH: {}: {}/{}\n", what, folder, describe(d));
      }
    } catch (const std::exception& e) {
      ++mismatched;
      fmt::print("MISMATCH: {}: {}\n", what, e.what());
    }
  }
  for (size_t r : not_run)
    fmt::print("NOT RUN: {}: status {}, no finished folder to compare\n", describe_row(r),
               rows[r][status_col]);
  fmt::print("{}: {} of {} folders match ({} points), {} mismatch, {} points not run\n",
             fs::path(dir).lexically_normal().string(), matched, folders.size(), rows.size() - 1, mismatched,
             not_run.size());
  return mismatched + not_run.size() > 0 ? kExitFailed : kExitOk;
}

int cmd_summarize(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim summarize SWEEP_DIR [options]\n\nOptions");
  o.add_options()("dir", po::value<std::string>()->required(), "a sweep folder (with sweep.csv)")(
      "quiet", "write the files without printing the table")("help,h", "show this help");
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
)";
    return kExitOk;
  }
  const std::string dir = display_path(p.vm["dir"].as<std::string>());
  const SweepSummary s = summarize_sweep(dir);
  const std::filesystem::path root(dir);
  write_file_atomically((root / "sweep-summary.csv").string(), s.summary_csv);
  write_file_atomically((root / "curves.csv").string(), s.curves_csv);
  if (p.vm.count("quiet") == 0) std::cout << s.table;
  fmt::print(
      "{}: {} points in {} groups over seeds ({} with a result{}); wrote {}/sweep-summary.csv and "
      "{}/curves.csv\n",
      dir, s.points, s.groups, s.points_with_result,
      s.target_missed ? fmt::format(", {} of them missed the target", s.target_missed) : std::string(), dir, dir);
  return kExitOk;
}

int cmd_reproduce(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim reproduce RUN_DIR/summary.json [options]\n\nOptions");
  o.add_options()("summary", po::value<std::string>()->required(),
                  "a finished run's summary.json (or its folder), or a sweep folder")(
      "quiet", "no progress line and no wall time on stderr")(
      "threads", po::value<int>(),
      "threads computing gradients (default: STALESIM_THREADS, else the machine's cores)")("help,h",
                                                                                           "show this help");
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
)";
    return kExitOk;
  }
  {
    const std::string target = display_path(p.vm["summary"].as<std::string>());
    std::error_code ec;
    if (std::filesystem::is_directory(target, ec) &&
        std::filesystem::is_regular_file(std::filesystem::path(target) / "sweep.json", ec))
      return reproduce_sweep(target, threads_option(p.vm, 1));
  }
  const Reproduction r = prepare_reproduction(p.vm["summary"].as<std::string>());
  const bool quiet = p.vm.count("quiet") > 0;
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
  if (res.differences.empty()) {
    std::string list;
    for (const auto& f : res.compared) list += (list.empty() ? "" : ", ") + f;
    fmt::print("MATCH: {}/ ({} identical; result_hash {})\n", r.dir, list, res.result_hash);
    return kExitOk;
  }
  for (const auto& d : res.differences) fmt::print("MISMATCH: {}\n", describe(d));
  return kExitFailed;
}

// ---- calibrate: a device profile for the local GPU (models/cuda/cuda_model.hpp) ---------------

// Median, 10th and 90th percentiles, minimum and maximum of a sample.
struct Spread {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};
Spread spread_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto at = [&v](double q) {
    return v[static_cast<size_t>(std::llround(q * static_cast<double>(v.size() - 1)))];
  };
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), at(0.1), at(0.9), v.front(), v.back()};
}

// x to 4 significant digits, for a profile a person reads.
double significant(double x) { return std::stod(fmt::format("{:.4g}", x)); }

// "NVIDIA GeForce GTX 1080 Ti" -> "gtx1080ti", "NVIDIA H200" -> "h200": the built-in profiles' style.
std::string profile_name_for(const std::string& device) {
  std::string out;
  for (char c : device) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"nvidia", "geforce"})
    if (const size_t at = out.find(word); at != std::string::npos) out.erase(at, std::strlen(word));
  std::erase_if(out, [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); });
  return out.empty() ? "gpu" : out;
}

int cmd_calibrate(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim calibrate [options]\n\nOptions");
  o.add_options()("model", po::value<std::string>()->default_value("mlp"), "softmax or mlp")(
      "hidden", po::value<std::string>()->default_value("200"), "mlp hidden widths, e.g. 200 or 256,128")(
      "features", po::value<int64_t>()->default_value(784), "inputs per sample (784: Fashion-MNIST)")(
      "classes", po::value<int32_t>()->default_value(10), "classes")(
      "batch", po::value<int32_t>()->default_value(32), "samples per iteration, >= 2")(
      "warmup", po::value<int32_t>()->default_value(20), "untimed iterations before each measurement")(
      "repeats", po::value<int32_t>()->default_value(200), "timed iterations per batch size")(
      "out", po::value<std::string>(), "write the profile JSON to this file (default: stdout)")(
      "name", po::value<std::string>(), "profile name (default: from the GPU's name, e.g. h200)")(
      "help,h", "show this help");
  const auto p = parse(args, o, {});
  if (p.help) {
    std::cout << o << R"(
Times loss_and_gradient of the model on this machine's GPU (the cuda backend; CUDA events around
copying the parameters and batch in, forward, backward and copying the gradient out) and writes a
device profile in the format of models/profiles/*.json:
  peak_fp32_tflops      SMs x FP32 lanes per SM (by compute capability) x 2 FLOP x peak SM clock
  memory_bandwidth_gbs  2 x memory clock x bus width / 8
  overhead_us           the median time of a batch-1 iteration (launches, copies, latency)
  efficiency            (batch x FLOPs per sample / (median time at --batch - overhead)) / peak
so that the profile reproduces the median at --batch exactly (the batch-1 iteration's own sample
is counted as overhead). Each median is taken over --repeats iterations after --warmup untimed ones.
A scenario uses the file as it is: "profile": "FILE.json" (relative to the scenario's folder).
Exit codes: 0 written, 2 bad options or no CUDA device (or a build without CUDA).
)";
    return kExitOk;
  }
  const auto& vm = p.vm;
  ModelSpec spec;
  const std::string model_name = vm["model"].as<std::string>();
  const auto model_type = enum_from_name<ModelType>(model_name);
  if (!model_type || !traits(*model_type).dense)
    throw UsageError(fmt::format("--model: expected softmax or mlp, got '{}'", model_name));
  spec.type = *model_type;
  spec.hidden.clear();
  if (spec.type == ModelType::kMlp) {
    const std::string text = vm["hidden"].as<std::string>();
    for (size_t begin = 0; begin <= text.size();) {
      const size_t comma = std::min(text.find(',', begin), text.size());
      const std::string item = text.substr(begin, comma - begin);
      char* end = nullptr;
      const long long width = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || width < 1 || width > 65536)
        throw UsageError(
            fmt::format("--hidden: expected widths in [1, 65536] separated by commas, got '{}'", text));
      spec.hidden.push_back(width);
      begin = comma + 1;
    }
  }
  const int64_t features = vm["features"].as<int64_t>();
  const int32_t classes = vm["classes"].as<int32_t>();
  const int32_t batch = vm["batch"].as<int32_t>();
  const int32_t warmup = vm["warmup"].as<int32_t>();
  const int32_t repeats = vm["repeats"].as<int32_t>();
  if (features < 1 || features > 1'000'000)
    throw UsageError(fmt::format("--features: expected 1 to 1000000, got {}", features));
  if (classes < 2 || classes > 100'000)
    throw UsageError(fmt::format("--classes: expected 2 to 100000, got {}", classes));
  if (batch < 2 || batch > 65536)
    throw UsageError(fmt::format("--batch: expected 2 to 65536 (1 is the overhead probe), got {}", batch));
  if (warmup < 0) throw UsageError(fmt::format("--warmup: expected an integer >= 0, got {}", warmup));
  if (repeats < 1) throw UsageError(fmt::format("--repeats: expected an integer >= 1, got {}", repeats));

  const CudaDevice dev = require_cuda_device();  // DeviceError "no CUDA device: ..." -> exit 2
  auto model = make_model(spec, features, classes, /*cuda=*/true);
  BlobsSpec data_spec;  // the values do not matter for the time; the shapes do
  data_spec.classes = classes;
  data_spec.features = features;
  data_spec.train = 4 * static_cast<int64_t>(batch);
  data_spec.test = 1;
  const DataSplit data = make_blobs(data_spec, 1);
  std::vector<float> params(static_cast<size_t>(model->parameter_count())), grad(params.size());
  Rng rng(1, Purpose::kInit, 0);
  model->init(params, rng);
  std::vector<int32_t> indices(static_cast<size_t>(data_spec.train));
  std::iota(indices.begin(), indices.end(), 0);
  // GPU seconds of `repeats` iterations on batches of n (after `warmup` untimed ones).
  const auto measure = [&](int32_t n) {
    std::vector<double> t;
    for (int32_t i = 0; i < warmup + repeats; ++i) {
      const std::span<const int32_t> b(indices.data() + (i % 4) * n, static_cast<size_t>(n));
      model->loss_and_gradient(params, data.train, b, grad);
      if (i >= warmup) t.push_back(*model->last_measured_seconds());
    }
    return spread_of(std::move(t));
  };
  const Spread at_batch = measure(batch);
  const Spread at_one = measure(1);

  const double flops = model->flops_per_sample();
  const double compute_s = at_batch.median - at_one.median;
  double efficiency = compute_s > 0 ? batch * flops / compute_s / (dev.peak_fp32_tflops * 1e12) : 0.0;
  std::string caveat;
  if (!(efficiency > 0 && efficiency <= 1)) {
    caveat = fmt::format(
        " The batch-{} median was not above the batch-1 median by at least the time peak FLOP/s allows "
        "(fitted efficiency {:.3g}), so efficiency is set to 1: at this batch the iteration is "
        "overhead-bound.",
        batch, efficiency);
    fmt::print(stderr,
               "stalesim: warning: efficiency not measurable at --batch {} (fit gave {:.3g}); set to 1. "
               "A larger --batch gives a meaningful figure.\n",
               batch, efficiency);
    efficiency = 1.0;
  }
  const std::string name = vm.count("name") ? vm["name"].as<std::string>() : profile_name_for(dev.name);
  std::string shape = std::to_string(features);
  for (int64_t h : spec.hidden) shape += "-" + std::to_string(h);
  shape += "-" + std::to_string(classes);
  const auto us = [](double s) { return fmt::format("{:.1f}", s * 1e6); };
  const std::string source = fmt::format(
      "Measured by stalesim calibrate (stalesim {}, {}) on {}. Peak FP32 = {} SMs x {} FP32 lanes per SM "
      "(compute capability {}.{}{}) x 2 FLOP x {:.0f} MHz peak SM clock (cudaDevAttrClockRate); memory "
      "bandwidth = "
      "2 x memory clock x bus width / 8 (cudaDevAttrMemoryClockRate, memoryBusWidth). Iteration = "
      "loss_and_gradient of a {} {} on the cuda backend, timed with CUDA events (parameters and batch "
      "copied in, forward, backward, gradient copied out); medians over {} iterations after {} untimed: "
      "batch {} "
      "{} us (p10 {}, p90 {}), batch 1 {} us (p10 {}, p90 {}). overhead_us = the batch-1 median; efficiency "
      "= "
      "(batch x {:.0f} FLOP per sample / (batch-{} median - overhead)) / peak, so the profile reproduces the "
      "batch-{} median; other batch sizes and models are extrapolated.{}",
      build_info().version, build_info().git_revision, dev.describe(), dev.sm_count, dev.fp32_lanes_per_sm,
      dev.cc_major, dev.cc_minor, dev.lanes_known ? "" : ", not in stalesim's table: 128 assumed",
      dev.clock_mhz, shape, to_string(spec.type), repeats, warmup, batch, us(at_batch.median),
      us(at_batch.p10), us(at_batch.p90), us(at_one.median), us(at_one.p10), us(at_one.p90), flops, batch,
      batch, caveat);
  nlohmann::ordered_json profile = {
      {"name", name},
      {"description", fmt::format("{} (compute capability {}.{}, {} SMs, {:.0f} MHz)", dev.name, dev.cc_major,
                                  dev.cc_minor, dev.sm_count, dev.clock_mhz)},
      {"peak_fp32_tflops", significant(dev.peak_fp32_tflops)},
      {"memory_bandwidth_gbs", significant(dev.memory_bandwidth_gbs)},
      {"efficiency", significant(efficiency)},
      {"overhead_us", significant(at_one.median * 1e6)},
      {"source", source}};
  const std::string text = profile.dump(2) + "\n";
  const std::string summary = fmt::format(
      "calibrate: {} on {}: batch {} median {} us (p10 {}, p90 {}, min {}, max {}); batch 1 median {} us "
      "(p10 {}, p90 {}); peak {:.2f} TFLOP/s; efficiency {:.4g}, overhead {} us",
      shape, dev.describe(), batch, us(at_batch.median), us(at_batch.p10), us(at_batch.p90), us(at_batch.min),
      us(at_batch.max), us(at_one.median), us(at_one.p10), us(at_one.p90), dev.peak_fp32_tflops, efficiency,
      us(at_one.median));
  if (!vm.count("out")) {
    std::cout << text;
    fmt::print(stderr, "{}\n", summary);
    return kExitOk;
  }
  const std::string out = vm["out"].as<std::string>();
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw IoError(fmt::format("{}: cannot write", out));
  fmt::print("{}; wrote {}\n", summary, out);
  return kExitOk;
}
// ---- timeline: the first seconds of a run as a terminal Gantt chart (sim/output/timeline.hpp) ---------

int cmd_timeline(const std::vector<std::string>& args) {
  po::options_description o(
      "Usage: stalesim timeline SCENARIO [--until 5s] [--width N] [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("until", po::value<std::string>()->default_value("5s"),
                  "virtual time shown, e.g. 5s, 250ms")(
      "width", po::value<int>()->default_value(72), "cells per row, 10 to 1000")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << R"(
Runs the scenario up to --until (writing nothing) and draws one row per worker: each cell shows
what the worker did for most of its time (compute, communicate, wait); a marked cell is where the
policy blocked it. Colours only when stdout is a terminal and NO_COLOR is unset.
)";
    return kExitOk;
  }
  SimTime until;
  try {
    until = parse_duration(p.vm["until"].as<std::string>());
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--until: {}", e.what()));
  }
  const int width = p.vm["width"].as<int>();
  if (width < 10 || width > 1000)
    throw UsageError(fmt::format("--width: expected 10 to 1000, got {}", width));
  const Scenario sc = load(p.vm);
  pin_eigen_cache_sizes();
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = ::isatty(STDOUT_FILENO) && !(no_color && *no_color);
  std::cout << timeline_of(sc, until, width, color, p.vm["scenario"].as<std::string>());
  return kExitOk;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kMainHelp;
    return kExitBadInput;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kMainHelp;
    return kExitOk;
  }
  if (cmd == "run") return cmd_run(args);
  if (cmd == "validate") return cmd_validate(args);
  if (cmd == "profiles") return cmd_profiles(args);
  if (cmd == "costs") return cmd_costs(args);
  if (cmd == "fields") return cmd_fields(args);
  if (cmd == "schema") return cmd_schema(args);
  if (cmd == "calibrate") return cmd_calibrate(args);
  if (cmd == "sweep") return cmd_sweep(args);
  if (cmd == "reproduce") return cmd_reproduce(args);
  if (cmd == "summarize") return cmd_summarize(args);
  if (cmd == "timeline") return cmd_timeline(args);
  if (cmd == "real") return cmd_real(args);
  if (cmd == "compare") return cli::compare_main(args);
  if (cmd == "version" || cmd == "--version") {
    std::cout << build_info_json().dump(2) << "\n";
    return kExitOk;
  }
  throw UsageError(
      fmt::format("unknown command '{}' (commands: run, validate, profiles, costs, fields, schema, sweep, "
                  "reproduce, summarize, timeline, real, compare, calibrate, version)",
                  cmd));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const UsageError& e) {
    fmt::print(stderr, "stalesim: {}\nRun 'stalesim --help' for usage.\n", e.what());
  } catch (const ScenarioError& e) {
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const DataError& e) {
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const IoError& e) {
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const TimeRangeError& e) {  // a duration past int64 nanoseconds: bad input
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const DeviceError& e) {  // no GPU, or a build without CUDA
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const std::bad_alloc&) {
    // Out of memory is not a deadlock (exit 3) nor bad input: its own code, and what to do.
    fmt::print(stderr,
               "stalesim: out of memory: the process could not allocate what it needed; 'stalesim validate "
               "SCENARIO' prints the memory estimate (lower the model, batch, workers or cache, or run "
               "on a machine with more memory)\n");
    return kExitOutOfMemory;
  } catch (const std::exception& e) {
    fmt::print(stderr, "stalesim: internal error: {}\n", e.what());
    return kExitFailed;
  }
  return kExitBadInput;
}
