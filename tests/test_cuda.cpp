// The CUDA backend (models/cuda/): the errors of a build without CUDA or a machine without a GPU
// (these run everywhere), and, on a GPU, the softmax, MLP and CNN models against the CPU model (initial
// parameters, losses, gradients, evaluation) and their determinism. GPU cases skip with a MESSAGE
// when there is no GPU; in a build without CUDA they compile to one case that says so.
// On a GPU machine: stalesim_tests -tc='*CUDA*' (tools/device-check).

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "models/cuda/cuda_model.hpp"
#ifdef STALESIM_HAS_CUDA
#include "models/cuda/cublas_api.hpp"
#endif
#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/to_json.hpp"
#include "sim_test_util.hpp"

namespace stalesim {
namespace {

ModelSpec spec_of(const std::string& type, std::vector<int64_t> hidden = {}, const std::string& init = "he") {
  ModelSpec s;
  s.type = *enum_from_name<ModelType>(type);
  s.hidden = std::move(hidden);
  s.init = *enum_from_name<WeightInit>(init);
  return s;
}

nlohmann::json cuda_scenario_json(const std::string& timing) {
  auto j = testing::tiny_math_json();
  j["compute"] = {{"backend", "cuda"}, {"timing", timing}};
  return j;
}

}  // namespace

TEST_CASE("CUDA backend requests fail clearly without CUDA or without a GPU") {
  const ModelSpec mlp = spec_of("mlp", {8});
  std::string why;
  const bool gpu = find_cuda_device(&why).has_value();
  if (!cuda_built()) {
    CHECK_FALSE(gpu);
    CHECK(why.find("built without CUDA") != std::string::npos);
    CHECK_THROWS_WITH_AS(
        make_model(mlp, 4, 3, true),
        doctest::Contains("compute.backend \"cuda\" (mlp model): this stalesim was built without "
                          "CUDA (configure with -DSTALESIM_CUDA=ON"),
        DeviceError);
    CHECK_THROWS_WITH_AS(require_cuda_device(),
                         doctest::Contains("no CUDA device: this stalesim was built without"), DeviceError);
    CHECK_THROWS_WITH_AS(
        make_model(spec_of("cnn"), 784, 10, true),
        doctest::Contains("compute.backend \"cuda\" (cnn model): this stalesim was built without"),
        DeviceError);
    // The scenario says so before a run starts.
    CHECK_THROWS_WITH_AS(
        testing::scenario(cuda_scenario_json("modelled")),
        "test.json: /compute/backend: \"cuda\" needs a stalesim built with CUDA, and this one was "
        "built without (configure with -DSTALESIM_CUDA=ON on a machine with the CUDA toolkit)",
        ScenarioError);
  } else if (!gpu) {
    MESSAGE("this build has CUDA and this machine no GPU (" << why << "): checking the no-device error");
    CHECK_THROWS_WITH_AS(make_model(mlp, 4, 3, true), doctest::Contains("no CUDA device: "), DeviceError);
    CHECK_THROWS_WITH_AS(make_model(spec_of("softmax"), 4, 3, true), ("no CUDA device: " + why).c_str(),
                         DeviceError);
    CHECK_THROWS_WITH_AS(make_model(spec_of("cnn"), 784, 10, true), ("no CUDA device: " + why).c_str(),
                         DeviceError);
    CHECK_THROWS_WITH_AS(require_cuda_device(), ("no CUDA device: " + why).c_str(), DeviceError);
    // The scenario is valid (the build can run it on a GPU); the run fails when the model is built.
    CHECK(testing::scenario(cuda_scenario_json("measured")).compute.timing == Timing::kMeasured);
  } else {
    MESSAGE("a GPU is present (" << find_cuda_device()->describe() << "): no error to check");
    CHECK(make_model(mlp, 4, 3, true) != nullptr);
  }
  // Independent of the build and the machine.
  ModelSpec time_only = spec_of("time-only");
  time_only.parameters = 10;
  time_only.flops_per_sample = 1;
  CHECK_THROWS_WITH_AS(make_model(time_only, 0, 0, true),
                       "model: time-only: has no math to run on the cuda backend (use backend cpu)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_model(spec_of("cnn"), 100, 3, true),
                       doctest::Contains("model: cnn: takes square"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_model(spec_of("mlp", {0}), 4, 3, true),
                       "model: mlp: hidden[0] must be >= 1, got 0", std::invalid_argument);
}

TEST_CASE("CUDA compute section: defaults, measured timing needs the cuda backend, time-only has none") {
  const Scenario plain = testing::scenario(testing::tiny_math_json());
  CHECK(plain.compute == ComputeSpec{});
  CHECK(scenario_to_json(plain)["compute"] == nlohmann::json{{"backend", "cpu"}, {"timing", "modelled"}});
  auto measured_cpu = testing::tiny_math_json();
  measured_cpu["compute"] = {{"timing", "measured"}};
  CHECK_THROWS_WITH_AS(testing::scenario(measured_cpu),
                       "test.json: /compute/timing: \"measured\" times iterations on the GPU and needs "
                       "compute.backend \"cuda\" (compute.backend is \"cpu\")",
                       ScenarioError);
  auto measured_cost = cuda_scenario_json("measured");
  measured_cost["model"]["cost"] = "resnet50";
  CHECK_THROWS_WITH_AS(
      testing::scenario(measured_cost),
      "test.json: /compute/timing: \"measured\" times the math model on the GPU, and model.cost "
      "\"resnet50\" times it as another architecture: use one or the other",
      ScenarioError);
  auto measured_uniform = cuda_scenario_json("measured");
  measured_uniform["cluster"]["order"] = "uniform";
  measured_uniform["policy"] = {{"type", "asp"}};
  CHECK_THROWS_WITH_AS(testing::scenario(measured_uniform),
                       "test.json: /compute/timing: \"measured\" times each iteration on the GPU, which "
                       "cluster.order \"uniform\" (every iteration takes the same time) does not use: use "
                       "cluster.order \"timed\"",
                       ScenarioError);
  auto bad = testing::tiny_math_json();
  bad["compute"] = {{"backend", "gpu"}};
  CHECK_THROWS_WITH_AS(testing::scenario(bad),
                       "test.json: /compute/backend: expected one of \"cpu\", \"cuda\", got \"gpu\"",
                       ScenarioError);
  auto timing_only = testing::time_only_json(1, 1);
  CHECK_FALSE(scenario_to_json(testing::scenario(timing_only)).contains("compute"));
  timing_only["compute"] = {{"backend", "cpu"}};
  CHECK_THROWS_WITH_AS(
      testing::scenario(timing_only),
      "test.json: /compute: compute applies to softmax, mlp and cnn models only (model.type is "
      "\"time-only\"); remove it",
      ScenarioError);
}

TEST_CASE(
    "CUDA runs record their device in the manifest and measured runs are flagged not bit-reproducible") {
  Scenario s = testing::scenario(testing::tiny_math_json());
  RunResult r;
  CHECK_FALSE(summary_json(s, r, "0")["manifest"].contains("compute"));
  s.compute.backend = Backend::kCuda;  // set directly: a build without CUDA would not load it
  auto m = summary_json(s, r, "0")["manifest"]["compute"];
  CHECK(m["backend"] == "cuda");
  CHECK(m["bit_reproducible"] == true);
  CHECK(m["device"].get<std::string>().size() > 0);
  s.compute.timing = Timing::kMeasured;
  m = summary_json(s, r, "0")["manifest"]["compute"];
  CHECK(m["timing"] == "measured");
  CHECK(m["bit_reproducible"] == false);
}

#ifdef STALESIM_HAS_CUDA

TEST_CASE("CUDA builds load cuBLAS on first use, without a GPU too") {
  const char* why = "";
  const cuda::CublasApi* api = cuda::cublas(&why);
  REQUIRE_MESSAGE(api != nullptr, why);
  int major = 0;
  CHECK(api->get_property(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS);
  CHECK(major == CUBLAS_VER_MAJOR);
  CHECK(std::string(api->status_string(CUBLAS_STATUS_NOT_INITIALIZED)).size() > 0);
  CHECK(cuda::cublas() == api);  // loaded once
}

namespace {

// True when a GPU is present; otherwise a MESSAGE says why the case is skipped.
bool have_gpu() {
  std::string why;
  if (find_cuda_device(&why)) return true;
  MESSAGE("skipped: no CUDA device: " << why);
  return false;
}

DataSplit blobs(int32_t classes, int64_t features, int64_t train, int64_t test, uint64_t seed) {
  BlobsSpec spec;
  spec.classes = classes;
  spec.features = features;
  spec.train = train;
  spec.test = test;
  spec.spread = 1.5;
  return make_blobs(spec, seed);
}

std::vector<float> init_params(Model& m, uint64_t seed) {
  std::vector<float> p(static_cast<size_t>(m.parameter_count()));
  Rng rng(seed, Purpose::kInit, 0);
  m.init(p, rng);
  Rng jiggle(seed, Purpose::kInit, 1);
  for (float& v : p) v += static_cast<float>(0.05 * jiggle.normal());  // biases off zero too
  return p;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// max |a - b| / max |b| and ||a - b|| / ||b||: both must be small.
void check_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double tolerance) {
  REQUIRE(gpu.size() == cpu.size());
  double max_diff = 0, max_ref = 0, diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double d = static_cast<double>(gpu[i]) - static_cast<double>(cpu[i]);
    max_diff = std::max(max_diff, std::abs(d));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(cpu[i])));
    diff2 += d * d;
    ref2 += static_cast<double>(cpu[i]) * static_cast<double>(cpu[i]);
  }
  REQUIRE(max_ref > 0);
  CHECK(max_diff / max_ref <= tolerance);
  CHECK(std::sqrt(diff2 / ref2) <= tolerance);
}

struct Shape {
  const char* name;
  ModelSpec spec;
  int32_t classes;
  int64_t features;
};

std::vector<Shape> shapes() {
  return {{"softmax", spec_of("softmax"), 5, 20},
          {"mlp [32]", spec_of("mlp", {32}), 5, 20},
          {"mlp [64,16] glorot", spec_of("mlp", {64, 16}, "glorot"), 4, 12},
          {"mlp 784-200-10 (the quick start's)", spec_of("mlp", {200}), 10, 784},
          {"cnn 28x28 (LeNet-5, models/cnn.hpp)", spec_of("cnn"), 10, 784},
          {"cnn 12x12 glorot", spec_of("cnn", {}, "glorot"), 3, 144}};
}

}  // namespace

