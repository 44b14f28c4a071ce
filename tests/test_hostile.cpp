// Hostile input through the real binary (issue 18, REFERENCE.md "Safety and errors"): --force never deletes
// what is not a run, a kill at any instant of a replace leaves a complete run, names cannot escape results/,
// durations past int64 nanoseconds are bad input, inputs are read bounded, every integer option is
// range-checked, and sweeps refuse bad grids before running anything.

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_folder.hpp"
#include "tests/cli_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;

namespace {

const std::string kTiny = "tests/golden/tiny/scenario.json";

Outcome cli(const std::string& args, const std::string& env = "") {
  return run_cli(args, env.empty() ? "" : env + " ");
}

using stalesim::testing::q;

// A run folder that is complete: its summary parses, its done marker holds the summary's hash.
bool complete_run(const fs::path& dir) {
  if (!fs::is_regular_file(dir / "done") || !fs::is_regular_file(dir / "summary.json")) return false;
  const json s = json::parse(slurp(dir / "summary.json"), nullptr, false);
  if (s.is_discarded() || !s.contains("result_hash")) return false;
  return slurp(dir / "done") == s["result_hash"].get<std::string>() + "\n" &&
         fs::is_regular_file(dir / "metrics.csv") && fs::is_regular_file(dir / "staleness.csv");
}

std::vector<std::string> hidden_entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with(".")) out.push_back(e.path().filename().string());
  return out;
}

using stalesim::testing::dead_pid;

struct Case {
  std::string args;
  int code;
  std::string fragment;
};

void check_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const Outcome o = cli(c.args);
    CHECK(o.code == c.code);
    CHECK_MESSAGE(o.err.find(c.fragment) != std::string::npos, o.err);
  }
}

}  // namespace

// ---- --force replaces only runs ------------------------------------------------------------

TEST_CASE("--force refuses a folder holding a foreign file, before running, and leaves it intact") {
  Scratch s("foreign");
  const fs::path keep = s.write("v/keep", "precious");
  const Outcome o = cli("run " + kTiny + " --quiet --force --out " + q((s.path / "v").string()));
  CHECK(o.code == 2);
  CHECK(o.err.find("--force replaces only a stalesim run folder or an empty one, and this folder holds "
                   "'keep', which no stalesim run or sweep writes; nothing was deleted") !=
        std::string::npos);
  CHECK(slurp(keep) == "precious");
  CHECK(o.out.empty());  // refused before the run
  CHECK(hidden_entries(s.path).empty());
}

TEST_CASE(
    "without --force a foreign folder is refused with the same reason, and a run folder asks for --force") {
  Scratch s("noforce");
  s.write("v/notes.txt", "x");
  const Outcome o = cli("run " + kTiny + " --quiet --out " + q((s.path / "v").string()));
  CHECK(o.code == 2);
  CHECK(
      o.err.find("exists and is not empty, and --force would not replace it either: it holds 'notes.txt'") !=
      std::string::npos);
  REQUIRE(cli("run " + kTiny + " --quiet --out " + q((s.path / "r").string())).code == 0);
  const Outcome again = cli("run " + kTiny + " --quiet --out " + q((s.path / "r").string()));
  CHECK(again.code == 2);
  CHECK(again.err.find("output folder exists and is not empty (use --force to replace it)") !=
        std::string::npos);
}

TEST_CASE("--force replaces a run folder, and refuses one with an extra file or a subfolder") {
  Scratch s("replace");
  const std::string r = q((s.path / "r").string());
  REQUIRE(cli("run " + kTiny + " --quiet --out " + r).code == 0);
  const Outcome ok = cli("run " + kTiny + " --quiet --force --out " + r + " --set stop.max_updates=60");
  CHECK(ok.code == 0);
  CHECK(complete_run(s.path / "r"));
  CHECK(slurp(s.path / "r" / "summary.json").find("\"max_updates\": 60") != std::string::npos);
  s.write("r/mine.csv", "x");
  const Outcome extra = cli("run " + kTiny + " --quiet --force --out " + r);
  CHECK(extra.code == 2);
  CHECK(extra.err.find("holds 'mine.csv'") != std::string::npos);
  CHECK(fs::exists(s.path / "r" / "mine.csv"));
  fs::remove(s.path / "r" / "mine.csv");
  fs::create_directories(s.path / "r" / "sub");
  s.write("r/sub/data.bin", "x");
  const Outcome sub = cli("run " + kTiny + " --quiet --force --out " + r);
  CHECK(sub.code == 2);
  CHECK(sub.err.find("holds the folder 'sub'") != std::string::npos);
  CHECK(fs::exists(s.path / "r" / "sub" / "data.bin"));
}

