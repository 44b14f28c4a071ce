#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/build_info.hpp"
#include "sim/outputs.hpp"
#include "sim/scenario/fields.hpp"
#include "sim/scenario/load.hpp"
#include "sim/simulation.hpp"

using namespace stalesim;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "missing golden file " << p.string() << " (tools/regen-golden makes it)");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The parts of the manifest that describe the build, not the run: they change with every commit.
nlohmann::json without_build(nlohmann::json j) {
  for (const char* k : {"git_revision", "compiler", "build_type", "flags", "stalesim_version"})
    j["manifest"].erase(k);
  return j;
}

}  // namespace

TEST_CASE("golden runs match their committed outputs byte for byte") {
  const fs::path root = fs::path(STALESIM_SOURCE_DIR) / "tests" / "golden";
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    ++cases;
    const fs::path dir = entry.path();
    CAPTURE(dir.string());
    pin_eigen_cache_sizes();
    const Scenario s = load_scenario_file((dir / "scenario.json").string());
    const OutputFiles out = render_outputs(s, run_scenario(s));
    CHECK(out.metrics_csv == read_text(dir / "expected" / "metrics.csv"));
    CHECK(out.staleness_csv == read_text(dir / "expected" / "staleness.csv"));
    auto expected = nlohmann::json::parse(read_text(dir / "expected" / "summary.json"));
    auto actual = nlohmann::json::parse(out.summary_json);
    CHECK(without_build(actual).dump(2) == without_build(expected).dump(2));
  }
  CHECK(cases >= 1);
}

TEST_CASE("the README's field reference is the one generated from the field table") {
  const std::string readme = read_text(fs::path(STALESIM_SOURCE_DIR) / "README.md");
  const std::string begin = "<!-- fields:begin -->\n", end = "<!-- fields:end -->";
  const auto a = readme.find(begin), b = readme.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  const std::string section = readme.substr(a + begin.size(), b - a - begin.size());
  CHECK_MESSAGE(section == scenario_fields_markdown(), "README.md is stale: run tools/update-readme");
}

TEST_CASE("every shipped scenario validates and runs") {
  int count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(STALESIM_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".json" || entry.path().string().ends_with(".sweep.json")) continue;
    ++count;
    CAPTURE(entry.path().string());
    // Shortened: a few hundred updates show that the scenario runs end to end.
    const std::vector<Override> shorter{{"stop.max_updates", "300"}};
    const Scenario s = load_scenario_file(entry.path().string(), shorter);
    const RunResult r = run_scenario(s);
    CHECK(r.status == RunStatus::kCompleted);
    CHECK(r.server_updates == 300);
  }
  CHECK(count >= 1);
}

TEST_CASE("test case names avoid the characters that break CTest discovery") {
  // doctest_discover_tests passes names through CMake lists: '[', ']' and ';' split or unbalance
  // them, and CTest then fails to load every test.
  for (const auto& entry : fs::directory_iterator(fs::path(STALESIM_SOURCE_DIR) / "tests")) {
    if (entry.path().extension() != ".cpp") continue;
    const std::string text = read_text(entry.path());
    for (size_t at = text.find("TEST_CASE(\""); at != std::string::npos;
         at = text.find("TEST_CASE(\"", at + 1)) {
      const size_t begin = at + 11, end = text.find('"', begin);
      const std::string name = text.substr(begin, end - begin);
      CAPTURE(name);
      CHECK(name.find_first_of("[];") == std::string::npos);
    }
  }
}
