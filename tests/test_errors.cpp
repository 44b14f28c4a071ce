// Hostile input, faults and interruptions (issue 10): `stalesim schema`, the memory estimate, and
// bad inputs, signals, divergence and deadlock through the real CLI binary.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/scenario/fields.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/schema.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim/sweep/sweep_spec.hpp"
#include "tests/cli_test_util.hpp"

using namespace std::string_literals;
using namespace stalesim;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using stalesim::testing::Outcome;
using stalesim::testing::run_cli;
using stalesim::testing::Scratch;
using stalesim::testing::slurp;

// Runs `env stalesim args` (shell words) from the source folder.
Outcome cli(const std::string& args, const std::string& env = "") {
  return run_cli(args, env.empty() ? "" : env + " ");
}

const char* kTiny = "tests/golden/tiny/scenario.json";

// ---- A small JSON Schema checker: the keywords `stalesim schema` uses ------------------------

bool has_type(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "number") return v.is_number();
  if (t == "integer")  // 2020-12: any number with a zero fractional part (1e3 included)
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                     std::floor(v.get<double>()) == v.get<double>());
  return false;
}

long double num(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

// Appends "<path>: <problem>" for each way `v` breaks `schema`.
void check_schema(const json& schema, const json& v, const std::string& path,
                  std::vector<std::string>& errors) {
  if (schema.contains("type")) {
    const json& t = schema["type"];
    bool ok = false;
    for (const auto& one : t.is_array() ? t : json::array({t}))
      ok = ok || has_type(v, one.get<std::string>());
    if (!ok) {
      errors.push_back(path + ": not of type " + t.dump());
      return;
    }
  }
  if (schema.contains("oneOf")) {  // sweep files' "seeds"
    size_t fits = 0;
    for (const auto& alternative : schema["oneOf"]) {
      std::vector<std::string> e;
      check_schema(alternative, v, path, e);
      fits += e.empty() ? 1 : 0;
    }
    if (fits != 1) errors.push_back(path + ": fits " + std::to_string(fits) + " of oneOf, not exactly one");
  }
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    errors.push_back(path + ": not one of " + schema["enum"].dump());
  if (v.is_number()) {
    const long double x = num(v);
    if (schema.contains("minimum") && x < num(schema["minimum"])) errors.push_back(path + ": below minimum");
    if (schema.contains("maximum") && x > num(schema["maximum"])) errors.push_back(path + ": above maximum");
    if (schema.contains("exclusiveMinimum") && x <= num(schema["exclusiveMinimum"]))
      errors.push_back(path + ": not above exclusiveMinimum");
    if (schema.contains("exclusiveMaximum") && x >= num(schema["exclusiveMaximum"]))
      errors.push_back(path + ": not below exclusiveMaximum");
  }
  if (v.is_string() && schema.contains("minLength") &&
      v.get<std::string>().size() < schema["minLength"].get<size_t>())
    errors.push_back(path + ": shorter than minLength");
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>())
      errors.push_back(path + ": fewer than minItems");
    if (schema.contains("items"))
      for (size_t i = 0; i < v.size(); ++i)
        check_schema(schema["items"], v[i], path + "/" + std::to_string(i), errors);
  }
  if (v.is_object()) {
    const json props = schema.value("properties", json::object());
    for (const auto& [k, item] : v.items()) {
      if (props.contains(k))
        check_schema(props[k], item, path + "/" + k, errors);
      else if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object())
        check_schema(schema["additionalProperties"], item, path + "/" + k, errors);  // a map (sweep files)
      else if (schema.value("additionalProperties", true) == false)
        errors.push_back(path + "/" + k + ": not allowed (additionalProperties)");
    }
    for (const auto& r : schema.value("required", json::array()))
      if (!v.contains(r.get<std::string>()))
        errors.push_back(path + "/" + r.get<std::string>() + ": required");
  }
}

std::vector<std::string> schema_errors(const json& schema, const json& doc) {
  std::vector<std::string> errors;
  check_schema(schema, doc, "", errors);
  return errors;
}

