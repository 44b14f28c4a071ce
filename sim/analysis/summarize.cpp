#include "sim/analysis/summarize.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/analysis/csv_input.hpp"
#include "sim/analysis/seed_difference.hpp"
#include "sim/output/names.hpp"
#include "sim/output/outputs.hpp"
#include "sim/sweep/sweep_status.hpp"
#include "sim/text.hpp"

namespace stalesim {

namespace fs = std::filesystem;

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  for (auto& r : split_csv(text, "CSV text")) rows.push_back(std::move(r.cells));
  return rows;
}

std::string sweep_folder_problem(const std::filesystem::path& dir, const std::string& folder) {
  std::error_code ec;
  if (folder.empty() || folder.find('/') != std::string::npos || folder.find('\0') != std::string::npos ||
      folder.starts_with("."))
    return fmt::format(
        "folder '{}' is not a folder of this sweep (a row names a folder directly inside the "
        "sweep folder)",
        escaped(folder));
  const auto type = fs::symlink_status(dir / folder, ec).type();
  if (type != fs::file_type::directory)
    return fmt::format("folder '{}' is not a folder of this sweep ({})", escaped(folder),
                       type == fs::file_type::not_found ? "nothing there"
                       : type == fs::file_type::symlink ? "a symbolic link"
                                                        : "not a folder");
  return "";
}

