// Scenario loading (sim/scenario/: load.hpp, fields.hpp): strict parsing with errors that
// name the file, the JSON path, the value and what is allowed; --set overrides; the resolved
// scenario written back; the field table that drives all of it.

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/scenario/fields.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/to_json.hpp"

namespace {

using nlohmann::json;
using stalesim::Aggregate;
using stalesim::DatasetType;
using stalesim::DsspGrant;
using stalesim::JitterType;
using stalesim::ModelType;
using stalesim::Override;
using stalesim::PolicyType;
using stalesim::RuleType;
using stalesim::Scenario;
using stalesim::ScenarioError;
using stalesim::WeightInit;

constexpr const char* kQuickstart = R"({ "name": "quickstart", "seed": 1,
  "data":    { "dataset": "fashion-mnist" },
  "model":   { "type": "mlp", "hidden": [200] },
  "optimizer": { "rule": "sgd", "lr": 0.05, "batch_size": 32 },
  "policy":  { "type": "ssp", "staleness": 3 },
  "cluster": { "workers": [ { "profile": "gtx1060", "count": 2 }, { "profile": "gtx1080ti", "count": 2 } ],
               "network": { "latency_us": 50, "bandwidth_gbps": 10 } },
  "stop":    { "virtual_time_s": 600, "max_updates": 1000000, "target_accuracy": 0.85 },
  "eval":    { "every_s": 10 } })";

// The smallest valid scenario: one worker, every other field defaulted.
json minimal() {
  return json::parse(R"({"cluster": {"workers": [{"profile": "gtx1060"}]}, "stop": {"max_updates": 100}})");
}

json quickstart() { return json::parse(kQuickstart); }

// `doc` with the value at `pointer` set (objects on the way are created).
json with(json doc, const std::string& pointer, json value) {
  doc[json::json_pointer(pointer)] = std::move(value);
  return doc;
}

json without(json doc, const std::string& pointer) {
  const json::json_pointer p(pointer);
  doc[p.parent_pointer()].erase(p.back());
  return doc;
}

Scenario parse(const json& doc) { return stalesim::parse_scenario(doc, "x.json", "x"); }

std::vector<Override> sets(std::initializer_list<const char*> args) {
  std::vector<Override> out;
  for (const char* a : args) out.push_back(stalesim::parse_override(a));
  return out;
}

