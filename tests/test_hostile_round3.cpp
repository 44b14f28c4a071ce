// Hostile input, round three (issue 30), through the real binary: only provable temporaries are
// stalesim's, every input file is read bounded, recursive parsers are bounded, reproduce of a
// sweep checks sweep.csv, impossible runs are refused up front, out of memory has its own exit
// code, and what a user wrote reaches the terminal escaped. Every case asserts the exit code, the
// message, and that nothing outside the output folder changed (a snapshot of the scratch folder).

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/output/run_folder.hpp"
#include "tests/cli_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using stalesim::testing::csv_text;
using stalesim::testing::dead_pid;
using stalesim::testing::has;
using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;
using stalesim::testing::snapshot;

namespace {

const std::string kTiny = "tests/golden/tiny/scenario.json";

using stalesim::testing::q;

// A temporary as stalesim makes it (name and marker agreeing), for `pid`, in `parent`.
fs::path forge_temporary(const fs::path& parent, const std::string& kind, long pid, const std::string& target,
                         const std::string& token = "0123456789abcdef") {
  const fs::path dir = parent / (".stalesim-" + kind + "-" + std::to_string(pid) + "-" + token);
  fs::create_directories(dir);
  std::ofstream(dir / ".stalesim-temporary") << json{
      {"stalesim_temporary", 1}, {"kind", kind},    {"pid", pid}, {"host", stalesim::testing::host_name()},
      {"token", token},          {"target", target}}.dump();
  return dir;
}

}  // namespace

// ---- 1. Own temporaries only ---------------------------------------------------------------