TEST_CASE("--force refuses a folder whose summary.json is not a stalesim run's") {
  Scratch s("fakesummary");
  s.write("r/summary.json", "{\"hello\": 1}");
  const Outcome o = cli("run " + kTiny + " --quiet --force --out " + q((s.path / "r").string()));
  CHECK(o.code == 2);
  CHECK(o.err.find("holds a summary.json that is not a stalesim run's") != std::string::npos);
  CHECK(slurp(s.path / "r" / "summary.json") == "{\"hello\": 1}");
}

TEST_CASE("--force never replaces the working directory, the home folder, or a folder above the scenario") {
  Scratch s("protected");
  const fs::path run = s.path / "r";
  REQUIRE(cli("run " + kTiny + " --quiet --out " + q(run.string())).code == 0);
  // The working directory: run from inside the run folder with --out .
  const std::string bin = STALESIM_BINARY;
  const std::string scen = std::string(STALESIM_SOURCE_DIR) + "/" + kTiny;
  const std::string cmd = "cd " + q(run.string()) + " && " + q(bin) + " run " + q(scen) +
                          " --quiet --force --out . >/dev/null 2>" + q((s.path / "err").string()) +
                          " </dev/null";
  const int st = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(st) == 2);
  CHECK(slurp(s.path / "err").find("--force will not replace the working directory") != std::string::npos);
  CHECK(complete_run(run));
  // The home folder.
  const Outcome home =
      cli("run " + kTiny + " --quiet --force --out " + q(run.string()), "HOME=" + q(run.string()));
  CHECK(home.code == 2);
  CHECK(home.err.find("--force will not replace the home folder") != std::string::npos);
  // A run folder that holds the scenario file itself.
  const fs::path inner = s.path / "holder";
  fs::create_directories(inner / "x");
  fs::copy(run, inner / "x", fs::copy_options::recursive);
  fs::copy_file(scen, inner / "x" / "done.json");
  const Outcome above = cli("run " + q((inner / "x" / "done.json").string()) + " --quiet --force --out " +
                            q((inner / "x").string()));
  CHECK(above.code == 2);
  CHECK(above.err.find("--force will not replace a folder that holds") != std::string::npos);
  CHECK(fs::exists(inner / "x" / "done.json"));
}

TEST_CASE("refuse_protected: a filesystem root and a git checkout are never replaced") {
  CHECK_THROWS_WITH_AS(stalesim::refuse_protected("/", "/", {}),
                       doctest::Contains("--force will not replace a filesystem root"), stalesim::IoError);
  Scratch s("git");
  fs::create_directories(s.path / "repo" / ".git");
  CHECK_THROWS_WITH_AS(stalesim::refuse_protected("repo", s.path / "repo", {}),
                       doctest::Contains("--force will not replace a git checkout"), stalesim::IoError);
  CHECK_NOTHROW(stalesim::refuse_protected("other", s.path / "other", {}));
}

TEST_CASE("a run does not replace a sweep folder, and a sweep does not write into a run or foreign folder") {
  Scratch s("kinds");
  const std::string sw = q((s.path / "sw").string());
  REQUIRE(cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + sw).code == 0);
  const Outcome run_into_sweep = cli("run " + kTiny + " --quiet --force --out " + sw);
  CHECK(run_into_sweep.code == 2);
  CHECK(run_into_sweep.err.find("is a sweep folder; a run's --force replaces only a run folder") !=
        std::string::npos);
  const std::string r = q((s.path / "r").string());
  REQUIRE(cli("run " + kTiny + " --quiet --out " + r).code == 0);
  const Outcome sweep_into_run =
      cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --force --out " + r);
  CHECK(sweep_into_run.code == 2);
  CHECK(sweep_into_run.err.find("is a run folder, not a sweep folder") != std::string::npos);
  CHECK(complete_run(s.path / "r"));
  s.write("f/keep", "x");
  const Outcome foreign =
      cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --force --out " +
          q((s.path / "f").string()));
  CHECK(foreign.code == 2);
  CHECK(foreign.err.find("is not a sweep folder: it holds 'keep'") != std::string::npos);
  CHECK(fs::exists(s.path / "f" / "keep"));
}

