#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <xxhash.h>

#include "sim/build_info.hpp"
#include "sim/output/outputs.hpp"
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

// 16 hex digits of XXH3-64 of `text` (the golden table's per-file fingerprint).
std::string text_hash(const std::string& text) {
  return fmt::format("{:016x}", static_cast<uint64_t>(XXH3_64bits(text.data(), text.size())));
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
    CHECK(out.text("metrics.csv") == read_text(dir / "expected" / "metrics.csv"));
    CHECK(out.text("staleness.csv") == read_text(dir / "expected" / "staleness.csv"));
    auto expected = nlohmann::json::parse(read_text(dir / "expected" / "summary.json"));
    auto actual = nlohmann::json::parse(out.text("summary.json"));
    CHECK(without_build(actual).dump(2) == without_build(expected).dump(2));
  }
  CHECK(cases >= 1);
}

TEST_CASE("REFERENCE.md's field reference is the one generated from the field table") {
  const std::string readme = read_text(fs::path(STALESIM_SOURCE_DIR) / "REFERENCE.md");
  const std::string begin = "<!-- fields:begin -->\n", end = "<!-- fields:end -->";
  const auto a = readme.find(begin), b = readme.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  const std::string section = readme.substr(a + begin.size(), b - a - begin.size());
  CHECK_MESSAGE(section == scenario_fields_markdown(), "REFERENCE.md is stale: run tools/update-readme");
}

// Each shipped scenario's short run (stop.max_updates = 300) against its hashes in
// tests/golden/scenarios.json, so any change of behaviour shows in review as a changed line there.
// tools/regen-golden rewrites the table on purpose only (it sets STALESIM_REGEN_GOLDEN to the
// file to write) and shows the diff.
TEST_CASE("every shipped scenario runs and matches its golden hashes") {
  const fs::path src(STALESIM_SOURCE_DIR);
  const fs::path table_path = src / "tests" / "golden" / "scenarios.json";
  const nlohmann::json table = nlohmann::json::parse(read_text(table_path));
  REQUIRE(table.contains("runs"));
  const int64_t updates = table.at("max_updates").get<int64_t>();
  nlohmann::json now = {
      {"about", table.at("about")}, {"max_updates", updates}, {"runs", nlohmann::json::object()}};
  std::vector<std::string> paths;
  for (const auto& entry : fs::recursive_directory_iterator(src / "scenarios")) {
    if (entry.path().extension() != ".json" || entry.path().string().ends_with(".sweep.json")) continue;
    paths.push_back(entry.path().lexically_relative(src).generic_string());
  }
  std::sort(paths.begin(), paths.end());
  REQUIRE(!paths.empty());
  for (const std::string& rel : paths) {
    CAPTURE(rel);
    const std::vector<Override> shorter{{"stop.max_updates", std::to_string(updates)}};
    pin_eigen_cache_sizes();
    const Scenario s = load_scenario_file((src / rel).string(), shorter);
    const RunResult r = run_scenario(s);
    CHECK(r.status == RunStatus::kCompleted);
    CHECK(r.server_updates == updates);
    const OutputFiles out = render_outputs(s, r);
    const nlohmann::json got = {
        {"result_hash", out.result_hash},
        {"staleness_csv", text_hash(out.text("staleness.csv"))},
        {"decisions_csv", text_hash(out.text("decisions.csv"))},
        {"summary_json", text_hash(without_build(nlohmann::json::parse(out.text("summary.json"))).dump(2))}};
    now["runs"][rel] = got;
    CHECK_MESSAGE(table["runs"].contains(rel), "no golden hashes for " << rel << ": run tools/regen-golden");
    if (table["runs"].contains(rel))
      CHECK_MESSAGE(table["runs"][rel] == got,
                    rel << " changed behaviour: " << got.dump() << " (tools/regen-golden, on purpose only)");
  }
  for (const auto& item : table["runs"].items()) {
    const std::string rel = item.key();  // a plain variable: clang 14 cannot capture a binding
    CHECK_MESSAGE(std::find(paths.begin(), paths.end(), rel) != paths.end(),
                  "tests/golden/scenarios.json names " << rel << ", which is not shipped");
  }
  if (const char* out = std::getenv("STALESIM_REGEN_GOLDEN")) {
    std::ofstream f(out, std::ios::binary);
    f << now.dump(2) << "\n";
    REQUIRE(f.good());
  }
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
