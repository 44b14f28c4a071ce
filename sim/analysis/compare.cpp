// `stalesim compare` (sim/analysis/compare.hpp): reading run folders and comparing their figures.

#include "sim/analysis/compare.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>

#include "base/enum_names.hpp"
#include "base/file_read.hpp"
#include "sim/analysis/csv_input.hpp"
#include "sim/output/names.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/run_result.hpp"
#include "sim/text.hpp"

namespace stalesim {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The simulator's clock range (int64 nanoseconds, about 292 years): no run's time lies beyond it.
constexpr double kMaxSeconds = 9.2e9;

// A value of the summary at `ptr` (a JSON pointer of object keys and array indices), checked:
// IoError "FILE: /workers/0/profile: missing" or "... expected a string, got 3" otherwise.
class SummaryReader {
 public:
  SummaryReader(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

  const json& at(const std::string& ptr) const {
    const json* j = &root_;
    size_t from = 1;
    while (from <= ptr.size()) {
      const size_t slash = std::min(ptr.find('/', from), ptr.size());
      const std::string key = ptr.substr(from, slash - from);
      if (j->is_object()) {
        const auto it = j->find(key);
        if (it == j->end()) fail(ptr.substr(0, slash), "missing");
        j = &*it;
      } else if (j->is_array()) {
        const size_t index = std::stoul(key);  // our own pointers: digits
        if (index >= j->size()) fail(ptr.substr(0, slash), "missing");
        j = &(*j)[index];
      } else {
        fail(ptr.substr(0, from - 1), fmt::format("expected an object, got {}", shown(*j)));
      }
      from = slash + 1;
    }
    return *j;
  }
  double number(const std::string& ptr, double min, double max = std::numeric_limits<double>::max()) const {
    const json& v = at(ptr);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min || v.get<double>() > max)
      fail(ptr, max == std::numeric_limits<double>::max()
                    ? fmt::format("expected a finite number >= {}, got {}", min, shown(v))
                    : fmt::format("expected a number in [{}, {}], got {}", min, max, shown(v)));
    return v.get<double>();
  }
  int64_t integer(const std::string& ptr, int64_t min, int64_t max) const {
    const json& v = at(ptr);
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)) ||
        v.get<int64_t>() < min || v.get<int64_t>() > max)
      fail(ptr, fmt::format("expected an integer in [{}, {}], got {}", min, max, shown(v)));
    return v.get<int64_t>();
  }
  std::string string(const std::string& ptr) const {
    const json& v = at(ptr);
    if (!v.is_string()) fail(ptr, fmt::format("expected a string, got {}", shown(v)));
    return v.get<std::string>();
  }
  [[noreturn]] void fail(const std::string& ptr, const std::string& what) const {
    throw IoError(fmt::format("{}: {}: {}", escaped(file_), ptr.empty() ? "/" : escaped(ptr), what));
  }

 private:
  static std::string shown(const json& v) {
    std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 40) text = text.substr(0, 40) + "...";
    return escaped(text);
  }
  const json& root_;
  std::string file_;
};

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> rel_error(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b || *a == 0) return std::nullopt;
  const double e = (*b - *a) / *a;
  return std::isfinite(e) ? std::optional<double>(e) : std::nullopt;  // past a double: no figure
}

