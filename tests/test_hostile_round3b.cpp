// Hostile input, round three, second part (issue 30 point 6 and the review of the safe-output
// code): the memory estimate against the measured peak over a grid of models and cache modes,
// and the run folder's replace under failures and races: a failed rename whose restore fails
// keeps the old run, the exchange checks again what it swaps out, figures our plot scripts write
// into a run folder are ours by their record, a temporary killed before its marker is ours to
// remove, another machine's temporary is never taken for dead, two writers into one empty folder
// do not mix, markers are not read through links, and compare's output is written without a
// check-then-write race. Every case asserts the exit code (or the exception), the message, and
// that nothing outside the output folder changed.

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/estimate/memory_estimate.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/scenario/load.hpp"
#include "tests/cli_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using stalesim::testing::dead_pid;
using stalesim::testing::has;
using stalesim::testing::kAddressSanitizer;
using stalesim::testing::Outcome;
using stalesim::testing::q;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;
using stalesim::testing::snapshot;

namespace {

const std::string kTiny = "tests/golden/tiny/scenario.json";

// A temporary's marker as stalesim writes it.
json marker(const std::string& kind, long pid, const std::string& token, const std::string& target,
            const std::string& host) {
  return json{{"stalesim_temporary", 1}, {"kind", kind},    {"pid", pid}, {"host", host},
              {"token", token},          {"target", target}};
}

fs::path temporary_name(const fs::path& parent, const std::string& kind, long pid, const std::string& token) {
  return parent / (".stalesim-" + kind + "-" + std::to_string(pid) + "-" + token);
}

// A finished run of the tiny scenario in `dir` (returns its summary.json).
std::string tiny_run(const fs::path& dir, const std::string& extra = "") {
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q(dir.string()) + extra);
  REQUIRE_MESSAGE(o.code == 0, o.err);
  return slurp(dir / "summary.json");
}

}  // namespace

// ---- 6. The memory estimate against the measured peak ----------------------------------------

// One cell of the grid: a scenario, the threads it runs with, what it exercises.
struct MemoryCell {
  std::string name;
  json scenario;
  int threads = 1;
};

