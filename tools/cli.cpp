// What the commands share (tools/cli.hpp).

#include "tools/cli.hpp"

#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "sim/gradient_pool.hpp"
#include "sim/scenario/load.hpp"

namespace stalesim::cli {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string results_root(const po::variables_map& vm) {
  if (vm.count("results")) return vm["results"].as<std::string>();
  if (std::string e = env("STALESIM_RESULTS"); !e.empty()) return e;
  return "results";
}

CompareOption parse_compare(const std::string& spec) {
  const size_t eq = spec.find('='), comma = spec.find(',', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || eq == 0 || comma == std::string::npos || comma == eq + 1 ||
      comma + 1 == spec.size() || spec.find(',', comma + 1) != std::string::npos)
    throw UsageError(
        fmt::format("--compare '{}': expected KEY=A,B (two values of one column of sweep.csv, "
                    "e.g. policy.type=asp,ssp)",
                    spec));
  return {spec.substr(0, eq), spec.substr(eq + 1, comma - eq - 1), spec.substr(comma + 1)};
}

void add_results_option(po::options_description& o) {
  o.add_options()("results", po::value<std::string>(),
                  "the folder default output folders go in (default: $STALESIM_RESULTS, else results)");
}

std::string default_output(const po::variables_map& vm, const std::string& name) {
  return (std::filesystem::path(results_root(vm)) / name).string();
}

int mpi_launch_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const std::string v = env(name);
    if (!v.empty()) {
      const int n = std::atoi(v.c_str());
      return n > 0 ? n : 0;
    }
  }
  return 0;
}

std::atomic<bool> g_interrupt{false};
extern "C" void on_signal(int) { g_interrupt.store(true); }
// SIGINT, SIGTERM and SIGHUP (a closed terminal) stop a run the same way: outputs marked
// interrupted, exit 130.
void catch_signals() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_signal);
}

std::string display_path(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

OutputGuard output_guard(const std::string& scenario_path) {
  OutputGuard g;
  g.protect.emplace_back(scenario_path);
  std::error_code ec;
  if (auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) g.protect.push_back(self);
  g.home = env("HOME");
  if (const std::string f = env("STALESIM_INJECT_KILL_AT_STEP"); !f.empty()) {
    char* end = nullptr;
    const long long n = std::strtoll(f.c_str(), &end, 10);
    if (*end != '\0' || n < 1)
      throw UsageError(fmt::format("STALESIM_INJECT_KILL_AT_STEP='{}': expected an integer >= 1", f));
    g.checkpoint = [n, count = 0LL](std::string_view) mutable {
      if (++count == n) ::kill(::getpid(), SIGKILL);
    };
  }
  return g;
}

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

namespace {

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

}  // namespace

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
  return load_scenario_file(path, sets, seed, env("STALESIM_PROFILE_DIR"));
}

int threads_option(const po::variables_map& vm, int share) {
  if (vm.count("threads")) {
    const int t = vm["threads"].as<int>();
    if (t < 1 || t > 1024)
      throw UsageError(fmt::format("--threads: expected an integer in [1, 1024], got {}", t));
    return t;
  }
  int threads = default_threads();
  if (const std::string configured = env("STALESIM_THREADS"); !configured.empty()) {
    char* end = nullptr;
    const long v = std::strtol(configured.c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > 1024)
      throw UsageError(fmt::format("STALESIM_THREADS='{}': expected an integer in [1, 1024]", configured));
    threads = static_cast<int>(v);
  }
  return std::max(1, threads / std::max(1, share));
}

void add_scenario_options(po::options_description& o) {
  o.add_options()("scenario", po::value<std::string>()->required(), "scenario JSON file")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field by dotted path, e.g. --set policy.staleness=8 (repeatable)")(
      "seed", po::value<std::string>(),
      "override the scenario's seed: an integer from 0 to 18446744073709551615");
}

std::string fmt_opt(const std::optional<double>& v, const char* f) {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("n/a");
}

std::string fmt_duration(double s) {
  const auto t = static_cast<int64_t>(s + 0.5);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

}  // namespace stalesim::cli
