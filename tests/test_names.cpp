// One name per staleness quantity (issue 32 point 3; REFERENCE.md "What is simulated";
// sim/output/names.hpp): "staleness" (the clock gap of a read, what SSP bounds) and "missed updates"
// (tau). The outputs of a run, a sweep, summarize and compare, and the docs and plot scripts, never
// use the older names again, except the deprecation note in REFERENCE.md and the compatibility
// readers, which are marked "old-staleness-names: begin ... end". A folder written under the older
// names still reproduces and summarizes.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_util.hpp"

namespace fs = std::filesystem;
using stalesim::testing::q;
using stalesim::testing::run_cli;
using stalesim::testing::slurp;

namespace {

// The older names, as identifiers and in words (case-insensitive). `tau` as a column or key is
// checked apart: the formulas' tau is the missed updates' symbol.
const std::regex kOldNames(
    "read_clock_gap|clock_staleness|step_staleness|staleness_per_gradient|clock_gradients|step_gradients|"
    "read clock gap|clock staleness|step staleness|step-staleness",
    std::regex::icase);
const std::regex kTauColumn("(^|[,\"`])tau([,\"`]|$)", std::regex::multiline);

// Each line of `text` holding an older name, outside the marked compatibility blocks (which may
// open and close on one line, or span lines; their newlines are kept so line numbers hold).
std::vector<std::string> old_name_lines(const std::string& name, std::string text) {
  const std::string begin = "old-staleness-names: begin", end = "old-staleness-names: end";
  for (size_t b = text.find(begin); b != std::string::npos; b = text.find(begin, b)) {
    const size_t e = text.find(end, b);
    const size_t stop = e == std::string::npos ? text.size() : e + end.size();
    for (size_t k = b; k < stop; ++k)
      if (text[k] != '\n') text[k] = ' ';
  }
  std::vector<std::string> hits;
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    if (std::regex_search(line, kOldNames) || std::regex_search(line, kTauColumn))
      hits.push_back(name + ":" + std::to_string(n) + ": " + line);
  }
  // Words broken across lines ("read clock\ngap") count too.
  std::string joined = text;
  for (char& c : joined)
    if (c == '\n') c = ' ';
  if (hits.empty() &&
      std::regex_search(
          joined, std::regex("read\\s+clock\\s+gap|clock\\s+staleness|step\\s+staleness", std::regex::icase)))
    hits.push_back(name + ": an older name across a line break");
  return hits;
}

void check_no_old_names(const std::string& name, const std::string& text) {
  for (const auto& hit : old_name_lines(name, text)) FAIL_CHECK("an older staleness name: " << hit);
}

fs::path temp(const std::string& what) {
  return fs::temp_directory_path() / ("stalesim-names-" + std::to_string(::getpid()) + "-" + what);
}

}  // namespace

TEST_CASE("the old-name check finds an old name and skips the marked blocks") {
  CHECK(old_name_lines("a", "mean read clock gap 3\n").size() == 1);
  CHECK(old_name_lines("a", "mean read clock\ngap 3\n").size() == 1);
  CHECK(old_name_lines("a", "virtual_time_s,worker,tau,step\n").size() == 1);
  CHECK(old_name_lines(
            "a", "x <!-- old-staleness-names: begin --> step_staleness <!-- old-staleness-names: end --> y\n")
            .empty());
  CHECK(old_name_lines("a", "# old-staleness-names: begin\nstep_gradients\n# old-staleness-names: end\n")
            .empty());
  CHECK(old_name_lines("a", "<!-- old-staleness-names: end --> step_gradients\n").size() == 1);
  CHECK(old_name_lines("a", "alpha / tau for tau >= 1; staleness_gradients, missed_updates\n").empty());
}

TEST_CASE("a run, a sweep, summarize and compare write one name per staleness quantity") {
  const fs::path run = temp("run"), other = temp("other"), sweep = temp("sweep");
  for (const auto& d : {run, other, sweep}) fs::remove_all(d);
  const auto r =
      run_cli("run scenarios/sweep-tiny.json --record gradients --trace --explain --out " + q(run.string()));
  REQUIRE(r.code == 0);
  CHECK(r.out.find("missed updates mean") != std::string::npos);
  CHECK(r.out.find("staleness mean") != std::string::npos);
  check_no_old_names("stdout", r.out);
  for (const auto& entry : fs::directory_iterator(run))
    check_no_old_names(entry.path().filename().string(), slurp(entry.path()));
  CHECK(slurp(run / "staleness.csv").rfind("value,staleness_gradients,missed_updates_gradients\n", 0) == 0);
  const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  CHECK(summary.at("staleness").contains("p99"));
  CHECK(summary.at("missed_updates").contains("p99"));

  const auto s =
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.type=ssp,asp --seeds 1..2 --quiet --out " +
              q(sweep.string()));
  REQUIRE(s.code == 0);
  const auto m = run_cli("summarize " + q(sweep.string()));
  REQUIRE(m.code == 0);
  check_no_old_names("summarize stdout", m.out);
  for (const char* f : {"sweep.csv", "sweep-summary.csv"}) {
    CAPTURE(f);
    const std::string text = slurp(sweep / f);
    CHECK(text.find("missed_updates_mean") != std::string::npos);
    check_no_old_names(f, text);
  }
  REQUIRE(run_cli("run scenarios/sweep-tiny.json --quiet --set seed=2 --out " + q(other.string())).code == 0);
  const auto c = run_cli("compare " + q(run.string()) + " " + q(other.string()) + " --json " +
                         q((sweep / "compare.json").string()));
  CAPTURE(c.err);
  REQUIRE(c.code == 0);
  check_no_old_names("compare stdout", c.out);
  const std::string compared = slurp(sweep / "compare.json");
  CHECK(compared.find("missed_updates_ks") != std::string::npos);
  check_no_old_names("compare.json", compared);
  for (const auto& d : {run, other, sweep}) fs::remove_all(d);
}

