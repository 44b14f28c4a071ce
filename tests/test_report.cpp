// `stalesim report`: its folder is recognised as ours (sim/output/run_folder.hpp kReportManifest),
// bad inputs and foreign output folders are refused with exit 2, and the page is self-contained.
// The figures and the page in a browser: tests/browser/report_browser_test.py and the tutorial's
// doc test.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "cli_test_util.hpp"
#include "sim/analysis/report_page.hpp"
#include "sim/output/run_folder.hpp"

using namespace stalesim;
using namespace stalesim::testing;
namespace fs = std::filesystem;

namespace {

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("stalesim-report-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST_CASE("a report folder is ours only when its report.json lists every file it holds") {
  const fs::path dir = fresh("kind");
  write(dir / "report.json", R"({"stalesim_report": "0.1.0", "files": ["report.html", "a.png"]})");
  write(dir / "report.html", "<html></html>");
  write(dir / "a.png", "png");
  CHECK(inspect_folder(dir).kind == FolderKind::kReport);
  write(dir / "notes.txt", "mine");
  CHECK(inspect_folder(dir).kind == FolderKind::kOther);  // a file the report did not write
  fs::remove(dir / "notes.txt");
  write(dir / "report.json", R"({"files": ["report.html", "a.png"]})");
  CHECK(inspect_folder(dir).kind == FolderKind::kOther);  // no stalesim_report: not proven ours
  fs::remove_all(dir);
}

TEST_CASE("a report inside a sweep folder leaves it a sweep folder (its resume still works)") {
  const fs::path dir = fresh("sweep");
  write(dir / "sweep.json", R"({"stalesim_sweep": "0.1.0"})");
  write(dir / "sweep.csv", "policy.type,seed,folder,status\n");
  fs::create_directories(dir / "report");
  write(dir / "report" / "report.json", R"({"stalesim_report": "0.1.0", "files": ["report.html"]})");
  write(dir / "report" / "report.html", "<html></html>");
  CHECK(inspect_folder(dir).kind == FolderKind::kSweep);
  fs::remove_all(dir);
}

TEST_CASE("report refuses a folder that is not a run or a sweep, and an output folder not its own") {
  const fs::path dir = fresh("cli");
  fs::create_directories(dir / "notes");
  write(dir / "notes" / "notes.txt", "mine");
  const auto bad_input =
      run_cli(fmt::format("report {} --out {}", q((dir / "notes").string()), q((dir / "out").string())));
  CHECK(bad_input.code == 2);
  CHECK(has(bad_input.err, "not a run folder or a sweep folder"));
  CHECK_FALSE(fs::exists(dir / "out"));  // nothing half-written
  const auto missing = run_cli(fmt::format("report {}", q((dir / "absent").string())));
  CHECK(missing.code == 2);
  CHECK(has(missing.err, "no such folder"));
  // A run folder as input, a foreign folder as output: refused before anything is drawn.
  const auto run =
      run_cli(fmt::format("run tests/golden/tiny/scenario.json --out {} --quiet", q((dir / "run").string())));
  REQUIRE(run.code == 0);
  const auto foreign = run_cli(
      fmt::format("report {} --out {} --force", q((dir / "run").string()), q((dir / "notes").string())));
  CHECK(foreign.code == 2);
  CHECK(has(foreign.err, "exists and is not a report folder"));
  CHECK(fs::exists(dir / "notes" / "notes.txt"));
  // An earlier report is replaced only with --force.
  fs::create_directories(dir / "old");
  write(dir / "old" / "report.json", R"({"stalesim_report": "0.1.0", "files": ["report.html"]})");
  write(dir / "old" / "report.html", "<html>old</html>");
  const auto again =
      run_cli(fmt::format("report {} --out {}", q((dir / "run").string()), q((dir / "old").string())));
  CHECK(again.code == 2);
  CHECK(has(again.err, "a report folder exists there (use --force to replace it)"));
  CHECK(slurp(dir / "old" / "report.html") == "<html>old</html>");
  fs::remove_all(dir);
}

TEST_CASE("the report page names no network address and forbids loading any") {
  ReportSection s;
  s.id = "runs";
  s.title = "runs";
  s.runs.push_back({"results/x", "bsp", nlohmann::json::parse(R"({"manifest": {"seed": 1, "scenario": {
      "cluster": {"workers": [{"profile": "gtx1060", "count": 1}, {"profile": "gtx1080ti", "count": 3}],
                  "network": {"topology": "star", "bandwidth_gbps": 10.0, "latency_us": 50.0}},
      "policy": {"type": "ssp", "staleness": 3}, "optimizer": {"rule": "sgd", "lr": 0.05, "batch_size": 32}}}})")});
  s.figures.push_back({"runs-timeline-0.png", "timeline", "a <caption>", "\x89PNG"});
  const std::string html = report_html("t", {"results/x"}, {s});
  CHECK(has(html, "Content-Security-Policy"));
  CHECK(has(html, "default-src 'none'"));
  CHECK_FALSE(has(html, "http://"));
  CHECK_FALSE(has(html, "https://"));
  CHECK(has(html, "src=\"data:image/png;base64,iVBORw==\""));
  CHECK(has(html, "a &lt;caption&gt;"));
  CHECK(has(html,
            "4 workers (1 gtx1060, 3 gtx1080ti); a star network of 10 Gbit/s with 50 µs latency; policy SSP "
            "(staleness 3); rule sgd, lr 0.05, batch 32"));
}