TEST_CASE(
    "sweep --force deletes nothing before points run: each point is replaced when its new run is written") {
  Scratch s("sweepforce");
  const std::string sw = q((s.path / "sw").string());
  REQUIRE(cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + sw).code == 0);
  std::vector<fs::path> before;
  for (const auto& e : fs::directory_iterator(s.path / "sw"))
    if (e.is_directory()) before.push_back(e.path());
  REQUIRE(before.size() == 2);
  // A --force sweep of another grid: the old points stay until it completes, then go.
  const Outcome o =
      cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=2,3 --quiet --force --out " + sw);
  CHECK(o.code == 0);
  CHECK(o.out.find("2 run, 0 skipped") != std::string::npos);
  size_t folders = 0;
  for (const auto& e : fs::directory_iterator(s.path / "sw"))
    if (e.is_directory()) {
      ++folders;
      CHECK(complete_run(e.path()));
    }
  CHECK(folders == 2);
  for (const auto& b : before) CHECK_FALSE(fs::exists(b));
  // And a --force rerun of the same grid runs every point again.
  const Outcome again =
      cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=2,3 --quiet --force --out " + sw);
  CHECK(again.code == 0);
  CHECK(again.out.find("2 run, 0 skipped") != std::string::npos);
  // A killed point's leftovers inside the sweep folder go when the sweep is next prepared.
  const std::string leftover = ".stalesim-partial-" + std::to_string(dead_pid()) + "-0123456789abcdef";
  s.write("sw/" + leftover + "/run/metrics.csv", "");
  s.write("sw/" + leftover + "/.stalesim-temporary", json{{"kind", "partial"},
                                                          {"pid", std::stol(leftover.substr(18))},
                                                          {"token", "0123456789abcdef"},
                                                          {"target", "p"},
                                                          {"host", stalesim::testing::host_name()}}
                                                         .dump());
  REQUIRE(cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=2,3 --quiet --out " + sw).code == 0);
  CHECK_FALSE(fs::exists(s.path / "sw" / leftover));
}

// ---- Crash-safe replacement -----------------------------------------------------------------

TEST_CASE("a SIGKILL at every step of a --force replace leaves a complete run under the name") {
  Scratch s("kill");
  const fs::path r = s.path / "r";
  REQUIRE(cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  const std::string first = slurp(r / "summary.json");
  // Steps: one per file (summary.json, metrics.csv, staleness.csv, done), swap, swapped, removed
  // (7), and one past.
  const int steps = static_cast<int>(stalesim::testing::plain_run_files().size()) + 3;
  for (int step = 1; step <= steps + 1; ++step) {
    CAPTURE(step);
    const std::string seed = std::to_string(10 + step);
    const Outcome o = cli("run " + kTiny + " --quiet --force --seed " + seed + " --out " + q(r.string()),
                          "STALESIM_INJECT_KILL_AT_STEP=" + std::to_string(step));
    CHECK((o.code == 137 || o.code == 0));  // killed (the shell reports 128 + 9), or past the last step
    CHECK(complete_run(r));
    const std::string now = slurp(r / "summary.json");
    const bool old_run = now == first;
    const bool new_run = now.find("\"seed\": " + seed) != std::string::npos;
    CHECK((old_run || new_run));
    // The next run cleans the killed one's temporaries and installs its own run.
    REQUIRE(cli("run " + kTiny + " --quiet --force --out " + q(r.string())).code == 0);
    CHECK(hidden_entries(s.path).empty());
    CHECK(complete_run(r));
  }
}

TEST_CASE("a SIGKILL at random instants of --force reruns always leaves a complete run") {
  Scratch s("killrandom");
  const fs::path r = s.path / "r";
  REQUIRE(cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  const std::string bin = STALESIM_BINARY;
  // A run of about 80 ms that writes a large gradients.csv: kills land before, during and after
  // the writes and the swap.
  for (int i = 0; i < 14; ++i) {
    CAPTURE(i);
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::chdir(STALESIM_SOURCE_DIR) != 0) ::_exit(99);
      const std::string out = r.string();
      if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) ::_exit(97);
      ::execl(bin.c_str(), bin.c_str(), "run", kTiny.c_str(), "--quiet", "--force", "--record", "gradients",
              "--set", "stop.max_updates=3000", "--out", out.c_str(), static_cast<char*>(nullptr));
      ::_exit(98);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3 + 6 * i));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    CHECK(complete_run(r));
  }
}