std::optional<double> abs_error(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The mean over B runs of a figure and its spread; null when no run has it.
json spread(const std::vector<std::optional<double>>& values) {
  std::vector<double> v;
  for (const auto& x : values)
    if (x) v.push_back(*x);
  if (v.empty()) return nullptr;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return {{"mean", m},
          {"sd", v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0},
          {"min", *std::min_element(v.begin(), v.end())},
          {"max", *std::max_element(v.begin(), v.end())},
          {"runs", static_cast<int64_t>(v.size())}};
}

// The figures of one run over the workers `ids` (all when empty), up to time `t`.
struct Figures {
  std::optional<double> iter_mean, iter_p50, iter_p99, updates, staleness_mean, missed_mean, wait_s,
      wait_fraction, accuracy, loss, time_to_target;
};

// Each worker id of `r` and its place in r.workers.
std::map<int32_t, size_t> worker_index(const ComparedRun& r) {
  std::map<int32_t, size_t> index;
  for (size_t i = 0; i < r.workers.size(); ++i) index.emplace(r.workers[i].id, i);
  return index;
}

// `index`: worker_index(r). The workers are taken in r's order, each group's by lookup, so that
// all groups together cost n log n (a summary may list a million workers, each its own group).
Figures figures(const ComparedRun& r, const std::vector<int32_t>& ids, double t,
                const std::map<int32_t, size_t>& index) {
  Figures f;
  std::vector<double> iters;
  double wait = 0, frac = 0, it_sum = 0;
  int64_t n = 0, it_count = 0;
  std::vector<size_t> members;
  if (ids.empty()) {
    for (size_t i = 0; i < r.workers.size(); ++i) members.push_back(i);
  } else {
    for (int32_t id : ids)
      if (const auto it = index.find(id); it != index.end()) members.push_back(it->second);
    std::sort(members.begin(), members.end());
  }
  for (size_t k : members) {
    const auto& w = r.workers[k];
    iters.insert(iters.end(), w.iteration_s.begin(), w.iteration_s.end());
    wait += w.wait_s;
    frac += w.wait_fraction;
    ++n;
    if (w.iterations > 0) {
      it_sum += r.end_s / static_cast<double>(w.iterations);
      ++it_count;
    }
  }
  if (!iters.empty()) {
    f.iter_mean = mean_of(iters);
    f.iter_p50 = quantile(iters, 0.5);
    f.iter_p99 = quantile(iters, 0.99);
  } else if (it_count) {
    f.iter_mean = it_sum / static_cast<double>(it_count);
  }
  if (n) {
    f.wait_s = wait / static_cast<double>(n);
    f.wait_fraction = frac / static_cast<double>(n);
  }
  if (!ids.empty()) return f;  // the rest is the whole run's
  if (!r.gradient_times.empty() || r.metrics.empty()) {
    f.updates =
        static_cast<double>(std::upper_bound(r.gradient_times.begin(), r.gradient_times.end(), t + 1e-12) -
                            r.gradient_times.begin());
  }
  const ComparedRun::Row* at = nullptr;
  for (const auto& row : r.metrics)
    if (row.time <= t + 1e-12) at = &row;
  if (at) {
    if (!f.updates) f.updates = static_cast<double>(at->version);
    f.accuracy = at->accuracy;
    f.loss = at->loss;
  }
  f.staleness_mean = r.staleness_mean;
  f.missed_mean = r.missed_updates_mean;
  f.time_to_target = r.time_to_target_s;
  return f;
}

json figures_json(const Figures& f) {
  return {{"iteration_time_mean_s", opt(f.iter_mean)},
          {"iteration_time_p50_s", opt(f.iter_p50)},
          {"iteration_time_p99_s", opt(f.iter_p99)},
          {"wait_s", opt(f.wait_s)},
          {"wait_fraction", opt(f.wait_fraction)},
          {"updates", opt(f.updates)},
          {"staleness_mean", opt(f.staleness_mean)},
          {"missed_updates_mean", opt(f.missed_mean)},
          {"accuracy", opt(f.accuracy)},
          {"loss", opt(f.loss)},
          {"time_to_target_s", opt(f.time_to_target)}};
}

// B's figures (mean and spread over the runs) beside A's, under the same names.
json figures_of_b(const std::vector<Figures>& fb) {
  json out = json::object();
  const std::pair<const char*, std::optional<double> Figures::*> names[] = {
      {"iteration_time_mean_s", &Figures::iter_mean},
      {"iteration_time_p50_s", &Figures::iter_p50},
      {"iteration_time_p99_s", &Figures::iter_p99},
      {"wait_s", &Figures::wait_s},
      {"wait_fraction", &Figures::wait_fraction},
      {"updates", &Figures::updates},
      {"staleness_mean", &Figures::staleness_mean},
      {"missed_updates_mean", &Figures::missed_mean},
      {"accuracy", &Figures::accuracy},
      {"loss", &Figures::loss},
      {"time_to_target_s", &Figures::time_to_target}};
  for (const auto& [name, field] : names) {
    std::vector<std::optional<double>> v;
    for (const auto& f : fb) v.push_back(f.*field);
    out[name] = spread(v);
  }
  return out;
}

}  // namespace

