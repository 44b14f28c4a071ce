// The worker core (sim/worker/core.hpp): building the run's state, and the bookkeeping every protocol shares.
// Crashes and rejoins: faults.cpp.

#include "sim/worker/core.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "models/cost_arch.hpp"
#include "models/device_profile.hpp"
#include "sim/worker/assemble.hpp"
#include "sim/worker/protocol.hpp"

namespace stalesim {

WorkerCore::WorkerCore(const Scenario& s, const DataSplit& d, const RunPlan& p)
    : sc_(s),
      data_(d),
      plan_(p),
      model_(build_model(s, d)),
      policy_(make_policy(s.policy, s.cluster.worker_count())),
      clocks_(s.cluster.worker_count()),
      schedule_(s.cluster),
      network_(s),
      compute_(s, *model_, schedule_) {
  const int32_t n = s.cluster.worker_count();
  math_ = model_->has_math();
  opt_ = std::make_unique<ServerOptimizer>(s, n, math_ ? model_->parameter_count() : 0, math_,
                                           model_->update_kind());
  result_.metric_name = model_->metric_name();
  store_ = std::make_unique<ParamStore>(math_ ? model_->parameter_count() : 0);
  message_bytes_ = model_->wire_bytes();
  apply_ns_per_float_ = s.cluster.network.server_apply_ns_per_parameter / s.cluster.servers;
  // The plan (and with it the estimates made before a run, sim/estimate/) sizes the model by
  // model_size; the run holds it to the model it built, so the two accounts cannot drift apart
  // unnoticed.
  if (const ModelSize& z = plan_.size; z.parameters != static_cast<double>(model_->parameter_count()) ||
                                       z.wire_bytes != static_cast<double>(message_bytes_))
    throw std::logic_error(
        fmt::format("model_size says {} parameters ({} wire bytes), the {} model has {} ({})", z.parameters,
                    z.wire_bytes, to_string(s.model.type), model_->parameter_count(), message_bytes_));
  if (math_) init_math(s, d);
  init_workers(s, d);
}

void WorkerCore::init_math(const Scenario& s, const DataSplit& d) {
  init_parameters(s, *model_, store_->write());
  grad_.resize(static_cast<size_t>(model_->parameter_count()));
  compute_.set_measured(s.compute.timing == Timing::kMeasured);
  defer_ = model_->can_defer_gradient() && !opt_->rule().needs_read_params() && plan_.defers_gradients;
  if (defer_ && static_cast<double>(model_->deferred_floats(s.optimizer.batch_size)) != plan_.deferred_floats)
    throw std::logic_error(fmt::format("the run plan counts {} deferred floats, the {} model {}",
                                       plan_.deferred_floats, to_string(s.model.type),
                                       model_->deferred_floats(s.optimizer.batch_size)));
  if (compute_.measured()) {  // warm-up, and the time of the first iterations: a batch of the first samples
    std::vector<int32_t> probe(
        static_cast<size_t>(std::min<int64_t>(s.optimizer.batch_size, d.train.size())));
    std::iota(probe.begin(), probe.end(), 0);
    for (int i = 0; i < 5; ++i) model_->loss_and_gradient(store_->read().values(), d.train, probe, grad_);
  }
}

void WorkerCore::init_workers(const Scenario& s, const DataSplit& d) {
  const int32_t n = s.cluster.worker_count();
  std::vector<std::vector<int32_t>> shards;
  if (math_) shards = worker_shards(s, d);
  double flops_per_sample = model_->flops_per_sample();
  if (const auto& cost = plan_.cost) {  // time and size as `cost`
    flops_per_sample = cost->training_flops();
    message_bytes_ = static_cast<int64_t>(std::llround(cost->parameters * 4.0));
  }
  const double flops_per_batch = flops_per_sample * s.optimizer.batch_size;
  workers_.resize(static_cast<size_t>(n));
  int32_t id = 0;
  for (size_t g = 0; g < s.cluster.workers.size(); ++g) {
    const auto& group = s.cluster.workers[g];
    const DeviceProfile profile = group_profile(group, g);
    group_profiles_.push_back(profile.name);
    for (int32_t k = 0; k < group.count; ++k, ++id) {
      Worker& w = workers_[static_cast<size_t>(id)];
      w.id = id;
      w.group = static_cast<int32_t>(g);
      w.base_compute_ns = base_iteration_ns(group, g, profile, flops_per_batch);
      w.jitter_rng = Rng(s.seed, Purpose::kJitter, static_cast<uint64_t>(id));
      if (math_) w.sampler = worker_sampler(s, d, shards, id);
    }
  }
  if (defer_) pending_.resize(workers_.size());
}

void WorkerCore::set_run_options(std::optional<int64_t> refuse_from_clock, bool defer_gradients) {
  refuse_from_clock_ = refuse_from_clock;
  defer_ = defer_ && defer_gradients;
  result_.deferred_gradients = defer_;
}

GradientPool* WorkerCore::start_pool(int threads, bool allowed) {
  if (threads < 1) throw std::invalid_argument(fmt::format("threads: expected >= 1, got {}", threads));
  if (threads == 1 || !math_ || !allowed || compute_.measured() || sc_.compute.backend != Backend::kCpu)
    return nullptr;
  std::vector<std::unique_ptr<Model>> helpers;
  for (int i = 1; i < threads; ++i) {
    auto m = model_->clone();
    if (!m) return nullptr;
    helpers.push_back(std::move(m));
  }
  max_ahead_ = 4 * static_cast<int64_t>(threads);
  pool_ = std::make_unique<GradientPool>(*model_, std::move(helpers), data_.train);
  return pool_.get();
}

void WorkerCore::keep_slice(int64_t begin, int64_t count) {
  if (!math_ || begin < 0 || count < 0 || begin + count > store_->size())
    throw std::logic_error(fmt::format("keep_slice({}, {}) of {} parameters", begin, count, store_->size()));
  const std::span<const float> all = store_->peek();
  auto slice = std::make_unique<ParamStore>(count);
  std::copy_n(all.begin() + begin, count, slice->write().begin());
  store_ = std::move(slice);
  opt_ = std::make_unique<ServerOptimizer>(sc_, clocks_.workers(), count, math_, model_->update_kind());
  defer_ = false;
  pending_.clear();
}

// ---- Time accounting ------------------------------------------------------------------------

// Adds the time since w.state_since to the counter of w's current state.
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
  close_interval(w, engine_.now());
  w.state = s;
  w.state_since = engine_.now();
  if (obs_)
    obs_->activity(engine_.now(), w.id,
                   s == WorkerState::kComputing ? Activity::kCompute
                   : s == WorkerState::kWaiting ? Activity::kWait
                                                : a);
}

