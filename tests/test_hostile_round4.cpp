// Hostile input, round four (issue 46, points 1, 2, 6, 7 and 9): the newer commands (calibrate,
// compare, summarize, reproduce, the topology outputs) held to the standard of run and sweep. A
// table of cases per class of defect: writes never go through a symbolic link nor outside the
// output folder; every value read back from a run or sweep folder is checked (a missing key, a
// wrong type, NaN, a negative count, a header-only or repeated CSV is exit 2 naming the file and
// the JSON path or line and column); our own files (summarize's, the plots') are recognised by every
// command that checks a folder; text from files reaches the terminal escaped and CSV is quoted per
// RFC 4180. Every case asserts the exit code, the message and that nothing outside changed.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/analysis/csv_input.hpp"
#include "sim/analysis/summarize.hpp"
#include "sim/output/outputs.hpp"
#include "tests/cli_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using stalesim::testing::csv_text;
using stalesim::testing::has;
using stalesim::testing::Outcome;
using stalesim::testing::q;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;
using stalesim::testing::snapshot;

namespace {

const std::string kTiny = "tests/golden/tiny/scenario.json";

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A finished run of the tiny scenario with gradients.csv in `dir`.
void tiny_run(const fs::path& dir) {
  const Outcome o = run_cli("run " + kTiny + " --quiet --record gradients --out " + q(dir.string()));
  REQUIRE_MESSAGE(o.code == 0, o.err);
}

void copy_run(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

// A finished sweep (policy.staleness 0 and 1, seeds 1 and 2) in `dir`; its sweep.csv's rows.
std::vector<std::vector<std::string>> tiny_sweep(const fs::path& dir) {
  const Outcome o =
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --seeds 1,2 --quiet --out " +
              q(dir.string()));
  REQUIRE_MESSAGE(o.code == 0, o.err);
  return stalesim::parse_csv(slurp(dir / "sweep.csv"));
}

size_t col(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  REQUIRE(it != header.end());
  return static_cast<size_t>(it - header.begin());
}

bool no_escape_char(const std::string& text) { return text.find('\x1b') == std::string::npos; }

}  // namespace

// ---- 1. Writes: never through a link, never outside the folder ----------------------------------

TEST_CASE("calibrate checks --out before measuring and never writes through a symbolic link") {
  Scratch s("calibrate");
  const fs::path victim = s.write("outside/victim.json", "{\"mine\": true}\n");
  const fs::path d = s.path / "cal";
  fs::create_directories(d);
  struct Case {
    std::string name;
    std::function<void()> setup;
    std::string flags;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"profile.json links to a user's file, with --force",
       [&] { fs::create_symlink(victim, d / "profile.json"); }, " --force",
       "profile.json: is a symbolic link"},
      {"network.json is a dangling link out of the folder, without --force",
       [&] { fs::create_symlink(s.path / "outside" / "new.json", d / "network.json"); }, "",
       "network.json: is a symbolic link"},
      {"profile.json is a user's own file, with --force",
       [&] { write(d / "profile.json", "{\"mine\": 1}\n"); }, " --force",
       "profile.json: exists and is not a file calibrate wrote"},
      {"profile.json exists, without --force", [&] { write(d / "profile.json", "{}\n"); }, "",
       "profile.json: exists; --force replaces it"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    fs::remove_all(d);
    fs::create_directories(d);
    c.setup();
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("calibrate --cpu " + kTiny + " --quiet --out " + q(d.string()) + c.flags);
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, c.expect), o.err);
    CHECK(snapshot(s.path) == before);  // the user's file, the link and the folder as they were
    CHECK(!fs::exists(s.path / "outside" / "new.json"));
  }
  // --out naming a file: refused up front, not an internal error after measuring.
  const fs::path file = s.write("a-file", "mine\n");
  const Outcome o = run_cli("calibrate --cpu " + kTiny + " --quiet --out " + q(file.string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(has(o.err, "a-file: exists and is not a folder"), o.err);
  CHECK(!has(o.err, "internal error"));
  CHECK(slurp(file) == "mine\n");
  // The GPU calibrate's --out FILE: a link is refused before any device is looked for.
  fs::create_symlink(victim, s.path / "gpu.json");
  const Outcome g = run_cli("calibrate --model mlp --out " + q((s.path / "gpu.json").string()));
  CHECK(g.code == 2);
  CHECK_MESSAGE(has(g.err, "gpu.json: is a symbolic link"), g.err);
  CHECK(slurp(victim) == "{\"mine\": true}\n");
}

TEST_CASE("summarize never writes through a symbolic link in the sweep folder") {
  Scratch s("summarize-link");
  tiny_sweep(s.path / "sw");
  const fs::path victim = s.write("victim.csv", "mine\n");
  for (const char* name : {"sweep-summary.csv", "curves.csv"}) {
    CAPTURE(name);
    fs::create_symlink(victim, s.path / "sw" / name);
    const Outcome o = run_cli("summarize " + q((s.path / "sw").string()) + " --quiet");
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, std::string(name) + ": exists and is not a file"), o.err);
    CHECK(slurp(victim) == "mine\n");
    CHECK(fs::is_symlink(s.path / "sw" / name));
    fs::remove(s.path / "sw" / name);
  }
}

