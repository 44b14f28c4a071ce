// The learning rules on hand-computed cases (DESIGN.md sections 5 and 6), and the equalities that
// tie them to one another in whole runs.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "sim/param_store.hpp"
#include "sim/rules/bfasgd.hpp"
#include "sim/rules/sasgd.hpp"
#include "sim/rules/scalar_step.hpp"
#include "sim/rules/server_optimizer.hpp"
#include "sim/rules/sgd.hpp"
#include "tests/sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;

namespace {

GradientInfo at_staleness(int64_t tau) { return GradientInfo{0, 10, 10 + tau, 0}; }

// One element through a rule: returns the update.
double update_of(LearningRule& r, float g, int64_t tau, float w = 0, float w_read = 0) {
  std::vector<float> u(1), grad{g}, now{w}, read{w_read};
  r.compute_update(u, grad, at_staleness(tau), now, read);
  return u[0];
}

OptimizerSpec spec(const char* rule) {
  OptimizerSpec s;
  s.rule = *enum_from_name<RuleType>(rule);
  s.lr = 0.1;
  return s;
}

}  // namespace

TEST_CASE("SGD steps by lr, or lr over the workers with the mean aggregate") {
  auto sum = make_rule(spec("sgd"), 4, 1);
  CHECK(update_of(*sum, 2.0f, 7) == doctest::Approx(0.2));
  auto s = spec("sgd");
  s.aggregate = Aggregate::kMean;
  CHECK(update_of(*make_rule(s, 4, 1), 2.0f, 0) == doctest::Approx(0.05));
}

TEST_CASE("SASGD divides the step by the staleness and leaves fresh gradients alone") {
  auto r = make_rule(spec("sasgd"), 4, 1);
  CHECK(update_of(*r, 2.0f, 0) == doctest::Approx(0.2));
  CHECK(update_of(*r, 2.0f, 1) == doctest::Approx(0.2));
  CHECK(update_of(*r, 2.0f, 4) == doctest::Approx(0.05));
  CHECK(update_of(*r, 2.0f, 10) == doctest::Approx(0.02));
  // tau = 0 gives SGD's update bit for bit.
  auto sgd = make_rule(spec("sgd"), 4, 1);
  CHECK(update_of(*r, 1.2345f, 0) == update_of(*sgd, 1.2345f, 0));
}

TEST_CASE("FASGD (paper form) damps by max(tau, 1) times the averaged standard deviation") {
  auto r = make_rule(spec("fasgd"), 1, 1);  // gamma = beta = 0.9, epsilon = 1e-4
  // g = 2: b = 0.2, n = 0.4, sigma = sqrt(0.4 - 0.04) = 0.6, sigma_bar = 0.06.
  CHECK(update_of(*r, 2.0f, 0) == doctest::Approx(0.1 * 2 / (1 * (0.06 + 1e-4))).epsilon(1e-5));
  // g = -1, tau = 3: b = 0.08, n = 0.46, sigma = sqrt(0.4536), sigma_bar = 0.054 + 0.1 sigma.
  const double sbar = 0.054 + 0.1 * std::sqrt(0.4536);
  CHECK(update_of(*r, -1.0f, 3) == doctest::Approx(0.1 * -1 / (3 * (sbar + 1e-4))).epsilon(1e-5));
  CHECK(dynamic_cast<FasgdRule&>(*r).mean_statistic() == doctest::Approx(sbar).epsilon(1e-6));
}

TEST_CASE("FASGD's epsilon keeps a zero gradient history finite") {
  auto r = make_rule(spec("fasgd"), 1, 1);
  CHECK(update_of(*r, 0.0f, 0) == 0.0);  // 0 / (0 + epsilon), not 0 / 0
  // A constant gradient: sigma tends to 0 and the step to lr g / (sigma_bar + epsilon), finite.
  double u = 0;
  for (int i = 0; i < 200; ++i) u = update_of(*r, 1.0f, 0);
  CHECK(std::isfinite(u));
  CHECK(u > 0);
}

TEST_CASE("FASGD's FRED variant divides by (tau + 1) and an average of |g| plus 0.001") {
  auto s = spec("fasgd");
  s.variant = FasgdVariant::kFred;
  auto r = make_rule(s, 1, 1);
  // a = 0.1 |2| = 0.2: 0.1 * 2 / (1 * 0.201).
  CHECK(update_of(*r, 2.0f, 0) == doctest::Approx(0.2 / 0.201).epsilon(1e-5));
  // a = 0.18 + 0.1 = 0.28, tau = 3: 0.1 * -1 / (4 * 0.281).
  CHECK(update_of(*r, -1.0f, 3) == doctest::Approx(-0.1 / (4 * 0.281)).epsilon(1e-5));
}

