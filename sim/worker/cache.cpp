// Cache modes: lazy SSP (Bosen) and ESSP (Bosen's SSPPush; sim/policies/essp.hpp). The worker at
// clock c (pushes sent) may compute from its copy when that copy's server clock is >= c - s; else
// it waits: under lazy SSP for the fetch that rides on its last push, under ESSP for the server's
// next push. Its copy always includes its own updates.

#include <algorithm>
#include <cmath>

#include "sim/worker/protocol.hpp"

namespace stalesim {

namespace {

class CacheProtocol final : public WorkerProtocol {
 public:
  explicit CacheProtocol(WorkerCore& c)
      : WorkerProtocol(c), eager_(c.policy->cache_mode() == CacheMode::kEager) {
    c.need_cold();
    const Model& m = *c.model;
    if (c.math && !c.plan.cost && m.row_count() > 0) {
      std::vector<int64_t> row_bytes(static_cast<size_t>(m.row_count()));
      for (size_t r = 0; r < row_bytes.size(); ++r) row_bytes[r] = m.row_bytes(static_cast<int32_t>(r));
      c.changed_rows = ChangedRows(std::move(row_bytes), c.clocks.workers());
    }
  }
  void on_params(Worker& w) override;
  void on_compute_done(Worker& w) override;
  void on_push_applied(Worker& w) override;
  void on_message(const Event& e) override {
    if (e.kind == kPullRequestArrives) send_snapshot(c_.workers[e.target]);
  }

 private:
  int64_t staleness_bound() const { return c_.sc.policy.staleness; }
  void send_snapshot(Worker& w);
  void apply_own(Worker& w, const std::vector<float>& g);
  void start_cached(Worker& w);