TEST_CASE("CUDA models start from the CPU model's parameters and match its losses and gradients") {
  if (!have_gpu()) return;
  for (const auto& shape : shapes()) {
    CAPTURE(shape.name);
    const DataSplit d = blobs(shape.classes, shape.features, 600, 100, 7);
    auto cpu = make_model(shape.spec, shape.features, shape.classes, false);
    auto gpu = make_model(shape.spec, shape.features, shape.classes, true);
    REQUIRE(gpu->parameter_count() == cpu->parameter_count());
    CHECK(gpu->flops_per_sample() == cpu->flops_per_sample());
    CHECK(gpu->type() == cpu->type());
    {  // init runs on the CPU with our Rng: bit-identical
      std::vector<float> a(static_cast<size_t>(cpu->parameter_count())), b(a.size());
      Rng ra(3, Purpose::kInit, 0), rb(3, Purpose::kInit, 0);
      cpu->init(a, ra);
      gpu->init(b, rb);
      CHECK(same_bytes(a, b));
    }
    const std::vector<float> p = init_params(*cpu, 11);
    for (const int32_t batch : {1, 32, 257}) {
      CAPTURE(batch);
      std::vector<int32_t> idx(static_cast<size_t>(batch));
      for (int32_t j = 0; j < batch; ++j) idx[static_cast<size_t>(j)] = (j * 37 + 5) % 600;  // shuffled
      std::vector<float> gc(p.size()), gg(p.size());
      const double lc = cpu->loss_and_gradient(p, d.train, idx, gc);
      const double lg = gpu->loss_and_gradient(p, d.train, idx, gg);
      CHECK(std::abs(lg - lc) <= 1e-4 * std::abs(lc));
      check_close(gg, gc, 1e-4);
    }
  }
}

