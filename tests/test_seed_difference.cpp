// The comparison over seeds (sim/analysis/seed_difference.hpp, `summarize --compare`) against the
// claim table's implementation (plots/papers_claims.py: rule, se_of, mean) on recorded numbers:
// the DSSP paper's baseline sweep (plots/figures/papers-claims.json, "dssp_baseline", 5 seeds per
// policy), ASP against every other policy, time to target (misses counted at the run's end, as
// papers_claims.py's censored()) and updates to the target.

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "sim/analysis/seed_difference.hpp"
#include "sim/analysis/summarize.hpp"
#include "sim/output/outputs.hpp"

using namespace stalesim;
using namespace stalesim::testing;
using nlohmann::json;

namespace {

json recorded_baseline() {
  std::ifstream f(std::string(STALESIM_SOURCE_DIR) + "/plots/figures/papers-claims.json");
  REQUIRE(f.good());
  return json::parse(f).at("dssp_baseline");
}

std::vector<double> censored(const json& side) {
  std::vector<double> out;
  for (const auto& t : side.at("time"))
    out.push_back(t.is_null() ? side.at("length").get<double>() : t.get<double>());
  return out;
}

// papers_claims.py's answer for d = mean(a) - mean(b) of the recorded lists: {"d", "se", "verdict"}.
json python_point(const std::string& a, const std::string& b, const std::string& what) {
  const std::string script = fmt::format(
      "import json, sys; sys.path.insert(0, \"plots\"); import papers_claims as pc\n"
      "base = json.load(open(\"plots/figures/papers-claims.json\"))[\"dssp_baseline\"]\n"
      "pick = (lambda s: pc.censored(s)) if \"{2}\" == \"time\" else (lambda s: s[\"{2}\"])\n"
      "a, b = pick(base[\"{0}\"]), pick(base[\"{1}\"])\n"
      "p = pc.point(\"x\", pc.mean(a) - pc.mean(b), *pc.se_of(a, b))\n"
      "print(json.dumps({{\"d\": p[\"d\"], \"se\": p[\"se\"], \"df\": p[\"df\"], \"verdict\": "
      "p[\"verdict\"]}}))\n",
      a, b, what);
  // papers_claims.py imports the plots' module, which needs matplotlib: tools/find-python's python3
  // (the papers_claims CTest needs it the same way).
  const std::string cmd =
      std::string("cd '") + STALESIM_SOURCE_DIR + "' && py=$(tools/find-python) && \"$py\" -c " + q(script);
  std::FILE* f = ::popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f)) out += buf;
  REQUIRE(::pclose(f) == 0);
  return json::parse(out);
}

std::string our_word(const std::string& python_verdict) {
  return python_verdict == "reproduced"     ? "A higher"
         : python_verdict == "contradicted" ? "A lower"
                                            : "inconclusive";
}

}  // namespace

TEST_CASE(
    "the difference over seeds is the paper claims' rule: d, its standard error and a symmetric verdict") {
  const SeedDifference s = seed_difference({1, 2, 3}, {5, 6, 7});
  CHECK(s.d == doctest::Approx(-4));
  REQUIRE(s.se);
  CHECK(*s.se == doctest::Approx(std::sqrt(1.0 / 3 + 1.0 / 3)));
  CHECK(s.verdict == "A lower");
  CHECK(seed_difference({5, 6, 7}, {1, 2, 3}).verdict == "A higher");  // swapping swaps the verdict
  CHECK(seed_difference({1, 2, 3}, {1.5, 2.5, 3.5}).verdict == "inconclusive");
  const SeedDifference one = seed_difference({1}, {5, 6, 7});  // one seed: no standard error
  CHECK_FALSE(one.se);
  CHECK(one.verdict == "inconclusive");
}

TEST_CASE(
    "summarize --compare's arithmetic gives what papers_claims.py gives on the recorded DSSP baseline") {
  const json base = recorded_baseline();
  for (const std::string other : {"bsp", "bsp per-clock", "ssp(3)", "dssp(3)", "dssp(3) unbounded"}) {
    for (const std::string what : {"time", "updates"}) {
      CAPTURE(other);
      CAPTURE(what);
      std::vector<double> a, b;
      if (what == "time") {
        a = censored(base.at("asp"));
        b = censored(base.at(other));
      } else {
        a = base.at("asp").at(what).get<std::vector<double>>();
        b = base.at(other).at(what).get<std::vector<double>>();
      }
      const SeedDifference ours = seed_difference(a, b);
      const json py = python_point("asp", other, what);
      CHECK(ours.d == doctest::Approx(py.at("d").get<double>()).epsilon(1e-12));
      REQUIRE(ours.se);
      CHECK(*ours.se == doctest::Approx(py.at("se").get<double>()).epsilon(1e-12));
      if (py.at("df").is_null()) {
        CHECK_FALSE(ours.df);
      } else {
        REQUIRE(ours.df);
        CHECK(*ours.df == doctest::Approx(py.at("df").get<double>()).epsilon(1e-12));
      }
      CHECK(ours.verdict == our_word(py.at("verdict").get<std::string>()));
    }
  }
}