// The schema node of a field path ("/cluster/workers/*/count").
const json* schema_node(const json& schema, const std::string& path) {
  const json* cur = &schema;
  std::stringstream ss(path.substr(1));
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part == "*") {
      if (!cur->contains("items")) return nullptr;
      cur = &(*cur)["items"];
    } else {
      if (!cur->contains("properties") || !(*cur)["properties"].contains(part)) return nullptr;
      cur = &(*cur)["properties"][part];
    }
  }
  return cur;
}

std::vector<fs::path> shipped_scenarios() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(STALESIM_SOURCE_DIR) / "scenarios"))
    if (e.is_regular_file() && e.path().extension() == ".json" && !e.path().string().ends_with(".sweep.json"))
      files.push_back(e.path());
  files.push_back(fs::path(STALESIM_SOURCE_DIR) / kTiny);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

// ---- stalesim schema ---------------------------------------------------------------------------

TEST_CASE("stalesim schema prints JSON Schema 2020-12 with a node for every field of the table") {
  const auto r = cli("schema");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const json schema = json::parse(r.out);
  CHECK(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  CHECK(schema["additionalProperties"] == false);
  const std::map<FieldType, std::string> type_of = {
      {FieldType::kString, "string"},    {FieldType::kInteger, "integer"},    {FieldType::kNumber, "number"},
      {FieldType::kBool, "boolean"},     {FieldType::kIntegerArray, "array"}, {FieldType::kObject, "object"},
      {FieldType::kObjectArray, "array"}};
  size_t leaves = 0;
  for (const FieldInfo& f : scenario_fields()) {
    CAPTURE(f.path);
    const json* node = schema_node(schema, f.path);
    REQUIRE(node != nullptr);
    const json t = node->at("type");
    CHECK((t.is_array() ? t[0] : t) == type_of.at(f.type));
    CHECK(t.is_array() == f.nullable);
    CHECK(node->at("description").get<std::string>().starts_with(f.doc));
    if (!f.allowed.empty()) CHECK(node->at("enum") == json(f.allowed));
    if (!f.default_value.is_null()) CHECK(node->at("default") == f.default_value);
    if (!f.minimum.is_null() && (f.type == FieldType::kInteger || f.type == FieldType::kNumber))
      CHECK(node->at(f.exclusive_minimum ? "exclusiveMinimum" : "minimum") == f.minimum);
    if (f.type == FieldType::kObject || f.type == FieldType::kObjectArray) {
      const json& obj = f.type == FieldType::kObject ? *node : node->at("items");
      CHECK(obj.at("additionalProperties") == false);
    } else {
      ++leaves;
    }
  }
  CHECK(leaves > 40);
  // And no node the table does not have: count the leaves of the schema.
  size_t schema_leaves = 0;
  std::function<void(const json&)> walk = [&](const json& n) {
    const json* obj =
        n.contains("properties")
            ? &n
            : (n.contains("items") && n["items"].contains("properties") ? &n["items"] : nullptr);
    if (obj == nullptr) {
      ++schema_leaves;
      return;
    }
    for (const auto& [k, child] : (*obj)["properties"].items()) walk(child);
  };
  for (const auto& [k, child] : schema["properties"].items()) walk(child);
  CHECK(schema_leaves == leaves);
}

TEST_CASE("every shipped scenario satisfies the schema, and the checker rejects broken ones") {
  const json schema = scenario_json_schema();
  for (const auto& file : shipped_scenarios()) {
    CAPTURE(file);
    const json doc = json::parse(slurp(file));
    const auto errors = schema_errors(schema, doc);
    CHECK_MESSAGE(errors.empty(), (errors.empty() ? "" : errors.front()));
    // The resolved form (every default written out, as in the manifest) satisfies it too.
    const Scenario s = load_scenario_file(file.string());
    CHECK(schema_errors(schema, scenario_to_json(s)).empty());
  }
  // Sweep files (*.sweep.json) satisfy the sweep file schema and load.
  const json sweep_schema = sweep_file_schema();
  for (const auto& e : fs::recursive_directory_iterator(fs::path(STALESIM_SOURCE_DIR) / "scenarios"))
    if (e.path().string().ends_with(".sweep.json")) {
      CAPTURE(e.path());
      const auto errors = schema_errors(sweep_schema, json::parse(slurp(e.path())));
      CHECK_MESSAGE(errors.empty(), (errors.empty() ? "" : errors.front()));
      CHECK_NOTHROW(load_sweep_file(e.path().string()));
    }
  json doc = json::parse(slurp(fs::path(STALESIM_SOURCE_DIR) / kTiny));
  doc["policy"]["stalenes"] = 3;
  doc["policy"]["type"] = "sspp";
  doc["optimizer"]["lr"] = 0;
  doc["cluster"]["workers"][0]["count"] = 0;
  doc["cluster"]["workers"][1].erase("profile");
  doc["model"]["hidden"] = json::array();
  const auto errors = schema_errors(schema, doc);
  CHECK(errors ==
        std::vector<std::string>{
            "/cluster/workers/0/count: below minimum", "/cluster/workers/1/profile: required",
            "/model/hidden: fewer than minItems", "/optimizer/lr: not above exclusiveMinimum",
            "/policy/stalenes: not allowed (additionalProperties)",
            "/policy/type: not one of [\"bsp\",\"asp\",\"ssp\",\"essp\",\"dssp\",\"vap\",\"softsync\","
            "\"allreduce-ring\",\"allreduce-hierarchical\"]"});
}

// ---- Memory ------------------------------------------------------------------------------------

TEST_CASE("the memory estimate counts parameters as the model does, and grows with workers") {
  Scenario s = load_scenario_file(STALESIM_SOURCE_DIR + "/"s + kTiny);
  // 6 features -> 8 hidden -> 3 classes.
  const auto model = make_model(s.model, 6, 3);
  MemoryEstimate e = estimate_memory(s);
  CHECK(e.parameters == static_cast<double>(model->parameter_count()));
  CHECK(e.parameters == 83);
  // 3 workers, SSP pulling every iteration: 4 snapshots; the gradient is computed when the push is
  // applied, into the server's scratch. A deferred gradient of a batch of 10 would take
  // (3 + 2 x 8) x 10 floats, more than the 83 parameters, so workers hold their parameters.
  CHECK(e.snapshot_bytes == 4 * 83 * 4);
  CHECK(e.worker_bytes == 3 * 4096);
  CHECK(e.dataset_bytes == (300 + 90) * (6 * 4 + 4));
  CHECK_FALSE(e.deferred_gradients);
  {
    Scenario d = s;  // 100 features: 835 parameters, so workers defer their gradients
    d.data.blobs.features = 100;
    CHECK(estimate_memory(d).parameters == 835);
    // The current version and the one being read; per worker 10 indices and 190 floats.
    CHECK(estimate_memory(d).snapshot_bytes == 2 * 835 * 4);
    CHECK(estimate_memory(d).worker_bytes == 3 * (10 * 4 + 190 * 4 + 4096));
    CHECK(estimate_memory(d).deferred_gradients);
    d.optimizer.rule = RuleType::kDcasgd;  // needs the parameters read: one snapshot per worker
    CHECK(estimate_memory(d).snapshot_bytes == 4 * 835 * 4);
    CHECK_FALSE(estimate_memory(d).deferred_gradients);
    d.optimizer.rule = RuleType::kSgd;
    // BSP's workers all read the same version: they defer only while the factors of all of them
    // (3 x 190 floats) are smaller than that one copy, and with 10 workers they are not.
    d.policy.type = PolicyType::kBsp;
    CHECK(estimate_memory(d).deferred_gradients);
    d.cluster.workers[0].count = 8;
    CHECK_FALSE(estimate_memory(d).deferred_gradients);
    CHECK(estimate_memory(d).snapshot_bytes == 11 * 835 * 4);
    d.cluster.workers[0].count = 1;
    // ESSP: the copies of the server's clock rises in transit (here 4: a transit of 2 pushes, and the
    // gtx1080ti group runs ahead of the gtx1060 by the bound of 1), fewer than a cache and a copy
    // in flight per worker (6), and the server's version.
    d.policy.type = PolicyType::kEssp;
    CHECK(estimate_memory(d).snapshot_bytes == 5 * 835 * 4);
    d.policy.type = PolicyType::kSsp;  // the lazy cache: a cache and a copy in flight per worker
    d.policy.cache = CacheMode::kLazy;
    CHECK(estimate_memory(d).snapshot_bytes == 7 * 835 * 4);
  }
  s.model.hidden = {200, 100};
  CHECK(estimate_memory(s).parameters == static_cast<double>(make_model(s.model, 6, 3)->parameter_count()));
  s.model.type = ModelType::kSoftmax;
  CHECK(estimate_memory(s).parameters == static_cast<double>(make_model(s.model, 6, 3)->parameter_count()));
  s.cluster.workers[0].count = 1000;
  CHECK(estimate_memory(s).total() > e.total() + 999 * 4096);
  s.data.dataset = DatasetType::kFashionMnist;
  CHECK(estimate_memory(s).dataset_bytes == 70000.0 * 785 + 70000.0 * (784 * 4 + 4));
}

TEST_CASE("memory sizes parse with binary suffixes and reject anything else") {
  CHECK(parse_size("4096") == 4096.0);
  CHECK(parse_size("512K") == 512.0 * 1024);
  CHECK(parse_size("1.5G") == 1.5 * 1024 * 1024 * 1024);
  CHECK(parse_size("2GiB") == 2.0 * 1024 * 1024 * 1024);
  CHECK(parse_size("8m") == 8.0 * 1024 * 1024);
  for (const char* bad : {"", "lots", "-1", "1X", "1KK", "G", " 5", "nan", "inf"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_size(bad).has_value());
  }
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(3.0 * 1024 * 1024 * 1024) == "3 GiB");
}

