#include "sim/estimate/memory_estimate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sim/estimate/estimate.hpp"        // estimate_run: the pace the cache modes' pushes keep
#include "sim/scenario/topology_kinds.hpp"  // a topology kind's bytes

#include <limits>

namespace stalesim {
namespace {

constexpr double kFloat = 4.0;
constexpr double kPerWorkerBookkeeping = 4096.0;
// The process itself (the binary, its libraries, the allocator's arenas): the peak RSS of the golden
// tiny run is 8.1 MiB on the reference machine (x86-64, glibc; /usr/bin/time -f %M).
constexpr double kProcessBytes = 8.0 * 1024 * 1024;

}  // namespace

std::string format_bytes(double b) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.3g} {}", b, kUnits[u]);
}

std::string MemoryEstimate::describe() const {
  return fmt::format(
      "{} (process {}, dataset {}, parameter snapshots {}, workers' state {}, server state {}, gradients and "
      "indices {}, model scratch {}{}; {:.0f} parameters x 4 bytes)",
      format_bytes(total()), format_bytes(process_bytes), format_bytes(dataset_bytes),
      format_bytes(snapshot_bytes), format_bytes(worker_bytes), format_bytes(server_bytes),
      format_bytes(gradient_bytes), format_bytes(scratch_bytes),
      topology_bytes > 0 ? ", topology " + format_bytes(topology_bytes) : std::string(), parameters);
}

namespace {

// What the cache modes' pace allows, from estimate_run's figures:
// - computed: the pushes the workers compute before the run's last update is applied
//   (stop.max_updates; infinite without): free-running workers (a lazy cache whose bound does not
//   hold them) compute one push per compute time C_g and queue it on their own link, the server
//   link carries 1 / S_push, and the run ends when U pushes have arrived, by which time the
//   workers have computed U x (their rate) / (the delivery rate), plus each worker's in transit;
// - eager_own: ESSP's own pushes, all workers: the server sends every worker a fresh copy each
//   time its clock rises, so a worker's copy lacks only its pushes in transit
//   (1 + ceil(transit / C_g)), and in a group faster than the slowest the staleness bound it runs
//   ahead by; at most staleness + 1 each;
// - eager_versions: ESSP's versions held at once: the copies of the clock rises in transit.
struct CachePace {
  double computed = std::numeric_limits<double>::infinity();
  double eager_own = 0, eager_versions = 1;
};
CachePace cache_pace(const Scenario& s, const RunEstimate& pace) {
  CachePace c;
  const double push_share =
      pace.push_bytes + pace.pull_bytes > 0 ? pace.push_bytes / (pace.push_bytes + pace.pull_bytes) : 0.5;
  const double staleness = static_cast<double>(s.policy.clock_bound().value_or(0));  // the cache's bound
  double slowest = 0;
  for (const auto& g : pace.groups) slowest = std::max(slowest, g.compute_s + g.worker_link_s);
  double computed = 0, delivered = 0, in_transit = 0, server_push_s = 0;
  for (const auto& g : pace.groups) {
    const double compute = std::max(g.compute_s, 1e-12);
    const double wire = pace.transfers_timed ? push_share * g.worker_link_s : 0.0;
    const double server = pace.transfers_timed ? push_share * g.server_link_s : 0.0;
    const double transit = 1.0 + std::ceil((wire + server) / compute);
    computed += g.count / compute;
    delivered += g.count / std::max(compute, wire);
    in_transit += g.count * transit;
    server_push_s = std::max(server_push_s, server);
    const double ahead = g.compute_s + g.worker_link_s < slowest * 0.999 ? staleness : 0.0;
    c.eager_own += g.count * std::min(staleness + 1, transit + ahead);
    c.eager_versions = std::max(c.eager_versions, transit + 1 + ahead);
  }
  if (server_push_s > 0) delivered = std::min(delivered, 1.0 / server_push_s);
  if (s.stop.max_updates && !pace.groups.empty())
    c.computed = static_cast<double>(*s.stop.max_updates) * computed / delivered + in_transit;
  return c;
}

}  // namespace