TEST_CASE("the t tail is papers_claims.py's: Welch's degrees of freedom, not the normal, at 5 seeds a side") {
  CHECK(t_sf(2.306, 8.0) == doctest::Approx(0.025).epsilon(2e-3));  // the t table's 97.5% point at 8 df
  CHECK(t_sf(-1.0, 3.0) == doctest::Approx(1 - t_sf(1.0, 3.0)).epsilon(1e-12));
  CHECK(t_sf(2.0, std::nullopt) == doctest::Approx(kVerdictLevel).epsilon(1e-12));
  // d = 2.1 SE: beyond two standard errors, but not beyond the level at 8 degrees of freedom.
  CHECK(difference_verdict(2.1, 1.0, 8.0) == "inconclusive");
  CHECK(difference_verdict(2.1, 1.0, std::nullopt) == "A higher");
  CHECK(difference_verdict(-3.0, 1.0, 8.0) == "A lower");
}

TEST_CASE(
    "summarize --compare on a sweep of the recorded numbers: difference, SE, seeds, misses and verdict") {
  namespace fs = std::filesystem;
  const json base = recorded_baseline();
  const fs::path dir = fs::temp_directory_path() / fmt::format("stalesim-compare-sweep-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string csv =
      "policy.type,seed,folder,status,quality_metric,quality,final_test_accuracy,final_test_loss,time_to_"
      "target_s,"
      "virtual_time_s,server_updates,staleness_mean,staleness_max,missed_updates_mean,bytes_push,bytes_pull,"
      "mean_wait_fraction\n";
  for (const std::string policy : {"asp", "ssp(3)"}) {
    const json& side = base.at(policy);
    for (size_t i = 0; i < side.at("time").size(); ++i) {
      const std::string folder = fmt::format("{}-{}", policy == "asp" ? "asp" : "ssp3", i);
      fs::create_directories(dir / folder);
      std::ofstream(dir / folder / "summary.json")
          << R"({"manifest": {"scenario": {"stop": {"target_accuracy": 0.8}}}})";
      const json& t = side.at("time")[i];
      csv += fmt::format("{},{},{},completed,test_accuracy,0.8,0.8,1,{},{},{},0,0,0,0,0,0\n", policy, i + 1,
                         folder, t.is_null() ? std::string() : fmt::format("{}", t.get<double>()),
                         side.at("length").get<double>(), side.at("updates")[i].get<double>());
    }
  }
  std::ofstream(dir / "sweep.csv") << csv;
  const SweepComparison c = compare_sweep(dir.string(), "policy.type", "asp", "ssp(3)");
  const json& metrics = c.json.at("contexts").at(0).at("metrics");
  const json py_time = python_point("asp", "ssp(3)", "time");
  const json py_updates = python_point("asp", "ssp(3)", "updates");
  REQUIRE(metrics.size() == 3);
  CHECK(metrics[0].at("metric") == "time_to_target_s");
  CHECK(metrics[0].at("n_a") == 5);
  CHECK(metrics[0].at("n_b") == 5);
  CHECK(metrics[0].at("d").get<double>() == doctest::Approx(py_time.at("d").get<double>()).epsilon(1e-12));
  CHECK(metrics[0].at("se").get<double>() == doctest::Approx(py_time.at("se").get<double>()).epsilon(1e-12));
  CHECK(metrics[0].at("verdict") == our_word(py_time.at("verdict").get<std::string>()));
  CHECK(metrics[1].at("metric") == "server_updates");
  CHECK(metrics[1].at("d").get<double>() == doctest::Approx(py_updates.at("d").get<double>()).epsilon(1e-12));
  CHECK(metrics[1].at("verdict") == our_word(py_updates.at("verdict").get<std::string>()));
  CHECK(has(c.table, "asp lower"));  // ASP reaches the target sooner: 30 s against 44 s
  CHECK_THROWS_WITH_AS(
      compare_sweep(dir.string(), "policy", "asp", "ssp(3)"),
      doctest::Contains("no column 'policy' to compare by (the sweep's columns: policy.type)"), IoError);
  CHECK_THROWS_WITH_AS(compare_sweep(dir.string(), "policy.type", "asp", "bsp"),
                       doctest::Contains("'bsp' is not a value of policy.type (its values: asp, ssp(3))"),
                       IoError);
  fs::remove_all(dir);
}
