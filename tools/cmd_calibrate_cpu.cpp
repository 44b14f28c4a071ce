// `stalesim calibrate --cpu` (tools/cmd_calibrate_cpu.hpp).

#include "tools/cmd_calibrate_cpu.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "models/cost_arch.hpp"
#include "models/device_profile.hpp"
#include "sim/build_info.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/param_store.hpp"
#include "sim/real/link_probe.hpp"
#include "sim/rules/server_optimizer.hpp"
#include "sim/simulation.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "sim/text.hpp"
#include "sim/worker/assemble.hpp"
#include "tools/cli.hpp"
#include "tools/cpu_quota.hpp"
#include "tools/kernel_net.hpp"

namespace stalesim::cli {

namespace fs = std::filesystem;

namespace {

using WallClock = std::chrono::steady_clock;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double significant6(double x) { return std::stod(fmt::format("{:.6g}", x)); }

std::string host_name() {
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  std::string out = "cpu-";
  for (char c : std::string(host))
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
  return out == "cpu-" ? "cpu-local" : out;
}

struct GradientTiming {
  double at_batch_s = 0, at_one_s = 0;  // means
  double at_batch_log_sd = 0;           // the standard deviation of ln(seconds) at the batch size
  double apply_ns_per_parameter = 0;    // the server's apply of one push, per parameter (mean)
  int64_t parameters = 0;               // the model's
  double flops_per_sample = 0;          // what a simulation of the scenario times
  std::string flops_from;
};

// What the calibration computes on: the run's data, model, initial parameters and worker 0's
// batches, built as the run builds them (sim/worker/assemble.hpp), without a run. Throws
// ScenarioError when the batch is larger than worker 0's samples, DataError when the data cannot
// be read.
struct GradientInputs {
  explicit GradientInputs(const Scenario& s)
      : data(load_data(s)),
        model(build_model(s, data)),
        params(static_cast<size_t>(model->parameter_count())) {
    init_parameters(s, *model, params);
    std::vector<std::vector<int32_t>> shards = worker_shards(s, data);
    sampler = worker_sampler(s, data, shards, 0);
  }
  GradientInputs(const GradientInputs&) = delete;  // the model may hold on to `data`
  GradientInputs& operator=(const GradientInputs&) = delete;