// ---- Bad input through the CLI -----------------------------------------------------------------

namespace {

struct BadInput {
  const char* what;
  // The scenario file's text; empty = the golden tiny scenario.
  std::string file;
  std::string args;  // after "SCENARIO"; "{out}" is replaced by an output path in the scratch folder
  std::string env;
  int code;
  std::string message;  // must appear in stderr
  const char* command = "validate";
};

}  // namespace

TEST_CASE("each bad input exits with its code and a message naming file, path, value and what is allowed") {
  const std::string tiny = slurp(fs::path(STALESIM_SOURCE_DIR) / kTiny);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = tiny;
    const size_t at = t.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    return t.replace(at, from.size(), to);
  };
  const std::vector<BadInput> cases = {
      {"unknown key with a close match", with("\"policy\":", "\"polcy\":"), "", "", 2,
       "x.json: /polcy: unknown key; did you mean 'policy'?"},
      {"unknown nested key", with("\"staleness\": 1", "\"stalenes\": 1"), "", "", 2,
       "x.json: /policy/stalenes: unknown key; did you mean 'staleness'?"},
      {"broken JSON: missing comma", with("\"seed\": 3,", "\"seed\": 3"), "", "", 2,
       "x.json:5:8: invalid JSON: syntax error while parsing object - unexpected string literal; expected "
       "'}'"},
      {"broken JSON: trailing garbage", tiny + "}", "", "", 2,
       "x.json:14:1: invalid JSON: syntax error while parsing value - unexpected '}'; expected end of input"},
      {"broken JSON: empty file", " ", "", "", 2,
       "x.json:1:2: invalid JSON: syntax error while parsing value - unexpected end of input"},
      {"broken JSON: NaN literal", with("\"lr\": 0.1", "\"lr\": NaN"), "", "", 2,
       "x.json:7:39: invalid JSON: syntax error while parsing value - invalid literal"},
      {"a number beyond double (found by fuzz_scenario)", with("\"lr\": 0.1", "\"lr\": 1e400"), "", "", 2,
       "x.json:7:39: invalid JSON: number overflow parsing '1e400' (larger than a double can hold)"},
      {"duplicate key", with("\"seed\": 3,", "\"seed\": 3, \"seed\": 4,"), "", "", 2,
       "x.json: /seed: duplicate key"},
      {"not an object", "[1, 2]", "", "", 2, "x.json: /: the top level must be an object, got [1,2]"},
      {"wrong type", with("\"staleness\": 1", "\"staleness\": \"one\""), "", "", 2,
       "x.json: /policy/staleness: expected an integer, got \"one\""},
      {"out of range", with("\"lr\": 0.1", "\"lr\": -0.1"), "", "", 2,
       "x.json: /optimizer/lr: expected a number > 0, got -0.1"},
      {"not an allowed value", with("\"type\": \"ssp\"", "\"type\": \"sspp\""), "", "", 2,
       "x.json: /policy/type: expected one of \"bsp\", \"asp\", \"ssp\", \"essp\", \"dssp\", \"vap\", "
       "\"softsync\", \"allreduce-ring\", \"allreduce-hierarchical\", got \"sspp\""},
      {"an integer given as a fraction", with("\"batch_size\": 10", "\"batch_size\": 10.5"), "", "", 2,
       "x.json: /optimizer/batch_size: expected an integer, got 10.5"},
      {"an empty cluster", "", "--set 'cluster.workers=[]'", "", 2,
       "(after --set cluster.workers=[]): /cluster/workers: expected a non-empty array of objects, got []"},
      {"a worker group of zero", "", "--set cluster.workers.0.count=0", "", 2,
       "(after --set cluster.workers.0.count=0): /cluster/workers/0/count: expected an integer in [1, "
       "1000000], got 0"},
      {"an unknown device profile", "", "--set cluster.workers.0.profile=gtx9999", "", 2,
       "/cluster/workers/0/profile: unknown device profile \"gtx9999\"; built-in: a100, cpu-core, gtx1060, "
       "gtx1080ti, h100, h200, p100, t4, v100; or a profile file"},
      {"a missing required field", with("{ \"profile\": \"gtx1060\", \"count\": 1,", "{ \"count\": 1,"), "",
       "", 2, "x.json: /cluster/workers/0/profile: required"},
      {"a field that does not apply", "", "--set policy.type=asp --set policy.staleness=2", "", 2,
       "/policy/staleness: staleness applies to ssp, essp and dssp only (policy.type is \"asp\"); remove it"},
      {"an mlp without hidden layers", "", "--set 'model.hidden=[]'", "", 2,
       "/model/hidden: expected a non-empty array of integers, got []"},
      {"a zero time limit", "", "--set stop.virtual_time_s=0", "", 2,
       "/stop/virtual_time_s: expected a number > 0, got 0"},
      {"a seed out of range", with("\"seed\": 3", "\"seed\": -3"), "", "", 2,
       "x.json: /seed: expected an integer >= 0, got -3"},
      {"softsync n above the workers", "", "--set policy.type=softsync --set policy.n=9", "", 2,
       "(after --set policy.n=9): /policy/n: expected an integer in [1, 3] (the number of workers), got 9"},
      {"a batch larger than a shard", "", "--set optimizer.batch_size=200 {out}", "", 2,
       "x.json: /optimizer/batch_size: 200 is larger than worker 0's shard of 100 samples (300 training "
       "samples over 3 workers)",
       "run"},
      {"--set without =", "", "--set policy.staleness", "", 2,
       "--set 'policy.staleness': expected PATH=VALUE"},
      {"--set with an empty key", "", "--set policy..staleness=1", "", 2,
       "empty key in path 'policy..staleness'"},
      {"--set of an unknown path", "", "--set policy.stalenes=1", "", 2,
       "(after --set policy.stalenes=1): /policy/stalenes: unknown key; did you mean 'staleness'?"},
      {"--set of a bad value", "", "--set optimizer.lr=fast", "", 2,
       "(after --set optimizer.lr=fast): /optimizer/lr: expected a number, got \"fast\""},
      {"--set past the end of an array", "", "--set cluster.workers.7.count=1", "", 2,
       "--set cluster.workers.7.count=1: /cluster/workers/7: index out of range (array has 2 elements)"},
      {"--set below a number", "", "--set optimizer.lr.x=1", "", 2,
       "--set optimizer.lr.x=1: /optimizer/lr: cannot set key 'x' inside a number (0.1)"},
      {"a bad --seed", "", "--seed minus-one", "", 2,
       "--seed 'minus-one': expected an integer from 0 to 18446744073709551615"},
      {"a missing scenario file", "-", "", "", 2, "no/such.json: cannot read: No such file or directory"},
      {"a missing dataset folder", "", "--set data.dataset=fashion-mnist --set data.path=/no/such/dir {out}",
       "", 2, "/no/such/dir/train-images-idx3-ubyte.gz: not found", "run"},
      {"an occupied output folder", "", "--out {occupied}", "", 2,
       "output folder exists and is not empty, and --force would not replace it either: it holds 'keep'",
       "run"},
      {"an output path that is a file", "", "--out {file}", "", 2, "output path exists and is not a folder",
       "run"},
      {"an output folder below a file", "", "--out {file}/sub/run", "", 2,
       "/sub/run: cannot create the output folder: ", "run"},
      // One gradient thread: more add the pool's buffers and model instances to the estimate.
      {"a scenario too big for the memory", "", "{out} --threads 1", "STALESIM_MEMORY_LIMIT=10K", 2,
       "x.json: needs about 8.03 MiB (process 8 MiB, dataset 10.7 KiB, parameter snapshots 1.3 KiB, workers' "
       "state 12 KiB, server state 332 B, gradients and indices 1.5 KiB, model scratch 9.14 KiB; 83 "
       "parameters "
       "x 4 bytes), but only 10 KiB is available (STALESIM_MEMORY_LIMIT)",
       "run"},
      {"a bad memory limit", "", "{out}", "STALESIM_MEMORY_LIMIT=lots", 2,
       "STALESIM_MEMORY_LIMIT='lots': expected a size in bytes", "run"},
      {"an unknown --record", "", "--record everything {out}", "", 2,
       "--record 'everything': allowed: gradients", "run"},
      {"an unknown option", "", "--frobnicate", "", 2, "unrecognised option '--frobnicate'"},
      {"a bad fault-injection value", "", "{out}", "STALESIM_INJECT_DEADLOCK_AT_CLOCK=soon", 2,
       "STALESIM_INJECT_DEADLOCK_AT_CLOCK='soon': expected an integer >= 0", "run"},
  };
  CHECK(cases.size() >= 30);
  std::set<std::string> seen;
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK(seen.insert(c.what).second);
    const Scratch dir("bad");
    const std::string file =
        c.file == "-" ? "no/such.json" : dir.write("x.json", c.file.empty() ? tiny : c.file).string();
    fs::create_directories(dir.path / "occupied");
    dir.write("occupied/keep", "mine");
    dir.write("file", "not a folder");
    std::string args = c.args;
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"{out}", "--out " + (dir.path / "out").string()},
                                                          {"{occupied}", (dir.path / "occupied").string()},
                                                          {"{file}", (dir.path / "file").string()}})
      for (size_t at; (at = args.find(key)) != std::string::npos;) args.replace(at, key.size(), value);
    const bool run = std::string(c.command) == "run";
    const auto r = cli(std::string(c.command) + " '" + file + "' " + (run ? "--quiet " : "") + args, c.env);
    CHECK(r.code == c.code);
    CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, r.err);
    if (run) CHECK_FALSE(fs::exists(dir.path / "out" / "done"));
    if (c.args.find("{occupied}") != std::string::npos)
      CHECK(slurp(dir.path / "occupied" / "keep") == "mine");
  }
}

