// The worker core (sim/worker/core.hpp): building the run's state, and the bookkeeping every protocol shares.

#include "sim/worker/core.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "models/cost_arch.hpp"
#include "models/device_profile.hpp"
#include "models/partition.hpp"
#include "sim/worker/protocol.hpp"
#include "sim/workloads.hpp"

namespace stalesim {

namespace {

std::unique_ptr<Model> build_model(const Scenario& s, const DataSplit& d) {
  const bool wants_data = traits(s.model.type).has_math;
  return is_workload_model(s.model.type)
             ? make_workload_model(s, d)
             : make_model(s.model, wants_data ? d.train.features : 0, wants_data ? d.train.classes : 0,
                          s.compute.backend == Backend::kCuda);
}

}  // namespace

WorkerCore::WorkerCore(const Scenario& s, const DataSplit& d, const RunPlan& p)
    : sc(s),
      data(d),
      plan(p),
      model(build_model(s, d)),
      clocks(s.cluster.worker_count()),
      schedule(s.cluster),
      network(s),
      compute(s, *model, schedule) {
  const int32_t n = s.cluster.worker_count();
  math = model->has_math();
  opt = std::make_unique<ServerOptimizer>(s, n, math ? model->parameter_count() : 0, math,
                                          model->update_kind());
  result.metric_name = model->metric_name();
  gate = opt->rule().transfer_gate();
  store = std::make_unique<ParamStore>(math ? model->parameter_count() : 0);
  message_bytes = model->wire_bytes();
  // The plan (and with it the estimates made before a run, sim/estimate/) sizes the model by
  // model_size; the run holds it to the model it built, so the two accounts cannot drift apart
  // unnoticed.
  if (const ModelSize& z = plan.size; z.parameters != static_cast<double>(model->parameter_count()) ||
                                      z.wire_bytes != static_cast<double>(message_bytes))
    throw std::logic_error(
        fmt::format("model_size says {} parameters ({} wire bytes), the {} model has {} ({})", z.parameters,
                    z.wire_bytes, to_string(s.model.type), model->parameter_count(), message_bytes));
  if (math) init_math(s, d);
  init_workers(s, d);
}

void WorkerCore::init_math(const Scenario& s, const DataSplit& d) {
  Rng init_rng(s.seed, Purpose::kInit, 0);
  model->init(store->write(), init_rng);
  grad.resize(static_cast<size_t>(model->parameter_count()));
  compute.set_measured(s.compute.timing == Timing::kMeasured);
  defer = model->can_defer_gradient() && !opt->rule().needs_read_params() && plan.defers_gradients;
  if (defer && static_cast<double>(model->deferred_floats(s.optimizer.batch_size)) != plan.deferred_floats)
    throw std::logic_error(fmt::format("the run plan counts {} deferred floats, the {} model {}",
                                       plan.deferred_floats, to_string(s.model.type),
                                       model->deferred_floats(s.optimizer.batch_size)));
  if (compute.measured()) {  // warm-up, and the time of the first iterations: a batch of the first samples
    std::vector<int32_t> probe(
        static_cast<size_t>(std::min<int64_t>(s.optimizer.batch_size, d.train.size())));
    std::iota(probe.begin(), probe.end(), 0);
    for (int i = 0; i < 5; ++i) model->loss_and_gradient(store->read().values(), d.train, probe, grad);
  }
}

void WorkerCore::init_workers(const Scenario& s, const DataSplit& d) {
  const int32_t n = s.cluster.worker_count();
  const bool shared_data = s.data.partition == Partition::kShared;
  std::vector<std::vector<int32_t>> shards;
  if (math && s.data.partition == Partition::kLabelSkew) {
    shards = shard_label_skew(d.train.y, d.train.classes, n, s.data.alpha, s.seed);
  } else if (math && !shared_data) {
    shards = shard_iid(d.train.size(), n, s.seed);
  }
  double flops_per_sample = model->flops_per_sample();
  if (const auto& cost = plan.cost) {  // time and size as `cost`
    flops_per_sample = cost->training_flops();
    message_bytes = static_cast<int64_t>(std::llround(cost->parameters * 4.0));
  }
  const double flops_per_batch = flops_per_sample * s.optimizer.batch_size;
  workers.resize(static_cast<size_t>(n));
  int32_t id = 0;
  for (size_t g = 0; g < s.cluster.workers.size(); ++g) {
    const auto& group = s.cluster.workers[g];
    const DeviceProfile profile = group_profile(group, g);
    group_profiles.push_back(profile.name);
    for (int32_t k = 0; k < group.count; ++k, ++id) {
      Worker& w = workers[static_cast<size_t>(id)];
      w.id = id;
      w.group = static_cast<int32_t>(g);
      w.base_compute_ns = base_iteration_ns(group, g, profile, flops_per_batch);
      w.jitter_rng = Rng(s.seed, Purpose::kJitter, static_cast<uint64_t>(id));
      if (math && shared_data) {
        if (d.train.size() < s.optimizer.batch_size)
          throw ScenarioError(fmt::format("/optimizer/batch_size: {} is larger than the {} training samples",
                                          s.optimizer.batch_size, d.train.size()));
        w.sampler = std::make_unique<BatchSampler>(
            BatchSampler::shared(d.train.size(), s.seed, static_cast<uint32_t>(id)));
      } else if (math) {
        auto& shard = shards[static_cast<size_t>(id)];
        if (static_cast<int64_t>(shard.size()) < s.optimizer.batch_size)
          throw ScenarioError(
              fmt::format("/optimizer/batch_size: {} is larger than worker {}'s shard of {} samples ({} "
                          "training samples over {} workers)",
                          s.optimizer.batch_size, id, shard.size(), d.train.size(), n));
        w.sampler = std::make_unique<BatchSampler>(std::move(shard), s.seed, static_cast<uint32_t>(id));
      }
    }
  }
  if (defer || gate) need_cold();  // the protocols that keep cold state call it themselves
}

void WorkerCore::need_cold() {
  if (!cold.empty() || workers.empty()) return;
  cold.resize(workers.size());
  for (size_t id = 0; id < cold.size(); ++id)
    cold[id].transmit_rng = Rng(sc.seed, Purpose::kTransmit, static_cast<uint64_t>(id));
}

// ---- Time accounting ------------------------------------------------------------------------

void WorkerCore::close_interval(Worker& w, SimTime end) {
  const int64_t dt = (end - w.state_since).ns();
  switch (w.state) {
    case WorkerState::kComputing:
      w.compute_ns += dt;
      break;
    case WorkerState::kWaiting:
      w.wait_ns += dt;
      break;
    case WorkerState::kCommunicating:
      w.communicate_ns += dt;
      break;
  }
}

void WorkerCore::set_state(Worker& w, WorkerState s, Activity a) {
  close_interval(w, engine.now());
  w.state = s;
  w.state_since = engine.now();
  if (obs)
    obs->activity(engine.now(), w.id,
                  s == WorkerState::kComputing ? Activity::kCompute
                  : s == WorkerState::kWaiting ? Activity::kWait
                                               : a);
}

// ---- Pull modes: grant, push, release -------------------------------------------------------

void WorkerCore::grant(Worker& w) {
  const int64_t gap = clocks.clock(w.id) - clocks.min_clock();
  result.max_clock_gap = std::max(result.max_clock_gap, gap);
  if (w.skip_fetch && w.params) {  // B-FASGD: keep computing on the old copy
    w.read_staleness = clocks.clock(w.id) - w.read_server_clock;
    set_state(w, WorkerState::kCommunicating);
    ++result.skipped_fetch;
    if (order) return order->on_params(w);
    engine.schedule_in(latency_of(w), kParamsArrive, static_cast<uint32_t>(w.id),
                       w.gen);  // "go on": no data
    return;
  }
  w.read_staleness = gap;
  w.read_server_clock = clocks.min_clock();
  w.params = store->read();
  w.read_version = store->version();
  if (math) ++begun;
  if (pool && tasks_out < max_ahead) {
    start_task(w);
    if (defer) w.params.reset();  // the pin keeps them for the pool (not a live version)
  } else if (defer) {
    // Same batch the push will draw; the parameters are let go at once.
    model->begin_gradient(w.params.values(), data.train, w.sampler->peek(sc.optimizer.batch_size),
                          cold_of(w).pending);
    w.params.reset();
  }
  set_state(w, WorkerState::kCommunicating);
  if (TopologyNetwork* net = network.flows()) {  // off the star: flows from the shards' hosts
    result.bytes_pull += message_bytes;
    ++result.messages_pull;
    if (order) return order->on_params(w);
    return net->to_worker(engine, w.id, message_bytes, {kParamsArrive, static_cast<uint32_t>(w.id), w.gen});
  }
  const SimTime sent = server_transfer(engine.now(), message_bytes, w.id, WireKind::kPull);
  granted_sent = sent;
  result.bytes_pull += message_bytes;
  ++result.messages_pull;
  if (order) return order->on_params(w);
  engine.schedule(sent + latency_of(w) + worker_link(w, message_bytes), kParamsArrive,
                  static_cast<uint32_t>(w.id), w.gen);
}

void WorkerCore::send_push(Worker& w) {
  if (gate) {  // both draws every time, in a fixed order, from the worker's own stream
    WorkerCold& wc = cold_of(w);
    const bool push_now = wc.transmit_rng.uniform() < gate->push_probability();
    const bool fetch = wc.transmit_rng.uniform() < gate->fetch_probability();
    w.skip_push = !push_now && wc.has_last_grad;
    w.skip_fetch = !fetch;
    if (w.skip_push) {  // only a notice goes: the server re-applies the last gradient
      ++result.skipped_push;
      if (order) return order->on_push_applied(w);
      set_state(w, WorkerState::kCommunicating, Activity::kPush);
      engine.schedule_in(latency_of(w), kPushApplied, static_cast<uint32_t>(w.id), w.gen);
      return;
    }
  }
  push(w, next_push_bytes(w));
}

void WorkerCore::push(Worker& w, int64_t bytes) {
  result.bytes_push += bytes;
  ++result.messages_push;
  if (order) return order->on_push_applied(w);
  set_state(w, WorkerState::kCommunicating, Activity::kPush);
  w.push_bytes.push_back(bytes);
  if (TopologyNetwork* net = network.flows())  // off the star: flows to the shards' hosts
    return net->to_shards(engine, w.id, bytes, {kPushAtServer, static_cast<uint32_t>(w.id), w.gen});
  engine.schedule_in(worker_link(w, bytes) + latency_of(w), kPushAtServer, static_cast<uint32_t>(w.id),
                     w.gen);
}

void WorkerCore::on_push_at_server(Worker& w) {
  const int64_t bytes = w.push_bytes.front();
  w.push_bytes.pop_front();
  if (network.flows())  // the flows have delivered it whole
    return void(engine.schedule(engine.now(), kPushApplied, static_cast<uint32_t>(w.id), w.gen));
  engine.schedule(server_transfer(engine.now(), bytes, w.id, WireKind::kPush), kPushApplied,
                  static_cast<uint32_t>(w.id), w.gen);
}

void WorkerCore::release_waiting() {
  std::sort(waiting.begin(), waiting.end());
  size_t keep = 0;
  for (int32_t id : waiting) {
    if (policy->may_start(id, clocks))
      grant(workers[static_cast<size_t>(id)]);
    else
      waiting[keep++] = id;
  }
  waiting.resize(keep);
}

int64_t WorkerCore::push_bytes_for(std::span<const int32_t> batch) {
  if (!math || plan.cost) return message_bytes;
  return model->update_bytes(data.train, batch);
}

int64_t WorkerCore::next_push_bytes(Worker& w) {
  if (!math || plan.cost) return message_bytes;
  return push_bytes_for(w.sampler->peek(sc.optimizer.batch_size));
}

// ---- Gradients ------------------------------------------------------------------------------

void WorkerCore::start_task(Worker& w) {
  std::unique_ptr<GradientTask> t;
  if (!spare.empty()) {
    t = std::move(spare.back());
    spare.pop_back();
  } else {
    t = std::make_unique<GradientTask>();
    t->grad.resize(grad.size());
  }
  t->params = w.params.values();
  t->pin = store->pin(w.params);
  const auto batch = w.sampler->peek(sc.optimizer.batch_size);
  t->batch.assign(batch.begin(), batch.end());
  pool->submit(*t);
  w.task = std::move(t);
  ++tasks_out;
}

double WorkerCore::collect_task(Worker& w, std::span<const int32_t> batch) {
  GradientTask& t = *w.task;
  if (!std::ranges::equal(batch, t.batch))
    throw std::logic_error(
        fmt::format("worker {}: its pooled gradient is not for the batch it pushes", w.id));
  pool->wait(t);
  store->unpin(static_cast<const detail::Block*>(t.pin));
  t.pin = nullptr;
  ++result.pooled_gradients;
  return t.loss;
}

void WorkerCore::release_task(Worker& w) {
  if (!w.task) return;
  if (w.task->pin) {  // not collected (a crash, the end of the run)
    pool->cancel(*w.task);
    store->unpin(static_cast<const detail::Block*>(w.task->pin));
    w.task->pin = nullptr;
  }
  spare.push_back(std::move(w.task));
  --tasks_out;
}

double WorkerCore::finish_deferred(Worker& w, std::span<const int32_t> batch) {
  WorkerCold& wc = cold_of(w);
  if (!wc.pending.pending || !std::ranges::equal(batch, wc.pending.batch))
    throw std::logic_error(
        fmt::format("worker {}: its deferred gradient is not for the batch it pushes", w.id));
  model->finish_gradient(wc.pending, data.train, grad);
  return wc.pending.loss;
}

std::vector<float> WorkerCore::take_grad_buffer() {
  std::vector<float> g;
  if (!free_grads.empty()) {
    g = std::move(free_grads.back());
    free_grads.pop_back();
  }
  g.resize(grad.size());
  return g;
}

// ---- Records --------------------------------------------------------------------------------

bool WorkerCore::book_applied(Worker& w, const GradientInfo& info) {
  ++result.server_updates;
  ++w.iterations;
  result.clock_staleness.add(info.clock_staleness);
  result.step_staleness.add(info.step_staleness());
  staleness_sum += info.clock_staleness;
  ++staleness_count;
  const bool min_rose = clocks.advance(w.id);
  policy->on_push(w.id, engine.now(), clocks);
  if (obs) obs->update(engine.now(), w.id, store->version(), info.clock_staleness, info.step_staleness());
  return min_rose;
}

MetricsRow WorkerCore::take_metrics_row(SimTime now) {
  MetricsRow row;
  row.time = now;
  row.server_version = store->version();
  if (math && loss_count) row.train_loss = loss_sum / static_cast<double>(loss_count);
  if (staleness_count)
    row.mean_staleness = static_cast<double>(staleness_sum) / static_cast<double>(staleness_count);
  row.bytes = result.bytes_push + result.bytes_pull;
  loss_sum = 0;
  loss_count = 0;
  staleness_sum = 0;
  staleness_count = 0;
  return row;
}

void WorkerCore::complete_metrics(MetricsRow& row) {
  if (obs) obs->evaluation(row);
  result.metrics.push_back(row);
  if (row.test_accuracy && sc.stop.target_accuracy && !result.time_to_target_s &&
      *row.test_accuracy >= *sc.stop.target_accuracy) {
    result.time_to_target_s = row.time.seconds();
    if (sc.stop.at_target) {
      result.stop_reason = "target_accuracy";
      stop();
    }
  }
}

void WorkerCore::diverge(Worker& w, double loss) {
  result.status = RunStatus::kDiverged;
  result.stop_reason = "diverged";
  result.diverged_at_s = engine.now().seconds();
  result.diverged_worker = w.id;
  result.detail = fmt::format("worker {}'s training loss became {} at t={:.6f} s (server version {})", w.id,
                              loss, engine.now().seconds(), store->version());
  stop();
}

void WorkerCore::deadlock() {
  result.status = RunStatus::kDeadlock;
  result.stop_reason = "deadlock";
  // Who waits for whom: a worker ahead of the minimum clock waits for the slowest worker; a
  // worker at the minimum clock waits for no other worker, only for the policy's leave, which
  // nothing left in the run can change.
  std::string who;
  const int32_t slowest = clocks.slowest();
  for (size_t i = 0; i < waiting.size() && i < 8; ++i) {
    const int32_t id = waiting[i];
    const int64_t c = clocks.clock(id);
    who += i ? "; " : "";
    if (c > clocks.min_clock())
      who += fmt::format("worker {} (clock {}) waits for worker {} (clock {})", id, c, slowest,
                         clocks.min_clock());
    else
      who += fmt::format("worker {} (clock {}, the slowest) waits for the policy's leave", id, c);
  }
  if (waiting.size() > 8) who += fmt::format("; and {} more", waiting.size() - 8);
  result.detail = fmt::format(
      "at t={:g} s every worker is blocked and no event is pending: {}; policy {}, minimum clock {}",
      engine.now().seconds(), who, policy->name(), clocks.min_clock());
  stop();
}

}  // namespace stalesim