TEST_CASE("base64 follows RFC 4648, padding included") {
  CHECK(base64("") == "");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(base64("foobar") == "Zm9vYmFy");
}

TEST_CASE("default output folders go under --results, else $STALESIM_RESULTS, else results/") {
  const fs::path dir = fresh("root");
  const auto by_env = run_cli("run tests/golden/tiny/scenario.json --quiet",
                              fmt::format("STALESIM_RESULTS={} ", q((dir / "env").string())));
  CHECK(by_env.code == 0);
  CHECK(fs::is_regular_file(dir / "env" / "golden-tiny" / "done"));
  const auto by_option = run_cli(
      fmt::format("run tests/golden/tiny/scenario.json --quiet --results {}", q((dir / "opt").string())),
      fmt::format("STALESIM_RESULTS={} ", q((dir / "env2").string())));
  CHECK(by_option.code == 0);
  CHECK(fs::is_regular_file(dir / "opt" / "golden-tiny" / "done"));  // the option wins over the variable
  CHECK_FALSE(fs::exists(dir / "env2"));
  const auto sweep = run_cli("sweep tests/golden/tiny/scenario.json --seeds 1,2 --quiet",
                             fmt::format("STALESIM_RESULTS={} ", q((dir / "env").string())));
  CHECK(sweep.code == 0);
  CHECK(fs::is_regular_file(dir / "env" / "golden-tiny-sweep" / "sweep.csv"));
  fs::remove_all(dir);
}

TEST_CASE("a sweep with a report folder inside resumes: its points are skipped, the report is kept") {
  const fs::path dir = fresh("resume");
  const std::string sweep = fmt::format("sweep tests/golden/tiny/scenario.json --seeds 1,2 --quiet --out {}",
                                        q((dir / "sweep").string()));
  REQUIRE(run_cli(sweep).code == 0);
  fs::create_directories(dir / "sweep" / "report");
  write(dir / "sweep" / "report" / "report.json",
        R"({"stalesim_report": "0.1.0", "files": ["report.html"]})");
  write(dir / "sweep" / "report" / "report.html", "<html></html>");
  const auto again = run_cli(sweep);
  CHECK(again.code == 0);
  CHECK(has(again.out + again.err, "2 skipped (done before)"));
  CHECK(fs::is_regular_file(dir / "sweep" / "report" / "report.html"));
  fs::remove_all(dir);
}