// The fallback replace killed between its renames, and which temporaries are ours: test_hostile_round3.

// ---- Signals --------------------------------------------------------------------------------

namespace {
// Starts `stalesim ARGS` (a run long enough to interrupt), sends `sig` once the run catches it and
// `after` has passed, and waits.
Outcome interrupt_run(const std::string& args, int sig, std::chrono::milliseconds after) {
  Scratch io("sig");
  const std::string bin = STALESIM_BINARY;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(STALESIM_SOURCE_DIR) != 0) ::_exit(99);
    const std::string cmd = "exec " + q(bin) + " " + args + " >" + q((io.path / "out").string()) + " 2>" +
                            q((io.path / "err").string()) + " </dev/null";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(98);
  }
  // Wait until the run catches `sig` (its SigCgt mask in /proc, however slow the build), then a little.
  for (int i = 0; i < 3000; ++i) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    bool caught = false;
    while (std::getline(status, line))
      if (line.rfind("SigCgt:", 0) == 0) caught = (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1;
    if (caught) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(after);
  ::kill(pid, sig);
  int st = 0;
  ::waitpid(pid, &st, 0);
  Outcome o;
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  o.out = slurp(io.path / "out");
  o.err = slurp(io.path / "err");
  return o;
}
}  // namespace

TEST_CASE("SIGHUP stops a run like SIGTERM: outputs marked interrupted, no done marker, exit 130") {
  Scratch s("hup");
  const fs::path r = s.path / "r";
  const Outcome o =
      interrupt_run("run " + kTiny + " --quiet --set stop.max_updates=100000000 --out " + q(r.string()),
                    SIGHUP, std::chrono::milliseconds(300));
  CHECK(o.code == 130);
  CHECK(o.err.find("interrupted at t=") != std::string::npos);
  CHECK(fs::exists(r / "summary.json"));
  CHECK_FALSE(fs::exists(r / "done"));
  CHECK(slurp(r / "summary.json").find("\"status\": \"interrupted\"") != std::string::npos);
}

