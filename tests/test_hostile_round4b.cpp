// Hostile input, round four (issue 46 points 3, 5 and 8): `real` refuses up front what this
// machine cannot start (more ranks than its CPUs can hold, more memory than it has), an interrupt
// that comes after a run ended still exits 130 (and keeps a finished run a --force rerun would
// replace), a full disk is exit 3, not 2, and the memory estimate counts a topology. Every case
// asserts the exit code or the exception, the message, and what is left on disk.

#include <doctest/doctest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/estimate/calibration.hpp"
#include "sim/estimate/estimate.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/estimate/real_limits.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/real/real_run.hpp"
#include "sim/scenario/load.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "tests/cli_test_util.hpp"
#include "tests/sim_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using stalesim::testing::Outcome;
using stalesim::testing::q;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;

namespace {

const std::string kTiny = "tests/golden/tiny/scenario.json";

// An mlp on blobs for the real mode: `workers` workers, `hidden` units.
json real_json(int workers, int hidden) {
  auto j = json::parse(R"({ "name": "real4", "seed": 1, "optimizer": { "batch_size": 4, "lr": 0.01 },
    "model": { "type": "mlp", "hidden": [8] }, "policy": { "type": "asp" },
    "data": { "dataset": "blobs", "blobs": { "classes": 10, "features": 1000, "train": 2000, "test": 50 } },
    "cluster": { "workers": [ { "profile": "gtx1080ti", "count": 2 } ] },
    "stop": { "max_updates": 10 }, "eval": { "every_s": 1000 } })");
  j["cluster"]["workers"][0]["count"] = workers;
  j["model"]["hidden"][0] = hidden;
  return j;
}

bool complete_run(const fs::path& dir) {
  return fs::exists(dir / "summary.json") && fs::exists(dir / "done");
}

}  // namespace

// ---- 3. real: what this machine cannot start --------------------------------------------------

TEST_CASE("real refuses more ranks than this machine's CPUs can hold, naming the field and the count") {
  const auto s = stalesim::testing::scenario(real_json(100000, 8));
  const std::string why = stalesim::real_local_refusal(s, 2, std::nullopt, "");
  CHECK(
      why.starts_with("/cluster/workers: a real run of this scenario takes 100001 MPI ranks (1 server "
                      "shard + 100000 workers), and 'stalesim real' alone starts them all on this machine: "
                      "at most 32 (16 per logical CPU, 2 CPUs)"));
  CHECK(why.find("nothing was started") != std::string::npos);
  CHECK(stalesim::real_local_refusal(s, 100000 / 16 + 1, std::nullopt, "").empty());
}

TEST_CASE("real refuses ranks whose estimated memory together exceeds the limit, and starts what fits") {
  // 31 workers and a server of a 1,000-input, 2,000-unit mlp: each rank its own data and model copies.
  const auto s = stalesim::testing::scenario(real_json(31, 2000));
  const stalesim::RealMemory m = stalesim::real_memory(s);
  CHECK(m.worker > stalesim::kRealRankMpiBytes + 2000.0 * 1000 * 4);  // at least one model copy
  CHECK(m.server > m.worker);  // the versions the workers read and their pushes
  CHECK(m.total() == doctest::Approx(m.server + 31 * m.worker));
  CHECK(stalesim::real_local_refusal(s, 2, m.total(), "test").empty());
  const std::string why = stalesim::real_local_refusal(s, 2, 0.99 * m.total(), "STALESIM_MEMORY_LIMIT");
  CHECK(
      why.starts_with("/cluster/workers: a real run of this scenario takes 32 MPI ranks (1 server shard + "
                      "31 workers), needing about "));
  CHECK(why.find("(STALESIM_MEMORY_LIMIT)") != std::string::npos);
  CHECK(why.find("nothing was started") != std::string::npos);
}

