// The output table (sim/output/output_table.hpp): every file a run folder may hold is one row, and
// the run, --force's recognition of a run folder and reproduce all follow it; REFERENCE.md
// "Outputs" documents every row. Also CONTRIBUTING.md's worked example of a new output file
// (tests/contrib/workers-csv.patch), whose writer is carried here and checked.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "cli_test_util.hpp"
#include "sim/output/output_table.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_folder.hpp"
#include "sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;
namespace fs = std::filesystem;

namespace {

// CONTRIBUTING.md's worked example of an output file: workers.csv, one row per worker with its
// time split. tests/contrib/workers-csv.patch adds it as a row of sim/output/output_table.cpp;
// check_patch.sh compares this function with the patch's, line for line.
std::string workers_csv(const RunOutput& o, std::string_view) {
  std::string out = "worker,profile,iterations,compute_s,wait_s,communicate_s\n";
  for (const auto& w : o.result.workers)
    out += fmt::format("{},{},{},{},{},{}\n", w.id, w.profile, w.iterations, w.compute_ns / 1e9,
                       w.wait_ns / 1e9, w.communicate_ns / 1e9);
  return out;
}

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("stalesim-outputs-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  return dir;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("the output table: one row per file, summary.json first, the done marker last, each documented") {
  const auto table = output_table();
  REQUIRE(table.size() >= 4);
  CHECK(table.front().name == "summary.json");
  std::set<std::string_view> names;
  size_t last_written = 0, done_at = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    CHECK_MESSAGE(names.insert(table[i].name).second, table[i].name);  // one row per name
    CHECK(find_output(table[i].name) == &table[i]);
    CHECK((table[i].write == nullptr) == (table[i].when == Written::kByPlotScripts));
    if (table[i].when == Written::kWhenFinished)
      done_at = i;
    else if (table[i].when != Written::kByPlotScripts)
      last_written = i;
  }
  CHECK(table[done_at].name == "done");
  CHECK(done_at > last_written);  // a folder with `done` holds every file the run wrote
  CHECK(find_output("notes.txt") == nullptr);
  CHECK(find_output("summary") == nullptr);

  // REFERENCE.md "Outputs" names every row, and every file its list names is a row.
  std::ifstream in(fs::path(STALESIM_SOURCE_DIR) / "REFERENCE.md");
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const size_t from = text.find("\n## Outputs\n");
  REQUIRE(from != std::string::npos);
  const std::string section = text.substr(from, text.find("\n## ", from + 1) - from);
  for (const auto& row : table)
    CHECK_MESSAGE(section.find(fmt::format("`{}`", row.name)) != std::string::npos,
                  fmt::format("REFERENCE.md \"Outputs\" does not name `{}`", row.name));
  std::istringstream lines(section);
  int bullets = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("- `")) continue;
    ++bullets;
    const std::string name = line.substr(3, line.find('`', 3) - 3);
    CHECK_MESSAGE(find_output(name) != nullptr,
                  fmt::format("REFERENCE.md lists `{}`, which no row names", name));
  }
  CHECK(bullets >= 8);
}

TEST_CASE("a run writes the table's rows: every file always written, a recorder's file only with text") {
  const Scenario s = scenario(hand_bsp_json());
  RunResult r = run_scenario(s);
  OutputFiles f = render_outputs(s, r);
  std::vector<std::string> names;
  for (const auto& [name, text] : f.files) names.emplace_back(name);
  // The files every run writes, in the table's order; the star has no links.csv, BSP no decisions,
  // and nothing recorded gradients, a trace or words.
  const std::vector<std::string> always = plain_run_files();
  CHECK(names == always);
  CHECK(names.front() == "summary.json");
  CHECK(names.back() == "done");
  CHECK(f.text("done") == f.result_hash + "\n");
  CHECK(f.text("links.csv").empty());

  r.recorded["explain.txt"] = "words\n";
  r.recorded["trace.json"] = "";  // empty: not written
  f = render_outputs(s, r);
  CHECK(f.text("explain.txt") == "words\n");
  std::vector<std::string_view> in_order, rendered;  // the table's order, explain.txt among them
  for (const auto& row : output_table())
    if (row.name == "explain.txt" || std::find(always.begin(), always.end(), row.name) != always.end())
      in_order.push_back(row.name);
  for (const auto& [name, text] : f.files) rendered.push_back(name);
  CHECK(rendered == in_order);
  CHECK(rendered.size() == always.size() + 1);

  r.recorded["notes.csv"] = "x";  // no row: a programming error, said so
  CHECK_THROWS_AS(render_outputs(s, r), std::logic_error);
  CHECK_THROWS_AS(f.set("notes.csv", "x"), std::logic_error);
}

