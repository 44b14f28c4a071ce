// The run observers: trace.json (Chrome Trace Event format), the terminal timeline, the explain log.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/output/explain.hpp"
#include "sim/output/outputs.hpp"
#include "sim/output/timeline.hpp"
#include "sim/output/trace.hpp"
#include "sim/scenario/load.hpp"
#include "sim/simulation.hpp"
#include "tests/sim_test_util.hpp"

using nlohmann::json;
using namespace stalesim;

namespace {

// Hand-checkable: time-only, no jitter. A gtx1060 iteration takes 32 x 60867187.5 FLOP /
// (4.375e12 x 0.424) + 200 us = 1.25 ms; a gtx1080ti one 1.94775e9 / (11.34e12 x 0.424) + 200 us =
// 0.605093 ms.
// Messages are 4000 bytes: 3.2 us on each 10 Gbit/s link, plus 50 us latency.
json straggler_json(const std::string& policy) {
  json j = json::parse(R"({
    "name": "straggler", "seed": 1,
    "model": { "type": "time-only", "parameters": 1000, "flops_per_sample": 60867187.5 },
    "optimizer": { "batch_size": 32 },
    "policy": { "type": "bsp" },
    "cluster": { "workers": [ { "profile": "gtx1060", "count": 1 }, { "profile": "gtx1080ti", "count": 2 } ],
                 "network": { "latency_us": 50, "bandwidth_gbps": 10 }, "jitter": { "type": "none" } },
    "stop": { "max_updates": 9 },
    "eval": { "every_s": 1 } })");
  j["policy"]["type"] = policy;
  if (policy == "ssp") j["policy"]["staleness"] = 1;
  if (policy == "dssp") {  // s_L = 1, r_max = 3
    j["policy"]["staleness"] = 1;
    j["policy"]["range"] = 3;
    j["stop"]["max_updates"] = 24;
  }
  return j;
}

struct Traced {
  RunResult result;
  std::string trace;
  std::string explain;
};

Traced run_traced(const Scenario& s, TraceOptions options = {}) {
  TraceRecorder trace(s.name, options);
  ExplainRecorder explain(s.name);
  ObserverList list;
  list.add(&trace);
  list.add(&explain);
  RunOptions ro;
  ro.observer = &list;
  Traced t;
  t.result = run_scenario(s, ro);
  t.trace = trace.json();
  t.explain = explain.text();
  return t;
}

// A schema check of the Trace Event format's JSON object form ("Trace Event Format", Google):
// required keys and types per phase, non-negative durations, spans on one track that do not
// overlap, every track named by metadata. Returns the events; fails the test case otherwise.
json check_trace_schema(const std::string& text) {
  const json doc = json::parse(text);
  REQUIRE(doc.is_object());
  REQUIRE(doc.contains("traceEvents"));
  REQUIRE(doc["traceEvents"].is_array());
  CHECK(doc["displayTimeUnit"] == "ms");
  const json& events = doc["traceEvents"];
  std::set<int64_t> named_processes;
  std::set<std::pair<int64_t, int64_t>> named_threads, used_threads;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> spans;
  for (const auto& e : events) {
    INFO(e.dump());
    REQUIRE(e.is_object());
    REQUIRE(e.contains("name"));
    REQUIRE(e["name"].is_string());
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    CHECK(e["pid"].is_number_integer());
    const std::string ph = e["ph"];
    const int64_t pid = e["pid"];
    if (ph == "M") {
      REQUIRE(e["args"].is_object());
      const std::string name = e["name"];
      CHECK((name == "process_name" || name == "thread_name" || name == "process_sort_index" ||
             name == "thread_sort_index"));
      if (name == "process_name") named_processes.insert(pid);
      if (name == "thread_name") named_threads.insert({pid, e["tid"].get<int64_t>()});
      if (name.ends_with("_name")) CHECK(e["args"]["name"].is_string());
      if (name.ends_with("_index")) CHECK(e["args"]["sort_index"].is_number_integer());
      continue;
    }
    REQUIRE(e.contains("ts"));
    REQUIRE(e["ts"].is_number());
    CHECK(e["ts"].get<double>() >= 0);
    if (ph == "X") {
      REQUIRE(e.contains("dur"));
      REQUIRE(e["dur"].is_number());
      CHECK(e["dur"].get<double>() >= 0);
      REQUIRE(e["tid"].is_number_integer());
      used_threads.insert({pid, e["tid"].get<int64_t>()});
      spans[{pid, e["tid"].get<int64_t>()}].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
    } else if (ph == "i") {
      REQUIRE(e["tid"].is_number_integer());
      CHECK((e["s"] == "t" || e["s"] == "p" || e["s"] == "g"));
      used_threads.insert({pid, e["tid"].get<int64_t>()});
    } else if (ph == "C") {
      REQUIRE(e["args"].is_object());
      CHECK(!e["args"].empty());
      for (const auto& [k, v] : e["args"].items()) CHECK(v.is_number());
    } else {
      FAIL("unexpected phase " << ph);
    }
    if (e.contains("args")) CHECK(e["args"].is_object());
  }
  for (const auto& t : used_threads) {
    CHECK(named_threads.count(t) == 1);
    CHECK(named_processes.count(t.first) == 1);
  }
  for (auto& entry : spans) {  // not a structured binding: clang 14 cannot capture those in INFO
    const auto& track = entry.first;
    auto& list = entry.second;
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i) {
      INFO("track pid " << track.first << " tid " << track.second << " at ts " << list[i].first);
      // ts and dur are rounded to the nanosecond: allow 1e-6 us of rounding.
      CHECK(list[i - 1].first + list[i - 1].second <= list[i].first + 1e-6);
    }
  }
  return events;
}

