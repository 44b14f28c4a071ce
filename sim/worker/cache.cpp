// Cache modes: lazy SSP (Bosen) and ESSP (Bosen's SSPPush; sim/policies/essp.hpp). The worker at
// clock c (pushes sent) may compute from its copy when that copy's server clock is >= c - s; else
// it waits: under lazy SSP for the fetch that rides on its last push, under ESSP for the server's
// next push. Its copy always includes its own updates. s is the policy's clock_bound().

#include <algorithm>
#include <cmath>

#include "sim/worker/changed_rows.hpp"
#include "sim/worker/protocol.hpp"

namespace stalesim {

namespace {

class CacheProtocol final : public WorkerProtocol {
 public:
  explicit CacheProtocol(WorkerCore& c)
      : WorkerProtocol(c),
        bound_(c.policy().clock_bound().value()),
        eager_(c.policy().cache_mode() == CacheMode::kEager),
        state_(c.workers().size()) {
    const Model& m = c.model();
    if (c.math() && !c.plan().cost && m.row_count() > 0) {
      std::vector<int64_t> row_bytes(static_cast<size_t>(m.row_count()));
      for (size_t r = 0; r < row_bytes.size(); ++r) row_bytes[r] = m.row_bytes(static_cast<int32_t>(r));
      changed_rows_ = ChangedRows(std::move(row_bytes), c.clocks().workers());
    }
  }
  void on_params(Worker& w) override;
  void on_compute_done(Worker& w) override;
  void on_push_applied(Worker& w) override;
  void on_message(const Event& e) override {
    if (e.kind == kPullRequestArrives) send_snapshot(c_.worker(e.target));
  }
  void on_crash(Worker& w) override { changed_rows_.forget(w.id); }

 private:
  // Parameters on their way to a worker.
  struct InFlight {
    Snapshot params;
    int64_t clock = 0;     // server clock they are stamped with
    int64_t included = 0;  // the worker's own pushes they include
  };
  // A worker's side of the cache: it reads its own copy while it is fresh enough.
  struct CacheWorker {
    Snapshot cache;            // the last parameters received
    int64_t cache_clock = -1;  // the server clock they were stamped with; -1 before the first
    int64_t sent = 0;          // pushes sent: the worker's own clock
    std::vector<float> local;  // cache plus own updates it does not include (when has_local)
    bool has_local = false;
    LazyDeque<OwnPush> own;     // own pushes not yet in an arrived snapshot, oldest first
    LazyDeque<InFlight> inbox;  // parameters on their way, in arrival order
    bool blocked = true;        // waiting for parameters fresh enough to start its next clock
    bool fetch_wanted = false;  // lazy: a fetch request rides on the last push
    SimTime link_free;          // when the worker's outgoing link is next idle
  };

  CacheWorker& of(const Worker& w) { return state_[static_cast<size_t>(w.id)]; }
  // Whether a worker that has sent `sent` pushes may compute from a copy of server clock `clock`.
  bool fresh_enough(int64_t clock, int64_t sent) const { return clock >= sent - bound_; }
  void send_snapshot(Worker& w);
  void apply_own(Worker& w, const std::vector<float>& g);
  void start_cached(Worker& w);