// ---- Pull modes: grant, push, release -------------------------------------------------------

void WorkerCore::grant(Worker& w) {
  const int64_t gap = clocks_.clock(w.id) - clocks_.min_clock();
  note_clock_gap(gap);
  if (w.skip_fetch && w.params) {  // B-FASGD: keep computing on the old copy
    w.read_staleness = clocks_.clock(w.id) - w.read_server_clock;
    set_state(w, WorkerState::kCommunicating);
    ++result_.skipped_fetch;
    if (direct_) return direct_->params_granted(w, granted_through_);
    engine_.schedule_in(latency_of(w), kParamsArrive, static_cast<uint32_t>(w.id),
                        w.gen);  // "go on": no data
    return;
  }
  w.read_staleness = gap;
  w.read_server_clock = clocks_.min_clock();
  w.params = store_->read();
  w.read_version = store_->version();
  if (math_) ++begun_;
  if (pool_ && tasks_out_ < max_ahead_) {
    start_task(w);
    if (defer_) w.params.reset();  // the pin keeps them for the pool (not a live version)
  } else if (defer_) {
    // Same batch the push will draw; the parameters are let go at once.
    model_->begin_gradient(w.params.values(), data_.train, w.sampler->peek(sc_.optimizer.batch_size),
                           pending_[static_cast<size_t>(w.id)]);
    w.params.reset();
  }
  set_state(w, WorkerState::kCommunicating);
  count_pull(message_bytes_);
  // The real mode delivers the parameters itself, padded from when the pull left the links.
  if (const auto through = network_.send_pull(engine_, w.id, w.group, message_bytes_,
                                              {kParamsArrive, static_cast<uint32_t>(w.id), w.gen}, obs_,
                                              /*deliver=*/!direct_))
    granted_through_ = *through;
  if (direct_) return direct_->params_granted(w, granted_through_);
}

