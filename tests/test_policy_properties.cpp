// Property tests of the dynamic and eager policies (DESIGN.md sections 4 and 6): each policy's
// defining bound over many seeds and speed mixes, and the equalities that tie them to SSP.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "sim/output/csv_observers.hpp"
#include "sim/policies/dssp.hpp"
#include "sim/worker/pull.hpp"
#include "tests/sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;

namespace {
const std::pair<int, int> kMixes[] = {{1, 3}, {3, 1}, {2, 2}, {1, 1}};
}

TEST_CASE("the DSSP controller grants the extra clocks that end nearest the slowest's next push") {
  // Worker 0 fast (pushes every 10 ms), worker 1 slow (every 35 ms). s_L = 1, r_max = 5.
  DsspPolicy p(1, 5, DsspGrant::kBounded, 2);
  ClockTable t(2);
  auto push = [&](int32_t w, int64_t ms) {
    t.advance(w);
    p.on_push(w, SimTime::from_ns(ms * 1'000'000), t);
    return p.may_start(w, t);
  };
  CHECK(push(1, 35));  // slow: clock 1, gap 0
  CHECK(push(0, 10));
  CHECK(push(0, 20));  // gap 1 = s_L: SSP lets it go
  CHECK(push(1, 70));  // slow: last two pushes 35, 70: interval 35
  // Fast at clock 3 (gap 1 after the slow push): still within s_L.
  CHECK(push(0, 30));
  // Fast at clock 4, gap 2 > s_L: the controller runs. F_k = 40 + 10k ms (k = 0..5),
  // S_j = 70 + 35j ms (j = 1..5); the nearest pair is F_5 = 90 and S_1 = 105, 15 ms apart: r* = 5.
  CHECK(push(0, 40));
  REQUIRE(p.decisions().size() == 1);
  CHECK(p.decisions()[0].granted == 5);
  CHECK(p.decisions()[0].fastest_interval == SimTime::from_ns(10'000'000));
  CHECK(p.decisions()[0].slowest_interval == SimTime::from_ns(35'000'000));
  CHECK(p.decisions()[0].predicted_wait == SimTime::from_ns(15'000'000));
  // Bounded: the grant was the first extra clock, so four more pushes go on without asking,
  // reaching gap s_L + r_max = 6.
  for (int64_t ms : {50, 60, 70, 80}) CHECK(push(0, ms));
  CHECK(t.clock(0) - t.min_clock() == 6);
  // The next push would start a clock 7 ahead: the capped controller may grant nothing; it waits.
  CHECK_FALSE(push(0, 90));
  CHECK(p.decisions().size() == 1);
}

TEST_CASE("decisions.csv is written by an observer, one row per controller call the policy records") {
  // The pushes of the case above up to its controller call (r* = 5 at t = 40 ms, gap 2, bounded
  // threshold gap - 1 + r* = 6), read back by PolicyRecorder when the run ends.
  DsspPolicy p(1, 5, DsspGrant::kBounded, 2);
  ClockTable t(2);
  PolicyRecorder rec;
  rec.start(t, p, {});
  for (const auto& [w, ms] : {std::pair{1, 35}, {0, 10}, {0, 20}, {1, 70}, {0, 30}, {0, 40}}) {
    t.advance(w);
    p.on_push(w, SimTime::from_ns(ms * int64_t{1'000'000}), t);
    p.may_start(w, t);
  }
  rec.finish(SimTime::from_ns(50'000'000));
  REQUIRE(p.decisions().size() == 1);
  CHECK(rec.take_decisions_csv() ==
        "virtual_time_s,worker,clock,granted,fastest_interval_s,slowest_interval_s,predicted_wait_s,gap,"
        "effective_threshold\n0.04,0,4,5,0.01,0.035,0.015,2,6\n");
  CHECK(rec.take_facts().at("decisions") == 1);
  // A policy without a controller: no decisions.csv (empty text) and no facts.
  PolicySpec asp;
  asp.type = PolicyType::kAsp;
  const auto q = make_policy(asp, 2);
  PolicyRecorder none;
  none.start(t, *q, {});
  none.finish(SimTime::from_ns(50'000'000));
  CHECK(none.take_decisions_csv().empty());
  CHECK(none.take_facts().is_null());
}

