#include "sim/analysis/reproduce.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <xxhash.h>

#include "base/file_read.hpp"
#include "sim/build_info.hpp"
#include "sim/output/names.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/output/trace.hpp"
#include "sim/run.hpp"
#include "sim/scenario/load.hpp"
#include "sim/text.hpp"

namespace stalesim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& p) {
  std::string why;
  auto text = read_regular_file(p.string(), kMaxSummaryBytes, why);
  if (!text) throw IoError(fmt::format("{}: cannot read: {}", p.string(), why));
  return std::move(*text);
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string_view::npos ? text.npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string shorten(std::string_view s) {
  constexpr size_t kMax = 120;
  return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
}

std::string as_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The temporary folder of one reproduction, removed with it.
class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "stalesim-reproduce-XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw IoError(fmt::format("{}: cannot create a temporary folder", templ));
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

std::string describe(const FileDifference& d) {
  if (d.line == 0)
    return d.expected_missing ? fmt::format("{}: missing in the run folder (the rerun writes it)", d.file)
                              : fmt::format("{}: in the run folder, but the rerun does not write it", d.file);
  const auto side = [](bool missing, const std::string& s) {
    return missing ? std::string("end of file") : fmt::format("'{}'", shorten(s));
  };
  return fmt::format("{}: first difference at line {}{}: expected {}, got {}", d.file, d.line,
                     d.where.empty() ? "" : fmt::format(" ({})", d.where),
                     side(d.expected_missing, d.expected), side(d.got_missing, d.got));
}

std::optional<FileDifference> first_difference(std::string_view file, std::string_view expected,
                                               std::string_view got) {
  if (expected == got) return std::nullopt;
  // Lines without their newline; a final newline ends the last line rather than starting one.
  const auto lines = [](std::string_view text) {
    auto v = split(text, '\n');
    if (v.size() > 1 && v.back().empty()) v.pop_back();
    return v;
  };
  const auto e = lines(expected), g = lines(got);
  size_t i = 0;
  while (i < e.size() && i < g.size() && e[i] == g[i]) ++i;
  FileDifference d;
  d.file = std::string(file);
  if (i == e.size() && i == g.size()) {  // the same lines: only the final newline differs
    d.line = static_cast<int64_t>(i);
    d.where = "newline at end of file";
    d.expected = std::string(e.back()) + (expected.ends_with('\n') ? "\\n" : "");
    d.got = std::string(g.back()) + (got.ends_with('\n') ? "\\n" : "");
    return d;
  }
  d.line = static_cast<int64_t>(i + 1);
  d.expected_missing = i >= e.size();
  d.got_missing = i >= g.size();
  if (!d.expected_missing) d.expected = std::string(e[i]);
  if (!d.got_missing) d.got = std::string(g[i]);
  if (file.ends_with(".csv")) {
    if (i == 0) {
      d.where = "header";
    } else if (!d.expected_missing && !d.got_missing) {
      const auto header = split(e[0], ','), ec = split(e[i], ','), gc = split(g[i], ',');
      size_t c = 0;
      while (c < ec.size() && c < gc.size() && ec[c] == gc[c]) ++c;
      d.where = c < header.size() ? std::string(header[c]) : fmt::format("column {}", c + 1);
      d.expected = c < ec.size() ? std::string(ec[c]) : std::string();
      d.got = c < gc.size() ? std::string(gc[c]) : std::string();
    }
  } else if (file.ends_with(".json")) {
    d.expected = std::string(trim_left(d.expected));
    d.got = std::string(trim_left(d.got));
    const json je = json::parse(expected, nullptr, /*allow_exceptions=*/false);
    const json jg = json::parse(got, nullptr, /*allow_exceptions=*/false);
    if (!je.is_discarded() && !jg.is_discarded()) {
      const json patch = json::diff(je, jg);
      if (!patch.empty()) d.where = patch.front().value("path", "");
    }
  }
  return d;
}

std::vector<std::string> build_differences(const json& manifest) {
  std::vector<std::string> out;
  const json build = build_info_json();
  for (const auto& [key, now] : build.items()) {
    const json recorded = manifest.is_object() && manifest.contains(key) ? manifest[key] : json();
    if (recorded != now)
      out.push_back(
          fmt::format("{} {} vs {}", key, recorded.is_null() ? "absent" : as_text(recorded), as_text(now)));
  }
  return out;
}

std::vector<std::string> dataset_changes(const json& manifest) {
  std::vector<std::string> out;
  if (!manifest.is_object() || !manifest.contains("datasets") || !manifest["datasets"].is_array()) return out;
  const json& files = manifest["datasets"];
  for (size_t i = 0; i < files.size(); ++i) {
    const json& f = files[i];
    // Each entry checked before use: a forged manifest is bad input naming the entry.
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("bytes") ||
        !f["bytes"].is_number_integer() ||
        (!f["bytes"].is_number_unsigned() && f["bytes"].get<int64_t>() < 0) || !f.contains("xxh64") ||
        !f["xxh64"].is_string())
      throw IoError(
          fmt::format("/manifest/datasets/{}: expected {{\"path\": string, \"bytes\": integer >= 0, "
                      "\"xxh64\": string}}, got {}",
                      i, escaped(f.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 80))));
    const std::string path = f["path"].get<std::string>();
    const uint64_t bytes = f["bytes"].get<uint64_t>();
    const std::string xxh = f["xxh64"].get<std::string>();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {  // not a FIFO or a device: it would be read forever
      out.push_back(fmt::format("{}: {} (the run read {} bytes, xxh64 {})", path,
                                fs::exists(path, ec) ? "not a regular file" : "missing", bytes, xxh));
      continue;
    }
    std::string why;
    const auto text = read_regular_file(path, kMaxDataFileBytes, why);
    if (!text) {
      out.push_back(
          fmt::format("{}: cannot read: {} (the run read {} bytes, xxh64 {})", path, why, bytes, xxh));
      continue;
    }
    const uint64_t size = text->size();
    const std::string now =
        fmt::format("{:016x}", static_cast<uint64_t>(XXH64(text->data(), text->size(), 0)));
    if (now != xxh || size != bytes)
      out.push_back(fmt::format("{}: changed since the run (xxh64 {} vs {}, {} vs {} bytes)", path, xxh, now,
                                bytes, size));
  }
  return out;
}