  int64_t bound_;  // s: the policy's clock_bound()
  bool eager_;     // ESSP: the server pushes parameters to every worker when its clock advances
  std::vector<CacheWorker> state_;  // by worker id
  std::vector<int32_t> parked_;     // lazy: fetches waiting for the server clock
  ChangedRows changed_rows_;        // row-oriented models: copies carry the changed rows
};

// The server sends the current parameters to w, stamped with the server clock.
void CacheProtocol::send_snapshot(Worker& w) {
  CacheWorker& wc = of(w);
  InFlight m{c_.store().read(), c_.clocks().min_clock(), c_.clocks().clock(w.id)};
  const int64_t bytes = changed_rows_.copy_bytes(w.id, c_.store().version(), c_.message_bytes());
  const SimTime through = c_.pull_through(w, c_.engine().now(), bytes);
  c_.count_pull(bytes);
  wc.inbox.push_back(std::move(m));
  c_.engine().schedule(through + c_.latency_of(w), kSnapshotArrives, static_cast<uint32_t>(w.id), w.gen);
}

void CacheProtocol::on_params(Worker& w) {
  CacheWorker& wc = of(w);
  InFlight m = std::move(wc.inbox.front());
  wc.inbox.pop_front();
  if (m.clock < wc.cache_clock) return;  // an older copy overtaken by a newer one
  wc.cache = std::move(m.params);
  wc.cache_clock = m.clock;
  while (!wc.own.empty() && wc.own.front().index < m.included) {
    c_.recycle_grad_buffer(std::move(wc.own.front().grad));
    wc.own.pop_front();
  }
  wc.has_local = c_.math() && !wc.own.empty();
  if (wc.has_local) {  // own updates the server had not applied when it sent this copy
    const auto v = wc.cache.values();
    wc.local.assign(v.begin(), v.end());
    for (const auto& o : wc.own) apply_own(w, o.grad);
  }
  if (wc.blocked && fresh_enough(wc.cache_clock, wc.sent)) start_cached(w);
}

void CacheProtocol::apply_own(Worker& w, const std::vector<float>& g) {
  CacheWorker& wc = of(w);
  const auto step = static_cast<float>(c_.optimizer().own_step());
  for (size_t i = 0; i < g.size(); ++i) wc.local[i] -= step * g[i];
}

void CacheProtocol::start_cached(Worker& w) {
  CacheWorker& wc = of(w);
  wc.blocked = false;
  c_.note_clock_gap(wc.sent - c_.clocks().min_clock());
  w.read_staleness = wc.sent - wc.cache_clock;
  w.read_version = wc.cache.version();
  c_.set_state(w, WorkerState::kComputing);
  c_.schedule_compute(w);
}

void CacheProtocol::on_compute_done(Worker& w) {
  CacheWorker& wc = of(w);
  OwnPush o;
  o.index = wc.sent;
  o.read_version = w.read_version;
  o.read_staleness = w.read_staleness;
  if (c_.math()) {
    o.grad = c_.take_grad_buffer();
    const std::span<const float> view = wc.has_local ? std::span<const float>(wc.local) : wc.cache.values();
    const auto batch = w.sampler->next(c_.scenario().optimizer.batch_size);
    o.loss = c_.model().loss_and_gradient(view, c_.data().train, batch, o.grad);
    o.bytes = c_.push_bytes_for(batch);
    if (changed_rows_.enabled()) c_.model().changed_rows(c_.data().train, batch, o.rows);
    if (!c_.check_loss(w, o.loss)) return;
    if (!wc.has_local) {
      wc.local.assign(view.begin(), view.end());
      wc.has_local = true;
    }
    apply_own(w, o.grad);
  }
  wc.own.push_back(std::move(o));
  ++wc.sent;
  // The push leaves on the worker's own link, behind any push still being sent; kPushAtServer
  // when its first byte reaches the server (cut-through).
  const int64_t bytes = c_.math() ? wc.own.back().bytes : c_.message_bytes();
  const SimTime start = max(c_.engine().now(), wc.link_free);
  wc.link_free = start + c_.worker_link(w, bytes);
  c_.count_push(bytes);
  w.push_bytes.push_back(bytes);
  c_.engine().schedule(start + c_.latency_of(w), kPushAtServer, static_cast<uint32_t>(w.id), w.gen);
  if (fresh_enough(wc.cache_clock, wc.sent)) return start_cached(w);
  wc.blocked = true;
  wc.fetch_wanted = !eager_;
  c_.set_state(w, WorkerState::kWaiting);
  c_.note_blocked(w, WaitCause::kStaleCache, wc.sent, wc.cache_clock);
}

void CacheProtocol::on_push_applied(Worker& w) {
  CacheWorker& wc = of(w);
  const int64_t index = c_.clocks().clock(w.id);
  OwnPush& o = wc.own[static_cast<size_t>(index - wc.own.front().index)];
  GradientInfo info{w.id, o.read_version, c_.store().version(), o.read_staleness};
  c_.count_loss(o.loss);
  const double step = c_.apply_to_server(w, o.grad, info, wc.cache);
  changed_rows_.note_update(o.rows, c_.store().version());
  const bool min_rose = c_.applied(w, info, step, /*wait_at_stop=*/false);
  if (c_.stopped()) return;
  if (min_rose) {
    if (eager_) {
      for (auto& other : c_.workers()) send_snapshot(other);
    } else {
      size_t keep = 0;
      for (int32_t id : parked_) {
        Worker& p = c_.worker(static_cast<size_t>(id));
        if (fresh_enough(c_.clocks().min_clock(), of(p).sent))
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
    if (fresh_enough(c_.clocks().min_clock(), wc.sent))
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
