#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "tests/cli_test_util.hpp"

using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::slurp;

// Runs the stalesim binary with `args` (shell words) from the source folder.
Outcome cli(const std::string& args) { return run_cli(args); }

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("stalesim-cli-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("the CLI runs a scenario, writes every output with done last, and is deterministic") {
  const fs::path a = fresh_dir("a"), b = fresh_dir("b");
  const auto r1 = cli("run tests/golden/tiny/scenario.json --quiet --out " + a.string());
  REQUIRE_MESSAGE(r1.code == 0, r1.err);
  CHECK(r1.out.find("golden-tiny: completed (max_updates)") != std::string::npos);
  const auto r2 = cli("run tests/golden/tiny/scenario.json --quiet --out " + b.string());
  REQUIRE(r2.code == 0);
  for (const char* f : {"summary.json", "metrics.csv", "staleness.csv", "done"}) {
    CAPTURE(f);
    CHECK(fs::exists(a / f));
    CHECK(slurp(a / f) == slurp(b / f));
  }
  const auto r3 =
      cli("run tests/golden/tiny/scenario.json --quiet --seed 4 --out " + b.string() + " --force");
  REQUIRE(r3.code == 0);
  CHECK(slurp(a / "done") != slurp(b / "done"));  // done holds the result hash
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("the CLI refuses an occupied output folder unless --force, which replaces a run folder whole") {
  const fs::path d = fresh_dir("occupied");
  REQUIRE(cli("run tests/golden/tiny/scenario.json --quiet --record gradients --out " + d.string()).code ==
          0);
  REQUIRE(fs::exists(d / "gradients.csv"));
  const auto r = cli("run tests/golden/tiny/scenario.json --quiet --out " + d.string());
  CHECK(r.code == 2);
  CHECK(r.err.find("output folder exists and is not empty (use --force to replace it)") != std::string::npos);
  CHECK(fs::exists(d / "gradients.csv"));
  const auto forced = cli("run tests/golden/tiny/scenario.json --quiet --force --out " + d.string());
  CHECK(forced.code == 0);
  CHECK_FALSE(fs::exists(d / "gradients.csv"));  // replaced whole: old and new files never mix
  CHECK(fs::exists(d / "done"));
  fs::remove_all(d);
}

TEST_CASE("bad input exits 2 with a message naming the file and JSON path") {
  const auto bad_set = cli("validate tests/golden/tiny/scenario.json --set policy.staleness=-3");
  CHECK(bad_set.code == 2);
  CHECK(bad_set.err.find("/policy/staleness: expected an integer >= 0, got -3") != std::string::npos);
  const auto missing = cli("run no/such/file.json");
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no/such/file.json: cannot read") != std::string::npos);
  const auto usage = cli("run");
  CHECK(usage.code == 2);
  const auto unknown = cli("frobnicate");
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("unknown command 'frobnicate'") != std::string::npos);
  const auto bad_seed = cli("run tests/golden/tiny/scenario.json --seed minus-one");
  CHECK(bad_seed.code == 2);
}

TEST_CASE("validate prints the resolved scenario and --set overrides any field") {
  const auto v =
      cli("validate tests/golden/tiny/scenario.json --set policy.type=bsp --set cluster.workers.0.count=6");
  REQUIRE_MESSAGE(v.code == 0, v.err);
  CHECK(v.out.find("\"aggregate\": \"sum\"") != std::string::npos);
  CHECK(v.out.find("\"count\": 6") != std::string::npos);
  CHECK(v.out.find("\"server_bandwidth_gbps\": 10") != std::string::npos);
}

TEST_CASE("every command answers --help with exit 0") {
  for (const char* c : {"--help", "run --help", "validate --help", "profiles --help", "fields --help"}) {
    CAPTURE(c);
    const auto h = cli(c);
    CHECK(h.code == 0);
    CHECK(h.out.find("Usage") != std::string::npos);
  }
  const auto p = cli("profiles");
  CHECK(p.out.find("gtx1060") != std::string::npos);
  CHECK(p.out.find("gtx1080ti") != std::string::npos);
}