TEST_CASE("DSSP never lets the gap exceed s_L + r_max (bounded) or s_L + r_max + 1 (literal)") {
  bool literal_used_its_extra_clock = false;
  bool bounded_used_its_range = false;
  for (const char* grant : {"bounded", "literal"}) {
    for (int64_t s : {0, 1, 3}) {
      for (int64_t r : {1, 4, 12}) {
        for (uint64_t seed : {1, 2, 3}) {
          for (auto [slow, fast] : kMixes) {
            auto j = time_only_json(slow, fast);
            j["seed"] = seed;
            j["policy"] = {{"type", "dssp"}, {"staleness", s}, {"range", r}, {"dssp_grant", grant}};
            j["cluster"]["jitter"] = {{"type", "lognormal"}, {"sigma", 0.4}};
            j["stop"] = {{"max_updates", 3000}};
            const RunResult res = run(j);
            CAPTURE(grant);
            CAPTURE(s);
            CAPTURE(r);
            CAPTURE(seed);
            REQUIRE(res.status == RunStatus::kCompleted);
            const bool literal = std::string(grant) == "literal";
            CHECK(res.max_clock_gap <= s + r + (literal ? 1 : 0));
            CHECK(res.staleness.max() <= s + r + (literal ? 1 : 0));
            if (literal && res.max_clock_gap == s + r + 1) literal_used_its_extra_clock = true;
            if (!literal && res.max_clock_gap == s + r) bounded_used_its_range = true;
          }
        }
      }
    }
  }
  // The bounds are reached, so the checks above are not vacuous.
  CHECK(literal_used_its_extra_clock);
  CHECK(bounded_used_its_range);
}

TEST_CASE("DSSP with r_max = 0 gives exactly SSP(s_L)'s result") {
  for (int64_t s : {0, 2}) {
    auto ssp = tiny_math_json();
    ssp["policy"] = {{"type", "ssp"}, {"staleness", s}};
    auto dssp = tiny_math_json();
    dssp["policy"] = {{"type", "dssp"}, {"staleness", s}, {"range", 0}};
    const Scenario a = scenario(ssp), b = scenario(dssp);
    const RunResult ra = run_scenario(a), rb = run_scenario(b);
    const OutputFiles fa = render_outputs(a, ra), fb = render_outputs(b, rb);
    CHECK(fa.text("metrics.csv") == fb.text("metrics.csv"));
    CHECK(fa.text("staleness.csv") == fb.text("staleness.csv"));
    CHECK(fa.result_hash == fb.result_hash);
    CHECK(ra.workers == rb.workers);
  }
}

TEST_CASE("DSSP records every controller decision and its grants in the summary") {
  auto j = time_only_json(2, 2);
  j["policy"] = {{"type", "dssp"}, {"staleness", 1}, {"range", 6}};
  const Scenario s = scenario(j);
  const RunResult r = run_scenario(s);
  REQUIRE(r.policy_facts.is_object());
  const auto& hist = r.policy_facts.at("grants_histogram");
  CHECK(hist.size() == 7);
  int64_t total = 0;
  for (const auto& h : hist) total += h.get<int64_t>();
  CHECK(total == r.policy_facts.at("decisions").get<int64_t>());
  CHECK(total > 0);
  // One CSV line per decision after the header.
  CHECK(std::count(r.recording("decisions.csv").begin(), r.recording("decisions.csv").end(), '\n') ==
        total + 1);
  CHECK(r.recording("decisions.csv").rfind("virtual_time_s,worker,clock,granted,", 0) == 0);
  const auto summary = nlohmann::json::parse(render_outputs(s, r).text("summary.json"));
  CHECK(summary.at("policy").at("type") == "dssp");
}

TEST_CASE("lazy SSP and ESSP keep the clock gap and the staleness within s, without deadlock") {
  for (const char* type : {"lazy", "essp"}) {
    for (int64_t s : {0, 1, 4}) {
      for (uint64_t seed : {1, 2, 3}) {
        for (auto [slow, fast] : kMixes) {
          auto j = time_only_json(slow, fast);
          j["seed"] = seed;
          if (std::string(type) == "lazy")
            j["policy"] = {{"type", "ssp"}, {"staleness", s}, {"cache", "lazy"}};
          else
            j["policy"] = {{"type", "essp"}, {"staleness", s}};
          j["cluster"]["jitter"] = {{"type", "lognormal"}, {"sigma", 0.4}};
          j["stop"] = {{"max_updates", 2000}};
          const RunResult r = run(j);
          CAPTURE(type);
          CAPTURE(s);
          CAPTURE(seed);
          REQUIRE(r.status == RunStatus::kCompleted);
          CHECK(r.server_updates == 2000);
          CHECK(r.max_clock_gap <= s);
          CHECK(r.staleness.max() <= s);
          CHECK(r.bytes_pull == r.messages_pull * 40000);  // every fetch or push is a full copy
        }
      }
    }
  }
}

