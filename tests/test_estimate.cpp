// The up-front estimate (issue 20 point 2, sim/estimate/estimate.hpp) and the one account of model sizes
// (models/model.hpp model_size) that it and the memory estimate share (issue 17 point 3).

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "models/cost_arch.hpp"
#include "models/model.hpp"
#include "sim/estimate/estimate.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/scenario/load.hpp"
#include "sim/workloads.hpp"
#include "sim_test_util.hpp"

using namespace stalesim;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The issue's first own scenario: 16 GPUs (a mix) train the CNN on Fashion-MNIST over 1 Gbit/s.
json cnn16_json() {
  return json::parse(R"({
    "name": "cnn16", "seed": 1,
    "data": { "dataset": "fashion-mnist" },
    "model": { "type": "cnn" },
    "optimizer": { "rule": "sgd", "lr": 0.05, "batch_size": 32 },
    "policy": { "type": "ssp", "staleness": 3 },
    "cluster": { "workers": [ { "profile": "gtx1060", "count": 8 }, { "profile": "v100", "count": 8 } ],
                 "network": { "latency_us": 50, "bandwidth_gbps": 1 } },
    "stop": { "virtual_time_s": 60 },
    "eval": { "every_s": 5 } })");
}

// A time-only cluster whose pace the estimate is checked against; `gbps` sets the links.
json timing_json(const std::string& policy, double gbps, int64_t parameters) {
  json j = testing::time_only_json(3, 3);
  j["policy"] = policy == "ssp" ? json{{"type", "ssp"}, {"staleness", 3}} : json{{"type", policy}};
  j["model"]["parameters"] = parameters;
  j["cluster"]["network"]["bandwidth_gbps"] = gbps;
  j["stop"] = {{"virtual_time_s", 2}};
  return j;
}

}  // namespace

TEST_CASE("a 16-GPU CNN on 1 Gbit/s is reported as server-link bound, with the warning") {
  const RunEstimate e = estimate_run(testing::scenario(cnn16_json()));
  CHECK(e.bottleneck == "server link");
  CHECK(e.server_offered > 1);
  CHECK(e.communication_share > 0.9);
  REQUIRE(e.warnings.size() >= 1);
  CHECK(e.warnings[0].starts_with("communication takes"));
  CHECK(e.describe().find("bottleneck: server link") != std::string::npos);
  // The GPU mix makes no difference: both groups run at the shared pace.
  CHECK(e.groups[0].iteration_s == doctest::Approx(e.groups[1].iteration_s));
  // At 100 Gbit/s and with 8 server shards the same cluster is compute-bound and not warned about.
  json fast = cnn16_json();
  fast["cluster"]["network"]["bandwidth_gbps"] = 100;
  fast["cluster"]["servers"] = 8;
  fast["optimizer"]["batch_size"] = 1024;
  const RunEstimate f = estimate_run(testing::scenario(fast));
  CHECK(f.bottleneck == "compute");
  CHECK(f.warnings.empty());
}

TEST_CASE("the quick start is estimated server-link bound, the link offered 1.5x, as the README says") {
  const Scenario s = load_scenario_file(std::string(STALESIM_SOURCE_DIR) + "/scenarios/quickstart.json");
  const RunEstimate e = estimate_run(s);
  // Four workers on 10 Gbit/s links share one 10 Gbit/s shard link. Full duplex: pushes and pulls
  // each have a direction of it; cut-through: a message crosses the worker's link and the shard's
  // at once, so an unloaded iteration is compute + 2 x (latency + 0.51 ms), and four workers offer
  // the link 1.5x what it carries (store and forward made it 0.86x and the worker's link the
  // bottleneck).
  CHECK(e.bottleneck == "server link");
  CHECK(e.server_offered == doctest::Approx(1.51).epsilon(0.01));
  CHECK(e.pull_bytes == 159010.0 * 4);  // 784-200-10: (784 + 1) x 200 + (200 + 1) x 10 floats
  CHECK(e.memory.parameters == 159010.0);
}