// A file in a private temporary folder, removed with the object.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : dir_(std::filesystem::temp_directory_path() /
             ("stalesim-test-scenario-" + std::to_string(::getpid()))),
        path_((dir_ / name).string()) {
    std::filesystem::create_directories(dir_);
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    std::filesystem::remove(dir_, ec);  // only succeeds once the folder is empty
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace

// ---- Valid scenarios -----------------------------------------------------------------------

TEST_CASE("the quickstart scenario parses with its values and every default resolved") {
  const Scenario s = parse(quickstart());
  CHECK(s.name == "quickstart");
  CHECK(s.seed == 1);
  CHECK(s.comment.empty());
  CHECK(s.data.dataset == DatasetType::kFashionMnist);
  CHECK(s.data.path == stalesim::kFashionMnistDefaultDir);
  CHECK(s.data.train_samples == 0);
  CHECK(s.model.type == ModelType::kMlp);
  CHECK(s.model.hidden == std::vector<int64_t>{200});
  CHECK(s.model.init == WeightInit::kHe);
  CHECK(s.optimizer.rule == RuleType::kSgd);
  CHECK(s.optimizer.lr == 0.05);
  CHECK(s.optimizer.batch_size == 32);
  CHECK(s.optimizer.aggregate == Aggregate::kSum);
  CHECK(s.policy.type == PolicyType::kSsp);
  CHECK(s.policy.staleness == 3);
  REQUIRE(s.cluster.workers.size() == 2);
  CHECK((s.cluster.workers[0].profile == "gtx1060" && s.cluster.workers[0].count == 2));
  CHECK((s.cluster.workers[1].profile == "gtx1080ti" && s.cluster.workers[1].count == 2));
  CHECK(s.cluster.worker_count() == 4);
  CHECK(s.cluster.network.latency_us == 50.0);
  CHECK(s.cluster.network.bandwidth_gbps == 10.0);
  CHECK(s.cluster.network.server_bandwidth_gbps == 10.0);
  CHECK(s.cluster.jitter.type == JitterType::kLognormal);
  CHECK(s.cluster.jitter.sigma == 0.05);
  CHECK(s.stop.virtual_time_s == 600.0);
  CHECK(s.stop.max_updates == 1000000);
  CHECK(s.stop.target_accuracy == 0.85);
  CHECK_FALSE(s.stop.at_target);
  CHECK(s.eval.every_s == 10.0);
  CHECK(s.eval.test_samples == 0);
}

TEST_CASE("a minimal scenario takes its name from the caller and its values from the defaults") {
  const Scenario s = parse(minimal());
  CHECK(s.name == "x");
  CHECK(s.seed == 1);
  CHECK(s.model == stalesim::ModelSpec{});
  CHECK(s.policy == stalesim::PolicySpec{});
  REQUIRE(s.cluster.workers.size() == 1);
  CHECK((s.cluster.workers[0].profile == "gtx1060" && s.cluster.workers[0].count == 1));
  CHECK(s.stop.max_updates == 100);
  CHECK_FALSE(s.stop.virtual_time_s.has_value());
}

TEST_CASE("defaults that depend on other fields are resolved from them") {
  SUBCASE("bsp sums like every other policy and has staleness 0") {
    const Scenario s = parse(with(minimal(), "/policy/type", "bsp"));
    CHECK(s.optimizer.aggregate == Aggregate::kSum);
    CHECK(s.policy.staleness == 0);
  }
  SUBCASE("asp sums and has staleness 0") {
    const Scenario s = parse(with(minimal(), "/policy/type", "asp"));
    CHECK(s.optimizer.aggregate == Aggregate::kSum);
    CHECK(s.policy.staleness == 0);
  }
  SUBCASE("an explicit aggregate wins") {
    const Scenario s = parse(with(with(minimal(), "/policy/type", "bsp"), "/optimizer/aggregate", "mean"));
    CHECK(s.optimizer.aggregate == Aggregate::kMean);
  }
  SUBCASE("the server's bandwidth follows the workers' unless given") {
    CHECK(
        parse(with(minimal(), "/cluster/network/bandwidth_gbps", 40)).cluster.network.server_bandwidth_gbps ==
        40.0);
    const json both = with(with(minimal(), "/cluster/network/bandwidth_gbps", 40),
                           "/cluster/network/server_bandwidth_gbps", 100);
    CHECK(parse(both).cluster.network.server_bandwidth_gbps == 100.0);
  }
  SUBCASE("a time-only model has no dataset") {
    json doc = with(minimal(), "/model",
                    {{"type", "time-only"}, {"parameters", 25000000}, {"flops_per_sample", 1.2e10}});
    const Scenario s = parse(doc);
    CHECK(s.data.dataset == DatasetType::kNone);
    CHECK(s.model.parameters == 25000000);
    CHECK(s.model.flops_per_sample == 1.2e10);
    CHECK(parse(with(doc, "/data/dataset", "none")) == s);
  }
}

TEST_CASE("integral numbers are accepted for integer fields and null unsets a stop condition") {
  const Scenario s = parse(with(with(minimal(), "/stop/max_updates", 1e6), "/stop/virtual_time_s", nullptr));
  CHECK(s.stop.max_updates == 1000000);
  CHECK_FALSE(s.stop.virtual_time_s.has_value());
  CHECK(parse(with(minimal(), "/seed", 18446744073709551615ULL)).seed == 18446744073709551615ULL);
}

TEST_CASE("a blobs scenario with a softmax model parses") {
  const json doc =
      with(with(with(minimal(), "/data",
                     json::parse(R"({"dataset": "blobs", "blobs": {"classes": 3, "spread": 0.5}})")),
                "/model", {{"type", "softmax"}}),
           "/stop", {{"target_accuracy", 0.9}, {"at_target", true}});
  const Scenario s = parse(doc);
  CHECK(s.data.blobs == stalesim::BlobsSpec{3, 16, 2000, 500, 0.5});
  CHECK(s.model.type == ModelType::kSoftmax);
  CHECK(s.stop.at_target);
}

// ---- Overrides ---------------------------------------------------------------------------

TEST_CASE("parse_override splits at the first equals sign") {
  CHECK(stalesim::parse_override("policy.staleness=8") == Override{"policy.staleness", "8"});
  CHECK(stalesim::parse_override("comment=a=b") == Override{"comment", "a=b"});
  CHECK(stalesim::parse_override("name=") == Override{"name", ""});
}

TEST_CASE("overrides replace values, index arrays and read their value as JSON when it parses") {
  json doc = quickstart();
  stalesim::apply_overrides(
      doc, sets({"policy.staleness=8", "cluster.workers.0.count=6", "model.hidden=[100,50]",
                 "cluster.jitter.type=none", "comment=scaled down 10x", "stop.target_accuracy=null"}));
  const Scenario s = parse(doc);
  CHECK(s.policy.staleness == 8);
  CHECK(s.cluster.workers[0].count == 6);
  CHECK(s.cluster.worker_count() == 8);
  CHECK(s.model.hidden == std::vector<int64_t>{100, 50});
  CHECK(s.cluster.jitter.type == JitterType::kNone);
  CHECK(s.comment == "scaled down 10x");
  CHECK_FALSE(s.stop.target_accuracy.has_value());
}

TEST_CASE("an override of policy.type to bsp keeps the sum aggregate, and mean stays available") {
  json doc = minimal();
  CHECK(parse(doc).optimizer.aggregate == Aggregate::kSum);
  stalesim::apply_overrides(doc, sets({"policy.type=bsp"}));
  CHECK(parse(doc).optimizer.aggregate == Aggregate::kSum);
  stalesim::apply_overrides(doc, sets({"optimizer.aggregate=mean"}));
  CHECK(parse(doc).optimizer.aggregate == Aggregate::kMean);
}

TEST_CASE("an override of a string field keeps its text as it is") {
  json doc = minimal();
  stalesim::apply_overrides(doc, sets({"name=2024", "comment=true", "cluster.workers.0.profile=gtx1080ti"}));
  const Scenario s = parse(doc);
  CHECK(s.name == "2024");
  CHECK(s.comment == "true");
  CHECK(s.cluster.workers[0].profile == "gtx1080ti");
  stalesim::apply_overrides(doc, sets({"name=\"quoted\""}));
  CHECK(parse(doc).name == "quoted");
}

TEST_CASE("overrides create missing objects") {
  json doc = minimal();
  stalesim::apply_overrides(doc, sets({"data.dataset=blobs", "data.blobs.classes=7"}));
  CHECK(parse(doc).data.blobs.classes == 7);
}

TEST_CASE("a scenario file is read, overridden, reseeded and named after the file") {
  const TempFile file("ssp-small.json", kQuickstart);
  json doc = quickstart();
  doc.erase("name");
  const TempFile unnamed("ssp-small.json.json", doc.dump(2));
  CHECK(stalesim::load_scenario_file(file.path()).name == "quickstart");
  CHECK(stalesim::load_scenario_file(unnamed.path()).name == "ssp-small.json");
  const auto over = sets({"policy.staleness=8", "seed=5"});
  const Scenario s = stalesim::load_scenario_file(file.path(), over, 42);
  CHECK(s.policy.staleness == 8);
  CHECK(s.seed == 42);
  CHECK(stalesim::load_scenario_file(file.path(), over).seed == 5);
}

// ---- The resolved scenario ----------------------------------------------------------------

TEST_CASE("scenario_to_json writes every resolved field and reads back to an equal scenario") {
  const std::vector<json> docs = {
      quickstart(),
      minimal(),
      with(with(minimal(), "/policy/type", "bsp"), "/cluster/network/bandwidth_gbps", 25),
      with(with(with(minimal(), "/data", {{"dataset", "blobs"}, {"train_samples", 300}}), "/model",
                {{"type", "softmax"}, {"init", "glorot"}}),
           "/cluster/jitter", {{"type", "none"}}),
      with(with(minimal(), "/model",
                {{"type", "time-only"}, {"parameters", 1000}, {"flops_per_sample", 3.5e6}}),
           "/stop", {{"virtual_time_s", 0.1}, {"max_updates", nullptr}}),
      with(with(with(quickstart(), "/policy", {{"type", "asp"}}), "/stop/at_target", true), "/comment",
           "\"quoted\", tabs\t and unicode \u00e9"),
  };
  for (const auto& doc : docs) {
    CAPTURE(doc.dump());
    const Scenario s = parse(doc);
    const json resolved = stalesim::scenario_to_json(s);
    CHECK(parse(resolved) == s);
    CHECK(parse(json::parse(resolved.dump(2))) == s);
    CHECK(stalesim::scenario_to_json(parse(resolved)) == resolved);
  }
}

TEST_CASE("the resolved scenario spells out dependent defaults and unset stop conditions") {
  const json j = stalesim::scenario_to_json(parse(with(minimal(), "/policy/type", "bsp")));
  CHECK(j.at("name") == "x");
  CHECK(j.at("optimizer").at("aggregate") == "sum");
  CHECK(j.at("cluster").at("network").at("server_bandwidth_gbps") == 10.0);
  CHECK(j.at("cluster").at("workers") ==
        json::parse(R"([{"profile": "gtx1060", "count": 1, "precision": "fp32", "iteration_ms": null,
                         "latency_us": null, "bandwidth_gbps": null, "latency_sigma": null}])"));
  CHECK(j.at("stop").at("virtual_time_s").is_null());
  CHECK(j.at("stop").at("target_accuracy").is_null());
  CHECK(j.at("stop").at("max_updates") == 100);
  CHECK_FALSE(j.at("policy").contains("staleness"));  // applies to ssp only
  CHECK_FALSE(j.at("data").contains("blobs"));        // applies to blobs only
  CHECK(j.at("data").at("path") == stalesim::kFashionMnistDefaultDir);
}