MemoryEstimate estimate_memory(const Scenario& s, int threads) {
  const RunPlan plan = plan_run(s);
  return estimate_memory(s, plan, estimate_run(s, plan), threads);
}

MemoryEstimate estimate_memory(const Scenario& s, const RunPlan& plan, const RunEstimate& pace, int threads) {
  MemoryEstimate e;
  const double n = s.cluster.worker_count();
  // The loaded samples (Fashion-MNIST: all of them, since data.train_samples truncates after
  // loading) as float32 plus an int32 label, and the raw bytes held while files are decoded.
  const auto& data = traits(s.data.dataset);
  const double train = data.train_rows(s.data), test = data.test_rows(s.data);
  const double features = data.stored_features(s.data);
  e.dataset_bytes += (train + test) * data.raw_bytes_per_sample;
  e.dataset_bytes += (train + test) * (features * kFloat + 4.0);
  const bool math = traits(s.model.type).has_math;
  // The model's size from the one account of it (models/model.hpp model_size), as the run builds it.
  const ModelSize& size = plan.size;
  const double p = math ? size.parameters : 0.0;
  e.dataset_bytes += math ? size.state_bytes : 0.0;  // lda: per-token and per-document state
  e.parameters = p;
  const double vec = p * kFloat;

  const bool cached = s.policy.caches_params();
  const auto& policy = traits(s.policy.type);
  const auto& rule = traits(s.optimizer.rule);
  const bool deferred = plan.defers_gradients;
  e.deferred_gradients = deferred;
  // Every version is an update's: no more versions than stop.max_updates + 1 can be alive.
  const double updates = s.stop.max_updates ? static_cast<double>(*s.stop.max_updates) : n * n + 2 * n;
  // The cache modes' bound: the policy's own number (SyncPolicy::clock_bound).
  const double staleness = cached ? static_cast<double>(s.policy.clock_bound().value_or(0)) : 0.0;
  double own = 0, versions = 0;
  if (cached) {
    // The cache modes (sim/worker/cache.cpp): each worker holds its cached version and a version
    // on its way (its inbox), a local copy (the cache plus its own updates), and its own pushes
    // that the version it holds does not include yet, each a gradient: at most staleness + 1 per
    // worker (beyond, it waits for a fresher copy), and all workers together no more than the
    // pushes the run computes before it stops (cache_pace). A lazy worker fetches a copy only
    // when its bound stops it, every staleness + 1 pushes at most; ESSP's copies follow the
    // server's clock, to all workers at once, and lack only what is in transit.
    const CachePace c = cache_pace(s, pace);
    const bool eager = s.policy.cache_mode() == CacheMode::kEager;
    own = std::min({n * (staleness + 1), c.computed, eager ? c.eager_own : n * (staleness + 1)});
    const double fetched =
        eager ? c.eager_versions : std::ceil(std::min(c.computed, n * updates) / (staleness + 1));
    versions = std::min({2 * n, updates, fetched});
  } else {
    // Each worker's read version; all-reduce's workers all read the version their iteration began
    // at (sim/worker/allreduce.cpp), one for all.
    versions = deferred || s.policy.all_reduce() ? 1 : std::min(n, updates);
  }
  // And the server's current version (deferred: and the one a grant is reading).
  e.snapshot_bytes = (versions + 1) * vec;

  // Pull mode computes a push's gradient into the server's scratch when it is applied, from the
  // parameters the worker holds (counted in the snapshots); VAP computes it when the compute ends
  // and keeps it until it is applied.
  double per_worker = cached ? 1 : 0;  // the local copy
  per_worker += policy.worker_vectors + rule.worker_vectors;
  e.worker_bytes =
      n * (per_worker * vec + (deferred ? plan.deferred_floats * kFloat + s.optimizer.batch_size * 4.0 : 0) +
           kPerWorkerBookkeeping) +
      own * vec;

  double server = 1;  // the update buffer
  server += policy.server_vectors;
  if (s.optimizer.momentum > 0 || s.optimizer.momentum_step == MomentumStep::kPerClock)
    server += 1;                                                          // velocity
  if (s.optimizer.momentum_step == MomentumStep::kPerClock) server += 2;  // the clock's sum and start
  // DC-ASGD's backups per worker (server_vectors_per_worker) are the versions the workers hold,
  // counted in the snapshots, not copies.
  server += rule.server_vectors;
  e.server_bytes = server * vec;

  e.gradient_bytes = vec + (math ? train * 4.0 : 0.0);
  // The gradient pool (sim/gradient_pool.hpp; pull modes on the CPU with simulated times, more
  // than one thread): up to 4 gradients per thread computed ahead, but one per worker at most
  // (WorkerCore::start_task: a worker has one task out at a time, and the tasks' gradients are
  // reused), two evaluations' parameter copies, and a model instance per thread. A task pins the
  // version its worker read, which the worker holds anyway (counted in the snapshots), except
  // where workers defer their gradients and let their versions go: then the pins keep one each,
  // or one for all in lock step (they all read one version). Before, 4 pinned versions per thread
  // were counted whatever the mode, and the 4 gradients per thread beyond the workers: a 256 x 256
  // cnn on 4 workers at 2 threads was estimated at 1.05 GiB for a 618 MiB peak (issue 46).
  const bool pooled = math && threads > 1 && s.policy.pulls_every_clock() && !rule.gates_transfers &&
                      s.compute.timing != Timing::kMeasured && s.compute.backend == Backend::kCpu;
  const double instances = pooled ? threads : 1;
  if (pooled) {
    const double tasks = std::min(4.0 * threads, n);
    const double pinned = deferred && !plan.lockstep ? tasks : 0.0;
    e.gradient_bytes += (tasks + pinned + 2) * vec;
  }
  e.scratch_bytes =
      math ? instances * model_scratch_bytes(s.model, plan.shape, static_cast<double>(s.optimizer.batch_size),
                                             s.eval.test_samples > 0
                                                 ? std::min(test, static_cast<double>(s.eval.test_samples))
                                                 : test)
           : 0;
  e.process_bytes = kProcessBytes;
  if (const auto bytes = topology_kind(s.cluster.network.topology).memory_bytes) e.topology_bytes = bytes(s);
  return e;
}

