// Time-only runs: throughput (updates per CPU second under ASP, SSP(3) and BSP with 1,000 and
// 100,000 workers) and growth (time against updates and against workers), measured in rounds
// (tools/bench/bench_runs.cpp explains the timing).

#include "tools/bench/bench.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/scenario/load.hpp"

namespace stalesim::bench {

namespace {

constexpr double kTimeOnlyParameters = 1e6;
constexpr double kTimeOnlyFlopsPerSample = 1e8;

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

constexpr int64_t kGrowthUpdates[] = {10'000, 100'000, 1'000'000};   // with 1,000 workers
constexpr int32_t kGrowthWorkers[] = {100, 1'000, 10'000, 100'000};  // at the throughput updates

}  // namespace

void TimeOnlyRunner::measure(const std::vector<CaseKey>& wanted) {
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
          if (r.status != RunStatus::kCompleted || r.stop_reason != StopReason::kMaxUpdates ||
              r.server_updates != updates)
            throw std::runtime_error(fmt::format("{}: ended {} ({}) after {} updates: {}", runs[i].sc.name,
                                                 to_string(r.status), to_string(r.stop_reason),
                                                 r.server_updates, r.detail));
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
    cache_.emplace(todo[i], TimeOnlyCase{policy, workers, updates, r.first.events, r.first.end_time.seconds(),
                                         r.cpu.front(), *std::min_element(r.wall.begin(), r.wall.end()),
                                         r.cpu[r.cpu.size() / 2],
                                         *std::min_element(r.construct.begin(), r.construct.end()),
                                         static_cast<int>(r.cpu.size())});
  }
}

const TimeOnlyCase& TimeOnlyRunner::get(const std::string& policy, int32_t workers, int64_t updates) {
  const CaseKey key{policy, workers, updates};
  measure({key});
  return cache_.at(key);
}

std::vector<CaseKey> throughput_cases(const Options& opt) {
  std::vector<CaseKey> keys;
  for (int32_t workers : {1'000, 100'000})
    for (const auto& policy : kPolicies)
      keys.emplace_back(policy, workers, opt.scaled(opt.throughput_updates));
  return keys;
}

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

}  // namespace stalesim::bench