TEST_CASE("stalesim real with 100,000 workers is exit 2 before mpirun, naming the file and the field") {
  if (!stalesim::mpi_built()) {
    MESSAGE("built without MPI: real stops earlier, for that reason");
    return;
  }
  Scratch s("real-ranks");
  const fs::path file = s.path / "big.json";
  std::ofstream(file) << real_json(100000, 8).dump();
  const Outcome o = run_cli("real " + q(file.string()) + " --out " + q((s.path / "r").string()));
  CHECK(o.code == 2);
  CHECK(o.err.find(file.string() + ": the real mode cannot start this scenario here: /cluster/workers: ") !=
        std::string::npos);
  CHECK(o.err.find("mpirun -n 100001 --bind-to") == std::string::npos);  // the launch line: never printed
  CHECK_FALSE(fs::exists(s.path / "r"));
}

// ---- 8. An interrupt after the run ended; a full disk ------------------------------------------

TEST_CASE("an interrupt after a --force rerun ended keeps the finished run and exits 130") {
  Scratch s("late-int");
  const fs::path r = s.path / "r";
  REQUIRE(run_cli("run " + kTiny + " --quiet --out " + q(r.string())).code == 0);
  const std::string before = slurp(r / "summary.json");
  const Outcome o = run_cli("run " + kTiny + " --quiet --force --seed 9 --out " + q(r.string()),
                            "STALESIM_INJECT_INTERRUPT_BEFORE_WRITE=1 ");
  CHECK(o.code == 130);
  CHECK(o.err.find("kept the finished run in") != std::string::npos);
  CHECK(slurp(r / "summary.json") == before);
  CHECK(complete_run(r));
}

TEST_CASE("an interrupt after a run ended into a new folder writes it whole and exits 130") {
  Scratch s("late-int-new");
  const fs::path r = s.path / "r";
  const Outcome o = run_cli("run " + kTiny + " --quiet --out " + q(r.string()),
                            "STALESIM_INJECT_INTERRUPT_BEFORE_WRITE=1 ");
  CHECK(o.code == 130);
  CHECK(o.err.find("interrupted after the run ended; its complete outputs are in") != std::string::npos);
  CHECK(complete_run(r));
}

TEST_CASE("a write that fails on a full disk is an I/O failure, not a refusal") {
  if (!fs::exists("/dev/full")) return;
  try {
    stalesim::write_text_file("/dev/full", "x");
    FAIL("wrote to /dev/full");
  } catch (const stalesim::IoError& e) {
    CHECK(std::string(e.what()).find("No space left on device") != std::string::npos);
    CHECK(e.write_failed());
  }
  CHECK_FALSE(stalesim::IoError("refused").write_failed());
}

TEST_CASE("a sweep on a full disk exits 3 and leaves no half-written run") {
  // A tmpfs small enough to fill: mounting needs root (CAP_SYS_ADMIN); elsewhere the /dev/full
  // case above holds the error class.
  Scratch s("full");
  const fs::path mnt = s.path / "mnt";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
    MESSAGE("cannot mount a tmpfs here (needs root): the full-disk sweep is not tried");
    return;
  }
  {
    std::ofstream fill(mnt / "filler", std::ios::binary);
    fill << std::string(64 * 1024 - 8 * 1024, 'x');  // leaves two pages
  }
  const fs::path out = mnt / "sw";
  const Outcome o =
      run_cli("sweep scenarios/sweep-tiny.json --grid policy.staleness=0,1 --quiet --out " + q(out.string()));
  CHECK(o.code == 3);
  CHECK(o.err.find("No space left on device") != std::string::npos);
  if (fs::exists(out))
    for (const auto& e : fs::directory_iterator(out))
      if (e.is_directory()) {
        CAPTURE(e.path().string());
        CHECK(e.path().filename().string().front() != '.');  // no temporary left behind
        CHECK(complete_run(e.path()));
      }
  ::umount(mnt.c_str());
}

// ---- 5. The memory estimate of a topology against the measured peak ----------------------------

