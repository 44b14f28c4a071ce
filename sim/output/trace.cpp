#include "sim/output/trace.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/policies/sync_policy.hpp"

namespace stalesim {

namespace {

constexpr int kWorkersPid = 1;
constexpr int kServerPid = 2;
constexpr int kUpdatesTid = 0;
constexpr int kLinkTid = 1;  // shard 0's link into the server: pushes
constexpr int kPolicyTid = 2;
constexpr int kLinkOutTid = 3;  // and out of it: pulls (full duplex, sim/worker/network.hpp)

// Microseconds, shortest round-trip (exact: ns / 1000 of an int64 below 2^53).
std::string us(SimTime t) { return fmt::format("{}", static_cast<double>(t.ns()) / 1e3); }
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

const char* to_string(Activity a) {
  switch (a) {
    case Activity::kCompute:
      return "compute";
    case Activity::kWait:
      return "wait";
    case Activity::kPush:
      return "push";
    case Activity::kPull:
      return "pull";
  }
  return "?";
}

TraceRecorder::TraceRecorder(std::string title, TraceOptions options)
    : title_(std::move(title)), opt_(options) {}

void TraceRecorder::start(const ClockTable& clocks, const SyncPolicy& policy,
                          const std::vector<std::string>& profiles) {
  clocks_ = &clocks;
  narrator_.start(clocks, policy);
  policy_ = fmt::format("{}, {}", policy.name(), narrator_.bound());
  open_.assign(profiles.size(), Open{});
  const auto meta = [&](int pid, int tid, const char* what, const std::string& args) {
    meta_ += fmt::format("{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{}}},\n", what, pid,
                         tid, args);
  };
  meta(kWorkersPid, 0, "process_name", R"({"name":"workers"})");
  meta(kWorkersPid, 0, "process_sort_index", R"({"sort_index":1})");
  meta(kServerPid, 0, "process_name", R"({"name":"server"})");
  meta(kServerPid, 0, "process_sort_index", R"({"sort_index":2})");
  for (size_t w = 0; w < profiles.size(); ++w) {
    meta(kWorkersPid, static_cast<int>(w), "thread_name",
         fmt::format("{{\"name\":{}}}", quoted(fmt::format("worker {} ({})", w, profiles[w]))));
    meta(kWorkersPid, static_cast<int>(w), "thread_sort_index", fmt::format("{{\"sort_index\":{}}}", w));
  }
  // Sorted: updates, the link's two directions, policy.
  const struct {
    int tid;
    const char* name;
    int sort;
  } tracks[] = {{kUpdatesTid, "updates", 0},
                {kLinkTid, "link in (pushes)", 1},
                {kLinkOutTid, "link out (pulls)", 2},
                {kPolicyTid, "policy", 3}};
  for (const auto& t : tracks) {
    meta(kServerPid, t.tid, "thread_name", fmt::format("{{\"name\":\"{}\"}}", t.name));
    meta(kServerPid, t.tid, "thread_sort_index", fmt::format("{{\"sort_index\":{}}}", t.sort));
  }
}

void TraceRecorder::emit(SimTime t, std::string event) {
  if (truncated_) return;
  if (static_cast<int64_t>(meta_.size() + body_.size() + event.size()) + 512 > opt_.max_bytes) {
    truncated_ = true;
    truncated_at_ = t;
    return;
  }
  if (!body_.empty()) body_ += ",\n";
  body_ += event;
  ++events_;
}

void TraceRecorder::span(int pid, int tid, const std::string& name, SimTime start, SimTime end,
                         const std::string& args) {
  const SimTime a = max(start, opt_.from);
  const SimTime b = end < opt_.to ? end : opt_.to;
  if (b <= a) return;  // outside the window, or empty
  emit(a,
       fmt::format(R"({{"name":{},"cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{}}})",
                   quoted(name), pid == kWorkersPid ? "worker" : "server", us(a), us(b - a), pid, tid, args));
}

void TraceRecorder::instant(int pid, int tid, const std::string& name, SimTime t, const std::string& args) {
  if (!inside(t)) return;
  emit(t, fmt::format(R"({{"name":{},"cat":"{}","ph":"i","s":"t","ts":{},"pid":{},"tid":{},"args":{}}})",
                      quoted(name), pid == kWorkersPid ? "worker" : "server", us(t), pid, tid, args));
}

void TraceRecorder::counter(const std::string& name, SimTime t, const std::string& args) {
  if (!inside(t)) return;
  emit(t, fmt::format(R"({{"name":{},"ph":"C","ts":{},"pid":{},"tid":0,"args":{}}})", quoted(name), us(t),
                      kServerPid, args));
}

void TraceRecorder::drain() {
  for (const auto& l : narrator_.new_controller_calls()) {
    const auto granted = l.text.find("grants none") == std::string::npos;
    instant(
        kServerPid, kPolicyTid,
        granted ? fmt::format("DSSP grant to w{}", l.worker) : fmt::format("DSSP no grant to w{}", l.worker),
        l.time, nlohmann::json{{"worker", l.worker}, {"why", l.text}}.dump());
  }
}

void TraceRecorder::activity(SimTime now, int32_t worker, Activity a) {
  drain();
  Open& o = open_[static_cast<size_t>(worker)];
  span(kWorkersPid, worker, to_string(o.activity), o.since, now, fmt::format("{{\"clock\":{}}}", o.clock));
  o = Open{a, now, clocks_->clock(worker)};
}