TEST_CASE("a corrupt Fashion-MNIST file of the right size is refused by its checksum") {
  const fs::path real = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  if (!fs::exists(real)) {
    MESSAGE("skipped: Debian's dataset-fashion-mnist is not installed");
    return;
  }
  const Scratch dir("corrupt");
  fs::create_symlink(real, dir.path / "train-images-idx3-ubyte.gz");
  // 60,000 labels as the header says, all zero: the right size, the wrong content.
  std::string labels = {0, 0, 8, 1, 0, 0, char(0xea), char(0x60)};
  labels.append(60000, '\0');
  dir.write("train-labels-idx1-ubyte", labels);
  const auto r =
      cli("run "s + kTiny + " --quiet --set data.dataset=fashion-mnist --set data.path=" + dir.path.string() +
          " --out " + (dir.path / "out").string());
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.err.find((dir.path / "train-labels-idx1-ubyte").string() +
                           ": corrupt: has Fashion-MNIST's dimensions but not its content (payload XXH64 ") !=
                    std::string::npos,
                r.err);
  CHECK(r.err.find("expected 97e6779495a8b4ba)") != std::string::npos);
  // One byte short: the size check names what is missing.
  labels.pop_back();
  dir.write("train-labels-idx1-ubyte", labels);
  const auto cut =
      cli("run "s + kTiny + " --quiet --set data.dataset=fashion-mnist --set data.path=" + dir.path.string() +
          " --out " + (dir.path / "out").string());
  CHECK(cut.code == 2);
  CHECK(cut.err.find("train-labels-idx1-ubyte: truncated: expected 60000 label bytes, got 59999") !=
        std::string::npos);
}

