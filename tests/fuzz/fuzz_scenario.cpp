// libFuzzer harness: the scenario loader (JSON text -> Scenario), issue 10.
// Any input must either load or throw ScenarioError; a loaded scenario must survive the round trip
// through scenario_to_json (the manifest's form) unchanged. Anything else (another exception, a
// crash, a sanitizer report, a hang) is a finding. Run through tools/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/scenario/load.hpp"
#include "sim/scenario/to_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const stalesim::Scenario s = stalesim::load_scenario_text(text, "fuzz.json");
    const stalesim::Scenario again = stalesim::parse_scenario(stalesim::scenario_to_json(s), "round-trip");
    if (!(again == s)) std::abort();  // the manifest would not reproduce the run
  } catch (const stalesim::ScenarioError&) {
  }
  return 0;
}