void WorkerCore::push_notice(Worker& w) {
  ++result_.skipped_push;
  if (direct_) return direct_->push_sent(w);
  set_state(w, WorkerState::kCommunicating, Activity::kPush);
  // The server re-applies w's last gradient: a whole pass, as for a push of the parameters' size.
  engine_.schedule(server_apply(engine_.now() + latency_of(w), message_bytes_), kPushApplied,
                   static_cast<uint32_t>(w.id), w.gen);
}

void WorkerCore::push(Worker& w, int64_t bytes) {
  count_push(bytes);
  if (direct_) return direct_->push_sent(w);
  set_state(w, WorkerState::kCommunicating, Activity::kPush);
  w.push_bytes.push_back(bytes);
  // kPushAtServer when its first byte reaches the server (the star, cut-through) or all of it
  // (the flows).
  network_.send_push(engine_, w.id, w.group, bytes, {kPushAtServer, static_cast<uint32_t>(w.id), w.gen});
}

void WorkerCore::on_push_at_server(Worker& w) {
  const int64_t bytes = w.push_bytes.front();
  w.push_bytes.pop_front();
  engine_.schedule(server_apply(push_through(w, engine_.now(), bytes), bytes), kPushApplied,
                   static_cast<uint32_t>(w.id), w.gen);
}

SimTime WorkerCore::server_apply(SimTime through, int64_t bytes) {
  if (apply_ns_per_float_ == 0) return through;
  const SimTime start = max(through, apply_free_);
  apply_free_ =
      start + SimTime::from_ns(std::llround(static_cast<double>(bytes) / 4.0 * apply_ns_per_float_));
  return apply_free_;
}

void WorkerCore::next_clock(Worker& w, bool min_rose) {
  const bool go = policy_->may_start(w.id, clocks_) &&
                  !(refuse_from_clock_ && clocks_.clock(w.id) >= *refuse_from_clock_);
  if (go) grant(w);
  if (!waiting_.empty() && (min_rose || policy_->recheck_every_push())) release_waiting();
  if (!go) {  // after the release: the pusher is re-checked from the next push on
    set_state(w, WorkerState::kWaiting);
    note_blocked(w, WaitCause::kPolicy, clocks_.clock(w.id), 0);
    waiting_.push_back(w.id);
  }
  if (all_blocked()) deadlock();
}

// Grants every waiting worker the policy now allows, in worker order.
void WorkerCore::release_waiting() {
  std::sort(waiting_.begin(), waiting_.end());
  size_t keep = 0;
  for (int32_t id : waiting_) {
    if (policy_->may_start(id, clocks_))
      grant(workers_[static_cast<size_t>(id)]);
    else
      waiting_[keep++] = id;
  }
  waiting_.resize(keep);
}

int64_t WorkerCore::push_bytes_for(std::span<const int32_t> batch) {
  if (!math_ || plan_.cost) return message_bytes_;
  return model_->update_bytes(data_.train, batch);
}

int64_t WorkerCore::next_push_bytes(Worker& w) {
  if (!math_ || plan_.cost) return message_bytes_;
  return push_bytes_for(w.sampler->peek(sc_.optimizer.batch_size));
}

