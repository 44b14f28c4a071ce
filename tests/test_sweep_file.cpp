// Sweep files, reproduce SWEEP_DIR and summarize (issue 20 points 3 and 4; REFERENCE.md "Sweep files").
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/analysis/summarize.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_expr.hpp"
#include "sim/sweep/sweep_spec.hpp"
#include "tests/cli_test_util.hpp"

using namespace stalesim;
namespace fs = std::filesystem;
using nlohmann::json;
using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;

namespace {

const std::string kFile = "scenarios/sweep-tiny.sweep.json";

using stalesim::testing::q;

// Every regular file under `root` (hidden ones included), by relative path, with its bytes.
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = slurp(e.path());
  return files;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

size_t col(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  REQUIRE_MESSAGE(it != header.end(), "no column " << name);
  return static_cast<size_t>(it - header.begin());
}

// The steps one point's folder takes to write into a fresh folder (OutputGuard::checkpoint calls),
// counted by lone runs killed at ever later steps: the first step at which one survives, minus one.
int steps_per_run(const Scratch& s) {
  for (int k = 1; k < 64; ++k) {
    const fs::path probe = s.path / ("probe-" + std::to_string(k));
    const Outcome o = run_cli("run scenarios/sweep-tiny.json --quiet --out " + q(probe.string()),
                              "STALESIM_INJECT_KILL_AT_STEP=" + std::to_string(k) + " ");
    if (o.code == 0) return k - 1;
  }
  return -1;
}

}  // namespace