TEST_CASE("the estimated updates are within 5% of a run's, whatever paces the cluster") {
  // Compute-bound (a small model on fast links), server-saturated (a large one on slow links),
  // worker-link bound, and BSP's lock-step clocks.
  struct Case {
    const char* what;
    json j;
    const char* bottleneck;
  };
  json worker_bound = timing_json("asp", 1, 200000);
  worker_bound["cluster"]["network"]["server_bandwidth_gbps"] = 1000;
  const Case cases[] = {
      {"compute-bound asp", timing_json("asp", 100, 1000), "compute"},
      {"server-saturated asp", timing_json("asp", 10, 2000000), "server link"},
      {"worker-link bound asp", worker_bound, "worker link"},
      {"bsp", timing_json("bsp", 25, 100000), nullptr},
      {"compute-bound ssp", timing_json("ssp", 100, 1000), "compute"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const Scenario s = testing::scenario(c.j);
    const RunEstimate e = estimate_run(s);
    const RunResult r = run_scenario(s);
    CAPTURE(e.describe());
    CHECK(static_cast<double>(r.server_updates) == doctest::Approx(e.expected_updates).epsilon(0.05));
    if (c.bottleneck) CHECK(e.bottleneck == c.bottleneck);
  }
}

TEST_CASE("the estimated updates are within 10% of a run's on every shipped scenario and network check") {
  // Issue 43 point 4: each scenario under scenarios/ and tools/validate_network/ run to its
  // update limit or a virtual time with no accuracy target (the estimate cannot know when a
  // target is reached): 2 s, or 30 s for the DSSP scenarios (their ResNet-paced clusters make a few dozen
  // updates in 2 s, so start-up weighs: dssp-hetero +169% at 2 s, +9% at 10 s). Off the star this holds the
  // mean value analysis of the shared links and the in-step groups (racks-placement, validate-network's
  // racks); on the star the FIFO pace; ring all-reduce the slowest of the workers' jittered computes. Under
  // AddressSanitizer the time-only ones only (the others train models on Fashion-MNIST for minutes there; the
  // Release pass runs them all).
  const fs::path root = STALESIM_SOURCE_DIR;
  std::vector<fs::path> files;
  for (const char* dir : {"scenarios", "tools/validate_network"})
    for (const auto& f : fs::recursive_directory_iterator(root / dir))
      if (f.path().extension() == ".json" && !f.path().filename().string().ends_with(".sweep.json"))
        files.push_back(f.path());
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 30);
  int checked = 0;
  for (const auto& f : files) {
    CAPTURE(f.string());
    json j = json::parse(testing::slurp(f));
    if (testing::kAddressSanitizer && j["model"].value("type", "") != "time-only") continue;
    const double seconds = f.filename().string().starts_with("dssp-") ? 30 : 2;
    json stop = {{"virtual_time_s", seconds}};
    if (j["stop"].contains("max_updates")) stop["max_updates"] = j["stop"]["max_updates"];
    j["stop"] = stop;
    const Scenario s = parse_scenario(j, f.string());
    const RunEstimate e = estimate_run(s);
    const RunResult r = run_scenario(s);
    CAPTURE(e.describe());
    CHECK(static_cast<double>(r.server_updates) == doctest::Approx(e.expected_updates).epsilon(0.10));
    ++checked;
  }
  CHECK(checked >= (testing::kAddressSanitizer ? 8 : 30));
}

TEST_CASE("off the star the estimate follows both regimes of shared links: in step and mixed") {
  // scenarios/topology/racks-placement.json (56 identical workers, 8 shards in 4 racks, 4:1
  // uplinks), varied. Without jitter a group whose workers are alike on the links falls into
  // step: with one shard every worker pulls at once, then pushes at once, and each direction of
  // the shard's link idles while the other works (3,200 updates where the mixed analysis says
  // 6,093, -48%); jitter (lognormal, sigma 0.1) mixes them (5,640). With the shards first (all in
  // rack 0) and jitter, rack 0's workers reach the shards without an uplink and run ahead while
  // the others share rack 0's uplink: one class of the analysis per rack (without jitter those
  // fall partly into step, which the estimate does not see: REFERENCE.md, "The estimate").
  json base = json::parse(
      testing::slurp(std::string(STALESIM_SOURCE_DIR) + "/scenarios/topology/racks-placement.json"));
  base["stop"] = {{"virtual_time_s", 2}};
  struct Case {
    const char* what;
    int servers;
    const char* shards;
    double sigma;  // 0: no jitter
  };
  const Case cases[] = {{"spread, in step", 8, "spread", 0},
                        {"first, jitter", 8, "first", 0.1},
                        {"one shard, in step", 1, "spread", 0},
                        {"one shard, jitter", 1, "spread", 0.1}};
  for (const auto& c : cases) {
    CAPTURE(c.what);
    json j = base;
    j["cluster"]["servers"] = c.servers;
    j["cluster"]["network"]["placement"]["shards"] = c.shards;
    if (c.sigma > 0) j["cluster"]["jitter"] = {{"type", "lognormal"}, {"sigma", c.sigma}};
    const Scenario s = testing::scenario(j);
    const RunEstimate e = estimate_run(s);
    CAPTURE(e.describe());
    CHECK(static_cast<double>(run_scenario(s).server_updates) ==
          doctest::Approx(e.expected_updates).epsilon(0.10));
  }
}