// ---- Gradients ------------------------------------------------------------------------------

double WorkerCore::compute_gradient(Worker& w, std::span<const int32_t> batch) {
  if (w.task) return collect_task(w, batch);
  if (defer_) return finish_deferred(w, batch);
  return model_->loss_and_gradient(w.params.values(), data_.train, batch, grad_);
}

// Pool mode: queues w's gradient on the parameters just read and the batch its push will draw.
void WorkerCore::start_task(Worker& w) {
  std::unique_ptr<GradientTask> t;
  if (!spare_.empty()) {
    t = std::move(spare_.back());
    spare_.pop_back();
  } else {
    t = std::make_unique<GradientTask>();
    t->grad.resize(grad_.size());
  }
  t->params = w.params.values();
  t->pin = store_->pin(w.params);
  const auto batch = w.sampler->peek(sc_.optimizer.batch_size);
  t->batch.assign(batch.begin(), batch.end());
  pool_->submit(*t);
  w.task = std::move(t);
  ++tasks_out_;
}

// Pool mode: w's gradient, once computed; its loss. The gradient stays in w.task->grad until
// release_task.
double WorkerCore::collect_task(Worker& w, std::span<const int32_t> batch) {
  GradientTask& t = *w.task;
  if (!std::ranges::equal(batch, t.batch))
    throw std::logic_error(
        fmt::format("worker {}: its pooled gradient is not for the batch it pushes", w.id));
  pool_->wait(t);
  store_->unpin(static_cast<const detail::Block*>(t.pin));
  t.pin = nullptr;
  ++result_.pooled_gradients;
  return t.loss;
}

void WorkerCore::release_task(Worker& w) {
  if (!w.task) return;
  if (w.task->pin) {  // not collected (a crash, the end of the run)
    pool_->cancel(*w.task);
    store_->unpin(static_cast<const detail::Block*>(w.task->pin));
    w.task->pin = nullptr;
  }
  spare_.push_back(std::move(w.task));
  --tasks_out_;
}

// Deferred mode: the gradient w began when its parameters were read, finished into grad_.
double WorkerCore::finish_deferred(Worker& w, std::span<const int32_t> batch) {
  DeferredGradient& pending = pending_[static_cast<size_t>(w.id)];
  if (!pending.pending || !std::ranges::equal(batch, pending.batch))
    throw std::logic_error(
        fmt::format("worker {}: its deferred gradient is not for the batch it pushes", w.id));
  model_->finish_gradient(pending, data_.train, grad_);
  return pending.loss;
}

std::vector<float> WorkerCore::take_grad_buffer() {
  std::vector<float> g;
  if (!free_grads_.empty()) {
    g = std::move(free_grads_.back());
    free_grads_.pop_back();
  }
  g.resize(grad_.size());
  return g;
}

void WorkerCore::count_in_flight() {
  if (!math_) return;
  in_flight_sum_ += begun_;
  ++in_flight_count_;
  begun_ = std::max<int64_t>(0, begun_ - 1);
}

// ---- The tail of an applied gradient --------------------------------------------------------

bool WorkerCore::check_loss(Worker& w, double loss) {
  if (!std::isfinite(loss)) {
    release_task(w);
    diverge(w, loss);
    return false;
  }
  result_.last_finite_loss = loss;
  return true;
}

double WorkerCore::apply_to_server(Worker& w, std::span<const float> g, const GradientInfo& info,
                                   const Snapshot& read) {
  const double step = opt_->add(*store_, g, info, read_params(read));
  release_task(w);
  return step;
}

