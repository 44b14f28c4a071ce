// Benchmarks of issue 21 (use every core and stay bit-exact), in one run:
//   threads      the quick start and an 8-worker ASP MLP scenario at --threads 1 and 2: best wall
//                time of `--reps` alternating runs each, the speed-up, and whether the outputs'
//                result hashes match; beside them the rate at which one core reads a version the
//                other has just written (handoff_rates), which decides the 2-thread overhead here
//   parallelism  the available parallelism (RunResult::gradients_in_flight: gradients begun and
//                not yet applied, per applied gradient), the share f of the 1-thread run spent in
//                gradients (updates x the time of one gradient, timed alone / the run's CPU
//                time), the share e in test-set evaluations (metrics rows x the time of one,
//                likewise), and the projected speed-up at T threads,
//                1 / ((1 - p) + p / min(T, A)) with p = f + e, the evaluations being computed in
//                the background on the pool (sim/evaluation.hpp; p = f where the run waits for
//                them: stop.at_target) (Amdahl's law with the parallel part capped by the
//                gradients in flight)
//   cnn          the CNN's gradient rate (GFLOP/s from Model::flops_per_sample) at batch 32 and
//                128 against the SGEMM rate of an Eigen float32 GEMM measured in the same run
//                (both per CPU second of the calling thread)
//   events       per-event cost of time-only ASP at 1,000, 10,000 and 100,000 workers (CPU time
//                of the whole run, construction included, per event run; then the event loop
//                alone per event, and the construction per worker)
// The machine may be shared: the load average is printed; ratios within one run are the figures.
// Usage: stalesim_bench_threads [--reps N] [--quick] [--only threads|cnn|events]

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "base/rng.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/build_info.hpp"
#include "sim/output/outputs.hpp"
#include "sim/scenario/load.hpp"
#include "sim/simulation.hpp"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace stalesim;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a.empty() ? "unknown" : fmt::format("{} {} {}", a, b, c);
}

double process_cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timed {
  double wall = 1e300;  // best of the repetitions
  double cpu = 0;       // the process's CPU seconds in that run (every thread)
  double main_cpu = 0;  // the calling thread's CPU seconds in that run
  RunResult result;
  std::string hash;
};

Timed run_once(const Scenario& s, const DataSplit& data, int threads) {
  const auto t0 = Clock::now();
  const double c0 = process_cpu(), m0 = thread_cpu();
  Timed t;
  {
    Simulation sim(s, data);
    RunOptions ro;
    ro.threads = threads;
    t.result = sim.run(ro);
  }
  t.wall = since(t0);
  t.cpu = process_cpu() - c0;
  t.main_cpu = thread_cpu() - m0;
  t.hash = render_outputs(s, t.result).result_hash;
  return t;
}

// CPU seconds of one gradient of `s`'s model on a batch of its batch size, best of `reps` x 20 calls.
// CPU seconds of one test-set evaluation of `s` (its eval.test_samples), best of `reps`.
double evaluation_seconds(const Scenario& s, const DataSplit& data, int reps) {
  auto model = make_model(s.model, data.train.features, data.train.classes);
  std::vector<float> params(static_cast<size_t>(model->parameter_count()));
  Rng rng(1, Purpose::kInit, 0);
  model->init(params, rng);
  const int64_t m =
      s.eval.test_samples > 0 ? std::min(s.eval.test_samples, data.test.size()) : data.test.size();
  std::vector<int32_t> indices(static_cast<size_t>(m));
  std::iota(indices.begin(), indices.end(), 0);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double t0 = thread_cpu();
    model->evaluate(params, data.test, indices);
    best = std::min(best, thread_cpu() - t0);
  }
  return best;
}

double gradient_seconds(const Scenario& s, const DataSplit& data, int reps) {
  auto model = make_model(s.model, data.train.features, data.train.classes);
  std::vector<float> params(static_cast<size_t>(model->parameter_count())), grad(params.size());
  Rng rng(1, Purpose::kInit, 0);
  model->init(params, rng);
  std::vector<int32_t> batch(static_cast<size_t>(s.optimizer.batch_size));
  std::iota(batch.begin(), batch.end(), 0);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {  // CPU time of this thread: the run's f is against CPU seconds too
    const double t0 = thread_cpu();
    for (int i = 0; i < 20; ++i) model->loss_and_gradient(params, data.train, batch, grad);
    best = std::min(best, (thread_cpu() - t0) / 20);
  }
  return best;
}