ComparedRun read_compared_run(const std::string& dir) {
  ComparedRun r;
  r.dir = dir;
  const std::string sp = dir + "/summary.json";
  std::string error;  // read bounded, nesting capped, duplicate keys refused (base/file_read.hpp)
  const auto parsed = read_json_file(sp, kMaxSummaryBytes, error);
  if (!parsed) throw IoError(fmt::format("{}: {}", escaped(sp), error));
  if (!parsed->is_object() ||
      (!parsed->contains("manifest") && !parsed->contains("workers") && !parsed->contains("virtual_time_s")))
    throw IoError(fmt::format("{}: not a stalesim run's summary", escaped(sp)));
  // A folder written before the one-name rename (sim/output/names.hpp) is read under the current names.
  r.summary = current_summary_names(*parsed);
  // Every value compare uses is checked here; nothing later looks a key up.
  const SummaryReader s(r.summary, sp);
  const json& manifest = s.at("/manifest");
  if (!manifest.is_object()) s.fail("/manifest", "expected an object");
  r.real = manifest.contains("real");
  const bool diverged =
      r.summary.contains("status") && r.summary["status"].is_string() &&
      enum_from_name<RunStatus>(r.summary["status"].get<std::string>()) == RunStatus::kDiverged;
  r.end_s = s.number("/virtual_time_s", 0, kMaxSeconds);
  if (!s.at("/time_to_target_s").is_null())
    r.time_to_target_s = s.number("/time_to_target_s", 0, kMaxSeconds);
  r.staleness_mean = s.number("/staleness/mean", 0, 1e18);
  r.missed_updates_mean = s.number("/missed_updates/mean", 0, 1e18);
  const json& workers = s.at("/workers");
  if (!workers.is_array() || workers.empty()) s.fail("/workers", "expected a non-empty array of workers");
  std::map<int32_t, size_t> index_of;  // worker id -> its place in r.workers
  for (size_t i = 0; i < workers.size(); ++i) {
    const std::string w = fmt::format("/workers/{}", i);
    ComparedRun::Worker worker;
    worker.id = static_cast<int32_t>(s.integer(w + "/id", 0, std::numeric_limits<int32_t>::max()));
    if (!index_of.emplace(worker.id, r.workers.size()).second)
      s.fail(w + "/id", fmt::format("worker {} is listed twice", worker.id));
    worker.profile = s.string(w + "/profile");
    worker.iterations = s.integer(w + "/iterations", 0, std::numeric_limits<int64_t>::max());
    worker.wait_s = s.number(w + "/wait_s", 0, kMaxSeconds);
    worker.wait_fraction = s.number(w + "/wait_fraction", 0, 1);
    r.workers.push_back(std::move(worker));
  }

  const CsvInput st =
      CsvInput::read(dir + "/staleness.csv", {"value", "staleness_gradients", "missed_updates_gradients"});
  const size_t st_value = st.column("value"), st_clock = st.column("staleness_gradients"),
               st_missed = st.column("missed_updates_gradients");
  int64_t clock_total = 0, missed_total = 0;
  for (size_t i = 0; i < st.rows(); ++i) {
    if (st.integer(i, st_value, 0) != static_cast<int64_t>(i))
      st.fail(i, st_value, fmt::format("expected {}: the values run 0, 1, 2, ... in order", i));
    constexpr int64_t kMaxCount = int64_t{1} << 53;  // summed exactly in a double
    r.staleness.push_back(st.integer(i, st_clock, 0, kMaxCount));
    r.missed_updates.push_back(st.integer(i, st_missed, 0, kMaxCount));
    clock_total += r.staleness.back();
    missed_total += r.missed_updates.back();
    if (clock_total > kMaxCount || missed_total > kMaxCount) st.fail(i, st_clock, "counts sum past 2^53");
  }
  if (clock_total == 0 || missed_total == 0)
    throw IoError(fmt::format("{}: counts no gradient: no distribution to compare", escaped(st.path())));

  const CsvInput mp = CsvInput::read(dir + "/metrics.csv",
                                     {"virtual_time_s", "server_version", "test_loss", "test_accuracy"});
  const size_t m_time = mp.column("virtual_time_s"), m_version = mp.column("server_version"),
               m_loss = mp.column("test_loss"), m_acc = mp.column("test_accuracy");
  for (size_t i = 0; i < mp.rows(); ++i) {
    ComparedRun::Row row;
    row.time = *mp.number(i, m_time, 0, kMaxSeconds);
    row.version = mp.integer(i, m_version, 0);
    if (i > 0 && (row.time < r.metrics.back().time || row.version < r.metrics.back().version))
      mp.fail(i, m_time, "rows out of order (time and server version never decrease)");
    row.accuracy = mp.number(i, m_acc, 0, 1, /*empty_ok=*/true);
    // A diverged run's last evaluation may be inf or nan: no loss to compare, said as n/a.
    const std::string& loss = mp.cell(i, m_loss);
    if (!(diverged && (loss == "inf" || loss == "-inf" || loss == "nan" || loss == "-nan")))
      row.loss = mp.number(i, m_loss, -1e30, 1e30, /*empty_ok=*/true);
    r.metrics.push_back(row);
  }

  const std::string gp = dir + "/gradients.csv";
  std::error_code ec;
  if (fs::symlink_status(gp, ec).type() != fs::file_type::not_found) {  // optional; else read says why
    const CsvInput g = CsvInput::read(gp, {"virtual_time_s", "worker"}, /*min_rows=*/0);
    const size_t g_time = g.column("virtual_time_s"), g_worker = g.column("worker");
    std::map<int32_t, double> last;
    for (size_t i = 0; i < g.rows(); ++i) {
      const double t = *g.number(i, g_time, 0, kMaxSeconds);
      const auto id = static_cast<int32_t>(g.integer(i, g_worker, 0, std::numeric_limits<int32_t>::max()));
      const auto at = index_of.find(id);
      if (at == index_of.end()) g.fail(i, g_worker, fmt::format("worker {} is not in summary.json", id));
      const double from = last.count(id) ? last[id] : 0.0;
      if (t < from) g.fail(i, g_time, fmt::format("worker {}'s gradients go back in time", id));
      r.gradient_times.push_back(t);
      r.workers[at->second].iteration_s.push_back(t - from);
      last[id] = t;
    }
    std::sort(r.gradient_times.begin(), r.gradient_times.end());
  }
  return r;
}

