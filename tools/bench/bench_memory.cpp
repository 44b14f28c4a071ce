// Memory: the peak RSS of a many-worker ASP MLP run on Fashion-MNIST, in a child process, against
// the inherent bound, with deferred gradients and without (tools/bench/bench_runs.cpp).

#include "tools/bench/bench.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "models/model.hpp"
#include "sim/build_info.hpp"
#include "sim/scenario/load.hpp"

namespace stalesim::bench {

namespace {

// VmHWM (peak resident set) or VmRSS of this process, bytes.
int64_t proc_status_bytes(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream in(line.substr(std::string(key).size()));
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  throw std::runtime_error(std::string("/proc/self/status has no ") + key);
}

// Runs this binary again with --child-memory and reads its JSON line: the child's peak RSS is the
// run's alone, not this process's (which has run other sections).
json run_child_memory(const Options& opt, bool defer) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args = {"/proc/self/exe",   "--child-memory",
                                   "--memory-workers", std::to_string(opt.memory_workers),
                                   "--memory-updates", std::to_string(opt.memory_updates)};
  if (opt.quick) args.push_back("--quick");
  if (!defer) args.push_back("--no-defer");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(fmt::format("memory child failed (status {}): {}", status, text));
  return json::parse(text);
}

}  // namespace

int child_memory(const Options& opt) {
  pin_eigen_cache_sizes();
  const int64_t baseline = proc_status_bytes("VmHWM:");
  const json data_doc = {{"dataset", "fashion-mnist"}};
  // The batch: 32, or the worker's whole shard when a shard is smaller (60,000 samples over 10,000
  // workers leave 6 each, and the simulator refuses a batch larger than a shard).
  json doc = {
      {"name", "bench-memory"},
      {"seed", 1},
      {"data", data_doc},
      {"model", {{"type", "mlp"}, {"hidden", {200}}}},
      {"optimizer", {{"lr", 0.05}, {"batch_size", 32}}},
      {"policy", {{"type", "asp"}}},
      {"cluster", cluster_json(opt.memory_workers)},
      {"stop", {{"max_updates", opt.scaled(opt.memory_updates)}}},
      {"eval", {{"every_s", 10}}},
  };
  Scenario sc = parse_scenario(doc, "bench", "bench-memory");
  const DataSplit data = load_data(sc);
  const int64_t after_load = proc_status_bytes("VmHWM:");
  const int64_t shard = data.train.size() / opt.memory_workers;
  if (shard < 1) throw std::runtime_error("memory case: fewer training samples than workers");
  doc["optimizer"]["batch_size"] = std::min<int64_t>(32, shard);
  sc = parse_scenario(doc, "bench", "bench-memory");
  const Stopwatch sw;
  RunResult r;
  RunOptions run_options;
  run_options.defer_gradients = !opt.no_defer;
  {
    Simulation sim(sc, data);
    r = sim.run(run_options);
  }
  // What the workers' deferred gradients hold: batch indices and factors, per worker.
  const int64_t deferred_bytes =
      r.deferred_gradients
          ? opt.memory_workers * sc.optimizer.batch_size *
                (4 + 4 * make_model(sc.model, data.train.features, data.train.classes)->deferred_floats(1))
          : 0;
  const double wall = sw.wall(), cpu = sw.cpu();
  const int64_t dataset_bytes =
      static_cast<int64_t>((data.train.x.size() + data.test.x.size()) * sizeof(float));
  const json out = {{"vmhwm_bytes", proc_status_bytes("VmHWM:")},
                    {"baseline_bytes", baseline},
                    {"after_load_bytes", after_load},
                    {"peak_live_versions", r.peak_live_versions},
                    {"deferred", r.deferred_gradients},
                    {"deferred_bytes", deferred_bytes},
                    {"parameters", static_cast<int64_t>(r.final_params.size())},
                    {"dataset_bytes", dataset_bytes},
                    {"updates", r.server_updates},
                    {"workers", opt.memory_workers},
                    {"batch", sc.optimizer.batch_size},
                    {"status", std::string(to_string(r.status))},
                    {"stop_reason", std::string(to_string(r.stop_reason))},
                    {"wall_s", wall},
                    {"cpu_s", cpu}};
  fmt::print("{}\n", out.dump());
  return 0;
}

