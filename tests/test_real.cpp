// The real mode (sim/real/real_run.hpp) end to end, under mpirun: a 1-server + 2-worker run
// compared with its simulation, and every error path (CTest label "mpi"; built only with MPI).
// Each real run lasts about 2 s of wall-clock time plus mpirun's start. CTest runs them one at a
// time (RUN_SERIAL): their wall-clock figures should not compete with the rest of the suite.

#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/analysis/compare.hpp"
#include "tests/cli_test_util.hpp"

using namespace stalesim;
using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;
namespace fs = std::filesystem;

namespace {

const std::string kScenario = "scenarios/real/two-workers.json --set stop.virtual_time_s=2";

std::string mpirun_prefix(int ranks) {
  std::string p = "mpirun -n " + std::to_string(ranks) + " --oversubscribe --bind-to none ";
  if (::geteuid() == 0) p += "--allow-run-as-root ";
  return "OMPI_MCA_mpi_yield_when_idle=1 " + p;
}

nlohmann::json summary_of(const fs::path& dir) { return nlohmann::json::parse(slurp(dir / "summary.json")); }

// Processes whose command line names `marker` (a scratch path unique to one test). The pattern
// brackets its first character so that it does not match the shell that runs pgrep.
int processes_naming(const std::string& marker) {
  const std::string cmd =
      "pgrep -f -- '[" + marker.substr(0, 1) + "]" + marker.substr(1) + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0 ? 1 : 0;
}

}  // namespace

TEST_CASE("a real 2-worker SSP run agrees with its simulation within loose bounds") {
  Scratch t("agree", "real");
  const Outcome sim =
      run_cli("run " + kScenario + " --quiet --record gradients --out " + (t.path / "sim").string());
  REQUIRE_MESSAGE(sim.code == 0, sim.err);
  const Outcome real = run_cli("real " + kScenario + " --quiet --out " + (t.path / "real").string());
  REQUIRE_MESSAGE(real.code == 0, real.err);
  CHECK(real.out.find("real-two-workers: real run completed (virtual_time)") != std::string::npos);
  for (const char* f :
       {"summary.json", "metrics.csv", "staleness.csv", "gradients.csv", "timing.csv", "done"}) {
    CAPTURE(f);
    CHECK(fs::exists(t.path / "real" / f));
  }
  const auto s = summary_of(t.path / "real");
  CHECK(s["manifest"]["real"]["real"] == true);
  CHECK(s["manifest"]["real"]["bit_reproducible"] == false);
  CHECK(s["manifest"]["real"]["ranks"] == 3);
  // SSP(1): no gradient read parameters more than one clock ahead of the slowest worker.
  CHECK(s["max_clock_gap"].get<int64_t>() <= 1);
  CHECK(s["staleness"]["max"].get<int64_t>() <= 1);
  const ComparedRun a = read_compared_run((t.path / "sim").string());
  const ComparedRun b = read_compared_run((t.path / "real").string());
  const auto c = compare_runs(a, {b});
  INFO(compare_table(c));
  // The staleness dynamics: the same distribution of staleness.
  CHECK(c["staleness_ks"].get<double>() < 0.3);
  // Emulated timing is never faster than the simulation (the padding reaches the profile's time,
  // messages are held until the network's), and the machine's own delays (a loaded machine wakes
  // sleeping ranks late) stay within a factor of two for this test, which shares its cores.
  for (const char* group : {"gtx1060", "gtx1080ti"}) {
    CAPTURE(group);
    const double err = c["groups"][group]["iteration_time_rel_error"]["mean"].get<double>();
    CHECK(err > -0.05);
    CHECK(err < 1.0);
  }
  CHECK(c["updates_rel_error"].get<double>() < 0.05);
  CHECK(c["updates_rel_error"].get<double>() > -0.5);
  // timing.csv: one row per applied gradient, with the padding to the emulated 10 and 30 ms.
  const std::string timing = slurp(t.path / "real" / "timing.csv");
  CHECK(
      timing.starts_with("worker,iteration,granted_s,compute_s,padding_s,wait_s,communicate_s,applied_s\n"));
  CHECK(static_cast<int64_t>(std::count(timing.begin(), timing.end(), '\n')) - 1 ==
        s["server_updates"].get<int64_t>());
  // Compute plus padding: the emulated iteration (iteration_ms 10 and 30, lognormal jitter of
  // mean 1 and sigma 0.05), whatever the machine's load.
  double busy[2] = {0, 0};
  int64_t rows[2] = {0, 0};
  std::istringstream lines(timing);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    int w = 0;
    long long it = 0;
    double granted = 0, compute = 0, padding = 0;
    REQUIRE(std::sscanf(line.c_str(), "%d,%lld,%lf,%lf,%lf", &w, &it, &granted, &compute, &padding) == 5);
    busy[w] += compute + padding;
    ++rows[w];
  }
  REQUIRE(rows[0] > 10);
  REQUIRE(rows[1] > 10);
  CHECK(busy[0] / static_cast<double>(rows[0]) == doctest::Approx(0.010).epsilon(0.1));
  CHECK(busy[1] / static_cast<double>(rows[1]) == doctest::Approx(0.030).epsilon(0.1));
}