bool WorkerCore::applied(Worker& w, const GradientInfo& info, double step, bool wait_at_stop) {
  if (obs_) obs_->gradient(engine_.now(), info, step);
  ++result_.server_updates;
  ++w.iterations;
  result_.staleness.add(info.staleness);
  result_.missed_updates.add(info.missed_updates());
  staleness_sum_ += info.staleness;
  ++staleness_count_;
  const bool min_rose = clocks_.advance(w.id);
  policy_->on_push(w.id, engine_.now(), clocks_);
  if (obs_) obs_->update(engine_.now(), w.id, store_->version(), info.staleness, info.missed_updates());
  if (sc_.stop.max_updates && result_.server_updates >= *sc_.stop.max_updates) {
    if (wait_at_stop) set_state(w, WorkerState::kWaiting);
    result_.stop_reason = StopReason::kMaxUpdates;
    stop();
  }
  return min_rose;
}

// ---- Metrics rows and the end of the run ----------------------------------------------------

MetricsRow WorkerCore::take_metrics_row(SimTime now) {
  MetricsRow row;
  row.time = now;
  row.server_version = store_->version();
  if (math_ && loss_count_) row.train_loss = loss_sum_ / static_cast<double>(loss_count_);
  if (staleness_count_)
    row.mean_staleness = static_cast<double>(staleness_sum_) / static_cast<double>(staleness_count_);
  row.bytes = result_.bytes_push + result_.bytes_pull;
  loss_sum_ = 0;
  loss_count_ = 0;
  staleness_sum_ = 0;
  staleness_count_ = 0;
  return row;
}

void WorkerCore::end_pool() {
  for (auto& w : workers_) release_task(w);
  pool_.reset();
  if (in_flight_count_)
    result_.gradients_in_flight = static_cast<double>(in_flight_sum_) / static_cast<double>(in_flight_count_);
}

void WorkerCore::finish_workers(SimTime end) {
  for (auto& w : workers_) {
    close_interval(w, end);
    w.state_since = end;
    w.params.reset();
    result_.workers.push_back(
        WorkerStats{w.id, profile_of(w), w.iterations, w.compute_ns, w.wait_ns, w.communicate_ns});
  }
}

void WorkerCore::finish_result() {
  if (math_) {
    auto p = store_->peek();
    result_.final_params.assign(p.begin(), p.end());
  }
  result_.data_files = data_.files;
  result_.peak_live_versions = store_->peak_live_blocks();
  result_.events = engine_.events_run();
}

void WorkerCore::diverge(Worker& w, double loss) {
  result_.status = RunStatus::kDiverged;
  result_.stop_reason = StopReason::kDiverged;
  result_.diverged_at_s = engine_.now().seconds();
  result_.diverged_worker = w.id;
  result_.detail = fmt::format("worker {}'s training loss became {} at t={:.6f} s (server version {})", w.id,
                               loss, engine_.now().seconds(), store_->version());
  stop();
}

void WorkerCore::deadlock() {
  result_.status = RunStatus::kDeadlock;
  result_.stop_reason = StopReason::kDeadlock;
  // Who waits for whom: a worker ahead of the minimum clock waits for the slowest worker; a
  // worker at the minimum clock waits for no other worker, only for the policy's leave, which
  // nothing left in the run can change.
  std::string who;
  const int32_t slowest = clocks_.slowest();
  for (size_t i = 0; i < waiting_.size() && i < 8; ++i) {
    const int32_t id = waiting_[i];
    const int64_t c = clocks_.clock(id);
    who += i ? "; " : "";
    if (c > clocks_.min_clock())
      who += fmt::format("worker {} (clock {}) waits for worker {} (clock {})", id, c, slowest,
                         clocks_.min_clock());
    else
      who += fmt::format("worker {} (clock {}, the slowest) waits for the policy's leave", id, c);
  }
  if (waiting_.size() > 8) who += fmt::format("; and {} more", waiting_.size() - 8);
  result_.detail = fmt::format(
      "at t={:g} s every worker is blocked and no event is pending: {}; policy {}, minimum clock {}",
      engine_.now().seconds(), who, policy_->name(), clocks_.min_clock());
  stop();
}

}  // namespace stalesim