double span_dur(const json& events, int tid, const std::string& name, size_t nth) {
  size_t seen = 0;
  for (const auto& e : events)
    if (e["ph"] == "X" && e["pid"] == 1 && e["tid"] == tid && e["name"] == name && seen++ == nth)
      return e["dur"].get<double>();
  throw std::runtime_error("no such span");
}

}  // namespace

TEST_CASE("observing a run changes neither its result hash nor its outputs") {
  for (const char* policy : {"bsp", "ssp", "dssp", "essp"}) {
    json j = stalesim::testing::tiny_math_json();
    j["policy"]["type"] = policy;
    if (std::string(policy) == "bsp") j["policy"].erase("staleness");
    if (std::string(policy) == "dssp") j["policy"]["range"] = 4;
    const Scenario s = stalesim::testing::scenario(j);
    const OutputFiles plain = render_outputs(s, run_scenario(s));
    const Traced t = run_traced(s);
    const OutputFiles seen = render_outputs(s, t.result);
    CHECK(plain.result_hash == seen.result_hash);
    CHECK(plain.text("summary.json") == seen.text("summary.json"));
    CHECK(plain.text("metrics.csv") == seen.text("metrics.csv"));
    CHECK(plain.text("decisions.csv") == seen.text("decisions.csv"));
  }
}