// ---- The field table ---------------------------------------------------------------------

TEST_CASE("the field table lists parents before children and gives every value field its accessors") {
  const auto& fields = stalesim::scenario_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    CAPTURE(f.path);
    CHECK(f.path.starts_with("/"));
    CHECK_FALSE(f.doc.empty());
    CHECK(stalesim::find_scenario_field(f.path) == &f);
    std::string parent = f.path.substr(0, f.path.rfind('/'));
    if (parent.ends_with("/*")) parent.resize(parent.size() - 2);
    if (!parent.empty()) {
      const auto* p = stalesim::find_scenario_field(parent);
      REQUIRE(p != nullptr);
      CHECK(p < &f);
    }
    if (f.type != stalesim::FieldType::kObject) CHECK((f.set != nullptr && f.get != nullptr));
    if (!f.applies_key.empty()) CHECK(stalesim::find_scenario_field(f.applies_key) != nullptr);
    CHECK(f.applies_to.empty() == (f.applies == nullptr));
  }
}

TEST_CASE("writing a default explicitly gives the same scenario as leaving it out") {
  const Scenario base = parse(minimal());
  const json resolved = stalesim::scenario_to_json(base);
  int written = 0;
  for (const auto& f : stalesim::scenario_fields()) {
    if (f.default_value.is_null() || f.path.find('*') != std::string::npos) continue;
    const json::json_pointer p(f.path);
    if (!resolved.contains(p)) continue;  // does not apply to the minimal scenario
    CAPTURE(f.path);
    CHECK(parse(with(minimal(), f.path, f.default_value)) == base);
    CHECK(resolved.at(p) == f.default_value);
    ++written;
  }
  CHECK(written >= 20);
}