TEST_CASE("--force refuses a run folder holding a user's .photos.old-2023/, and leaves all of it") {
  Scratch s("photos");
  const fs::path r = s.path / "r";
  REQUIRE(run_cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  s.write("r/.photos.old-2023/cat.jpg", "meow");
  const auto before = snapshot(s.path);
  const Outcome o = run_cli("run " + kTiny + " --quiet --force --out " + q(r.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(
      has(o.err,
          "this folder holds the folder '.photos.old-2023', which holds 'cat.jpg', which no stalesim "
          "run or sweep writes; nothing was deleted"),
      o.err);
  CHECK(snapshot(s.path) == before);
}

TEST_CASE("names that look like stalesim's old temporaries are foreign: never deleted or moved") {
  // Each a sibling of the output folder `myrun`, with a dead PID where the name has digits.
  const std::string dead = std::to_string(dead_pid());
  const std::vector<std::string> names = {".myrun.old-2023",        ".myrun.old-" + dead,
                                          ".myrun.partial-" + dead, ".myrun.probe-" + dead,
                                          ".myrun.tmp-" + dead,     ".other.old-1"};
  for (const auto& name : names) {
    for (const bool holds_run : {false, true}) {
      CAPTURE(name);
      CAPTURE(holds_run);
      Scratch s("lookalike");
      const fs::path out = s.path / "myrun";
      if (holds_run) {
        // A run folder of the user's under that name (it could be restored, if it were ours).
        REQUIRE(run_cli("run " + kTiny + " --quiet --out " + q((s.path / name).string())).code == 0);
      } else {
        s.write(name + "/holiday.txt", "keep");
      }
      const auto before = snapshot(s.path);
      const Outcome o = run_cli("run " + kTiny + " --quiet --force --out " + q(out.string()));
      CHECK(o.code == 0);
      CHECK_MESSAGE(o.err.empty(), o.err);
      CHECK(fs::is_regular_file(out / "done"));
      CHECK(snapshot(s.path, out) == before);
    }
  }
}

TEST_CASE("a sweep folder holding a user's hidden folder is refused by sweep --force and left whole") {
  Scratch s("sweepphotos");
  const fs::path sw = s.path / "sw";
  REQUIRE(
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + q(sw.string()))
          .code == 0);
  s.write("sw/.backup.old-2023/a.csv", "1,2\n");
  s.write("sw/.0123456789abcdef.partial-" + std::to_string(dead_pid()) + "/metrics.csv", "mine\n");
  const auto before = snapshot(s.path);
  const Outcome o = run_cli(
      "sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --force --out " + q(sw.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, "is not a sweep folder: it holds the folder '."), o.err);
  CHECK(snapshot(s.path) == before);
}

TEST_CASE("a temporary is ours only when its name and marker agree and its writer is gone") {
  Scratch s("proof");
  const long dead = dead_pid();
  // Proven and stale: removed.
  const fs::path ours = forge_temporary(s.path, "partial", dead, "r");
  s.write(ours.filename().string() + "/run/metrics.csv", "");
  // Not provable: kept, each for its own reason.
  const fs::path no_marker = s.path / (".stalesim-partial-" + std::to_string(dead) + "-00000000000000aa");
  fs::create_directories(no_marker / "run");
  const fs::path wrong_token = forge_temporary(s.path, "partial", dead, "r", "00000000000000bb");
  std::ofstream(wrong_token / ".stalesim-temporary")
      << json{{"kind", "partial"}, {"pid", dead}, {"token", "00000000000000cc"}, {"target", "r"}}.dump();
  const fs::path wrong_pid = forge_temporary(s.path, "partial", dead, "r", "00000000000000dd");
  std::ofstream(wrong_pid / ".stalesim-temporary")
      << json{{"kind", "partial"}, {"pid", dead + 1}, {"token", "00000000000000dd"}, {"target", "r"}}.dump();
  const fs::path wrong_kind = forge_temporary(s.path, "probe", dead, "r", "00000000000000ee");
  fs::rename(wrong_kind, s.path / (".stalesim-partial-" + std::to_string(dead) + "-00000000000000ee"));
  const fs::path alive = forge_temporary(s.path, "partial", ::getpid(), "r", "00000000000000ff");
  const fs::path other_name = forge_temporary(s.path, "tmp", dead, "q", "0000000000000011");
  const fs::path garbage = s.path / (".stalesim-tmp-" + std::to_string(dead) + "-0000000000000022");
  s.write(garbage.filename().string() + "/.stalesim-temporary", "{not json");
  const fs::path linked = s.path / (".stalesim-tmp-" + std::to_string(dead) + "-0000000000000033");
  fs::create_directory_symlink(other_name, linked);
  const fs::path marker_link = s.path / (".stalesim-tmp-" + std::to_string(dead) + "-0000000000000044");
  fs::create_directories(marker_link);
  fs::create_symlink(other_name / ".stalesim-temporary", marker_link / ".stalesim-temporary");

  stalesim::clean_stale_temporaries(s.path, "r");
  CHECK_FALSE(fs::exists(ours));
  for (const auto& kept : {no_marker, wrong_token, wrong_pid, alive, other_name, garbage, marker_link}) {
    CAPTURE(kept);
    CHECK(fs::exists(kept));
  }
  CHECK(fs::exists(s.path / (".stalesim-partial-" + std::to_string(dead) + "-00000000000000ee")));
  CHECK(fs::is_symlink(linked));
  // Cleaning every name removes the dead writer's `q` temporary too, and still nothing else.
  stalesim::clean_stale_temporaries(s.path, "");
  CHECK_FALSE(fs::exists(other_name));
  CHECK(fs::exists(no_marker / "run"));
  CHECK(fs::is_symlink(linked));
}

TEST_CASE(
    "a killed two-rename replace is restored from its own temporary, never from a marker's ../ target") {
  Scratch s("restore");
  const fs::path r = s.path / "r";
  REQUIRE(run_cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  const std::string summary = slurp(r / "summary.json");
  const fs::path t = forge_temporary(s.path, "partial", dead_pid(), "r");
  fs::rename(r, t / "old");  // as the fallback leaves it when killed between its renames
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q(r.string()));
  CHECK(o.code == 2);  // the old run is back, so the folder is occupied
  CHECK(has(o.err, "output folder exists and is not empty (use --force to replace it)"));
  CHECK(slurp(r / "summary.json") == summary);
  CHECK_FALSE(fs::exists(t));

  // A marker naming a target outside the folder is not followed.
  Scratch inner("escape");
  fs::create_directories(inner.path / "sub");
  const fs::path bad = forge_temporary(inner.path / "sub", "partial", dead_pid(), "../escaped");
  REQUIRE(run_cli("run " + kTiny + " --quiet --out " + q((s.path / "x").string())).code == 0);
  fs::rename(s.path / "x", bad / "old");
  stalesim::clean_stale_temporaries(inner.path / "sub", "");
  CHECK_FALSE(fs::exists(inner.path / "escaped"));
}

TEST_CASE("a run leaves no temporary behind, and its temporaries carry a marker naming it") {
  Scratch s("clean");
  const fs::path r = s.path / "r";
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q(r.string()));
  CHECK(o.code == 0);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(s.path)) entries.push_back(e.path().filename().string());
  CHECK(entries == std::vector<std::string>{"r"});
  // A temporary made by this process is ours, with its target; the same folder renamed is not.
  const fs::path t = stalesim::create_temporary(s.path, "tmp", "r");
  const auto info = stalesim::our_temporary(t);
  REQUIRE(info.has_value());
  CHECK(info->target == "r");
  CHECK(info->pid == ::getpid());
  CHECK(t.filename().string().size() < 60);
  fs::rename(t, s.path / ".r.tmp-1");
  CHECK_FALSE(stalesim::our_temporary(s.path / ".r.tmp-1").has_value());
}

// ---- 2. One bounded reader for every file ---------------------------------------------------