TEST_CASE("the docs and the plot scripts use one name per staleness quantity") {
  const fs::path src(STALESIM_SOURCE_DIR);
  std::vector<fs::path> files = {"README.md",
                                 "REFERENCE.md",
                                 "DESIGN.md",
                                 "CONTRIBUTING.md",
                                 "PERFORMANCE.md",
                                 "scenarios/tutorial/README.md",
                                 "scenarios/papers/README.md",
                                 "plots/papers-protocol.json"};
  for (const auto& entry : fs::directory_iterator(src / "plots"))
    if (entry.path().extension() == ".py" || entry.path().extension() == ".sh")
      files.push_back(fs::relative(entry.path(), src));
  for (const auto& f : files) {
    CAPTURE(f);
    REQUIRE(fs::is_regular_file(src / f));
    check_no_old_names(f.string(), slurp(src / f));
  }
  // The deprecation note exists, and says until when the older names are read.
  const std::string reference = slurp(src / "REFERENCE.md");
  CHECK(reference.find("old-staleness-names: begin") != std::string::npos);
  CHECK(reference.find("until 2027-06-30") != std::string::npos);
}

TEST_CASE("a run folder of the older names reproduces, and a sweep of them summarizes") {
  const fs::path run = temp("old-run"), sweep = temp("old-sweep");
  for (const auto& d : {run, sweep}) fs::remove_all(d);
  REQUIRE(run_cli("run scenarios/sweep-tiny.json --quiet --record gradients --out " + q(run.string())).code ==
          0);
  // Rewrite the folder as the previous stalesim wrote it.
  auto j = nlohmann::json::parse(slurp(run / "summary.json"));
  const auto missed = j["missed_updates"], gap = j["staleness"];
  j.erase("missed_updates");
  j["staleness_per_gradient"] = {{"missed_updates", missed}, {"read_clock_gap", gap}};
  j["staleness"] = {{"mean", gap["mean"]}, {"max", gap["max"]}};
  j["step_staleness"] = {{"mean", missed["mean"]}, {"max", missed["max"]}};
  const auto rewrite = [&](const std::string& file, const std::string& from, const std::string& to) {
    std::string text = slurp(run / file);
    REQUIRE(text.rfind(from, 0) == 0);
    std::ofstream(run / file, std::ios::binary | std::ios::trunc) << to << text.substr(from.size());
  };
  std::ofstream(run / "summary.json", std::ios::binary | std::ios::trunc) << j.dump(2) << "\n";
  rewrite("staleness.csv", "value,staleness_gradients,missed_updates_gradients",
          "staleness,clock_gradients,step_gradients");
  rewrite("gradients.csv", "virtual_time_s,worker,version_read,version_apply,missed_updates",
          "virtual_time_s,worker,version_read,version_apply,tau");
  const auto r = run_cli("reproduce --quiet " + q(run.string()));
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.rfind("MATCH", 0) == 0);
  for (const char* f : {"summary.json", "staleness.csv", "gradients.csv"})
    CHECK(r.err.find(std::string("note: ") + f + " holds the staleness names read until 2027-06-30") !=
          std::string::npos);
  // A real difference under the older names is still one.
  rewrite("staleness.csv", "staleness,clock_gradients,step_gradients\n0,",
          "staleness,clock_gradients,step_gradients\n0,9");
  CHECK(run_cli("reproduce --quiet " + q(run.string())).code == 3);

  REQUIRE(run_cli("sweep scenarios/sweep-tiny.json --seeds 1..2 --quiet --out " + q(sweep.string())).code ==
          0);
  std::string csv = slurp(sweep / "sweep.csv");
  const auto at = csv.find("missed_updates_mean");
  REQUIRE(at != std::string::npos);
  csv.replace(at, std::string("missed_updates_mean").size(), "step_staleness_mean");
  std::ofstream(sweep / "sweep.csv", std::ios::binary | std::ios::trunc) << csv;
  const auto m = run_cli("summarize " + q(sweep.string()));
  CAPTURE(m.err);
  CHECK(m.code == 0);
  CHECK(slurp(sweep / "sweep-summary.csv").find("missed_updates_mean_mean") != std::string::npos);
  for (const auto& d : {run, sweep}) fs::remove_all(d);
}