std::optional<double> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!std::isfinite(v) || v < 0 || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  std::string suffix = text.substr(used);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b') && suffix.size() <= 3)
    suffix.pop_back();
  if (suffix.size() == 2 && (suffix[1] == 'i')) suffix.pop_back();  // "GiB" -> "G"
  if (suffix.empty()) return v;
  if (suffix.size() != 1) return std::nullopt;
  const std::string units = "KMGT";
  const size_t u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0]))));
  if (u == std::string::npos) return std::nullopt;
  return v * std::pow(1024.0, static_cast<double>(u + 1));
}

std::optional<MemoryLimit> memory_limit(const std::string& configured) {
  if (!configured.empty()) {
    const auto v = parse_size(configured);
    if (!v)
      throw ScenarioError(
          fmt::format("STALESIM_MEMORY_LIMIT='{}': expected a size in bytes, optionally with a K, M, G or T "
                      "suffix (e.g. 512M, 8G)",
                      configured));
    return MemoryLimit{*v, "STALESIM_MEMORY_LIMIT"};
  }
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream in(line.substr(13));
    double kib = 0;
    std::string unit;
    if (in >> kib >> unit && unit == "kB") return MemoryLimit{kib * 1024.0, "MemAvailable in /proc/meminfo"};
  }
  return std::nullopt;
}

std::string memory_shortfall(const Scenario& s, const MemoryLimit& limit, int threads) {
  const MemoryEstimate e = estimate_memory(s, threads);
  if (e.total() <= limit.bytes) return "";
  return fmt::format("needs about {}, but only {} is available ({})", e.describe(), format_bytes(limit.bytes),
                     limit.source);
}

void check_memory(const Scenario& s, const std::string& origin, const std::optional<MemoryLimit>& limit,
                  int threads) {
  if (!limit) return;
  const std::string shortfall = memory_shortfall(s, *limit, threads);
  if (shortfall.empty()) return;
  throw ScenarioError(fmt::format("{}: {}; {}", origin, shortfall, kMemoryAdvice));
}

}  // namespace stalesim