// ---- 2. Reads: every value checked ---------------------------------------------------------------

TEST_CASE(
    "compare refuses a summary.json with a key it reads missing or of the wrong type, naming the path") {
  Scratch s("compare-json");
  tiny_run(s.path / "a");
  const json good = json::parse(slurp(s.path / "a" / "summary.json"));
  // Every value compare reads, each removed and each given a wrong value.
  const std::vector<std::pair<std::string, json>> fields = {
      {"/virtual_time_s", "1"},        {"/time_to_target_s", -1},     {"/staleness/mean", "x"},
      {"/missed_updates/mean", -2},    {"/workers", json::object()},  {"/workers/0/id", "zero"},
      {"/workers/0/profile", 3},       {"/workers/0/iterations", -5}, {"/workers/0/wait_s", 1e300},
      {"/workers/0/wait_fraction", 2}, {"/manifest", json::array()},  {"/staleness", 7}};
  for (const auto& [pointer, wrong] : fields) {
    const std::string ptr = pointer;
    CAPTURE(ptr);
    for (const bool remove : {true, false}) {
      CAPTURE(remove);
      json forged = good;
      const json::json_pointer p(ptr);
      if (remove)
        forged[p.parent_pointer()].erase(p.back());
      else
        forged[p] = wrong;
      copy_run(s.path / "a", s.path / "b");
      write(s.path / "b" / "summary.json", forged.dump(2));
      const auto before = snapshot(s.path);
      const Outcome o = run_cli("compare " + q((s.path / "a").string()) + " " + q((s.path / "b").string()) +
                                " --json " + q((s.path / "c.json").string()));
      CHECK(o.code == 2);
      CHECK_MESSAGE(has(o.err, "b/summary.json: " + ptr + (remove ? ": missing" : ": expected")), o.err);
      CHECK(!has(o.err, "internal error"));
      CHECK(snapshot(s.path) == before);  // no compare.json
    }
  }
}