TEST_CASE("the markdown field reference has a row for every path") {
  const std::string md = stalesim::scenario_fields_markdown();
  CHECK(md.starts_with("| Path | Type | Unit | Default | Allowed / range | Description |\n|---|"));
  size_t rows = 0;
  for (char c : md) rows += c == '\n';
  CHECK(rows == stalesim::scenario_fields().size() + 2);
  for (const auto& f : stalesim::scenario_fields()) {
    CAPTURE(f.path);
    CHECK(md.find("| `" + f.path + "` |") != std::string::npos);
  }
  CHECK(md.find("| `/policy/staleness` | integer | clocks | `3` | in [0, 9007199254740992] |") !=
        std::string::npos);
  CHECK(md.find("| `/policy/type` | string |  | `\"ssp\"` | \"bsp\", \"asp\", \"ssp\", \"essp\", \"dssp\", "
                "\"vap\", \"softsync\", \"allreduce-ring\", \"allreduce-hierarchical\" |") != std::string::npos);
  CHECK(
      md.find(
          "| `/model/hidden` | array of integers | units | `[200]` | 1 to 64 items; each in [1, 65536] |") !=
      std::string::npos);
  CHECK(md.find("| `/stop/target_accuracy` | number |  | unset | in (0, 1] |") != std::string::npos);
  CHECK(md.find("| `/cluster/workers/*/profile` | string |  | required | 1 to 4096 characters | Device "
                "profile of the "
                "group's workers: a built-in name (a100, cpu-core, gtx1060, gtx1080ti, h100, h200, p100, t4, "
                "v100; stalesim profiles), or a profile file") != std::string::npos);
}

TEST_CASE("allowed values and ranges are described in words") {
  using stalesim::describe_allowed;
  using stalesim::find_scenario_field;
  // Every enforced maximum is shown, representation limits too (issue 18).
  CHECK(describe_allowed(*find_scenario_field("/policy/staleness")) == "in [0, 9007199254740992]");
  CHECK(describe_allowed(*find_scenario_field("/optimizer/lr")) == "> 0");
  CHECK(describe_allowed(*find_scenario_field("/stop/virtual_time_s")) == "in (0, 1000000000]");
  CHECK(describe_allowed(*find_scenario_field("/cluster/jitter/sigma")) == "in [0, 4]");
  CHECK(describe_allowed(*find_scenario_field("/name")) ==
        "1 to 100 characters: letters, digits, . _ - + = , @; not starting with .");
  CHECK(describe_allowed(*find_scenario_field("/comment")) == "at most 65536 characters");
  CHECK(describe_allowed(*find_scenario_field("/cluster/schedule")) == "at most 100000 items");
  CHECK(describe_allowed(*find_scenario_field("/stop/at_target")).empty());
}

// ---- Errors: unknown keys ------------------------------------------------------------------

TEST_CASE("an unknown key names the closest allowed key at any depth") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/sede", 3)), "x.json: /sede: unknown key; did you mean 'seed'?",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy/stalenes", 8)),
                       "x.json: /policy/stalenes: unknown key; did you mean 'staleness'?", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/network/latency_ms", 1)),
                       "x.json: /cluster/network/latency_ms: unknown key; did you mean 'latency_us'?",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/workers/0/cuont", 2)),
                       "x.json: /cluster/workers/0/cuont: unknown key; did you mean 'count'?", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(with(minimal(), "/data/dataset", "blobs"), "/data/blobs/Classes", 3)),
                       "x.json: /data/blobs/Classes: unknown key; did you mean 'classes'?", ScenarioError);
}