TEST_CASE("a lone worker sees its own writes: lazy SSP and ESSP train exactly as pulling every clock") {
  auto pull = tiny_math_json();
  pull["cluster"]["workers"] = {{{"profile", "gtx1060"}, {"count", 1}}};
  pull["policy"] = {{"type", "ssp"}, {"staleness", 2}};
  const RunResult base = run(pull);
  auto lazy = pull;
  lazy["policy"]["cache"] = "lazy";
  auto essp = pull;
  essp["policy"] = {{"type", "essp"}, {"staleness", 2}};
  for (const auto& j : {lazy, essp}) {
    const RunResult r = run(j);
    CAPTURE(j["policy"].dump());
    CHECK(r.final_params == base.final_params);
    REQUIRE(r.metrics.size() >= 1);
    // The final evaluation is of identical parameters (the row times differ: a cached worker
    // computes while its push is in flight, so the same updates end sooner).
    CHECK(r.metrics.back().test_loss == base.metrics.back().test_loss);
    CHECK(r.end_time < base.end_time);
  }
}

TEST_CASE(
    "lazy SSP fetches only when its copy is too old, and ESSP pushes a copy to every worker per clock") {
  auto j = time_only_json(2, 2);
  j["policy"] = {{"type", "ssp"}, {"staleness", 3}};
  j["stop"] = {{"max_updates", 4000}};
  const RunResult pull = run(j);
  j["policy"]["cache"] = "lazy";
  const RunResult lazy = run(j);
  // One fetch per clock and the first of each worker, less the one the stop cut off.
  CHECK(pull.messages_pull == pull.server_updates + 3);
  CHECK(lazy.messages_pull < pull.messages_pull);
  // On a homogeneous cluster, where no worker lives at the bound, a loose bound rarely needs a
  // fetch: about one every s clocks.
  auto homogeneous = time_only_json(0, 4);
  homogeneous["policy"] = {{"type", "ssp"}, {"staleness", 50}, {"cache", "lazy"}};
  homogeneous["stop"] = {{"max_updates", 4000}};
  const RunResult loose = run(homogeneous);
  CHECK(loose.messages_pull < pull.messages_pull / 10);
  CHECK(loose.max_clock_gap <= 50);
  j["policy"] = {{"type", "essp"}, {"staleness", 3}};
  const RunResult essp = run(j);
  // The first copy for each of the 4 workers, then 4 per rise of the server clock (4000 updates
  // by 4 workers: at most 1000 clocks, at least ~1000 - s rises).
  CHECK(essp.messages_pull % 4 == 0);
  CHECK(essp.messages_pull >= 4 * (1 + 1000 - 3 - 1));
  CHECK(essp.messages_pull <= 4 * (1 + 1000));
}

TEST_CASE("every policy trains the tiny MLP without deadlock") {
  const nlohmann::json policies[] = {{{"type", "bsp"}},
                                     {{"type", "asp"}},
                                     {{"type", "ssp"}, {"staleness", 2}},
                                     {{"type", "ssp"}, {"staleness", 2}, {"cache", "lazy"}},
                                     {{"type", "essp"}, {"staleness", 2}},
                                     {{"type", "dssp"}, {"staleness", 1}, {"range", 4}}};
  for (const auto& p : policies) {
    auto j = tiny_math_json();
    j["policy"] = p;
    j["stop"] = {{"max_updates", 1500}};
    const RunResult r = run(j);
    CAPTURE(p.dump());
    CHECK(r.status == RunStatus::kCompleted);
    CHECK(*r.metrics.back().test_accuracy > 0.85);
  }
}

TEST_CASE("VAP never lets a worker's in-transit updates exceed the value bound") {
  bool held = false;
  for (double v : {0.02, 0.05, 0.2}) {
    for (uint64_t seed : {1, 2, 3}) {
      for (auto [slow, fast] : kMixes) {
        auto j = tiny_math_json();
        j["seed"] = seed;
        j["cluster"]["workers"] = nlohmann::json::array();
        if (slow) j["cluster"]["workers"].push_back({{"profile", "gtx1060"}, {"count", slow}});
        if (fast) j["cluster"]["workers"].push_back({{"profile", "gtx1080ti"}, {"count", fast}});
        j["policy"] = {{"type", "vap"}, {"value_bound", v}};
        j["stop"] = {{"max_updates", 600}};
        const RunResult r = run(j);
        CAPTURE(v);
        CAPTURE(seed);
        REQUIRE(r.status == RunStatus::kCompleted);
        CHECK(r.server_updates == 600);
        CHECK(r.policy_facts.at("max_in_transit_norm").get<double>() <= v);
        if (r.policy_facts.at("holds").get<int64_t>() > 0) held = true;
      }
    }
  }
  CHECK(held);  // the bound did bind somewhere, so the check above is not vacuous
}

