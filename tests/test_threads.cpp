// The gradient pool (issue 21, sim/gradient_pool.hpp): outputs are the same bytes whatever the
// thread count, and the parameter store's pins change no count the outputs report.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "models/dataset.hpp"
#include "sim/build_info.hpp"
#include "sim/output/observer.hpp"
#include "sim/output/outputs.hpp"
#include "sim/param_store.hpp"
#include "sim/scenario/load.hpp"
#include "sim/simulation.hpp"
#include "sim_test_util.hpp"

using namespace stalesim;
using namespace stalesim::testing;
namespace fs = std::filesystem;

namespace {

struct Outputs {
  std::string summary, metrics, staleness, gradients;
  int64_t updates = 0;
  int64_t pooled = 0;
};

// One run at `threads` threads with its gradients recorded.
RunResult run_at(const Scenario& s, const DataSplit& data, int threads) {
  Simulation sim(s, data);
  RunOptions ro;
  ro.threads = threads;
  ro.record_gradients = true;
  return sim.run(ro);
}

Outputs run_with(const Scenario& s, const DataSplit& data, int threads) {
  const RunResult r = run_at(s, data, threads);
  const OutputFiles f = render_outputs(s, r);
  return {f.text("summary.json"),       f.text("metrics.csv"), f.text("staleness.csv"),
          r.recording("gradients.csv"), r.server_updates,      r.pooled_gradients};
}

// A run at `threads` threads whose summary.json, metrics.csv and gradients are `one`'s; the run's
// result, for what else the caller checks.
RunResult run_same_as(const Outputs& one, const Scenario& s, const DataSplit& data, int threads) {
  const RunResult r = run_at(s, data, threads);
  const OutputFiles f = render_outputs(s, r);
  CHECK(f.text("summary.json") == one.summary);
  CHECK(f.text("metrics.csv") == one.metrics);
  CHECK(r.recording("gradients.csv") == one.gradients);
  return r;
}

// Runs `s` at 1, 2 and 8 threads; checks every output against the 1-thread run's. Returns the
// gradients the 8-thread run computed on its pool.
int64_t check_thread_counts(const Scenario& s, const DataSplit& data) {
  const Outputs one = run_with(s, data, 1);
  CHECK(one.pooled == 0);
  int64_t pooled = 0;
  for (int threads : {2, 8}) {
    CAPTURE(threads);
    const Outputs o = run_with(s, data, threads);
    CHECK(o.summary == one.summary);
    CHECK(o.metrics == one.metrics);
    CHECK(o.staleness == one.staleness);
    CHECK(o.gradients == one.gradients);
    CHECK(o.pooled <= o.updates);
    pooled = o.pooled;
  }
  return pooled;
}

}  // namespace

TEST_CASE("every shipped scenario and golden run writes the same bytes at 1, 2 and 8 threads") {
  pin_eigen_cache_sizes();
  const fs::path root(STALESIM_SOURCE_DIR);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root / "scenarios"))
    if (e.path().extension() == ".json" && !e.path().string().ends_with(".sweep.json"))
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& e : fs::directory_iterator(root / "tests" / "golden"))
    if (e.is_directory()) files.push_back(e.path() / "scenario.json");
  REQUIRE(files.size() >= 10);
  std::map<std::string, DataSplit> fashion;  // Fashion-MNIST loaded once per folder
  int64_t pooled = 0;
  for (const fs::path& path : files) {
    CAPTURE(path.string());
    const bool golden = path.string().find("golden") != std::string::npos;
    // Capped (the golden runs as committed); on Fashion-MNIST 5,000 training samples, 200 test
    // samples and batches of 16, so the whole case stays within seconds.
    Scenario s = load_scenario_file(path.string());
    std::vector<Override> sets;
    if (!golden) sets.push_back(parse_override("stop.max_updates=100"));
    if (s.data.dataset == DatasetType::kFashionMnist) {
      sets.push_back(parse_override("data.train_samples=5000"));
      sets.push_back(parse_override("eval.test_samples=200"));
      sets.push_back(parse_override("optimizer.batch_size=16"));
    }
    s = load_scenario_file(path.string(), sets);
    if (s.data.dataset == DatasetType::kFashionMnist) {
      auto it = fashion.find(s.data.path);
      if (it == fashion.end()) it = fashion.emplace(s.data.path, load_data(s)).first;
      pooled += check_thread_counts(s, it->second);
    } else {
      const DataSplit data = load_data(s);
      pooled += check_thread_counts(s, data);
    }
  }
  CHECK(pooled > 0);  // the pool did compute gradients: the comparison is not of three serial runs
}

