// libFuzzer harness: the --set parser. Each input line is one --set argument, applied in order to a
// small valid scenario (the golden tiny run). Any input must either load or throw ScenarioError,
// and a loaded scenario must survive the round trip through scenario_to_json. Run through tools/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sim/scenario/load.hpp"
#include "sim/scenario/to_json.hpp"

namespace {
constexpr const char* kBase = R"({
  "name": "fuzz-set", "seed": 3,
  "data": { "dataset": "blobs", "blobs": { "classes": 3, "features": 6, "train": 300, "test": 90 } },
  "model": { "type": "mlp", "hidden": [8] },
  "optimizer": { "rule": "sgd", "lr": 0.1, "batch_size": 10 },
  "policy": { "type": "ssp", "staleness": 1 },
  "cluster": { "workers": [ { "profile": "gtx1060", "count": 1 }, { "profile": "gtx1080ti", "count": 2 } ] },
  "stop": { "max_updates": 120 }
})";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    std::vector<stalesim::Override> sets;
    size_t start = 0;
    while (start <= text.size() && sets.size() < 16) {
      const size_t nl = text.find('\n', start);
      const std::string_view line = text.substr(start, nl == std::string_view::npos ? text.npos : nl - start);
      if (!line.empty()) sets.push_back(stalesim::parse_override(line));
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
    const stalesim::Scenario s = stalesim::load_scenario_text(kBase, "base.json", sets);
    const stalesim::Scenario again = stalesim::parse_scenario(stalesim::scenario_to_json(s), "round-trip");
    if (!(again == s)) std::abort();
  } catch (const stalesim::ScenarioError&) {
  }
  return 0;
}