TEST_CASE("the memory estimate is within 30% of the measured peak for racks and graphs") {
  if (stalesim::testing::kAddressSanitizer) {
    MESSAGE("AddressSanitizer build: peak RSS counts shadow memory; this check runs in the Release pass");
    return;
  }
  // Time-only ASP, 4 shards spread: racks with few workers and many hosts (the topology dominates),
  // and a graph of hosts behind edge switches and a core, given as JSON (5,000 hosts).
  const json base = json::parse(R"({ "name": "topo-mem", "seed": 1,
    "model": { "type": "time-only", "parameters": 1000000, "flops_per_sample": 1e6 },
    "optimizer": { "batch_size": 32 }, "policy": { "type": "asp" },
    "cluster": { "workers": [ { "profile": "v100", "count": 96 } ], "servers": 4,
                 "network": { "bandwidth_gbps": 25, "server_bandwidth_gbps": 100, "latency_us": 5,
                              "placement": { "shards": "spread" } } },
    "stop": { "max_updates": 100 }, "eval": { "every_s": 1000 } })");
  json racks = base;
  racks["cluster"]["network"]["topology"] = "racks";
  racks["cluster"]["network"]["racks"] = {
      {"count", 3000}, {"hosts_per_rack", 32}, {"uplink_bandwidth_gbps", 200}};
  json graph = base;
  const int hosts = 5000, per = 32, edges = (hosts + per - 1) / per;
  graph["cluster"]["workers"][0]["count"] = hosts - 4;
  json nodes = json::array(), links = json::array();
  for (int i = 0; i < hosts; ++i) {
    nodes.push_back({{"name", "h" + std::to_string(i)}});
    links.push_back(
        {{"from", "h" + std::to_string(i)}, {"to", "e" + std::to_string(i / per)}, {"bandwidth_gbps", 25}});
  }
  for (int e = 0; e < edges; ++e) {
    nodes.push_back({{"name", "e" + std::to_string(e)}, {"kind", "switch"}});
    links.push_back({{"from", "e" + std::to_string(e)}, {"to", "core"}, {"bandwidth_gbps", 200}});
  }
  nodes.push_back({{"name", "core"}, {"kind", "switch"}});
  graph["cluster"]["network"]["topology"] = "graph";
  graph["cluster"]["network"]["graph"] = {{"nodes", nodes}, {"links", links}};
  Scratch s("topo-rss");
  for (const auto& [name, j] : {std::pair{std::string("racks-96000-hosts"), racks},
                                std::pair{std::string("graph-5000-hosts"), graph}}) {
    const std::string cell = name;
    CAPTURE(cell);
    const fs::path file = s.path / (cell + ".json");
    std::ofstream(file) << j.dump();
    const auto sc = stalesim::load_scenario_file(file.string());
    const auto e = stalesim::estimate_memory(sc, 1);
    const double measured = stalesim::testing::peak_rss_of_run(file, s.path / cell);
    REQUIRE(measured > 0);
    MESSAGE(cell << ": estimate " << stalesim::format_bytes(e.total()) << " (topology "
                 << stalesim::format_bytes(e.topology_bytes) << "), peak RSS "
                 << stalesim::format_bytes(measured));
    CHECK(e.topology_bytes > 0.25 * e.total());  // the topology's share is what is checked
    CHECK(e.total() == doctest::Approx(measured).epsilon(0.3));
  }
}

TEST_CASE("the memory estimate of a ring all-reduce is within 30% of the measured peak") {
  if (stalesim::testing::kAddressSanitizer) {
    MESSAGE("AddressSanitizer build: peak RSS counts shadow memory; this check runs in the Release pass");
    return;
  }
  // Before: a version per worker (64 x 1.5 MiB), 98 MiB estimated for a 25 MiB peak; every worker
  // reads the version of its iteration's start.
  Scratch s("ar-rss");
  const fs::path file = s.write("ar.json", R"({ "name": "ar-mlp", "seed": 1,
    "optimizer": { "batch_size": 4, "lr": 0.01 }, "model": { "type": "mlp", "hidden": [400] },
    "policy": { "type": "allreduce-ring" },
    "data": { "dataset": "blobs", "blobs": { "classes": 10, "features": 1000, "train": 2000, "test": 50 } },
    "cluster": { "workers": [ { "profile": "gtx1080ti", "count": 64 } ],
                 "network": { "bandwidth_gbps": 1000, "server_bandwidth_gbps": 1000 } },
    "stop": { "max_updates": 50 }, "eval": { "every_s": 1000 } })");
  const auto sc = stalesim::load_scenario_file(file.string());
  const double estimate = stalesim::estimate_memory(sc, 1).total();
  const double measured = stalesim::testing::peak_rss_of_run(file, s.path / "r");
  REQUIRE(measured > 0);
  MESSAGE("ring all-reduce, 64 workers: estimate " << stalesim::format_bytes(estimate) << ", peak RSS "
                                                   << stalesim::format_bytes(measured));
  CHECK(estimate == doctest::Approx(measured).epsilon(0.3));
}

