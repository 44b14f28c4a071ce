// The simulator against theory: gradient descent with a constant delay tau on a quadratic of
// largest curvature lambda_max is stable iff lr x lambda_max < 2 sin(pi / (2 (2 tau + 1)))
// (Levin and May 1976; models/lstsq.hpp). ASP with n identical workers and no jitter makes every
// gradient after the first n - 1 miss exactly n - 1 updates, so the lstsq workload run through the
// whole simulator must converge just below that limit and diverge just above it.

#include <doctest/doctest.h>

#include <cmath>

#include "models/lstsq.hpp"
#include "tests/sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;

namespace {

// n identical GTX 1080 Ti workers under ASP on a 16-parameter lstsq problem (condition 10,
// lambda_max 2), at step size lr.
nlohmann::json delayed_json(int workers, double lr, int64_t max_updates) {
  auto j = nlohmann::json::parse(R"({
    "name": "stability", "seed": 4,
    "data": { "dataset": "lstsq", "lstsq": { "dimension": 16, "condition": 10, "curvature": 2 } },
    "model": { "type": "lstsq" },
    "optimizer": { "rule": "sgd", "batch_size": 8 },
    "policy": { "type": "asp" },
    "cluster": { "workers": [ { "profile": "gtx1080ti" } ], "jitter": { "type": "none" },
                 "network": { "latency_us": 50, "bandwidth_gbps": 10 } },
    "eval": { "every_s": 0.01 } })");
  j["optimizer"]["lr"] = lr;
  j["cluster"]["workers"][0]["count"] = workers;
  j["stop"]["max_updates"] = max_updates;
  return j;
}

}  // namespace

TEST_CASE("the delayed gradient descent limit is 2 sin(pi / (2 (2 tau + 1)))") {
  CHECK(delayed_gd_stability_limit(0) == doctest::Approx(2.0));
  CHECK(delayed_gd_stability_limit(1) == doctest::Approx(1.0));
  CHECK(delayed_gd_stability_limit(3) == doctest::Approx(2 * std::cos(3 * M_PI / 7)));
  // The recurrence itself, in double: x_{n+1} = x_n - a x_{n-3} shrinks at 0.95 of the limit and
  // grows at 1.05 of it.
  for (const double f : {0.95, 1.05}) {
    const double a = f * delayed_gd_stability_limit(3);
    std::vector<double> x(4, 1.0);
    for (int n = 0; n < 4000; ++n) x.push_back(x[x.size() - 1] - a * x[x.size() - 4]);
    CAPTURE(f);
    CHECK((std::abs(x.back()) < 1e-6) == (f < 1));
  }
}

TEST_CASE("ASP with identical workers and no jitter delays every gradient by workers - 1 updates") {
  for (const int workers : {1, 2, 4}) {
    const RunResult r = run(delayed_json(workers, 0.01, 400));
    CAPTURE(workers);
    REQUIRE(r.status == RunStatus::kCompleted);
    const auto& bins = r.step_staleness.bins();
    CHECK(r.step_staleness.max() == workers - 1);
    // The first workers - 1 gradients, read together at version 0, miss 0, 1, ... workers - 2.
    REQUIRE(static_cast<int>(bins.size()) == workers);
    CHECK(bins.back() == r.server_updates - (workers - 1));
  }
}

TEST_CASE("lstsq through the simulator is stable just below the delayed limit and diverges just above") {
  const double lambda_max = 2.0;
  for (const int workers : {1, 2, 4}) {
    const int64_t tau = workers - 1;
    const double limit = delayed_gd_stability_limit(tau) / lambda_max;  // the largest stable lr
    CAPTURE(tau);
    // At 0.9 of the limit the loss falls to the optimum.
    const RunResult below = run(delayed_json(workers, 0.9 * limit, 4000));
    CHECK(below.status == RunStatus::kCompleted);
    REQUIRE(below.metrics.size() >= 2);
    const double first = *below.metrics.front().test_loss, last = *below.metrics.back().test_loss;
    CHECK(first > 1.0);
    CHECK(last < 1e-8 * first);
    // At 1.1 of the limit it diverges (the parameters overflow float32 within a few thousand updates).
    const RunResult above = run(delayed_json(workers, 1.1 * limit, 20000));
    CHECK(above.status == RunStatus::kDiverged);
    CHECK(above.server_updates < 20000);
  }
}

TEST_CASE("a step size that is stable without delay diverges when gradients miss 3 updates") {
  const double lr = 0.9 * delayed_gd_stability_limit(0) / 2.0;  // lambda_max 2
  CHECK(run(delayed_json(1, lr, 4000)).status == RunStatus::kCompleted);
  CHECK(run(delayed_json(4, lr, 20000)).status == RunStatus::kDiverged);
}

TEST_CASE("an lstsq scenario with the wrong dataset or an out-of-range field is refused with its path") {
  auto wrong_data = delayed_json(1, 0.1, 10);
  wrong_data["data"] = {{"dataset", "blobs"}};
  CHECK_THROWS_WITH_AS(
      scenario(wrong_data),
      "test.json: /data/dataset: model.type \"lstsq\" needs dataset \"lstsq\", got \"blobs\"", ScenarioError);
  auto wrong_model = delayed_json(1, 0.1, 10);
  wrong_model["model"] = {{"type", "mlp"}};
  CHECK_THROWS_WITH_AS(
      scenario(wrong_model),
      "test.json: /data/dataset: \"lstsq\" goes with model.type \"lstsq\" (model.type is \"mlp\")",
      ScenarioError);
  for (const auto& field : {std::pair{"condition", 0.5}, std::pair{"curvature", 0.0}}) {
    const char* key = field.first;  // not a structured binding: clang 14 cannot capture one in CAPTURE
    auto bad = delayed_json(1, 0.1, 10);
    bad["data"]["lstsq"][key] = field.second;
    CAPTURE(key);
    try {
      (void)scenario(bad);
      FAIL_CHECK("accepted");
    } catch (const ScenarioError& e) {
      CHECK(std::string(e.what()).find(std::string("/data/lstsq/") + key) != std::string::npos);
    }
  }
}