// The machine's cost of handing a parameter version from one core to the other: GB/s of reading
// `floats` values that the other thread has just written, against reading what this thread has
// just written, median over `rounds` handoffs. At --threads 2 every gradient a pool thread computes
// reads the version the event loop's thread wrote and writes a gradient that thread then reads:
// two such handoffs per update, 636 KB each in the quick start. On a virtual machine the rate
// depends on where the host runs the two virtual CPUs (one shared cache or not), and it can
// change between runs of the same binary minutes apart.
constexpr size_t kVersionFloats = 159'010;  // the quick start's MLP 784-200-10: 636 KB

struct Handoff {
  double cross = 0, same = 0;  // GB/s
};

Handoff handoff_rates(size_t floats, int rounds) {
  std::vector<float> buf(floats);
  std::atomic<int> turn{0};
  auto read_gbs = [&](float& sink) {
    const auto t0 = Clock::now();
    sink += Eigen::Map<const Eigen::VectorXf>(buf.data(), static_cast<Eigen::Index>(floats)).sum();
    return static_cast<double>(floats * sizeof(float)) / since(t0) / 1e9;
  };
  std::thread other([&] {
    for (int r = 0; r < rounds; ++r) {
      while (turn.load(std::memory_order_acquire) != 2 * r + 1) std::this_thread::yield();
      for (size_t i = 0; i < floats; ++i) buf[i] = static_cast<float>(r) + static_cast<float>(i & 1023);
      turn.store(2 * r + 2, std::memory_order_release);
    }
  });
  std::vector<double> cross, same;
  float sink = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < floats; ++i) buf[i] = static_cast<float>(r) - static_cast<float>(i & 1023);
    same.push_back(read_gbs(sink));
    turn.store(2 * r + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * r + 2) std::this_thread::yield();
    cross.push_back(read_gbs(sink));
  }
  other.join();
  if (sink == 12345.0f) std::puts("");  // keep the reads
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(cross), median(same)};
}

void print_handoff(const char* when, size_t floats) {
  const Handoff h = handoff_rates(floats, 200);
  fmt::print(
      "  handoff {}: reading {:.0f} KB the other core just wrote {:.1f} GB/s, what this core wrote "
      "{:.1f} GB/s ({:.2f}x)\n",
      when, static_cast<double>(floats * sizeof(float)) / 1e3, h.cross, h.same, h.same / h.cross);
}

void section_threads(const std::vector<std::pair<std::string, Scenario>>& cases, const DataSplit& data,
                     int reps) {
  fmt::print("\n=== threads: wall time at --threads 1 and 2 (best of {}), outputs compared ===\n", reps);
  print_handoff("before", kVersionFloats);
  fmt::print("{:<34} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10} {:>8} {:>12}\n", "scenario", "updates", "1 thr s",
             "2 thr s", "speed-up", "pooled", "in flight", "f", "same hash");
  for (const auto& [name, s] : cases) {
    Timed one, two;
    std::string per_rep;  // each 2-thread run's wall time beside the handoff rate just before it
    for (int r = 0; r < reps; ++r) {
      Timed a = run_once(s, data, 1);
      if (a.wall < one.wall) one = std::move(a);
      const double handoff = handoff_rates(kVersionFloats, 50).cross;
      Timed b = run_once(s, data, 2);
      per_rep += fmt::format("{}{:.3f} s after {:.0f} GB/s", r ? "; " : "", b.wall, handoff);
      if (b.wall < two.wall) two = std::move(b);
    }
    const double g = gradient_seconds(s, data, reps);
    // Against the run's CPU seconds, not its wall time, which a shared machine stretches.
    const double f = std::min(1.0, static_cast<double>(one.result.server_updates) * g / one.cpu);
    const double ev = evaluation_seconds(s, data, reps);
    const double e = std::min(1.0 - f, static_cast<double>(one.result.metrics.size()) * ev / one.cpu);
    const bool background = !(s.stop.at_target && s.stop.target_accuracy);
    fmt::print("{:<34} {:>9} {:>9.3f} {:>9.3f} {:>7.2f}x {:>10} {:>10.2f} {:>8.2f} {:>12}\n", name,
               one.result.server_updates, one.wall, two.wall, one.wall / two.wall,
               two.result.pooled_gradients, one.result.gradients_in_flight, f,
               one.hash == two.hash ? "yes" : "NO");
    // On a shared machine the wall speed-up shows the load as much as the code; the CPU seconds
    // show the pool's overhead (2-thread total against 1-thread total) and the work left on the
    // event loop's thread, which bounds the speed-up on two idle cores.
    fmt::print(
        "  CPU s: 1 thread {:.3f}; 2 threads {:.3f} in all ({:+.1f}% overhead), {:.3f} on the event loop's "
        "thread; on 2 idle cores at best {:.2f}x\n",
        one.cpu, two.cpu, 100 * (two.cpu / one.cpu - 1), two.main_cpu,
        one.cpu / std::max(two.main_cpu, two.cpu / 2));
    fmt::print("  test-set evaluations: {} rows x {:.1f} ms = e = {:.2f} of the 1-thread CPU time ({})\n",
               one.result.metrics.size(), ev * 1e3, e,
               background ? "in the background at 2 threads" : "waited for: stop.at_target");
    fmt::print("  2-thread runs and the handoff rate measured just before each: {}\n", per_rep);
    const double a = one.result.gradients_in_flight;
    const double par = background ? f + e : f;
    std::string proj;
    for (int t : {2, 4, 8, 16}) {
      const double p = 1.0 / ((1.0 - par) + par / std::min(static_cast<double>(t), a));
      proj += fmt::format("  T={}: {:.2f}x", t, p);
    }
    fmt::print("  projected speed-up (A = {:.2f} gradients in flight, parallel share {:.2f}):{}\n", a, par,
               proj);
  }
  print_handoff("after", kVersionFloats);
}

