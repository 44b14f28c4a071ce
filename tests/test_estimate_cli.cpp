// The estimate where the commands print it (issue 32 point 6): `validate` measures this machine
// once and caches the rate (sim/estimate/calibration.hpp, tools/cmd_estimate.cpp), `sweep` prints
// the whole grid's estimate before it starts, and `reproduce --out DIR` keeps the rerun.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/estimate/calibration.hpp"
#include "sim/scenario/load.hpp"
#include "tests/cli_test_util.hpp"

namespace fs = std::filesystem;
using stalesim::testing::q;
using stalesim::testing::run_cli;
using stalesim::testing::slurp;

namespace {

fs::path temp(const std::string& what) {
  const fs::path p = fs::temp_directory_path() / ("stalesim-est-" + std::to_string(::getpid()) + "-" + what);
  fs::remove_all(p);
  return p;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a measured rate rescales the estimate's wall time, and says so") {
  const auto s =
      stalesim::load_scenario_file(std::string(STALESIM_SOURCE_DIR) + "/scenarios/sweep-tiny.json");
  const stalesim::RunEstimate assumed = stalesim::estimate_run(s);
  REQUIRE(assumed.math_gflop > 0);
  REQUIRE(assumed.events > 0);
  CHECK(assumed.wall_s == doctest::Approx(assumed.math_gflop / assumed.gflops + assumed.events * 0.5e-6));
  CHECK(has(assumed.describe(), "an assumed"));
  stalesim::RunEstimate measured = assumed;
  stalesim::MachineRate r;
  r.speed = 2;     // math twice the assumed rate
  r.event_us = 2;  // events four times dearer than assumed
  stalesim::use_machine_rate(measured, r, "measured here");
  CHECK(measured.gflops == doctest::Approx(2 * assumed.gflops));
  CHECK(measured.wall_s == doctest::Approx(assumed.math_gflop / assumed.gflops / 2 + assumed.events * 2e-6));
  CHECK(has(measured.describe(), "a measured"));
  CHECK(has(measured.describe(), "measured here"));
  CHECK(has(measured.one_line(), "(measured rate)"));
}

TEST_CASE("validate measures this machine once, caches the rate, and measures again when the cache is bad") {
  const fs::path cache = temp("cache");
  const std::string env = "XDG_CACHE_HOME=" + q(cache.string()) + " ";
  const fs::path file = cache / "stalesim" / "machine-rate.json";
  const auto first = run_cli("validate scenarios/sweep-tiny.json --threads 1", env);
  CAPTURE(first.err);
  REQUIRE(first.code == 0);
  CHECK(has(first.err, "estimate: measuring this machine"));
  CHECK(has(first.err, "math at a measured"));
  CHECK(has(first.err, "measured on this machine just now, cached in " + file.string()));
  REQUIRE(fs::is_regular_file(file));
  const auto rate = nlohmann::json::parse(slurp(file));
  CHECK(rate["format"] == "stalesim machine rate");
  CHECK(rate["speed"].get<double>() > 1e-3);
  CHECK(rate["speed"].get<double>() <= 1e3);
  CHECK(rate["event_us"].get<double>() > 0);
  std::string why;
  CHECK(stalesim::read_machine_rate(file.string(), why).has_value());

  // The second validate reads the cache: no measuring.
  const auto second = run_cli("validate scenarios/sweep-tiny.json", env);
  CAPTURE(second.err);
  CHECK(second.code == 0);
  CHECK_FALSE(has(second.err, "measuring this machine"));
  CHECK(has(second.err, "measured on this machine 20"));
  CHECK(has(second.err, "cached in " + file.string()));

  // A broken cache, or one from another build, is said and replaced.
  std::ofstream(file, std::ios::trunc) << "{";
  auto third = run_cli("validate scenarios/sweep-tiny.json --threads 1", env);
  CHECK(third.code == 0);
  CHECK(has(third.err, file.string() + ": invalid JSON"));
  CHECK(has(third.err, "measuring again"));
  auto j = nlohmann::json::parse(slurp(file));
  j["stalesim_version"] = "0.0.0-other";
  std::ofstream(file, std::ios::trunc) << j.dump();
  third = run_cli("validate scenarios/sweep-tiny.json --threads 1", env);
  CHECK(has(third.err, "measured by stalesim 0.0.0-other"));
  j = nlohmann::json::parse(slurp(file));
  j["speed"] = -1;
  std::ofstream(file, std::ios::trunc) << j.dump();
  CHECK_FALSE(stalesim::read_machine_rate(file.string(), why).has_value());
  CHECK(why == "/speed: expected a number in (0.0005, 1000]");
  // --remeasure measures whatever the cache holds.
  const auto again = run_cli("validate scenarios/sweep-tiny.json --threads 1 --remeasure", env);
  CHECK(has(again.err, "estimate: measuring this machine"));
  CHECK(stalesim::read_machine_rate(file.string(), why).has_value());  // the bad cache replaced

  // Without XDG_CACHE_HOME the cache is under $HOME/.cache.
  const fs::path home = temp("home");
  fs::create_directories(home);
  const auto h = run_cli("validate scenarios/sweep-tiny.json --threads 1",
                         "env -u XDG_CACHE_HOME HOME=" + q(home.string()) + " ");
  CHECK(h.code == 0);
  CHECK(fs::is_regular_file(home / ".cache" / "stalesim" / "machine-rate.json"));
  fs::remove_all(cache);
  fs::remove_all(home);
}

TEST_CASE("sweep prints the whole grid's estimate before it starts") {
  const fs::path out = temp("sweep"), cache = temp("sweep-cache");
  const auto r = run_cli(
      "sweep scenarios/sweep-tiny.json --grid policy.type=ssp,asp --seeds 1..2 --out " + q(out.string()),
      "XDG_CACHE_HOME=" + q(cache.string()) + " ");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.err, "estimate: the grid: 4 runs (4 points"));
  CHECK(has(r.err, "of virtual time in all"));
  CHECK(has(r.err, "rates assumed, not measured"));
  CHECK(has(r.err, "peak memory about"));
  // The estimate comes before the first point's report and the wall time.
  CHECK(r.err.find("estimate: the grid") < r.err.find("wall time "));
  // With a cached rate the sweep uses it (and never measures itself).
  REQUIRE(
      run_cli("validate scenarios/sweep-tiny.json --threads 1", "XDG_CACHE_HOME=" + q(cache.string()) + " ")
          .code == 0);
  const auto again = run_cli(
      "sweep scenarios/sweep-tiny.json --grid policy.type=ssp,asp --seeds 1..2 --out " + q(out.string()),
      "XDG_CACHE_HOME=" + q(cache.string()) + " ");
  CHECK(has(again.err, "rates measured on this machine"));
  CHECK_FALSE(has(again.err, "measuring this machine"));
  const auto quiet =
      run_cli("sweep scenarios/sweep-tiny.json --seeds 1..2 --quiet --out " + q(out.string() + "-q"));
  CHECK_FALSE(has(quiet.err, "estimate:"));
  fs::remove_all(out);
  fs::remove_all(out.string() + "-q");
  fs::remove_all(cache);
}