TEST_CASE(
    "a sweep file with 2 axes x 3 seeds runs, resumes after a kill, reproduces point by point, and "
    "summarises "
    "over seeds with bands, and --jobs 1 and 2 write the same bytes") {
  Scratch s("file");
  const fs::path a = s.path / "a", b = s.path / "b";

  // Killed (SIGKILL, as by a power cut) while writing the 5th point: 4 points are finished.
  const int steps = steps_per_run(s);
  REQUIRE(steps > 1);
  const Outcome killed =
      run_cli("sweep " + kFile + " --quiet --out " + q(a.string()),
              "STALESIM_INJECT_KILL_AT_STEP=" + std::to_string(4 * steps + steps / 2) + " ");
  CHECK(killed.code != 0);
  CHECK_FALSE(fs::exists(a / "sweep.csv"));
  size_t finished = 0;
  for (const auto& e : fs::directory_iterator(a))
    if (!e.path().filename().string().starts_with(".")) finished += fs::exists(e.path() / "done") ? 1 : 0;
  CHECK(finished == 4);

  // The same command resumes: the 4 finished points are read back, the other 11 run.
  const Outcome resumed = run_cli("sweep " + kFile + " --quiet --out " + q(a.string()));
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.out.find("sweep-tiny: 15 points in 15 folders: 11 run, 4 skipped (done before), 0 failed") !=
        std::string::npos);

  // Uninterrupted, two points at a time: the same bytes, file for file (hidden leftovers of the kill
  // included: there must be none).
  const Outcome two = run_cli("sweep " + kFile + " --quiet --jobs 2 --out " + q(b.string()));
  REQUIRE(two.code == 0);
  const auto ta = tree(a), tb = tree(b);
  CHECK(ta.size() ==
        15 * stalesim::testing::plain_run_files().size() + 2);  // 15 run folders, sweep.json, sweep.csv
  CHECK(ta == tb);

  // sweep.csv: a column per axis and derived field, flat values, readable folder names, quality.
  const auto rows = parse_csv(slurp(a / "sweep.csv"));
  REQUIRE(rows.size() == 16);
  const auto& h = rows[0];
  CHECK(std::vector<std::string>(h.begin(), h.begin() + 6) ==
        std::vector<std::string>{"policy.type", "optimizer.batch_size", "lr", "global_batch", "seed",
                                 "folder"});
  CHECK(h[h.size() - 2] == "quality_metric");
  CHECK(h.back() == "quality");
  // Grid order: policy.type slowest, then batch size, seeds fastest; ASP at batch 20 is skipped.
  CHECK(rows[1][col(h, "folder")].starts_with("type=ssp_batch_size=5_seed=1-"));
  CHECK(rows[15][col(h, "folder")].starts_with("type=asp_batch_size=10_seed=3-"));
  CHECK(rows[1][col(h, "lr")] == "0.05");
  CHECK(rows[1][col(h, "global_batch")] == "15");
  for (size_t r = 1; r < rows.size(); ++r) {
    CHECK(rows[r][col(h, "status")] == "completed");
    CHECK(rows[r][col(h, "quality_metric")] == "test_accuracy");
    CHECK(rows[r][col(h, "quality")] == rows[r][col(h, "final_test_accuracy")]);
    const json sc =
        json::parse(slurp(a / rows[r][col(h, "folder")] / "summary.json"))["manifest"]["scenario"];
    CHECK(sc["optimizer"]["batch_size"].dump() == rows[r][col(h, "optimizer.batch_size")]);
    CHECK(std::abs(sc["optimizer"]["lr"].get<double>() - 0.01 * sc["optimizer"]["batch_size"].get<double>()) <
          1e-15);
    const bool skipped_point = sc["policy"]["type"] == "asp" && sc["optimizer"]["batch_size"] == 20;
    CHECK_FALSE(skipped_point);
  }

  // reproduce SWEEP_DIR: every point reruns to the same bytes; a changed file is named.
  const Outcome rep = run_cli("reproduce " + q(a.string()) + " --quiet");
  CHECK(rep.code == 0);
  CHECK(count(rep.out, "MATCH: point ") == 15);
  CHECK(rep.out.find("15 of 15 folders match (15 points), 0 mismatch, 0 points not run") !=
        std::string::npos);
  const fs::path tampered = b / rows[7][col(h, "folder")] / "metrics.csv";
  std::string m = slurp(tampered);
  m.insert(m.find('\n') + 1, "0,0,9,9,9,0,0\n");
  std::ofstream(tampered, std::ios::binary) << m;
  const Outcome bad = run_cli("reproduce " + q(b.string()) + " --quiet");
  CHECK(bad.code == 3);
  CHECK(
      bad.out.find(
          "MISMATCH: point 6 (policy.type=ssp, optimizer.batch_size=20, lr=0.2, global_batch=60, seed=1): " +
          rows[7][col(h, "folder")] + "/metrics.csv: first difference at line 2") != std::string::npos);
  CHECK(bad.out.find("14 of 15 folders match") != std::string::npos);

  // summarize: 5 groups of 3 seeds; the figures are those of the seeds' rows.
  const Outcome sum = run_cli("summarize " + q(a.string()));
  INFO(sum.err);
  REQUIRE(sum.code == 0);
  CHECK(sum.out.find("15 points in 5 groups over seeds (15 with a result)") != std::string::npos);
  CHECK(sum.out.find("test_accuracy") != std::string::npos);
  const auto srows = parse_csv(slurp(a / "sweep-summary.csv"));
  REQUIRE(srows.size() == 6);
  const auto& sh = srows[0];
  for (size_t g = 1; g < srows.size(); ++g) {
    CHECK(srows[g][col(sh, "seeds")] == "3");
    CHECK(srows[g][col(sh, "quality_n")] == "3");
    std::vector<double> seeds;
    for (size_t r = 1; r < rows.size(); ++r)
      if (rows[r][0] == srows[g][0] && rows[r][1] == srows[g][1])
        seeds.push_back(std::stod(rows[r][col(h, "quality")]));
    REQUIRE(seeds.size() == 3);
    const double mean = (seeds[0] + seeds[1] + seeds[2]) / 3;
    double sq = 0;
    for (double x : seeds) sq += (x - mean) * (x - mean);
    CHECK(std::stod(srows[g][col(sh, "quality_mean")]) == doctest::Approx(mean).epsilon(1e-12));
    CHECK(std::stod(srows[g][col(sh, "quality_std")]) == doctest::Approx(std::sqrt(sq / 2)).epsilon(1e-9));
    CHECK(std::stod(srows[g][col(sh, "quality_min")]) == *std::min_element(seeds.begin(), seeds.end()));
    CHECK(std::stod(srows[g][col(sh, "quality_max")]) == *std::max_element(seeds.begin(), seeds.end()));
  }
  // curves.csv: per group and evaluation time, the band of the seeds' test loss.
  const auto crows = parse_csv(slurp(a / "curves.csv"));
  REQUIRE(crows.size() > 6);
  const auto& ch = crows[0];
  const std::string first_folder = rows[1][col(h, "folder")];
  const auto m1 = parse_csv(slurp(a / first_folder / "metrics.csv"));
  // The first group's row at the first point's second evaluation time: its mean over 3 seeds.
  const std::string t = m1[2][0];
  bool seen = false;
  for (size_t r = 1; r < crows.size(); ++r) {
    const double lo = std::stod(crows[r][col(ch, "test_loss_min")]),
                 hi = std::stod(crows[r][col(ch, "test_loss_max")]);
    const double mean = std::stod(crows[r][col(ch, "test_loss_mean")]);
    CHECK(lo <= mean);
    CHECK(mean <= hi);
    if (crows[r][0] == "ssp" && crows[r][1] == "5" && crows[r][col(ch, "virtual_time_s")] == t) {
      seen = true;
      CHECK(crows[r][col(ch, "seeds")] == "3");
      double sum3 = 0;
      for (size_t k = 1; k <= 3; ++k)
        sum3 += std::stod(parse_csv(slurp(a / rows[k][col(h, "folder")] / "metrics.csv"))[2][2]);
      CHECK(mean == doctest::Approx(sum3 / 3).epsilon(1e-12));
    }
  }
  CHECK(seen);
  // Summarising twice gives the same bytes.
  const std::string once = slurp(a / "curves.csv");
  REQUIRE(run_cli("summarize " + q(a.string()) + " --quiet").code == 0);
  CHECK(slurp(a / "curves.csv") == once);
}

