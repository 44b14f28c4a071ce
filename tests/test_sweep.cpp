#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/overrides.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "tests/cli_test_util.hpp"

using namespace std::string_literals;
using namespace stalesim;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::slurp;

// Runs `prefix` + the stalesim binary + `args` (shell words) from the source folder.
Outcome shell(const std::string& prefix, const std::string& args) { return run_cli(args, prefix); }

Outcome cli(const std::string& args) { return shell("", args); }

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("stalesim-sweep-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  return d;
}

const std::string kTiny = "scenarios/sweep-tiny.json";
std::string tiny_path() { return std::string(STALESIM_SOURCE_DIR) + "/" + kTiny; }

// The 2x3 grid with 2 seeds of the tests: 12 points.
const std::string kGrid12 = "--grid policy.type=ssp,asp --grid optimizer.lr=0.05,0.1,0.2 --seeds 1..2";

std::vector<std::vector<std::string>> read_csv(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(slurp(p));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    rows.push_back(cells);
  }
  return rows;
}

// Every regular file under `root`, by relative path, with its bytes.
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = slurp(e.path());
  return files;
}

std::map<std::string, fs::file_time_type> mtimes(const fs::path& root) {
  std::map<std::string, fs::file_time_type> t;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().filename() != "sweep.csv" && e.path().filename() != "sweep.json")
      t[fs::relative(e.path(), root).string()] = fs::last_write_time(e.path());
  return t;
}

size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  REQUIRE_MESSAGE(it != header.end(), "no column " << name);
  return static_cast<size_t>(it - header.begin());
}

}  // namespace

TEST_CASE(
    "a 2x3 grid with 2 seeds runs 12 points, each in its own folder, with a sweep.csv row read from it") {
  const fs::path d = fresh_dir("grid12");
  const auto r = cli("sweep " + kTiny + " " + kGrid12 + " --quiet --out " + d.string());
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("sweep-tiny: 12 points in 12 folders: 12 run, 0 skipped (done before), 0 failed") !=
        std::string::npos);
  CHECK(fs::exists(d / "sweep.json"));
  const auto rows = read_csv(d / "sweep.csv");
  REQUIRE(rows.size() == 13);
  const std::vector<std::string> header{"policy.type",
                                        "optimizer.lr",
                                        "seed",
                                        "folder",
                                        "status",
                                        "result_hash",
                                        "virtual_time_s",
                                        "server_updates",
                                        "final_test_accuracy",
                                        "final_test_loss",
                                        "time_to_target_s",
                                        "staleness_mean",
                                        "staleness_max",
                                        "missed_updates_mean",
                                        "bytes_push",
                                        "bytes_pull",
                                        "mean_wait_fraction",
                                        "quality_metric",
                                        "quality"};
  CHECK(rows[0] == header);
  // Grid order: the first --grid varies slowest, the seeds fastest.
  const std::vector<std::vector<std::string>> params{
      {"ssp", "0.05", "1"}, {"ssp", "0.05", "2"}, {"ssp", "0.1", "1"},  {"ssp", "0.1", "2"},
      {"ssp", "0.2", "1"},  {"ssp", "0.2", "2"},  {"asp", "0.05", "1"}, {"asp", "0.05", "2"},
      {"asp", "0.1", "1"},  {"asp", "0.1", "2"},  {"asp", "0.2", "1"},  {"asp", "0.2", "2"}};
  std::vector<std::string> folders;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    CAPTURE(i);
    REQUIRE(row.size() == header.size());
    CHECK(std::vector<std::string>(row.begin(), row.begin() + 3) == params[i - 1]);
    const std::string folder = row[column(header, "folder")];
    // Readable: the swept values, the seed, and 8 hex digits of the scenario's hash.
    CHECK(folder.starts_with("type=" + row[0] + "_lr=" + row[1] + "_seed=" + row[2] + "-"));
    CHECK(folder.size() == folder.find_last_of('-') + 9);
    CHECK(row[column(header, "quality_metric")] == "test_accuracy");
    CHECK(row[column(header, "quality")] == row[column(header, "final_test_accuracy")]);
    folders.push_back(folder);
    CHECK(row[column(header, "status")] == "completed");
    for (const char* f : {"summary.json", "metrics.csv", "staleness.csv", "done"})
      CHECK(fs::exists(d / folder / f));
    const json s = json::parse(slurp(d / folder / "summary.json"));
    CHECK(s["manifest"]["scenario"]["policy"]["type"] == row[0]);
    CHECK(s["manifest"]["scenario"]["optimizer"]["lr"].get<double>() == std::stod(row[1]));
    CHECK(s["manifest"]["seed"].get<uint64_t>() == std::stoull(row[2]));
    CHECK(row[column(header, "result_hash")] == s["result_hash"].get<std::string>());
    CHECK(slurp(d / folder / "done") == s["result_hash"].get<std::string>() + "\n");
    CHECK(row[column(header, "server_updates")] == "120");
    CHECK(std::stoll(row[column(header, "server_updates")]) == s["server_updates"].get<int64_t>());
    CHECK(std::stod(row[column(header, "final_test_accuracy")]) == s["final"]["test_accuracy"].get<double>());
    CHECK(std::stod(row[column(header, "final_test_loss")]) == s["final"]["test_loss"].get<double>());
    CHECK(std::stod(row[column(header, "virtual_time_s")]) == s["virtual_time_s"].get<double>());
    CHECK(std::stoll(row[column(header, "staleness_max")]) == s["staleness"]["max"].get<int64_t>());
    CHECK(std::stoll(row[column(header, "bytes_push")]) == s["bytes"]["push"].get<int64_t>());
    CHECK(s["time_to_target_s"].is_null());  // no target: an empty cell
    CHECK(row[column(header, "time_to_target_s")] == "");
    double wait = 0;
    for (const auto& w : s["workers"]) wait += w["wait_fraction"].get<double>();
    CHECK(std::stod(row[column(header, "mean_wait_fraction")]) == doctest::Approx(wait / 3.0));
    if (row[0] == "asp") CHECK(row[column(header, "mean_wait_fraction")] == "0");
  }
  std::sort(folders.begin(), folders.end());
  CHECK(std::unique(folders.begin(), folders.end()) == folders.end());

  // A point's folder holds exactly the files of a lone run of the same scenario.
  const fs::path lone = fresh_dir("lone");
  const auto one =
      cli("run " + kTiny + " --set policy.type=asp --set optimizer.lr=0.1 --seed 2 --quiet --out " +
          lone.string());
  REQUIRE_MESSAGE(one.code == 0, one.err);
  CHECK(tree(lone) == tree(d / rows[10][column(header, "folder")]));
  fs::remove_all(lone);
  fs::remove_all(d);
}