TEST_CASE("every input file is refused cleanly when it is a FIFO, a link to /dev/zero, a folder or huge") {
  Scratch s("readers");
  ::mkfifo((s.path / "fifo.json").c_str(), 0644);
  fs::create_symlink("/dev/zero", s.path / "zero.json");
  fs::create_directories(s.path / "folder.json");
  { std::ofstream(s.path / "huge.json") << "{"; }
  fs::resize_file(s.path / "huge.json", std::uintmax_t{6} << 30);  // 6 GiB, sparse
  struct Kind {
    std::string file;
    std::string why;
  };
  const std::vector<Kind> kinds = {{"fifo.json", "not a regular file (a FIFO)"},
                                   {"zero.json", "not a regular file (a character device)"},
                                   {"folder.json", "not a regular file (a folder)"},
                                   {"huge.json", "(6442450944 bytes)"}};
  // Each reader: the command line for a file, and what its message starts with.
  const std::string tiny_json = slurp(fs::path(STALESIM_SOURCE_DIR) / kTiny);
  for (const auto& k : kinds) {
    const std::string f = (s.path / k.file).string();
    // A scenario naming the file as its device profile.
    json sc = json::parse(tiny_json);
    sc["cluster"]["workers"] = json::array({{{"profile", f}, {"count", 1}}});
    std::ofstream(s.path / "sc.json") << sc.dump();
    const std::vector<std::pair<std::string, std::string>> readers = {
        {"profiles " + q(f), f + ": cannot read: "},
        {"validate " + q((s.path / "sc.json").string()), f + ": cannot read: "},
        {"run " + q((s.path / "sc.json").string()) + " --quiet --out " + q((s.path / "out").string()),
         f + ": cannot read: "},
        {"timeline " + q((s.path / "sc.json").string()), f + ": cannot read: "},
        {"validate " + q(f), f + ": cannot read: "},
        {"sweep " + q(f) + " --quiet --out " + q((s.path / "out").string()), f + ": cannot read"},
        {"reproduce " + q(f), f + ": cannot read: "},
    };
    for (const auto& entry : readers) {
      const std::string& cmd = entry.first;  // not a binding: clang 14 cannot capture one
      const std::string& expect = entry.second;
      CAPTURE(cmd);
      if (k.file == "folder.json" && cmd.starts_with("reproduce"))
        continue;  // a folder is a run folder there
      const auto before = snapshot(s.path);
      const Outcome o = run_cli(cmd);
      CHECK(o.code == 2);
      CHECK_MESSAGE(has(o.err, expect), o.err);
      CHECK_MESSAGE(has(o.err, k.why), o.err);
      CHECK(snapshot(s.path) == before);
    }
  }
}

TEST_CASE("a sweep's sweep.csv or sweep.json that is a FIFO, a device or huge is refused, with no hang") {
  Scratch s("sweepfiles");
  const fs::path sw = s.path / "sw";
  REQUIRE(
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + q(sw.string()))
          .code == 0);
  const std::string csv = slurp(sw / "sweep.csv");
  const auto replace_csv = [&](int how) {
    fs::remove(sw / "sweep.csv");
    if (how == 0) ::mkfifo((sw / "sweep.csv").c_str(), 0644);
    if (how == 1) fs::create_symlink("/dev/zero", sw / "sweep.csv");
    if (how == 2) {
      std::ofstream(sw / "sweep.csv") << csv;
      fs::resize_file(sw / "sweep.csv", std::uintmax_t{3} << 30);
    }
  };
  for (int how = 0; how < 3; ++how) {
    CAPTURE(how);
    replace_csv(how);
    for (const std::string cmd : {"reproduce", "summarize"}) {
      CAPTURE(cmd);
      const auto before = snapshot(s.path);
      const Outcome o = run_cli(cmd + " " + q(sw.string()));
      CHECK(o.code == 2);
      CHECK_MESSAGE(has(o.err, (sw / "sweep.csv").string() + ": cannot read"), o.err);
      CHECK_MESSAGE(has(o.err, how == 2 ? "larger than" : "not a regular file"), o.err);
      CHECK(snapshot(s.path) == before);
    }
  }
}

TEST_CASE("a sweep.json nested thousands deep is refused on resume, with no crash, and left alone") {
  Scratch s("deepbase");
  const fs::path sw = s.path / "sw";
  REQUIRE(
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + q(sw.string()))
          .code == 0);
  json manifest = json::parse(slurp(sw / "sweep.json"));
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string text = manifest.dump();
  text.replace(text.find("\"base\":"), 0, "\"deep\":" + deep + ",");
  std::ofstream(sw / "sweep.json") << text;
  const auto before = snapshot(s.path);
  const Outcome o =
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + q(sw.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, "holds a sweep.json that is not a stalesim sweep's"), o.err);
  CHECK(snapshot(s.path) == before);
}

TEST_CASE("a device profile nested deeply is refused with exit 2, not a crash") {
  Scratch s("deepprofile");
  const fs::path f =
      s.write("deep.json", "{\"name\": " + std::string(200000, '[') + std::string(200000, ']') + "}");
  const Outcome o = run_cli("profiles " + q(f.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, f.string() + ": invalid JSON: arrays and objects nested deeper than 64 levels"),
                o.err);
}

TEST_CASE("duplicate keys are refused in every JSON file: sweep files, profiles, summaries, --set values") {
  Scratch s("dups");
  const std::string sc =
      "\"scenario\": \"" + std::string(STALESIM_SOURCE_DIR) + "/scenarios/sweep-tiny.json\"";
  const fs::path sweep_file = s.write(
      "d.sweep.json", "{" + sc + ", \"grid\": {\"policy.staleness\": [0, 1], \"policy.staleness\": [2]}}");
  const fs::path sweep_top = s.write("t.sweep.json", "{" + sc + ", " + sc + "}");
  const fs::path profile = s.write("p.json", R"({"name": "a", "name": "b", "description": "x",
      "peak_fp32_tflops": 1, "memory_bandwidth_gbs": 1, "efficiency": 0.5, "overhead_us": 1, "source": "s"})");
  const fs::path r = s.path / "r";
  REQUIRE(run_cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  std::string summary = slurp(r / "summary.json");
  summary.replace(summary.find("\"status\""), 0, "\"status\": \"completed\", ");
  std::ofstream(r / "summary.json") << summary;
  const std::vector<std::tuple<std::string, std::string>> cases = {
      {"sweep " + q(sweep_file.string()) + " --quiet --out " + q((s.path / "o").string()),
       sweep_file.string() + ": /grid/policy.staleness: duplicate key"},
      {"sweep " + q(sweep_top.string()) + " --quiet --out " + q((s.path / "o").string()),
       sweep_top.string() + ": /scenario: duplicate key"},
      {"profiles " + q(profile.string()), profile.string() + ": duplicate key at /name"},
      {"reproduce " + q(r.string()), (r / "summary.json").string() + ": duplicate key at /status"},
      {"validate " + kTiny + R"( --set 'cluster.network={"latency_us": 1, "latency_us": 2}')",
       "/latency_us: duplicate key"},
  };
  for (const auto& entry : cases) {
    const std::string& cmd = std::get<0>(entry);  // not a binding: clang 14 cannot capture one
    const std::string& expect = std::get<1>(entry);
    CAPTURE(cmd);
    const auto before = snapshot(s.path);
    const Outcome o = run_cli(cmd);
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, expect), o.err);
    CHECK(snapshot(s.path) == before);
  }
}