// ---- Run-time faults ---------------------------------------------------------------------------

TEST_CASE("SIGINT and SIGTERM stop a run at the next event and keep its outputs, marked interrupted") {
  for (const int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    const Scratch dir("signal");
    const fs::path out = dir.path / "out";
    // A run that would take days.
    const std::string cmd =
        "cd '"s + STALESIM_SOURCE_DIR + "' && exec '" + STALESIM_BINARY + "' run " + kTiny +
        " --quiet --set stop.max_updates=1000000000000 --set eval.every_s=1000 --out '" + out.string() +
        "' >'" + (dir.path / "o").string() + "' 2>'" + (dir.path / "e").string() + "'";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Let it start (the handler is set once the scenario is loaded) and run a while.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    REQUIRE(::kill(pid, sig) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(slurp(dir.path / "e").find("stalesim: interrupted at t=") != std::string::npos);
    REQUIRE(fs::exists(out / "summary.json"));
    const json summary = json::parse(slurp(out / "summary.json"));
    CHECK(summary["status"] == "interrupted");
    CHECK(summary["stop_reason"] == "interrupted");
    CHECK(summary["server_updates"].get<int64_t>() > 0);
    CHECK(fs::exists(out / "metrics.csv"));
    CHECK_FALSE(fs::exists(out / "done"));
  }
}

TEST_CASE("a diverging run exits 0 with status diverged: when, which worker, the last finite loss") {
  const Scratch dir("diverged");
  const auto r =
      cli("run "s + kTiny + " --quiet --set optimizer.lr=1e30 --out " + (dir.path / "out").string());
  CHECK(r.code == 0);
  CHECK_MESSAGE(r.err.find("stalesim: diverged: ") != std::string::npos, r.err);
  CHECK(r.out.find("golden-tiny: diverged (diverged)") != std::string::npos);
  const json summary = json::parse(slurp(dir.path / "out" / "summary.json"));
  CHECK(summary["status"] == "diverged");
  CHECK(summary["divergence"]["time_s"].is_number());
  CHECK(summary["divergence"]["worker"].is_number_integer());
  CHECK(summary["divergence"]["last_finite_loss"].is_number());
  CHECK(fs::exists(dir.path / "out" / "done"));  // a finished run, with its results kept
}

TEST_CASE("a deadlock exits 3 and says who waits for whom") {
  const Scratch dir("deadlock");
  const auto r = cli("run "s + kTiny + " --quiet --out " + (dir.path / "out").string(),
                     "STALESIM_INJECT_DEADLOCK_AT_CLOCK=4");
  CHECK(r.code == 3);
  CHECK_MESSAGE(r.err.find("stalesim: deadlock: at t=") != std::string::npos, r.err);
  CHECK(r.err.find(
            "every worker is blocked and no event is pending: worker 0 (clock 4, the slowest) waits for the "
            "policy's leave") != std::string::npos);
  CHECK(r.err.find("policy ssp, minimum clock 4") != std::string::npos);
  const json summary = json::parse(slurp(dir.path / "out" / "summary.json"));
  CHECK(summary["status"] == "deadlock");
}