Reproduction prepare_reproduction(const std::string& path) {
  Reproduction r;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) p /= "summary.json";
  r.summary_path = p.string();
  r.dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  std::string why;
  auto summary = parse_json_bounded(read_text(p), why);
  if (!summary) throw IoError(fmt::format("{}: {}", r.summary_path, why));
  r.summary = std::move(*summary);
  const json::json_pointer scenario_ptr("/manifest/scenario");
  if (!r.summary.is_object() || !r.summary.contains(scenario_ptr))
    throw IoError(fmt::format("{}: not a run's summary.json (it has no manifest.scenario)", r.summary_path));
  // A real run (stalesim real) measured wall-clock times on real processes: no rerun gives its
  // bytes again, so it is not compared byte for byte but said so.
  if (r.summary["manifest"].is_object() && r.summary["manifest"].contains("real"))
    throw IoError(
        fmt::format("{}: a real run (stalesim real): its times were measured, so it is not "
                    "bit-reproducible; compare it with a simulation or another real run of the "
                    "scenario: stalesim compare RUN_A RUN_B",
                    escaped(r.summary_path)));
  const json status = r.summary.value("status", json());
  if (status.is_string() && enum_from_name<RunStatus>(status.get<std::string>()) == RunStatus::kInterrupted)
    throw IoError(
        fmt::format("{}: the run was interrupted (status \"interrupted\", no done marker); only a "
                    "finished run can be reproduced",
                    r.summary_path));
  r.scenario = parse_scenario(r.summary[scenario_ptr], r.summary_path + ": manifest.scenario");
  r.build_differences = build_differences(r.summary["manifest"]);
  try {
    r.dataset_changes = dataset_changes(r.summary["manifest"]);
  } catch (const IoError& e) {
    throw IoError(fmt::format("{}: {}", escaped(r.summary_path), e.what()));
  }
  return r;
}