// Runs tests/layers/check_layers.sh on the scratch tree `s`, its output into s/out.txt; returns
// its exit code.
int check_layers_on(const Scratch& s) {
  const std::string script = std::string(STALESIM_SOURCE_DIR) + "/tests/layers/check_layers.sh";
  const std::string out = (s.path / "out.txt").string();
  return WEXITSTATUS(std::system(("bash " + q(script) + " " + q(s.str()) + " >" + q(out) + " 2>&1").c_str()));
}

TEST_CASE("check_layers fails on a file read outside base/file_read, so a new reader cannot skip it") {
  Scratch s("layers");
  for (const char* d : {"sim", "models", "base", "tools"}) fs::create_directories(s.path / d);
  s.write("sim/new_reader.cpp", "void f() { std::ifstream in(\"x\"); }\n");
  const std::string script = std::string(STALESIM_SOURCE_DIR) + "/tests/layers/check_layers.sh";
  const std::string out = (s.path / "out.txt").string();
  const int st = std::system(("bash " + q(script) + " " + q(s.str()) + " >" + q(out) + " 2>&1").c_str());
  CHECK(WEXITSTATUS(st) == 1);
  CHECK(has(slurp(out), "a file read outside base/file_read"));
  CHECK(has(slurp(out), "sim/new_reader.cpp:1:"));
  for (const std::string other :
       {"FILE* f = fopen(p, \"r\");", "int fd = ::open(p, O_RDONLY);", "gzopen(p, \"rb\");"}) {
    s.write("sim/new_reader.cpp", other + "\n");
    CHECK(WEXITSTATUS(std::system(("bash " + q(script) + " " + q(s.str()) + " >/dev/null 2>&1").c_str())) ==
          1);
  }
  fs::remove(s.path / "sim/new_reader.cpp");
  CHECK(WEXITSTATUS(std::system(("bash " + q(script) + " " + q(s.str()) + " >/dev/null 2>&1").c_str())) == 0);
}

TEST_CASE("check_layers fails when sim/data/ includes a header above it (the scenario loader's)") {
  // Issue 47: sim/data/dataset.cpp included sim/scenario/spec.hpp for ScenarioError alone, an
  // arrow from the datasets up to the loader that parses them; the error is base/errors.hpp's now.
  Scratch s("layers-data");
  for (const char* d : {"sim/data", "sim/scenario", "models", "base", "tools"})
    fs::create_directories(s.path / d);
  const std::string out = (s.path / "out.txt").string();
  const auto status = [&] { return check_layers_on(s); };
  s.write("sim/data/dataset.cpp", "#include \"sim/data/dataset.hpp\"\n#include \"base/errors.hpp\"\n");
  CHECK(status() == 0);
  s.write("sim/data/dataset.cpp", "#include \"sim/data/dataset.hpp\"\n#include \"sim/scenario/spec.hpp\"\n");
  CHECK(status() == 1);
  CHECK(has(slurp(out), "a lower layer includes a higher one"));
  CHECK(has(slurp(out), "sim/data/dataset.cpp:2:"));
}

TEST_CASE("check_layers fails on getenv in the library, which the CLI alone may read (tools/cli.hpp)") {
  Scratch s("layers-env");
  for (const char* d : {"sim", "models", "base", "tools"}) fs::create_directories(s.path / d);
  const std::string out = (s.path / "out.txt").string();
  const auto status = [&] { return check_layers_on(s); };
  for (const char* dir : {"sim", "models", "base"}) {
    CAPTURE(dir);
    const std::string file = std::string(dir) + "/reads_env.cpp";
    s.write(file, "int f() { return std::getenv(\"STALESIM_THREADS\") != nullptr; }\n");
    CHECK(status() == 1);
    CHECK(has(slurp(out), "the library reads the environment"));
    CHECK(has(slurp(out), file + ":1:"));
    s.write(file, "extern char** environ;\n");
    CHECK(status() == 1);
    fs::remove(s.path / file);
  }
  s.write("tools/cli.cpp", "std::string env(const char* n) { return std::getenv(n); }\n");
  s.write("sim/env_words.cpp", "// the environment variable STALESIM_THREADS, read by the CLI\n");
  CHECK(status() == 0);
}