TEST_CASE("compare refuses forged CSV files, naming the file, line and column") {
  Scratch s("compare-csv");
  tiny_run(s.path / "a");
  struct Case {
    std::string file;
    std::function<std::string(std::string)> edit;
    std::string expect;
  };
  // Replaces the first cell of line `line` (1-based) column `c` (0-based) with `v`.
  const auto cell = [](int line, size_t c, const std::string& v) {
    return [=](std::string text) {
      auto rows = stalesim::parse_csv(text);
      rows[static_cast<size_t>(line - 1)][c] = v;
      return csv_text(rows);
    };
  };
  const auto header_only = [](std::string text) { return text.substr(0, text.find('\n') + 1); };
  const auto header_twice = [](std::string text) { return text + text.substr(0, text.find('\n') + 1); };
  const auto joined = [](std::string text) { return text + text; };
  const std::vector<Case> cases = {
      {"staleness.csv", cell(2, 1, "nan"),
       "staleness.csv: line 2, column 2 (staleness_gradients): expected an integer"},
      {"staleness.csv", cell(2, 1, "-4"),
       "line 2, column 2 (staleness_gradients): expected an integer in [0, 9007199254740992], got '-4'"},
      {"staleness.csv", cell(3, 2, "1.5"), "line 3, column 3 (missed_updates_gradients)"},
      {"staleness.csv", cell(3, 0, "0"), "line 3, column 1 (value): expected 1"},
      {"staleness.csv", header_only, "staleness.csv: 0 rows after the header"},
      {"staleness.csv", header_twice, "repeats the header"},
      {"staleness.csv", joined, "repeats the header"},
      {"staleness.csv", [](std::string) { return std::string(); }, "staleness.csv: empty"},
      {"staleness.csv", [](std::string) { return std::string("value,x\n0,1\n"); },
       "has no column 'staleness_gradients'"},
      {"staleness.csv", [](std::string t) { return t + "\"9,9\n"; }, "a quote opened here is never closed"},
      {"staleness.csv", [](std::string t) { return t + "9,1\n"; }, "2 cells, the header has 3"},
      {"metrics.csv", cell(2, 0, "nan"), "metrics.csv: line 2, column 1 (virtual_time_s): expected a number"},
      {"metrics.csv", cell(3, 1, "-3"), "line 3, column 2 (server_version): expected an integer >= 0"},
      {"metrics.csv", cell(3, 3, "2"), "line 3, column 4 (test_accuracy): expected a number in [0, 1]"},
      {"metrics.csv", cell(3, 2, "inf"), "line 3, column 3 (test_loss)"},
      {"metrics.csv", header_twice, "repeats the header"},
      {"gradients.csv", cell(2, 0, "nan"),
       "gradients.csv: line 2, column 1 (virtual_time_s): expected a number"},
      {"gradients.csv", cell(2, 0, "-1"), "line 2, column 1 (virtual_time_s)"},
      {"gradients.csv", cell(2, 1, "99"), "line 2, column 2 (worker): worker 99 is not in summary.json"},
      {"gradients.csv", cell(2, 1, "w"), "line 2, column 2 (worker): expected an integer"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.file);
    CAPTURE(c.expect);
    copy_run(s.path / "a", s.path / "b");
    write(s.path / "b" / c.file, c.edit(slurp(s.path / "a" / c.file)));
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("compare " + q((s.path / "a").string()) + " " + q((s.path / "b").string()) +
                              " --json " + q((s.path / "c.json").string()));
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, "b/" + c.file), o.err);
    CHECK_MESSAGE(has(o.err, c.expect), o.err);
    CHECK(snapshot(s.path) == before);
  }
  // The untampered pair compares (exit 0), with no "nan" figure.
  copy_run(s.path / "a", s.path / "b");
  const Outcome o = run_cli("compare " + q((s.path / "a").string()) + " " + q((s.path / "b").string()) +
                            " --json " + q((s.path / "c.json").string()));
  CHECK_MESSAGE(o.code == 0, o.err);
  CHECK(!has(o.out, "nan"));
  CHECK(has(o.out, "| staleness KS distance | | | 0 |"));
}

TEST_CASE("summarize refuses a forged sweep.csv, naming its line and column, and writes nothing") {
  Scratch s("summarize-forged");
  const auto rows = tiny_sweep(s.path / "sw");
  REQUIRE(rows.size() == 5);
  const auto& h = rows[0];
  REQUIRE(run_cli("run scenarios/sweep-tiny.json --quiet --out " + q((s.path / "decoy").string())).code == 0);
  fs::create_directory_symlink(s.path / "decoy", s.path / "sw" / "linked");
  struct Case {
    std::string name;
    std::function<void(std::vector<std::vector<std::string>>&)> edit;
    std::string expect;
  };
  const auto set = [&](size_t row, const std::string& column, const std::string& v) {
    return [=, &h](std::vector<std::vector<std::string>>& r) { r[row][col(h, column)] = v; };
  };
  const std::vector<Case> cases = {
      {"a folder outside the sweep", set(1, "folder", "../decoy"), "line 2, column"},
      {"an absolute folder", set(1, "folder", (s.path / "decoy").string()), "is not a folder of this sweep"},
      {"a linked folder", set(1, "folder", "linked"), "is not a folder of this sweep (a symbolic link)"},
      {"a missing folder", set(1, "folder", "missing"), "is not a folder of this sweep (nothing there)"},
      {"a repeated header", [&](auto& r) { r.push_back(h); }, "line 6 repeats the header"},
      {"a duplicated point", [&](auto& r) { r.push_back(r[1]); }, "line 6, column"},
      {"two seeds of a point in one folder", set(2, "folder", rows[1][col(h, "folder")]),
       "names the folder of line 2, another seed of the same point"},
      {"an unknown status", set(1, "status", "great"), "(status): expected a sweep status, got 'great'"},
      {"a NaN quality", set(1, "quality", "nan"), "(quality): expected a finite number, got 'nan'"},
      {"a seed that is not a number", set(1, "seed", "x"), "(seed): expected an integer >= 0, got 'x'"},
      {"a short row", [&](auto& r) { r[1].pop_back(); }, "line 2: "},
  };
  const fs::path csv = s.path / "sw" / "sweep.csv";
  const std::string original = slurp(csv);
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto forged = rows;
    c.edit(forged);
    write(csv, csv_text(forged));
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("summarize " + q((s.path / "sw").string()));
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, "sweep.csv: line"), o.err);
    CHECK_MESSAGE(has(o.err, c.expect), o.err);
    CHECK(snapshot(s.path) == before);  // no sweep-summary.csv, no curves.csv
  }
  // reproduce reads sweep.csv through the same checks.
  auto twice = rows;
  twice.push_back(h);
  write(csv, csv_text(twice));
  const Outcome r = run_cli("reproduce " + q((s.path / "sw").string()));
  CHECK(r.code == 2);
  CHECK_MESSAGE(has(r.err, "sweep.csv: line 6 repeats the header"), r.err);
  // The untampered sweep: two groups of two seeds, each counted once.
  write(csv, original);
  const Outcome o = run_cli("summarize " + q((s.path / "sw").string()));
  CHECK_MESSAGE(o.code == 0, o.err);
  const auto summary = stalesim::parse_csv(slurp(s.path / "sw" / "sweep-summary.csv"));
  REQUIRE(summary.size() == 3);
  CHECK(summary[1][col(summary[0], "seeds")] == "2");
  CHECK(summary[1][col(summary[0], "quality_n")] == "2");
}