TEST_CASE("B-FASGD transmits with probability 1 / (1 + c / (v_bar + 1e-4))") {
  auto s = spec("bfasgd");
  s.c_fetch = 0.01;
  s.c_push = 0.5;
  BfasgdRule r(s, 1);
  CHECK(r.fetch_probability() == doctest::Approx(1.0 / (1.0 + 0.01 / 1e-4)));  // nothing seen yet
  update_of(r, 2.0f, 0);                                                       // sigma_bar = 0.06
  CHECK(r.fetch_probability() == doctest::Approx(1.0 / (1.0 + 0.01 / (0.06 + 1e-4))).epsilon(1e-5));
  CHECK(r.push_probability() == doctest::Approx(1.0 / (1.0 + 0.5 / (0.06 + 1e-4))).epsilon(1e-5));
}

TEST_CASE("DC-ASGD compensates with lambda g g (w - w_bak), constant or adaptive") {
  auto s = spec("dcasgd");
  s.adaptive = false;
  s.lambda = 2.0;
  auto c = make_rule(s, 1, 1);
  CHECK(c->needs_read_params());
  // 0.1 (0.5 + 2 * 0.25 * (1 - 0.5)).
  CHECK(update_of(*c, 0.5f, 3, 1.0f, 0.5f) == doctest::Approx(0.1 * 0.75).epsilon(1e-6));
  CHECK(update_of(*c, 0.5f, 3, 0.5f, 0.5f) == doctest::Approx(0.05).epsilon(1e-6));  // no delay
  s.adaptive = true;
  auto a = make_rule(s, 1, 1);
  // MS = 0.05 * 0.25 = 0.0125; lambda = 2 / sqrt(0.0125 + 1e-7).
  const double lambda = 2.0 / std::sqrt(0.0125 + 1e-7);
  CHECK(update_of(*a, 0.5f, 3, 1.0f, 0.5f) ==
        doctest::Approx(0.1 * (0.5 + lambda * 0.25 * 0.5)).epsilon(1e-5));
}

TEST_CASE("server momentum accumulates updates and softsync averages c gradients into one version") {
  Scenario sc = scenario(tiny_math_json());
  sc.optimizer.lr = 0.1;
  sc.optimizer.momentum = 0.5;
  ParamStore store(1);
  ServerOptimizer m(sc, 4, 1, true);
  const std::vector<float> g{1.0f};
  m.add(store, g, at_staleness(0), {});
  CHECK(store.peek()[0] == doctest::Approx(-0.1));
  m.add(store, g, at_staleness(0), {});  // v = 0.5 * 0.1 + 0.1
  CHECK(store.peek()[0] == doctest::Approx(-0.25));
  CHECK(store.version() == 2);

  sc.optimizer.momentum = 0;
  sc.policy.type = PolicyType::kSoftsync;
  sc.policy.n = 2;  // 4 workers: c = 2
  ParamStore soft(1);
  ServerOptimizer s(sc, 4, 1, true);
  CHECK(s.gradients_per_version() == 2);
  s.add(soft, std::vector<float>{1.0f}, at_staleness(0), {});
  CHECK(soft.version() == 0);
  CHECK(soft.peek()[0] == 0.0f);
  s.add(soft, std::vector<float>{3.0f}, at_staleness(0), {});
  CHECK(soft.version() == 1);
  CHECK(soft.peek()[0] == doctest::Approx(-0.2));  // the mean of 0.1 and 0.3
}

TEST_CASE("SASGD with every tau = 0 trains exactly as SGD") {
  auto sgd = tiny_math_json();
  sgd["cluster"]["workers"] = {{{"profile", "gtx1080ti"}, {"count", 1}}};  // alone: tau is always 0
  auto sasgd = sgd;
  sasgd["optimizer"]["rule"] = "sasgd";
  const RunResult a = run(sgd), b = run(sasgd);
  CHECK(b.missed_updates.max() == 0);
  CHECK(a.final_params == b.final_params);
  CHECK(a.metrics == b.metrics);
}

TEST_CASE("n-softsync with n = workers is ASP, and with n = 1 makes one version per workers gradients") {
  auto asp = tiny_math_json();
  asp["policy"] = {{"type", "asp"}};
  auto soft = tiny_math_json();
  soft["policy"] = {{"type", "softsync"}, {"n", 4}};
  const RunResult a = run(asp), b = run(soft);
  CHECK(a.final_params == b.final_params);
  CHECK(a.metrics == b.metrics);
  soft["policy"]["n"] = 1;
  const RunResult one = run(soft);
  CHECK(one.metrics.back().server_version == one.server_updates / 4);
  CHECK(*one.metrics.back().test_accuracy > 0.8);
}

TEST_CASE("B-FASGD that never skips is FASGD, and one that skips saves bytes truthfully") {
  auto fasgd = tiny_math_json();
  fasgd["policy"] = {{"type", "asp"}};
  fasgd["optimizer"] = {{"rule", "fasgd"}, {"lr", 0.005}, {"batch_size", 8}};
  auto never = fasgd;
  never["optimizer"]["rule"] = "bfasgd";
  never["optimizer"]["c_fetch"] = 0;
  never["optimizer"]["c_push"] = 0;
  const RunResult a = run(fasgd), b = run(never);
  CHECK(a.final_params == b.final_params);
  CHECK(b.skipped_fetch == 0);
  CHECK(b.skipped_push == 0);
  auto skips = never;
  skips["optimizer"]["c_fetch"] = 1.0;
  skips["optimizer"]["c_push"] = 0.05;
  const RunResult c = run(skips);
  CHECK(c.skipped_fetch > 0);
  CHECK(c.skipped_push > 0);
  // Bytes count only what was sent.
  CHECK(c.bytes_pull == c.messages_pull * b.bytes_pull / b.messages_pull);
  CHECK(c.messages_push + c.skipped_push == c.server_updates);
  CHECK(c.bytes_pull < b.bytes_pull);
  // A skipped fetch computes on an older copy: staleness grows, and is counted.
  CHECK(c.missed_updates.mean() > b.missed_updates.mean());
}