namespace {

std::string read(const fs::path& p) {
  std::string error;
  const auto text = read_regular_file(p.string(), kMaxSummaryBytes, error);
  if (!text) throw IoError(fmt::format("{}: cannot read: {}", escaped(p.string()), error));
  return *text;
}

std::optional<double> number(const std::string& cell) {
  if (cell.empty()) return std::nullopt;
  size_t used = 0;
  try {
    const double v = std::stod(cell, &used);
    if (used == cell.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// Mean, sample standard deviation (n >= 2), minimum, maximum and count of the values, summed in
// the order given.
struct Stats {
  size_t n = 0;
  double mean = 0, std = 0, min = 0, max = 0;
};
Stats stats_of(const std::vector<double>& v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0.0;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}
// "mean,std,min,max" cells; std empty for one value, all empty for none.
std::string stat_cells(const Stats& s) {
  if (s.n == 0) return ",,,";
  return fmt::format("{},{},{},{}", s.mean, s.n > 1 ? fmt::format("{}", s.std) : std::string(), s.min, s.max);
}

// The result columns averaged per group (sweep.csv, sim/sweep/sweep.hpp kResultColumns).
constexpr const char* kMetrics[] = {"quality",          "final_test_accuracy", "final_test_loss",
                                    "time_to_target_s", "virtual_time_s",      "server_updates",
                                    "staleness_mean",   "staleness_max",       "missed_updates_mean",
                                    "bytes_push",       "bytes_pull",          "mean_wait_fraction"};

std::string short_number(const Stats& s) {
  if (s.n == 0) return "-";
  if (s.n == 1) return fmt::format("{:.4g}", s.mean);
  return fmt::format("{:.4g} ± {:.2g}", s.mean, s.std);
}

// A sweep folder's sweep.csv: its rows and the groups of points (rows that differ only in the
// seed and after it).
struct SweepRows {
  fs::path csv_path;
  std::vector<std::vector<std::string>> rows;
  size_t seed_col = 0, folder_col = 0, status_col = 0, metric_name_col = 0;
  // Groups in order of first appearance.
  std::vector<std::vector<std::string>> keys;
  std::vector<std::vector<size_t>> members;  // row indices

  std::map<std::string, size_t> columns;  // header name -> index

  size_t col(const std::string& name) const {
    const auto it = columns.find(name);
    if (it == columns.end())
      throw IoError(fmt::format("{}: no column '{}' (written by another stalesim version? rerun the sweep)",
                                csv_path.string(), name));
    return it->second;
  }
  // Whether row r has a result to summarize.
  bool ok(size_t r) const {
    const std::optional<SweepStatus> s = enum_from_name<SweepStatus>(rows[r][status_col]);
    return s && sweep_status_ok(*s) && !rows[r][folder_col].empty();
  }
};

// A group's time to target with its misses counted: the target (none when no point's scenario
// sets stop.target_accuracy), how many seeds with a result reached it, and the mean over all of
// them with each miss counted at its run's end (virtual_time_s): a lower bound of the true mean.
struct TargetCount {
  std::optional<double> target;
  size_t runs = 0, reached = 0;
  std::optional<double> censored_mean;
};

// stop.target_accuracy of the point's resolved scenario (its summary.json), none when unset.
std::optional<double> target_of(const fs::path& folder) {
  const fs::path p = folder / "summary.json";
  std::string error;  // the one bounded reader: nesting capped, duplicate keys refused
  const auto j = read_json_file(p.string(), kMaxSummaryBytes, error);
  if (!j) throw IoError(fmt::format("{}: {}", escaped(p.string()), error));
  const auto ptr = nlohmann::json::json_pointer("/manifest/scenario/stop/target_accuracy");
  if (!j->is_object() || !j->contains("manifest") || !(*j)["manifest"].is_object())
    throw IoError(fmt::format("{}: /manifest: missing: not a stalesim run's summary", escaped(p.string())));
  if (!j->contains(ptr) || j->at(ptr).is_null()) return std::nullopt;
  const auto& v = j->at(ptr);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 1)
    throw IoError(fmt::format(
        "{}: /manifest/scenario/stop/target_accuracy: expected a number in [0, 1], got {}",
        escaped(p.string()), escaped(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))));
  return v.get<double>();
}

SweepRows read_sweep_rows(const std::string& dir, const fs::path& root) {
  SweepRows t;
  t.csv_path = root / "sweep.csv";
  std::error_code ec;
  if (fs::symlink_status(t.csv_path, ec).type() == fs::file_type::not_found)  // else read() says why
    throw IoError(fmt::format(
        "{}: no sweep.csv: not a finished sweep folder (run 'stalesim sweep' into it first)", escaped(dir)));
  // A sweep written before the one-name rename (sim/output/names.hpp) is read under the current names.
  std::vector<std::string> required = {"seed", "folder", "status", "quality_metric"};
  for (const char* m : kMetrics) required.emplace_back(m);
  const CsvInput in =
      CsvInput::parse(t.csv_path.string(), current_csv_names("sweep.csv", read(t.csv_path)), required);
  t.rows.push_back(in.header());
  for (size_t c = 0; c < in.header().size(); ++c) t.columns.emplace(in.header()[c], c);
  t.seed_col = in.column("seed");
  t.folder_col = in.column("folder");
  t.status_col = in.column("status");
  t.metric_name_col = in.column("quality_metric");

  // Every row checked before any is counted: a known status, a seed, a point named once, a folder
  // of this sweep (never a path that leaves it) used by one point of a group, result cells that are
  // numbers.
  std::map<std::vector<std::string>, size_t> index, points;
  std::map<std::pair<size_t, std::string>, size_t> folder_of_group;
  for (size_t i = 0; i < in.rows(); ++i) {
    std::vector<std::string> row = in.cells(i);
    const std::optional<SweepStatus> status = enum_from_name<SweepStatus>(row[t.status_col]);
    if (!status)
      in.fail(i, t.status_col, fmt::format("expected a sweep status, got '{}'", escaped(row[t.status_col])));
    const std::string& seed = row[t.seed_col];
    if (seed.empty() || seed.size() > 20 || seed.find_first_not_of("0123456789") != std::string::npos)
      in.fail(i, t.seed_col, fmt::format("expected an integer >= 0, got '{}'", escaped(seed)));
    const std::vector<std::string> point(row.begin(), row.begin() + static_cast<long>(t.seed_col) + 1);
    if (const auto [it, fresh] = points.emplace(point, i); !fresh)
      in.fail(i, t.seed_col,
              fmt::format("repeats the point of line {} (the same values and seed)", in.line(it->second)));
    const std::vector<std::string> key(row.begin(), row.begin() + static_cast<long>(t.seed_col));
    auto [it, fresh] = index.emplace(key, t.keys.size());
    if (fresh) {
      t.keys.push_back(key);
      t.members.emplace_back();
    }
    const size_t r = t.rows.size();
    t.rows.push_back(std::move(row));
    t.members[it->second].push_back(r);
    if (!t.ok(r)) continue;
    const std::string& folder = t.rows[r][t.folder_col];
    if (const std::string why = sweep_folder_problem(root, folder); !why.empty())
      in.fail(i, t.folder_col, why);
    const auto [seen, first] = folder_of_group.emplace(std::pair{it->second, folder}, i);
    if (!first)
      in.fail(
          i, t.folder_col,
          fmt::format("names the folder of line {}, another seed of the same point: one run cannot have two "
                      "seeds",
                      in.line(seen->second)));
    for (const char* m : kMetrics)
      in.number(i, t.col(m), std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max(),
                /*empty_ok=*/true);
  }
  return t;
}

// sweep-summary.csv: a line per group with the statistics of every result column; returns those
// statistics per group and metric.
std::vector<std::map<std::string, Stats>> write_summary_csv(const SweepRows& t,
                                                            const std::vector<TargetCount>& targets,
                                                            SweepSummary& out) {
  const auto& rows = t.rows;
  std::string& sc = out.summary_csv;
  for (const auto& c : out.group_columns) sc += csv_escape(c) + ",";
  sc += "seeds,with_result,quality_metric";
  for (const char* m : kMetrics) sc += fmt::format(",{0}_mean,{0}_std,{0}_min,{0}_max,{0}_n", m);
  sc += ",target_accuracy,target_reached,target_missed,time_to_target_s_censored_mean\n";
  std::vector<std::map<std::string, Stats>> group_stats(t.keys.size());
  for (size_t g = 0; g < t.keys.size(); ++g) {
    size_t with = 0;
    std::string metric_name;
    for (size_t r : t.members[g])
      if (t.ok(r)) {
        ++with;
        if (metric_name.empty()) metric_name = rows[r][t.metric_name_col];
      }
    out.points_with_result += with;
    for (const auto& k : t.keys[g]) sc += csv_escape(k) + ",";
    sc += fmt::format("{},{},{}", t.members[g].size(), with, csv_escape(metric_name));
    for (const char* m : kMetrics) {
      const size_t c = t.col(m);
      std::vector<double> v;
      for (size_t r : t.members[g])
        if (t.ok(r))
          if (auto x = number(rows[r][c])) v.push_back(*x);
      const Stats s = stats_of(v);
      group_stats[g][m] = s;
      sc += "," + stat_cells(s) + fmt::format(",{}", s.n);
    }
    const TargetCount& tc = targets[g];
    if (tc.target)
      sc += fmt::format(",{},{},{},{}", *tc.target, tc.reached, tc.runs - tc.reached,
                        tc.censored_mean ? fmt::format("{}", *tc.censored_mean) : std::string());
    else
      sc += ",,,,";
    sc += "\n";
  }
  return group_stats;
}

// Per group: the target and how many seeds with a result reached it; each miss counted at its
// run's end for the censored mean (none when a run's end is unknown).
std::vector<TargetCount> count_targets(const fs::path& root, const SweepRows& t) {
  const size_t time_col = t.col("time_to_target_s"), end_col = t.col("virtual_time_s");
  std::vector<TargetCount> out(t.keys.size());
  for (size_t g = 0; g < t.keys.size(); ++g) {
    TargetCount& tc = out[g];
    double sum = 0;
    bool ends_known = true;
    for (size_t r : t.members[g]) {
      if (!t.ok(r)) continue;
      const auto target = target_of(root / t.rows[r][t.folder_col]);
      if (!target) continue;
      tc.target = target;
      ++tc.runs;
      if (const auto when = number(t.rows[r][time_col])) {
        ++tc.reached;
        sum += *when;
      } else if (const auto end = number(t.rows[r][end_col])) {
        sum += *end;
      } else {
        ends_known = false;
      }
    }
    if (tc.runs > 0 && ends_known) tc.censored_mean = sum / static_cast<double>(tc.runs);
  }
  return out;
}

// The table's time-to-target cell: "3 of 3: 12 ± 1"; with misses "2 of 3: 11 ± 1 (all ≥ 14)",
// the mean over the seeds that reached it and, in brackets, the censored mean over all seeds.
std::string target_cell(const TargetCount& tc, const Stats& reached) {
  if (!tc.target) return "-";
  std::string cell = fmt::format("{} of {}", tc.reached, tc.runs);
  if (tc.reached > 0) cell += ": " + short_number(reached);
  if (tc.reached < tc.runs && tc.censored_mean) cell += fmt::format(" (all ≥ {:.4g})", *tc.censored_mean);
  return cell;
}

// curves.csv: every metrics.csv column but the time, per group and evaluation time.
void write_curves_csv(const fs::path& root, const SweepRows& t, SweepSummary& out) {
  const auto& rows = t.rows;
  std::vector<std::string> curve_columns;  // in order of first appearance
  std::set<std::string> known_columns;
  struct Curve {
    // time text -> (time, column -> values in seed order)
    std::map<std::string, std::pair<double, std::map<std::string, std::vector<double>>>> at;
    std::map<std::string, size_t> seeds_at;
  };
  std::vector<Curve> curves(t.keys.size());
  for (size_t g = 0; g < t.keys.size(); ++g) {
    for (size_t r : t.members[g]) {
      if (!t.ok(r)) continue;
      const fs::path m = root / rows[r][t.folder_col] / "metrics.csv";
      const CsvInput in = CsvInput::parse(m.string(), read(m), {"virtual_time_s"});
      if (in.header()[0] != "virtual_time_s")
        throw IoError(fmt::format("{}: not a stalesim metrics.csv (its first column is not virtual_time_s)",
                                  escaped(m.string())));
      for (size_t c = 1; c < in.header().size(); ++c)
        if (known_columns.insert(in.header()[c]).second) curve_columns.push_back(in.header()[c]);
      // A diverged run's last evaluation may be inf or nan: left out of the figures, as sweep.csv
      // leaves it empty; anywhere else a cell that is not a number is refused.
      const bool diverged = enum_from_name<SweepStatus>(rows[r][t.status_col]) == SweepStatus::kDiverged;
      double previous = -1;
      for (size_t i = 0; i < in.rows(); ++i) {
        const double when = *in.number(i, 0, 0);
        if (when <= previous) in.fail(i, 0, "times must increase from row to row");
        previous = when;
        auto& slot = curves[g].at[in.cell(i, 0)];
        slot.first = when;
        ++curves[g].seeds_at[in.cell(i, 0)];
        for (size_t c = 1; c < in.header().size(); ++c) {
          const std::string& cell = in.cell(i, c);
          if (diverged && (cell == "nan" || cell == "-nan" || cell == "inf" || cell == "-inf")) continue;
          if (auto x =
                  in.number(i, c, std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max(),
                            /*empty_ok=*/true))
            slot.second[in.header()[c]].push_back(*x);
        }
      }
    }
  }
  std::string& cc = out.curves_csv;
  for (const auto& c : out.group_columns) cc += csv_escape(c) + ",";
  cc += "virtual_time_s,seeds";
  for (const auto& m : curve_columns) cc += fmt::format(",{0}_mean,{0}_std,{0}_min,{0}_max", m);
  cc += "\n";
  for (size_t g = 0; g < t.keys.size(); ++g) {
    std::vector<std::pair<double, std::string>> times;
    for (const auto& [text, slot] : curves[g].at) times.emplace_back(slot.first, text);
    std::sort(times.begin(), times.end());
    for (const auto& [when, text] : times) {
      std::string row;
      for (const auto& k : t.keys[g]) row += csv_escape(k) + ",";
      row += fmt::format("{},{}", text, curves[g].seeds_at[text]);
      const auto& values = curves[g].at[text].second;
      for (const auto& m : curve_columns) {
        const auto it = values.find(m);
        row += "," + stat_cells(it == values.end() ? Stats{} : stats_of(it->second));
      }
      cc += row + "\n";
    }
  }
}

// The table: a line per group, columns padded to their widest cell.
void write_table(const SweepRows& t, std::vector<std::map<std::string, Stats>>& group_stats,
                 const std::vector<TargetCount>& targets, SweepSummary& out) {
  std::vector<std::vector<std::string>> table;
  // Cells from sweep.csv are escaped (sim/text.hpp): they reach a terminal.
  std::vector<std::string> head;
  for (const auto& c : out.group_columns) head.push_back(escaped(c));
  for (const char* h :
       {"n", "quality (mean ± std)", "min", "max", "final_test_loss", "reached target: time_to_target_s"})
    head.emplace_back(h);
  table.push_back(head);
  for (size_t g = 0; g < t.keys.size(); ++g) {
    std::vector<std::string> line;
    for (const auto& k : t.keys[g]) line.push_back(k.empty() ? "-" : escaped(k));
    const Stats& q = group_stats[g]["quality"];
    std::string metric_name;
    for (size_t r : t.members[g])
      if (t.ok(r) && metric_name.empty()) metric_name = t.rows[r][t.metric_name_col];
    line.push_back(fmt::format("{}/{}", q.n, t.members[g].size()));
    line.push_back(q.n ? fmt::format("{} {}", escaped(metric_name), short_number(q)) : "-");
    line.push_back(q.n ? fmt::format("{:.4g}", q.min) : "-");
    line.push_back(q.n ? fmt::format("{:.4g}", q.max) : "-");
    line.push_back(short_number(group_stats[g]["final_test_loss"]));
    line.push_back(target_cell(targets[g], group_stats[g]["time_to_target_s"]));
    table.push_back(line);
  }
  bool missed = false;
  for (const auto& tc : targets) missed = missed || tc.reached < tc.runs;
  std::vector<size_t> width(head.size(), 0);
  const auto display = [](const std::string& s) {  // "±" is two bytes, one column
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  for (const auto& line : table)
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], display(line[c]));
  for (const auto& line : table) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(width[c] - display(line[c]) + 2, ' ');
    }
    out.table += text + "\n";
  }
  if (missed)
    out.table +=
        "k of n: k of the n seeds reached the target; the mean ± std is over those k. (all ≥ X): the mean "
        "over\n"
        "all n seeds with each miss counted at its run's end, a lower bound of the time to target.\n";
}

}  // namespace