TEST_CASE("check_layers fails on a blocking MPI call in the real mode, which spins for the whole transfer") {
  // Issue 42: the server rank received each push in a blocking MPI_Recv and used 0.58 of a core,
  // taken from the workers' gradients; messages now go through MPI_Test polls (real_wire.hpp).
  Scratch s("layers-mpi");
  for (const char* d : {"sim/real", "models", "base", "tools"}) fs::create_directories(s.path / d);
  const std::string out = (s.path / "out.txt").string();
  const auto status = [&] { return check_layers_on(s); };
  s.write("sim/real/real_wire.hpp",
          "check(MPI_Irecv(b, n, MPI_BYTE, r, t, MPI_COMM_WORLD, &q), \"Irecv\");\n");
  s.write("sim/real/real_run.cpp",
          "MPI_Recv(&ping, 1, MPI_BYTE, r, kTagParams, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n");
  CHECK(status() == 0);
  for (const std::string call :
       {"MPI_Recv(b, n, MPI_BYTE, r, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
        "MPI_Send(b, n, MPI_BYTE, 0, t, MPI_COMM_WORLD);", "MPI_Wait(&q, MPI_STATUS_IGNORE);"}) {
    CAPTURE(call);
    s.write("sim/real/real_shard.cpp", call + "\n");
    CHECK(status() == 1);
    CHECK(has(slurp(out), "a blocking MPI call in the real mode"));
    CHECK(has(slurp(out), "sim/real/real_shard.cpp:1:"));
  }
  s.write("sim/real/real_shard.cpp", "// no MPI_Wait(...) here: complete() polls\n");
  CHECK(status() == 0);
  s.write("sim/real/real_run.cpp",
          "MPI_Recv(buf.data(), n, MPI_BYTE, r, kTagParams, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n");
  CHECK(status() == 1);
}

// ---- 3. Every recursive parser bounded -----------------------------------------------------

TEST_CASE("sweep-file expressions are bounded in length, nesting and chain length: exit 2, no crash") {
  Scratch s("expr");
  const std::string sc =
      "\"scenario\": \"" + std::string(STALESIM_SOURCE_DIR) + "/scenarios/sweep-tiny.json\"";
  const auto refused = [&](const std::string& expr, const std::string& expect) {
    CAPTURE(expect);
    const fs::path f =
        s.write("e.sweep.json", "{" + sc + ", \"derived\": {\"x\": {\"expr\": \"" + expr + "\"}}}");
    const fs::path out = s.path / "out";
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("sweep " + q(f.string()) + " --quiet --out " + q(out.string()));
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, f.string() + ": /derived/x/expr: "), o.err.substr(0, 300));
    CHECK_MESSAGE(has(o.err, expect), o.err.substr(0, 300));
    CHECK(o.err.size() < 20000);  // the expression is not echoed whole
    CHECK(snapshot(s.path) == before);
  };
  const auto repeat = [](const std::string& part, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += part;
    return out;
  };
  // Parentheses a few thousand deep (a 10 KB file).
  refused(repeat("(", 4000) + "1" + repeat(")", 4000), "nested deeper than 100 levels");
  refused(repeat("(", 101) + "1" + repeat(")", 101), "nested deeper than 100 levels");
  refused(repeat("-", 5000) + "1", "nested deeper than 100 levels");
  refused(repeat("!", 5000) + "true", "nested deeper than 100 levels");
  refused(repeat("not ", 2000) + "true", "nested deeper than 100 levels");
  refused(repeat("abs(", 200) + "1" + repeat(")", 200), "nested deeper than 100 levels");
  // A 100,000-term sum and a million unary operators: refused by length before parsing.
  refused("1" + repeat("+1", 100000), "the expression is 200001 characters long; at most 10000 are read");
  refused(repeat("-", 1000000) + "1", "the expression is 1000001 characters long; at most 10000 are read");
  // A chain of 1,500 terms fits the length but not the chain limit.
  refused("1" + repeat("+1", 1500), "more than 1000 operations chained in one expression");
  refused("1" + repeat("*1", 1500), "more than 1000 operations chained in one expression");
  // Within the bounds, a deep but legal expression still works.
  const fs::path ok = s.write("ok.sweep.json", "{" + sc +
                                                   ", \"set\": {\"stop.max_updates\": 5}, \"derived\": "
                                                   "{\"x\": {\"expr\": \"" +
                                                   repeat("(", 90) + "1" + repeat(")", 90) + " + " + "1" +
                                                   repeat("+1", 900) + "\"}}}");
  const Outcome o = run_cli("sweep " + q(ok.string()) + " --quiet --out " + q((s.path / "okout").string()));
  CHECK_MESSAGE(o.code == 0, o.err.substr(0, 300));
  CHECK(has(slurp(s.path / "okout" / "sweep.csv"), "\n902,"));
}

// ---- 4. reproduce of a sweep checks sweep.csv; duplicate keys everywhere --------------------