TEST_CASE("the memory estimate is within 30% of the measured peak RSS for every model and cache mode") {
  if (kAddressSanitizer) {
    MESSAGE("AddressSanitizer build: peak RSS counts shadow memory; this check runs in the Release pass");
    return;
  }
  // Each cell is sized so that what it exercises dominates the process's own 8 MiB, and runs in
  // about a second. A fast network (no link is the bottleneck) unless the cell says otherwise.
  const json base = json::parse(R"({ "seed": 1, "optimizer": { "batch_size": 4, "lr": 0.01 },
    "model": { "type": "mlp", "hidden": [200] }, "policy": { "type": "asp" },
    "data": { "dataset": "blobs", "blobs": { "classes": 10, "features": 1000, "train": 2000, "test": 50 } },
    "cluster": { "workers": [ { "profile": "gtx1080ti", "count": 64 } ],
                 "network": { "bandwidth_gbps": 1000, "server_bandwidth_gbps": 1000 } },
    "stop": { "max_updates": 200 }, "eval": { "every_s": 1000 } })");
  std::vector<MemoryCell> cells;
  const auto cell = [&](const std::string& name, const std::string& patch, int threads = 1) {
    json j = base.patch(json::parse(patch));
    j["name"] = name;
    cells.push_back({name, j, threads});
  };
  // mlp: DC-ASGD (a version per worker, read again when its push is applied: the rule's backups),
  // and BSP with four gradient threads (the pool's gradients).
  cell("mlp-dcasgd", R"([{"op": "add", "path": "/optimizer/rule", "value": "dcasgd"}])");
  cell("mlp-bsp-4-threads",
       R"([{"op": "replace", "path": "/model/hidden", "value": [400]},
           {"op": "replace", "path": "/policy", "value": {"type": "bsp"}}])",
       4);
  // cnn: 28 x 28 images (parameters dominate) and 128 x 128 (the per-batch scratch dominates).
  cell("cnn-28", R"([{"op": "replace", "path": "/model", "value": {"type": "cnn"}},
                     {"op": "replace", "path": "/data/blobs/features", "value": 784},
                     {"op": "replace", "path": "/cluster/workers/0/count", "value": 200}])");
  cell("cnn-128", R"([{"op": "replace", "path": "/model", "value": {"type": "cnn"}},
                      {"op": "replace", "path": "/data/blobs", "value":
                        {"classes": 10, "features": 16384, "train": 300, "test": 50}},
                      {"op": "replace", "path": "/cluster/workers/0/count", "value": 8},
                      {"op": "replace", "path": "/stop/max_updates", "value": 20}])");
  // cnn on 192 x 192 images with two gradient threads (issue 46): a second model instance's
  // scratch, and the pool's gradients, one per worker at most (4 workers here, not 4 per thread
  // with a pinned version each: estimated 1.73x the peak before).
  cell("cnn-192-2-threads",
       R"([{"op": "replace", "path": "/model", "value": {"type": "cnn"}},
           {"op": "replace", "path": "/data/blobs", "value":
             {"classes": 10, "features": 36864, "train": 100, "test": 20}},
           {"op": "replace", "path": "/cluster/workers/0/count", "value": 4},
           {"op": "replace", "path": "/stop/max_updates", "value": 20}])",
       2);
  cell("mf", R"([{"op": "replace", "path": "/model", "value": {"type": "mf", "rank": 16}},
                 {"op": "replace", "path": "/data", "value": {"dataset": "ratings", "ratings":
                   {"rows": 20000, "cols": 20000, "train": 5000, "test": 100}}}])");
  cell("lda", R"([{"op": "replace", "path": "/model", "value": {"type": "lda", "topics": 20}},
                  {"op": "replace", "path": "/optimizer/lr", "value": 1},
                  {"op": "replace", "path": "/data", "value": {"dataset": "corpus", "corpus":
                    {"vocabulary": 40000, "documents": 500, "min_length": 10, "max_length": 20}}}])");
  // The lazy cache: a small bound (staleness + 1 own pushes per worker); a huge bound on a fast
  // network (the run's own pushes, about stop.max_updates, bound them); a bound of 30 on a
  // saturated server link (the workers run ahead of the server until the bound stops them).
  cell("lazy-s2",
       R"([{"op": "replace", "path": "/policy", "value": {"type": "ssp", "staleness": 2, "cache": "lazy"}},
                      {"op": "replace", "path": "/cluster/workers/0/count", "value": 16},
                      {"op": "replace", "path": "/stop/max_updates", "value": 320}])");
  cell(
      "lazy-s1000000",
      R"([{"op": "replace", "path": "/policy", "value": {"type": "ssp", "staleness": 1000000, "cache": "lazy"}},
           {"op": "replace", "path": "/cluster/workers/0/count", "value": 8},
           {"op": "replace", "path": "/stop/max_updates", "value": 100}])");
  cell("lazy-s30-saturated",
       R"([{"op": "replace", "path": "/policy", "value": {"type": "ssp", "staleness": 30, "cache": "lazy"}},
           {"op": "remove", "path": "/cluster/network"},
           {"op": "replace", "path": "/cluster/workers/0/count", "value": 8},
           {"op": "replace", "path": "/stop/max_updates", "value": 100}])");
  cell("essp-s3", R"([{"op": "replace", "path": "/policy", "value": {"type": "essp", "staleness": 3}},
                      {"op": "replace", "path": "/cluster/workers/0/count", "value": 16},
                      {"op": "replace", "path": "/stop/max_updates", "value": 320}])");

  Scratch s("rss");
  std::string table = "\n| cell | threads | estimate | peak RSS | estimate / peak |\n|---|---|---|---|---|\n";
  for (const auto& c : cells) {
    CAPTURE(c.name);
    const fs::path file = s.path / (c.name + ".json");
    std::ofstream(file) << c.scenario.dump();
    const auto sc = stalesim::load_scenario_file(file.string());
    const double estimate = stalesim::estimate_memory(sc, c.threads).total();
    const double measured = stalesim::testing::peak_rss_of_run(file, s.path / c.name, c.threads);
    REQUIRE(measured > 0);
    table += "| " + c.name + " | " + std::to_string(c.threads) + " | " + stalesim::format_bytes(estimate) +
             " | " + stalesim::format_bytes(measured) + " | " + std::to_string(estimate / measured) + " |\n";
    CHECK(estimate > 40.0 * 1024 * 1024);  // large enough for the check to mean something
    CHECK(estimate == doctest::Approx(measured).epsilon(0.3));
  }
  MESSAGE(table);
}