  const DataSplit data;
  const std::unique_ptr<Model> model;
  std::vector<float> params;
  std::unique_ptr<BatchSampler> sampler;
};

// Mean wall-clock seconds of the scenario's real gradient at its batch size and at batch 1, on
// worker 0's shard, one thread (as a real run's ranks compute), while `concurrent - 1` other
// threads compute gradients at the scenario's batch size on their own copies of the model: a real
// run's worker ranks compute at once and share the cores, the caches and the memory bus, and the
// calibration times what one of them pays then.
GradientTiming time_gradients(const Scenario& s, GradientInputs& in, int32_t repeats, int32_t warmup,
                              int32_t concurrent, double idle_us) {
  const DataSplit& data = in.data;
  Model* const model = in.model.get();
  BatchSampler* const sampler = in.sampler.get();
  const std::span<const float> params = in.params;
  std::vector<float> grad(params.size());
  std::atomic<bool> done{false};
  std::vector<std::jthread> others;  // joined after `stop` (declared later) has told them to end
  struct Stop {                      // the other threads end with this function, also when it throws
    std::atomic<bool>& done;
    ~Stop() { done.store(true); }
  } stop{done};
  if (concurrent > 1) {
    std::vector<std::vector<int32_t>> batches;  // what the other threads cycle through
    for (int i = 0; i < 8; ++i) {
      const auto b = sampler->next(s.optimizer.batch_size);
      batches.emplace_back(b.begin(), b.end());
    }
    for (int32_t k = 1; k < concurrent; ++k) {
      std::unique_ptr<Model> m = model->clone();
      if (!m)
        throw ScenarioError(fmt::format(
            "calibrate --cpu --concurrent {}: model \"{}\" has no copy for other threads; use --concurrent 1",
            concurrent, to_string(s.model.type)));
      others.emplace_back([&, batches, m = std::move(m)] {
        std::vector<float> g(params.size());
        for (size_t i = 0; !done.load(std::memory_order_relaxed); ++i)
          m->loss_and_gradient(params, data.train, batches[i % batches.size()], g);
      });
    }
  }
  // The timing thread alone joins the --cpu-quota group (the other threads, started before, stay
  // out): it then computes as the limited worker's rank will, beside an unlimited one.
  join_cpu_group(0, /*thread_only=*/true);
  const auto measure = [&](int32_t n, double* log_sd) {
    std::vector<double> t;
    for (int32_t i = 0; i < warmup + repeats; ++i) {
      const auto batch = sampler->next(n);
      const auto start = WallClock::now();
      model->loss_and_gradient(params, data.train, batch, grad);
      if (i >= warmup) t.push_back(std::chrono::duration<double>(WallClock::now() - start).count());
      // The run's communication and waits between two gradients (--idle-us): a CPU quota's budget
      // per period is then spent as in the run.
      if (idle_us > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(std::llround(idle_us * 1e3)));
    }
    // The spread, as the simulation's lognormal jitter (cluster.jitter.sigma) draws it: the
    // standard deviation of the logs (in order, one sum: the same figure on every machine).
    if (log_sd) {
      std::vector<double> logs(t.size());
      std::transform(t.begin(), t.end(), logs.begin(), [](double x) { return std::log(x); });
      const double m = std::accumulate(logs.begin(), logs.end(), 0.0) / static_cast<double>(logs.size());
      double sq = 0;
      for (double l : logs) sq += (l - m) * (l - m);
      *log_sd = std::sqrt(sq / static_cast<double>(logs.size()));
    }
    // The mean, not the median: a run's iteration times average over everything a gradient pays
    // (a CPU quota's throttled slices, the other ranks' turns), and so does this.
    return std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
  };
  GradientTiming g;
  g.at_batch_s = measure(s.optimizer.batch_size, &g.at_batch_log_sd);
  g.at_one_s = measure(1, nullptr);
  // The server's apply of one push (ServerOptimizer::add, the code the real run's server runs:
  // the scenario's rule, momentum and aggregate, a new version of the parameters) on a copy of
  // them, with the other threads still computing: per parameter, what
  // cluster.network.server_apply_ns_per_parameter charges.
  {
    const int64_t n = model->parameter_count();
    g.parameters = n;
    ServerOptimizer opt(s, s.cluster.worker_count(), n, /*math=*/true, model->update_kind());
    ParamStore store(n);
    std::copy(params.begin(), params.end(), store.write().begin());
    model->loss_and_gradient(params, data.train, sampler->next(s.optimizer.batch_size), grad);
    std::vector<double> t;
    for (int32_t i = 0; i < warmup + repeats; ++i) {
      const GradientInfo info{.worker = 0, .version_read = store.version(), .version_apply = store.version()};
      const auto start = WallClock::now();
      opt.add(store, grad, info, store.peek());
      if (i >= warmup) t.push_back(std::chrono::duration<double>(WallClock::now() - start).count());
    }
    g.apply_ns_per_parameter = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size()) *
                               1e9 / static_cast<double>(std::max<int64_t>(n, 1));
  }
  g.flops_per_sample = model->flops_per_sample();
  g.flops_from = "the model's own FLOPs per sample";
  if (const auto cost = find_cost_architecture(s.model.cost)) {
    g.flops_per_sample = cost->training_flops();
    g.flops_from =
        fmt::format("model.cost \"{}\"'s FLOPs per sample (the simulation times those)", s.model.cost);
  }
  return g;
}

// GB/s of memcpy over 64 MiB (read and write counted), the median of 9.
double memory_bandwidth_gbs() {
  const size_t bytes = 64u << 20;
  std::vector<char> a(bytes, 1), b(bytes, 0);
  std::vector<double> t;
  for (int i = 0; i < 9; ++i) {
    const auto start = WallClock::now();
    std::memcpy(b.data(), a.data(), bytes);
    t.push_back(std::chrono::duration<double>(WallClock::now() - start).count());
    a[static_cast<size_t>(i)] = b[static_cast<size_t>(i) + 1];  // keeps the copies observable
  }
  return 2.0 * static_cast<double>(bytes) / median_of(std::move(t)) / 1e9;
}

}  // namespace

bool calibrate_wrote(const fs::path& path) {
  std::string error;
  const auto j = read_json_file(path.string(), kMaxProfileBytes, error, /*follow_links=*/false);
  if (!j || !j->is_object()) return false;
  const auto source = j->find("source");
  if (source != j->end())
    return source->is_string() && source->get<std::string>().starts_with("Measured by stalesim calibrate");
  // jitter.json: a cluster.jitter block, {"type": "lognormal", "sigma": ...}; nothing else.
  if (j->size() == 2 && j->contains("sigma") && j->contains("type"))
    return (*j)["type"] == enum_name(JitterType::kLognormal) && (*j)["sigma"].is_number();
  // network.json: latency_us and bandwidth_gbps, and since the server's apply was modelled,
  // server_apply_ns_per_parameter; nothing else.
  const auto ours = [](const std::string& key) {
    return key == "latency_us" || key == "bandwidth_gbps" || key == "server_apply_ns_per_parameter";
  };
  return j->contains("latency_us") && j->contains("bandwidth_gbps") &&
         std::all_of(j->items().begin(), j->items().end(), [&](const auto& kv) { return ours(kv.key()); });
}