TEST_CASE(
    "rerunning a finished sweep runs nothing, touches no point file, and reruns only unfinished points") {
  const fs::path d = fresh_dir("resume");
  const std::string cmd = "sweep " + kTiny + " " + kGrid12 + " --quiet --out " + d.string();
  const auto first = cli(cmd);
  REQUIRE_MESSAGE(first.code == 0, first.err);
  const auto before = mtimes(d);
  const std::string csv = slurp(d / "sweep.csv");
  REQUIRE(before.size() == 12 * stalesim::testing::plain_run_files().size());

  const auto again = cli(cmd);
  REQUIRE_MESSAGE(again.code == 0, again.err);
  CHECK(again.out.find("12 points in 12 folders: 0 run, 12 skipped (done before), 0 failed") !=
        std::string::npos);
  CHECK(mtimes(d) == before);
  CHECK(slurp(d / "sweep.csv") == csv);

  // A point without its done marker (an interrupted run) runs again, to the same bytes.
  const std::string folder = read_csv(d / "sweep.csv")[5][3];
  const std::string metrics = slurp(d / folder / "metrics.csv");
  fs::remove(d / folder / "done");
  const auto partial = cli(cmd);
  REQUIRE_MESSAGE(partial.code == 0, partial.err);
  CHECK(partial.out.find("1 run, 11 skipped") != std::string::npos);
  CHECK(slurp(d / folder / "metrics.csv") == metrics);
  CHECK(fs::exists(d / folder / "done"));
  CHECK(slurp(d / "sweep.csv") == csv);

  // A wider grid over the same base reuses the folder: only the new points run.
  const auto wider =
      cli("sweep " + kTiny +
          " --grid policy.type=ssp,asp --grid optimizer.lr=0.05,0.1,0.2,0.4 --seeds 1..2 --quiet "
          "--out " +
          d.string());
  REQUIRE_MESSAGE(wider.code == 0, wider.err);
  CHECK(wider.out.find("16 points in 16 folders: 4 run, 12 skipped") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("a sweep folder holding something else is refused, with or without --force, and left intact") {
  const fs::path d = fresh_dir("refuse");
  fs::create_directories(d);
  std::ofstream(d / "keep.txt") << "mine";
  const auto r = cli("sweep " + kTiny + " --grid optimizer.lr=0.1,0.2 --quiet --out " + d.string());
  CHECK(r.code == 2);
  CHECK(
      r.err.find("exists, is not empty and is not a sweep folder: it holds 'keep.txt', which no stalesim run "
                 "or sweep writes") != std::string::npos);
  CHECK(slurp(d / "keep.txt") == "mine");

  const auto forced =
      cli("sweep " + kTiny + " --grid optimizer.lr=0.1,0.2 --quiet --force --out " + d.string());
  CHECK(forced.code == 2);
  CHECK(slurp(d / "keep.txt") == "mine");
  fs::remove(d / "keep.txt");
  REQUIRE(cli("sweep " + kTiny + " --grid optimizer.lr=0.1,0.2 --quiet --out " + d.string()).code == 0);

  // Another base scenario (here: another --set) is another sweep.
  const auto other = cli("sweep " + kTiny +
                         " --set cluster.jitter.sigma=0.2 --grid optimizer.lr=0.1,0.2 --quiet "
                         "--out " +
                         d.string());
  CHECK(other.code == 2);
  CHECK(other.err.find(
            "holds a sweep of another base scenario (/cluster/jitter/sigma: 0.05 in the sweep already in " +
            d.string() + ", 0.2 in this one)") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("a sweep with --jobs 2 writes every point's files and sweep.csv byte for byte as --jobs 1") {
  const fs::path a = fresh_dir("jobs1"), b = fresh_dir("jobs2");
  const auto r1 = cli("sweep " + kTiny + " " + kGrid12 + " --jobs 1 --quiet --out " + a.string());
  REQUIRE_MESSAGE(r1.code == 0, r1.err);
  const auto r2 = cli("sweep " + kTiny + " " + kGrid12 + " --jobs 2 --quiet --out " + b.string());
  REQUIRE_MESSAGE(r2.code == 0, r2.err);
  const auto ta = tree(a), tb = tree(b);
  CHECK(ta.size() ==
        12 * stalesim::testing::plain_run_files().size() + 2);  // 12 run folders, sweep.json, sweep.csv
  CHECK(ta == tb);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("mpirun -n 2 splits a sweep over ranks, with files byte for byte as --jobs 1") {
#ifndef STALESIM_MPIEXEC
  MESSAGE("skipped: this build has no MPI (configure with -DSTALESIM_MPI=ON and OpenMPI installed)");
  return;
#else
  if (!mpi_built()) {
    MESSAGE("skipped: this build has no MPI (configure with -DSTALESIM_MPI=ON and OpenMPI installed)");
    return;
  }
  const fs::path a = fresh_dir("mpi-ref"), b = fresh_dir("mpi");
  const auto r1 = cli("sweep " + kTiny + " " + kGrid12 + " --quiet --out " + a.string());
  REQUIRE_MESSAGE(r1.code == 0, r1.err);
  // CI runs as root, which OpenMPI refuses unless told; 2 ranks may exceed the cores.
  const std::string mpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 '"s +
                             STALESIM_MPIEXEC + "' --oversubscribe -n 2 ";
  const auto r2 = shell(mpirun, "sweep " + kTiny + " " + kGrid12 + " --jobs 2 --quiet --out " + b.string());
  REQUIRE_MESSAGE(r2.code == 0, r2.out << r2.err);
  CHECK(r2.out.find("12 points in 12 folders: 12 run, 0 skipped") != std::string::npos);
  CHECK(std::count(r2.out.begin(), r2.out.end(), '\n') == 1);  // rank 0 alone reports
  CHECK(tree(a) == tree(b));
  // Resuming under mpirun: nothing runs.
  const auto r3 = shell(mpirun, "sweep " + kTiny + " " + kGrid12 + " --quiet --out " + b.string());
  REQUIRE_MESSAGE(r3.code == 0, r3.out << r3.err);
  CHECK(r3.out.find("0 run, 12 skipped") != std::string::npos);
  CHECK(tree(a) == tree(b));
  fs::remove_all(a);
  fs::remove_all(b);
#endif
}

TEST_CASE("a grid value that makes a point invalid is bad input: exit 2 before any point runs") {
  const fs::path d = fresh_dir("invalid");
  const auto r = cli("sweep " + kTiny + " --grid optimizer.lr=0.1,-1 --quiet --out " + d.string());
  CHECK(r.code == 2);
  CHECK(r.err.find("1 of 2 sweep points are invalid; nothing was run") != std::string::npos);
  CHECK(r.err.find("point 1 (optimizer.lr=-1, seed=1): " + kTiny +
                   " (after --grid optimizer.lr=-1): /optimizer/lr: expected a number > 0, got -1") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(d));
}

TEST_CASE("a sweep whose points fit alone but not --jobs at once is refused, and runs with fewer jobs") {
  const fs::path d = fresh_dir("memory-jobs");
  // About 73 and 45 MiB alone (one gradient thread), 110 MiB together in one process (measured
  // peak of --jobs 2: 98 MiB): under 100 MiB each fits, both at once do not.
  const std::string sweep =
      "sweep " + kTiny +
      " --grid 'model.hidden=[2000,2000],[1500,1500]' --set stop.max_updates=6 --threads 1 "
      "--quiet --out " +
      d.string();
  const auto r = shell("STALESIM_MEMORY_LIMIT=100M ", sweep + " --jobs 2");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.err.find(kTiny + ": --jobs 2: the 2 largest sweep points run at once need about ") !=
                    std::string::npos,
                r.err);
  CHECK(r.err.find("but only 100 MiB is available (STALESIM_MEMORY_LIMIT); nothing was run") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(d));
  const auto one = shell("STALESIM_MEMORY_LIMIT=100M ", sweep + " --jobs 1");
  CHECK_MESSAGE(one.code == 0, one.err);
  CHECK(fs::exists(d / "sweep.csv"));
  fs::remove_all(d);
}

TEST_CASE("a sweep whose last point exceeds the memory limit is refused before any point runs") {
  const fs::path d = fresh_dir("memory");
  // Points 0 and 1 (about 8 MiB each) fit in 20 MiB; point 2 (two layers of 2000: 4 million
  // parameters, a 16 MB snapshot per worker and the server's) does not.
  const std::string sweep =
      "sweep " + kTiny +
      " --grid 'model.hidden=[8],[16],[2000,2000]' --set stop.max_updates=6 --quiet --out " + d.string();
  const auto r = shell("STALESIM_MEMORY_LIMIT=20M ", sweep);
  CHECK(r.code == 2);
  CHECK_MESSAGE(
      r.err.find(kTiny + ": 1 of 3 sweep points need more memory than is available; nothing was run") !=
          std::string::npos,
      r.err);
  CHECK(r.err.find("point 2 (model.hidden=[2000,2000], seed=1), folder hidden=2000-2000-") !=
        std::string::npos);
  CHECK(r.err.find("needs about ") != std::string::npos);
  CHECK(r.err.find("but only 20 MiB is available (STALESIM_MEMORY_LIMIT)") != std::string::npos);
  CHECK(r.err.find("point 0") == std::string::npos);
  CHECK(r.err.find("point 1") == std::string::npos);
  CHECK_FALSE(fs::exists(d));  // no sweep.json, no point folder
  // The same sweep with every point under the limit runs; a bad limit is bad input.
  const auto fits = shell("STALESIM_MEMORY_LIMIT=1G ", sweep);
  CHECK_MESSAGE(fits.code == 0, fits.err);
  CHECK(fs::exists(d / "sweep.csv"));
  fs::remove_all(d);
  const auto bad = shell("STALESIM_MEMORY_LIMIT=lots ", sweep);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("STALESIM_MEMORY_LIMIT='lots': expected a size in bytes") != std::string::npos);
  CHECK_FALSE(fs::exists(d));
#ifdef STALESIM_MPIEXEC
  if (mpi_built()) {  // under mpirun: rank 0 refuses, every rank exits 2, nothing is written
    const std::string mpirun =
        "STALESIM_MEMORY_LIMIT=20M OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
        "timeout 300 '"s +
        STALESIM_MPIEXEC + "' --oversubscribe -n 2 ";
    const auto m = shell(mpirun, sweep);
    CHECK(m.code == 2);
    CHECK(m.err.find("1 of 3 sweep points need more memory than is available") != std::string::npos);
    CHECK_FALSE(fs::exists(d));
  }
#endif
}

TEST_CASE(
    "a failed point does not stop the others: it is reported, its row says failed, and the sweep exits 3") {
  const fs::path d = fresh_dir("failed");
  // batch 100000 does not fit a worker's shard: it fails at run time.
  const auto r =
      cli("sweep " + kTiny +
          " --grid optimizer.batch_size=10,100000 --grid optimizer.lr=0.1,0.2 --quiet --out " + d.string());
  CHECK(r.code == 3);
  CHECK(r.err.find("point 2 (optimizer.batch_size=100000, optimizer.lr=0.1, seed=1): ") != std::string::npos);
  CHECK(r.err.find(kTiny + ": /optimizer/batch_size: 100000 is larger than worker 0's shard") !=
        std::string::npos);
  CHECK(r.out.find("4 points in 4 folders: 2 run, 0 skipped (done before), 2 failed") != std::string::npos);
  const auto rows = read_csv(d / "sweep.csv");
  REQUIRE(rows.size() == 5);
  for (size_t i = 1; i <= 2; ++i) {
    CAPTURE(i);
    CHECK(rows[i][4] == "completed");
    CHECK(fs::exists(d / rows[i][3] / "done"));
  }
  for (size_t i = 3; i <= 4; ++i) {
    CAPTURE(i);
    CHECK(rows[i][3] == "");  // no folder
    CHECK(rows[i][4] == "failed");
    CHECK(rows[i][5] == "");
  }
  CHECK(rows[3][0] == "100000");  // the value as given
  fs::remove_all(d);
}

TEST_CASE("bad sweep arguments exit 2 with a message naming the argument and what is allowed") {
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"--zip optimizer.lr=0.1,0.2 --zip optimizer.batch_size=8,16,32",
       "--zip lists must have equal lengths: optimizer.lr has 2 values, optimizer.batch_size has 3"},
      {"--grid policy.staleness",
       "--grid 'policy.staleness': expected PATH=V1,V2,... (e.g. --grid policy.staleness=0,1,2)"},
      {"--grid policy.stalenes=1,2",
       "--grid 'policy.stalenes=1,2': unknown scenario field 'policy.stalenes'; did you mean "
       "'policy.staleness'?"},
      {"--grid optimizer.lr=", "--grid 'optimizer.lr=': expected at least one value after '='"},
      {"--seeds 5..1", "--seeds '5..1': the range is empty (5 > 1); expected A..B or a comma-separated list"},
      {"--seeds one,two", "--seeds 'one,two': 'one' is not an integer >= 0"},
      {"--seeds 1,2,1", "--seeds '1,2,1': seed 1 is listed twice"},
      {"--grid seed=1,2", "--grid 'seed=1,2': sweep seeds with --seeds"},
      {"--grid optimizer.lr=0.1 --set optimizer.lr=0.2",
       "--grid optimizer.lr: also given by --set optimizer.lr=0.2"},
      {"--jobs 0", "--jobs: expected an integer >= 1, got 0"},
      {"--zip policy.type=ssp,ssp --zip policy.staleness=1,1",
       "--zip: the point (policy.type=ssp, policy.staleness=1) is listed twice"},
      {"--set policy.type=asp --grid policy.staleness=1,2", "--grid policy.staleness: applies to ssp"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = cli("sweep " + kTiny + " " + c.args + " --quiet --out " + fresh_dir("bad").string());
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, r.err);
    CHECK_FALSE(fs::exists(fresh_dir("bad")));  // nothing written
  }
  const auto missing = cli("sweep no/such/file.json --grid optimizer.lr=0.1,0.2");
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no/such/file.json: cannot read") != std::string::npos);
  const auto help = cli("sweep --help");
  CHECK(help.code == 0);
  CHECK(help.out.find("Usage: stalesim sweep SCENARIO") != std::string::npos);
}

TEST_CASE("sweep keys and seeds parse with clear errors") {
  CHECK(parse_sweep_key("model.hidden=[100],[200,100]", "--grid") ==
        SweepKey{"model.hidden", {"[100]", "[200,100]"}});
  CHECK(parse_sweep_key("cluster.workers.0.count=1,2", "--zip") ==
        SweepKey{"cluster.workers.0.count", {"1", "2"}});
  CHECK(parse_sweep_key("name=\"a,b\",c", "--grid").values == std::vector<std::string>{"\"a,b\"", "c"});
  CHECK_THROWS_WITH_AS(parse_sweep_key("policy.staleness=1,,2", "--grid"),
                       "--grid 'policy.staleness=1,,2': value 2 of 3 is empty", SweepError);
  CHECK_THROWS_WITH_AS(parse_sweep_key("policy.type=ssp,ssp", "--grid"),
                       "--grid 'policy.type=ssp,ssp': value 'ssp' is listed twice", SweepError);
  // A zip list may repeat a value: its tuples with the other zip lists are what must differ.
  CHECK(parse_sweep_key("policy.type=ssp,ssp", "--zip").values == std::vector<std::string>{"ssp", "ssp"});
  CHECK_THROWS_WITH_AS(parse_sweep_key("=1,2", "--zip"),
                       "--zip '=1,2': expected PATH=V1,V2,... (e.g. --zip policy.staleness=0,1,2)",
                       SweepError);
  CHECK_THROWS_WITH_AS(
      parse_sweep_key("cluster.workerz.0.count=1", "--grid"),
      "--grid 'cluster.workerz.0.count=1': unknown scenario field 'cluster.workerz.0.count'; did "
      "you mean 'cluster.workers.N.count'? ('stalesim fields' lists every field)",
      SweepError);
  CHECK(parse_seeds("1..5") == std::vector<uint64_t>{1, 2, 3, 4, 5});
  CHECK(parse_seeds("1,3,9") == std::vector<uint64_t>{1, 3, 9});
  CHECK(parse_seeds("7") == std::vector<uint64_t>{7});
  CHECK_THROWS_WITH_AS(
      parse_seeds("1..x"),
      "--seeds '1..x': 'x' is not an integer >= 0; expected A..B or a comma-separated list of "
      "integers >= 0 (e.g. --seeds 1..5 or --seeds 1,3,9)",
      SweepError);
  CHECK_THROWS_AS(parse_seeds("-1"), SweepError);
  CHECK_THROWS_AS(parse_seeds(""), SweepError);
  CHECK_THROWS_AS(parse_seeds("0..99999999999"), SweepError);
}

TEST_CASE("zipped keys advance together, vary faster than the grid and slower than the seeds") {
  SweepSpec spec;
  spec.scenario_path = tiny_path();
  spec.grid = {{"policy.type", {"ssp", "bsp"}}};
  spec.zip = {{"optimizer.lr", {"0.1", "0.2"}}, {"optimizer.batch_size", {"5", "10"}}};
  spec.seeds = {3, 4};
  const SweepPlan plan = plan_sweep(spec);
  REQUIRE(plan.points.size() == 8);
  CHECK(plan.key_columns == std::vector<std::string>{"policy.type", "optimizer.lr", "optimizer.batch_size"});
  const auto& p7 = plan.points[7];  // bsp, second zip step, seed 4
  CHECK(p7.overrides == std::vector<Override>{
                            {"policy.type", "bsp"}, {"optimizer.lr", "0.2"}, {"optimizer.batch_size", "10"}});
  REQUIRE(p7.scenario);
  CHECK(p7.scenario->seed == 4);
  CHECK(p7.scenario->optimizer.lr == 0.2);
  CHECK(p7.scenario->optimizer.batch_size == 10);
  CHECK(p7.scenario->policy.type == PolicyType::kBsp);
  CHECK(plan.points[2].overrides[1].value == "0.2");
  CHECK(plan.points[2].seed == 3u);
  CHECK(plan.runs.size() == 8);
  CHECK(describe_point(plan, 7) == "policy.type=bsp, optimizer.lr=0.2, optimizer.batch_size=10, seed=4");
}

TEST_CASE(
    "a swept value that does not apply to a point is left out of it, and identical points share a folder") {
  SweepSpec spec;
  spec.scenario_path = tiny_path();
  spec.grid = {{"policy.staleness", {"0", "2"}}, {"policy.type", {"ssp", "asp"}}};
  const SweepPlan plan = plan_sweep(spec);
  REQUIRE(plan.points.size() == 4);
  for (const auto& p : plan.points) REQUIRE_MESSAGE(p.scenario, p.error);
  CHECK(plan.points[0].dropped.empty());
  CHECK(plan.points[1].dropped == std::vector<std::string>{"policy.staleness"});
  CHECK(plan.points[1].scenario->policy.type == PolicyType::kAsp);
  CHECK(plan.points[2].scenario->policy.staleness == 2);
  CHECK(plan.points[1].folder == plan.points[3].folder);  // asp with "staleness 0" and "2" is one scenario
  CHECK(plan.points[0].folder != plan.points[2].folder);
  CHECK(plan.runs.size() == 3);
  REQUIRE(plan.notes.size() == 1);
  CHECK(plan.notes[0].starts_with("policy.staleness is left out of 2 of 4 points: it applies to ssp"));
  CHECK(plan.notes[0].find("only (policy.type); their policy.staleness cells are empty") !=
        std::string::npos);

  // The sweep.csv cell of a left-out value is empty; the shared folder's row is repeated.
  std::vector<RunRecord> records(plan.runs.size());
  const std::string csv = sweep_csv(plan, records);
  CHECK(csv.find("\n,asp,1,") != std::string::npos);
  CHECK(csv.find("\n0,ssp,1,") != std::string::npos);

  // A key that applies to no point at all is a mistake.
  spec.grid = {{"policy.staleness", {"0", "2"}}};
  spec.sets = {{"policy.type", "asp"}};
  CHECK_THROWS_AS(plan_sweep(spec), SweepError);
}

TEST_CASE(
    "sweep.csv cells are flat (an array's items joined by semicolons) and a failed point's cells are empty") {
  SweepSpec spec;
  spec.scenario_path = tiny_path();
  spec.grid = {{"model.hidden", {"[4]", "[4,3]", "[0]"}}};
  const SweepPlan plan = plan_sweep(spec);
  REQUIRE(plan.points.size() == 3);
  CHECK(plan.points[2].error.find("/model/hidden/0: expected an integer in [1, 65536], got 0") !=
        std::string::npos);
  std::vector<RunRecord> records(plan.runs.size());
  records[1].status = SweepStatus::kCompleted;
  records[1].wrote = true;
  records[1].cells = std::vector<std::string>(14, "x");
  const std::string csv = sweep_csv(plan, records);
  std::istringstream in(csv);
  std::string header, row0, row1, row2;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  std::getline(in, row2);
  CHECK(header.starts_with("model.hidden,seed,folder,status,result_hash,"));
  CHECK(row0 == "4,1,,not_run,,,,,,,,,,,,,,");
  CHECK(row1 == "4;3,1," + plan.points[1].folder + ",completed,x,x,x,x,x,x,x,x,x,x,x,x,x,x");
  CHECK(row2 == "0,1,,failed,,,,,,,,,,,,,,");
  CHECK(plan.points[1].folder.starts_with("hidden=4;3-") == false);  // ';' is not kept in folder names
  CHECK(plan.points[1].folder.starts_with("hidden=4-3-"));
  CHECK(point_status(plan, records, 2) == SweepStatus::kFailed);
  CHECK(run_record_from_json(to_json(records[1])) == records[1]);
}

TEST_CASE("a seed sweep of a generated dataset (mf ratings) gives each point the lone run's data and hash") {
  const fs::path d = fresh_dir("mfseeds"), lone = fresh_dir("mflone");
  const std::string base = "scenarios/workloads/mf.json --set stop.virtual_time_s=0.3";
  const auto sw = cli("sweep " + base + " --seeds 1,2 --quiet --out " + d.string());
  REQUIRE_MESSAGE(sw.code == 0, sw.err);
  const auto rows = read_csv(d / "sweep.csv");
  REQUIRE(rows.size() == 3);
  const auto r2 = cli("run " + base + " --seed 2 --quiet --out " + lone.string());
  REQUIRE_MESSAGE(r2.code == 0, r2.err);
  const std::string hash2 = nlohmann::json::parse(slurp(lone / "summary.json"))["result_hash"];
  CHECK(rows[2][0] == "2");
  CHECK(rows[2][3] == hash2);  // before the fix: seed 1's ratings, another hash
  CHECK(rows[2][3] != rows[1][3]);
  fs::remove_all(d);
  fs::remove_all(lone);
}