TEST_CASE(
    "summarize never hides a missed target: 'k of n' reached, the mean over those, and a censored mean") {
  Scratch s("missed-target");
  // Three seeds without a target: the best test accuracy each reaches.
  const fs::path probe = s.path / "probe", a = s.path / "a";
  REQUIRE(run_cli("sweep scenarios/sweep-tiny.json --seeds 1..3 --quiet --out " + q(probe.string())).code ==
          0);
  const auto prows = parse_csv(slurp(probe / "sweep.csv"));
  REQUIRE(prows.size() == 4);
  std::vector<double> best;
  for (size_t r = 1; r < prows.size(); ++r) {
    const auto m = parse_csv(slurp(probe / prows[r][col(prows[0], "folder")] / "metrics.csv"));
    double top = 0;
    for (size_t i = 1; i < m.size(); ++i)
      if (!m[i][col(m[0], "test_accuracy")].empty())
        top = std::max(top, std::stod(m[i][col(m[0], "test_accuracy")]));
    best.push_back(top);
  }
  const auto [lo, hi] = std::minmax_element(best.begin(), best.end());
  REQUIRE_MESSAGE(*lo < *hi, "the seeds reach the same best accuracy: no target splits them");
  // A target between the worst and the best seed's best: at least one seed reaches it, one misses.
  const double target = (*lo + *hi) / 2;
  const size_t want_reached =
      static_cast<size_t>(std::count_if(best.begin(), best.end(), [&](double b) { return b >= target; }));
  REQUIRE(run_cli("sweep scenarios/sweep-tiny.json --seeds 1..3 --quiet --set stop.target_accuracy=" +
                  fmt::format("{}", target) + " --out " + q(a.string()))
              .code == 0);
  const auto rows = parse_csv(slurp(a / "sweep.csv"));
  const auto& h = rows[0];
  double reached_sum = 0, all_sum = 0;
  size_t reached = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const std::string& t = rows[r][col(h, "time_to_target_s")];
    if (!t.empty()) {
      ++reached;
      reached_sum += std::stod(t);
    }
    all_sum += t.empty() ? std::stod(rows[r][col(h, "virtual_time_s")]) : std::stod(t);
  }
  REQUIRE(reached == want_reached);

  const Outcome sum = run_cli("summarize " + q(a.string()));
  INFO(sum.out);
  REQUIRE(sum.code == 0);
  CHECK(sum.out.find(fmt::format("{} of 3: ", reached)) != std::string::npos);
  CHECK(sum.out.find("3 of 3") == std::string::npos);
  CHECK(sum.out.find(fmt::format("(all ≥ {:.4g})", all_sum / 3)) != std::string::npos);
  CHECK(sum.out.find(fmt::format("{} of them missed the target", 3 - reached)) != std::string::npos);
  CHECK(sum.out.find("a lower bound") != std::string::npos);
  const auto srows = parse_csv(slurp(a / "sweep-summary.csv"));
  REQUIRE(srows.size() == 2);
  const auto& sh = srows[0];
  CHECK(srows[1][col(sh, "target_reached")] == std::to_string(reached));
  CHECK(srows[1][col(sh, "target_missed")] == std::to_string(3 - reached));
  CHECK(std::stod(srows[1][col(sh, "time_to_target_s_mean")]) == doctest::Approx(reached_sum / reached));
  CHECK(std::stod(srows[1][col(sh, "time_to_target_s_censored_mean")]) == doctest::Approx(all_sum / 3));

  // Without a target, the time-to-target cells say nothing and no miss is counted.
  const Outcome none = run_cli("summarize " + q(probe.string()));
  CHECK(none.out.find("missed the target") == std::string::npos);
  CHECK(parse_csv(slurp(probe / "sweep-summary.csv"))[1][col(sh, "target_reached")].empty());
}

