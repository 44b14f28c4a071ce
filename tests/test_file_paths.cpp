// Files a scenario names (a profile file, a jitter trace; issue 32): a path written in the scenario
// file is relative to that file's folder, a path given with --set relative to the working
// directory, for both kinds alike (REFERENCE.md field reference, cluster.workers[*].profile and
// cluster.jitter.path).

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_test_util.hpp"

namespace fs = std::filesystem;
using stalesim::testing::q;
using stalesim::testing::run_cli;
using stalesim::testing::slurp;

namespace {

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A folder ROOT with ROOT/sub/s.json (a sweep-tiny scenario whose first group's profile is
// "gpu.json" and whose jitter trace is "trace.txt"), both files beside it in ROOT/sub/, and a
// second pair ROOT/gpu2.json and ROOT/other.txt in ROOT itself.
fs::path make_tree() {
  const fs::path root = fs::temp_directory_path() / ("stalesim-paths-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "sub");
  auto j = nlohmann::json::parse(slurp(fs::path(STALESIM_SOURCE_DIR) / "scenarios" / "sweep-tiny.json"));
  j["cluster"]["workers"][0]["profile"] = "gpu.json";
  j["cluster"]["jitter"] = {{"type", "trace"}, {"path", "trace.txt"}};
  write(root / "sub" / "s.json", j.dump(2));
  const std::string profile = slurp(fs::path(STALESIM_SOURCE_DIR) / "models" / "profiles" / "gtx1060.json");
  for (const auto& p : {root / "sub" / "gpu.json", root / "gpu2.json"}) write(p, profile);
  for (const auto& p : {root / "sub" / "trace.txt", root / "other.txt"}) write(p, "4.0 5.0 6.0\n");
  return root;
}

// The resolved scenario of a run made in `root` with `args`.
nlohmann::json run_in(const fs::path& root, const std::string& args, int& code, std::string& err) {
  const fs::path out = root / "out";
  fs::remove_all(out);
  const auto r = run_cli("run sub/s.json --quiet --out out " + args, "cd " + q(root.string()) + " && ");
  code = r.code;
  err = r.err;
  if (r.code != 0) return {};
  return nlohmann::json::parse(slurp(out / "summary.json"))["manifest"]["scenario"];
}

}  // namespace

TEST_CASE("a scenario file's profile and jitter trace paths are relative to its folder") {
  const fs::path root = make_tree();
  int code = -1;
  std::string err;
  const auto s = run_in(root, "", code, err);
  CAPTURE(err);
  REQUIRE(code == 0);
  CHECK(s["cluster"]["workers"][0]["profile"] == "sub/gpu.json");
  CHECK(s["cluster"]["jitter"]["path"] == "sub/trace.txt");
  fs::remove_all(root);
}

TEST_CASE("--set profile and jitter paths are relative to the working directory") {
  const fs::path root = make_tree();
  int code = -1;
  std::string err;
  const auto s = run_in(root, "--set cluster.workers.0.profile=gpu2.json --set cluster.jitter.path=other.txt",
                        code, err);
  CAPTURE(err);
  REQUIRE(code == 0);
  CHECK(s["cluster"]["workers"][0]["profile"] == "gpu2.json");
  CHECK(s["cluster"]["jitter"]["path"] == "other.txt");
  // The names beside the scenario file are not found from the working directory with --set.
  fs::remove(root / "gpu2.json");
  run_in(root, "--set cluster.workers.0.profile=gpu2.json", code, err);
  CHECK(code == 2);
  CHECK(err.find("gpu2.json") != std::string::npos);
  fs::remove(root / "other.txt");
  run_in(root, "--set cluster.jitter.path=other.txt", code, err);
  CHECK(code == 2);
  CHECK(err.find("/cluster/jitter/path: other.txt: cannot read the jitter trace") != std::string::npos);
  fs::remove_all(root);
}