TEST_CASE("a large-image cnn is refused up front at the threads it would run on, and runs where it fits") {
  if (kAddressSanitizer) {
    MESSAGE("AddressSanitizer build: peak RSS counts shadow memory; this check runs in the Release pass");
    return;
  }
  // 192 x 192 images, 4 workers: about 227 MiB at one gradient thread (peak 241 MiB), 414 MiB at
  // two (peak 347 MiB: a second model instance and the pool's gradients). Under a 320 MiB limit
  // the two-thread run is refused before anything is allocated (exit 2, never exit 4 mid-run),
  // validate says the same figure, and the one-thread run fits and completes.
  const json j = json::parse(R"({ "name": "cnn-192", "seed": 1, "optimizer": { "batch_size": 4, "lr": 0.01 },
    "model": { "type": "cnn" }, "policy": { "type": "asp" },
    "data": { "dataset": "blobs", "blobs": { "classes": 10, "features": 36864, "train": 100, "test": 20 } },
    "cluster": { "workers": [ { "profile": "gtx1080ti", "count": 4 } ],
                 "network": { "bandwidth_gbps": 1000, "server_bandwidth_gbps": 1000 } },
    "stop": { "max_updates": 20 }, "eval": { "every_s": 1000 } })");
  Scratch s("cnn-limit");
  const std::string file = (s.path / "cnn.json").string();
  std::ofstream(file) << j.dump();
  const auto sc = stalesim::load_scenario_file(file);
  const double one = stalesim::estimate_memory(sc, 1).total(), two = stalesim::estimate_memory(sc, 2).total();
  REQUIRE(one < 320.0 * 1024 * 1024);
  REQUIRE(two > 320.0 * 1024 * 1024);
  const std::string limit = "STALESIM_MEMORY_LIMIT=320M ";
  const Outcome shown = run_cli("validate " + q(file) + " --threads 2", limit);
  CHECK_MESSAGE(shown.code == 0, shown.err);
  CHECK_MESSAGE(has(shown.err, "memory about " + stalesim::format_bytes(two)), shown.err);
  const Outcome refused =
      run_cli("run " + q(file) + " --threads 2 --out " + q((s.path / "two").string()), limit);
  CHECK(refused.code == 2);
  CHECK_MESSAGE(has(refused.err, "needs about " + stalesim::format_bytes(two)), refused.err);
  CHECK_FALSE(fs::exists(s.path / "two"));
  const Outcome ran =
      run_cli("run " + q(file) + " --quiet --threads 1 --out " + q((s.path / "one").string()), limit);
  CHECK_MESSAGE(ran.code == 0, ran.err);
  CHECK(fs::exists(s.path / "one" / "done"));
}