TEST_CASE("the CSV reader names the line of a cell even after a quoted line break") {
  const auto in = stalesim::CsvInput::parse("x.csv", "a,b\n\"multi\nline\",1\n2,z\n", {"a", "b"});
  REQUIRE(in.rows() == 2);
  CHECK(in.line(0) == 2);
  CHECK(in.line(1) == 4);
  CHECK_THROWS_WITH_AS(in.integer(1, 1, 0), "x.csv: line 4, column 2 (b): expected an integer >= 0, got 'z'",
                       stalesim::IoError);
  CHECK_THROWS_WITH_AS(in.number(0, 0),
                       "x.csv: line 2, column 1 (a): expected a finite number, got 'multi\\nline'",
                       stalesim::IoError);
  CHECK_THROWS_WITH_AS(stalesim::CsvInput::parse("y.csv", "a,a\n1,2\n", {"a"}),
                       "y.csv: line 1: the column 'a' is named twice", stalesim::IoError);
}

// ---- 6. Our own files are ours -----------------------------------------------------------------

TEST_CASE("summarize's and the plots' files do not make a sweep or run folder foreign, nor a mismatch") {
  Scratch s("own-files");
  const fs::path sw = s.path / "sw";
  tiny_sweep(sw);
  REQUIRE(run_cli("summarize " + q(sw.string()) + " --quiet").code == 0);
  // A figure of a plot script, listed as the scripts list theirs (plots/stalesim_runs.py).
  write(sw / "bands.png", "png");
  write(sw / "plots.list", "bands.png\n");
  const std::string sweep =
      "sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --seeds 1,2 --quiet --out ";
  const Outcome resumed = run_cli(sweep + q(sw.string()));
  CHECK_MESSAGE(resumed.code == 0, resumed.err);
  const Outcome forced = run_cli(sweep + q(sw.string()) + " --force");
  CHECK_MESSAGE(forced.code == 0, forced.err);
  CHECK(fs::exists(sw / "sweep-summary.csv"));
  // A file nobody listed is still the user's.
  write(sw / "notes.txt", "mine");
  const Outcome refused = run_cli(sweep + q(sw.string()) + " --force");
  CHECK(refused.code == 2);
  CHECK_MESSAGE(has(refused.err, "holds 'notes.txt', which no stalesim run or sweep writes"), refused.err);
  CHECK(slurp(sw / "notes.txt") == "mine");

  // A run folder with a plot's data (plots/staleness_time.py writes staleness_time.csv and lists it).
  const fs::path run = s.path / "run";
  tiny_run(run);
  write(run / "staleness_time.csv", "virtual_time_s,staleness\n0,1\n");
  write(run / "plots.list", "staleness_time.csv\n");
  const Outcome match = run_cli("reproduce " + q(run.string()));
  CHECK_MESSAGE(match.code == 0, (match.out + match.err));
  CHECK(has(match.out, "MATCH: "));
  // An unlisted CSV is still a difference.
  write(run / "plots.list", "");
  CHECK(run_cli("reproduce " + q(run.string())).code == 3);
}