TEST_CASE(
    "an ASP run with more workers than the pool takes ahead, and a crash, is the same at any thread count") {
  pin_eigen_cache_sizes();
  auto j = tiny_math_json();
  j["data"]["blobs"]["features"] = 64;
  j["policy"] = {{"type", "asp"}};
  j["cluster"]["workers"] = {{{"profile", "gtx1060"}, {"count", 10}},
                             {{"profile", "gtx1080ti"}, {"count", 10}}};
  j["cluster"]["on_crash"] = "drop";
  j["cluster"]["schedule"] = {{{"kind", "crash"}, {"workers", {3, 7}}, {"at_s", 0.004}, {"until_s", 0.012}}};
  const Scenario s = scenario(j);
  const DataSplit data = load_data(s);
  const Outputs one = run_with(s, data, 1);
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    const Outputs o = run_with(s, data, threads);
    CHECK(o.summary == one.summary);
    CHECK(o.metrics == one.metrics);
    CHECK(o.gradients == one.gradients);
    // 4 x threads gradients ahead at most, of 20 workers: some pooled, some computed in line.
    CHECK(o.pooled > 0);
    CHECK(o.pooled < o.updates);
  }
  // Without deferred gradients (parameters held to the apply) as well.
  RunOptions held;
  held.defer_gradients = false;
  held.threads = 3;
  Simulation sim(s, data);
  const RunResult r = sim.run(held);
  CHECK(render_outputs(s, r).text("metrics.csv") == one.metrics);
  CHECK(r.pooled_gradients > 0);
}

namespace {

// Sees the metrics rows as they happen (an observer keeps the evaluations on the event loop).
struct RowObserver final : RunObserver {
  std::vector<MetricsRow> rows;
  void evaluation(const MetricsRow& row) override { rows.push_back(row); }
};

}  // namespace

TEST_CASE(
    "test-set evaluations at every step, in the background or waited for at stop.at_target, are the same at "
    "1, 2 and 8 threads") {
  pin_eigen_cache_sizes();
  auto j = tiny_math_json();
  j["eval"]["every_s"] = 0.00001;  // 10 us: a row per update or more
  j["stop"]["target_accuracy"] = 0.9;
  SUBCASE("the target is recorded, the run goes on: evaluations in the background") {
    const Scenario s = scenario(j);
    const DataSplit data = load_data(s);
    const Outputs one = run_with(s, data, 1);
    for (int threads : {2, 8}) {
      CAPTURE(threads);
      const RunResult r = run_same_as(one, s, data, threads);
      CHECK(r.time_to_target_s.has_value());
      CHECK(r.metrics.size() >= static_cast<size_t>(r.server_updates));
      // Every row but the final one (evaluated after the pool has gone) on the pool.
      CHECK(r.background_evaluations == static_cast<int64_t>(r.metrics.size()) - 1);
    }
  }
  SUBCASE("the target stops the run: each evaluation waited for before the next event") {
    j["stop"]["at_target"] = true;
    const Scenario s = scenario(j);
    const DataSplit data = load_data(s);
    const Outputs one = run_with(s, data, 1);
    for (int threads : {2, 8}) {
      CAPTURE(threads);
      const RunResult r = run_same_as(one, s, data, threads);
      CHECK(r.stop_reason == StopReason::kTargetAccuracy);
      CHECK(r.server_updates < 400);  // stopped before stop.max_updates
      CHECK(r.pooled_gradients > 0);
      CHECK(r.background_evaluations == 0);
    }
  }
  SUBCASE("an observer sees the rows as they happen: evaluations on the event loop") {
    const Scenario s = scenario(j);
    const DataSplit data = load_data(s);
    const Outputs one = run_with(s, data, 1);
    RowObserver seen;
    Simulation sim(s, data);
    RunOptions ro;
    ro.threads = 2;
    ro.observer = &seen;
    const RunResult r = sim.run(ro);
    CHECK(render_outputs(s, r).text("metrics.csv") == one.metrics);
    CHECK(r.pooled_gradients > 0);
    CHECK(r.background_evaluations == 0);
    CHECK(seen.rows == r.metrics);
  }
}