TEST_CASE("VAP with a bound no update reaches behaves exactly as ASP") {
  auto asp = tiny_math_json();
  asp["policy"] = {{"type", "asp"}};
  auto loose = tiny_math_json();
  loose["policy"] = {{"type", "vap"}, {"value_bound", 1e9}};
  const RunResult a = run(asp), b = run(loose);
  CHECK(a.final_params == b.final_params);
  CHECK(a.metrics == b.metrics);
  CHECK(b.policy_facts.at("holds") == 0);
}

// ---- The worked example of CONTRIBUTING.md ----------------------------------------------------
// tests/contrib/constant-delay.patch adds the toy policy constant-delay to the simulator (three
// source files). The class below is the patch's own, kept in step with it by the CTest
// contrib_example_patch (tests/contrib/check_patch.sh), so its defining property is checked here
// through the SyncPolicy interface whether or not the patch is applied.

namespace {

class ConstantDelayPolicy final : public SyncPolicy {
 public:
  // REQUIRES: delay >= 0, workers >= 1.
  ConstantDelayPolicy(int64_t delay, int32_t workers)
      : d_(std::min<int64_t>(delay, workers - 1)), free_at_(static_cast<size_t>(workers), 0) {}
  bool may_start(int32_t w, const ClockTable&) override {
    return updates_ >= free_at_[static_cast<size_t>(w)];
  }
  void on_push(int32_t w, SimTime, const ClockTable&) override {
    free_at_[static_cast<size_t>(w)] = ++updates_ + d_;
  }
  bool recheck_every_push() const override { return true; }  // any push may release a waiting worker
  std::optional<int64_t> clock_bound() const override { return std::nullopt; }
  std::string bound_text() const override { return "d = " + std::to_string(d_) + " updates"; }

 private:
  int64_t d_;
  int64_t updates_ = 0;           // updates applied so far
  std::vector<int64_t> free_at_;  // worker w may start again once updates_ >= free_at_[w]
};

}  // namespace

TEST_CASE("constant-delay (CONTRIBUTING.md's example): d updates of others between two of a worker's") {
  // Workers push in a random order among those the policy lets go; as in the simulation, the
  // pusher asks first, then every waiting worker is re-checked (recheck_every_push).
  for (int32_t n : {1, 2, 3, 5})
    for (int64_t d : {0, 1, 2, 4, 9}) {
      CAPTURE(n);
      CAPTURE(d);
      ConstantDelayPolicy p(d, n);
      REQUIRE(p.recheck_every_push());
      const int64_t bound = std::min<int64_t>(d, n - 1);  // capped at workers - 1
      ClockTable clocks(n);
      Rng rng(static_cast<uint64_t>(100 * n + d));
      std::vector<bool> running(static_cast<size_t>(n), true);
      std::vector<int64_t> last(static_cast<size_t>(n), -1);  // the index of w's latest update
      int64_t updates = 0, min_gap = std::numeric_limits<int64_t>::max(), refused = 0;
      for (int step = 0; step < 3000; ++step) {
        std::vector<int32_t> can;
        for (int32_t w = 0; w < n; ++w)
          if (running[static_cast<size_t>(w)]) can.push_back(w);
        REQUIRE_FALSE(can.empty());  // never every worker waiting: no deadlock
        const int32_t w = can[static_cast<size_t>(rng.below(can.size()))];
        if (last[static_cast<size_t>(w)] >= 0)
          min_gap = std::min(min_gap, updates - last[static_cast<size_t>(w)] - 1);
        last[static_cast<size_t>(w)] = updates++;
        clocks.advance(w);
        p.on_push(w, SimTime::from_ns(step), clocks);
        running[static_cast<size_t>(w)] = p.may_start(w, clocks);
        if (!running[static_cast<size_t>(w)]) ++refused;
        for (int32_t v = 0; v < n; ++v)
          if (v != w && !running[static_cast<size_t>(v)])
            running[static_cast<size_t>(v)] = p.may_start(v, clocks);
      }
      // Between two updates of one worker, at least `bound` updates of the others; and the bound
      // is met exactly somewhere (the worker released by the d-th update is often the next to push).
      CHECK(min_gap >= bound);
      if (n > 1) CHECK(min_gap == bound);
      CHECK((refused > 0) == (bound > 0));  // d = 0 (or one worker) is ASP: never a wait
    }
}