void check_calibrate_output(const fs::path& file, bool replace, const std::string& how) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (st.type() == fs::file_type::not_found) return;
  const std::string name = escaped(file.string());
  if (st.type() == fs::file_type::symlink)
    throw IoError(
        fmt::format("{}: is a symbolic link; calibrate never writes through one, so nothing was "
                    "measured: remove it or choose another {}",
                    name, how));
  if (!replace) throw IoError(fmt::format("{}: exists; --force replaces it", name));
  if (!calibrate_wrote(file))
    throw IoError(
        fmt::format("{}: exists and is not a file calibrate wrote; nothing was measured: choose "
                    "another {}",
                    name, how));
}

void write_calibrate_output(const fs::path& file, const std::string& text, bool replace) {
  try {
    replace_file_checked(file, text, [replace](const fs::path& p) { return replace && calibrate_wrote(p); });
  } catch (const IoError& e) {
    if (std::string(e.what()).find("exists and is not ours") == std::string::npos) throw;
    throw IoError(fmt::format("{}: exists and is not a file calibrate wrote; nothing was written to it",
                              escaped(file.string())));
  }
}

int calibrate_cpu_main(CalibrateCpuCommand c) {
  // The folder and both files are checked before anything is measured; a link given as --out is
  // followed (as run --out does), a link inside it never is.
  const fs::path dir = resolve_output_path(c.out);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw IoError(
        fmt::format("{}: exists and is not a folder; --out names the folder of profile.json, "
                    "network.json and jitter.json",
                    escaped(c.out)));
  for (const char* f : {"profile.json", "network.json", "jitter.json"})
    check_calibrate_output(dir / f, c.force, "--out");
  const auto& model_traits = traits(c.scenario.model.type);
  if (!model_traits.has_math)
    throw ScenarioError(fmt::format("{}: /model/type: \"{}\" has no math: there is no gradient to time",
                                    c.origin, to_string(c.scenario.model.type)));
  if (c.scenario.compute.backend != Backend::kCpu)
    throw ScenarioError(fmt::format("{}: /compute/backend: \"{}\": calibrate --cpu times the CPU backend",
                                    c.origin, enum_name(c.scenario.compute.backend)));
  if (!mpi_built())
    throw ScenarioError(
        "calibrate --cpu needs MPI for its network probe, and this stalesim was built without it");
  if (mpi_launch_size() == 0) {
    std::vector<CpuQuota> quotas;
    if (c.cpu_quota)
      quotas.push_back(CpuQuota{.worker = 0, .rank = 0, .share = *c.cpu_quota, .group = "", .made = false});
    return launch_on_machine(2, "calibrate", c.args, c.quiet, "; nothing was written",
                             {quotas, c.kernel_net ? &c.scenario : nullptr, true});
  }
  MpiSession mpi;
  if (mpi.size() != 2)
    throw ScenarioError(fmt::format("calibrate --cpu runs on 2 MPI ranks; mpirun started {}", mpi.size()));
  GradientTiming g;
  double mem_gbs = 0;
  // Rank 0 builds what it times; a scenario that cannot run there (a batch larger than worker 0's
  // samples) ends both ranks with exit 2 (prepare_on_rank0) before rank 1 waits in the probe.
  std::optional<GradientInputs> inputs;
  const auto build = [&] { inputs.emplace(c.scenario); };
  const auto report = [&](const std::exception& e) {
    fmt::print(stderr, "stalesim: {}: {}\n", c.origin, e.what());
  };
  try {
    if (!prepare_on_rank0(&mpi, build, report)) return kExitBadInput;
    if (mpi.rank() == 0) {  // rank 1 waits (with sleeps) in the probe meanwhile
      g = time_gradients(c.scenario, *inputs, c.repeats, c.warmup, c.concurrent, c.idle_us);
      mem_gbs = memory_bandwidth_gbs();
    }
  } catch (const std::exception& e) {  // rank 0's: rank 1 would wait for it for ever, so both end
    report(e);
    std::fflush(stderr);
    mpi.abort(kExitFailed);
    throw;
  }
  LinkProbeOptions po;
  po.repeats = c.repeats;
  po.warmup = c.warmup;
  const auto link = probe_mpi_link(po);
  if (mpi.rank() != 0) return 0;

  // The simulation's time per iteration: batch x FLOPs / (peak x efficiency) + overhead. Fitted
  // through batch 1 and the scenario's batch B, with efficiency 1 (peak is what this machine
  // sustains on this model): the profile reproduces the mean at B.
  const int32_t B = c.scenario.optimizer.batch_size;
  const double f = g.flops_per_sample;
  double per_sample = B > 1 ? (g.at_batch_s - g.at_one_s) / (B - 1) : g.at_batch_s;
  double overhead = g.at_one_s - per_sample;
  if (!(per_sample > 0) || overhead < 0) {  // no measurable slope or offset: all of it per sample
    overhead = 0;
    per_sample = g.at_batch_s / B;
  }
  const double peak_tflops = f / per_sample / 1e12;
  const std::string name = c.name.empty() ? host_name() : c.name;
  const auto us = [](double s) { return fmt::format("{:.4g}", s * 1e6); };
  DeviceProfile p;
  p.name = name;
  p.description = fmt::format(
      "this machine's CPU, one thread of {} computing at once{}{}, for scenario \"{}\"'s {} (measured)",
      c.concurrent, c.cpu_quota ? fmt::format(", held to {:g} of a core", *c.cpu_quota) : "",
      c.idle_us > 0 ? fmt::format(", idle {:g} us between gradients", c.idle_us) : "", c.scenario.name,
      to_string(c.scenario.model.type));
  p.peak_fp32_tflops = significant6(peak_tflops);
  p.memory_bandwidth_gbs = significant6(mem_gbs);
  p.efficiency = 1.0;
  p.overhead_us = significant6(overhead * 1e6);
  p.source = fmt::format(
      "Measured by stalesim calibrate --cpu (stalesim {}, {}): wall-clock means of loss_and_gradient of "
      "scenario \"{}\"'s model on one thread over {} gradients after {} untimed, while {} other threads "
      "computed "
      "gradients at batch {}: batch {} {} us, batch 1 {} us. FLOPs per sample {:.6g} ({}). overhead_us = "
      "batch-1 mean - one sample's time; "
      "peak_fp32_tflops = FLOPs per sample / one sample's time ((batch-{} mean - batch-1 mean) / {}), "
      "with efficiency 1, so that a simulation of the scenario reproduces the batch-{} mean. "
      "memory_bandwidth_gbs: memcpy of 64 MiB, read and write counted. Valid for this model on this "
      "machine; other models are extrapolated.",
      build_info().version, build_info().git_revision, c.scenario.name, c.repeats, c.warmup, c.concurrent - 1,
      B, B, us(g.at_batch_s), us(g.at_one_s), f, g.flops_from, B, B - 1, B);
  if (const auto problem = profile_problem(p))
    throw ScenarioError(
        fmt::format("calibrate --cpu: the measured profile is not valid: {}", problem->what()));
  const double gbps = link->bandwidth_bytes_s * 8 / 1e9;
  if (!(gbps > 0))
    throw ScenarioError(fmt::format(
        "calibrate --cpu: the {}-byte round trips ({} us) were not slower than the 8-byte ones ({} us): no "
        "bandwidth to fit; the machine is too loaded, or rerun with more --repeats",
        po.large_bytes, us(link->large_round_trip_s), us(link->small_round_trip_s)));
  const nlohmann::ordered_json network = {
      {"latency_us", significant6(link->latency_s * 1e6)},
      {"bandwidth_gbps", significant6(gbps)},
      {"server_apply_ns_per_parameter", significant6(g.apply_ns_per_parameter)}};
  fs::create_directories(dir, ec);
  if (ec) throw IoError(fmt::format("{}: cannot create the folder: {}", escaped(c.out), ec.message()));
  write_calibrate_output(dir / "profile.json", profile_to_json(p).dump(2) + "\n", c.force);
  write_calibrate_output(dir / "network.json", network.dump(2) + "\n", c.force);
  // The gradients' spread at the batch size, as a cluster.jitter block (lognormal, mean 1).
  const nlohmann::ordered_json jitter = {{"type", enum_name(JitterType::kLognormal)},
                                         {"sigma", significant6(g.at_batch_log_sd)}};
  write_calibrate_output(dir / "jitter.json", jitter.dump(2) + "\n", c.force);
  fmt::print(
      "calibrate --cpu: {} gradient (batch {}, {} at once): mean {} us, batch 1 {} us -> profile \"{}\" "
      "({:.6g} "
      "TFLOP/s sustained, overhead {} us); spread: log standard deviation {:.3g}; MPI link: latency {} us "
      "(8-byte round trip median {} us, p90 {}), "
      "bandwidth {:.4g} Gbit/s ({} MiB round trip median {} us); server apply {:.4g} ns per parameter ({} a "
      "push); wrote {}/profile.json, network.json and jitter.json\n",
      to_string(c.scenario.model.type), B, c.concurrent, us(g.at_batch_s), us(g.at_one_s), escaped(name),
      peak_tflops, us(overhead), g.at_batch_log_sd, us(link->latency_s), us(link->small_round_trip_s),
      us(link->small_p90_s), gbps, po.large_bytes >> 20, us(link->large_round_trip_s),
      g.apply_ns_per_parameter,
      us(g.apply_ns_per_parameter * 1e-9 * static_cast<double>(g.parameters)) + " us", escaped(c.out));
  return 0;
}

}  // namespace stalesim::cli
