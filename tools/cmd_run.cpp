// `stalesim run SCENARIO`: run a scenario and write its outputs (REFERENCE.md "Outputs").

#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "sim/build_info.hpp"
#include "sim/estimate/estimate.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/output/trace.hpp"
#include "sim/run.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

int cmd_run(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim run SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("out", po::value<std::string>(),
                  "output folder (default: RESULTS/<scenario name>, RESULTS: --results)")(
      "force",
      "replace the output folder when it holds a stalesim run (never anything else; REFERENCE.md \"Safety "
      "and errors\")")("quiet", "no progress line and no closing summary on stderr")(
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
  add_results_option(o);
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o
              << "\nWrites summary.json, metrics.csv, staleness.csv and a done marker; see REFERENCE.md "
                 "\"Outputs\".\n";
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
      display_path(p.vm.count("out") ? p.vm["out"].as<std::string>() : default_output(p.vm, sc.name));
  const bool quiet = p.vm.count("quiet") > 0;
  const bool force = p.vm.count("force") > 0;
  // Refuse an occupied or unwritable output folder, and a scenario too big for this machine,
  // before spending time (or memory) on the run.
  const OutputGuard guard = output_guard(p.vm["scenario"].as<std::string>());
  check_output_dir(out, force, guard);
  check_memory(sc, p.vm["scenario"].as<std::string>(), memory_limit(env("STALESIM_MEMORY_LIMIT")),
               threads_option(p.vm, 1));
  const RunEstimate estimate = estimate_run(sc, threads_option(p.vm, 1));  // the memory it checked
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
  if (const std::string f = env("STALESIM_INJECT_DEADLOCK_AT_CLOCK"); !f.empty()) {
    char* end = nullptr;
    const long long c = std::strtoll(f.c_str(), &end, 10);
    if (*end != '\0' || c < 0)
      throw UsageError(fmt::format("STALESIM_INJECT_DEADLOCK_AT_CLOCK='{}': expected an integer >= 0", f));
    ro.refuse_from_clock = c;  // fault injection: tests the deadlock path (REFERENCE.md "Safety and errors")
  }
  if (env("STALESIM_INJECT_INTERRUPT_BEFORE_WRITE") == "1")
    request.before_write = [] { std::raise(SIGINT); };  // fault injection: tests a late Ctrl-C
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
      "time to target {}; missed updates mean {:.3f} p50 {} p99 {} max {}, staleness mean {:.3f} "
      "p50 {} p99 {} max {}; wrote {}/ (result_hash {})\n",
      sc.name, to_string(r.status), to_string(r.stop_reason), r.end_time.seconds(), r.server_updates,
      last ? fmt_opt(last->test_accuracy) : "n/a", last ? fmt_opt(last->test_loss) : "n/a",
      r.time_to_target_s ? fmt::format("{:g} s", *r.time_to_target_s) : std::string("not reached"),
      r.missed_updates.mean(), r.missed_updates.percentile(0.5), r.missed_updates.percentile(0.99),
      r.missed_updates.max(), r.staleness.mean(), r.staleness.percentile(0.5), r.staleness.percentile(0.99),
      r.staleness.max(), out, files.result_hash);
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
  if (g_interrupt.load()) {  // the signal came after the run ended: its folder is whole
    fmt::print(stderr, "stalesim: interrupted after the run ended; its complete outputs are in {}/\n", out);
    return kExitInterrupted;
  }
  return kExitOk;
}

}  // namespace stalesim::cli
