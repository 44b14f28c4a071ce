// Overhead outside model math: the share of the quick-start scenario's run time spent outside
// the model's math, 1 - (the same math calls replayed outside the simulator) / (the whole run).

#include "tools/bench/bench.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Core>

#include "base/rng.hpp"
#include "models/model.hpp"
#include "sim/param_store.hpp"
#include "sim/scenario/load.hpp"

namespace stalesim::bench {

namespace {

struct Replay {
  double gradient_s = 0;  // loss_and_gradient calls
  double evaluate_s = 0;  // evaluate calls
  double math_s() const { return gradient_s + evaluate_s; }
};

// The run's model math, replayed outside the simulator: `updates` loss_and_gradient calls at the
// scenario's batch size on batches drawn as a worker draws them (random samples of the training
// set), cycling through `versions` parameter copies as the run's live versions do, and `evals`
// evaluate calls on the same test samples. Batches are drawn before the clock starts.
Replay replay_math(const Scenario& sc, const DataSplit& data, int64_t updates, size_t evals,
                   int64_t versions) {
  auto model = make_model(sc.model, data.train.features, data.train.classes);
  const auto p = static_cast<size_t>(model->parameter_count());
  std::vector<std::vector<float>> params(static_cast<size_t>(std::max<int64_t>(1, versions)),
                                         std::vector<float>(p));
  Rng init_rng(sc.seed, Purpose::kInit, 0);
  model->init(params[0], init_rng);
  for (auto& v : params) v = params[0];
  std::vector<float> grad(p);
  const int64_t m =
      sc.eval.test_samples > 0 ? std::min(sc.eval.test_samples, data.test.size()) : data.test.size();
  std::vector<int32_t> eval_indices(static_cast<size_t>(m));
  std::iota(eval_indices.begin(), eval_indices.end(), 0);
  std::vector<int32_t> all(static_cast<size_t>(data.train.size()));
  std::iota(all.begin(), all.end(), 0);
  BatchSampler sampler(std::move(all), sc.seed, 0);
  const auto batch = static_cast<size_t>(sc.optimizer.batch_size);
  std::vector<int32_t> batches(static_cast<size_t>(updates) * batch);
  for (int64_t i = 0; i < updates; ++i) {
    const auto b = sampler.next(sc.optimizer.batch_size);
    std::copy(b.begin(), b.end(),
              batches.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(i) * batch));
  }
  // Each kind of call is timed as one loop: reading this thread's CPU clock is a system call
  // (about a microsecond here), too costly to wrap around every call.
  Replay r;
  double loss_sum = 0;
  const double t0 = thread_cpu_seconds();
  for (int64_t i = 0; i < updates; ++i) {
    const std::span<const int32_t> idx(batches.data() + static_cast<size_t>(i) * batch, batch);
    loss_sum +=
        model->loss_and_gradient(params[static_cast<size_t>(i) % params.size()], data.train, idx, grad);
  }
  const double t1 = thread_cpu_seconds();
  for (size_t i = 0; i < evals; ++i) {
    const Evaluation e = model->evaluate(params[i % params.size()], data.test, eval_indices);
    if (!std::isfinite(e.loss)) throw std::runtime_error("replay: evaluation loss is not finite");
  }
  r.gradient_s = t1 - t0;
  r.evaluate_s = thread_cpu_seconds() - t1;
  if (!std::isfinite(loss_sum)) throw std::runtime_error("replay: training loss is not finite");
  return r;
}

// The server's own per-update math, replayed: a copy-on-write of the parameters when the run held
// more than one version (a reader holds the current version, as a re-granted worker that keeps
// its parameters does; a worker that defers its gradient holds none, and the server then updates
// in place: no copy) and an SGD step w -= lr g as the sgd rule
// takes it (an Eigen axpy; written here rather than through LearningRule, so that this stays an
// estimate of the same work whatever that interface becomes).
struct ServerReplay {
  double copy_s = 0, apply_s = 0;
};
ServerReplay replay_server(const Scenario& sc, int64_t parameters, int64_t updates, int64_t versions) {
  ParamStore store(parameters);
  const auto step = static_cast<float>(sc.optimizer.lr);
  std::vector<float> grad(static_cast<size_t>(parameters), 1e-3f);
  const Eigen::Map<const Eigen::VectorXf> g(grad.data(), static_cast<Eigen::Index>(parameters));
  std::vector<Snapshot> held(static_cast<size_t>(std::max<int64_t>(0, versions - 1)));
  ServerReplay r;
  // Two loops, each timed whole (see replay_math): the copies, then the steps on one block.
  double check = 0;  // read back, so that no work can be optimized away
  double t0 = thread_cpu_seconds();
  for (int64_t i = 0; i < updates; ++i) {
    if (!held.empty()) held[static_cast<size_t>(i) % held.size()] = store.read();
    check +=
        store.write()[static_cast<size_t>(i) %
                      static_cast<size_t>(parameters)];  // copies when a reader holds the current version
    store.commit();
  }
  r.copy_s = thread_cpu_seconds() - t0;
  for (auto& h : held) h.reset();
  const auto w = store.write();  // nobody else holds it now: no copy
  Eigen::Map<Eigen::VectorXf> wm(w.data(), static_cast<Eigen::Index>(w.size()));
  t0 = thread_cpu_seconds();
  for (int64_t i = 0; i < updates; ++i) {
    wm.noalias() -= step * g;
    check += w[static_cast<size_t>(i) % w.size()];
  }
  r.apply_s = thread_cpu_seconds() - t0;
  if (!std::isfinite(check)) throw std::runtime_error("server replay: parameters are not finite");
  return r;
}

}  // namespace