TEST_CASE("an unknown key with no close match lists the allowed keys") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy/speed", 8)),
                       "x.json: /policy/speed: unknown key; allowed: cache, dssp_grant, n, range, staleness, "
                       "type, value_bound",
                       ScenarioError);
}

TEST_CASE("a key at the wrong level points to where it belongs") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/staleness", 8)),
                       "x.json: /staleness: unknown key here; did you mean /policy/staleness? (allowed here: "
                       "cluster, comment, compute, data, eval, model, name, optimizer, policy, seed, stop)",
                       ScenarioError);
}

TEST_CASE("a key found at several other levels names them all") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/type", "bsp")),
                       "x.json: /type: unknown key here; did you mean /model/type, /policy/type, "
                       "/cluster/workers/*/jitter/type or /cluster/jitter/type? (allowed here: cluster, "
                       "comment, compute, data, eval, model, name, optimizer, "
                       "policy, seed, stop)",
                       ScenarioError);
}

// ---- Errors: types and ranges --------------------------------------------------------------

TEST_CASE("a value of the wrong type names the expected type and the value") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/name", 3)), "x.json: /name: expected a string, got 3",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy/staleness", 2.5)),
                       "x.json: /policy/staleness: expected an integer, got 2.5", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy", {1})), "x.json: /policy: expected an object, got [1]",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/optimizer/batch_size", "3")),
                       "x.json: /optimizer/batch_size: expected an integer, got \"3\"", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/workers/0/count", true)),
                       "x.json: /cluster/workers/0/count: expected an integer, got true", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/stop/at_target", 1)),
                       "x.json: /stop/at_target: expected true or false, got 1", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/optimizer/lr", "0.1")),
                       "x.json: /optimizer/lr: expected a number, got \"0.1\"", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/model/hidden", 200)),
                       "x.json: /model/hidden: expected an array of integers, got 200", ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/cluster/workers", {{"profile", "gtx1060"}})),
      "x.json: /cluster/workers: expected an array of objects, got {\"profile\":\"gtx1060\"}", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/workers/0", "gtx1060")),
                       "x.json: /cluster/workers/0: expected an object, got \"gtx1060\"", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/eval/every_s", nullptr)),
                       "x.json: /eval/every_s: expected a number, got null", ScenarioError);
}

TEST_CASE("a long offending value is shown truncated") {
  json big = json::array();
  for (int i = 0; i < 40; ++i) big.push_back(i);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/name", big)),
      "x.json: /name: expected a string, got [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,...",
      ScenarioError);
}

TEST_CASE("a value out of range names the range") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy/staleness", -3)),
                       "x.json: /policy/staleness: expected an integer >= 0, got -3", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/optimizer/lr", 0)),
                       "x.json: /optimizer/lr: expected a number > 0, got 0", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/stop/target_accuracy", 1.5)),
                       "x.json: /stop/target_accuracy: expected a number in (0, 1], got 1.5", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/stop/virtual_time_s", 0.0)),
                       "x.json: /stop/virtual_time_s: expected a number > 0, got 0.0", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/network/latency_us", -1)),
                       "x.json: /cluster/network/latency_us: expected a number >= 0, got -1", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/model/hidden", {100, 0})),
                       "x.json: /model/hidden/1: expected an integer in [1, 65536], got 0", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/model/hidden", {100, 70000})),
                       "x.json: /model/hidden/1: expected an integer in [1, 65536], got 70000",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/model/hidden", json::array())),
                       "x.json: /model/hidden: expected a non-empty array of integers, got []",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/seed", -1)), "x.json: /seed: expected an integer >= 0, got -1",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(with(minimal(), "/data/dataset", "blobs"), "/data/blobs/classes", 1)),
                       "x.json: /data/blobs/classes: expected an integer >= 2, got 1", ScenarioError);
}

TEST_CASE("integers must fit their C++ types") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/workers/0/count", 1e30)),
                       "x.json: /cluster/workers/0/count: expected an integer in [1, 1000000], got 1e+30",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/optimizer/batch_size", 3000000000LL)),
      "x.json: /optimizer/batch_size: expected an integer in [1, 2147483647], got 3000000000", ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/stop/virtual_time_s", 1e10)),
      "x.json: /stop/virtual_time_s: expected a number in (0, 1000000000], got 10000000000.0", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/stop/max_updates", 1e300)),
                       "x.json: /stop/max_updates: expected an integer in [1, 9007199254740992], got 1e+300",
                       ScenarioError);
}

TEST_CASE("a string that is not among the allowed values lists them") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy/type", "bspp")),
                       "x.json: /policy/type: expected one of \"bsp\", \"asp\", \"ssp\", \"essp\", \"dssp\", "
                       "\"vap\", \"softsync\", \"allreduce-ring\", \"allreduce-hierarchical\", got \"bspp\"",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/model/type", 3)),
                       "x.json: /model/type: expected one of \"softmax\", \"mlp\", \"cnn\", \"mf\", \"lda\", "
                       "\"lstsq\", \"time-only\", got 3",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/name", "")),
                       "x.json: /name: expected a non-empty string, got \"\"", ScenarioError);
}