TEST_CASE("a lazy cache with a huge staleness bound is not refused when its run is short") {
  // Before: staleness + 1 own pushes per worker whatever the run's length: 64 workers x 1,000,001
  // pushes of a 202,210-parameter model was "needs about 48 TiB". The run's pushes bound them.
  json j = json::parse(R"({ "name": "huge", "seed": 1, "optimizer": { "batch_size": 4, "lr": 0.01 },
    "model": { "type": "mlp", "hidden": [200] },
    "policy": { "type": "ssp", "staleness": 1000000, "cache": "lazy" },
    "data": { "dataset": "blobs", "blobs": { "classes": 10, "features": 1000, "train": 2000, "test": 50 } },
    "cluster": { "workers": [ { "profile": "gtx1080ti", "count": 64 } ],
                 "network": { "bandwidth_gbps": 1000, "server_bandwidth_gbps": 1000 } },
    "stop": { "max_updates": 1280 }, "eval": { "every_s": 1000 } })");
  Scratch s("huge");
  std::ofstream(s.path / "huge.json") << j.dump();
  const auto before = snapshot(s.path);
  const Outcome ok = run_cli("validate " + q((s.path / "huge.json").string()), "STALESIM_MEMORY_LIMIT=4G ");
  CHECK_MESSAGE(ok.code == 0, ok.err);
  CHECK(has(ok.err, "memory about "));
  // Without stop.max_updates nothing bounds the pushes: refused, naming the workers' state.
  j["stop"] = {{"virtual_time_s", 10}};
  std::ofstream(s.path / "huge.json") << j.dump();
  const Outcome refused =
      run_cli("run " + q((s.path / "huge.json").string()) + " --quiet --out " + q((s.path / "out").string()),
              "STALESIM_MEMORY_LIMIT=4G ");
  CHECK(refused.code == 2);
  CHECK_MESSAGE(has(refused.err, "needs about "), refused.err);
  CHECK(has(refused.err, "workers' state "));
  CHECK_FALSE(fs::exists(s.path / "out"));
}

// ---- Safe output: review findings ------------------------------------------------------------

TEST_CASE("(5) a failed rename whose restore also fails keeps the old run, and says where") {
  Scratch s("restore-fails");
  const fs::path target = s.path / "r";
  const std::string old_summary = tiny_run(target);
  const fs::path temporary = stalesim::create_temporary(s.path, "partial", "r");
  tiny_run(temporary / "run", " --set seed=7");
  // Between the two renames something takes the name (a plain file): neither the new run nor the
  // old one can go there.
  std::string message;
  try {
    stalesim::install_by_renames(temporary, target, [&](std::string_view step) {
      if (step == "moved-old") std::ofstream(target) << "squatter\n";
    });
  } catch (const stalesim::IoError& e) {
    message = e.what();
  }
  CHECK_MESSAGE(has(message, "the old run could not be put back"), message);
  CHECK(has(message, "is kept in " + (temporary / "old").string()));
  stalesim::discard_temporary(temporary);  // what a failed write does: the old run must stay
  CHECK(slurp(temporary / "old" / "summary.json") == old_summary);
  CHECK_FALSE(fs::exists(temporary / "run"));
  CHECK(slurp(target) == "squatter\n");
  // Once the name is free and the writer gone, the next write puts it back. (The temporary is this
  // process's: taken for dead only under a dead PID, so the marker is rewritten as a dead one's.)
  fs::remove(target);
  const long dead = dead_pid();
  const std::string token =
      temporary.filename().string().substr(temporary.filename().string().rfind('-') + 1);
  const fs::path orphan = temporary_name(s.path, "partial", dead, token);
  fs::rename(temporary, orphan);
  std::ofstream(orphan / ".stalesim-temporary")
      << marker("partial", dead, token, "r", stalesim::testing::host_name()).dump();
  stalesim::clean_stale_temporaries(s.path, "r");
  CHECK(slurp(target / "summary.json") == old_summary);
  CHECK_FALSE(fs::exists(orphan));
}

TEST_CASE("(6) the exchange checks again what it swaps out, and swaps a foreign folder back") {
  Scratch s("exchange");
  const fs::path target = s.path / "r";
  tiny_run(target);
  const fs::path temporary = stalesim::create_temporary(s.path, "partial", "r");
  const std::string fresh = tiny_run(temporary / "run", " --set seed=7");
  // After the check, before the swap, the user puts their own folder under the name.
  std::string message;
  try {
    stalesim::install_folder(temporary, target, [&](std::string_view step) {
      if (step != "swap") return;
      fs::remove_all(target);
      fs::create_directories(target);
      std::ofstream(target / "thesis.tex") << "years of work\n";
    });
  } catch (const stalesim::IoError& e) {
    message = e.what();
  }
  CHECK_MESSAGE(has(message, "changed while the run was being written"), message);
  CHECK(has(message, "'thesis.tex'"));
  CHECK(has(message, "nothing was deleted"));
  CHECK(slurp(target / "thesis.tex") == "years of work\n");
  CHECK(slurp(temporary / "run" / "summary.json") == fresh);  // swapped back: the new run is still ours
  // The same through the two-rename way.
  message.clear();
  try {
    stalesim::install_by_renames(temporary, target);
  } catch (const stalesim::IoError& e) {
    message = e.what();
  }
  CHECK_MESSAGE(has(message, "changed while the run was being written"), message);
  CHECK(slurp(target / "thesis.tex") == "years of work\n");
  CHECK_FALSE(fs::exists(temporary / "old"));
  fs::remove_all(temporary);
}