TEST_CASE(
    "reproduce --out inside the folder reproduced is refused, as its help says, and run --force still "
    "works") {
  Scratch s("reproduce-out");
  const fs::path run = s.path / "run";
  tiny_run(run);
  for (const std::string inside : {"rerun", "a/b", "."}) {
    CAPTURE(inside);
    const auto before = snapshot(s.path);
    const Outcome o = run_cli("reproduce " + q(run.string()) + " --out " + q((run / inside).string()));
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, "inside the folder reproduced"), o.err);
    CHECK(snapshot(s.path) == before);
  }
  const Outcome o = run_cli("run " + kTiny + " --quiet --record gradients --force --out " + q(run.string()));
  CHECK_MESSAGE(o.code == 0, o.err);
  // Beside it is fine.
  const Outcome beside =
      run_cli("reproduce " + q(run.string()) + " --quiet --out " + q((s.path / "rerun").string()));
  CHECK_MESSAGE(beside.code == 0, beside.err);
}

TEST_CASE("reproducing a real run says it is not bit-reproducible instead of a MISMATCH") {
  Scratch s("reproduce-real");
  tiny_run(s.path / "run");
  json j = json::parse(slurp(s.path / "run" / "summary.json"));
  j["manifest"]["real"] = {{"real", true}};
  write(s.path / "run" / "summary.json", j.dump(2) + "\n");
  const Outcome o = run_cli("reproduce " + q((s.path / "run").string()));
  CHECK(o.code == 2);
  CHECK_MESSAGE(
      has(o.err, "a real run (stalesim real): its times were measured, so it is not bit-reproducible"),
      o.err);
  CHECK(!has(o.out, "MISMATCH"));
}

TEST_CASE("reproduce refuses a forged manifest's dataset entries and survives a forged trace.json") {
  Scratch s("reproduce-forged");
  tiny_run(s.path / "run");
  const json good = json::parse(slurp(s.path / "run" / "summary.json"));
  for (const json& entry :
       {json(5), json{{"path", 3}}, json{{"path", "x"}, {"bytes", "many"}, {"xxh64", "0"}},
        json{{"path", "x"}, {"bytes", -1}, {"xxh64", "0"}}}) {
    CAPTURE(entry.dump());
    json j = good;
    j["manifest"]["datasets"] = json::array({entry});
    write(s.path / "run" / "summary.json", j.dump(2) + "\n");
    const Outcome o = run_cli("reproduce " + q((s.path / "run").string()));
    CHECK(o.code == 2);
    CHECK_MESSAGE(has(o.err, "summary.json: /manifest/datasets/0: expected"), o.err);
    CHECK(!has(o.err, "internal error"));
  }
  write(s.path / "run" / "summary.json", good.dump(2) + "\n");
  // A trace.json nested a million deep: no crash, the comparison says the file differs.
  write(s.path / "run" / "trace.json", std::string(1'000'000, '['));
  const Outcome o = run_cli("reproduce " + q((s.path / "run").string()));
  CHECK(o.code == 3);
  CHECK_MESSAGE(has(o.out, "MISMATCH: trace.json"), o.out);
}

// ---- 7. Escapes and CSV quoting ------------------------------------------------------------------

