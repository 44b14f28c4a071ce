// VAP's worker side (value-bounded sends; sim/policies/vap.hpp): a worker computes on the
// parameters it pulled, then holds its update while sending it would take the infinity norm of
// its in-transit sum above v, asking the server for fresh copies until its older updates have
// reached every other worker.

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/policies/vap.hpp"
#include "sim/worker/pull.hpp"

namespace stalesim {

namespace {

class VapProtocol final : public PullProtocol {
 public:
  VapProtocol(WorkerCore& c, ValueGate& vap) : PullProtocol(c), vap_(vap), state_(c.workers().size()) {}
  void on_params(Worker& w) override {
    PullProtocol::on_params(w);
    recheck_holders();  // this read may complete the receipt of others' updates
  }
  void on_compute_done(Worker& w) override;
  void on_message(const Event& e) override {
    if (e.kind == kRefreshArrives) return on_refresh_arrives(c_.worker(e.target));
    PullProtocol::on_message(e);
  }
  bool pool_allowed() const override { return false; }

 private:
  // A worker's side of VAP: `own` holds the updates sent but not yet received by every other
  // worker, and in_transit their sum; `held` is an update waiting to be sent.
  struct VapWorker {
    LazyDeque<OwnPush> own;
    std::vector<float> in_transit;
    OwnPush held;
    bool holding = false;
    int64_t push_bytes = 0;       // size of the held update
    int64_t refresh_version = 0;  // the version of the fresh copy on its way to a holding worker
    bool refresh_in_flight = false;
  };

  VapWorker& of(const Worker& w) { return state_[static_cast<size_t>(w.id)]; }
  std::optional<double> apply_gradient(Worker& w, GradientInfo& info) override;
  void retire_received(Worker& w);
  bool try_send(Worker& w);
  void recheck_holders();
  void request_refresh(Worker& w);
  void on_refresh_arrives(Worker& w);

  ValueGate& vap_;                // the policy's value bound
  std::vector<VapWorker> state_;  // by worker id
  std::vector<int32_t> holders_;  // workers holding an update, ascending
};

void VapProtocol::on_compute_done(Worker& w) {
  VapWorker& wc = of(w);
  OwnPush o;
  o.index = c_.clocks().clock(w.id);
  o.read_version = w.read_version;
  o.read_staleness = w.read_staleness;
  o.grad = c_.take_grad_buffer();
  const auto batch = w.sampler->next(c_.scenario().optimizer.batch_size);
  o.loss = c_.model().loss_and_gradient(w.params.values(), c_.data().train, batch, o.grad);
  if (!c_.check_loss(w, o.loss)) return;
  wc.push_bytes = c_.push_bytes_for(batch);
  if (!c_.optimizer().rule().needs_read_params()) w.params.reset();  // else kept for the apply
  wc.held = std::move(o);
  wc.holding = true;
  if (try_send(w)) return;
  vap_.note_hold();
  c_.set_state(w, WorkerState::kWaiting);
  c_.note_blocked(w, WaitCause::kValueBound, wc.held.index, 0);
  holders_.insert(std::upper_bound(holders_.begin(), holders_.end(), w.id), w.id);
  request_refresh(w);
  if (static_cast<int32_t>(holders_.size()) == c_.clocks().workers()) {
    // Everyone holds: a fresh copy for each, taken after every applied update, lets each see
    // all of the others' updates, so their in-transit sums empty.
    for (int32_t id : holders_) request_refresh(c_.worker(static_cast<size_t>(id)));
  }
}

// The gradient was computed when the compute ended, to judge its size.
std::optional<double> VapProtocol::apply_gradient(Worker& w, GradientInfo& info) {
  VapWorker& wc = of(w);
  OwnPush& o = wc.own.back();
  info.version_read = o.read_version;
  info.staleness = o.read_staleness;
  o.applied_version = c_.store().version();
  c_.count_loss(o.loss);
  return c_.apply_to_server(w, o.grad, info, w.params);
}

// Retires w's updates that every other worker has received, then recomputes their sum in a
// fixed order (no drift from repeated subtraction).
void VapProtocol::retire_received(Worker& w) {
  VapWorker& wc = of(w);
  int64_t min_seen = std::numeric_limits<int64_t>::max();
  for (const auto& q : c_.workers())
    if (q.id != w.id) min_seen = std::min(min_seen, q.seen_version);
  bool retired = false;
  while (!wc.own.empty() && wc.own.front().applied_version >= 0 &&
         wc.own.front().applied_version < min_seen) {
    c_.recycle_grad_buffer(std::move(wc.own.front().grad));
    wc.own.pop_front();
    retired = true;
  }
  if (!retired && !wc.in_transit.empty()) return;
  const auto step = static_cast<float>(c_.optimizer().own_step());
  const size_t n = c_.gradient_size();
  wc.in_transit.assign(n, 0.0f);
  for (const auto& o : wc.own)
    for (size_t i = 0; i < n; ++i) wc.in_transit[i] -= step * o.grad[i];
}

bool VapProtocol::try_send(Worker& w) {
  VapWorker& wc = of(w);
  retire_received(w);
  const auto step = static_cast<float>(c_.optimizer().own_step());
  const auto& g = wc.held.grad;
  double norm = 0.0;
  for (size_t i = 0; i < g.size(); ++i)
    norm = std::max(norm, static_cast<double>(std::fabs(wc.in_transit[i] - step * g[i])));
  const bool alone = wc.own.empty();
  if (!alone && norm > vap_.value_bound()) return false;
  vap_.note_send(norm, norm > vap_.value_bound());
  for (size_t i = 0; i < g.size(); ++i) wc.in_transit[i] -= step * g[i];
  wc.own.push_back(std::move(wc.held));
  wc.holding = false;
  c_.push(w, wc.push_bytes);
  return true;
}

void VapProtocol::recheck_holders() {
  size_t keep = 0;
  for (int32_t id : holders_)
    if (!try_send(c_.worker(static_cast<size_t>(id)))) holders_[keep++] = id;
  holders_.resize(keep);
}

void VapProtocol::request_refresh(Worker& w) {
  VapWorker& wc = of(w);
  if (wc.refresh_in_flight) return;
  wc.refresh_in_flight = true;
  // The copy holds at least what the server has now (counted conservatively: updates applied
  // while the request travels are not counted as received). The request takes the latency;
  // the reply queues on the server link like any copy.
  wc.refresh_version = c_.store().version();
  const SimTime at_server = c_.engine().now() + c_.latency_of(w);
  const SimTime through = c_.pull_through(w, at_server, c_.message_bytes());
  c_.count_pull(c_.message_bytes());
  c_.engine().schedule(through + c_.latency_of(w), kRefreshArrives, static_cast<uint32_t>(w.id), w.gen);
}

void VapProtocol::on_refresh_arrives(Worker& w) {
  VapWorker& wc = of(w);
  wc.refresh_in_flight = false;
  w.seen_version = std::max(w.seen_version, wc.refresh_version);
  recheck_holders();
}

}  // namespace

// REQUIRES: the policy has a value gate (VAP's line in STALESIM_POLICIES alone names this factory).
std::unique_ptr<WorkerProtocol> make_vap_protocol(WorkerCore& c) {
  return std::make_unique<VapProtocol>(c, *c.policy().value_gate());
}

}  // namespace stalesim