TEST_CASE("reproduce --out keeps the rerun under run --out's rules") {
  const fs::path run = temp("run"), kept = temp("kept"), other = temp("other");
  REQUIRE(run_cli("run scenarios/sweep-tiny.json --quiet --out " + q(run.string())).code == 0);
  const auto r = run_cli("reproduce --quiet " + q(run.string()) + " --out " + q(kept.string()));
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "MATCH"));
  CHECK(has(r.err, "kept the rerun in " + kept.string() + "/"));
  for (const char* f : {"summary.json", "metrics.csv", "staleness.csv", "done"}) {
    CAPTURE(f);
    CHECK(slurp(kept / f) == slurp(run / f));
  }
  // An occupied DIR needs --force; with it, a run folder is replaced.
  const auto occupied = run_cli("reproduce --quiet " + q(run.string()) + " --out " + q(kept.string()));
  CHECK(occupied.code == 2);
  CHECK(run_cli("reproduce --quiet " + q(run.string()) + " --out " + q(kept.string()) + " --force").code ==
        0);
  // A folder that is not a run is never replaced; nor is the folder reproduced, nor one above it.
  fs::create_directories(other);
  std::ofstream(other / "notes.txt") << "mine\n";
  CHECK(run_cli("reproduce --quiet " + q(run.string()) + " --out " + q(other.string()) + " --force").code ==
        2);
  CHECK(slurp(other / "notes.txt") == "mine\n");
  const auto self =
      run_cli("reproduce --quiet " + q(run.string()) + " --out " + q(run.string()) + " --force");
  CHECK(self.code == 2);
  CHECK(fs::is_regular_file(run / "done"));
  CHECK(run_cli("reproduce --quiet " + q(run.string()) + " --force").code == 2);  // --force needs --out
  for (const auto& d : {run, kept, other}) fs::remove_all(d);
}