namespace {

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream l(line);
    while (std::getline(l, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

size_t column(const std::vector<std::string>& header, const std::string& name) {
  return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
}

// A finished two-point sweep (policy.staleness 0 and 1) in s/sw; its sweep.csv's rows.
std::vector<std::vector<std::string>> make_sweep(const Scratch& s) {
  const Outcome o = run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " +
                            q((s.path / "sw").string()));
  REQUIRE(o.code == 0);
  return csv_rows(slurp(s.path / "sw" / "sweep.csv"));
}

}  // namespace

TEST_CASE("reproduce SWEEP_DIR reports an edited sweep.csv cell as a mismatch, whatever the column") {
  Scratch s("forged");
  const auto rows = make_sweep(s);
  REQUIRE(rows.size() == 3);
  const fs::path csv = s.path / "sw" / "sweep.csv";
  const std::string original = slurp(csv);
  {
    const Outcome o = run_cli("reproduce " + q((s.path / "sw").string()));
    CHECK(o.code == 0);
    CHECK(has(o.out, "2 of 2 folders match"));
  }
  struct Edit {
    std::string column;
    std::string value;
    std::string expect;
  };
  const std::vector<Edit> edits = {
      {"final_test_accuracy", "0.999", "column 'final_test_accuracy' says '0.999'"},
      {"result_hash", "00000000000000000000000000000000", "column 'result_hash' says '0000"},
      {"server_updates", "7", "column 'server_updates' says '7'"},
      {"status", "diverged", "column 'status' says 'diverged'"},
      {"quality", "0.5", "column 'quality' says '0.5'"},
      {"seed", "99",
       "column 'seed' says '99' but the folder's summary.json gives '1': the folder holds another "
       "point's run"},
      {"policy.staleness", "5", "column 'policy.staleness' says '5'"},
  };
  for (const auto& e : edits) {
    CAPTURE(e.column);
    auto forged = rows;
    const size_t c = column(forged[0], e.column);
    REQUIRE(c < forged[0].size());
    forged[1][c] = e.value;
    std::ofstream(csv) << csv_text(forged);
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("reproduce " + q((s.path / "sw").string()));
    CHECK(o.code == 3);
    CHECK_MESSAGE(has(o.out, "MISMATCH: point 0"), o.out);
    CHECK_MESSAGE(has(o.out, "sweep.csv line 2: " + e.expect), o.out);
    CHECK(has(o.out, "1 of 2 folders match"));
    CHECK(snapshot(s.path) == before);
  }
  // Two rows whose folders are swapped: each folder holds the other point's run.
  auto swapped = rows;
  const size_t f = column(swapped[0], "folder");
  std::swap(swapped[1][f], swapped[2][f]);
  std::ofstream(csv) << csv_text(swapped);
  const Outcome o = run_cli("reproduce " + q((s.path / "sw").string()));
  CHECK(o.code == 3);
  CHECK(has(o.out,
            "column 'policy.staleness' says '0' but the folder's summary.json gives '1': the folder holds "
            "another point's run"));
  CHECK(has(o.out, "0 of 2 folders match"));
  std::ofstream(csv) << original;
}

TEST_CASE("reproduce SWEEP_DIR refuses a row whose folder is outside the sweep, before rerunning anything") {
  Scratch s("decoy");
  const auto rows = make_sweep(s);
  // A complete run outside the sweep, which would match its own rerun.
  REQUIRE(run_cli("run scenarios/sweep-tiny.json --quiet --out " + q((s.path / "decoy").string())).code == 0);
  fs::create_directory_symlink(s.path / "decoy", s.path / "sw" / "linked");
  fs::create_directories(s.path / "sw" / ".hidden");
  const size_t f = column(rows[0], "folder");
  const std::vector<std::string> folders = {
      "../decoy", (s.path / "decoy").string(), "linked", ".hidden", ".", "..", "missing", "a/../../decoy"};
  for (const std::string& folder : folders) {
    CAPTURE(folder);
    auto forged = rows;
    forged[1][f] = folder;
    std::ofstream(s.path / "sw" / "sweep.csv") << csv_text(forged);
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("reproduce " + q((s.path / "sw").string()));
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, "sweep.csv: line 2: folder '" + folder + "' is not a folder of this sweep"),
                  o.err);
    CHECK(has(o.err, "nothing was rerun"));
    CHECK(o.out.empty());
    CHECK(snapshot(s.path) == before);
  }
}

// ---- 5. Impossible runs refused up front ---------------------------------------------------

TEST_CASE("validate and run refuse a run the estimate knows cannot finish, before running anything") {
  Scratch s("impossible");
  struct Impossible {
    std::string sets;
    std::string expect;
  };
  const std::vector<Impossible> cases = {
      // 9e15 updates at the tiny run's pace end past the clock's 292 years.
      {"--set stop.max_updates=9000000000000000", "/stop/max_updates: the estimate ends this run at about"},
      {"--set stop.max_updates=9000000000000000 --set optimizer.batch_size=50",
       "past the simulator's clock range"},
      // Evaluations: eval.every_s tiny against the expected end, with no virtual_time_s to catch it.
      {"--set stop.max_updates=100000 --set eval.every_s=1e-9",
       "/eval/every_s: 1e-09 s until the expected end at about"},
      {"--set stop.max_updates=1000000 --set eval.every_s=1e-7",
       "evaluations; at most 10000000: raise eval.every_s"},
  };
  for (const auto& c : cases) {
    for (const std::string cmd : {"validate", "run"}) {
      CAPTURE(c.sets);
      CAPTURE(cmd);
      const fs::path out = s.path / "out";
      const auto before = snapshot(s.path);
      const Outcome o = run_cli(cmd + " " + kTiny + " " + c.sets +
                                (cmd == std::string("run") ? " --quiet --out " + q(out.string()) : ""));
      CHECK(o.code == 2);
      CHECK_MESSAGE(has(o.err, kTiny + ": "), o.err);
      CHECK_MESSAGE(has(o.err, c.expect), o.err);
      CHECK(has(o.err, "nothing was run"));
      CHECK(o.out.empty());  // validate prints no scenario, run no progress
      CHECK(snapshot(s.path) == before);
    }
  }
  // The same scenario within range passes validate.
  CHECK(run_cli("validate " + kTiny + " --set stop.max_updates=100000 --set eval.every_s=1e-3").code == 0);
}