ReproduceResult reproduce(const Reproduction& r, const RunOptions& options) {
  ReproduceResult out;
  // The rerun writes its files exactly as a run writes them, into a temporary folder.
  const TempDir tmp;
  const fs::path run = tmp.path() / "run";
  RunRequest request;
  request.options = options;
  // A run made with --record gradients is rerun with it, so its gradients.csv is compared too.
  if (fs::exists(fs::path(r.dir) / "gradients.csv")) request.options.record_gradients = true;
  // Likewise --trace (with the window and limit recorded in trace.json) and --explain.
  if (fs::exists(fs::path(r.dir) / "trace.json"))
    request.trace = trace_options_of(read_text(fs::path(r.dir) / "trace.json"));
  request.explain = fs::exists(fs::path(r.dir) / "explain.txt");
  request.out = run.string();
  const RunOutcome outcome = execute_run(r.scenario, request);
  out.status = outcome.result.status;
  out.result_hash = outcome.files.result_hash;
  out.files = outcome.files;
  if (out.status == RunStatus::kInterrupted) return out;

  std::map<std::string, std::string, std::less<>> written;
  for (const auto& entry : fs::directory_iterator(run))
    if (entry.is_regular_file()) written[entry.path().filename().string()] = read_text(entry.path());

  if (!r.build_differences.empty() && written.contains("summary.json")) {
    json j = json::parse(written["summary.json"]);
    const json& recorded = r.summary["manifest"];
    const json build = build_info_json();
    for (const auto& [key, value] : build.items()) {
      if (recorded.contains(key))
        j["manifest"][key] = recorded[key];
      else
        j["manifest"].erase(key);
    }
    written["summary.json"] = j.dump(2) + "\n";
  }

  // The files the rerun wrote that the output table says reproduce compares, in the table's order.
  std::vector<std::string> order;
  for (const OutputRow& row : output_table())
    if (row.reproduce_compares && written.contains(row.name)) order.emplace_back(row.name);

  for (const auto& name : order) {
    out.compared.push_back(name);
    const fs::path recorded = fs::path(r.dir) / name;
    std::error_code ec;
    if (!fs::is_regular_file(recorded, ec)) {
      FileDifference d;
      d.file = name;
      d.expected_missing = true;
      out.differences.push_back(d);
      continue;
    }
    std::string text = read_text(recorded);
    // A folder written before the one-name rename (sim/output/names.hpp) is compared under the
    // current names: the rename changes no figure, so it is not a difference of results.
    std::string current = name == "summary.json" ? text : current_csv_names(name, text);
    if (name == "summary.json") {
      const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (has_old_summary_names(j)) current = current_summary_names(j).dump(2) + "\n";
    }
    if (current != text) out.renamed.push_back(name);
    if (auto d = first_difference(name, current, written[name])) out.differences.push_back(*d);
  }
  std::vector<std::string> extra;
  std::error_code ec;
  // What our plot scripts wrote into the folder (listed in its plots.list) is not the run's output.
  const std::vector<std::string> plots = recorded_plots(r.dir);
  for (const auto& entry : fs::directory_iterator(r.dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".csv" || ext == ".json") && !written.contains(name) &&
        std::find(plots.begin(), plots.end(), name) == plots.end())
      extra.push_back(name);
  }
  std::sort(extra.begin(), extra.end());
  for (const auto& name : extra) {
    FileDifference d;
    d.file = name;
    d.got_missing = true;
    out.differences.push_back(d);
  }
  return out;
}

}  // namespace stalesim