  bool eager_;                   // ESSP: the server pushes parameters to every worker when its clock advances
  std::vector<int32_t> parked_;  // lazy: fetches waiting for the server clock
};

// The server sends the current parameters to w, stamped with the server clock.
void CacheProtocol::send_snapshot(Worker& w) {
  WorkerCold& wc = c_.cold_of(w);
  InFlight m{c_.store->read(), c_.clocks.min_clock(), c_.clocks.clock(w.id)};
  const int64_t bytes = c_.changed_rows.copy_bytes(w.id, c_.store->version(), c_.message_bytes);
  const SimTime sent = c_.server_transfer(c_.engine.now(), bytes, w.id, WireKind::kPull);
  c_.result.bytes_pull += bytes;
  ++c_.result.messages_pull;
  wc.inbox.push_back(std::move(m));
  c_.engine.schedule(sent + c_.latency_of(w) + c_.worker_link(w, bytes), kSnapshotArrives,
                     static_cast<uint32_t>(w.id), w.gen);
}

void CacheProtocol::on_params(Worker& w) {
  WorkerCold& wc = c_.cold_of(w);
  InFlight m = std::move(wc.inbox.front());
  wc.inbox.pop_front();
  if (m.clock < wc.cache_clock) return;  // an older copy overtaken by a newer one
  wc.cache = std::move(m.params);
  wc.cache_clock = m.clock;
  while (!wc.own.empty() && wc.own.front().index < m.included) {
    c_.free_grads.push_back(std::move(wc.own.front().grad));
    wc.own.pop_front();
  }
  wc.has_local = c_.math && !wc.own.empty();
  if (wc.has_local) {  // own updates the server had not applied when it sent this copy
    const auto v = wc.cache.values();
    wc.local.assign(v.begin(), v.end());
    for (const auto& o : wc.own) apply_own(w, o.grad);
  }
  if (wc.blocked && wc.cache_clock >= wc.sent - staleness_bound()) start_cached(w);
}

void CacheProtocol::apply_own(Worker& w, const std::vector<float>& g) {
  WorkerCold& wc = c_.cold_of(w);
  const auto step = static_cast<float>(c_.opt->own_step());
  for (size_t i = 0; i < g.size(); ++i) wc.local[i] -= step * g[i];
}

void CacheProtocol::start_cached(Worker& w) {
  WorkerCold& wc = c_.cold_of(w);
  wc.blocked = false;
  const int64_t gap = wc.sent - c_.clocks.min_clock();
  c_.result.max_clock_gap = std::max(c_.result.max_clock_gap, gap);
  w.read_staleness = wc.sent - wc.cache_clock;
  w.read_version = wc.cache.version();
  c_.set_state(w, WorkerState::kComputing);
  c_.schedule_compute(w);
}

void CacheProtocol::on_compute_done(Worker& w) {
  WorkerCold& wc = c_.cold_of(w);
  OwnPush o;
  o.index = wc.sent;
  o.read_version = w.read_version;
  o.read_staleness = w.read_staleness;
  if (c_.math) {
    if (!c_.free_grads.empty()) {
      o.grad = std::move(c_.free_grads.back());
      c_.free_grads.pop_back();
    }
    o.grad.resize(c_.grad.size());
    const std::span<const float> view = wc.has_local ? std::span<const float>(wc.local) : wc.cache.values();
    const auto batch = w.sampler->next(c_.sc.optimizer.batch_size);
    o.loss = c_.model->loss_and_gradient(view, c_.data.train, batch, o.grad);
    o.bytes = c_.push_bytes_for(batch);
    if (c_.changed_rows.enabled()) c_.model->changed_rows(c_.data.train, batch, o.rows);
    if (!std::isfinite(o.loss)) return c_.diverge(w, o.loss);
    c_.result.last_finite_loss = o.loss;
    if (!wc.has_local) {
      wc.local.assign(view.begin(), view.end());
      wc.has_local = true;
    }
    apply_own(w, o.grad);
  }
  wc.own.push_back(std::move(o));
  ++wc.sent;
  // The push leaves on the worker's own link, behind any push still being sent.
  const int64_t bytes = c_.math ? wc.own.back().bytes : c_.message_bytes;
  const SimTime start = max(c_.engine.now(), wc.link_free);
  wc.link_free = start + c_.worker_link(w, bytes);
  c_.result.bytes_push += bytes;
  ++c_.result.messages_push;
  w.push_bytes.push_back(bytes);
  c_.engine.schedule(wc.link_free + c_.latency_of(w), kPushAtServer, static_cast<uint32_t>(w.id), w.gen);
  if (wc.cache_clock >= wc.sent - staleness_bound()) return start_cached(w);
  wc.blocked = true;
  wc.fetch_wanted = !eager_;
  c_.set_state(w, WorkerState::kWaiting);
  if (c_.obs) c_.obs->blocked(c_.engine.now(), w.id, WaitCause::kStaleCache, wc.sent, wc.cache_clock);
}

void CacheProtocol::on_push_applied(Worker& w) {
  WorkerCold& wc = c_.cold_of(w);
  const int64_t index = c_.clocks.clock(w.id);
  OwnPush& o = wc.own[static_cast<size_t>(index - wc.own.front().index)];
  GradientInfo info{w.id, o.read_version, c_.store->version(), o.read_staleness};
  if (c_.math) {
    c_.loss_sum += o.loss;
    ++c_.loss_count;
  }
  c_.note_gradient(info, c_.opt->add(*c_.store, o.grad, info, c_.read_params(wc.cache)));
  c_.changed_rows.note_update(o.rows, c_.store->version());
  const bool min_rose = c_.book_applied(w, info);
  if (c_.sc.stop.max_updates && c_.result.server_updates >= *c_.sc.stop.max_updates) {
    c_.result.stop_reason = "max_updates";
    return c_.stop();
  }
  if (min_rose) {
    if (eager_) {
      for (auto& other : c_.workers) send_snapshot(other);
    } else {
      size_t keep = 0;
      for (int32_t id : parked_) {
        Worker& p = c_.workers[static_cast<size_t>(id)];
        WorkerCold& pc = c_.cold_of(p);
        if (c_.clocks.min_clock() >= pc.sent - staleness_bound())
          send_snapshot(p);
        else
          parked_[keep++] = id;
      }
      parked_.resize(keep);
    }
  }
  // A lazy fetch rides on the worker's last push: the server answers once it is fresh enough.
  if (wc.fetch_wanted && index + 1 == wc.sent) {
    wc.fetch_wanted = false;
    if (c_.clocks.min_clock() >= wc.sent - staleness_bound())
      send_snapshot(w);
    else
      parked_.insert(std::upper_bound(parked_.begin(), parked_.end(), w.id), w.id);
  }
}

}  // namespace

std::unique_ptr<WorkerProtocol> make_cache_protocol(WorkerCore& c) {
  return std::make_unique<CacheProtocol>(c);
}

}  // namespace stalesim
