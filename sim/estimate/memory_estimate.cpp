#include "sim/estimate/memory_estimate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

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
      "indices {}; {:.0f} parameters x 4 bytes)",
      format_bytes(total()), format_bytes(process_bytes), format_bytes(dataset_bytes),
      format_bytes(snapshot_bytes), format_bytes(worker_bytes), format_bytes(server_bytes),
      format_bytes(gradient_bytes), parameters);
}

MemoryEstimate estimate_memory(const Scenario& s) { return estimate_memory(s, plan_run(s)); }

MemoryEstimate estimate_memory(const Scenario& s, const RunPlan& plan) {
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
  // Deferred: the server's current version and the one a grant is reading.
  e.snapshot_bytes = (deferred ? 2 : cached ? 2 * n + 1 : n + 1) * vec;

  // Pull mode computes a push's gradient into the server's scratch when it is applied, from the
  // parameters the worker holds (counted in the snapshots); the cache modes and VAP compute it when
  // the compute ends and keep it until it is applied.
  double per_worker = cached ? 1 : 0;
  if (cached) per_worker += 1 + static_cast<double>(s.policy.staleness) + 1;
  per_worker += policy.worker_vectors + rule.worker_vectors;
  e.worker_bytes =
      n * (per_worker * vec + (deferred ? plan.deferred_floats * kFloat + s.optimizer.batch_size * 4.0 : 0) +
           kPerWorkerBookkeeping);

  double server = 1;  // the update buffer
  server += policy.server_vectors;
  if (s.optimizer.momentum > 0) server += 1;
  server += rule.server_vectors + rule.server_vectors_per_worker * n;
  e.server_bytes = server * vec;

  e.gradient_bytes = vec + (math ? train * 4.0 : 0.0);
  e.process_bytes = kProcessBytes;
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

std::optional<MemoryLimit> memory_limit() {
  if (const char* env = std::getenv("STALESIM_MEMORY_LIMIT"); env != nullptr && *env != '\0') {
    const auto v = parse_size(env);
    if (!v)
      throw ScenarioError(
          fmt::format("STALESIM_MEMORY_LIMIT='{}': expected a size in bytes, optionally with a K, M, G or T "
                      "suffix (e.g. 512M, 8G)",
                      env));
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

std::string memory_shortfall(const Scenario& s, const MemoryLimit& limit) {
  const MemoryEstimate e = estimate_memory(s);
  if (e.total() <= limit.bytes) return "";
  return fmt::format("needs about {}, but only {} is available ({})", e.describe(), format_bytes(limit.bytes),
                     limit.source);
}

void check_memory(const Scenario& s, const std::string& origin, const std::optional<MemoryLimit>& limit) {
  if (!limit) return;
  const std::string shortfall = memory_shortfall(s, *limit);
  if (shortfall.empty()) return;
  throw ScenarioError(fmt::format("{}: {}; {}", origin, shortfall, kMemoryAdvice));
}

}  // namespace stalesim