TEST_CASE("the quick-start scenario's trace passes a schema check of the Trace Event format") {
  const std::vector<Override> sets = {parse_override("stop.virtual_time_s=0.4"),
                                      parse_override("eval.every_s=0.1"),
                                      parse_override("eval.test_samples=200")};
  const Scenario s = load_scenario_file("scenarios/quickstart.json", sets);
  TraceOptions window;
  window.from = SimTime::from_seconds(0.1);
  window.to = SimTime::from_seconds(0.3);
  const Traced t = run_traced(s, window);
  const json events = check_trace_schema(t.trace);
  // One named track per worker plus the server's four, and the events a reader needs.
  std::set<std::string> names, threads;
  double first = 1e300, last = 0;
  for (const auto& e : events) {
    names.insert(e["name"].get<std::string>());
    if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") {
      first = std::min(first, e["ts"].get<double>());
      last = std::max(last, e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  CHECK(threads == std::set<std::string>{"worker 0 (gtx1060)", "worker 1 (gtx1060)", "worker 2 (gtx1080ti)",
                                         "worker 3 (gtx1080ti)", "updates", "link in (pushes)",
                                         "link out (pulls)", "policy"});
  for (const char* n : {"compute", "push", "pull", "update", "applied gradient", "accuracy", "loss"})
    CHECK_MESSAGE(names.count(n) == 1, n);
  // ts in microseconds of virtual time, cut to the window [0.1 s, 0.3 s).
  CHECK(first == doctest::Approx(0.1e6));
  CHECK(last == doctest::Approx(0.3e6));
  const json doc = json::parse(t.trace);
  CHECK(doc["otherData"]["truncated"] == false);
  CHECK(doc["otherData"]["window_from_s"] == 0.1);
}

TEST_CASE("trace spans have the durations the cost model gives, in microseconds") {
  const Traced t = run_traced(stalesim::testing::scenario(straggler_json("bsp")));
  const json events = check_trace_schema(t.trace);
  CHECK(span_dur(events, 0, "compute", 0) == 1250.0);  // gtx1060: 1.25 ms
  CHECK(span_dur(events, 1, "compute", 0) == doctest::Approx(605.093).epsilon(1e-6));
  // BSP: each gtx1080ti waits for the gtx1060 every clock.
  CHECK(t.explain.find("worker 1 waits at clock 1: slowest is worker 0 at clock 0, BSP (s = 0)") !=
        std::string::npos);
}

TEST_CASE("a trace past its size limit is cut, stays valid, and says so") {
  TraceOptions small;
  small.max_bytes = 6000;
  json j = straggler_json("bsp");
  j["stop"]["max_updates"] = 300;
  TraceRecorder trace("straggler", small);
  RunOptions ro;
  ro.observer = &trace;
  run_scenario(stalesim::testing::scenario(j), ro);
  CHECK(trace.truncated());
  const std::string text = trace.json();
  CHECK(text.size() <= 6000);
  check_trace_schema(text);
  CHECK(json::parse(text)["otherData"]["truncated"] == true);
  CHECK(trace.truncation_message().find("--trace-max-mb") != std::string::npos);
  CHECK(trace.truncation_message().find("--trace-window FROM:TO") != std::string::npos);
}

TEST_CASE("trace windows are parsed strictly") {
  TraceOptions o;
  parse_trace_window("1.5:2", o);
  CHECK(o.from == SimTime::from_seconds(1.5));
  CHECK(o.to == SimTime::from_seconds(2));
  parse_trace_window(":2", o);
  CHECK(o.from == SimTime::zero());
  parse_trace_window("3:", o);
  CHECK(o.to == SimTime::max());
  CHECK_THROWS_WITH_AS(parse_trace_window("2", o),
                       "expected FROM:TO in virtual seconds (e.g. 0:2.5), got '2'", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_trace_window("2:1", o), "TO must be greater than FROM, got '2:1'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_trace_window("a:1", o),
                       "expected FROM:TO with seconds >= 0 (e.g. 0:2.5), got 'a' in 'a:1'",
                       std::invalid_argument);
  CHECK(parse_duration("5s") == SimTime::from_seconds(5));
  CHECK(parse_duration("250ms") == SimTime::from_seconds(0.25));
  CHECK(parse_duration("2.5") == SimTime::from_seconds(2.5));
  CHECK_THROWS_WITH_AS(parse_duration("-1s"),
                       "expected a duration from 1 ns to 1e9 s such as 5s, 250ms or 2.5, got '-1s'",
                       std::invalid_argument);
}

// Hand-checked (see straggler_json): each worker's first request reaches the server at 50 us; the
// server link sends the parameters to workers 0, 1, 2 in turn (3.2 us each, the worker's link
// carrying them at the same time, cut-through), so they arrive at 103.2, 106.4 and 109.6 us.
// Worker 1's push leaves at 106.4 + 605.093 = 711.493 us; its first byte reaches the server 50 us
// later and it is in 3.2 us after that: applied at 764.693 us. BSP holds it at clock 1 while
// worker 0 (applied at 103.2 + 1250 + 53.2 = 1406.4 us) is at clock 0. It waits 1406.4 - 764.693
// = 641.707 us.
TEST_CASE("explain logs each BSP wait and resume with its reason") {
  const Traced t = run_traced(stalesim::testing::scenario(straggler_json("bsp")));
  CHECK(t.explain ==
        "# stalesim explain: straggler: policy bsp, BSP (s = 0); 3 workers. Virtual seconds; clock = "
        "iterations pushed. Lists every wait, resume and DSSP controller call; a worker allowed to go "
        "on at once is not listed.\n"
        "t=0.000765 s  worker 1 waits at clock 1: slowest is worker 0 at clock 0, BSP (s = 0)\n"
        "t=0.000768 s  worker 2 waits at clock 1: slowest is worker 0 at clock 0, BSP (s = 0)\n"
        "t=0.001406 s  worker 1 resumes at clock 1 after waiting 0.000642 s: the slowest worker is now "
        "at clock 1\n"
        "t=0.001406 s  worker 2 resumes at clock 1 after waiting 0.000639 s: the slowest worker is now "
        "at clock 1\n"
        "t=0.002121 s  worker 1 waits at clock 2: slowest is worker 0 at clock 1, BSP (s = 0)\n"
        "t=0.002124 s  worker 2 waits at clock 2: slowest is worker 0 at clock 1, BSP (s = 0)\n"
        "t=0.002763 s  worker 1 resumes at clock 2 after waiting 0.000642 s: the slowest worker is now "
        "at clock 2\n"
        "t=0.002763 s  worker 2 resumes at clock 2 after waiting 0.000639 s: the slowest worker is now "
        "at clock 2\n"
        "t=0.003477 s  worker 1 waits at clock 3: slowest is worker 0 at clock 2, BSP (s = 0)\n"
        "t=0.003481 s  worker 2 waits at clock 3: slowest is worker 0 at clock 2, BSP (s = 0)\n"
        "# end at t=0.004119 s: 9 updates, 6 waits (2 still waiting), 0 DSSP controller calls (0 "
        "granted extra clocks)\n");
}

// The DSSP case, checked by hand at the first grant: worker 0 pushes every 1250 + 53.2 + 53.2 =
// 1356.4 us (I_s; each message 3.2 us on both links at once, plus 50 us latency), last at 2762.8
// us, so S_j = 2762.8 + j x 1356.4 and S_3 = 6832.0 us; worker 1's last two pushes are 1289.7 us
// apart (I_f: 711.5 us an iteration, plus the 575 us it was held and 3.2 us queued behind worker
// 0's pull on the shard link), the last at 3477.7 us, so F_3 = 7346.8 us; |F_3 - S_3| = 515 us is
// the smallest |F_k - S_j| (F_0..F_2 are 642, 648 and 582 us from their nearest S_j): r* = 3.
const std::string DSSP_EXPLAIN =
    "# stalesim explain: straggler: policy dssp, s_L = 1, r_max = 3; 3 workers. Virtual seconds; "
    "clock = iterations pushed. Lists every wait, resume and DSSP controller call; a worker "
    "allowed to go on at once is not listed.\n"
    "t=0.002188 s  DSSP: worker 1 (the fastest, at clock 3) is 2 clocks ahead of worker 0 (clock "
    "1), beyond s_L: I_f = 0.000711 s, I_s = 0.000781 s; its push F_0 = 0.002188 s is the closest "
    "to worker 0's S_1 = 0.002188 s (predicted wait 0.000000 s): grants none\n"
    "t=0.002188 s  worker 1 waits at clock 3: slowest is worker 0 at clock 1, s_L = 1, r_max = 3; "
    "the controller granted none\n"
    "t=0.002191 s  DSSP: worker 2 (the fastest, at clock 3) is 2 clocks ahead of worker 0 (clock "
    "1), beyond s_L: I_f = 0.000711 s, I_s = 0.000784 s; its push F_0 = 0.002191 s is the closest "
    "to worker 0's S_1 = 0.002191 s (predicted wait 0.000000 s): grants none\n"
    "t=0.002191 s  DSSP: worker 1 (the fastest, at clock 3) is 2 clocks ahead of worker 0 (clock "
    "1), beyond s_L: I_f = 0.000711 s, I_s = 0.000784 s; its push F_0 = 0.002188 s is the closest "
    "to worker 0's S_1 = 0.002191 s (predicted wait 0.000003 s): grants none\n"
    "t=0.002191 s  worker 2 waits at clock 3: slowest is worker 0 at clock 1, s_L = 1, r_max = 3; "
    "the controller granted none\n"
    "t=0.002763 s  worker 1 resumes at clock 3 after waiting 0.000575 s: the slowest worker is now"
    " at clock 2\n"
    "t=0.002763 s  worker 2 resumes at clock 3 after waiting 0.000572 s: the slowest worker is now"
    " at clock 2\n"
    "t=0.003477 s  DSSP: worker 1 (the fastest, at clock 4) is 2 clocks ahead of worker 0 (clock "
    "2), beyond s_L: I_f = 0.001290 s, I_s = 0.001356 s; its push F_3 = 0.007347 s is the closest "
    "to worker 0's S_3 = 0.006832 s (predicted wait 0.000515 s): grants 3 extra clocks\n"
    "t=0.003481 s  DSSP: worker 2 (the fastest, at clock 4) is 2 clocks ahead of worker 0 (clock "
    "2), beyond s_L: I_f = 0.001290 s, I_s = 0.001356 s; its push F_3 = 0.007350 s is the closest "
    "to worker 0's S_3 = 0.006832 s (predicted wait 0.000518 s): grants 3 extra clocks\n"
    "t=0.005612 s  DSSP: worker 1 (the fastest, at clock 7) is 3 clocks ahead of worker 0 (clock "
    "4), beyond s_L: I_f = 0.000711 s, I_s = 0.001356 s; its push F_2 = 0.007035 s is the closest "
    "to worker 0's S_1 = 0.006832 s (predicted wait 0.000203 s): grants 2 extra clocks\n"
    "t=0.005615 s  DSSP: worker 2 (the fastest, at clock 7) is 3 clocks ahead of worker 0 (clock "
    "4), beyond s_L: I_f = 0.000711 s, I_s = 0.001356 s; its push F_2 = 0.007038 s is the closest "
    "to worker 0's S_1 = 0.006832 s (predicted wait 0.000206 s): grants 2 extra clocks\n"
    "t=0.007035 s  DSSP: worker 1 (the fastest, at clock 9) is 4 clocks ahead of worker 0 (clock "
    "5), beyond s_L: I_f = 0.000711 s, I_s = 0.001356 s; its push F_1 = 0.007746 s is the closest "
    "to worker 0's S_1 = 0.008188 s (predicted wait 0.000442 s): grants 1 extra clock\n"
    "t=0.007038 s  DSSP: worker 2 (the fastest, at clock 9) is 4 clocks ahead of worker 0 (clock "
    "5), beyond s_L: I_f = 0.000711 s, I_s = 0.001356 s; its push F_1 = 0.007750 s is the closest "
    "to worker 0's S_1 = 0.008188 s (predicted wait 0.000439 s): grants 1 extra clock\n"
    "# end at t=0.007746 s: 24 updates, 2 waits (0 still waiting), 9 DSSP controller calls (6 "
    "granted extra clocks)\n";
// 0.1 ms cells. Worker 1: parameters arrive at 106.4 us (cell 0 mostly pull), compute to 692.2 us
// (cells 1 to 6), push applied and blocked at 745.4 us (cell 7, marked), waits until 1406.4 us
// (cells 8 to 13); 3 waits of 661 us in 5 ms: 40%. The run stops after 9 updates at 4.1192 ms.
const std::string TIMELINE_PLAIN =
    "timeline of straggler: bsp, BSP (s = 0); 3 workers; 0 to 0.005 s, one cell = 0.1 ms\n"
    "              0ms         1.25ms       2.5ms       3.75ms     5ms\n"
    "w0 gtx1060   │▄█████████████▄████████████▄█████████████▄        │ 3 updates, 0 blocked, 0% "
    "waiting\n"
    "w1 gtx1080ti │▄██████▼░░░░░░▄██████▼░░░░░░██████▼░░░░░░░        │ 3 updates, 3 blocked (3 for"
    " w0), 39% waiting\n"
    "w2 gtx1080ti │▄██████▼░░░░░░▄██████▼░░░░░░██████▼░░░░░░░        │ 3 updates, 3 blocked (3 for"
    " w0), 38% waiting\n"
    "█ compute  ▄ communicate (push, pull)  ░ wait  ▼ blocked by the policy here (for wN: waiting "
    "for the slowest worker, wN)  (the run ended at 0.0041192 s)\n";

TEST_CASE("explain shows DSSP's controller calls with the predicted push times that chose r") {
  const Traced t = run_traced(stalesim::testing::scenario(straggler_json("dssp")));
  CHECK(t.explain == DSSP_EXPLAIN);
}

TEST_CASE("the trace names the worker each blocked worker waits for: the slow GTX 1060 under BSP") {
  const Traced t = run_traced(stalesim::testing::scenario(straggler_json("bsp")));
  size_t blocked = 0;
  const json doc = json::parse(t.trace);
  for (const auto& e : doc["traceEvents"]) {
    if (e["name"] != "blocked") continue;
    ++blocked;
    INFO(e.dump());
    CHECK(e["tid"] != 0);  // the fast workers
    CHECK(e["args"]["waits_for"] == 0);
    CHECK(e["args"]["why"].get<std::string>().find("slowest is worker 0") != std::string::npos);
  }
  CHECK(blocked > 0);
}

TEST_CASE("the timeline of BSP with one slow worker shows the fast workers waiting") {
  TimelineRecorder rec(SimTime::from_seconds(0.005));
  RunOptions ro;
  ro.observer = &rec;
  run_scenario(stalesim::testing::scenario(straggler_json("bsp")), ro);
  CHECK(rec.render("straggler", 50, false) == TIMELINE_PLAIN);
  // Colours are ANSI escapes around the same cells, and only when asked.
  const std::string coloured = rec.render("straggler", 50, true);
  CHECK(coloured.find("\033[33m") != std::string::npos);
  CHECK(TIMELINE_PLAIN.find('\033') == std::string::npos);
}