TEST_CASE("(6) figures our plot scripts write into a run folder are ours by their record, not their names") {
  Scratch s("plots");
  const fs::path r = s.path / "r";
  tiny_run(r);
  // A plot script writes its figures into the run folder and records them in plots.list.
  const std::string plot = "cd " + q(STALESIM_SOURCE_DIR) + " && /usr/bin/python3 plots/curves.py " +
                           q(r.string()) + " >/dev/null 2>&1";
  REQUIRE(std::system(plot.c_str()) == 0);
  CHECK(fs::exists(r / "curves.png"));
  CHECK(has(slurp(r / "plots.list"), "curves.png\n"));
  const auto outside = snapshot(s.path, r);
  const Outcome again = run_cli("run " + kTiny + " --quiet --force --out " + q(r.string()));
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK_FALSE(fs::exists(r / "curves.png"));  // replaced with the run folder
  CHECK(snapshot(s.path, r) == outside);
  // A file of the same kind that nobody recorded is the user's: the folder is foreign.
  s.write("r/my-figure.png", "mine");
  const auto before = snapshot(s.path);
  const Outcome refused = run_cli("run " + kTiny + " --quiet --force --out " + q(r.string()));
  CHECK(refused.code == 2);
  CHECK_MESSAGE(has(refused.err, "holds 'my-figure.png', which no stalesim run or sweep writes"),
                refused.err);
  CHECK(snapshot(s.path) == before);
  // A listed name with a path in it proves nothing.
  s.write("r/plots.list", "../my-figure.png\nmy-figure.png/x\n");
  CHECK(run_cli("run " + kTiny + " --quiet --force --out " + q(r.string())).code == 2);
  CHECK(slurp(r / "my-figure.png") == "mine");
}

TEST_CASE("(7) a temporary killed between its mkdir and its marker is removed when it holds nothing") {
  Scratch s("unmarked");
  const long dead = dead_pid();
  // The host tag create_temporary puts first in the token: learn it from a real temporary.
  const fs::path real = stalesim::create_temporary(s.path, "tmp", "x");
  const std::string tag = real.filename().string().substr(real.filename().string().rfind('-') + 1, 8);
  fs::remove_all(real);
  const fs::path empty = temporary_name(s.path, "partial", dead, tag + "000000a1");
  fs::create_directories(empty);
  const fs::path half = temporary_name(s.path, "partial", dead, tag + "000000a2");
  s.write(half.filename().string() + "/.stalesim-temporary.part", "{\"kind\": \"par");
  // Kept: another machine's tag, a live writer, or anything else inside.
  const std::string other_tag = tag == "00000000" ? "11111111" : "00000000";
  const fs::path other_host = temporary_name(s.path, "partial", dead, other_tag + "000000a3");
  fs::create_directories(other_host);
  const fs::path alive = temporary_name(s.path, "partial", ::getpid(), tag + "000000a4");
  fs::create_directories(alive);
  const fs::path holding = temporary_name(s.path, "partial", dead, tag + "000000a5");
  s.write(holding.filename().string() + "/notes.txt", "mine");
  const auto kept = snapshot(s.path, empty);
  stalesim::clean_stale_temporaries(s.path, "r");
  CHECK_FALSE(fs::exists(empty));
  CHECK_FALSE(fs::exists(half));
  for (const auto& k : {other_host, alive, holding}) {
    CAPTURE(k);
    CHECK(fs::exists(k));
  }
  CHECK(slurp(holding / "notes.txt") == "mine");
  // And through the binary: such a leftover beside the output folder does not stop a run.
  const fs::path leftover = temporary_name(s.path, "partial", dead, tag + "000000a6");
  fs::create_directories(leftover);
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q((s.path / "r").string()));
  CHECK_MESSAGE(o.code == 0, o.err);
  CHECK_FALSE(fs::exists(leftover));
  CHECK(fs::exists(other_host));
}