TEST_CASE("text from files and names reaches the terminal escaped") {
  Scratch s("escapes");
  const std::string evil = "x\x1b[2J\x1b]0;pwned\x07\ny";
  // compare's table: a worker's profile name.
  tiny_run(s.path / "a");
  json j = json::parse(slurp(s.path / "a" / "summary.json"));
  for (auto& w : j["workers"]) w["profile"] = evil;
  write(s.path / "a" / "summary.json", j.dump(2));
  copy_run(s.path / "a", s.path / "b");
  const Outcome c = run_cli("compare " + q((s.path / "a").string()) + " " + q((s.path / "b").string()) +
                            " --json " + q((s.path / "c.json").string()));
  CHECK_MESSAGE(c.code == 0, c.err);
  CHECK(no_escape_char(c.out + c.err));
  CHECK(has(c.out, "x\\x1b[2J\\x1b]0;pwned\\x07\\ny"));
  const Outcome row =
      run_cli("compare " + q((s.path / "a").string()) + " " + q((s.path / "b").string()) + " --row " +
              q("label\x1b[31m|x") + " --json " + q((s.path / "c.json").string()));
  CHECK(row.code == 0);
  CHECK(no_escape_char(row.out));
  CHECK(has(row.out, "label\\x1b[31m\\|x"));

  // summarize's table and reproduce's point lines: a key cell of sweep.csv.
  const auto rows = tiny_sweep(s.path / "sw");
  auto forged = rows;
  forged[1][col(rows[0], "policy.staleness")] = "0\x1b[31m";
  forged[2][col(rows[0], "policy.staleness")] = "0\x1b[31m";
  write(s.path / "sw" / "sweep.csv", csv_text(forged));
  const Outcome sum = run_cli("summarize " + q((s.path / "sw").string()));
  CHECK_MESSAGE(sum.code == 0, sum.err);
  CHECK(no_escape_char(sum.out + sum.err));
  CHECK(has(sum.out, "0\\x1b[31m"));
  const Outcome rep = run_cli("reproduce " + q((s.path / "sw").string()));
  CHECK(rep.code == 3);
  CHECK(no_escape_char(rep.out + rep.err));
  CHECK(has(rep.out, "policy.staleness=0\\x1b[31m"));

  // The topology: an unknown node in a link, and validate's bottleneck line.
  json sc = json::parse(slurp(fs::path(STALESIM_SOURCE_DIR) / kTiny));
  sc["cluster"]["network"] = json::parse(R"({ "topology": "graph", "latency_us": 50, "bandwidth_gbps": 10,
    "graph": { "nodes": [ { "name": "ps" }, { "name": "w0" }, { "name": "w1" }, { "name": "w2" },
                          { "name": "sw", "kind": "switch" } ],
               "links": [ { "from": "ps", "to": "sw", "bandwidth_gbps": 8 }, { "from": "w0", "to": "sw", "bandwidth_gbps": 8 },
                          { "from": "w1", "to": "sw", "bandwidth_gbps": 8 }, { "from": "w2", "to": "sw", "bandwidth_gbps": 8 } ] } })");
  json unknown = sc;
  unknown["cluster"]["network"]["graph"]["links"][1]["from"] = "w\x1b[2J";
  write(s.path / "unknown.json", unknown.dump(2));
  const Outcome u = run_cli("validate " + q((s.path / "unknown.json").string()));
  CHECK(u.code == 2);
  CHECK_MESSAGE(has(u.err, "'w\\x1b[2J' is not a node of graph.nodes"), u.err);
  CHECK(no_escape_char(u.err));
  json named = sc;
  named["cluster"]["network"]["graph"]["nodes"][0]["name"] = "p\x1b[2Js";
  named["cluster"]["network"]["graph"]["links"][0]["from"] = "p\x1b[2Js";
  write(s.path / "named.json", named.dump(2));
  const Outcome v = run_cli("validate " + q((s.path / "named.json").string()));
  CHECK_MESSAGE(v.code == 0, v.err);
  CHECK(no_escape_char(v.err));
}

TEST_CASE("links.csv quotes node names per RFC 4180: a comma or quote in a name keeps every row whole") {
  Scratch s("links");
  json sc = json::parse(slurp(fs::path(STALESIM_SOURCE_DIR) / kTiny));
  const std::string name = "rack \"A\", host 1";
  sc["cluster"]["network"] = json::parse(R"({ "topology": "graph", "latency_us": 50, "bandwidth_gbps": 10,
    "graph": { "nodes": [ { "name": "ps" }, { "name": "w0" }, { "name": "w1" }, { "name": "w2" },
                          { "name": "sw", "kind": "switch" } ],
               "links": [ { "from": "ps", "to": "sw", "bandwidth_gbps": 8 }, { "from": "w0", "to": "sw", "bandwidth_gbps": 8 },
                          { "from": "w1", "to": "sw", "bandwidth_gbps": 8 }, { "from": "w2", "to": "sw", "bandwidth_gbps": 8 } ] } })");
  sc["cluster"]["network"]["graph"]["nodes"][1]["name"] = name;
  sc["cluster"]["network"]["graph"]["links"][1]["from"] = name;
  write(s.path / "graph.json", sc.dump(2));
  const Outcome o =
      run_cli("run " + q((s.path / "graph.json").string()) + " --quiet --out " + q((s.path / "r").string()));
  REQUIRE_MESSAGE(o.code == 0, o.err);
  const auto rows = stalesim::parse_csv(slurp(s.path / "r" / "links.csv"));
  REQUIRE(rows.size() == 9);  // the header and two directions of four links
  for (const auto& r : rows) CHECK(r.size() == 8);
  CHECK(rows[3][1] == name);
  CHECK(rows[4][2] == name);
}