TEST_CASE("Ctrl-C during a --force rerun keeps the finished run") {
  Scratch s("ctrlc");
  const fs::path r = s.path / "r";
  REQUIRE(cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  const std::string before = slurp(r / "summary.json");
  const Outcome o = interrupt_run(
      "run " + kTiny + " --quiet --force --set stop.max_updates=100000000 --out " + q(r.string()), SIGINT,
      std::chrono::milliseconds(300));
  CHECK(o.code == 130);
  CHECK(o.err.find("kept the finished run in") != std::string::npos);
  CHECK(slurp(r / "summary.json") == before);
  CHECK(complete_run(r));
  CHECK(hidden_entries(s.path).empty());
}

// ---- Outputs: paths and OS reasons -----------------------------------------------------------

TEST_CASE("--out with a trailing slash, a file in the way, and a symbolic link to a run folder") {
  Scratch s("paths");
  const Outcome slash = cli("run " + kTiny + " --quiet --out " + q((s.path / "r").string() + "/"));
  CHECK(slash.code == 0);
  CHECK(complete_run(s.path / "r"));
  CHECK(slash.out.find("r// ") == std::string::npos);
  s.write("file", "x");
  const Outcome file = cli("run " + kTiny + " --quiet --out " + q((s.path / "file").string()));
  CHECK(file.code == 2);
  CHECK(file.err.find("output path exists and is not a folder") != std::string::npos);
  const Outcome under = cli("run " + kTiny + " --quiet --out " + q((s.path / "file" / "r").string()));
  CHECK(under.code == 2);
  CHECK(under.err.find("is not a folder") != std::string::npos);
  fs::create_directory_symlink(s.path / "r", s.path / "link");
  const Outcome link =
      cli("run " + kTiny + " --quiet --force --seed 7 --out " + q((s.path / "link").string()));
  CHECK(link.code == 0);
  CHECK(fs::is_symlink(s.path / "link"));  // the link stays; its target holds the new run
  CHECK(slurp(s.path / "r" / "summary.json").find("\"seed\": 7") != std::string::npos);
  fs::create_directory_symlink(s.path / "nowhere", s.path / "dangling");
  const Outcome dangling = cli("run " + kTiny + " --quiet --out " + q((s.path / "dangling").string()));
  CHECK(dangling.code == 2);
  CHECK(dangling.err.find("a symbolic link to a path that does not resolve") != std::string::npos);
}

TEST_CASE("a full disk is reported with the OS reason") {
  if (!fs::exists("/dev/full")) return;
  CHECK_THROWS_WITH_AS(stalesim::write_text_file("/dev/full", "x"),
                       doctest::Contains("cannot write: No space left on device"), stalesim::IoError);
}

// ---- Names ----------------------------------------------------------------------------------

TEST_CASE("scenario names cannot leave results/ or reach the terminal raw") {
  check_cases({
      {"validate " + kTiny + " --set name=../../victim", 2,
       "/name: expected letters, digits and . _ - + = , @ only"},
      {"validate " + kTiny + " --set name=a/b", 2, "(character 0x2f)"},
      {"validate " + kTiny + " --set 'name=\"a\\u001b[31mb\"'", 2, "\"a\\u001b[31mb\" (character 0x1b)"},
      {"validate " + kTiny + " --set 'name=\"tab\\there\"'", 2, "(character 0x09)"},
      {"validate " + kTiny + " --set name=.hidden", 2, "/name: expected a name not starting with '.'"},
      {"validate " + kTiny + " --set name=..", 2, "/name: expected a name not starting with '.'"},
      {"validate " + kTiny + " --set name=" + std::string(101, 'a'), 2,
       "/name: expected at most 100 characters"},
      {"validate " + kTiny + " --set 'name=\"\"'", 2, "/name: expected a non-empty string"},
      {"validate " + kTiny + " --set 'name=\"a b\"'", 2, "(character 0x20)"},
      {"validate " + kTiny + " --set 'comment=\"" + std::string(70000, 'c') + "\"'", 2,
       "/comment: expected at most 65536 characters"},
  });
  Scratch s("stem");
  fs::copy_file(std::string(STALESIM_SOURCE_DIR) + "/" + kTiny, s.path / "my run!.json");
  std::string text = slurp(s.path / "my run!.json");
  text.replace(text.find("\"name\": \"golden-tiny\","), std::string("\"name\": \"golden-tiny\",").size(), "");
  s.write("my run!.json", text);
  const Outcome o = cli("validate " + q((s.path / "my run!.json").string()));
  CHECK(o.code == 0);
  CHECK(o.out.find("\"name\": \"my_run_\"") != std::string::npos);  // the file's stem, made safe
}

// ---- Time arithmetic ------------------------------------------------------------------------

TEST_CASE("durations past int64 nanoseconds and intervals below 1 ns are bad input, the field named") {
  const std::string trace_dir =
      (fs::temp_directory_path() / ("stalesim-hostile-trace-" + std::to_string(::getpid()))).string();
  fs::create_directories(trace_dir);
  std::ofstream(trace_dir + "/huge.txt") << "1e308\n";
  std::ofstream(trace_dir + "/ok.txt") << "5 6 7\n";
  const std::string slow =
      R"(--set 'cluster.schedule=[{"kind":"slow","at_s":0,"factor":1e14,"workers":[0]}]')";
  const std::string drift =
      R"(--set 'cluster.schedule=[{"kind":"drift","at_s":0,"until_s":1,"factor":1e300,"workers":[0]}]')";
  const std::string time_only =
      " --set model.type=time-only --set data.dataset=none --set model.parameters=1000";
  check_cases({
      {"validate " + kTiny + " " + slow, 2, "/cluster/schedule/0/factor: expected a number in (0, 1000000]"},
      {"validate " + kTiny + " " + drift, 2, "/cluster/schedule/0/factor: expected a number in (0, 1000000]"},
      {"validate " + kTiny + " --set cluster.jitter.type=constant --set cluster.jitter.factor=1e20", 2,
       "/cluster/jitter/factor: expected a number in (0, 1000000]"},
      {"validate " + kTiny + " --set cluster.jitter.sigma=50", 2,
       "/cluster/jitter/sigma: expected a number in [0, 4]"},
      {"validate " + kTiny + " --set cluster.jitter.type=gamma --set cluster.jitter.cv=1e9", 2,
       "/cluster/jitter/cv: expected a number in (0, 100]"},
      {"run " + kTiny +
           " --quiet --out /nonexistent-never --set cluster.jitter.type=trace --set cluster.jitter.path=" +
           trace_dir + "/huge.txt",
       2, "huge.txt:1: expected an iteration time in ms (a number > 0 and <= 1e+09), got \"1e308\""},
      {"validate " + kTiny + time_only + " --set model.flops_per_sample=1e300", 2,
       "/model/flops_per_sample: expected a number in (0, 1e+18], got 1e+300"},
      {"validate " + kTiny + " --set cluster.network.bandwidth_gbps=1e-15", 2,
       "/cluster/network/bandwidth_gbps: expected a number in [1e-06, 1000000], got 1e-15"},
      {"validate " + kTiny + " --set cluster.network.server_bandwidth_gbps=1e300", 2,
       "/cluster/network/server_bandwidth_gbps: expected a number in [1e-06, 1000000]"},
      {"validate " + kTiny + " --set eval.every_s=1e-10", 2,
       "/eval/every_s: expected a number >= 1e-09, got 1e-10"},
      {"validate " + kTiny + " --set eval.every_s=0", 2, "/eval/every_s: expected a number >= 1e-09, got 0"},
      {"validate " + kTiny + " --set eval.every_s=1e-9 --set stop.virtual_time_s=1000", 2,
       "/eval/every_s: 1e-09 s over stop.virtual_time_s 1000 s is 1e+12 evaluations; at most 10000000"},
      {"validate " + kTiny + " --set stop.virtual_time_s=1e300", 2,
       "/stop/virtual_time_s: expected a number in (0, 1000000000]"},
      {"validate " + kTiny +
           R"( --set 'cluster.schedule=[{"kind":"pause","at_s":1e300,"until_s":2e300,"workers":[0]}]')",
       2, "/cluster/schedule/0/at_s: expected a number in [0, 1000000000]"},
      {"validate " + kTiny + " --set cluster.workers.0.iteration_ms=1e300", 2,
       "/cluster/workers/0/iteration_ms: expected a number in (0, 1000000000]"},
      {"validate " + kTiny + " --set cluster.network.latency_us=1e300", 2,
       "/cluster/network/latency_us: expected a number in [0, 1000000000]"},
      {"timeline " + kTiny + " --until 1e-300s", 2, "--until: expected a duration from 1 ns to 1e9 s"},
      {"timeline " + kTiny + " --until 1e10s", 2, "--until: expected a duration from 1 ns to 1e9 s"},
      {"timeline " + kTiny + " --until nan", 2, "--until: expected a duration from 1 ns to 1e9 s"},
      // Within every field's range, the product still leaves int64: reported, named, nothing written.
      // The estimate leaves the schedule out: the slowdown is found by the run itself.
      {"run " + kTiny +
           " --quiet --out /nonexistent-never/x --set cluster.workers.0.iteration_ms=1e9 --set "
           "eval.every_s=1e6 " +
           R"(--set 'cluster.schedule=[{"kind":"slow","at_s":0,"factor":1e6,"workers":[0]}]')",
       2, "past the simulator's time range"},
      {"run " + kTiny + time_only +
           " --quiet --set model.flops_per_sample=1e18 --set optimizer.batch_size=100000000 --out "
           "/nonexistent-never/y",
       2,
       "past the simulator's clock range (9.22e+09 s, about 292 years)"},  // refused up front by the estimate
  });
  fs::remove_all(trace_dir);
}

TEST_CASE("SimTime arithmetic is checked: overflow throws TimeRangeError instead of wrapping") {
  using stalesim::SimTime;
  CHECK_THROWS_AS(SimTime::max() + SimTime::from_ns(1), stalesim::TimeRangeError);
  CHECK_THROWS_AS(SimTime::from_ns(std::numeric_limits<int64_t>::min()) - SimTime::from_ns(1),
                  stalesim::TimeRangeError);
  CHECK_THROWS_WITH_AS(SimTime::from_ns_checked(1e300, "a message"),
                       doctest::Contains("a message: 1e+291 s, past the simulator's time range"),
                       stalesim::TimeRangeError);
  CHECK_THROWS_AS(SimTime::from_ns_checked(std::nan(""), "x"), stalesim::TimeRangeError);
  CHECK(SimTime::from_ns_checked(1.4, "x").ns() == 1);
  CHECK((SimTime::from_ns(5) + SimTime::from_ns(7)).ns() == 12);
}

// ---- Bounded reading ------------------------------------------------------------------------

TEST_CASE("inputs must be regular files of bounded size and nesting, and UTF-16 is named") {
  Scratch s("reading");
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  s.write("deep.json", deep);
  ::mkfifo((s.path / "fifo.json").c_str(), 0644);
  ::mkfifo((s.path / "fifo.txt").c_str(), 0644);
  s.write("u16.json", std::string("\xFF\xFE{\0\"\0a\0\"\0:\0 \x31\0}\0", 18));
  s.write("big.json", "{\"comment\": \"" + std::string(17 << 20, 'x') + "\"}");
  const std::string deep_set = "--set 'model.hidden=" + std::string(1000, '[') + std::string(1000, ']') + "'";
  check_cases({
      {"validate " + q((s.path / "deep.json").string()), 2,
       "invalid JSON: arrays and objects nested deeper than 64 levels"},
      {"run " + q((s.path / "deep.json").string()) + " --quiet", 2, "nested deeper than 64 levels"},
      {"sweep " + q((s.path / "deep.json").string()) + " --quiet --grid policy.staleness=1,2", 2,
       "nested deeper than 64 levels"},
      {"validate " + kTiny + " " + deep_set, 2, "nested deeper than 64 levels"},
      {"validate /dev/zero", 2, "/dev/zero: cannot read: not a regular file (a character device)"},
      {"validate " + q((s.path / "fifo.json").string()), 2, "cannot read: not a regular file (a FIFO)"},
      {"validate " + q(s.str()), 2, "cannot read: not a regular file (a folder)"},
      {"validate " + q((s.path / "missing.json").string()), 2, "cannot read: No such file or directory"},
      {"validate " + q((s.path / "u16.json").string()), 2, "the text is UTF-16 or UTF-32, not UTF-8"},
      {"validate " + q((s.path / "big.json").string()), 2, "cannot read: larger than 16 MiB"},
      {"run " + kTiny +
           " --quiet --out /nonexistent-never --set cluster.jitter.type=trace --set cluster.jitter.path=" +
           q((s.path / "fifo.txt").string()),
       2, "cannot read the jitter trace: not a regular file (a FIFO)"},
      {"run " + kTiny +
           " --quiet --out /nonexistent-never --set cluster.jitter.type=trace --set "
           "cluster.jitter.path=/dev/zero",
       2, "cannot read the jitter trace: not a regular file (a character device)"},
      {"reproduce /dev/zero", 2, "/dev/zero: cannot read: not a regular file"},
      {"reproduce " + q((s.path / "deep.json").string()), 2, "nested deeper than 64 levels"},
  });
}

TEST_CASE("a FIFO or folder among the data files is named as such, not as missing") {
  Scratch s("data");
  ::mkfifo((s.path / "train-images-idx3-ubyte.gz").c_str(), 0644);
  fs::create_directories(s.path / "t10k-images-idx3-ubyte");
  const Outcome o = cli("run " + kTiny + " --quiet --out " + q((s.path / "out").string()) +
                        " --set data.dataset=fashion-mnist --set data.path=" + q(s.str()));
  CHECK(o.code == 2);
  CHECK(o.err.find("train-images-idx3-ubyte.gz: not a regular file") != std::string::npos);
}

TEST_CASE("reproduce does not read a device its manifest names as a dataset: it warns and goes on") {
  Scratch s("repro");
  const fs::path r = s.path / "r";
  REQUIRE(cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  json summary = json::parse(slurp(r / "summary.json"));
  summary["manifest"]["datasets"] = json::array({{{"path", "/dev/zero"}, {"bytes", 1}, {"xxh64", "0"}}});
  std::ofstream(r / "summary.json") << summary.dump(2) << "\n";
  const Outcome o = cli("reproduce " + q((r / "summary.json").string()) + " --quiet");
  CHECK(o.err.find("warning: dataset file /dev/zero: not a regular file") != std::string::npos);
  CHECK(o.code == 3);  // the edited summary no longer matches the rerun's
}

// ---- Integer options and lists --------------------------------------------------------------

TEST_CASE("integer options and list lengths are range-checked, with the limits stalesim fields shows") {
  const std::string hidden65 = [] {
    std::string h = "[";
    for (int i = 0; i < 65; ++i) h += (i ? ",1" : "1");
    return h + "]";
  }();
  check_cases({
      {"validate " + kTiny + " --seed -1", 2,
       "--seed '-1': expected an integer from 0 to 18446744073709551615"},
      {"validate " + kTiny + " --seed 18446744073709551616", 2,
       "--seed '18446744073709551616': expected an integer"},
      {"validate " + kTiny + " --seed 1.5", 2, "--seed '1.5': expected an integer"},
      {"validate " + kTiny + " --seed +3", 2, "--seed '+3': expected an integer"},
      {"run " + kTiny + " --seed abc", 2, "--seed 'abc': expected an integer"},
      {"sweep " + kTiny + " --jobs 0", 2, "--jobs: expected an integer >= 1, got 0"},
      {"sweep " + kTiny + " --seeds=-1..3", 2, "--seeds '-1..3': '-1' is not an integer >= 0"},
      {"timeline " + kTiny + " --width 5", 2, "--width: expected 10 to 1000, got 5"},
      {"run " + kTiny + " --trace --trace-max-mb 0", 2,
       "--trace-max-mb: expected a number in (0, 1e6), got 0"},
      {"validate " + kTiny + " --set model.hidden=" + hidden65, 2,
       "/model/hidden: expected at most 64 items, got 65"},
      {"validate " + kTiny +
           " --set model.type=time-only --set data.dataset=none --set model.flops_per_sample=1 --set "
           "model.parameters=2000000000000",
       2, "/model/parameters: expected an integer in [1, 1099511627776], got 2000000000000"},
      {"validate " + kTiny + " --set 'cluster.workers=[]'", 2,
       "/cluster/workers: expected a non-empty array of objects"},
      {"validate " + kTiny + " --set seed=18446744073709551616", 2,
       "/seed: expected an integer in [0, 18446744073709551615]"},
  });
  const Outcome fields = cli("fields");
  CHECK(fields.out.find("1 to 64 items; each in [1, 65536]") != std::string::npos);
  CHECK(fields.out.find("in [1, 1099511627776]") != std::string::npos);
  CHECK(fields.out.find("1 to 100 characters: letters, digits") != std::string::npos);
  const json schema = json::parse(cli("schema").out);
  const json& hidden = schema["properties"]["model"]["properties"]["hidden"];
  CHECK(hidden["maxItems"] == 64);
  CHECK(schema["properties"]["name"]["maxLength"] == 100);
  CHECK(schema["properties"]["name"]["pattern"].get<std::string>().starts_with("^[A-Za-z0-9_+=,@-]"));
}

// ---- Sweeps ---------------------------------------------------------------------------------

TEST_CASE("a sweep over the point limit and a grid value that breaks a point are refused before running") {
  Scratch s("sweeps");
  std::string many = "policy.staleness=";
  for (int i = 0; i < 400; ++i) many += (i ? "," : "") + std::to_string(i);
  std::string lrs = "optimizer.lr=";
  for (int i = 1; i <= 300; ++i) lrs += (i > 1 ? "," : "") + std::to_string(i) + "e-3";
  check_cases({
      {"sweep scenarios/sweep-tiny.json --quiet --grid " + many + " --grid " + lrs + " --out " +
           q((s.path / "a").string()),
       2, "the sweep has more than 100000 points"},
      {"sweep scenarios/sweep-tiny.json --quiet --grid optimizer.lr=0.1,-1 --out " +
           q((s.path / "b").string()),
       2, "1 of 2 sweep points are invalid; nothing was run"},
      {"sweep scenarios/sweep-tiny.json --quiet --grid 'model.hidden=[0]' --out " +
           q((s.path / "c").string()),
       2, "/model/hidden/0: expected an integer in [1, 65536], got 0"},
      {"sweep scenarios/sweep-tiny.json --quiet --seeds 0..100000 --out " + q((s.path / "d").string()), 2,
       "more than 100000 seeds"},
  });
  CHECK_FALSE(fs::exists(s.path / "a"));
  CHECK_FALSE(fs::exists(s.path / "b"));
}

TEST_CASE("json_shape_problem: depth is counted outside strings only") {
  CHECK(stalesim::json_shape_problem(
            "{\"a\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}")
            .empty());
  CHECK(stalesim::json_shape_problem(std::string(64, '[') + std::string(64, ']')).empty());
  CHECK_FALSE(stalesim::json_shape_problem(std::string(65, '[') + std::string(65, ']')).empty());
  CHECK(stalesim::json_shape_problem("{\"a\": \"\\\"[[\"}", 1).empty());
}