TEST_CASE("(8) another machine's temporary is never taken for dead, whatever its PID") {
  Scratch s("host");
  tiny_run(s.path / "r");
  const long dead = dead_pid();
  const fs::path theirs = temporary_name(s.path, "partial", dead, "00000000000000b1");
  fs::create_directories(theirs / "run");
  std::ofstream(theirs / "run" / "metrics.csv") << "their run\n";
  std::ofstream(theirs / ".stalesim-temporary")
      << marker("partial", dead, "00000000000000b1", "r", "elsewhere").dump();
  const fs::path older = temporary_name(s.path, "partial", dead, "00000000000000b2");  // no host recorded
  fs::create_directories(older);
  std::ofstream(older / ".stalesim-temporary")
      << json{{"kind", "partial"}, {"pid", dead}, {"token", "00000000000000b2"}, {"target", "r"}}.dump();
  const fs::path mine = temporary_name(s.path, "partial", dead, "00000000000000b3");
  fs::create_directories(mine);
  std::ofstream(mine / ".stalesim-temporary")
      << marker("partial", dead, "00000000000000b3", "r", stalesim::testing::host_name()).dump();
  const Outcome o = run_cli("run " + kTiny + " --quiet --force --out " + q((s.path / "r").string()));
  CHECK_MESSAGE(o.code == 0, o.err);
  CHECK(slurp(theirs / "run" / "metrics.csv") == "their run\n");
  CHECK(fs::exists(older));
  CHECK_FALSE(fs::exists(mine));
}

TEST_CASE("(9) two runs started into one empty folder do not mix: one writes it, the other is refused") {
  Scratch s("two-writers");
  const fs::path r = s.path / "r";
  fs::create_directories(r);
  const auto outside = snapshot(s.path, r);
  const std::string cmd = std::string(STALESIM_BINARY) + " run " + kTiny + " --quiet --out " + q(r.string());
  // Both at once, from a shell: their exit codes and messages in files.
  const std::string script =
      "cd " + q(STALESIM_SOURCE_DIR) + " && (" + cmd + " --set seed=1 >" + q((s.path / "a.out").string()) +
      " 2>&1; echo $? >" + q((s.path / "a.rc").string()) + ") & (" + cmd + " --set seed=2 >" +
      q((s.path / "b.out").string()) + " 2>&1; echo $? >" + q((s.path / "b.rc").string()) + ") & wait";
  REQUIRE(std::system(script.c_str()) == 0);
  const std::string a = slurp(s.path / "a.rc"), b = slurp(s.path / "b.rc");
  CAPTURE(slurp(s.path / "a.out"));
  CAPTURE(slurp(s.path / "b.out"));
  CHECK(((a == "0\n" && b == "2\n") || (a == "2\n" && b == "0\n")));
  const std::string refused = a == "2\n" ? slurp(s.path / "a.out") : slurp(s.path / "b.out");
  CHECK((has(refused, "output folder exists and is not empty") ||
         has(refused, "another process wrote into this folder while the run was being written")));
  // One run's files only: its done marker holds the hash its summary reports.
  const json summary = json::parse(slurp(r / "summary.json"));
  CHECK(slurp(r / "done") == summary["result_hash"].get<std::string>() + "\n");
  for (const auto& e : fs::directory_iterator(r))
    CHECK_FALSE(e.path().filename().string().starts_with(".stalesim-"));
  fs::remove(s.path / "a.out"), fs::remove(s.path / "b.out"), fs::remove(s.path / "a.rc"),
      fs::remove(s.path / "b.rc");
  CHECK(snapshot(s.path, r) == outside);
  // The lock itself: a second in-place install into a folder that now holds a run is refused.
  const fs::path temporary = stalesim::create_temporary(r, "partial", ".");
  fs::create_directories(temporary / "run");
  std::ofstream(temporary / "run" / "summary.json") << "{}\n";
  std::string message;
  try {
    stalesim::install_in_place(temporary, r);
  } catch (const stalesim::IoError& e) {
    message = e.what();
  }
  CHECK_MESSAGE(has(message, "another process wrote into this folder"), message);
  CHECK(json::parse(slurp(r / "summary.json")) == summary);
  fs::remove_all(temporary);
}