double ks_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const double na = static_cast<double>(std::accumulate(a.begin(), a.end(), int64_t{0}));
  const double nb = static_cast<double>(std::accumulate(b.begin(), b.end(), int64_t{0}));
  if (na <= 0 || nb <= 0) return 0.0;
  double ca = 0, cb = 0, d = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    ca += i < a.size() ? static_cast<double>(a[i]) : 0.0;
    cb += i < b.size() ? static_cast<double>(b[i]) : 0.0;
    d = std::max(d, std::abs(ca / na - cb / nb));
  }
  return d;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

json compare_runs(const ComparedRun& a, const std::vector<ComparedRun>& b) {
  double t = a.end_s;
  for (const auto& r : b) t = std::min(t, r.end_s);
  // Worker groups by profile, in the order A's workers name them.
  std::vector<std::pair<std::string, std::vector<int32_t>>> groups;
  std::map<std::string, size_t> group_of;
  for (const auto& w : a.workers) {
    const auto [it, fresh] = group_of.emplace(w.profile, groups.size());
    if (fresh) groups.push_back({w.profile, {}});
    groups[it->second].second.push_back(w.id);
  }
  const auto index_a = worker_index(a);
  std::vector<std::map<int32_t, size_t>> index_b;
  for (const auto& r : b) index_b.push_back(worker_index(r));
  for (const auto& r : b)
    if (r.workers.size() != a.workers.size())
      throw IoError(fmt::format("{} has {} workers and {} has {}: compare runs of one cluster",
                                escaped(a.dir), a.workers.size(), escaped(r.dir), r.workers.size()));
  json out;
  out["run_a"] = {{"dir", a.dir}, {"real", a.real}, {"end_s", a.end_s}};
  out["runs_b"] = json::array();
  for (const auto& r : b) out["runs_b"].push_back({{"dir", r.dir}, {"real", r.real}, {"end_s", r.end_s}});
  out["equal_time_s"] = t;
  const auto errors = [](const Figures& fa, const std::vector<Figures>& fb) {
    std::vector<std::optional<double>> it, up, sm, wf, acc, loss, ttt;
    for (const auto& f : fb) {
      it.push_back(rel_error(fa.iter_mean, f.iter_mean));
      up.push_back(rel_error(fa.updates, f.updates));
      sm.push_back(rel_error(fa.staleness_mean, f.staleness_mean));
      wf.push_back(abs_error(fa.wait_fraction, f.wait_fraction));
      acc.push_back(abs_error(fa.accuracy, f.accuracy));
      loss.push_back(rel_error(fa.loss, f.loss));
      ttt.push_back(rel_error(fa.time_to_target, f.time_to_target));
    }
    return std::vector<std::pair<std::string, json>>{
        {"iteration_time_rel_error", spread(it)}, {"updates_rel_error", spread(up)},
        {"staleness_mean_rel_error", spread(sm)}, {"wait_fraction_abs_error", spread(wf)},
        {"accuracy_abs_error", spread(acc)},      {"loss_rel_error", spread(loss)},
        {"time_to_target_rel_error", spread(ttt)}};
  };
  json groups_json = json::object();
  for (const auto& [profile, ids] : groups) {
    const Figures fa = figures(a, ids, t, index_a);
    std::vector<Figures> fb;
    for (size_t i = 0; i < b.size(); ++i) fb.push_back(figures(b[i], ids, t, index_b[i]));
    json g = {{"workers", ids}, {"a", figures_json(fa)}, {"b", figures_of_b(fb)}};
    for (const auto& [name, s] : errors(fa, fb))
      if (name == "iteration_time_rel_error" || name == "wait_fraction_abs_error") g[name] = s;
    groups_json[profile] = g;
  }
  out["groups"] = groups_json;
  const Figures fa = figures(a, {}, t, index_a);
  std::vector<Figures> fb;
  for (size_t i = 0; i < b.size(); ++i) fb.push_back(figures(b[i], {}, t, index_b[i]));
  json overall = {{"a", figures_json(fa)}, {"b", figures_of_b(fb)}};
  std::vector<std::optional<double>> ks, ks_step;
  for (const auto& r : b) {
    ks.push_back(ks_distance(a.staleness, r.staleness));
    ks_step.push_back(ks_distance(a.missed_updates, r.missed_updates));
  }
  json plain = json::object();  // the plain keys: the mean over the B runs
  json spreads = json::object();
  for (auto& [name, s] : errors(fa, fb)) {
    plain[name] = s.is_null() ? json(nullptr) : s["mean"];
    spreads[name] = s;
  }
  for (const auto& [name, v] : {std::pair{"staleness_ks", ks}, std::pair{"missed_updates_ks", ks_step}}) {
    const json s = spread(v);
    plain[name] = s.is_null() ? json(nullptr) : s["mean"];
    spreads[name] = s;
  }
  for (auto& [k, v] : plain.items()) out[k] = v;
  // The KS distance's sample sizes (gradients counted in staleness.csv; B: the mean over its runs)
  // and the two-sample test's critical value at 5%, 1.358 sqrt((n + m) / (n m)): a distance under
  // it is no evidence that the distributions differ.
  const auto count = [](const std::vector<int64_t>& h) {
    return std::accumulate(h.begin(), h.end(), int64_t{0});
  };
  double m = 0;
  for (const auto& r : b) m += static_cast<double>(count(r.staleness)) / static_cast<double>(b.size());
  const double n = static_cast<double>(count(a.staleness));
  out["staleness_ks_samples"] = {{"a", n}, {"b", m}};
  out["staleness_ks_critical_5pct"] =
      n > 0 && m > 0 ? json(1.358 * std::sqrt((n + m) / (n * m))) : json(nullptr);
  overall["spread"] = spreads;
  out["overall"] = overall;
  out["workers_wait_s"] = json::object();
  for (size_t i = 0; i < a.workers.size(); ++i) {
    std::vector<std::optional<double>> v;
    for (const auto& r : b) v.push_back(r.workers[i].wait_s);
    out["workers_wait_s"][std::to_string(a.workers[i].id)] = {{"a", a.workers[i].wait_s}, {"b", spread(v)}};
  }
  return out;
}