TEST_CASE("a run folder holds what the table says, and --force recognises it and nothing else") {
  const fs::path dir = fresh("folder");
  const auto r = run_cli(
      "run scenarios/sweep-tiny.json --set policy.type=dssp --set policy.range=4 --trace "
      "--explain --record gradients --quiet --out " +
      dir.string());
  REQUIRE_MESSAGE(r.code == 0, r.err);
  // Every file the run writes always, and the four recorders' files asked for (DSSP's decisions).
  std::set<std::string> expected = {"decisions.csv", "gradients.csv", "trace.json", "explain.txt"};
  for (const auto& name : plain_run_files()) expected.insert(name);
  std::string compared;  // reproduce's list: the files the table marks compared, in its order
  for (const auto& row : output_table())
    if (row.reproduce_compares && expected.contains(std::string(row.name)))
      compared += (compared.empty() ? "" : ", ") + std::string(row.name);
  CHECK(listing(dir) == expected);
  CHECK(expected.contains("summary.json"));
  CHECK(inspect_folder(dir).kind == FolderKind::kRun);

  const auto again = run_cli("reproduce " + dir.string() + " --quiet");
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(again.out.starts_with(fmt::format("MATCH: {}/ ({} identical", dir.string(), compared)));
  CHECK(
      compared.starts_with("summary.json, metrics.csv, staleness.csv, decisions.csv, gradients.csv, "
                           "trace.json, explain.txt"));
  CHECK(compared.ends_with(", done"));

  // A file no row names makes the folder foreign: --force refuses it and deletes nothing.
  std::ofstream(dir / "notes.txt") << "mine\n";
  CHECK(inspect_folder(dir).kind == FolderKind::kOther);
  const auto refused = run_cli("run scenarios/sweep-tiny.json --quiet --force --out " + dir.string());
  CHECK(refused.code != 0);
  CHECK(fs::exists(dir / "notes.txt"));
  CHECK(fs::exists(dir / "trace.json"));
  fs::remove(dir / "notes.txt");

  // --force replaces a run folder of the table's files: the recorders' files go with the old run.
  const auto replaced = run_cli("run scenarios/sweep-tiny.json --quiet --force --out " + dir.string());
  CHECK_MESSAGE(replaced.code == 0, replaced.err);
  for (const auto& name : {"decisions.csv", "gradients.csv", "trace.json", "explain.txt"})
    CHECK_MESSAGE(!fs::exists(dir / name), name);
  CHECK(fs::exists(dir / "done"));
  fs::remove_all(dir);
}

TEST_CASE(
    "CONTRIBUTING.md's example output file: workers.csv splits each worker's time as summary.json does") {
  const Scenario s = scenario(time_only_json(1, 2));
  const RunResult r = run_scenario(s);
  const std::string metrics = metrics_csv(r), hash = "h";
  const std::string csv = workers_csv(RunOutput{s, r, metrics, hash}, "workers.csv");
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  CHECK(line == "worker,profile,iterations,compute_s,wait_s,communicate_s");
  int rows = 0;
  int64_t iterations = 0;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::string id, profile, its, compute, wait, comm;
    std::getline(cells, id, ',');
    std::getline(cells, profile, ',');
    std::getline(cells, its, ',');
    std::getline(cells, compute, ',');
    std::getline(cells, wait, ',');
    std::getline(cells, comm, ',');
    CHECK(std::stoi(id) == rows);
    CHECK(profile == (rows == 0 ? "gtx1060" : "gtx1080ti"));
    iterations += std::stoll(its);
    // The three parts add up to the run's virtual time, for every worker.
    CHECK(std::stod(compute) + std::stod(wait) + std::stod(comm) ==
          doctest::Approx(r.end_time.seconds()).epsilon(1e-9));
    CHECK(std::stod(compute) > 0);
    ++rows;
  }
  CHECK(rows == 3);
  CHECK(iterations == r.server_updates);  // SSP: each push is an update
}