// ---- 5. The wall-time estimate's work against the run's ---------------------------------------

// How long the estimate says against the CPU time measured is a figure of this machine and its
// load, so it lives in a benchmark (tools/bench/estimate-wall prints estimate / CPU time for these
// two cells); a timed check here failed CI on a loaded machine (1.33 where 1.20 was measured
// idle). What does not depend on the machine is checked here: the work the estimate counts.
TEST_CASE("the wall-time estimate counts the star's message parts and the racks' flow recomputes") {
  // The issue's cluster (tools/bench/network-cost): 1,000 time-only ASP workers, 4 server shards,
  // in racks of 32 (spread) and on the star. Before, the estimate counted 4 events per update
  // whatever the topology: on racks 14x under (each flow start and end recomputes the rate of
  // every flow in flight, about 4,000 here); the star's message parts per shard were not counted.
  const json base = json::parse(R"({ "name": "wall", "seed": 1,
    "model": { "type": "time-only", "parameters": 1000000, "flops_per_sample": 1e6 },
    "optimizer": { "batch_size": 32 }, "policy": { "type": "asp" },
    "cluster": { "workers": [ { "profile": "v100", "count": 1000 } ], "servers": 4,
                 "network": { "bandwidth_gbps": 25, "server_bandwidth_gbps": 100, "latency_us": 5 } },
    "eval": { "every_s": 1000 } })");
  json racks = base, star = base;
  racks["cluster"]["network"]["topology"] = "racks";
  racks["cluster"]["network"]["racks"] = {{"hosts_per_rack", 32}, {"uplink_bandwidth_gbps", 200}};
  racks["cluster"]["network"]["placement"] = {{"shards", "spread"}};
  racks["stop"] = {{"max_updates", 2000}};
  star["stop"] = {{"max_updates", 100000}};
  Scratch s("wall");
  // No structured bindings: clang 14 (the sanitizer build) cannot capture one in CAPTURE/CHECK.
  for (const auto& cell_doc : std::vector<std::pair<std::string, json>>{{"racks", racks}, {"star", star}}) {
    const std::string cell = cell_doc.first;
    const json& doc = cell_doc.second;
    CAPTURE(cell);
    const fs::path file = s.path / (cell + ".json");
    std::ofstream(file) << doc.dump();
    const auto sc = stalesim::load_scenario_file(file.string());
    const stalesim::RunEstimate e = stalesim::estimate_run(sc, 1);
    REQUIRE(stalesim::testing::usage_of_run(file, s.path / cell, 1).cpu_s > 0);
    const json summary = json::parse(std::ifstream(s.path / cell / "summary.json"));
    const double events = summary.at("events").get<double>();
    MESSAGE(cell << ": estimate " << e.events << " events, " << e.part_events << " in message parts, "
                 << e.flow_passes << " flow passes; the run " << events << " events");
    if (cell == "star") {
      // 4 events per update and the message parts past the first on each of the 4 shards.
      CHECK(e.events == doctest::Approx(events).epsilon(0.05));
      CHECK(e.part_events > 0.2 * e.events);
      CHECK(e.flow_passes == 0);
    } else {
      CHECK(e.events > events / 2);
      CHECK(e.events < events * 2);
      // Each flow start and end passes over every flow in flight: the work is the recomputes, not
      // the events (the old estimate's 14x under).
      CHECK(e.flow_passes * stalesim::kFlowPassEvents > 100 * e.events);
    }
  }
}