TEST_CASE("a real run under an explicit mpirun with the right rank count, and compare's files") {
  Scratch t("explicit", "real");
  const Outcome real = run_cli(
      "real " + kScenario + " --set stop.max_updates=40 --out " + (t.path / "r").string(), mpirun_prefix(3));
  REQUIRE_MESSAGE(real.code == 0, real.err);
  const auto s = summary_of(t.path / "r");
  CHECK(s["server_updates"] == 40);
  CHECK(s["stop_reason"] == "max_updates");
  const Outcome sim =
      run_cli("run " + kScenario + " --quiet --set stop.max_updates=40 --out " + (t.path / "s").string());
  REQUIRE(sim.code == 0);
  const std::string json = (t.path / "compare.json").string();
  const Outcome cmp =
      run_cli("compare " + (t.path / "s").string() + " " + (t.path / "r").string() + " --json " + json);
  REQUIRE_MESSAGE(cmp.code == 0, cmp.err);
  CHECK(cmp.out.find("| updates by t |") != std::string::npos);
  const auto c = nlohmann::json::parse(slurp(json));
  CHECK(c.contains("iteration_time_rel_error"));
  CHECK(c["staleness_ks"].is_number());
}

TEST_CASE("the real mode's errors: wrong rank count, no mpirun, a refused scenario (exit 2)") {
  Scratch t("errors", "real");
  SUBCASE("wrong rank count") {
    const Outcome r = run_cli("real " + kScenario + " --out " + (t.path / "r").string(), mpirun_prefix(2));
    CHECK(r.code == 2);
    CHECK(r.err.find("takes 3 MPI ranks (1 server + 2 workers); mpirun started 2") != std::string::npos);
    CHECK_FALSE(fs::exists(t.path / "r"));
  }
  SUBCASE("no mpirun on PATH") {
    const Outcome r =
        run_cli("real " + kScenario + " --out " + (t.path / "r").string(), "PATH=/nonexistent ");
    CHECK(r.code == 2);
    CHECK(r.err.find("mpirun was not found on PATH") != std::string::npos);
    CHECK_FALSE(fs::exists(t.path / "r"));
  }
  SUBCASE("a policy the real mode does not run") {
    const Outcome r =
        run_cli("real " + kScenario + " --set policy.type=essp --out " + (t.path / "r").string(),
                "PATH=/nonexistent ");
    CHECK(r.code == 2);
    CHECK(r.err.find("the real mode cannot run this scenario: /policy/type: \"essp\"") != std::string::npos);
  }
  SUBCASE("a learning rule the real mode does not run") {
    const Outcome r =
        run_cli("real " + kScenario + " --set optimizer.rule=bfasgd --out " + (t.path / "r").string());
    CHECK(r.code == 2);
    CHECK(r.err.find("/optimizer/rule: \"bfasgd\" skips pushes and fetches") != std::string::npos);
  }
  SUBCASE("a bad --timing") {
    const Outcome r = run_cli("real " + kScenario + " --timing fast --out " + (t.path / "r").string());
    CHECK(r.code == 2);
    CHECK(r.err.find("--timing 'fast': allowed: emulated, measured") != std::string::npos);
  }
}

TEST_CASE("a worker rank that dies mid-run: exit 3, no rank left behind") {
  Scratch t("death", "real");
  const std::string out = (t.path / "r").string();
  const Outcome r =
      run_cli("real " + kScenario + " --quiet --out " + out, "STALESIM_REAL_INJECT_FAULT=1:5:kill ");
  CHECK(r.code == 3);
  INFO(r.err);
  CHECK_FALSE(fs::exists(t.path / "r" / "done"));
  CHECK(processes_naming(out) == 0);
}

TEST_CASE("a worker rank that hangs: the watchdog writes what was measured and ends every rank (exit 3)") {
  Scratch t("hang", "real");
  const std::string out = (t.path / "r").string();
  const Outcome r = run_cli("real " + kScenario + " --quiet --watchdog-s 1 --out " + out,
                            "STALESIM_REAL_INJECT_FAULT=0:5:stop ");
  CHECK(r.code == 3);
  CHECK(r.err.find("rank_silent: worker 0 (rank 1) sent nothing for 1 s") != std::string::npos);
  REQUIRE(fs::exists(t.path / "r" / "summary.json"));
  CHECK_FALSE(fs::exists(t.path / "r" / "done"));
  const auto s = summary_of(t.path / "r");
  CHECK(s["status"] == "interrupted");
  CHECK(s["stop_reason"] == "rank_silent");
  CHECK(s["server_updates"].get<int64_t>() >= 5);
  CHECK(processes_naming(out) == 0);
}
