#include "sim/outputs.hpp"

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <xxhash.h>

#include "models/cuda/cuda_model.hpp"
#include "sim/build_info.hpp"

namespace stalesim {

namespace fs = std::filesystem;

namespace {

std::string opt(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string(); }
nlohmann::json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string metrics_csv(const RunResult& r) {
  // The model's own metric (mf, lda) is a last column named after it; classifiers have none.
  const bool extra = !r.metric_name.empty();
  std::string out = "virtual_time_s,server_version,test_loss,test_accuracy,train_loss,mean_staleness,bytes";
  out += extra ? "," + r.metric_name + "\n" : "\n";
  for (const auto& m : r.metrics) {
    out += fmt::format("{},{},{},{},{},{},{}", m.time.seconds(), m.server_version, opt(m.test_loss),
                       opt(m.test_accuracy), opt(m.train_loss), opt(m.mean_staleness), m.bytes);
    out += extra ? "," + opt(m.metric) + "\n" : "\n";
  }
  return out;
}

std::string staleness_csv(const RunResult& r) {
  std::string out = "staleness,clock_gradients,step_gradients\n";
  const auto& c = r.clock_staleness.bins();
  const auto& s = r.step_staleness.bins();
  const size_t n = std::max(c.size(), s.size());
  for (size_t i = 0; i < n; ++i)
    out += fmt::format("{},{},{}\n", i, i < c.size() ? c[i] : 0, i < s.size() ? s[i] : 0);
  return out;
}

std::string result_hash(const RunResult& r, const std::string& metrics) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, r.final_params.data(), r.final_params.size() * sizeof(float));
  XXH3_128bits_update(st, metrics.data(), metrics.size());
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) throw IoError(fmt::format("{}: cannot write", p.string()));
}

nlohmann::json histogram_json(const Histogram& h) {
  return {{"mean", h.mean()}, {"p50", h.percentile(0.5)}, {"p99", h.percentile(0.99)}, {"max", h.max()}};
}

}  // namespace

nlohmann::json summary_json(const Scenario& s, const RunResult& r, const std::string& hash) {
  using nlohmann::json;
  json manifest = build_info_json();
  manifest["scenario"] = scenario_to_json(s);
  manifest["seed"] = s.seed;
  json files = json::array();
  for (const auto& f : r.data_files)
    files.push_back({{"path", f.path}, {"bytes", f.bytes}, {"xxh64", f.xxh64}});
  manifest["datasets"] = files;
  // compute.backend "cuda": the GPU that ran the math, and whether a rerun can match bit for bit.
  if (s.compute.backend == "cuda") manifest["compute"] = cuda_manifest(s.compute.timing == "measured");

  json workers = json::array();
  for (const auto& w : r.workers) {
    const double total = static_cast<double>(w.compute_ns + w.wait_ns + w.communicate_ns);
    workers.push_back({{"id", w.id},
                       {"profile", w.profile},
                       {"iterations", w.iterations},
                       {"compute_s", static_cast<double>(w.compute_ns) / 1e9},
                       {"wait_s", static_cast<double>(w.wait_ns) / 1e9},
                       {"communicate_s", static_cast<double>(w.communicate_ns) / 1e9},
                       {"wait_fraction", total > 0 ? static_cast<double>(w.wait_ns) / total : 0.0}});
  }
  const MetricsRow* last = r.metrics.empty() ? nullptr : &r.metrics.back();
  json j = {
      {"manifest", manifest},
      {"status", std::string(to_string(r.status))},
      {"stop_reason", r.stop_reason},
      {"detail", r.detail},
      {"result_hash", hash},
      {"virtual_time_s", r.end_time.seconds()},
      {"server_updates", r.server_updates},
      {"final",
       {{"test_accuracy", last ? opt_json(last->test_accuracy) : json(nullptr)},
        {"test_loss", last ? opt_json(last->test_loss) : json(nullptr)},
        {"train_loss", last ? opt_json(last->train_loss) : json(nullptr)}}},
      {"time_to_target_s", opt_json(r.time_to_target_s)},
      // Per applied gradient, the two staleness measures named for what they are (design.md
      // section 6): first the server updates it missed (tau = version at apply - version read,
      // what a delayed-SGD analysis calls the delay), then the clock gap of the read it was
      // computed from (worker clock - server clock at read, the quantity SSP bounds).
      {"staleness_per_gradient",
       {{"missed_updates", histogram_json(r.step_staleness)}, {"read_clock_gap", histogram_json(r.clock_staleness)}}},
      // The same means and maxima under their older names, read by sweeps and plots.
      {"staleness", {{"mean", r.clock_staleness.mean()}, {"max", r.clock_staleness.max()}}},
      {"step_staleness", {{"mean", r.step_staleness.mean()}, {"max", r.step_staleness.max()}}},
      {"max_clock_gap", r.max_clock_gap},
      {"bytes", {{"push", r.bytes_push}, {"pull", r.bytes_pull}}},
      {"messages",
       {{"push", r.messages_push},
        {"pull", r.messages_pull},
        {"skipped_fetch", r.skipped_fetch},
        {"skipped_push", r.skipped_push}}},
      {"peak_live_versions", r.peak_live_versions},
      {"events", r.events},
      {"workers", workers},
  };
  if (!r.metric_name.empty()) j["final"][r.metric_name] = last ? opt_json(last->metric) : json(nullptr);
  if (!r.policy_facts.is_null()) j["policy"] = r.policy_facts;
  if (r.status == RunStatus::kDiverged)
    j["divergence"] = {{"time_s", opt_json(r.diverged_at_s)},
                       {"worker", r.diverged_worker ? json(*r.diverged_worker) : json(nullptr)},
                       {"last_finite_loss", opt_json(r.last_finite_loss)}};
  return j;
}

