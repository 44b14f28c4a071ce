// This machine's rate for the wall-time estimate (sim/estimate/calibration.hpp).

#include "sim/estimate/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include <time.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/build_info.hpp"
#include "sim/scenario/load.hpp"

namespace stalesim {

namespace {

constexpr const char* kFormat = "stalesim machine rate";
constexpr uint64_t kMaxRateBytes = 64u << 10;

// The reference cluster: four workers, asynchronous, a fast network; with `math` an MLP
// (784-200-10 on blobs, the quick start's shape), else the same size time-only on 16 workers (an
// event costs more with more workers pending in the queue: CPU time of 1.5M updates of a
// time-only ASP star, 0.39 s at 4 workers, 0.43 at 16, 0.45 to 0.48 at 64 to 4,000). Sized to
// take a few tenths of a second here.
Scenario reference(bool math, int64_t updates) {
  nlohmann::json j = {{"name", std::string("calibration-") + (math ? "mlp" : "time-only")},
                      {"seed", 1},
                      {"data",
                       {{"dataset", "blobs"},
                        {"blobs", {{"classes", 10}, {"features", 784}, {"train", 2000}, {"test", 200}}}}},
                      {"optimizer", {{"rule", "sgd"}, {"lr", 0.05}, {"batch_size", 32}}},
                      {"policy", {{"type", "asp"}}},
                      {"cluster", {{"workers", {{{"profile", "gtx1080ti"}, {"count", math ? 4 : 16}}}}}},
                      {"stop", {{"max_updates", updates}}},
                      {"eval", {{"every_s", 1000}}}};
  if (math) {
    j["model"] = {{"type", "mlp"}, {"hidden", {200}}};
  } else {  // the MLP's size, timed only: no data, no math
    j["model"] = {{"type", "time-only"}, {"parameters", 159010}, {"flops_per_sample", 6 * 159010}};
    j.erase("data");
  }
  return parse_scenario(j, "calibration");
}

// CPU seconds of this thread.
double thread_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Wall seconds of one run of `s`; `cpu`: this thread's CPU seconds instead (a run without the
// gradient pool runs on this thread alone, and its CPU time does not count what other processes
// take of the machine).
double timed(const Scenario& s, const RunOptions& options, int64_t& events, bool cpu = false) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_s();
  const RunResult r = run_scenario(s, options);
  events = r.events;
  if (cpu) return thread_cpu_s() - c0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool in(double x, double lo, double hi) { return std::isfinite(x) && x > lo && x <= hi; }

}  // namespace

MachineRate measure_machine_rate(const RunOptions& options) {
  // Each rate from the difference of a short and a longer run, so that what every run pays once
  // (generating the data, the first and last evaluations, starting threads) cancels out.
  MachineRate r;
  int64_t events_short = 0, events_long = 0;
  // The events: 800,000 apart (about 0.1 s here; 80,000 before, about 10 ms, read between 0.056 and
  // 0.119 us per event on one loaded machine), in CPU time.
  const double plain_short = timed(reference(false, 20000), options, events_short, true);
  const double plain_long = timed(reference(false, 220000), options, events_long, true);
  r.event_us = std::max((plain_long - plain_short) /
                            static_cast<double>(std::max<int64_t>(events_long - events_short, 1)) * 1e6,
                        1e-3);
  const Scenario math_short = reference(true, 200), math_long = reference(true, 1000);
  const double wall_short = timed(math_short, options, events_short);
  const double wall_long = timed(math_long, options, events_long);
  // The math's share of the difference: less what its events cost at the rate just measured.
  const double math_s = std::max(
      wall_long - wall_short - static_cast<double>(events_long - events_short) * r.event_us * 1e-6, 1e-6);
  const double gflop = estimate_run(math_long).math_gflop - estimate_run(math_short).math_gflop;
  r.speed = std::clamp(gflop / math_s / assumed_gflops(math_long.model.type), 1e-3, 1e3);
  r.measured_at = static_cast<int64_t>(std::time(nullptr));
  const BuildInfo& b = build_info();
  r.version = b.version;
  r.isa = b.isa;
  return r;
}

std::string machine_rate_json(const MachineRate& r) {
  return nlohmann::json{{"format", kFormat},
                        {"speed", r.speed},
                        {"event_us", r.event_us},
                        {"measured_at", r.measured_at},
                        {"stalesim_version", r.version},
                        {"isa", r.isa}}
             .dump(2) +
         "\n";
}

std::optional<MachineRate> read_machine_rate(const std::string& path, std::string& why) {
  const auto j = read_json_file(path, kMaxRateBytes, why);
  if (!j) return std::nullopt;
  const auto number = [&](const char* key, double lo, double hi) -> std::optional<double> {
    if (!j->contains(key) || !(*j)[key].is_number() || !in((*j)[key].get<double>(), lo, hi)) {
      why = fmt::format("/{}: expected a number in ({:g}, {:g}]", key, lo, hi);
      return std::nullopt;
    }
    return (*j)[key].get<double>();
  };
  const auto text = [&](const char* key) -> std::optional<std::string> {
    if (!j->contains(key) || !(*j)[key].is_string()) {
      why = fmt::format("/{}: expected a string", key);
      return std::nullopt;
    }
    return (*j)[key].get<std::string>();
  };
  if (!j->is_object() || text("format") != kFormat) {
    why = fmt::format("not a machine rate file (expected \"format\": \"{}\")", kFormat);
    return std::nullopt;
  }
  MachineRate r;
  const auto speed = number("speed", 1e-3 / 2, 1e3);
  const auto event_us = number("event_us", 0, 1e6);
  const auto at = number("measured_at", 0, 1e11);
  const auto version = text("stalesim_version");
  const auto isa = text("isa");
  if (!speed || !event_us || !at || !version || !isa) return std::nullopt;
  const BuildInfo& b = build_info();
  if (*version != b.version || *isa != b.isa) {
    why = fmt::format("measured by stalesim {} ({}), this is {} ({})", *version, *isa, b.version, b.isa);
    return std::nullopt;
  }
  r.speed = *speed;
  r.event_us = *event_us;
  r.measured_at = static_cast<int64_t>(*at);
  r.version = *version;
  r.isa = *isa;
  return r;
}

void use_machine_rate(RunEstimate& e, const MachineRate& r, const std::string& note) {
  if (e.gflops > 0) e.gflops *= r.speed;
  e.event_us = r.event_us;
  e.wall_s = (e.gflops > 0 ? e.math_gflop / e.gflops : 0.0) + e.work_events() * r.event_us * 1e-6;
  e.rate_note = note;
}

}  // namespace stalesim