TEST_CASE("sweep file errors name the file, the JSON path and what is allowed, and nothing runs") {
  Scratch s("file-errors");
  const auto refused = [&](const std::string& body, const std::string& expect) {
    const fs::path f = s.write("bad.sweep.json", body);
    const Outcome o = run_cli("sweep " + q(f.string()) + " --quiet --out " + q((s.path / "out").string()));
    INFO(body);
    INFO(o.err);
    CHECK(o.code == 2);
    CHECK(o.err.find(f.string() + ": " + expect) != std::string::npos);
    CHECK_FALSE(fs::exists(s.path / "out"));
  };
  const std::string sc =
      "\"scenario\": \"" + std::string(STALESIM_SOURCE_DIR) + "/scenarios/sweep-tiny.json\"";
  refused("{" + sc + ", \"gird\": {}}", "/gird: unknown key; did you mean 'grid'?");
  refused(
      "{" + sc + ", \"grid\": {\"policy.stalenes\": [1, 2]}}",
      "/grid/policy.stalenes: unknown scenario field 'policy.stalenes'; did you mean 'policy.staleness'?");
  refused("{" + sc + ", \"grid\": {\"policy.staleness\": []}}",
          "/grid/policy.staleness: expected a non-empty array");
  refused("{" + sc + ", \"grid\": {\"policy.staleness\": [1, 1]}}",
          "/grid/policy.staleness/1: the value 1 is listed twice");
  refused("{" + sc + ", \"zip\": {\"optimizer.lr\": [0.1, 0.2], \"optimizer.batch_size\": [5]}}",
          "/zip/optimizer.batch_size: zip lists must have equal lengths");
  refused("{" + sc + ", \"seeds\": [1, -2]}", "/seeds: -2 is not an integer >= 0");
  refused("{" + sc + ", \"derived\": {\"x\": {\"expr\": \"2 * (optimizer.lr\"}}}",
          "/derived/x/expr: '2 * (optimizer.lr': at character");
  refused("{" + sc + ", \"derived\": {\"x\": {\"expr\": \"2 * optimizer.l\"}}}",
          "/derived/x/expr: '2 * optimizer.l': unknown name 'optimizer.l' (a name is seed, a derived field");
  refused("{" + sc + ", \"derived\": {\"x\": {\"exp\": \"1\"}}}",
          "/derived/x/exp: unknown key; did you mean 'expr'?");
  refused("{" + sc +
              ", \"grid\": {\"optimizer.lr\": [0.1]}, \"derived\": {\"x\": {\"path\": \"optimizer.lr\", "
              "\"expr\": \"1\"}}}",
          "/derived/x/path: 'optimizer.lr' is already set or swept in this file");
  refused("{" + sc +
              ", \"grid\": {\"optimizer.batch_size\": [5, 10]}, \"constraints\": [\"optimizer.batch_size\"]}",
          "/constraints/0: 'optimizer.batch_size' is 5, not true or false");
  refused("{" + sc +
              ", \"grid\": {\"optimizer.batch_size\": [5, 10]}, \"constraints\": [\"optimizer.batch_size > "
              "99\"]}",
          "the constraints skip all 2 points: nothing to run");
  refused("{\"grid\": {}}", "/scenario: missing");
  refused("{" + sc + ", \"set\": {\"stop.max_updates\": -1}}",
          "");  // the loader's message, with the file's path
  // --grid with a sweep file: one place says what is swept.
  const Outcome both =
      run_cli("sweep " + kFile + " --grid optimizer.lr=0.1 --out " + q((s.path / "o").string()));
  CHECK(both.code == 2);
  CHECK(both.err.find("--grid: " + kFile + " is a sweep file") != std::string::npos);
}