OutputFiles render_outputs(const Scenario& s, const RunResult& r) {
  OutputFiles f;
  f.metrics_csv = metrics_csv(r);
  f.staleness_csv = staleness_csv(r);
  f.decisions_csv = r.decisions_csv;
  f.gradients_csv = r.gradients_csv;
  f.result_hash = result_hash(r, f.metrics_csv);
  f.summary_json = summary_json(s, r, f.result_hash).dump(2) + "\n";
  return f;
}

void write_outputs(const std::string& dir, const OutputFiles& files, bool done, bool force) {
  const fs::path target = fs::path(dir).lexically_normal();
  std::error_code ec;
  const bool exists = fs::exists(target, ec);
  if (exists && !fs::is_directory(target, ec))
    throw IoError(fmt::format("{}: output path exists and is not a folder", dir));
  if (exists && !fs::is_empty(target, ec) && !force)
    throw IoError(fmt::format("{}: output folder exists and is not empty (use --force to replace it)", dir));
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throw IoError(fmt::format("{}: cannot create folder: {}", parent.string(), ec.message()));

  const std::string tag = fmt::format(".{}.partial-{}", target.filename().string(), ::getpid());
  const fs::path tmp = parent / tag;
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) throw IoError(fmt::format("{}: cannot write here: {}", parent.string(), ec.message()));
  try {
    write_file(tmp / "summary.json", files.summary_json);
    write_file(tmp / "metrics.csv", files.metrics_csv);
    write_file(tmp / "staleness.csv", files.staleness_csv);
    if (!files.decisions_csv.empty()) write_file(tmp / "decisions.csv", files.decisions_csv);
    if (!files.gradients_csv.empty()) write_file(tmp / "gradients.csv", files.gradients_csv);
    if (!files.trace_json.empty()) write_file(tmp / "trace.json", files.trace_json);
    if (!files.explain_txt.empty()) write_file(tmp / "explain.txt", files.explain_txt);
    if (done) write_file(tmp / "done", files.result_hash + "\n");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (exists) {
    const fs::path old = parent / fmt::format(".{}.old-{}", target.filename().string(), ::getpid());
    fs::rename(target, old, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      throw IoError(fmt::format("{}: cannot replace: {}", dir, ec.message()));
    }
    fs::rename(tmp, target, ec);
    if (ec) {
      fs::rename(old, target);
      fs::remove_all(tmp);
      throw IoError(fmt::format("{}: cannot replace: {}", dir, ec.message()));
    }
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp, target, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      throw IoError(fmt::format("{}: cannot create: {}", dir, ec.message()));
    }
  }
}

void check_output_dir(const std::string& dir, bool force) {
  const fs::path target = fs::path(dir).lexically_normal();
  std::error_code ec;
  const bool exists = fs::exists(target, ec);
  if (exists && !fs::is_directory(target, ec))
    throw IoError(fmt::format("{}: output path exists and is not a folder", dir));
  if (exists && !fs::is_empty(target, ec) && !force)
    throw IoError(fmt::format("{}: output folder exists and is not empty (use --force to replace it)", dir));
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (fs::path p = parent; !p.empty(); p = p.parent_path()) {  // the nearest existing ancestor
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec))
        throw IoError(
            fmt::format("{}: cannot create the output folder: {} is not a folder", dir, p.string()));
      break;
    }
    if (p == p.parent_path()) break;
  }
  fs::create_directories(parent, ec);
  if (ec) throw IoError(fmt::format("{}: cannot create the output folder: {}", dir, ec.message()));
  const fs::path probe = parent / fmt::format(".{}.probe-{}", target.filename().string(), ::getpid());
  fs::create_directory(probe, ec);
  if (ec)
    throw IoError(fmt::format("{}: output folder not writable: {}: {}", dir, parent.string(), ec.message()));
  fs::remove(probe, ec);
}

}  // namespace stalesim
