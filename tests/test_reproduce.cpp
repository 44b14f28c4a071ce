#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/analysis/reproduce.hpp"
#include "sim/build_info.hpp"
#include "tests/cli_test_util.hpp"

using namespace std::string_literals;
using namespace stalesim;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::slurp;

void spit(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

// Runs the stalesim binary with `args` (shell words) from the source folder.
Outcome cli(const std::string& args) { return run_cli(args); }

fs::path fresh_run(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("stalesim-repro-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  const auto r = cli("run scenarios/sweep-tiny.json --quiet --out " + d.string());
  REQUIRE_MESSAGE(r.code == 0, r.err);
  return d;
}

}  // namespace

TEST_CASE("reproduce says MATCH for a fresh run and names the files it compared") {
  const fs::path d = fresh_run("match");
  const auto r = cli("reproduce " + (d / "summary.json").string() + " --quiet");
  CHECK_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.starts_with("MATCH: " + d.string() + "/ (" + stalesim::testing::plain_run_files_listed() +
                          " identical"));
  CHECK(r.err.empty());
  // The folder itself is accepted too.
  CHECK(cli("reproduce " + d.string() + " --quiet").code == 0);
  fs::remove_all(d);
}

TEST_CASE("reproduce says MISMATCH naming the file, line and column after one byte of metrics.csv changes") {
  const fs::path d = fresh_run("mismatch");
  std::string metrics = slurp(d / "metrics.csv");
  // Line 3, column test_loss (the third): change its last digit.
  size_t line_start = 0;
  for (int i = 0; i < 2; ++i) line_start = metrics.find('\n', line_start) + 1;
  size_t at = line_start;
  for (int c = 0; c < 3; ++c) at = metrics.find(',', at) + 1;
  const size_t last_digit = at - 2;  // the character before the comma after test_loss
  const std::string original_cell =
      metrics.substr(metrics.rfind(',', last_digit) + 1, last_digit - metrics.rfind(',', last_digit));
  metrics[last_digit] = metrics[last_digit] == '1' ? '2' : '1';
  const std::string changed_cell =
      metrics.substr(metrics.rfind(',', last_digit) + 1, last_digit - metrics.rfind(',', last_digit));
  spit(d / "metrics.csv", metrics);

  const auto r = cli("reproduce " + (d / "summary.json").string() + " --quiet");
  CHECK(r.code == 3);
  CHECK(r.out == "MISMATCH: metrics.csv: first difference at line 3 (test_loss): expected '" + changed_cell +
                     "', got '" + original_cell + "'\n");
  fs::remove_all(d);
}

