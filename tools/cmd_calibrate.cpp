// `stalesim calibrate`: time a model on this machine's GPU and write its device profile
// (models/cuda/cuda_model.hpp; CUDA builds).

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <numeric>
#include <span>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/enum_names.hpp"
#include "base/rng.hpp"
#include "models/cuda/cuda_model.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/build_info.hpp"
#include "sim/output/outputs.hpp"
#include "sim/text.hpp"
#include "tools/cli.hpp"
#include "tools/cmd_calibrate_cpu.hpp"
#include "tools/cpu_quota.hpp"
#include "tools/kernel_net.hpp"

namespace stalesim::cli {

namespace {

// Median, 10th and 90th percentiles, minimum and maximum of a sample.
struct Spread {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};
Spread spread_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto at = [&v](double q) {
    return v[static_cast<size_t>(std::llround(q * static_cast<double>(v.size() - 1)))];
  };
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), at(0.1), at(0.9), v.front(), v.back()};
}

// x to 4 significant digits, for a profile a person reads.
double significant(double x) { return std::stod(fmt::format("{:.4g}", x)); }

// "NVIDIA GeForce GTX 1080 Ti" -> "gtx1080ti", "NVIDIA H200" -> "h200": the built-in profiles' style.
std::string profile_name_for(const std::string& device) {
  std::string out;
  for (char c : device) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"nvidia", "geforce"})
    if (const size_t at = out.find(word); at != std::string::npos) out.erase(at, std::strlen(word));
  std::erase_if(out, [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); });
  return out.empty() ? "gpu" : out;
}

}  // namespace

// `calibrate --cpu SCENARIO`: the options here; the measurement in tools/cmd_calibrate_cpu.cpp.
int cmd_calibrate_cpu(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim calibrate --cpu SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("cpu", "time this machine's CPU and MPI transport")(
      "out", po::value<std::string>(),
      "folder for profile.json, network.json and jitter.json (default: RESULTS/calibrate-cpu, RESULTS: "
      "--results)")("name", po::value<std::string>(), "profile name (default: cpu-<host name>)")(
      "repeats", po::value<int32_t>()->default_value(200), "timed gradients and round trips per size")(
      "warmup", po::value<int32_t>()->default_value(20), "untimed ones before each measurement")(
      "concurrent", po::value<int32_t>(),
      "gradients computed at once while one is timed (default: the scenario's workers, at most the "
      "cores): a real run's worker ranks share the machine")(
      "cpu-quota", po::value<std::string>(),
      "SHARE: time the gradient held to SHARE of one core (a cgroup CPU quota on the timing thread; "
      "needs root), as `real --cpu-quota W=SHARE` holds worker W")(
      "idle-us", po::value<double>()->default_value(0),
      "IDLE: after each timed gradient the timing thread sleeps IDLE microseconds (untimed), the time "
      "the worker communicates and waits between its gradients in the run, so that a --cpu-quota's "
      "budget per period is spent as in the run (0: back to back)")(
      "net", po::value<std::string>()->default_value("none"),
      "none: the 2 ranks talk as MPI likes; kernel: over a link the Linux kernel makes and shapes at "
      "cluster.network.bandwidth_gbps (needs root; tools/real-net), as `real --net kernel` runs")(
      "force", "replace profile.json, network.json and jitter.json")("quiet", "no mpirun line on stderr")(
      "help,h", "show this help");
  add_results_option(o);
  po::positional_options_description pos;
  pos.add("scenario", 1);
  try {
    const auto p = parse(args, o, pos);
    if (p.help) {
      std::cout << o << R"TXT(
Measures, on this machine, what a `stalesim real --timing measured` run of the scenario pays, so
that a simulation can predict it: the mean wall-clock time of the scenario's real gradient (its
model, batch size and data, one thread, while --concurrent - 1 other threads compute gradients
too, as the run's other worker ranks do) at the batch size and at batch 1, written as a device
profile (profile.json: overhead_us and the sustained peak_fp32_tflops, efficiency 1, fitted so
that the profile reproduces the mean at the scenario's batch), and the MPI transport's latency
and bandwidth from a ping-pong between 2 ranks (network.json, a cluster.network block), and the
gradients' spread at the batch size (jitter.json, a cluster.jitter block: lognormal, sigma the
standard deviation of the logs of the timed gradients). Starts `mpirun -n 2` itself. Use them as
  --set cluster.workers.0.profile=DIR/profile.json --set "cluster.network=$(cat DIR/network.json)"
  --set "cluster.jitter=$(cat DIR/jitter.json)"
A scenario with model.cost is fitted to the cost architecture's FLOPs (what its simulation times).
Exit codes: 0 written, 2 bad input (or a build without MPI), 3 the MPI job failed, 130 interrupted.
)TXT";
      return kExitOk;
    }
    CalibrateCpuCommand c;
    c.scenario = load(p.vm);
    c.origin = p.vm["scenario"].as<std::string>();
    c.args = args;
    c.out = p.vm.count("out") ? p.vm["out"].as<std::string>() : default_output(p.vm, "calibrate-cpu");
    if (p.vm.count("name")) c.name = p.vm["name"].as<std::string>();
    c.repeats = p.vm["repeats"].as<int32_t>();
    c.warmup = p.vm["warmup"].as<int32_t>();
    if (c.repeats < 5 || c.repeats > 100000)
      throw UsageError(fmt::format("--repeats: expected 5 to 100000, got {}", c.repeats));
    if (c.warmup < 0 || c.warmup > 100000)
      throw UsageError(fmt::format("--warmup: expected 0 to 100000, got {}", c.warmup));
    const int32_t cores = std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
    c.concurrent = p.vm.count("concurrent") ? p.vm["concurrent"].as<int32_t>()
                                            : std::min(cores, std::max(1, c.scenario.cluster.worker_count()));
    if (c.concurrent < 1 || c.concurrent > 256)
      throw UsageError(fmt::format("--concurrent: expected 1 to 256, got {}", c.concurrent));

    c.idle_us = p.vm["idle-us"].as<double>();
    if (!(c.idle_us >= 0 && c.idle_us <= 1e6))
      throw UsageError(fmt::format("--idle-us: expected 0 to 1000000 (microseconds), got {}", c.idle_us));
    c.kernel_net = kernel_net_option(p.vm["net"].as<std::string>());
    if (p.vm.count("cpu-quota"))
      c.cpu_quota = parse_cpu_quota(p.vm["cpu-quota"].as<std::string>(), 1, /*with_worker=*/false).share;
    c.force = p.vm.count("force") > 0;
    c.quiet = p.vm.count("quiet") > 0;
    return calibrate_cpu_main(std::move(c));
  } catch (const std::exception&) {
    if (quiet_rank()) return kExitBadInput;  // rank 0 says it, once
    throw;
  }
}