double sgemm_gflops(Eigen::Index m, Eigen::Index k, Eigen::Index n, int reps) {
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(m, k), b = Eigen::MatrixXf::Random(k, n), c(m, n);
  double best = 1e300;
  const int inner = std::max<int>(1, static_cast<int>(2e8 / (2.0 * static_cast<double>(m * k * n))));
  for (int r = 0; r < reps; ++r) {  // CPU time of this thread, as the CNN's below
    const double t0 = thread_cpu();
    for (int i = 0; i < inner; ++i) c.noalias() = a * b;
    best = std::min(best, (thread_cpu() - t0) / inner);
  }
  if (c(0, 0) == 12345.0f) std::puts("");  // keep c
  return 2.0 * static_cast<double>(m * k * n) / best / 1e9;
}

void section_cnn(const DataSplit& data, int reps) {
  // Thread CPU time for both: on a shared machine wall time counts the other processes' slices.
  fmt::print("\n=== cnn: gradient rate against SGEMM (single thread, CPU time, best of {}) ===\n", reps);
  // SGEMM at the shape of the MLP's first layer (200 x 784 times 784 x 128) and of the CNN's conv2
  // im2col GEMM at batch 32 (16 x 150 times 150 x 32 x 100).
  const double mlp_shape = sgemm_gflops(200, 784, 128, reps);
  const double conv2_shape = sgemm_gflops(16, 150, 3200, reps);
  const double square = sgemm_gflops(512, 512, 512, reps);
  fmt::print("SGEMM 200x784x128: {:.1f} GFLOP/s; 16x150x3200 (conv2 at batch 32): {:.1f}; 512^3: {:.1f}\n",
             mlp_shape, conv2_shape, square);
  ModelSpec spec;
  spec.type = ModelType::kCnn;
  auto model = make_model(spec, data.train.features, data.train.classes);
  std::vector<float> params(static_cast<size_t>(model->parameter_count())), grad(params.size());
  Rng rng(1, Purpose::kInit, 0);
  model->init(params, rng);
  for (int batch : {32, 128}) {
    std::vector<int32_t> idx(static_cast<size_t>(batch));
    std::iota(idx.begin(), idx.end(), 0);
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
      const double t0 = thread_cpu();
      for (int i = 0; i < 10; ++i) model->loss_and_gradient(params, data.train, idx, grad);
      best = std::min(best, (thread_cpu() - t0) / 10);
    }
    const double gflops = model->flops_per_sample() * batch / best / 1e9;
    fmt::print(
        "CNN gradient at batch {}: {:.2f} ms, {:.1f} GFLOP/s = {:.0f}% of SGEMM 200x784x128, {:.0f}% "
        "of 512^3\n",
        batch, best * 1e3, gflops, 100 * gflops / mlp_shape, 100 * gflops / square);
  }
}