TEST_CASE("reproduce warns when the run was built differently, and still compares the results") {
  const fs::path d = fresh_run("build");
  json s = json::parse(slurp(d / "summary.json"));
  const std::string isa = s["manifest"]["isa"];
  s["manifest"]["isa"] = "x86-64-v2";
  s["manifest"]["git_revision"] = "0123abc";
  spit(d / "summary.json", s.dump(2) + "\n");
  const auto r = cli("reproduce " + (d / "summary.json").string() + " --quiet");
  CHECK_MESSAGE(r.code == 0, r.out);
  CHECK(r.out.starts_with("MATCH"));
  CHECK(r.err == "warning: built differently (git_revision 0123abc vs " + build_info().git_revision +
                     "; isa x86-64-v2 vs " + isa + "): a mismatch may come from the build\n");
  // A result field is still compared byte for byte.
  s["server_updates"] = 121;
  spit(d / "summary.json", s.dump(2) + "\n");
  const auto m = cli("reproduce " + (d / "summary.json").string() + " --quiet");
  CHECK(m.code == 3);
  CHECK(m.out.find("MISMATCH: summary.json: first difference at line") != std::string::npos);
  CHECK(
      m.out.find("(/server_updates): expected '\"server_updates\": 121,', got '\"server_updates\": 120,'") !=
      std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("reproduce reports a missing file and refuses what is not a finished run") {
  const fs::path d = fresh_run("refuse");
  fs::remove(d / "staleness.csv");
  const auto missing = cli("reproduce " + d.string() + " --quiet");
  CHECK(missing.code == 3);
  CHECK(missing.out == "MISMATCH: staleness.csv: missing in the run folder (the rerun writes it)\n");

  json s = json::parse(slurp(d / "summary.json"));
  s["status"] = "interrupted";
  spit(d / "summary.json", s.dump(2));
  const auto interrupted = cli("reproduce " + d.string());
  CHECK(interrupted.code == 2);
  CHECK(interrupted.err.find(
            "the run was interrupted (status \"interrupted\", no done marker); only a finished run "
            "can be reproduced") != std::string::npos);

  s["status"] = "completed";
  s["manifest"]["scenario"]["policy"]["staleness"] = -1;
  spit(d / "summary.json", s.dump(2));
  const auto bad = cli("reproduce " + d.string());
  CHECK(bad.code == 2);
  CHECK(
      bad.err.find("summary.json: manifest.scenario: /policy/staleness: expected an integer >= 0, got -1") !=
      std::string::npos);

  const auto none = cli("reproduce no/such/summary.json");
  CHECK(none.code == 2);
  CHECK(none.err.find("no/such/summary.json: cannot read") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("the first difference of two files names the line, the CSV column or the JSON path") {
  CHECK_FALSE(first_difference("metrics.csv", "a,b\n1,2\n", "a,b\n1,2\n"));
  const auto csv = first_difference("metrics.csv", "t,loss,acc\n1,0.5,0.7\n2,0.4,0.8\n",
                                    "t,loss,acc\n1,0.5,0.7\n2,0.4,0.9\n");
  REQUIRE(csv);
  CHECK(describe(*csv) == "metrics.csv: first difference at line 3 (acc): expected '0.8', got '0.9'");
  const auto shorter = first_difference("staleness.csv", "s,c\n0,1\n1,2\n", "s,c\n0,1\n");
  REQUIRE(shorter);
  CHECK(describe(*shorter) == "staleness.csv: first difference at line 3: expected '1,2', got end of file");
  const auto longer = first_difference("staleness.csv", "s,c\n0,1", "s,c\n0,1\n1,2");
  REQUIRE(longer);
  CHECK(describe(*longer) == "staleness.csv: first difference at line 3: expected end of file, got '1,2'");
  const auto header = first_difference("metrics.csv", "a,b\n", "a,c\n");
  REQUIRE(header);
  CHECK(header->where == "header");
  const auto js = first_difference("summary.json", "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": 2\n  }\n}",
                                   "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": 3\n  }\n}");
  REQUIRE(js);
  CHECK(describe(*js) ==
        "summary.json: first difference at line 4 (/b/c): expected '\"c\": 2', got '\"c\": 3'");
  const auto done = first_difference("done", "abc\n", "abd\n");
  REQUIRE(done);
  CHECK(describe(*done) == "done: first difference at line 1: expected 'abc', got 'abd'");
  const auto newline = first_difference("done", "abc\n", "abc");
  REQUIRE(newline);
  CHECK(describe(*newline) ==
        "done: first difference at line 1 (newline at end of file): expected 'abc\\n', got 'abc'");
}

TEST_CASE("dataset files that changed or went missing since the run are named with their checksums") {
  const fs::path d = fs::temp_directory_path() / ("stalesim-repro-data-" + std::to_string(::getpid()));
  fs::create_directories(d);
  spit(d / "data.bin", "hello");
  const json manifest = {
      {"datasets",
       {{{"path", (d / "data.bin").string()}, {"bytes", 5}, {"xxh64", "26c7827d889f6da3"}},
        {{"path", (d / "gone.bin").string()}, {"bytes", 3}, {"xxh64", "0000000000000000"}}}}};
  const auto same = dataset_changes(manifest);
  REQUIRE(same.size() == 1);  // XXH64("hello") is 26c7827d889f6da3
  CHECK(same[0] == (d / "gone.bin").string() + ": missing (the run read 3 bytes, xxh64 0000000000000000)");
  spit(d / "data.bin", "hellO!");
  const auto changed = dataset_changes(manifest);
  REQUIRE(changed.size() == 2);
  CHECK(changed[0].starts_with((d / "data.bin").string() +
                               ": changed since the run (xxh64 26c7827d889f6da3 vs "));
  CHECK(changed[0].ends_with(", 5 vs 6 bytes)"));
  CHECK(build_differences(build_info_json()).empty());
  fs::remove_all(d);
}