void TraceRecorder::blocked(SimTime now, int32_t worker, WaitCause cause, int64_t clock, int64_t have) {
  drain();
  open_[static_cast<size_t>(worker)].clock = clock;
  nlohmann::json args{{"clock", clock}, {"why", narrator_.blocked(worker, cause, clock, have)}};
  if (const auto w = narrator_.waits_for(cause)) args["waits_for"] = *w;
  instant(kWorkersPid, worker, "blocked", now, args.dump());
}

void TraceRecorder::wire(SimTime start, SimTime end, int32_t worker, WireKind kind, int64_t bytes) {
  span(kServerPid, kind == WireKind::kPush ? kLinkTid : kLinkOutTid,
       fmt::format("{} w{}", kind == WireKind::kPush ? "push" : "pull", worker), start, end,
       fmt::format("{{\"worker\":{},\"bytes\":{}}}", worker, bytes));
}

// Off the star: one counter track per link direction, its utilisation and flow count.
void TraceRecorder::link_load(SimTime now, const std::string& link, double utilisation, int32_t flows) {
  counter("link " + link, now, fmt::format("{{\"utilisation\":{:.6f},\"flows\":{}}}", utilisation, flows));
}

void TraceRecorder::update(SimTime now, int32_t worker, int64_t version, int64_t staleness,
                           int64_t missed_updates) {
  drain();
  instant(kServerPid, kUpdatesTid, "update", now,
          fmt::format("{{\"worker\":{},\"version\":{},\"staleness\":{},\"missed_updates\":{}}}", worker,
                      version, staleness, missed_updates));
  counter("applied gradient", now,
          fmt::format("{{\"staleness\":{},\"missed_updates\":{}}}", staleness, missed_updates));
}

void TraceRecorder::evaluation(const MetricsRow& row) {
  if (row.test_accuracy) counter("accuracy", row.time, nlohmann::json{{"test", *row.test_accuracy}}.dump());
  nlohmann::json loss = nlohmann::json::object();
  if (row.test_loss && std::isfinite(*row.test_loss)) loss["test"] = *row.test_loss;
  if (row.train_loss && std::isfinite(*row.train_loss)) loss["train"] = *row.train_loss;
  if (!loss.empty()) counter("loss", row.time, loss.dump());
}

void TraceRecorder::finish(SimTime end) {
  drain();
  for (size_t w = 0; w < open_.size(); ++w) {
    const Open& o = open_[w];
    span(kWorkersPid, static_cast<int>(w), to_string(o.activity), o.since, end,
         fmt::format("{{\"clock\":{}}}", o.clock));
    open_[w].since = end;
  }
}

std::string TraceRecorder::json() const {
  nlohmann::json other = {{"generator", "stalesim --trace"},
                          {"scenario", title_},
                          {"policy", policy_},
                          {"time_unit", "microseconds of virtual time"},
                          {"window_from_s", opt_.from.seconds()},
                          {"truncated", truncated_},
                          {"max_bytes", opt_.max_bytes}};
  other["window_to_s"] =
      opt_.to == SimTime::max() ? nlohmann::json(nullptr) : nlohmann::json(opt_.to.seconds());
  if (truncated_) other["truncated_at_s"] = truncated_at_.seconds();
  std::string out = "{\"traceEvents\":[\n";
  out += meta_;
  out += body_;
  if (body_.empty() && !meta_.empty()) out.resize(out.size() - 2);  // the metadata's last ",\n"
  out += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" + other.dump() + "}\n";
  return out;
}

std::string TraceRecorder::truncation_message() const {
  if (!truncated_) return {};
  return fmt::format(
      "trace.json: cut at t={:g} s: it reached its size limit of {} MB ({} events kept); raise the limit "
      "with "
      "--trace-max-mb, or keep a part with --trace-window FROM:TO (seconds)",
      truncated_at_.seconds(), static_cast<double>(opt_.max_bytes) / 1e6, events_);
}

void parse_trace_window(const std::string& text, TraceOptions& options) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    throw std::invalid_argument(
        fmt::format("expected FROM:TO in virtual seconds (e.g. 0:2.5), got '{}'", text));
  const auto number = [&](const std::string& part, double fallback) {
    if (part.empty()) return fallback;
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || !std::isfinite(v) || v < 0 || v > 9e9)
      throw std::invalid_argument(
          fmt::format("expected FROM:TO with seconds >= 0 (e.g. 0:2.5), got '{}' in '{}'", part, text));
    return v;
  };
  const double from = number(text.substr(0, colon), 0.0);
  const double to = number(text.substr(colon + 1), -1.0);
  if (to >= 0 && to <= from)
    throw std::invalid_argument(fmt::format("TO must be greater than FROM, got '{}'", text));
  options.from = SimTime::from_seconds(from);
  options.to = to < 0 ? SimTime::max() : SimTime::from_seconds(to);
}

TraceOptions trace_options_of(const std::string& trace_json) {
  TraceOptions o;
  try {
    std::string error;  // nesting capped: a forged trace.json must not exhaust the stack
    const auto doc = parse_json_bounded(trace_json, error);
    if (!doc) return TraceOptions{};
    const auto other = doc->at("otherData");
    o.from = SimTime::from_seconds(other.at("window_from_s").get<double>());
    const auto& to = other.at("window_to_s");
    o.to = to.is_null() ? SimTime::max() : SimTime::from_seconds(to.get<double>());
    o.max_bytes = other.at("max_bytes").get<int64_t>();
    if (o.max_bytes < 0 || o.to < o.from) return TraceOptions{};
  } catch (const std::exception&) {
    return TraceOptions{};  // not a stalesim trace: the comparison will say how it differs
  }
  return o;
}

}  // namespace stalesim
