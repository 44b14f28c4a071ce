// Pull every iteration (sim/worker/pull.hpp): BSP, SSP, DSSP, ASP and n-softsync, with B-FASGD's gate.

#include "sim/worker/pull.hpp"

namespace stalesim {

PullProtocol::PullProtocol(WorkerCore& c) : WorkerProtocol(c), gate_(c.optimizer().rule().transfer_gate()) {
  if (!gate_) return;
  gated_.resize(c.workers().size());
  for (size_t id = 0; id < gated_.size(); ++id)
    gated_[id].transmit_rng = Rng(c.scenario().seed, Purpose::kTransmit, static_cast<uint64_t>(id));
}

void PullProtocol::on_params(Worker& w) {
  w.seen_version = w.read_version;
  c_.set_state(w, WorkerState::kComputing);
  c_.schedule_compute(w);
}

void PullProtocol::on_message(const Event& e) {
  if (e.kind == kPullRequestArrives) c_.grant(c_.worker(e.target));
}

void PullProtocol::send_push(Worker& w) {
  if (gate_) {  // both draws every time, in a fixed order, from the worker's own stream
    GateState& g = gated_[static_cast<size_t>(w.id)];
    const bool push_now = g.transmit_rng.uniform() < gate_->push_probability();
    const bool fetch = g.transmit_rng.uniform() < gate_->fetch_probability();
    w.skip_push = !push_now && g.has_last_grad;
    w.skip_fetch = !fetch;
    if (w.skip_push) return c_.push_notice(w);
  }
  c_.push(w, c_.next_push_bytes(w));
}

std::optional<double> PullProtocol::apply_gradient(Worker& w, GradientInfo& info) {
  if (!c_.math()) return c_.apply_to_server(w, {}, info, {});
  const int32_t batch_size = c_.scenario().optimizer.batch_size;
  if (w.skip_push) {  // B-FASGD: the server re-applies the last gradient
    const GateState& g = gated_[static_cast<size_t>(w.id)];
    w.sampler->next(batch_size);  // the batch the worker used, sent nowhere
    info.version_read = g.last_grad_version;
    return c_.apply_to_server(w, g.last_grad, info, {});
  }
  const auto batch = w.sampler->next(batch_size);
  const double loss = c_.compute_gradient(w, batch);
  return apply_computed(w, info, loss, c_.gradient_of(w));
}

std::optional<double> PullProtocol::apply_computed(Worker& w, const GradientInfo& info, double loss,
                                                   std::span<const float> g) {
  if (!c_.check_loss(w, loss)) return std::nullopt;
  c_.count_loss(loss);
  const double step = c_.apply_to_server(w, g, info, w.params);
  if (gate_) {
    GateState& gs = gated_[static_cast<size_t>(w.id)];
    gs.last_grad.assign(g.begin(), g.end());
    gs.has_last_grad = true;
    gs.last_grad_version = w.read_version;
  }
  return step;
}

void PullProtocol::on_push_applied(Worker& w) {
  GradientInfo info{w.id, w.read_version, c_.store().version(), w.read_staleness};
  c_.count_in_flight();  // the available parallelism: gradients begun, not yet applied
  const std::optional<double> step = apply_gradient(w, info);
  if (!step) return;
  // A skipped fetch (B-FASGD's gate, or a protocol that fetches less often) keeps w's copy for
  // its next clock (WorkerCore::grant).
  if (!w.skip_fetch) w.params.reset();
  const bool min_rose = c_.applied(w, info, *step, /*wait_at_stop=*/true);
  if (!c_.stopped()) c_.next_clock(w, min_rose);
}

}  // namespace stalesim
