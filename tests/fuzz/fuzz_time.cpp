// libFuzzer harness: the duration arithmetic (issue 18). The input is read as records of one byte
// (which field) and eight bytes (a double, any bit pattern: huge, tiny, negative, NaN, subnormal),
// applied with --set to a small time-only scenario; a scenario that loads is then run for a few
// updates. Every input must either be refused (ScenarioError, naming the field) or run, or stop
// with a TimeRangeError; anything else (the engine's "event in the past", another exception, a
// sanitizer report such as a float-to-int overflow, a hang) is a finding. Run through tools/fuzz.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/sim_time.hpp"
#include "sim/scenario/load.hpp"
#include "sim/simulation.hpp"

namespace {
constexpr const char* kBase = R"({
  "name": "fuzz-time", "seed": 5,
  "model": { "type": "time-only", "parameters": 1000, "flops_per_sample": 1e6 },
  "optimizer": { "batch_size": 8 },
  "policy": { "type": "ssp", "staleness": 2 },
  "cluster": { "workers": [ { "profile": "gtx1060", "count": 2 }, { "profile": "gtx1080ti", "count": 1 } ] },
  "stop": { "max_updates": 40 },
  "eval": { "every_s": 1 }
})";

// The fields that make durations, and templates that place the number (%) in them.
const char* const kFields[] = {
    "cluster.network.bandwidth_gbps=%",
    "cluster.network.server_bandwidth_gbps=%",
    "cluster.network.latency_us=%",
    "cluster.network.latency_sigma=%",
    "cluster.network.message_overhead_us=%",
    "cluster.workers.0.iteration_ms=%",
    "cluster.workers.1.bandwidth_gbps=%",
    "cluster.jitter.sigma=%",
    "model.flops_per_sample=%",
    "model.parameters=%",
    "optimizer.batch_size=%",
    "eval.every_s=%",
    "stop.virtual_time_s=%",
    R"(cluster.schedule=[{"kind":"slow","at_s":0,"factor":%,"workers":[0]}])",
    R"(cluster.schedule=[{"kind":"drift","at_s":0,"until_s":1,"factor":%,"workers":[1]}])",
    R"(cluster.schedule=[{"kind":"slow","at_s":%,"factor":1000000,"group":0}])",
    R"(cluster.schedule=[{"kind":"pause","at_s":0,"until_s":%,"workers":[2]}])",
};
constexpr size_t kFieldCount = sizeof kFields / sizeof kFields[0];
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<stalesim::Override> sets;
  for (size_t at = 0; at + 9 <= size && sets.size() < 6; at += 9) {
    double v = 0;
    std::memcpy(&v, data + at + 1, sizeof v);
    std::string number =
        std::isfinite(v) ? fmt::format("{}", v) : std::string(std::isnan(v) ? "NaN" : "1e999");
    std::string text = kFields[data[at] % kFieldCount];
    text.replace(text.find('%'), 1, number);
    sets.push_back(stalesim::parse_override(text));
  }
  try {
    const stalesim::Scenario s = stalesim::load_scenario_text(kBase, "fuzz-time.json", sets);
    // Keep each input quick: the loader accepts evaluations down to 1 ns, which is a long run.
    if (s.eval.every_s < 1e-3 || s.optimizer.batch_size > 1'000'000) return 0;
    const stalesim::DataSplit none;
    stalesim::Simulation sim(s, none);
    // At most about 200,000 events: a legitimate but long run (a worker sped up 1e300-fold
    // evaluating every second for 1e7 virtual seconds) is not a hang to report.
    std::atomic<bool> enough{false};
    stalesim::RunOptions options;
    options.interrupt = &enough;
    options.progress_every = 1000;
    int reports = 0;
    options.on_progress = [&](const stalesim::Progress&) {
      if (++reports >= 200) enough = true;
    };
    sim.run(options);
  } catch (const stalesim::ScenarioError&) {
  } catch (const stalesim::TimeRangeError&) {
  }
  return 0;
}