void section_events(int64_t updates, int reps) {
  fmt::print(
      "\n=== events: time-only ASP, {} updates; CPU ns per event (best of {}): the whole run with the "
      "workers' construction, the event loop alone, and the construction per worker ===\n",
      updates, reps);
  double base = 0, base_loop = 0;
  for (int32_t workers : {1'000, 10'000, 100'000}) {
    json j = json::parse(R"({
      "name": "events", "seed": 1,
      "model": { "type": "time-only", "parameters": 10000, "flops_per_sample": 200000000 },
      "optimizer": { "batch_size": 32 },
      "policy": { "type": "asp" },
      "cluster": { "workers": [ { "profile": "gtx1060", "count": 1 } ],
                   "network": { "latency_us": 20, "bandwidth_gbps": 25 } },
      "eval": { "every_s": 1000 } })");
    j["cluster"]["workers"][0]["count"] = workers;
    j["stop"]["max_updates"] = updates;
    const Scenario s = parse_scenario(j, "bench.json", "bench");
    const DataSplit none;
    double best = 1e300, best_loop = 1e300, best_setup = 1e300;
    uint64_t events = 0;
    for (int r = 0; r < reps; ++r) {  // CPU time of this thread: wall time counts other processes
      const double t0 = thread_cpu();
      Simulation sim(s, none);
      const double t1 = thread_cpu();
      const RunResult res = sim.run();
      const double t2 = thread_cpu();
      best = std::min(best, t2 - t0);
      best_loop = std::min(best_loop, t2 - t1);
      best_setup = std::min(best_setup, t1 - t0);
      events = res.events;
    }
    const double ns = best * 1e9 / static_cast<double>(events);
    const double loop = best_loop * 1e9 / static_cast<double>(events);
    if (workers == 1'000) base = ns, base_loop = loop;
    fmt::print(
        "{:>7} workers: {:>10} events, {:.1f} ns/event ({:.2f}x the 1,000-worker cost); event loop {:.1f} "
        "ns/event ({:.2f}x); construction {:.2f} us/worker\n",
        workers, events, ns, ns / base, loop, loop / base_loop, best_setup * 1e6 / workers);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 3;
  bool quick = false;
  std::string only;  // empty: every section
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc &&
               (std::strcmp(argv[i + 1], "threads") == 0 || std::strcmp(argv[i + 1], "cnn") == 0 ||
                std::strcmp(argv[i + 1], "events") == 0)) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: stalesim_bench_threads [--reps N] [--quick] [--only threads|cnn|events]\n");
      return 2;
    }
  }
  pin_eigen_cache_sizes();
  const std::string root = STALESIM_SOURCE_DIR;
  fmt::print("stalesim_bench_threads: {} cores, load average at start {}\n",
             std::thread::hardware_concurrency(), load_average());
  const auto t0 = Clock::now();
  try {
    const Scenario quickstart = load_scenario_file(root + "/scenarios/quickstart.json");
    const DataSplit data = load_data(quickstart);
    json mlp8 = json::parse(R"({
      "name": "mlp8-asp", "seed": 1,
      "data": { "dataset": "fashion-mnist" },
      "model": { "type": "mlp", "hidden": [200] },
      "optimizer": { "rule": "sgd", "lr": 0.05, "batch_size": 64 },
      "policy": { "type": "asp" },
      "cluster": { "workers": [ { "profile": "gtx1080ti", "count": 8 } ],
                   "network": { "latency_us": 50, "bandwidth_gbps": 10 } },
      "stop": { "max_updates": 3000 },
      "eval": { "every_s": 1000, "test_samples": 1000 } })");
    json qs = json::parse(std::ifstream(root + "/scenarios/quickstart.json"));
    if (quick) {
      qs["stop"]["virtual_time_s"] = 2;
      mlp8["stop"]["max_updates"] = 300;
    }
    std::vector<std::pair<std::string, Scenario>> cases;
    cases.emplace_back(quick ? "quickstart (2 virtual s)" : "quickstart",
                       parse_scenario(qs, "quickstart.json", "quickstart"));
    cases.emplace_back("mlp 784-200-10, 8 workers ASP, b=64", parse_scenario(mlp8, "mlp8.json", "mlp8"));
    if (only.empty() || only == "threads") section_threads(cases, data, reps);
    if (only.empty() || only == "cnn") section_cnn(data, reps);
    if (only.empty() || only == "events") section_events(quick ? 100'000 : 1'000'000, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stalesim_bench_threads: %s\n", e.what());
    return 1;
  }
  fmt::print("\ntook {:.0f} s; load average at the end {}\n", since(t0), load_average());
  return 0;
}