void section_memory(const Options& opt, std::vector<SummaryRow>& summary) {
  note(fmt::format("memory: {}-worker ASP MLP run in a child process, with and without deferred gradients",
                   grouped(opt.memory_workers)));
  const json m = run_child_memory(opt, true), held = run_child_memory(opt, false);
  const auto peak = m["vmhwm_bytes"].get<int64_t>();
  const auto held_peak = held["vmhwm_bytes"].get<int64_t>();
  const auto versions = m["peak_live_versions"].get<int64_t>();
  const auto held_versions = held["peak_live_versions"].get<int64_t>();
  const auto params = m["parameters"].get<int64_t>();
  const auto dataset = m["dataset_bytes"].get<int64_t>();
  const auto deferred = m["deferred_bytes"].get<int64_t>();
  const int64_t bound = versions * params * 4 + deferred + dataset;
  const int64_t held_bound = held_versions * params * 4 + dataset;
  const double ratio = static_cast<double>(peak) / static_cast<double>(bound);
  const double mib = 1024.0 * 1024.0;
  const auto in_mib = [mib](int64_t bytes) {
    return fmt::format("{:.1f}", static_cast<double>(bytes) / mib);
  };
  fmt::print(
      "\n=== Memory: {}-worker ASP, MLP 784-200-10 on Fashion-MNIST, batch {}, {} updates ({}; deferred "
      "{:.1f} s "
      "CPU, {:.1f} s wall; held {:.1f} s CPU, {:.1f} s wall) ===\n",
      grouped(m["workers"].get<int64_t>()), m["batch"].get<int64_t>(), grouped(m["updates"].get<int64_t>()),
      m["stop_reason"].get<std::string>(), m["cpu_s"].get<double>(), m["wall_s"].get<double>(),
      held["cpu_s"].get<double>(), held["wall_s"].get<double>());
  if (m["batch"].get<int64_t>() != 32)
    fmt::print(
        "(batch {}: the simulator refuses a batch larger than a worker's shard, and {} training samples\n"
        "over {} workers leave {} each)\n",
        m["batch"].get<int64_t>(), grouped(60'000), grouped(m["workers"].get<int64_t>()),
        m["batch"].get<int64_t>());
  if (!m["deferred"].get<bool>())
    fmt::print("(the run did not defer its gradients: both columns hold versions)\n");
  const std::vector<std::vector<std::string>> rows = {
      {"peak RSS of the child (VmHWM)", in_mib(peak), in_mib(held_peak)},
      {"  peak RSS before loading data", in_mib(m["baseline_bytes"].get<int64_t>()),
       in_mib(held["baseline_bytes"].get<int64_t>())},
      {"  peak RSS after loading data", in_mib(m["after_load_bytes"].get<int64_t>()),
       in_mib(held["after_load_bytes"].get<int64_t>())},
      {fmt::format("peak live versions x {} parameters x 4 B ({} / {} versions)", grouped(params),
                   grouped(versions), grouped(held_versions)),
       in_mib(versions * params * 4), in_mib(held_versions * params * 4)},
      {"workers' deferred gradients (indices and factors)", in_mib(deferred), in_mib(0)},
      {"dataset (train + test features, float32)", in_mib(dataset), in_mib(dataset)},
      {"inherent bound (sum of the three above)", in_mib(bound), in_mib(held_bound)},
      {"peak RSS / bound", fmt::format("{:.3f}", ratio),
       fmt::format("{:.3f}", static_cast<double>(held_peak) / static_cast<double>(held_bound))},
  };
  print_table({"quantity", "deferred MiB", "held MiB"}, rows, {false, true, true});
  summary.push_back(
      target_row(fmt::format("{}-worker ASP MLP: peak RSS / inherent bound ({} peak live versions)",
                             grouped(m["workers"].get<int64_t>()), grouped(versions)),
                 ratio, fmt::format("{:.3f}", ratio), 1.3, "<= 1.3", false));
  summary.push_back({fmt::format("{}-worker ASP MLP: peak RSS, versions held / gradients deferred",
                                 grouped(m["workers"].get<int64_t>())),
                     fmt::format("{:.1f}x", static_cast<double>(held_peak) / static_cast<double>(peak)),
                     "(none)", "", Verdict::kInfo});
}

}  // namespace stalesim::bench
