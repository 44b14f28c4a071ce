// The real mode's cache modes (sim/real/real_server.hpp): lazy SSP (Bosen's lazy fetch) and ESSP
// (eager SSP: Dai, Kumar, Wei, Ho, Gibson, Xing, "High-performance distributed ML at scale through
// parameter server consistency models", AAAI 2015; Petuum Bosen's SSPPush), with the simulator's
// policy object (sim/policies/essp.hpp, ssp.hpp) and the simulation's cache protocol
// (sim/worker/cache.cpp) split over the ranks:
//  - a worker rank keeps its own copy of the parameters, stamped with the server clock, and its
//    own pushes the copy does not include yet; at clock c (pushes sent) it computes from the copy
//    plus its own updates when the copy's clock is >= c - s, without asking the server; else it
//    waits for a fresher copy;
//  - the server applies each push when it arrives; under ESSP, whenever the server clock (the
//    minimum worker clock) rises, it sends the current parameters to every worker (a
//    server-initiated push over MPI); under lazy SSP a blocked worker's last push carries a fetch,
//    which the server answers once the server clock allows it.
// Emulated timing as in the pull modes (sim/real/real_run.hpp): a copy is used no earlier than
// the scenario's network delivers it, a gradient takes its profile's time, and the worker's
// pushes queue on its own link.

#ifdef STALESIM_HAVE_MPI  // without MPI the real mode refuses to start (real_run.cpp)

#include <algorithm>
#include <csignal>
#include <deque>

#include "sim/real/real_server.hpp"

namespace stalesim::real {

// ---- The server's side ------------------------------------------------------------------------

void RealServer::send_copy(Worker& w) {
  Slot& s = slots_[static_cast<size_t>(w.id)];
  const int64_t now = since(epoch_);
  const Snapshot copy = c_.store().read();
  ParamsHeader h;
  h.version = c_.store().version();
  h.clock = c_.clocks().min_clock();
  h.included = c_.clocks().clock(w.id);
  h.count = static_cast<int64_t>(copy.values().size());
  const int64_t bytes = c_.message_bytes();
  if (opt_.emulated)  // the server's FIFO link and the worker's at once, then the latency
    h.deliver_at_ns = (c_.pull_through(w, c_.engine().now(), bytes) + c_.latency_of(w)).ns();
  c_.count_pull(bytes);
  send_params(w.id, h, copy.values());
  s.copy_clock = std::max(s.copy_clock, h.clock);
  s.parked = false;
  s.heard_at = now;  // the watchdog counts from the copy that lets it go on
}

bool RealServer::cache_expects_push(int32_t w) const {
  const Slot& s = slots_[static_cast<size_t>(w)];
  return s.copy_clock >= 0 && s.copy_clock >= s.received - bound_;
}

void RealServer::on_cache_push_applied(Worker& w) {
  Slot& s = slots_[static_cast<size_t>(w.id)];
  auto [p, grad] = std::move(s.pending.front());
  s.pending.pop_front();
  const int64_t now = since(epoch_);
  record_timing(w.id, p, p.wait_ns, std::max<int64_t>(0, now - p.sent_at_ns), now, std::nullopt);
  GradientInfo info{w.id, p.read_version, c_.store().version(), p.read_staleness};
  if (!c_.check_loss(w, p.loss)) return;
  c_.count_loss(p.loss);
  order_apply(w.id, info);
  const double step = c_.apply_to_server(w, grad, info, {});
  const bool min_rose = c_.applied(w, info, step, /*wait_at_stop=*/false);
  if (c_.stopped()) return;  // stop.max_updates
  if (min_rose) {
    if (eager_) {  // ESSP: the new server clock's parameters to every worker
      for (auto& other : c_.workers()) send_copy(other);
    } else {  // lazy SSP: the parked fetches the server clock now allows, in worker order
      for (auto& other : c_.workers()) {
        Slot& o = slots_[static_cast<size_t>(other.id)];
        if (o.parked && c_.clocks().min_clock() >= o.received - bound_) send_copy(other);
      }
    }
  }
  // Lazy SSP: the fetch riding on the worker's last push, answered once fresh enough.
  if (p.fetch && p.iteration + 1 == s.received) {
    if (c_.clocks().min_clock() >= s.received - bound_)
      send_copy(w);
    else
      s.parked = true;
  }
}

// ---- A worker's side --------------------------------------------------------------------------

namespace {

struct Copy {
  ParamsHeader header;
  std::vector<float> values;
  int64_t received_ns = 0;
  int64_t usable_ns() const { return std::max(received_ns, header.deliver_at_ns); }
};

class CacheWorker {
 public:
  CacheWorker(WorkerCore& c, int32_t id, const RealOptions& opt, const Layout& l, Clock::time_point epoch)
      : c_(c),
        w_(c.worker(static_cast<size_t>(id))),
        opt_(opt),
        layout_(l),
        epoch_(epoch),
        bound_(c.policy().clock_bound().value_or(0)),
        eager_(c.policy().cache_mode() == CacheMode::kEager),
        step_(static_cast<float>(c.optimizer().own_step())),
        grad_(c.gradient_size()) {}