TEST_CASE("model_size gives the parameters, FLOPs and message bytes the built model reports") {
  const auto same = [](const ModelSpec& spec, int64_t features, int32_t classes) {
    CAPTURE(spec.type);
    CAPTURE(features);
    const auto m = make_model(spec, features, classes);
    ModelShape shape;
    shape.features = features;
    shape.classes = classes;
    const ModelSize z = model_size(spec, shape);
    CHECK(z.parameters == static_cast<double>(m->parameter_count()));
    CHECK(z.flops_per_sample == doctest::Approx(m->flops_per_sample()));
    CHECK(z.wire_bytes == static_cast<double>(m->wire_bytes()));
  };
  ModelSpec spec;
  spec.type = ModelType::kSoftmax;
  same(spec, 784, 10);
  spec.type = ModelType::kMlp;
  spec.hidden = {200};
  same(spec, 784, 10);
  spec.hidden = {64, 32, 16};
  same(spec, 30, 4);
  spec.type = ModelType::kCnn;
  same(spec, 784, 10);
  same(spec, 256, 3);
  spec.type = ModelType::kTimeOnly;
  spec.parameters = 12345;
  spec.flops_per_sample = 1e6;
  same(spec, 0, 0);

  for (const char* type : {"mf", "lda"}) {
    CAPTURE(type);
    json j = json::parse(R"({ "name": "w", "model": { "type": "mf" }, "data": { "dataset": "ratings" },
      "optimizer": { "batch_size": 16 }, "policy": { "type": "asp" },
      "cluster": { "workers": [ { "profile": "gtx1060", "count": 2 } ] }, "stop": { "max_updates": 10 } })");
    if (std::string(type) == "lda") {
      j["model"] = {{"type", "lda"}};
      j["data"] = {{"dataset", "corpus"}};
      j["optimizer"]["lr"] = 1;
    }
    const Scenario s = testing::scenario(j);
    const DataSplit d = make_workload_data(s);
    const auto m = make_workload_model(s, d);
    const ModelSize z = scenario_model_size(s);
    CHECK(z.parameters == static_cast<double>(m->parameter_count()));
    CHECK(z.wire_bytes == static_cast<double>(m->wire_bytes()));
    // lda: the expected document length against the drawn corpus's mean.
    CHECK(z.flops_per_sample == doctest::Approx(m->flops_per_sample()).epsilon(0.05));
  }
}

TEST_CASE("oversized CNN, MF and LDA scenarios are refused under a memory limit") {
  json cnn = cnn16_json();
  cnn["cluster"]["workers"] = json::array({{{"profile", "v100"}, {"count", 5000}}});
  json mf = json::parse(R"({ "name": "mf", "model": { "type": "mf", "rank": 64 },
    "data": { "dataset": "ratings", "ratings": { "rows": 2000000, "cols": 2000000, "train": 1000, "test": 10 } },
    "policy": { "type": "asp" }, "cluster": { "workers": [ { "profile": "gtx1060", "count": 8 } ] },
    "stop": { "max_updates": 10 } })");
  json lda = json::parse(R"({ "name": "lda", "model": { "type": "lda", "topics": 1000 },
    "data": { "dataset": "corpus", "corpus": { "vocabulary": 1000000, "documents": 100, "min_length": 10, "max_length": 20 } },
    "optimizer": { "lr": 1 }, "policy": { "type": "asp" },
    "cluster": { "workers": [ { "profile": "gtx1060", "count": 8 } ] }, "stop": { "max_updates": 10 } })");
  for (const json* j : {&cnn, &mf, &lda}) {
    const Scenario s = testing::scenario(*j);
    CAPTURE(s.name);
    const MemoryEstimate e = estimate_memory(s);
    CHECK(e.parameters == scenario_model_size(s).parameters);
    CHECK(e.parameters > 0);
    // Each worker's snapshot alone is more than a GiB in all: refused at 1 GiB.
    CHECK(e.snapshot_bytes > 1024.0 * 1024 * 1024);
    CHECK_THROWS_AS(check_memory(s, "big.json", MemoryLimit{1024.0 * 1024 * 1024, "STALESIM_MEMORY_LIMIT"}),
                    ScenarioError);
  }
}