TEST_CASE("run --trace and --explain add deterministic files, and their options are checked") {
  const fs::path a = fresh_dir("trace-a"), b = fresh_dir("trace-b");
  const std::string tiny = "run tests/golden/tiny/scenario.json --quiet --trace --explain --out ";
  const auto r1 = cli(tiny + a.string());
  REQUIRE_MESSAGE(r1.code == 0, r1.err);
  const auto r2 = cli(tiny + b.string());
  REQUIRE_MESSAGE(r2.code == 0, r2.err);
  CHECK(slurp(a / "trace.json").find("\"traceEvents\"") != std::string::npos);
  CHECK(slurp(a / "trace.json") == slurp(b / "trace.json"));
  CHECK(slurp(a / "explain.txt").starts_with("# stalesim explain: golden-tiny"));
  CHECK(slurp(a / "explain.txt") == slurp(b / "explain.txt"));
  fs::remove_all(a);
  fs::remove_all(b);

  const fs::path c = fresh_dir("trace-c");
  const auto cut =
      cli("run tests/golden/tiny/scenario.json --quiet --trace --trace-max-mb 0.01 --out " + c.string());
  CHECK(cut.code == 0);
  CHECK(cut.err.find("trace.json: cut at t=") != std::string::npos);
  CHECK(cut.err.find("size limit of 0.01 MB") != std::string::npos);
  fs::remove_all(c);

  const auto bad = cli("run tests/golden/tiny/scenario.json --trace --trace-window 2 --out /nonexistent/x");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--trace-window: expected FROM:TO in virtual seconds (e.g. 0:2.5), got '2'") !=
        std::string::npos);
  const auto alone = cli("run tests/golden/tiny/scenario.json --trace-window 0:1 --out /nonexistent/x");
  CHECK(alone.code == 2);
  CHECK(alone.err.find("--trace-window and --trace-max-mb need --trace") != std::string::npos);
}

TEST_CASE("stalesim timeline prints plain text when stdout is not a terminal") {
  const auto t = cli("timeline scenarios/tutorial/01-bsp-straggler.json --until 10ms --width 40");
  REQUIRE_MESSAGE(t.code == 0, t.err);
  CHECK(t.out.starts_with("timeline of tutorial-01-bsp-straggler: bsp, BSP (s = 0); 4 workers"));
  CHECK(t.out.find('\033') == std::string::npos);
  CHECK(t.out.find("▼") != std::string::npos);
  const auto narrow = cli("timeline scenarios/tutorial/01-bsp-straggler.json --width 5");
  CHECK(narrow.code == 2);
  CHECK(narrow.err.find("--width: expected 10 to 1000, got 5") != std::string::npos);
  const auto never = cli("timeline scenarios/tutorial/01-bsp-straggler.json --until 0s");
  CHECK(never.code == 2);
  CHECK(never.err.find("--until: expected a duration from 1 ns to 1e9 s") != std::string::npos);
}

TEST_CASE("reproduce reruns a traced and explained run with the same options and compares those files too") {
  const fs::path a = fresh_dir("trace-repro");
  const auto r =
      cli("run tests/golden/tiny/scenario.json --quiet --trace --trace-window 0.001:0.003 --explain --out " +
          a.string());
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto same = cli("reproduce --quiet " + (a / "summary.json").string());
  CHECK_MESSAGE(same.code == 0, std::string(same.out + same.err));
  CHECK(same.out.find("trace.json") != std::string::npos);
  CHECK(same.out.find("explain.txt") != std::string::npos);
  {
    std::ofstream f(a / "explain.txt", std::ios::app);
    f << "tampered\n";
  }
  const auto changed = cli("reproduce --quiet " + (a / "summary.json").string());
  CHECK(changed.code == 3);
  CHECK(changed.out.find("MISMATCH: explain.txt") != std::string::npos);
  fs::remove_all(a);
}