TEST_CASE("a pinned version stays readable and unchanged, and pins change no live-version count") {
  ParamStore pinned(4), plain(4);
  for (ParamStore* st : {&pinned, &plain}) {
    auto w = st->write();
    for (int i = 0; i < 4; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i);
    st->commit();
  }
  Snapshot s = pinned.read();
  const auto* pin = pinned.pin(s);
  const std::span<const float> view = s.values();
  s.reset();  // no reader holds version 1 now; the pin keeps its values
  for (ParamStore* st : {&pinned, &plain}) {
    for (int k = 0; k < 3; ++k) {
      st->write()[0] += 10.0f;  // write(): as if in place
      st->commit();
      const auto next = st->write_next();  // write_next(): as if in place
      for (size_t i = 0; i < 4; ++i) next.to[i] = next.from[i] + 1.0f;
      st->commit();
    }
  }
  CHECK(view[0] == 0.0f);
  CHECK(view[3] == 3.0f);
  CHECK(pinned.peek()[0] == plain.peek()[0]);
  CHECK(pinned.peek()[3] == plain.peek()[3]);
  CHECK(pinned.live_blocks() == plain.live_blocks());
  CHECK(pinned.peak_live_blocks() == plain.peak_live_blocks());
  CHECK(pinned.copies() == plain.copies());
  pinned.unpin(pin);
  // A reader and a write after the unpin reuse the freed block: still no count differs.
  for (ParamStore* st : {&pinned, &plain}) {
    Snapshot r = st->read();
    st->write()[1] = 5.0f;
    st->commit();
  }
  CHECK(pinned.peak_live_blocks() == plain.peak_live_blocks());
  CHECK(pinned.live_blocks() == plain.live_blocks());
}

TEST_CASE(
    "--threads and STALESIM_THREADS refuse what is not a thread count with exit 2, and the run is the same") {
  // Output folders of this process only (ctest may run two builds' suites at once).
  const std::string dir =
      (fs::temp_directory_path() / ("stalesim-threads-" + std::to_string(::getpid()) + "-")).string();
  const std::string run = "run tests/golden/tiny/scenario.json --force --out " + dir;
  const Outcome zero = run_cli(run + "x --threads 0");
  CHECK(zero.code == 2);
  CHECK(zero.err.find("--threads") != std::string::npos);
  const Outcome env = run_cli(run + "x", "STALESIM_THREADS=two ");
  CHECK(env.code == 2);
  CHECK(env.err.find("STALESIM_THREADS='two'") != std::string::npos);
  const Outcome one = run_cli(run + "1 --threads 1");
  const Outcome four = run_cli(run + "4", "STALESIM_THREADS=4 ");
  REQUIRE(one.code == 0);
  REQUIRE(four.code == 0);
  CHECK(slurp(dir + "1/metrics.csv") == slurp(dir + "4/metrics.csv"));
  CHECK(slurp(dir + "1/staleness.csv") == slurp(dir + "4/staleness.csv"));
  fs::remove_all(dir + "1");
  fs::remove_all(dir + "4");
}
