// stalesim: the command-line front end. It parses arguments, loads a scenario, runs it and writes
// its outputs; the simulator itself lives in the stalesim::sim and stalesim::models libraries.
//
// Exit codes: 0 success (a diverged run included: its outputs say so), 2 bad input (usage,
// scenario, data, output folder), 3 failed simulation (deadlock), 130 interrupted.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "models/device_profile.hpp"
#include "sim/build_info.hpp"
#include "sim/outputs.hpp"
#include "sim/scenario.hpp"
#include "sim/scenario_fields.hpp"
#include "sim/simulation.hpp"

namespace po = boost::program_options;
using namespace stalesim;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;
constexpr int kExitFailed = 3;
constexpr int kExitInterrupted = 130;

std::atomic<bool> g_interrupt{false};
extern "C" void on_signal(int) { g_interrupt.store(true); }

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const char* kMainHelp = R"(stalesim: a deterministic simulator of distributed SGD on a parameter server

Usage: stalesim COMMAND [options]

Commands:
  run SCENARIO       run a scenario and write its outputs
  validate SCENARIO  check a scenario and print it with every default resolved
  profiles           list the built-in device profiles
  fields             print the scenario field reference (Markdown)
  version            print the version and build

Run 'stalesim COMMAND --help' for a command's options.
Exit codes: 0 success, 2 bad input, 3 failed simulation (deadlock), 130 interrupted.
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

Scenario load(const po::variables_map& vm) {
  std::vector<Override> sets;
  if (vm.count("set"))
    for (const auto& s : vm["set"].as<std::vector<std::string>>()) sets.push_back(parse_override(s));
  std::optional<uint64_t> seed;
  if (vm.count("seed")) seed = vm["seed"].as<uint64_t>();
  return load_scenario_file(vm["scenario"].as<std::string>(), sets, seed);
}

void add_scenario_options(po::options_description& o) {
  o.add_options()
    ("scenario", po::value<std::string>()->required(), "scenario JSON file")
    ("set", po::value<std::vector<std::string>>()->composing(),
     "override a field by dotted path, e.g. --set policy.staleness=8 (repeatable)")
    ("seed", po::value<uint64_t>(), "override the scenario's seed");
}

std::string fmt_opt(const std::optional<double>& v, const char* f = "{:.4f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("n/a");
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim run SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()
    ("out", po::value<std::string>(), "output folder (default: results/<scenario name>)")
    ("force", "replace the output folder if it exists and is not empty")
    ("quiet", "no progress line and no closing summary on stderr")
    ("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << "\nWrites summary.json, metrics.csv, staleness.csv and a done marker; see README.\n";
    return kExitOk;
  }
  const Scenario sc = load(p.vm);
  const std::string out = p.vm.count("out") ? p.vm["out"].as<std::string>() : "results/" + sc.name;
  const bool quiet = p.vm.count("quiet") > 0;
  const bool force = p.vm.count("force") > 0;
  // Refuse an occupied output folder before spending time on the run.
  std::error_code ec;
  if (!force && std::filesystem::exists(out, ec) && !std::filesystem::is_empty(out, ec))
    throw IoError(fmt::format("{}: output folder exists and is not empty (use --force to replace it)", out));

  pin_eigen_cache_sizes();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const auto wall0 = std::chrono::steady_clock::now();
  const bool tty = !quiet && ::isatty(STDERR_FILENO);
  RunOptions ro;
  ro.interrupt = &g_interrupt;
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
  const DataSplit data = load_data(sc);
  std::unique_ptr<Simulation> sim;
  try {
    sim = std::make_unique<Simulation>(sc, data);
  } catch (const ScenarioError& e) {  // the scenario does not fit its data
    throw ScenarioError(fmt::format("{}: {}", p.vm["scenario"].as<std::string>(), e.what()));
  }
  const RunResult r = sim->run(ro);
  if (tty) fmt::print(stderr, "\r\033[K");
  const OutputFiles files = render_outputs(sc, r);
  write_outputs(out, files, r.status != RunStatus::kInterrupted, force);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  const MetricsRow* last = r.metrics.empty() ? nullptr : &r.metrics.back();
  fmt::print("{}: {} ({}) at t={:g} s after {} updates; test accuracy {}, test loss {}; "
             "time to target {}; staleness mean {:.3f} max {} clocks, {:.3f} max {} steps; wrote {}/ "
             "(result_hash {})\n",
             sc.name, to_string(r.status), r.stop_reason, r.end_time.seconds(), r.server_updates,
             last ? fmt_opt(last->test_accuracy) : "n/a", last ? fmt_opt(last->test_loss) : "n/a",
             r.time_to_target_s ? fmt::format("{:g} s", *r.time_to_target_s) : std::string("not reached"),
             r.clock_staleness.mean(), r.clock_staleness.max(), r.step_staleness.mean(), r.step_staleness.max(), out,
             files.result_hash);
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

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim validate SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << "\nPrints the scenario with every default resolved, or the first error (exit 2).\n";
    return kExitOk;
  }
  const Scenario sc = load(p.vm);
  std::cout << scenario_to_json(sc).dump(2) << "\n";
  return kExitOk;
}

int cmd_profiles(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: stalesim profiles\n\nLists the built-in device profiles (models/profiles/*.json).\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("profiles takes no arguments, got '" + args[0] + "'");
  fmt::print("{:<12} {:>12} {:>12} {:>10} {:>12}  {}\n", "name", "fp32 TFLOP/s", "mem GB/s", "efficiency",
             "overhead us", "description");
  for (const auto& pr : builtin_profiles())
    fmt::print("{:<12} {:>12g} {:>12g} {:>10g} {:>12g}  {}\n", pr.name, pr.peak_fp32_tflops,
               pr.memory_bandwidth_gbs, pr.efficiency, pr.overhead_us, pr.description);
  return kExitOk;
}

int cmd_fields(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: stalesim fields\n\nPrints the reference of every scenario field as a Markdown table.\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("fields takes no arguments, got '" + args[0] + "'");
  std::cout << scenario_fields_markdown();
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
  if (cmd == "fields") return cmd_fields(args);
  if (cmd == "version" || cmd == "--version") {
    std::cout << build_info_json().dump(2) << "\n";
    return kExitOk;
  }
  throw UsageError(fmt::format("unknown command '{}' (commands: run, validate, profiles, fields, version)", cmd));
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
  } catch (const std::exception& e) {
    fmt::print(stderr, "stalesim: internal error: {}\n", e.what());
    return kExitFailed;
  }
  return kExitBadInput;
}
