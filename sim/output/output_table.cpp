#include "sim/output/output_table.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "sim/output/outputs.hpp"

namespace stalesim {

namespace {

std::string opt(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string(); }

std::string summary(const RunOutput& o, std::string_view) {
  return summary_json(o.scenario, o.result, o.result_hash).dump(2) + "\n";
}

std::string metrics(const RunOutput& o, std::string_view) { return o.metrics_csv; }

std::string staleness_csv(const RunOutput& o, std::string_view) {
  // value: a staleness or missed-updates count; then how many gradients had it, for each quantity.
  std::string out = "value,staleness_gradients,missed_updates_gradients\n";
  const auto& c = o.result.staleness.bins();
  const auto& s = o.result.missed_updates.bins();
  const size_t n = std::max(c.size(), s.size());
  for (size_t i = 0; i < n; ++i)
    out += fmt::format("{},{},{}\n", i, i < c.size() ? c[i] : 0, i < s.size() ? s[i] : 0);
  return out;
}

// What one of the run's recorders wrote (RunResult::recorded).
std::string recorded(const RunOutput& o, std::string_view name) { return o.result.recording(name); }

std::string done(const RunOutput& o, std::string_view) { return o.result_hash + "\n"; }

constexpr std::array kTable = {
    OutputRow{"summary.json", Written::kAlways, true, summary},
    OutputRow{"metrics.csv", Written::kAlways, true, metrics},
    OutputRow{"staleness.csv", Written::kAlways, true, staleness_csv},
    OutputRow{"decisions.csv", Written::kWhenNotEmpty, true, recorded},  // the policy's decision log (DSSP)
    OutputRow{"gradients.csv", Written::kWhenNotEmpty, true, recorded},  // --record gradients
    OutputRow{"trace.json", Written::kWhenNotEmpty, true, recorded},     // --trace (sim/output/trace.hpp)
    OutputRow{"explain.txt", Written::kWhenNotEmpty, true, recorded},    // --explain (sim/output/explain.hpp)
    // A real run's measured times (sim/real/): never bit-reproducible, so reproduce refuses the folder.
    OutputRow{"timing.csv", Written::kWhenNotEmpty, false, recorded},
    OutputRow{"links.csv", Written::kWhenNotEmpty, true, recorded},  // off the star (topology_network.hpp)
    OutputRow{"done", Written::kWhenFinished, true, done},
    OutputRow{"plots.list", Written::kByPlotScripts, false, nullptr},
};

}  // namespace

std::string metrics_csv(const RunResult& r) {
  // The model's own metric (mf, lda) is a last column named after it; classifiers have none.
  const bool extra = !r.metric_name.empty();
  std::string out = "virtual_time_s,server_version,test_loss,test_accuracy,train_loss,mean_staleness,bytes";
  out += extra ? "," + r.metric_name + "\n" : "\n";
  for (const auto& m : r.metrics) {
    out += fmt::format("{},{},{},{},{},{},{}", m.time.seconds(), m.server_version, opt(m.test_loss),
                       opt(m.test_accuracy), opt(m.train_loss), opt(m.mean_staleness), m.bytes);
    out += extra ? "," + opt(m.metric) + "\n" : "\n";
  }
  return out;
}

std::span<const OutputRow> output_table() { return kTable; }

const OutputRow* find_output(std::string_view name) {
  const auto it =
      std::find_if(kTable.begin(), kTable.end(), [&](const OutputRow& r) { return r.name == name; });
  return it == kTable.end() ? nullptr : &*it;
}

}  // namespace stalesim