// ---- Errors: the cluster -------------------------------------------------------------------

TEST_CASE("an unknown device profile lists the known ones and the ways to give a profile file") {
  CHECK_THROWS_WITH_AS(
      parse(with(quickstart(), "/cluster/workers/1/profile", "gtx9999")),
      "x.json: /cluster/workers/1/profile: unknown device profile \"gtx9999\"; built-in: a100, "
      "cpu-core, gtx1060, gtx1080ti, h100, h200, p100, t4, v100; or a profile file: a path "
      "ending in .json (relative to the scenario file's folder, or to the working directory with "
      "--set), or NAME for NAME.json in $STALESIM_PROFILE_DIR",
      ScenarioError);
}

TEST_CASE("the cluster needs at least one worker and at most a million") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/workers", json::array())),
                       "x.json: /cluster/workers: expected a non-empty array of objects, got []",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(without(minimal(), "/cluster")), "x.json: /cluster/workers: required",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/cluster/workers/0", {{"count", 2}})),
                       "x.json: /cluster/workers/0/profile: required", ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(
          minimal(), "/cluster/workers",
          json::parse(
              R"([{"profile": "gtx1060", "count": 600000}, {"profile": "gtx1080ti", "count": 400001}])"))),
      "x.json: /cluster/workers: 1000001 workers in total; at most 1000000", ScenarioError);
}

// ---- Errors: contradictions ----------------------------------------------------------------

TEST_CASE("a run that would never stop is rejected") {
  const char* never =
      "x.json: /stop: the run would never stop: set virtual_time_s, max_updates, or target_accuracy with "
      "at_target";
  CHECK_THROWS_WITH_AS(parse(without(minimal(), "/stop")), never, ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/stop", {{"target_accuracy", 0.9}})), never, ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/stop", {{"max_updates", nullptr}})), never, ScenarioError);
}

TEST_CASE("at_target needs a target accuracy") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/stop/at_target", true)),
                       "x.json: /stop/at_target: at_target is true but target_accuracy is not set",
                       ScenarioError);
}

TEST_CASE("the time-only model needs its size and takes no dataset, hidden layers or target") {
  const json time_only =
      with(minimal(), "/model", {{"type", "time-only"}, {"parameters", 1000}, {"flops_per_sample", 1e6}});
  CHECK_THROWS_WITH_AS(parse(without(time_only, "/model/parameters")),
                       "x.json: /model/parameters: required when model.type is \"time-only\"", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(without(time_only, "/model/flops_per_sample")),
                       "x.json: /model/flops_per_sample: required when model.type is \"time-only\"",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(time_only, "/data/dataset", "fashion-mnist")),
      "x.json: /data/dataset: a time-only model takes no dataset, got \"fashion-mnist\"; remove "
      "/data/dataset (or set it to \"none\")",
      ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(time_only, "/model/hidden", {100})),
      "x.json: /model/hidden: hidden applies to mlp models only (model.type is \"time-only\"); "
      "remove it",
      ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(time_only, "/stop/target_accuracy", 0.9)),
      "x.json: /stop/target_accuracy: target_accuracy applies to softmax, mlp and cnn models only "
      "(model.type is \"time-only\"); remove it",
      ScenarioError);
}

TEST_CASE("a declared size is rejected for a model that has math") {
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/model/parameters", 1000)),
      "x.json: /model/parameters: parameters applies to time-only models only (model.type is "
      "\"mlp\"); remove it",
      ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/data/dataset", "none")),
      "x.json: /data/dataset: \"none\" needs model.type \"time-only\" (model.type is \"mlp\")",
      ScenarioError);
}

TEST_CASE("staleness on bsp or asp is rejected") {
  CHECK_THROWS_WITH_AS(parse(with(with(minimal(), "/policy/type", "asp"), "/policy/staleness", 2)),
                       "x.json: /policy/staleness: staleness applies to ssp, essp and dssp only (policy.type "
                       "is \"asp\"); remove it",
                       ScenarioError);
}

TEST_CASE("fields of another dataset or jitter type are rejected") {
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/data/blobs/classes", 3)),
                       "x.json: /data/blobs: blobs applies to the blobs dataset only (data.dataset is "
                       "\"fashion-mnist\"); remove it",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(with(minimal(), "/data/dataset", "blobs"), "/data/path", "/tmp")),
                       "x.json: /data/path: path applies to the fashion-mnist dataset only (data.dataset is "
                       "\"blobs\"); remove it",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/cluster/jitter", {{"type", "none"}, {"sigma", 0.1}})),
      "x.json: /cluster/jitter/sigma: sigma applies to lognormal jitter only (cluster.jitter.type "
      "is \"none\"); remove it",
      ScenarioError);
}