void section_overhead(const Options& opt, std::vector<SummaryRow>& summary) {
  const std::string path = opt.source_dir + "/scenarios/quickstart.json";
  const std::vector<Override> sets{
      {"stop.virtual_time_s", fmt::format("{}", opt.quickstart_virtual_s * (opt.quick ? 0.1 : 1.0))}};
  const Scenario sc = load_scenario_file(path, sets);
  note(fmt::format("quick start shortened to {:g} virtual s: loading data", *sc.stop.virtual_time_s));
  const Stopwatch load_sw;
  const DataSplit data = load_data(sc);
  const double load_s = load_sw.cpu();
  // The share is small against the noise of a shared machine: more repetitions than elsewhere.
  const int reps = std::max(opt.reps, 5);
  note(fmt::format("quick start: {} repetitions of the run, each followed by the replay of its math", reps));
  // Each repetition runs the simulation and then replays its math at once, so that both see the
  // same machine conditions; the share is computed per repetition and its median reported.
  std::vector<double> a_cpu, a_wall, b_grad, b_eval, c_copy, c_apply, shares;
  RunResult r;
  for (int i = 0; i < reps; ++i) {
    TimedRuns one = time_runs(sc, data, 1, [&](const RunResult& x) {
      if (x.status != RunStatus::kCompleted)
        throw std::runtime_error("quickstart ended " + std::string(to_string(x.status)));
    });
    if (i > 0 && one.result.events != r.events)
      throw std::runtime_error(sc.name + ": repetitions differ: the run is not deterministic");
    r = std::move(one.result);
    const Replay b = replay_math(sc, data, r.server_updates, r.metrics.size(), r.peak_live_versions);
    const ServerReplay c = replay_server(sc, static_cast<int64_t>(r.final_params.size()), r.server_updates,
                                         r.peak_live_versions);
    a_cpu.push_back(one.cpu_s);
    a_wall.push_back(one.wall_s);
    b_grad.push_back(b.gradient_s);
    b_eval.push_back(b.evaluate_s);
    c_copy.push_back(c.copy_s);
    c_apply.push_back(c.apply_s);
    shares.push_back(1.0 - b.math_s() / one.cpu_s);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  const double a = median(a_cpu);
  const double math = median(b_grad) + median(b_eval);
  const double share = median(shares);
  const auto evals = r.metrics.size();
  const int64_t eval_samples =
      sc.eval.test_samples > 0 ? std::min(sc.eval.test_samples, data.test.size()) : data.test.size();
  auto pct = [a](double x) { return fmt::format("{:.1f}%", 100 * x / a); };
  fmt::print("\n=== Overhead outside model math: {} shortened to {:g} virtual s ===\n", path,
             *sc.stop.virtual_time_s);
  fmt::print(
      "Method: all times are CPU time of this thread; {} repetitions, each running (a) then (b) and (c):\n"
      "(a) the run (Simulation construction + run(), data already loaded);\n"
      "(b) the same model math replayed outside the simulator: as many loss_and_gradient calls at batch {} "
      "as\n"
      "the run applied updates, on batches of random training samples drawn beforehand, cycling through as "
      "many\n"
      "parameter copies as the run's peak live versions, plus as many evaluate calls on the same {} test\n"
      "samples as the run has metrics rows. Overhead = 1 - b/a, per repetition; the median is judged.\n"
      "It is everything the run does besides the model's math (events, policy, server copy-on-write and\n"
      "update, bookkeeping, cache effects); (c) replays the server's own per-update math alone, to "
      "attribute\n"
      "part of it. The table shows medians over the repetitions (and bests for (a)).\n",
      reps, sc.optimizer.batch_size, grouped(eval_samples));
  auto sec = [](double x) { return fmt::format("{:.3f}", x); };
  const double outside = a - math;
  const double rest = outside - median(c_copy) - median(c_apply);
  std::string per_rep;
  for (double x : shares) per_rep += fmt::format("{}{:.1f}%", per_rep.empty() ? "" : ", ", 100 * x);
  std::vector<std::vector<std::string>> rows = {
      {"data loading (not in a)", sec(load_s), ""},
      {"(a) whole run", sec(a), pct(a)},
      {"(a) whole run, best", sec(best(a_cpu)), ""},
      {"(a) whole run, best wall time", sec(best(a_wall)), ""},
      {fmt::format("(b) {} gradients", grouped(r.server_updates)), sec(median(b_grad)), pct(median(b_grad))},
      {fmt::format("(b) {} evaluations", evals), sec(median(b_eval)), pct(median(b_eval))},
      {"(b) model math, total", sec(math), pct(math)},
      {"a - b: outside model math", sec(outside), pct(outside)},
      {"  (c) of which server copy-on-write", sec(median(c_copy)), pct(median(c_copy))},
      {"  (c) of which SGD step (w -= lr g)", sec(median(c_apply)), pct(median(c_apply))},
      {"  rest (events, policy, bookkeeping, cache)", sec(rest), pct(rest)},
  };
  fmt::print("run: {} updates, {} events, {} metrics rows, peak live versions {}\n",
             grouped(r.server_updates), grouped(static_cast<int64_t>(r.events)), evals, r.peak_live_versions);
  print_table({"part (median of repetitions)", "CPU s", "share of (a)"}, rows, {false, true, true});
  fmt::print("1 - b/a per repetition: {}; median {:.1f}%\n", per_rep, 100 * share);
  summary.push_back(
      target_row(fmt::format("Quick start: share of run time outside model math (median of {} pairs)", reps),
                 100 * share, fmt::format("{:.1f}%", 100 * share), 10.0, "<= 10%", false));
}

}  // namespace stalesim::bench