// ---- 6. Out of memory has its own exit code ---------------------------------------------

TEST_CASE("out of memory exits 4 with its own message, never 3") {
  if (stalesim::testing::kAddressSanitizer) {
    MESSAGE(
        "AddressSanitizer build: its shadow memory needs more address space than ulimit -v "
        "leaves; this check runs in the Release pass");
    return;
  }
  Scratch s("oom");
  // 3,000 x 3,000 hidden units: 36 MB per parameter vector, past a 390 MiB address space once
  // eight workers hold their own; the estimate's refusal is turned off by the limit.
  const fs::path out = s.path / "out";
  const auto before = snapshot(s.path);
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q(out.string()) +
                                " --set 'model.hidden=[3000,3000]' --set 'cluster.workers=[{\"profile\": "
                                "\"gtx1080ti\", \"count\": 8}]' --set policy.type=asp",
                            "ulimit -v 400000; STALESIM_MEMORY_LIMIT=1T ");
  CHECK(o.code == 4);
  CHECK_MESSAGE(has(o.err, "stalesim: out of memory: "), o.err);
  CHECK_FALSE(has(o.err, "internal error"));
  CHECK(snapshot(s.path) == before);
  // The help says so.
  CHECK(has(run_cli("--help").out, "4 out of memory"));
}

// ---- 7. What a user wrote is printed escaped; names the filesystem takes work ---------------

TEST_CASE("a profile name with escape sequences and newlines reaches the terminal escaped") {
  Scratch s("escapes");
  const std::string evil = "evil\x1b[2J\nMATCH: forged\x07";
  const json profile = {{"name", evil},           {"description", "desc\x1b]0;title\x07 and\ttab"},
                        {"peak_fp32_tflops", 10}, {"memory_bandwidth_gbs", 500},
                        {"efficiency", 0.5},      {"overhead_us", 10},
                        {"source", "test"}};
  std::ofstream(s.path / "evil.json") << profile.dump();
  json sc = json::parse(slurp(fs::path(STALESIM_SOURCE_DIR) / kTiny));
  sc["cluster"]["workers"] = json::array({{{"profile", (s.path / "evil.json").string()}, {"count", 2}}});
  std::ofstream(s.path / "sc.json") << sc.dump();
  const std::string sc_path = q((s.path / "sc.json").string());
  // Where each command shows the name: 0 stdout, 1 stderr, 2 nowhere (run's one-line estimate).
  const std::vector<std::pair<std::string, int>> commands = {
      {"profiles " + q((s.path / "evil.json").string()), 0},
      {"validate " + sc_path, 1},
      {"timeline " + sc_path, 0},
      {"run " + sc_path + " --out " + q((s.path / "out").string()), 2},
  };
  for (const auto& entry : commands) {
    const std::string& cmd = entry.first;  // not a binding: clang 14 cannot capture one
    const int where = entry.second;
    CAPTURE(cmd);
    const Outcome o = run_cli(cmd);
    CHECK(o.code == 0);
    const std::string all = o.out + o.err;
    CHECK(all.find('\x1b') == std::string::npos);
    CHECK(all.find('\x07') == std::string::npos);
    CHECK(all.find("\nMATCH: forged") == std::string::npos);
    if (where < 2)
      CHECK_MESSAGE(has(where == 1 ? o.err : o.out, "evil\\x1b[2J\\nMATCH: forged\\x07"),
                    all.substr(0, 2000));
  }
}

TEST_CASE("reproduce prints a tampered manifest's build flags and dataset paths escaped") {
  Scratch s("tampered");
  const fs::path r = s.path / "r";
  REQUIRE(run_cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  json summary = json::parse(slurp(r / "summary.json"));
  REQUIRE(summary["manifest"].contains("flags"));
  summary["manifest"]["flags"] = "-O2\x1b[31m\nMATCH: all good";
  summary["manifest"]["datasets"] =
      json::array({{{"path", "/nonexistent\x1b[1m\nfake"}, {"bytes", 1}, {"xxh64", "0"}}});
  std::ofstream(r / "summary.json") << summary.dump(2) << "\n";
  const auto before = snapshot(s.path);
  const Outcome o = run_cli("reproduce " + q(r.string()) + " --quiet");
  CHECK(o.code == 3);  // the edited summary no longer matches the rerun's
  const std::string all = o.out + o.err;
  CHECK(all.find('\x1b') == std::string::npos);
  CHECK(all.find("\nMATCH: all good") == std::string::npos);
  CHECK_MESSAGE(has(o.err, "\\x1b[1m\\nfake"), o.err);
  CHECK_MESSAGE(has(o.err, "-O2\\x1b[31m\\nMATCH: all good"), o.err);
  CHECK(snapshot(s.path) == before);
}

TEST_CASE("an output folder name of 250 bytes works: temporaries do not grow with the name") {
  Scratch s("longname");
  const std::string name(250, 'n');
  const fs::path out = s.path / name;
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q(out.string()));
  CHECK_MESSAGE(o.code == 0, o.err);
  CHECK(fs::is_regular_file(out / "done"));
  const Outcome again = run_cli("run " + kTiny + " --quiet --force --out " + q(out.string()));
  CHECK_MESSAGE(again.code == 0, again.err);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(s.path)) entries.push_back(e.path().filename().string());
  CHECK(entries == std::vector<std::string>{name});
  // A sweep too: its sweep.csv and sweep.json temporaries and its points.
  const fs::path sw = s.path / std::string(255, 's');
  const Outcome sweep =
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + q(sw.string()));
  CHECK_MESSAGE(sweep.code == 0, sweep.err);
  CHECK(fs::is_regular_file(sw / "sweep.csv"));
}