TEST_CASE("a scenario without a name and without a file name to take it from is rejected") {
  CHECK_THROWS_WITH_AS(stalesim::parse_scenario(minimal(), "x.json", ""),
                       "x.json: /name: required (there is no file name to take it from)", ScenarioError);
}

TEST_CASE("a cluster of many single-worker groups loads") {
  json workers = json::array();
  for (int i = 0; i < 100000; ++i) workers.push_back({{"profile", i % 2 ? "gtx1060" : "gtx1080ti"}});
  const Scenario s = parse(with(minimal(), "/cluster/workers", workers));
  CHECK(s.cluster.worker_count() == 100000);
  CHECK(parse(stalesim::scenario_to_json(s)) == s);
}

TEST_CASE("the top level must be an object") {
  CHECK_THROWS_WITH_AS(parse(json::array({1, 2})), "x.json: /: the top level must be an object, got [1,2]",
                       ScenarioError);
}

// ---- Errors: files -----------------------------------------------------------------------

TEST_CASE("broken JSON is reported with line and column") {
  const TempFile file("broken.json", "{\n  \"name\": \"x\",\n  \"seed\": 1,,\n}\n");
  const std::string expected =
      file.path() +
      ":3:13: invalid JSON: syntax error while parsing object key - unexpected ','; expected string literal";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(file.path()), expected.c_str(), ScenarioError);

  const TempFile truncated("truncated.json", "{\n  \"name\": \"x\"");
  const std::string at_end = truncated.path() + ":2:14: invalid JSON: ";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(truncated.path()), doctest::Contains(at_end.c_str()),
                       ScenarioError);
}

TEST_CASE("a duplicate key in a file is an error") {
  const TempFile file(
      "dup.json",
      R"({"policy": {"type": "ssp", "type": "bsp"}, "cluster": {"workers": [{"profile": "gtx1060"}]}})");
  const std::string expected = file.path() + ": /policy/type: duplicate key";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(file.path()), expected.c_str(), ScenarioError);
  const TempFile nested("dup2.json",
                        R"({"cluster": {"workers": [{"profile": "a"}, {"count": 1, "count": 2}]}})");
  const std::string in_array = nested.path() + ": /cluster/workers/1/count: duplicate key";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(nested.path()), in_array.c_str(), ScenarioError);
}

TEST_CASE("an unreadable file is named with the reason") {
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file("/nonexistent/x.json"),
                       "/nonexistent/x.json: cannot read: No such file or directory", ScenarioError);
}

TEST_CASE("a file error names the file as its origin") {
  const TempFile file("bad-range.json", with(quickstart(), "/policy/staleness", -3).dump());
  const std::string expected = file.path() + ": /policy/staleness: expected an integer >= 0, got -3";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(file.path()), expected.c_str(), ScenarioError);
}

// ---- Errors: overrides ---------------------------------------------------------------------

TEST_CASE("an override without PATH=VALUE is rejected") {
  CHECK_THROWS_WITH_AS(stalesim::parse_override("policy.staleness"),
                       "--set 'policy.staleness': expected PATH=VALUE", ScenarioError);
  CHECK_THROWS_WITH_AS(stalesim::parse_override("=8"), "--set '=8': expected PATH=VALUE", ScenarioError);
  CHECK_THROWS_WITH_AS(
      stalesim::parse_override("policy..staleness=8"),
      "--set 'policy..staleness=8': expected PATH=VALUE (empty key in path 'policy..staleness')",
      ScenarioError);
}

TEST_CASE("an override into an array needs an existing index") {
  json doc = quickstart();
  CHECK_THROWS_WITH_AS(
      stalesim::apply_overrides(doc, sets({"cluster.workers.5.count=6"})),
      "--set cluster.workers.5.count=6: /cluster/workers/5: index out of range (array has 2 elements)",
      ScenarioError);
  CHECK_THROWS_WITH_AS(
      stalesim::apply_overrides(doc, sets({"cluster.workers.first.count=6"})),
      "--set cluster.workers.first.count=6: /cluster/workers: expected an array index, got 'first'",
      ScenarioError);
}

TEST_CASE("an override cannot set a key inside a plain value") {
  json doc = quickstart();
  CHECK_THROWS_WITH_AS(
      stalesim::apply_overrides(doc, sets({"policy.type.name=x"})),
      "--set policy.type.name=x: /policy/type: cannot set key 'name' inside a string (\"ssp\")",
      ScenarioError);
}

