// What the whole-run benchmarks share (tools/bench/bench.hpp).

#include "tools/bench/bench.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace stalesim::bench {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return one.empty() ? "unknown" : one;
}

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

}  // namespace stalesim::bench