TEST_CASE("CUDA evaluate matches the CPU model on subsets and across evaluation chunks") {
  if (!have_gpu()) return;
  for (const auto& shape : shapes()) {
    CAPTURE(shape.name);
    const DataSplit d = blobs(shape.classes, shape.features, 200, 12345, 9);  // > one 10000-sample chunk
    auto cpu = make_model(shape.spec, shape.features, shape.classes, false);
    auto gpu = make_model(shape.spec, shape.features, shape.classes, true);
    const std::vector<float> p = init_params(*cpu, 13);
    std::vector<int32_t> subset(300);
    for (size_t j = 0; j < subset.size(); ++j) subset[j] = static_cast<int32_t>((j * 41 + 3) % 12345);
    for (const bool all : {true, false}) {
      CAPTURE(all);
      const std::span<const int32_t> idx =
          all ? std::span<const int32_t>() : std::span<const int32_t>(subset);
      const Evaluation ec = cpu->evaluate(p, d.test, idx);
      const Evaluation eg = gpu->evaluate(p, d.test, idx);
      CHECK(eg.samples == ec.samples);
      CHECK(std::abs(eg.loss - ec.loss) <= 1e-4 * std::abs(ec.loss));
      // An arg-max may flip only where two logits tie to within rounding.
      CHECK(std::abs(eg.accuracy - ec.accuracy) <= 2.0 / static_cast<double>(ec.samples));
    }
  }
}