TEST_CASE("an override that creates a misspelt key is reported with the override") {
  const TempFile file("quick.json", kQuickstart);
  const auto typo = sets({"seed=3", "policy.stalenes=8"});
  const std::string expected =
      file.path() +
      " (after --set policy.stalenes=8): /policy/stalenes: unknown key; did you mean 'staleness'?";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(file.path(), typo), expected.c_str(), ScenarioError);

  const auto section = sets({"polcy.type=bsp"});
  const std::string top =
      file.path() + " (after --set polcy.type=bsp): /polcy: unknown key; did you mean 'policy'?";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(file.path(), section), top.c_str(), ScenarioError);
}

TEST_CASE("an override that contradicts the file names the override") {
  const TempFile file("quick.json", kQuickstart);
  const auto bsp = sets({"policy.type=bsp", "policy.staleness=2"});
  const std::string expected =
      file.path() +
      " (after --set policy.staleness=2): /policy/staleness: staleness applies to ssp, essp and dssp only "
      "(policy.type is \"bsp\"); remove it";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(file.path(), bsp), expected.c_str(), ScenarioError);
  const auto range = sets({"seed=2", "cluster.workers.1.count=0"});
  const std::string count =
      file.path() +
      " (after --set cluster.workers.1.count=0): /cluster/workers/1/count: expected an integer "
      "in [1, 1000000], got 0";
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(file.path(), range), count.c_str(), ScenarioError);
}

TEST_CASE("a --set that changes the policy drops the file's fields that no longer apply") {
  namespace fs = std::filesystem;
  const fs::path p = fs::temp_directory_path() / ("stalesim-drop-" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << R"({ "name": "q", "policy": { "type": "ssp", "staleness": 3 },
    "cluster": { "workers": [ { "profile": "gtx1060" } ] }, "stop": { "max_updates": 10 },
    "data": { "dataset": "blobs" } })";
  const std::vector<stalesim::Override> to_bsp{{"policy.type", "bsp"}};
  const auto s = stalesim::load_scenario_file(p.string(), to_bsp);
  CHECK(s.policy.type == PolicyType::kBsp);
  CHECK(s.policy.staleness == 0);
  CHECK(s.optimizer.aggregate == stalesim::Aggregate::kSum);
  // Given explicitly on the command line, the inapplicable field is still an error.
  const std::vector<stalesim::Override> both{{"policy.type", "asp"}, {"policy.staleness", "2"}};
  CHECK_THROWS_WITH_AS(stalesim::load_scenario_file(p.string(), both),
                       doctest::Contains("staleness applies to ssp, essp and dssp only"),
                       stalesim::ScenarioError);
  fs::remove(p);
}

TEST_CASE("the dynamic and eager policies' fields are validated") {
  const json dssp = with(minimal(), "/policy", json{{"type", "dssp"}, {"staleness", 3}, {"range", 12}});
  const Scenario s = parse(dssp);
  CHECK(s.policy.range == 12);
  CHECK(s.policy.dssp_grant == DsspGrant::kBounded);
  CHECK(parse(with(minimal(), "/policy", json{{"type", "essp"}})).policy.staleness == 3);
  CHECK_THROWS_WITH_AS(parse(with(dssp, "/policy/range", -1)),
                       "x.json: /policy/range: expected an integer in [0, 1000000], got -1", ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(dssp, "/policy/dssp_grant", "loose")),
      "x.json: /policy/dssp_grant: expected one of \"bounded\", \"literal\", \"unbounded\", got "
      "\"loose\"",
      ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/policy", json{{"type", "ssp"}, {"range", 2}})),
      "x.json: /policy/range: range applies to dssp only (policy.type is \"ssp\"); remove it", ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/policy", json{{"type", "essp"}, {"cache", "lazy"}})),
      "x.json: /policy/cache: cache applies to ssp only (policy.type is \"essp\"); remove it", ScenarioError);
  CHECK_THROWS_WITH_AS(
      parse(with(minimal(), "/policy", json{{"type", "ssp"}, {"cache", "eager"}})),
      "x.json: /policy/cache: expected one of \"pull-every-iteration\", \"lazy\", got \"eager\"",
      ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy", json{{"type", "vap"}})),
                       "x.json: /policy/value_bound: required when policy.type is \"vap\"", ScenarioError);
  CHECK_THROWS_WITH_AS(parse(with(minimal(), "/policy", json{{"type", "vap"}, {"value_bound", 0}})),
                       "x.json: /policy/value_bound: expected a number > 0, got 0", ScenarioError);
}

TEST_CASE("VAP is refused for the time-only model, which has no values to bound") {
  const json j = json::parse(R"({ "model": { "type": "time-only", "parameters": 10, "flops_per_sample": 1 },
    "policy": { "type": "vap", "value_bound": 0.1 },
    "cluster": { "workers": [ { "profile": "gtx1060" } ] }, "stop": { "max_updates": 5 } })");
  CHECK_THROWS_WITH_AS(
      parse(j),
      "x.json: /policy/type: vap bounds the values of updates, which the time-only model does "
      "not compute; use a softmax, mlp or cnn model, or another policy",
      ScenarioError);
}