namespace {

std::string num(const json& v, const char* f = "{:.4g}") {
  return v.is_null() ? std::string("n/a") : fmt::format(fmt::runtime(f), v.get<double>());
}

// Text from a file or the command line as a Markdown table cell: escaped for the terminal
// (sim/text.hpp), its bars escaped so that it stays one cell.
std::string table_cell(const std::string& text) {
  std::string out;
  for (char ch : escaped(text)) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

// A relative error's spread in percent: "+1.2%", or "+1.2% (-0.5..+3.0)" over several runs.
std::string pct(const json& s) {
  if (s.is_null()) return "n/a";
  if (s["runs"].get<int64_t>() < 2) return fmt::format("{:+.1f}%", s["mean"].get<double>() * 100);
  return fmt::format("{:+.1f}% ({:+.1f}..{:+.1f})", s["mean"].get<double>() * 100,
                     s["min"].get<double>() * 100, s["max"].get<double>() * 100);
}

}  // namespace

std::string compare_row_header(bool verdict) {
  return fmt::format(
      "| run | iteration time A (s) | error | updates A | error | mean staleness A | B | error | staleness "
      "KS "
      "(5% critical) | time to target A (s) | B | error "
      "|{}\n|---|---|---|---|---|---|---|---|---|---|---|---|{}\n",
      verdict ? " verdict |" : "", verdict ? "---|" : "");
}

std::string compare_row(const json& c, const std::string& label, const std::string& verdict) {
  const json& a = c["overall"]["a"];
  const json& b = c["overall"]["b"];
  const json& sp = c["overall"]["spread"];
  const auto b_mean = [&](const char* key) { return b[key].is_null() ? json(nullptr) : b[key]["mean"]; };
  const json& ks = sp["staleness_ks"];
  const json crit = c.value("staleness_ks_critical_5pct", json(nullptr));
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |{}\n", table_cell(label),
                     num(a["iteration_time_mean_s"]), pct(sp["iteration_time_rel_error"]), num(a["updates"]),
                     pct(sp["updates_rel_error"]), num(a["staleness_mean"], "{:.3f}"),
                     num(b_mean("staleness_mean"), "{:.3f}"), pct(sp["staleness_mean_rel_error"]),
                     ks.is_null() ? std::string("n/a")
                                  : fmt::format("{:.3f} (max {:.3f}; {})", ks["mean"].get<double>(),
                                                ks["max"].get<double>(), num(crit, "{:.3f}")),
                     num(a["time_to_target_s"]), num(b_mean("time_to_target_s")),
                     pct(sp["time_to_target_rel_error"]),
                     verdict.empty() ? std::string() : " " + table_cell(verdict) + " |");
}