TEST_CASE("CUDA models give bit-identical results run after run and model after model") {
  if (!have_gpu()) return;
  for (const auto& shape : shapes()) {
    CAPTURE(shape.name);
    const DataSplit d = blobs(shape.classes, shape.features, 600, 500, 21);
    auto a = make_model(shape.spec, shape.features, shape.classes, true);
    auto b = make_model(shape.spec, shape.features, shape.classes, true);
    const std::vector<float> p = init_params(*a, 5);
    std::vector<int32_t> idx(64);
    std::iota(idx.begin(), idx.end(), 100);
    std::vector<float> g1(p.size()), g2(p.size()), g3(p.size());
    const double l1 = a->loss_and_gradient(p, d.train, idx, g1);
    a->evaluate(p, d.test, {});  // other work in between: reused buffers must not leak into results
    const double l2 = a->loss_and_gradient(p, d.train, idx, g2);
    const double l3 = b->loss_and_gradient(p, d.train, idx, g3);
    CHECK(l1 == l2);
    CHECK(l1 == l3);
    CHECK(same_bytes(g1, g2));
    CHECK(same_bytes(g1, g3));
    const Evaluation e1 = a->evaluate(p, d.test, {}), e2 = b->evaluate(p, d.test, {});
    CHECK(e1.loss == e2.loss);
    CHECK(e1.accuracy == e2.accuracy);
  }
}

TEST_CASE("CUDA models measure each iteration's GPU time and CPU models measure none") {
  if (!have_gpu()) return;
  const DataSplit d = blobs(10, 784, 64, 10, 1);
  auto gpu = make_model(spec_of("mlp", {200}), 784, 10, true);
  auto cpu = make_model(spec_of("mlp", {200}), 784, 10, false);
  CHECK_FALSE(gpu->last_measured_seconds().has_value());
  const std::vector<float> p = init_params(*gpu, 1);
  std::vector<float> g(p.size());
  std::vector<int32_t> idx(32);
  std::iota(idx.begin(), idx.end(), 0);
  gpu->loss_and_gradient(p, d.train, idx, g);
  cpu->loss_and_gradient(p, d.train, idx, g);
  REQUIRE(gpu->last_measured_seconds().has_value());
  const double t = *gpu->last_measured_seconds();
  MESSAGE("one 784-200-10 iteration at batch 32: " << t * 1e6 << " us on " << find_cuda_device()->describe());
  CHECK(t > 0);
  CHECK(t < 1.0);
  CHECK_FALSE(cpu->last_measured_seconds().has_value());
}

TEST_CASE("CUDA models reject what the CPU model rejects") {
  if (!have_gpu()) return;
  const DataSplit d = blobs(3, 4, 20, 5, 1);
  auto gpu = make_model(spec_of("mlp", {8}), 4, 3, true);
  std::vector<float> p(static_cast<size_t>(gpu->parameter_count())), g(p.size()), short_p(3);
  std::vector<int32_t> idx{0, 1, 20};
  CHECK_THROWS_WITH_AS(gpu->loss_and_gradient(p, d.train, idx, g),
                       "mlp: sample index 20 out of range for a dataset of 20", std::out_of_range);
  idx.pop_back();
  CHECK_THROWS_WITH_AS(gpu->loss_and_gradient(short_p, d.train, idx, g),
                       "mlp loss_and_gradient (params): expected 67 values, got 3", std::invalid_argument);
  CHECK_THROWS_WITH_AS(gpu->loss_and_gradient(p, d.train, {}, g), "mlp loss_and_gradient: empty batch",
                       std::invalid_argument);
  const DataSplit images = blobs(3, 144, 20, 5, 1);
  auto cnn = make_model(spec_of("cnn"), 144, 3, true);
  std::vector<float> pc(static_cast<size_t>(cnn->parameter_count())), gc(pc.size());
  CHECK_THROWS_WITH_AS(cnn->loss_and_gradient(pc, images.train, std::vector<int32_t>{0, 20}, gc),
                       "cnn: sample index 20 out of range for a dataset of 20", std::out_of_range);
  CHECK_THROWS_WITH_AS(cnn->loss_and_gradient(pc, d.train, std::vector<int32_t>{0}, gc),
                       "cnn loss_and_gradient: model takes 144 features, dataset has 4",
                       std::invalid_argument);
}

#else

TEST_CASE("CUDA model tests are skipped in a build without CUDA") {
  MESSAGE("skipped: this stalesim was built without CUDA (STALESIM_CUDA=OFF, or AUTO without nvcc)");
  CHECK_FALSE(cuda_built());
}

#endif

}  // namespace stalesim
