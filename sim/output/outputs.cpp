#include "sim/output/outputs.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <xxhash.h>

#include "models/cuda/cuda_model.hpp"
#include "sim/build_info.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/scenario/to_json.hpp"

namespace stalesim {

namespace fs = std::filesystem;

namespace {

nlohmann::json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
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
  if (s.compute.backend == Backend::kCuda)
    manifest["compute"] = cuda_manifest(s.compute.timing == Timing::kMeasured);

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
      {"stop_reason", std::string(to_string(r.stop_reason))},
      {"detail", r.detail},
      {"result_hash", hash},
      {"virtual_time_s", r.end_time.seconds()},
      {"server_updates", r.server_updates},
      {"final",
       {{"test_accuracy", last ? opt_json(last->test_accuracy) : json(nullptr)},
        {"test_loss", last ? opt_json(last->test_loss) : json(nullptr)},
        {"train_loss", last ? opt_json(last->train_loss) : json(nullptr)}}},
      {"time_to_target_s", opt_json(r.time_to_target_s)},
      // Per applied gradient, the two staleness quantities under their one name each (DESIGN.md
      // section 6, sim/output/names.hpp): the server updates it missed (tau = version at apply -
      // version read, what a delayed-SGD analysis calls the delay), and the staleness of the read
      // it was computed from (worker clock - server clock at read, the quantity SSP bounds).
      {"missed_updates", histogram_json(r.missed_updates)},
      {"staleness", histogram_json(r.staleness)},
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

const std::string& OutputFiles::text(std::string_view name) const {
  static const std::string kNone;
  for (const auto& [file, text] : files)
    if (file == name) return text;
  return kNone;
}

void OutputFiles::set(std::string_view name, std::string text) {
  const OutputRow* row = find_output(name);
  if (!row)
    throw std::logic_error(fmt::format("no output file is named '{}' (sim/output/output_table.cpp)", name));
  for (auto& [file, t] : files)
    if (file == name) {
      t = std::move(text);
      return;
    }
  files.emplace_back(row->name, std::move(text));
}

OutputFiles render_outputs(const Scenario& s, const RunResult& r) {
  for (const auto& [name, text] : r.recorded)
    if (!find_output(name))
      throw std::logic_error(
          fmt::format("the run recorded '{}', which is no output file (sim/output/output_table.cpp)", name));
  OutputFiles f;
  const std::string metrics = metrics_csv(r);
  f.result_hash = result_hash(r, metrics);
  const RunOutput sources{s, r, metrics, f.result_hash};
  for (const OutputRow& row : output_table()) {
    if (!row.write) continue;
    std::string text = row.write(sources, row.name);
    if (row.when == Written::kWhenNotEmpty && text.empty()) continue;
    f.files.emplace_back(row.name, std::move(text));
  }
  return f;
}

namespace {

// Throws IoError unless `target` may receive a run: absent, empty, or with `force` a run folder
// outside the protected places. Nothing is changed.
void check_target(const std::string& dir, const fs::path& target, bool force, const OutputGuard& guard) {
  const FolderCheck c = inspect_folder(target);
  if (force && c.kind != FolderKind::kAbsent && c.kind != FolderKind::kEmpty)
    refuse_protected(dir, target, guard.protect, guard.home);  // the clearest reason first
  switch (c.kind) {
    case FolderKind::kAbsent:
    case FolderKind::kEmpty:
      return;
    case FolderKind::kRun:
      if (!force)
        throw IoError(
            fmt::format("{}: output folder exists and is not empty (use --force to replace it)", dir));
      refuse_protected(dir, target, guard.protect, guard.home);
      return;
    case FolderKind::kSweep:
      throw IoError(fmt::format(
          "{}: is a sweep folder; a run's --force replaces only a run folder (or an empty one); nothing was "
          "deleted",
          dir));
    case FolderKind::kReport:
      throw IoError(fmt::format(
          "{}: is a report folder (stalesim report); a run's --force replaces only a run folder (or an empty "
          "one); nothing was deleted",
          dir));
    case FolderKind::kOther:
      if (c.why == "exists and is not a folder")
        throw IoError(fmt::format("{}: output path exists and is not a folder", dir));
      if (!force)
        throw IoError(fmt::format(
            "{}: output folder exists and is not empty, and --force would not replace it either: it {}; "
            "choose another --out",
            dir, c.why));
      throw IoError(fmt::format(
          "{}: --force replaces only a stalesim run folder or an empty one, and this folder {}; nothing was "
          "deleted: choose another --out",
          dir, c.why));
  }
}

}  // namespace

void write_outputs(const std::string& dir, const OutputFiles& files, bool done, bool force,
                   const OutputGuard& guard) {
  const fs::path target = resolve_output_path(dir);
  const fs::path parent = target.parent_path();
  const std::string name = target.filename().string();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw IoError(fmt::format("{}: cannot create folder: {}", parent.string(), ec.message()));
  if (guard.clean_stale) clean_stale_temporaries(parent, name);
  check_target(dir, target, force, guard);
  // An existing empty folder is written in place: it is never swapped away (it may be the
  // working directory of the shell that runs us, or sit in a folder we cannot write).
  const bool in_place = inspect_folder(target).kind == FolderKind::kEmpty;
  if (in_place) clean_stale_temporaries(target, "");

  const fs::path temporary = create_temporary(in_place ? target : parent, "partial", in_place ? "." : name);
  const fs::path tmp = temporary / "run";
  if (::mkdir(tmp.c_str(), 0755) != 0) {
    const int err = errno;
    fs::remove_all(temporary, ec);
    throw IoError(fmt::format("{}: cannot write here: {}", parent.string(), std::strerror(err)));
  }
  const auto step = [&](std::string_view s) {
    if (guard.checkpoint) guard.checkpoint(s);
  };
  try {
    // In the table's order: summary.json first, the done marker (a finished run's) last.
    for (const OutputRow& row : output_table()) {
      const auto it = std::find_if(files.files.begin(), files.files.end(),
                                   [&](const auto& file) { return file.first == row.name; });
      const bool write = it != files.files.end() && (row.when != Written::kWhenFinished || done);
      if (write) write_text_file(tmp / row.name, it->second);
      if (write || row.when == Written::kWhenFinished) step(row.name);
    }
    if (in_place)
      install_in_place(temporary, target, guard.checkpoint);
    else
      install_folder(temporary, target, guard.checkpoint);
  } catch (...) {
    discard_temporary(temporary);  // an old run kept in it stays
    throw;
  }
}

void check_output_dir(const std::string& dir, bool force, const OutputGuard& guard) {
  const fs::path target = resolve_output_path(dir);
  const fs::path parent = target.parent_path();
  std::error_code ec;
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
  clean_stale_temporaries(parent, target.filename().string());
  check_target(dir, target, force, guard);
  // The folder the run's temporary will go in: an existing empty folder is written in place.
  const bool in_place = inspect_folder(target).kind == FolderKind::kEmpty;
  fs::path probe;
  try {
    probe =
        create_temporary(in_place ? target : parent, "probe", in_place ? "." : target.filename().string());
  } catch (const IoError& e) {
    const std::string what = e.what();
    const size_t at = what.rfind(": ");  // the OS reason
    throw IoError(fmt::format("{}: output folder not writable: {}: {}", dir,
                              (in_place ? target : parent).string(),
                              at == std::string::npos ? what : what.substr(at + 2)));
  }
  fs::remove_all(probe, ec);
}

bool holds_finished_run(const std::string& dir) {
  std::error_code ec;
  const fs::path target = resolve_output_path(dir);
  return inspect_folder(target).kind == FolderKind::kRun && fs::is_regular_file(target / "done", ec);
}

}  // namespace stalesim
