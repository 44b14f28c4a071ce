// Pull every iteration (sim/worker/pull.hpp): BSP, SSP, DSSP, ASP and n-softsync, with B-FASGD's gate.

#include "sim/worker/pull.hpp"

#include <algorithm>
#include <cmath>

namespace stalesim {

void PullProtocol::on_params(Worker& w) {
  w.seen_version = w.read_version;
  c_.set_state(w, WorkerState::kComputing);
  c_.schedule_compute(w);
}

void PullProtocol::on_message(const Event& e) {
  if (e.kind == kPullRequestArrives) c_.grant(c_.workers[e.target]);
}

std::optional<double> PullProtocol::apply_gradient(Worker& w, GradientInfo& info) {
  if (!c_.math) return c_.opt->add(*c_.store, {}, info, {});
  const int32_t batch_size = c_.sc.optimizer.batch_size;
  if (w.skip_push) {  // B-FASGD: the server re-applies the last gradient
    const WorkerCold& wc = c_.cold_of(w);
    w.sampler->next(batch_size);  // the batch the worker used, sent nowhere
    info.version_read = wc.last_grad_version;
    return c_.opt->add(*c_.store, wc.last_grad, info, {});
  }
  const auto batch = w.sampler->next(batch_size);
  const double loss = w.task ? c_.collect_task(w, batch)
                      : c_.defer
                          ? c_.finish_deferred(w, batch)
                          : c_.model->loss_and_gradient(w.params.values(), c_.data.train, batch, c_.grad);
  return apply_computed(w, info, loss, w.task ? std::span<const float>(w.task->grad) : c_.grad);
}

std::optional<double> PullProtocol::apply_computed(Worker& w, const GradientInfo& info, double loss,
                                                   std::span<const float> g) {
  if (!std::isfinite(loss)) {
    c_.release_task(w);
    c_.diverge(w, loss);
    return std::nullopt;
  }
  c_.result.last_finite_loss = loss;
  c_.loss_sum += loss;
  ++c_.loss_count;
  const double step = c_.opt->add(*c_.store, g, info, c_.read_params(w.params));
  c_.release_task(w);
  if (c_.gate) {
    WorkerCold& wc = c_.cold_of(w);
    wc.last_grad = c_.grad;
    wc.has_last_grad = true;
    wc.last_grad_version = w.read_version;
  }
  return step;
}

void PullProtocol::on_push_applied(Worker& w) {
  GradientInfo info{w.id, w.read_version, c_.store->version(), w.read_staleness};
  if (c_.math) {  // the available parallelism: gradients begun (parameters read), not yet applied
    c_.in_flight_sum += c_.begun;
    ++c_.in_flight_count;
    c_.begun = std::max<int64_t>(0, c_.begun - 1);
  }
  const std::optional<double> step = apply_gradient(w, info);
  if (!step) return;
  c_.note_gradient(info, *step);
  if (!(c_.gate && w.skip_fetch)) w.params.reset();
  const bool min_rose = c_.book_applied(w, info);
  if (c_.sc.stop.max_updates && c_.result.server_updates >= *c_.sc.stop.max_updates) {
    c_.set_state(w, WorkerState::kWaiting);
    c_.result.stop_reason = "max_updates";
    return c_.stop();
  }
  const bool go = c_.policy->may_start(w.id, c_.clocks) &&
                  !(c_.refuse_from_clock && c_.clocks.clock(w.id) >= *c_.refuse_from_clock);
  if (go) c_.grant(w);
  if (!c_.waiting.empty() && (min_rose || c_.policy->recheck_every_push())) c_.release_waiting();
  if (!go) {  // after the release: the pusher is re-checked from the next push on
    c_.set_state(w, WorkerState::kWaiting);
    if (c_.obs) c_.obs->blocked(c_.engine.now(), w.id, WaitCause::kPolicy, c_.clocks.clock(w.id), 0);
    c_.waiting.push_back(w.id);
  }
  if (c_.all_blocked()) c_.deadlock();
}

}  // namespace stalesim