TEST_CASE("validate prints the estimate on stderr and keeps stdout the resolved scenario") {
  const auto v = testing::run_cli("validate scenarios/quickstart.json");
  REQUIRE_MESSAGE(v.code == 0, v.err);
  CHECK(json::parse(v.out)["name"] == "quickstart");
  CHECK(v.err.find("estimate: group 0 (2 x gtx1060): iteration ") != std::string::npos);
  CHECK(v.err.find("bottleneck: server link") != std::string::npos);
  CHECK(v.err.find("estimate: wall time about ") != std::string::npos);
}

// The memory estimate against the measured peak, over a grid of models and cache modes:
// tests/test_hostile_round3b.cpp.

TEST_CASE("run prints the estimate in one line before it starts, and not with --quiet") {
  const fs::path d = fs::temp_directory_path() / ("stalesim-est-run-" + std::to_string(::getpid()));
  const auto loud =
      testing::run_cli("run tests/golden/tiny/scenario.json --force --out " + (d / "a").string());
  REQUIRE_MESSAGE(loud.code == 0, loud.err);
  CHECK(loud.err.starts_with("estimate: compute bound ("));
  CHECK(loud.err.find("~120 updates") != std::string::npos);  // max_updates caps the estimate
  const auto quiet =
      testing::run_cli("run tests/golden/tiny/scenario.json --quiet --force --out " + (d / "b").string());
  REQUIRE_MESSAGE(quiet.code == 0, quiet.err);
  CHECK(quiet.err.empty());
  fs::remove_all(d);
}

TEST_CASE("stalesim costs lists every cost architecture with its parameters, FLOPs and source") {
  const auto c = testing::run_cli("costs");
  REQUIRE(c.code == 0);
  for (const auto& a : cost_architectures()) {
    CAPTURE(a.name);
    CHECK(c.out.find(a.name + " ") != std::string::npos);
    CHECK(c.out.find("  " + a.name + ": " + a.source) != std::string::npos);
  }
  CHECK(c.out.find("lenet5                 61706         246824              2.499e+06") !=
        std::string::npos);
  CHECK(testing::run_cli("costs extra").code == 2);
}

TEST_CASE("each dataset's traits row gives the shape and the rows its generator makes") {
  // The one row per dataset (sim/data/dataset.hpp) that the run, the estimates and the plan read:
  // its counts must be what the data holds, test rows included (lstsq: d of them).
  DataSpec spec;
  spec.blobs = {.classes = 3, .features = 5, .train = 40, .test = 7, .spread = 1.0};
  spec.ratings.rows = 30, spec.ratings.cols = 20, spec.ratings.train = 50, spec.ratings.test = 9;
  spec.corpus.vocabulary = 40, spec.corpus.documents = 12, spec.corpus.min_length = 3,
  spec.corpus.max_length = 6;
  spec.lstsq.dimension = 6;
  for (const DatasetType t :
       {DatasetType::kBlobs, DatasetType::kRatings, DatasetType::kCorpus, DatasetType::kLstsq}) {
    CAPTURE(to_string(t));
    spec.dataset = t;
    const DatasetTraits& row = traits(t);
    const DataSplit d = row.make(spec, 7);
    CHECK(row.train_rows(spec) == static_cast<double>(d.train.size()));
    CHECK(row.test_rows(spec) == static_cast<double>(d.test.size()));
    CHECK(row.stored_features(spec) == static_cast<double>(d.train.features));
    CHECK(make_data(spec, 7).train.size() == d.train.size());
  }
  spec.dataset = DatasetType::kBlobs;
  CHECK(traits(spec.dataset).shape(spec).features == 5);
  CHECK(traits(spec.dataset).shape(spec).classes == 3);
  CHECK(traits(DatasetType::kLstsq).test_rows(spec) == 6);
  CHECK_FALSE(static_cast<bool>(traits(DatasetType::kNone).make));
  spec.dataset = DatasetType::kNone;
  CHECK(make_data(spec, 1).train.size() == 0);
}