// ---- The worked example of a policy with its own data flow ------------------------------------
// tests/contrib/fetch-every.patch adds the toy policy fetch-every(k) and its worker protocol (four
// source files). The protocol class below is the patch's own, kept in step with it by the CTest
// contrib_example_patch; the test runs it in place of ASP's pull protocol (Simulation's
// `protocol` argument), whether or not the patch is applied.

namespace {

class FetchEveryProtocol final : public PullProtocol {
 public:
  // REQUIRES: k >= 1.
  FetchEveryProtocol(WorkerCore& c, int64_t k) : PullProtocol(c), k_(k) {}
  void on_compute_done(Worker& w) override {
    // w's clock counts its applied pushes; the push now going asks for the next clock's
    // parameters only when that clock is a multiple of k.
    w.skip_fetch = (c_.clocks().clock(w.id) + 1) % k_ != 0;
    send_push(w);
  }
  bool pool_allowed() const override { return false; }  // a worker's copy outlives its grant

 private:
  int64_t k_;
};

template <int64_t K>
std::unique_ptr<WorkerProtocol> fetch_every(WorkerCore& c) {
  return std::make_unique<FetchEveryProtocol>(c, K);
}

// Runs the tiny MLP under ASP with `protocol` (null: ASP's own), recording every gradient.
RunResult run_asp_with(ProtocolFactory protocol) {
  auto j = tiny_math_json();
  j["policy"] = {{"type", "asp"}};
  const Scenario sc = scenario(j);
  const DataSplit data = load_data(sc);
  Simulation sim(sc, data, protocol);
  RunOptions opt;
  opt.record_gradients = true;
  opt.defer_gradients = false;  // a deferred gradient lets go of the worker's copy at its grant
  return sim.run(opt);
}

}  // namespace

TEST_CASE("fetch-every (CONTRIBUTING.md's data-flow example): a worker reads new parameters every k clocks") {
  const RunResult asp = run_asp_with(nullptr);
  SUBCASE("k = 1 is ASP, bit for bit") {
    const RunResult one = run_asp_with(fetch_every<1>);
    CHECK(one.final_params == asp.final_params);
    CHECK(one.metrics == asp.metrics);
    CHECK(one.skipped_fetch == 0);
  }
  SUBCASE("k = 3: the j-th gradient of a worker is computed on what it read at clock j - j % 3") {
    const RunResult r = run_asp_with(fetch_every<3>);
    // gradients.csv: virtual_time_s,worker,version_read,version_apply,missed_updates,step
    std::istringstream in(r.recording("gradients.csv"));
    std::string line;
    std::getline(in, line);
    std::map<int, std::vector<int64_t>> read;  // by worker: version_read of its gradients, in order
    while (std::getline(in, line)) {
      std::vector<std::string> cell;
      std::istringstream row(line);
      for (std::string c; std::getline(row, c, ',');) cell.push_back(c);
      REQUIRE(cell.size() == 6);
      read[std::stoi(cell[1])].push_back(std::stoll(cell[2]));
    }
    REQUIRE(read.size() == 4);
    int64_t gradients = 0, changes = 0;
    for (const auto& [worker, v] : read) {
      const int w = worker;  // a copy: clang 14 cannot capture a structured binding (CAPTURE does)
      CAPTURE(w);
      for (size_t j = 0; j < v.size(); ++j) {
        CHECK(v[j] == v[j - j % 3]);
        if (j % 3 == 0 && j > 0 && v[j] != v[j - 1]) ++changes;
      }
      gradients += static_cast<int64_t>(v.size());
    }
    CHECK(gradients == r.server_updates);
    CHECK(changes > 0);  // and it does read newer parameters at those clocks
    // A fetch at clocks 0, 3, 6, ...: the others are skipped (a "go on" instead of the copy).
    CHECK(r.skipped_fetch > 0);
    CHECK(r.messages_pull <= r.server_updates / 3 + 2 * 4);
    CHECK(r.messages_pull + r.skipped_fetch >= r.server_updates);
    CHECK(r.final_params != asp.final_params);
  }
}
