// Micro-benchmarks (Google Benchmark): the bare event queue, the MLP's and the CNN's gradients,
// and Eigen's own single-thread SGEMM on the MLP's shapes as the ceiling. tools/bench/run-all runs them with
// repetitions, writes their JSON and hands it to stalesim_bench_runs for the summary table.
//
// Counters (per second of CPU time, as Google Benchmark's rates are):
//   items_per_second  engine: events popped and run (each run event schedules one new event)
//   flops_nominal     mlp: Model::flops_per_sample() x batch per call (6 x weights per sample)
//   flops_performed   mlp: the GEMM FLOPs the code actually performs (2 x weights forward,
//                     2 x weights for dW, 2 x in x out for each dX but the first layer's)
//   flops_nominal     cnn: Model::flops_per_sample() x batch per call (6 x multiply-adds per sample)
//   flops             sgemm: 2 m n k per product

#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include <cstdint>
#include <iterator>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "base/rng.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/build_info.hpp"
#include "sim/engine/engine.hpp"

namespace {

using stalesim::Rng;

constexpr uint64_t kSeed = 20240917;

// ---- Engine ------------------------------------------------------------------------------------

// Delays are uniform on [1, kMaxDelayNs] ns: every event lands at a random depth of the heap.
constexpr uint64_t kMaxDelayNs = 1'000'000;

// Steady state with range(0) pending events: each iteration pops the earliest event, whose
// handler schedules one more at now + a random delay from our Rng.
void engine_steady_state(benchmark::State& state) {
  const auto pending = static_cast<uint32_t>(state.range(0));
  stalesim::Engine engine;
  Rng rng(kSeed);
  auto delay = [&rng] {
    return stalesim::SimTime::from_ns(static_cast<int64_t>(rng.below(kMaxDelayNs) + 1));
  };
  for (uint32_t i = 0; i < pending; ++i) engine.schedule(delay(), 1, i);
  auto handler = [&](const stalesim::Event& e) {
    engine.schedule_in(delay(), e.kind, e.target, e.payload + 1);
  };
  for (auto _ : state) benchmark::DoNotOptimize(engine.step(handler));
  state.SetItemsProcessed(state.iterations());
  state.counters["pending"] = static_cast<double>(engine.pending());
}
BENCHMARK(engine_steady_state)->ArgName("pending")->Arg(1'000)->Arg(100'000);

// ---- MLP gradient ------------------------------------------------------------------------------

constexpr int64_t kFeatures = 784;
constexpr int64_t kHidden = 200;
constexpr int32_t kClasses = 10;
// Random samples in [0, 1): 12.8 MB of features, more than the caches, as Fashion-MNIST is.
constexpr int64_t kSamples = 4096;

// GEMM FLOPs performed per sample by DenseClassifier's forward and backward passes.
double performed_flops_per_sample() {
  const int64_t widths[] = {kFeatures, kHidden, kClasses};
  double flops = 0.0;
  for (size_t l = 0; l + 1 < std::size(widths); ++l) {
    const double w = static_cast<double>(widths[l]) * static_cast<double>(widths[l + 1]);
    flops += 2.0 * w + 2.0 * w + (l > 0 ? 2.0 * w : 0.0);  // forward, dW, dX (not for the input)
  }
  return flops;
}

stalesim::Dataset random_dataset(Rng& rng) {
  stalesim::Dataset d;
  d.features = kFeatures;
  d.classes = kClasses;
  d.x.resize(static_cast<size_t>(kSamples * kFeatures));
  for (float& v : d.x) v = static_cast<float>(rng.uniform());
  d.y.resize(static_cast<size_t>(kSamples));
  for (int32_t& y : d.y) y = static_cast<int32_t>(rng.below(kClasses));
  return d;
}

// Times loss_and_gradient of the model `spec` names at batch range(0); batches are consecutive
// slices of a random permutation of the samples, so each call gathers samples from random places.
// Returns the model, for the counters.
std::unique_ptr<stalesim::Model> time_gradient(benchmark::State& state, const stalesim::ModelSpec& spec) {
  const auto batch = static_cast<size_t>(state.range(0));
  Rng rng(kSeed);
  const stalesim::Dataset data = random_dataset(rng);
  auto model = stalesim::make_model(spec, kFeatures, kClasses);
  std::vector<float> params(static_cast<size_t>(model->parameter_count()));
  std::vector<float> grad(params.size());
  model->init(params, rng);
  std::vector<int32_t> order(static_cast<size_t>(kSamples));
  std::iota(order.begin(), order.end(), 0);
  rng.shuffle(std::span<int32_t>(order));
  size_t pos = 0;
  for (auto _ : state) {
    if (pos + batch > order.size()) pos = 0;
    const std::span<const int32_t> indices(order.data() + pos, batch);
    pos += batch;
    benchmark::DoNotOptimize(model->loss_and_gradient(params, data, indices, grad));
    benchmark::ClobberMemory();
  }
  return model;
}

// loss_and_gradient of the MLP 784-200-10.
void mlp_gradient(benchmark::State& state) {
  stalesim::ModelSpec spec;
  spec.type = stalesim::ModelType::kMlp;
  spec.hidden = {kHidden};
  const auto model = time_gradient(state, spec);
  const auto b = static_cast<double>(state.range(0));
  state.counters["flops_nominal"] =
      benchmark::Counter(model->flops_per_sample() * b, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flops_performed"] =
      benchmark::Counter(performed_flops_per_sample() * b, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(mlp_gradient)->ArgName("batch")->Arg(1)->Arg(32)->Arg(128);

// ---- CNN gradient ------------------------------------------------------------------------------

// loss_and_gradient of the LeNet-5-style CNN (models/cnn.hpp) on 28x28 inputs at batch range(0),
// batches as in mlp_gradient. Nominal FLOPs only: 6 x multiply-adds per sample (2.5 MFLOP).
void cnn_gradient(benchmark::State& state) {
  stalesim::ModelSpec spec;
  spec.type = stalesim::ModelType::kCnn;
  const auto model = time_gradient(state, spec);
  state.counters["flops_nominal"] =
      benchmark::Counter(model->flops_per_sample() * static_cast<double>(state.range(0)),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(cnn_gradient)->ArgName("batch")->Arg(32)->Arg(128);

// ---- Eigen SGEMM: the ceiling ------------------------------------------------------------------

Eigen::MatrixXf random_matrix(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  Eigen::MatrixXf m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  return m;
}

// C (m x n) = A (m x k) * B (k x n), single thread, as the model's first layer computes it
// (n = 1 goes through Eigen's GEMV path, as the model's does at batch 1).
void eigen_sgemm(benchmark::State& state) {
  const Eigen::Index m = state.range(0), k = state.range(1), n = state.range(2);
  Rng rng(kSeed);
  const Eigen::MatrixXf a = random_matrix(m, k, rng);
  const Eigen::MatrixXf b = random_matrix(k, n, rng);
  Eigen::MatrixXf c(m, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(eigen_sgemm)
    ->ArgNames({"m", "k", "n"})
    ->Args({kHidden, kFeatures, 1})
    ->Args({kHidden, kFeatures, 32})
    ->Args({kHidden, kFeatures, 128})
    ->Args({512, 512, 512});

}  // namespace

int main(int argc, char** argv) {
  // As every run does (DESIGN.md section 2, rule 3): GEMM blocking from pinned cache sizes.
  stalesim::pin_eigen_cache_sizes();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