namespace {

struct BoundFigure {
  const char* name;
  const char* key;  // in compare.json
  const char* label;
  bool relative;
};
constexpr BoundFigure kBoundFigures[] = {
    {"iteration", "iteration_time_rel_error", "iteration time error", true},
    {"updates", "updates_rel_error", "updates-by-equal-time error", true},
    {"target", "time_to_target_rel_error", "time-to-target error", true},
    {"ks", "staleness_ks", "staleness KS distance", false},
};

const BoundFigure* bound_figure(const std::string& name) {
  for (const auto& f : kBoundFigures)
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace

std::vector<CompareBound> parse_compare_bounds(const std::string& text) {
  std::vector<CompareBound> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    const size_t eq = part.find('=');
    const std::string name = part.substr(0, eq);
    if (eq == std::string::npos || !bound_figure(name))
      throw ScenarioError(fmt::format(
          "compare --bounds: '{}': expected NAME=LIMIT with NAME one of iteration, updates, target, ks",
          escaped(part)));
    double limit = 0;
    size_t used = 0;
    try {
      limit = std::stod(part.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() - eq - 1 || !(limit > 0) || !std::isfinite(limit))
      throw ScenarioError(
          fmt::format("compare --bounds: '{}': the limit must be a number > 0 (0.1 is 10%)", escaped(part)));
    out.push_back({name, limit});
    at = comma + 1;
  }
  return out;
}

std::vector<BoundCheck> check_compare_bounds(const json& c, const std::vector<CompareBound>& bounds) {
  std::vector<BoundCheck> out;
  for (const auto& b : bounds) {
    const BoundFigure& f = *bound_figure(b.name);
    BoundCheck k{b, std::nullopt, false, ""};
    const json v = c.value(f.key, json(nullptr));
    const auto shown = [&](double x) {
      return f.relative ? fmt::format("{:+.1f}%", x * 100) : fmt::format("{:.3f}", x);
    };
    const std::string limit = f.relative ? fmt::format("{:g}%", b.limit * 100) : fmt::format("{:g}", b.limit);
    if (v.is_null()) {
      k.line = fmt::format("{}: not measured (a run lacks the figure): bound {} missed", f.label, limit);
    } else {
      k.value = v.get<double>();
      k.pass = std::abs(*k.value) <= b.limit;
      k.line = fmt::format("{} {}: {} {} ({})", f.label, shown(*k.value), k.pass ? "within" : "past", limit,
                           k.pass ? "pass" : "miss");
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::string bounds_verdict(const std::vector<BoundCheck>& checks) {
  std::string missed;
  for (const auto& k : checks) {
    if (k.pass) continue;
    const BoundFigure& f = *bound_figure(k.bound.name);
    const std::string value =
        !k.value ? "n/a"
                 : (f.relative ? fmt::format("{:+.1f}%", *k.value * 100) : fmt::format("{:.3f}", *k.value));
    const std::string limit =
        f.relative ? fmt::format("{:g}%", k.bound.limit * 100) : fmt::format("{:g}", k.bound.limit);
    missed += fmt::format("{}{} {} > {}", missed.empty() ? "" : ", ", k.bound.name, value, limit);
  }
  return missed.empty() ? "pass" : "miss: " + missed;
}

std::string compare_table(const json& c) {
  const auto b_cell = [&](const json& s) {
    if (s.is_null()) return std::string("n/a");
    if (s["runs"].get<int64_t>() < 2) return num(s["mean"]);
    return fmt::format("{} ± {}", num(s["mean"]), num(s["sd"], "{:.2g}"));
  };
  std::string out = fmt::format("A: {}\nB: {} run(s); equal time t = {:.4g} s\n\n",
                                escaped(c["run_a"]["dir"].get<std::string>()), c["runs_b"].size(),
                                c["equal_time_s"].get<double>());
  out += "| figure | A | B (mean ± sd) | error |\n|---|---|---|---|\n";
  const json& o = c["overall"];
  const json& sp = o["spread"];
  const auto row = [&](const std::string& label, const char* key, const char* err, bool relative) {
    out += fmt::format("| {} | {} | {} | {} |\n", label, num(o["a"][key]), b_cell(o["b"][key]),
                       err ? (relative ? pct(sp[err]) : b_cell(sp[err])) : std::string());
  };
  row("iteration time mean (s)", "iteration_time_mean_s", "iteration_time_rel_error", true);
  row("iteration time p50 (s)", "iteration_time_p50_s", nullptr, true);
  row("iteration time p99 (s)", "iteration_time_p99_s", nullptr, true);
  row("updates by t", "updates", "updates_rel_error", true);
  row("mean staleness", "staleness_mean", "staleness_mean_rel_error", true);
  out += fmt::format("| staleness KS distance | | | {} |\n", b_cell(sp["staleness_ks"]));
  row("mean missed updates", "missed_updates_mean", nullptr, true);
  out += fmt::format("| missed updates KS distance | | | {} |\n", b_cell(sp["missed_updates_ks"]));
  row("wait fraction per worker", "wait_fraction", "wait_fraction_abs_error", false);
  row("test accuracy at t", "accuracy", "accuracy_abs_error", false);
  row("test loss at t", "loss", "loss_rel_error", true);
  row("time to target (s)", "time_to_target_s", "time_to_target_rel_error", true);
  out += "\n| group | workers | iteration time A (s) | B (s) | error | wait fraction A | B |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const auto& [name, g] : c["groups"].items())
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", table_cell(name), g["workers"].size(),
                       num(g["a"]["iteration_time_mean_s"]), b_cell(g["b"]["iteration_time_mean_s"]),
                       pct(g["iteration_time_rel_error"]), num(g["a"]["wait_fraction"]),
                       b_cell(g["b"]["wait_fraction"]));
  return out;
}

}  // namespace stalesim