TEST_CASE("a sweep file with an oversized last point is refused, naming the file, point and folder") {
  Scratch s("file-memory");
  const fs::path f =
      s.write("big.sweep.json", "{\"scenario\": \"" + std::string(STALESIM_SOURCE_DIR) +
                                    "/scenarios/sweep-tiny.json\", \"grid\": "
                                    "{\"model.hidden\": [[8], [2000, 2000]]}, \"seeds\": [1, 2]}");
  const Outcome o = run_cli("sweep " + q(f.string()) + " --quiet --out " + q((s.path / "out").string()),
                            "STALESIM_MEMORY_LIMIT=20M ");
  INFO(o.err);
  CHECK(o.code == 2);
  CHECK(
      o.err.find(f.string() + ": 2 of 4 sweep points need more memory than is available; nothing was run") !=
      std::string::npos);
  CHECK(o.err.find("point 2 (model.hidden=[2000,2000], seed=1), folder hidden=2000-2000_seed=1-") !=
        std::string::npos);
  CHECK(o.err.find("point 3 (model.hidden=[2000,2000], seed=2), folder hidden=2000-2000_seed=2-") !=
        std::string::npos);
  CHECK(o.err.find("but only 20 MiB is available (STALESIM_MEMORY_LIMIT)") != std::string::npos);
  CHECK_FALSE(fs::exists(s.path / "out"));
}

TEST_CASE("--set is checked after the grid: a field that applies only to some swept values") {
  Scratch s("set-after");
  // policy.range applies to dssp only: on the ssp file alone the --set is invalid, on the dssp point
  // of the grid it is the point's range.
  const Outcome o =
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.type=dssp --set policy.range=4 --quiet --out " +
              q((s.path / "d").string()));
  INFO(o.err);
  REQUIRE(o.code == 0);
  const auto rows = parse_csv(slurp(s.path / "d" / "sweep.csv"));
  REQUIRE(rows.size() == 2);
  const json sc = json::parse(slurp(s.path / "d" / rows[1][2] / "summary.json"))["manifest"]["scenario"];
  CHECK(sc["policy"]["range"] == 4);
  // Where the --set fits no point, every point says why and nothing runs.
  const Outcome none = run_cli(
      "sweep scenarios/sweep-tiny.json --grid policy.type=ssp,asp --set policy.range=4 --quiet --out " +
      q((s.path / "e").string()));
  CHECK(none.code == 2);
  CHECK(none.err.find("2 of 2 sweep points are invalid; nothing was run") != std::string::npos);
  CHECK(none.err.find("--set policy.range=4") != std::string::npos);
  // An unknown field is refused at once, as before.
  const Outcome unknown =
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.type=dssp --set policy.rnge=4 --quiet --out " +
              q((s.path / "f").string()));
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("policy.rnge") != std::string::npos);
}