TEST_CASE("data.path naming a file says so, instead of a file inside it being not found") {
  Scratch s("datapath");
  const fs::path file = s.write("images.gz", "not a folder");
  for (const std::string& path : std::vector<std::string>{file.string(), "/dev/null"}) {
    CAPTURE(path);
    const fs::path out = s.path / "out";
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q(out.string()) +
                              " --set data.dataset=fashion-mnist --set data.path=" + q(path));
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, path + ": data.path is not a folder (it names a file or device"), o.err);
    CHECK_FALSE(has(o.err, "not found"));
    CHECK(snapshot(s.path) == before);
  }
}

TEST_CASE("--out . in an empty directory writes in place: the shell's working directory stays") {
  Scratch s("dot");
  fs::create_directories(s.path / "here");
  struct stat before {};
  REQUIRE(::stat((s.path / "here").c_str(), &before) == 0);
  const std::string bin = STALESIM_BINARY;
  const std::string scenario = std::string(STALESIM_SOURCE_DIR) + "/" + kTiny;
  const std::string cmd = "cd " + q((s.path / "here").string()) + " && " + q(bin) + " run " + q(scenario) +
                          " --quiet --out . >/dev/null 2>" + q((s.path / "err").string());
  CHECK(std::system(cmd.c_str()) == 0);
  struct stat after {};
  REQUIRE(::stat((s.path / "here").c_str(), &after) == 0);
  CHECK(before.st_ino == after.st_ino);  // the same folder, not a swapped-in one
  CHECK(fs::is_regular_file(s.path / "here" / "done"));
  CHECK(fs::is_regular_file(s.path / "here" / "summary.json"));
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(s.path)) entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  CHECK(entries == std::vector<std::string>{"err", "here"});
  // Now a run folder: --force refuses it as the working directory.
  const std::string again = "cd " + q((s.path / "here").string()) + " && " + q(bin) + " run " + q(scenario) +
                            " --quiet --force --out . >/dev/null 2>" + q((s.path / "err").string());
  CHECK(WEXITSTATUS(std::system(again.c_str())) == 2);
  CHECK(has(slurp(s.path / "err"), "--force will not replace the working directory"));
}

TEST_CASE("an empty writable folder inside an unwritable parent is accepted and written in place") {
  // As root every folder is writable: run stalesim as nobody (setpriv), where it can be.
  std::string as;
  if (::geteuid() == 0) {
    if (std::system("command -v setpriv >/dev/null 2>&1") != 0) {
      MESSAGE("skipped: root, and no setpriv to drop privileges");
      return;
    }
    as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  Scratch s("ro");
  fs::create_directories(s.path / "locked" / "out");
  fs::permissions(s.path, fs::perms::all);
  fs::permissions(s.path / "locked" / "out", fs::perms::all);
  fs::permissions(s.path / "locked", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                         fs::perms::group_exec | fs::perms::others_read |
                                         fs::perms::others_exec);
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q((s.path / "locked" / "out").string()), as);
  CHECK_MESSAGE(o.code == 0, o.err);
  CHECK(fs::is_regular_file(s.path / "locked" / "out" / "done"));
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(s.path / "locked"))
    entries.push_back(e.path().filename().string());
  CHECK(entries == std::vector<std::string>{"out"});
  // A missing folder there cannot be made: refused with the reason, nothing made.
  const Outcome no =
      run_cli("run " + kTiny + " --quiet --out " + q((s.path / "locked" / "new").string()), as);
  CHECK(no.code == 2);
  CHECK_MESSAGE(
      has(no.err, "output folder not writable: " + (s.path / "locked").string() + ": Permission denied"),
      no.err);
  CHECK_FALSE(fs::exists(s.path / "locked" / "new"));
  fs::permissions(s.path / "locked", fs::perms::owner_all);
}

TEST_CASE("check_layers reads every enum's names table: an option that becomes an enum is covered at once") {
  // Issue 47 point 6: the names compared as strings outside the loader come from the hand list and
  // from every STALESIM_ENUM_NAMES table, so a new enum's values need no edit of the script.
  Scratch s("layers-enum");
  for (const char* d : {"sim", "models", "base", "tools"}) fs::create_directories(s.path / d);
  s.write("sim/options.hpp",
          "enum class Zq { kAlpha, kBeta };\nSTALESIM_ENUM_NAMES(Zq, {Zq::kAlpha, \"zq-alpha\"}, {Zq::kBeta, "
          "\"zq-beta\"})\n");
  const auto status = [&] { return check_layers_on(s); };
  CHECK(status() == 0);
  s.write("sim/uses.cpp", "bool f(const std::string& v) { return v == \"zq-beta\"; }\n");
  CHECK(status() == 1);
  s.write("sim/uses.cpp", "bool f(Zq v) { return v == Zq::kBeta; }\n");
  CHECK(status() == 0);
}