  void run() {
    std::vector<char> buf;
    int from = 0;
    int64_t t = 0;  // the stamp of the next iteration's start (emulated: the scenario's time)
    int64_t wait = 0;
    for (;;) {
      if (const int sig = g_signal.load())
        throw std::runtime_error(fmt::format("the worker received signal {}", sig));
      while (try_receive(0, kTagParams, buf, from))
        if (!take(buf)) return bye();
      const int64_t now = since(epoch_);
      while (!inbox_.empty() && inbox_.front().usable_ns() <= std::max(now, t)) use_front();
      if (fresh()) {
        t = iterate(t, wait);
        wait = 0;
        continue;
      }
      // Blocked: wait for the next copy (ESSP: the server's push; lazy: the answer to the fetch).
      if (inbox_.empty()) {
        await_server(buf, opt_.watchdog_s);
        if (!take(buf)) return bye();
      }
      const int64_t usable = inbox_.front().usable_ns();
      sleep_ns(usable - since(epoch_));
      if (usable > t) {
        wait += usable - t;
        t = usable;
      }
      use_front();
    }
  }

 private:
  // Whether the worker's copy lets it compute its next clock (the cache protocol's bound).
  bool fresh() const { return cache_clock_ >= 0 && cache_clock_ >= sent_ - bound_; }
  // A message from the server: a copy (kept in arrival order; with shards, rank 0's part and then
  // every shard's), or the end (false).
  bool take(const std::vector<char>& buf) {
    Copy m;
    std::vector<float> part;
    m.header = unpack<ParamsHeader>(buf, part);
    if (m.header.stop) return false;
    receive_slices(layout_, part, m.values, opt_.watchdog_s);
    m.received_ns = since(epoch_);
    inbox_.push_back(std::move(m));
    return true;
  }
  // The oldest copy in the inbox becomes the worker's (unless a newer one came first), with its own
  // pushes the copy does not include applied on top.
  void use_front() {
    Copy m = std::move(inbox_.front());
    inbox_.pop_front();
    if (m.header.clock < cache_clock_) return;
    cache_ = std::move(m.values);
    cache_clock_ = m.header.clock;
    cache_version_ = m.header.version;
    while (!own_.empty() && own_.front().first < m.header.included) own_.pop_front();
    local_ = cache_;
    for (const auto& o : own_) apply_own(o.second);
  }
  void apply_own(const std::vector<float>& g) {
    for (size_t i = 0; i < g.size(); ++i) local_[i] -= step_ * g[i];
  }
  // One iteration from stamp `t` on the worker's copy; returns the stamp it ends at.
  int64_t iterate(int64_t t, int64_t wait) {
    PushHeader p;
    p.iteration = sent_;
    p.params_at_ns = t;
    p.wait_ns = wait;
    p.read_version = cache_version_;
    p.read_staleness = sent_ - cache_clock_;
    const int64_t begin = since(epoch_);
    const auto batch = w_.sampler->next(c_.scenario().optimizer.batch_size);
    p.loss = c_.model().loss_and_gradient(local_, c_.data().train, batch, grad_);
    const int64_t done = since(epoch_);
    p.compute_ns = done - begin;
    int64_t end = done;
    p.sent_at_ns = done;
    if (opt_.emulated) {  // the profile's time, then the push queues on the worker's own link
      const int64_t target = c_.compute_time(w_, SimTime::from_ns(t)).ns();
      p.padding_ns = std::max<int64_t>(0, target - p.compute_ns);
      end = std::max(done, t + target);
      const int64_t bytes =
          c_.plan().cost ? c_.message_bytes() : static_cast<int64_t>(grad_.size() * sizeof(float));
      p.sent_at_ns = std::max(end, link_free_);
      link_free_ = p.sent_at_ns + c_.worker_link(w_, bytes).ns();
      sleep_ns(end - done);
    }
    if (opt_.fault && opt_.fault->worker == w_.id && opt_.fault->iteration == sent_)
      ::raise(opt_.fault->hang ? SIGSTOP : SIGKILL);
    apply_own(grad_);
    own_.emplace_back(sent_, grad_);
    ++sent_;
    // Lazy SSP: blocked after this push, the worker asks for a copy with it.
    p.fetch = !eager_ && !fresh();
    send_push(layout_, p, grad_);
    return opt_.emulated ? end : since(epoch_);
  }
  // The answer to the server's stop: the last message, after every push.
  void bye() {
    PushHeader p;
    p.bye = 1;
    send_polling(pack(p, {}), 0, kTagPush);
  }

  WorkerCore& c_;
  Worker& w_;
  const RealOptions& opt_;
  Layout layout_;
  Clock::time_point epoch_;
  int64_t bound_;
  bool eager_;
  float step_;
  std::vector<float> grad_;  // the gradient of the current iteration
  std::vector<float> cache_, local_;
  int64_t cache_clock_ = -1;
  int64_t cache_version_ = 0;
  int64_t sent_ = 0;
  int64_t link_free_ = 0;
  std::deque<std::pair<int64_t, std::vector<float>>> own_;  // (clock, gradient), oldest first
  std::deque<Copy> inbox_;
};

}  // namespace

void run_cache_worker(WorkerCore& c, int32_t id, const RealOptions& opt, const Layout& l,
                      Clock::time_point epoch) {
  CacheWorker(c, id, opt, l, epoch).run();
}

}  // namespace stalesim::real

#endif