SweepSummary summarize_sweep(const std::string& dir) {
  const fs::path root(dir);
  const SweepRows t = read_sweep_rows(dir, root);
  SweepSummary out;
  for (size_t c = 0; c < t.seed_col; ++c) out.group_columns.push_back(t.rows[0][c]);
  out.groups = t.keys.size();
  out.points = t.rows.size() - 1;
  const auto targets = count_targets(root, t);
  for (const auto& tc : targets) out.target_missed += tc.runs - tc.reached;
  auto group_stats = write_summary_csv(t, targets, out);
  write_curves_csv(root, t, out);
  write_table(t, group_stats, targets, out);
  return out;
}

namespace {

// One side of a comparison in one context: the values per metric over its seeds with a result.
struct Side {
  std::vector<double> time, updates, accuracy;
  size_t runs = 0, missed = 0;
  bool target = false;
};

Side side_of(const fs::path& root, const SweepRows& t, const std::vector<size_t>& members) {
  const size_t time_col = t.col("time_to_target_s"), end_col = t.col("virtual_time_s"),
               updates_col = t.col("server_updates"), acc_col = t.col("final_test_accuracy");
  Side s;
  for (size_t r : members) {
    if (!t.ok(r)) continue;
    ++s.runs;
    if (auto x = number(t.rows[r][updates_col])) s.updates.push_back(*x);
    if (auto x = number(t.rows[r][acc_col])) s.accuracy.push_back(*x);
    if (!target_of(root / t.rows[r][t.folder_col])) continue;
    s.target = true;
    if (auto when = number(t.rows[r][time_col])) {
      s.time.push_back(*when);
    } else if (auto end = number(t.rows[r][end_col])) {
      s.time.push_back(*end);  // a miss, counted at its run's end
      ++s.missed;
    }
  }
  return s;
}

std::string number_text(double x) { return fmt::format("{:.4g}", x); }

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

SweepComparison compare_sweep(const std::string& dir, const std::string& key, const std::string& a,
                              const std::string& b) {
  const fs::path root(dir);
  const SweepRows t = read_sweep_rows(dir, root);
  const std::vector<std::string> group_columns(t.rows[0].begin(),
                                               t.rows[0].begin() + static_cast<long>(t.seed_col));
  const auto kc = std::find(group_columns.begin(), group_columns.end(), key);
  if (kc == group_columns.end())
    throw IoError(fmt::format(
        "{}: --compare {}={},{}: no column '{}' to compare by (the sweep's columns: {})", t.csv_path.string(),
        key, a, b, key, group_columns.empty() ? std::string("none") : join(group_columns, ", ")));
  const size_t k = static_cast<size_t>(kc - group_columns.begin());
  std::vector<std::string> values;
  for (const auto& g : t.keys)
    if (std::find(values.begin(), values.end(), g[k]) == values.end()) values.push_back(g[k]);
  for (const auto& v : {a, b})
    if (std::find(values.begin(), values.end(), v) == values.end())
      throw IoError(fmt::format("{}: --compare {}={},{}: '{}' is not a value of {} (its values: {})",
                                t.csv_path.string(), key, a, b, v, key, join(values, ", ")));
  // Contexts: the other group columns' values, in order of first appearance.
  std::vector<std::vector<std::string>> contexts;
  std::map<std::vector<std::string>, std::pair<std::vector<size_t>, std::vector<size_t>>> sides;
  for (size_t g = 0; g < t.keys.size(); ++g) {
    const std::string& v = t.keys[g][k];
    if (v != a && v != b) continue;
    std::vector<std::string> ctx = t.keys[g];
    ctx.erase(ctx.begin() + static_cast<long>(k));
    if (!sides.contains(ctx)) contexts.push_back(ctx);
    auto& slot = v == a ? sides[ctx].first : sides[ctx].second;
    slot.insert(slot.end(), t.members[g].begin(), t.members[g].end());
  }
  SweepComparison out;
  out.json = {{"key", key}, {"a", a}, {"b", b}, {"contexts", nlohmann::json::array()}};
  std::vector<std::vector<std::string>> table{
      {"metric", fmt::format("{} (n)", a), fmt::format("{} (n)", b), "A - B", "SE", "verdict"}};
  size_t compared = 0;
  for (const auto& ctx : contexts) {
    const auto& [ma, mb] = sides[ctx];
    if (ma.empty() || mb.empty()) continue;
    ++compared;
    nlohmann::json context = nlohmann::json::object();
    std::vector<std::string> words;
    for (size_t c = 0, i = 0; c < group_columns.size(); ++c) {
      if (c == k) continue;
      context[group_columns[c]] = ctx[i];
      words.push_back(fmt::format("{}={}", group_columns[c], ctx[i]));
      ++i;
    }
    nlohmann::json metrics = nlohmann::json::array();
    const Side sa = side_of(root, t, ma), sb = side_of(root, t, mb);
    table.push_back({words.empty() ? std::string("(all points)") : join(words, " "), "", "", "", "", ""});
    const auto add = [&](const char* metric, const std::vector<double>& va, const std::vector<double>& vb,
                         bool time) {
      nlohmann::json m{{"metric", metric}, {"n_a", va.size()}, {"n_b", vb.size()}};
      if (time) {
        m["missed_a"] = sa.missed;
        m["missed_b"] = sb.missed;
      }
      const auto cell = [&](const std::vector<double>& v, size_t missed) {
        if (v.empty()) return std::string("- (0)");
        std::string c = fmt::format("{} ({}", number_text(stats_of(v).mean), v.size());
        if (time) c += fmt::format("; {} missed", missed);
        return c + ")";
      };
      if (va.empty() || vb.empty()) {
        m["verdict"] = nullptr;
        table.push_back(
            {metric, cell(va, sa.missed), cell(vb, sb.missed), "-", "-", "no values on one side"});
      } else {
        const SeedDifference d = seed_difference(va, vb);
        m["mean_a"] = d.mean_a;
        m["mean_b"] = d.mean_b;
        m["d"] = d.d;
        m["se"] = d.se ? nlohmann::json(*d.se) : nlohmann::json(nullptr);
        m["df"] = d.df ? nlohmann::json(*d.df) : nlohmann::json(nullptr);
        m["verdict"] = d.verdict;
        std::string verdict = d.verdict == "A higher"  ? fmt::format("{} higher", a)
                              : d.verdict == "A lower" ? fmt::format("{} lower", a)
                              : d.se                   ? std::string("inconclusive")
                                                       : std::string("no SE (a side has < 2 seeds)");
        table.push_back({metric, cell(va, sa.missed), cell(vb, sb.missed), fmt::format("{:+.4g}", d.d),
                         d.se ? number_text(*d.se) : std::string("-"), verdict});
      }
      metrics.push_back(m);
    };
    if (sa.target || sb.target) add("time_to_target_s", sa.time, sb.time, true);
    add("server_updates", sa.updates, sb.updates, false);
    add("final_test_accuracy", sa.accuracy, sb.accuracy, false);
    out.json["contexts"].push_back({{"context", context}, {"metrics", metrics}});
  }
  if (compared == 0)
    throw IoError(
        fmt::format("{}: --compare {}={},{}: no points of {} and {} agree in every other column ({})",
                    t.csv_path.string(), key, a, b, a, b, join(group_columns, ", ")));
  std::vector<size_t> width(6, 0);
  const auto display = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  for (const auto& line : table)
    if (!line[1].empty() || line[0] == "metric")
      for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], display(line[c]));
  out.table = fmt::format("{} = {} (A) against {} (B), over seeds:\n", key, a, b);
  for (const auto& line : table) {
    if (line[1].empty() && line[0] != "metric") {
      out.table += line[0] + "\n";
      continue;
    }
    std::string text = "  ";
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(width[c] - display(line[c]) + 2, ' ');
    }
    out.table += text + "\n";
  }
  out.table +=
      "A - B: the difference of the means over seeds; SE: its standard error (unpaired); verdict: beyond the "
      "rule's level\neither way (Welch's t, one-sided 0.0228: two SE in large samples) or inconclusive (the "
      "paper claims' rule,\nsim/analysis/seed_difference.hpp). time_to_target_s counts each miss at its "
      "run's "
      "end.\n";
  return out;
}

}  // namespace stalesim