int cmd_calibrate(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--cpu") != args.end()) return cmd_calibrate_cpu(args);
  po::options_description o("Usage: stalesim calibrate [options]\n\nOptions");
  o.add_options()("model", po::value<std::string>()->default_value("mlp"), "softmax or mlp")(
      "hidden", po::value<std::string>()->default_value("200"), "mlp hidden widths, e.g. 200 or 256,128")(
      "features", po::value<int64_t>()->default_value(784), "inputs per sample (784: Fashion-MNIST)")(
      "classes", po::value<int32_t>()->default_value(10), "classes")(
      "batch", po::value<int32_t>()->default_value(32), "samples per iteration, >= 2")(
      "warmup", po::value<int32_t>()->default_value(20), "untimed iterations before each measurement")(
      "repeats", po::value<int32_t>()->default_value(200), "timed iterations per batch size")(
      "out", po::value<std::string>(), "write the profile JSON to this file (default: stdout)")(
      "name", po::value<std::string>(), "profile name (default: from the GPU's name, e.g. h200)")(
      "help,h", "show this help");
  const auto p = parse(args, o, {});
  if (p.help) {
    std::cout << o << R"(
Times loss_and_gradient of the model on this machine's GPU (the cuda backend; CUDA events around
copying the parameters and batch in, forward, backward and copying the gradient out) and writes a
device profile in the format of models/profiles/*.json:
  peak_fp32_tflops      SMs x FP32 lanes per SM (by compute capability) x 2 FLOP x peak SM clock
  memory_bandwidth_gbs  2 x memory clock x bus width / 8
  overhead_us           the median time of a batch-1 iteration (launches, copies, latency)
  efficiency            (batch x FLOPs per sample / (median time at --batch - overhead)) / peak
so that the profile reproduces the median at --batch exactly (the batch-1 iteration's own sample
is counted as overhead). Each median is taken over --repeats iterations after --warmup untimed ones.
A scenario uses the file as it is: "profile": "FILE.json" (relative to the scenario file's folder).
`stalesim calibrate --cpu SCENARIO` times this machine's CPU and MPI transport instead (see
`stalesim calibrate --cpu --help`).
Exit codes: 0 written, 2 bad options or no CUDA device (or a build without CUDA).
)";
    return kExitOk;
  }
  const auto& vm = p.vm;
  ModelSpec spec;
  const std::string model_name = vm["model"].as<std::string>();
  const auto model_type = enum_from_name<ModelType>(model_name);
  if (!model_type || !traits(*model_type).dense)
    throw UsageError(fmt::format("--model: expected softmax or mlp, got '{}'", model_name));
  spec.type = *model_type;
  spec.hidden.clear();
  if (spec.type == ModelType::kMlp) {
    const std::string text = vm["hidden"].as<std::string>();
    for (size_t begin = 0; begin <= text.size();) {
      const size_t comma = std::min(text.find(',', begin), text.size());
      const std::string item = text.substr(begin, comma - begin);
      char* end = nullptr;
      const long long width = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || width < 1 || width > 65536)
        throw UsageError(
            fmt::format("--hidden: expected widths in [1, 65536] separated by commas, got '{}'", text));
      spec.hidden.push_back(width);
      begin = comma + 1;
    }
  }
  const int64_t features = vm["features"].as<int64_t>();
  const int32_t classes = vm["classes"].as<int32_t>();
  const int32_t batch = vm["batch"].as<int32_t>();
  const int32_t warmup = vm["warmup"].as<int32_t>();
  const int32_t repeats = vm["repeats"].as<int32_t>();
  if (features < 1 || features > 1'000'000)
    throw UsageError(fmt::format("--features: expected 1 to 1000000, got {}", features));
  if (classes < 2 || classes > 100'000)
    throw UsageError(fmt::format("--classes: expected 2 to 100000, got {}", classes));
  if (batch < 2 || batch > 65536)
    throw UsageError(fmt::format("--batch: expected 2 to 65536 (1 is the overhead probe), got {}", batch));
  if (warmup < 0) throw UsageError(fmt::format("--warmup: expected an integer >= 0, got {}", warmup));
  if (repeats < 1) throw UsageError(fmt::format("--repeats: expected an integer >= 1, got {}", repeats));
  // --out is checked before anything is measured: nothing there, or a profile calibrate wrote
  // (never a symbolic link, never another file); written with the same check again.
  if (vm.count("out")) check_calibrate_output(vm["out"].as<std::string>(), /*replace=*/true, "--out");

  const CudaDevice dev = require_cuda_device();  // DeviceError "no CUDA device: ..." -> exit 2
  auto model = make_model(spec, features, classes, /*cuda=*/true);
  BlobsSpec data_spec;  // the values do not matter for the time; the shapes do
  data_spec.classes = classes;
  data_spec.features = features;
  data_spec.train = 4 * static_cast<int64_t>(batch);
  data_spec.test = 1;
  const DataSplit data = make_blobs(data_spec, 1);
  std::vector<float> params(static_cast<size_t>(model->parameter_count())), grad(params.size());
  Rng rng(1, Purpose::kInit, 0);
  model->init(params, rng);
  std::vector<int32_t> indices(static_cast<size_t>(data_spec.train));
  std::iota(indices.begin(), indices.end(), 0);
  // GPU seconds of `repeats` iterations on batches of n (after `warmup` untimed ones).
  const auto measure = [&](int32_t n) {
    std::vector<double> t;
    for (int32_t i = 0; i < warmup + repeats; ++i) {
      const std::span<const int32_t> b(indices.data() + (i % 4) * n, static_cast<size_t>(n));
      model->loss_and_gradient(params, data.train, b, grad);
      if (i >= warmup) t.push_back(*model->last_measured_seconds());
    }
    return spread_of(std::move(t));
  };
  const Spread at_batch = measure(batch);
  const Spread at_one = measure(1);

  const double flops = model->flops_per_sample();
  const double compute_s = at_batch.median - at_one.median;
  double efficiency = compute_s > 0 ? batch * flops / compute_s / (dev.peak_fp32_tflops * 1e12) : 0.0;
  std::string caveat;
  if (!(efficiency > 0 && efficiency <= 1)) {
    caveat = fmt::format(
        " The batch-{} median was not above the batch-1 median by at least the time peak FLOP/s allows "
        "(fitted efficiency {:.3g}), so efficiency is set to 1: at this batch the iteration is "
        "overhead-bound.",
        batch, efficiency);
    fmt::print(stderr,
               "stalesim: warning: efficiency not measurable at --batch {} (fit gave {:.3g}); set to 1. "
               "A larger --batch gives a meaningful figure.\n",
               batch, efficiency);
    efficiency = 1.0;
  }
  const std::string name = vm.count("name") ? vm["name"].as<std::string>() : profile_name_for(dev.name);
  std::string shape = std::to_string(features);
  for (int64_t h : spec.hidden) shape += "-" + std::to_string(h);
  shape += "-" + std::to_string(classes);
  const auto us = [](double s) { return fmt::format("{:.1f}", s * 1e6); };
  const std::string source = fmt::format(
      "Measured by stalesim calibrate (stalesim {}, {}) on {}. Peak FP32 = {} SMs x {} FP32 lanes per SM "
      "(compute capability {}.{}{}) x 2 FLOP x {:.0f} MHz peak SM clock (cudaDevAttrClockRate); memory "
      "bandwidth = "
      "2 x memory clock x bus width / 8 (cudaDevAttrMemoryClockRate, memoryBusWidth). Iteration = "
      "loss_and_gradient of a {} {} on the cuda backend, timed with CUDA events (parameters and batch "
      "copied in, forward, backward, gradient copied out); medians over {} iterations after {} untimed: "
      "batch {} "
      "{} us (p10 {}, p90 {}), batch 1 {} us (p10 {}, p90 {}). overhead_us = the batch-1 median; efficiency "
      "= "
      "(batch x {:.0f} FLOP per sample / (batch-{} median - overhead)) / peak, so the profile reproduces the "
      "batch-{} median; other batch sizes and models are extrapolated.{}",
      build_info().version, build_info().git_revision, dev.describe(), dev.sm_count, dev.fp32_lanes_per_sm,
      dev.cc_major, dev.cc_minor, dev.lanes_known ? "" : ", not in stalesim's table: 128 assumed",
      dev.clock_mhz, shape, to_string(spec.type), repeats, warmup, batch, us(at_batch.median),
      us(at_batch.p10), us(at_batch.p90), us(at_one.median), us(at_one.p10), us(at_one.p90), flops, batch,
      batch, caveat);
  nlohmann::ordered_json profile = {
      {"name", name},
      {"description", fmt::format("{} (compute capability {}.{}, {} SMs, {:.0f} MHz)", dev.name, dev.cc_major,
                                  dev.cc_minor, dev.sm_count, dev.clock_mhz)},
      {"peak_fp32_tflops", significant(dev.peak_fp32_tflops)},
      {"memory_bandwidth_gbs", significant(dev.memory_bandwidth_gbs)},
      {"efficiency", significant(efficiency)},
      {"overhead_us", significant(at_one.median * 1e6)},
      {"source", source}};
  const std::string text = profile.dump(2) + "\n";
  const std::string summary = fmt::format(
      "calibrate: {} on {}: batch {} median {} us (p10 {}, p90 {}, min {}, max {}); batch 1 median {} us "
      "(p10 {}, p90 {}); peak {:.2f} TFLOP/s; efficiency {:.4g}, overhead {} us",
      shape, dev.describe(), batch, us(at_batch.median), us(at_batch.p10), us(at_batch.p90), us(at_batch.min),
      us(at_batch.max), us(at_one.median), us(at_one.p10), us(at_one.p90), dev.peak_fp32_tflops, efficiency,
      us(at_one.median));
  if (!vm.count("out")) {
    std::cout << text;
    fmt::print(stderr, "{}\n", summary);
    return kExitOk;
  }
  const std::string out = vm["out"].as<std::string>();
  write_calibrate_output(out, text, /*replace=*/true);
  fmt::print("{}; wrote {}\n", summary, escaped(out));
  return kExitOk;
}

}  // namespace stalesim::cli