TEST_CASE("order-only mode draws workers uniformly: mean staleness is workers - 1") {
  auto j = tiny_math_json();
  j["cluster"]["workers"] = {{{"profile", "gtx1060"}, {"count", 16}}};
  j["cluster"]["order"] = "uniform";
  j["policy"] = {{"type", "asp"}};
  j["data"]["blobs"]["train"] = 1600;
  j["stop"] = {{"max_updates", 4000}};
  const RunResult r = run(j);
  CHECK(r.status == RunStatus::kCompleted);
  CHECK(r.server_updates == 4000);
  // A worker pushes after a geometric number of other workers' pushes: mean 15.
  CHECK(r.missed_updates.mean() == doctest::Approx(15.0).epsilon(0.06));
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& w : r.workers) lo = std::min(lo, w.iterations), hi = std::max(hi, w.iterations);
  CHECK(lo > 4000 / 16 / 2);
  CHECK(hi < 4000 / 16 * 2);
}

TEST_CASE("--record gradients keeps one row per applied gradient") {
  const Scenario s = scenario(tiny_math_json());
  RunOptions o;
  o.record_gradients = true;
  const RunResult r = run_scenario(s, o);
  CHECK(std::count(r.recording("gradients.csv").begin(), r.recording("gradients.csv").end(), '\n') ==
        r.server_updates + 1);
  CHECK(r.recording("gradients.csv")
            .rfind("virtual_time_s,worker,version_read,version_apply,missed_updates,step\n", 0) == 0);
  CHECK(run_scenario(s).recording("gradients.csv").empty());
}

// ---- The worked example of CONTRIBUTING.md: a learning rule -----------------------------------
// tests/contrib/sqrt-staleness.patch adds the toy rule sqrt-staleness to the simulator (three
// source files: its header, its RuleType value and its registration in learning_rule.cpp). The
// class below is the patch's own, kept in step with it by the CTest contrib_example_patch
// (tests/contrib/check_patch.sh), so its defining property is checked here through the
// LearningRule interface whether or not the patch is applied.

namespace {

class SqrtStalenessRule final : public ScalarStepRule {
 public:
  using ScalarStepRule::ScalarStepRule;
  float step(const GradientInfo& info) const override {
    return static_cast<float>(lr_ / std::sqrt(1.0 + static_cast<double>(info.missed_updates())));
  }
  double worker_step() const override { return lr_; }
};

}  // namespace

TEST_CASE(
    "sqrt-staleness (CONTRIBUTING.md's example): the step of a tau-stale gradient is lr / sqrt(1 + tau)") {
  SqrtStalenessRule r(0.1, Aggregate::kSum, 4);
  SgdRule sgd(0.1, Aggregate::kSum, 4);
  SasgdRule sasgd(0.1, Aggregate::kSum, 4);
  for (int64_t tau : {0, 1, 2, 3, 8, 15, 99}) {
    CAPTURE(tau);
    const float g = -1.5f;
    const auto step = static_cast<float>(0.1 / std::sqrt(1.0 + static_cast<double>(tau)));
    std::vector<float> u(3), grad{g, 0.0f, 4.0f}, none;
    // The whole update is step * g, element by element, and the returned factor is the step.
    CHECK(r.compute_update(u, grad, at_staleness(tau), none, none) == step);
    CHECK(u == std::vector<float>{step * g, 0.0f, step * 4.0f});
    CHECK(u[0] == doctest::Approx(-0.15 / std::sqrt(1.0 + static_cast<double>(tau))));
    // The server may fuse it into its write: the same float step.
    CHECK(r.uniform_step(at_staleness(tau)) == step);
    // Damps a stale gradient less than SASGD's 1 / tau once tau >= 2, and a fresh one not at all:
    // SGD's update bit for bit.
    if (tau >= 2) CHECK(update_of(sasgd, 2.0f, tau) < update_of(r, 2.0f, tau));
    if (tau >= 1) CHECK(update_of(r, 2.0f, tau) < update_of(sgd, 2.0f, tau));
    if (tau == 0) CHECK(update_of(r, g, tau) == update_of(sgd, g, tau));
  }
  // The mean aggregate divides lr by the workers, as for SGD and SASGD.
  SqrtStalenessRule mean(0.1, Aggregate::kMean, 4);
  CHECK(update_of(mean, 2.0f, 3) == doctest::Approx(0.1 / 4 / 2 * 2));
  CHECK(mean.worker_step() == doctest::Approx(0.025));
}
