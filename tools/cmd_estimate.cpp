// The estimate as the commands print it (tools/cmd_estimate.hpp).

#include "tools/cmd_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "sim/output/outputs.hpp"
#include "sim/sweep/sweep.hpp"

namespace stalesim::cli {

namespace fs = std::filesystem;

namespace {

std::string date_of(int64_t unix_time) {
  const std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.3g} s", s);
  if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  if (s < 86400 * 2)
    return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::fmod(s, 3600) / 60);
  return fmt::format("{:.1f} days", s / 86400);
}

}  // namespace

std::string machine_rate_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return (fs::path(xdg) / "stalesim" / "machine-rate.json").string();
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0')
    return (fs::path(home) / ".cache" / "stalesim" / "machine-rate.json").string();
  return "";
}

std::optional<MachineRate> cached_machine_rate(std::string& note) {
  const std::string path = machine_rate_cache_path();
  if (path.empty()) return std::nullopt;
  std::string why;
  auto r = read_machine_rate(path, why);
  if (r) note = fmt::format("measured on this machine {}, cached in {}", date_of(r->measured_at), path);
  return r;
}

void use_this_machine(RunEstimate& e, const RunOptions& options, bool remeasure) {
  const std::string path = machine_rate_cache_path();
  std::string note;
  if (!remeasure) {
    std::error_code ec;
    std::string why;
    if (!path.empty() && fs::exists(path, ec)) {
      if (auto r = read_machine_rate(path, why)) {
        note = fmt::format("measured on this machine {}, cached in {}", date_of(r->measured_at), path);
        use_machine_rate(e, *r, note);
        return;
      }
      fmt::print(stderr, "estimate: {}: {}; measuring again\n", path, why);
    }
  }
  fmt::print(stderr,
             "estimate: measuring this machine for the wall time (four short reference runs, once)\n");
  const MachineRate r = measure_machine_rate(options);
  note = "measured on this machine just now";
  if (path.empty()) {
    note += " (not cached: neither XDG_CACHE_HOME nor HOME is set)";
  } else {
    try {
      std::error_code ec;
      fs::create_directories(fs::path(path).parent_path(), ec);
      if (ec) throw IoError(fmt::format("{}: {}", fs::path(path).parent_path().string(), ec.message()));
      write_file_atomically(path, machine_rate_json(r));
      note += ", cached in " + path;
    } catch (const IoError& err) {
      fmt::print(stderr, "estimate: cannot cache the measured rate: {}\n", err.what());
    }
  }
  fmt::print(stderr,
             "estimate: this machine computes {:.2f}x the assumed math rate and takes {:.3g} us per event\n",
             r.speed, r.event_us);
  use_machine_rate(e, r, note);
}

std::string describe_sweep_estimate(const SweepPlan& plan, int jobs, int threads) {
  std::string note;
  const auto rate = cached_machine_rate(note);
  double virtual_s = 0, wall_s = 0, longest_s = 0, peak_bytes = 0;
  std::vector<double> memory;
  for (const auto& run : plan.runs) {
    const SweepPoint& p = plan.points.at(run.points.front());
    if (!p.scenario) continue;
    RunEstimate e = estimate_run(*p.scenario, threads);
    if (rate) use_machine_rate(e, *rate, note);
    virtual_s += e.expected_end_s;
    wall_s += e.wall_s;
    longest_s = std::max(longest_s, e.wall_s);
    memory.push_back(e.memory.total());
  }
  // The `jobs` largest runs at once: the most memory the sweep can hold.
  std::sort(memory.begin(), memory.end(), std::greater<>());
  for (size_t i = 0; i < memory.size() && i < static_cast<size_t>(jobs); ++i) peak_bytes += memory[i];
  const double elapsed = std::max(wall_s / std::max(jobs, 1), longest_s);
  std::string out = fmt::format(
      "estimate: the grid: {} runs ({} points: identical points share a run), {} of virtual time in all\n",
      plan.runs.size(), plan.points.size(), duration(virtual_s));
  out += fmt::format(
      "estimate: wall time about {} ({} of runs on {} job{}; {}); peak memory about {} ({} run{} at once); "
      "runs already done are skipped, so a resumed sweep takes less\n",
      duration(elapsed), duration(wall_s), jobs, jobs == 1 ? "" : "s",
      rate ? "rates " + note : "rates assumed, not measured: 'stalesim validate' measures this machine",
      format_bytes(peak_bytes), std::min<size_t>(memory.size(), static_cast<size_t>(jobs)),
      std::min<size_t>(memory.size(), static_cast<size_t>(jobs)) == 1 ? "" : "s");
  return out;
}

}  // namespace stalesim::cli