TEST_CASE("(10) a temporary's marker is not read through a symbolic link") {
  Scratch s("marker-link");
  const long dead = dead_pid();
  const std::string token = "00000000000000c1";
  const fs::path t = temporary_name(s.path, "partial", dead, token);
  fs::create_directories(t / "run");
  std::ofstream(t / "run" / "notes.txt") << "mine\n";
  // A marker that agrees in every field, but lies elsewhere.
  std::ofstream(s.path / "elsewhere.json")
      << marker("partial", dead, token, "r", stalesim::testing::host_name()).dump();
  fs::create_symlink(s.path / "elsewhere.json", t / ".stalesim-temporary");
  CHECK_FALSE(stalesim::our_temporary(t).has_value());
  const auto before = snapshot(s.path);
  stalesim::clean_stale_temporaries(s.path, "r");
  CHECK(snapshot(s.path) == before);
  // Inside a run folder it is foreign: --force refuses the folder.
  tiny_run(s.path / "r");
  fs::rename(t, s.path / "r" / t.filename());
  const auto with = snapshot(s.path);
  const Outcome o = run_cli("run " + kTiny + " --quiet --force --out " + q((s.path / "r").string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, "holds the folder '" + t.filename().string() + "'"), o.err);
  CHECK(snapshot(s.path) == with);
}

TEST_CASE("(14) compare writes its output without a check-then-write race, and parses bounded") {
  Scratch s("compare");
  tiny_run(s.path / "a");
  tiny_run(s.path / "b", " --set seed=3");
  const std::string runs = q((s.path / "a").string()) + " " + q((s.path / "b").string());
  const fs::path out = s.path / "c.json";
  // Written where nothing is; then replaced, being ours.
  Outcome o = run_cli("compare " + runs + " --json " + q(out.string()));
  REQUIRE_MESSAGE(o.code == 0, o.err);
  CHECK(json::parse(slurp(out)).contains("staleness_ks"));
  o = run_cli("compare " + runs + " --json " + q(out.string()));
  CHECK_MESSAGE(o.code == 0, o.err);
  // A link named like the output, to a compare.json elsewhere: not ours (never written through).
  fs::rename(out, s.path / "kept.json");
  fs::create_symlink(s.path / "kept.json", out);
  auto before = snapshot(s.path);
  o = run_cli("compare " + runs + " --json " + q(out.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, "exists and is not a compare.json of stalesim's"), o.err);
  CHECK(snapshot(s.path) == before);
  // A user's file: refused, untouched.
  fs::remove(out);
  std::ofstream(out) << "my notes\n";
  before = snapshot(s.path);
  o = run_cli("compare " + runs + " --json " + q(out.string()));
  CHECK(o.code == 2);
  CHECK(has(o.err, "exists and is not a compare.json of stalesim's"));
  CHECK(snapshot(s.path) == before);
  // A summary nested past the cap, or with a duplicate key: refused, exit 2, nothing written.
  fs::remove(out);
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "[";
  std::ofstream(s.path / "b" / "summary.json") << deep;
  before = snapshot(s.path);
  o = run_cli("compare " + runs + " --json " + q(out.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, "nested deeper than 64 levels"), o.err);
  CHECK(snapshot(s.path) == before);
  std::ofstream(s.path / "b" / "summary.json") << R"({"workers": [], "workers": []})";
  o = run_cli("compare " + runs + " --json " + q(out.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, "duplicate key at /workers"), o.err);
  CHECK_FALSE(fs::exists(out));
}