TEST_CASE("sweep expressions: precedence, names, strings, functions and errors") {
  const auto eval = [](const std::string& text) {
    return Expr::parse(text).eval([](const std::string& n) -> json {
      if (n == "a") return 6;
      if (n == "policy.type") return "ssp";
      if (n == "cluster.workers.0.count") return 2;
      return nullptr;
    });
  };
  CHECK(eval("1 + 2 * 3") == 7.0);
  CHECK(eval("(1 + 2) * 3") == 9.0);
  CHECK(eval("a / 4") == 1.5);
  CHECK(eval("-a + 10 % 4") == -4.0);
  CHECK(eval("2e-3 * 1000") == 2.0);
  CHECK(eval("policy.type == 'ssp' && a > 5") == true);
  CHECK(eval("not (policy.type != \"ssp\") or 1 / 0 > 1") == true);  // || short-circuits
  CHECK(eval("max(1, a, cluster.workers.0.count) + min(3, 2) + pow(2, 3) + floor(2.7) + log2(8)") ==
        6.0 + 2 + 8 + 2 + 3);
  CHECK(eval("missing == null") == true);
  CHECK(Expr::parse("a * cluster.workers.0.count + a").names() ==
        std::vector<std::string>{"a", "cluster.workers.0.count"});
  const auto fails = [&](const std::string& text, const std::string& why) {
    try {
      eval(text);
      FAIL("no error for " << text);
    } catch (const ExprError& e) {
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    }
  };
  fails("1 +", "at character 4: expected a value");
  fails("(1", "expected ')'");
  fails("1 < 2 < 3", "comparisons do not chain");
  fails("'ssp' * 2", "'ssp' is not a number");
  fails("a / (a - 6)", "division by zero");
  fails("sqrt(-1)", "not a finite number");
  fails("foo(1)", "unknown function 'foo'");
  fails("a && true", "6 is not true or false");
  // Values as --set reads them: integral numbers fill integer fields, text stays text.
  CHECK(override_text(json(3.0)) == "3");
  CHECK(override_text(json(0.05)) == "0.05");
  CHECK(override_text(json("asp")) == "asp");
  CHECK(override_text(json("1")) == "\"1\"");
}

TEST_CASE("stalesim schema --sweep lists every key a sweep file may hold, and the shipped example loads") {
  const Outcome o = run_cli("schema --sweep");
  REQUIRE(o.code == 0);
  const json schema = json::parse(o.out);
  std::vector<std::string> keys;
  for (const auto& [k, v] : schema["properties"].items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"comment", "constraints", "derived", "grid", "out", "scenario",
                                         "seeds", "set", "zip"});
  CHECK(schema["additionalProperties"] == false);
  // Every key of the shipped example is in the schema, and the loader accepts it.
  const json example = json::parse(slurp(fs::path(STALESIM_SOURCE_DIR) / kFile));
  for (const auto& [k, v] : example.items()) CHECK(schema["properties"].contains(k));
  std::string out;
  const SweepSpec spec = load_sweep_file(std::string(STALESIM_SOURCE_DIR) + "/" + kFile, &out);
  CHECK(spec.grid.size() == 2);
  CHECK(spec.seeds == std::vector<uint64_t>{1, 2, 3});
  CHECK(out == "results/sweep-tiny-file");
  CHECK(is_sweep_file(std::string(STALESIM_SOURCE_DIR) + "/" + kFile));
  CHECK_FALSE(is_sweep_file(std::string(STALESIM_SOURCE_DIR) + "/scenarios/sweep-tiny.json"));
}
