// The real mode's server shards 1..S-1 (sim/real/real_run.hpp, real_wire.hpp): a rank that holds
// its slice of the parameters in the simulator's ParamStore and applies its slice of every push
// with the simulator's ServerOptimizer (the scenario's rule, momentum and averaging, sized to the
// slice: WorkerCore::keep_slice), in the order rank 0's policy decides. The policy, the clocks and
// the records are rank 0's; a shard takes the workers' pushes in as they come and follows rank 0's
// orders one at a time:
//  - kParams: its slice of the current parameters to the worker (a grant, or a cache copy);
//  - kApply: the worker's oldest slice not yet applied, with rank 0's GradientInfo (every shard
//    applies every push, in one order, so every shard holds the same version as rank 0);
//  - kGather: its slice to rank 0 (an evaluation, the final parameters);
//  - kStop: the run is over.
// The learning rules are element-wise (B-FASGD's transfer gate, the one that is not, is refused), so
// the slices applied apart hold the same values as one server's parameters would.

#ifdef STALESIM_HAVE_MPI  // without MPI the real mode refuses to start (real_run.cpp)

#include <csignal>
#include <deque>

#include "sim/real/real_server.hpp"

namespace stalesim::real {

namespace {

class ShardServer {
 public:
  ShardServer(WorkerCore& c, int32_t shard, const RealOptions& opt, const Layout& l)
      : c_(c),
        shard_(shard),
        opt_(opt),
        layout_(l),
        keep_read_(c.optimizer().rule().needs_read_params() &&
                   c.policy().cache_mode() == CacheMode::kPullEveryIteration),
        pushes_(c.workers().size()),
        read_(c.workers().size()),
        out_(c.workers().size()) {}

  void run() {
    Backoff backoff;
    std::vector<char> buf;
    ShardOrder next;
    bool pending = false;       // `next` is an order received, not yet carried out
    int64_t waiting_since = 0;  // a kApply waiting for its push: since when
    for (;;) {
      if (const int sig = g_signal.load()) throw std::runtime_error(fmt::format("received signal {}", sig));
      bool worked = receive_pushes(buf);
      for (;;) {
        if (!pending) {
          int from = 0;
          if (!try_receive(0, kTagOrder, buf, from)) break;
          std::vector<float> none;
          next = unpack<ShardOrder>(buf, none);
          pending = true;
          waiting_since = since_start();
        }
        if (next.kind == ShardOrder::kStop) return finish();
        if (!execute(next)) break;  // its push is not here yet
        pending = false;
        worked = true;
      }
      if (worked) {
        backoff.reset();
        continue;
      }
      if (pending && since_start() - waiting_since > static_cast<int64_t>(opt_.watchdog_s * 1e9))
        throw std::runtime_error(fmt::format(
            "worker {} (rank {}) sent no slice of the push the server applies for {:g} s (the "
            "watchdog, --watchdog-s)",
            next.worker, layout_.worker_rank(static_cast<int32_t>(next.worker)), opt_.watchdog_s));
      backoff.idle(1'000'000);
    }
  }

 private:
  int64_t since_start() const { return since(start_); }

  // Takes in every push slice that is there; returns whether there was one.
  bool receive_pushes(std::vector<char>& buf) {
    bool any = false;
    int from = 0;
    std::vector<float> grad;
    while (pushes_in_.next(buf, from)) {
      any = true;
      const int32_t w = layout_.worker_of(from);
      if (w < 0 || w >= static_cast<int32_t>(pushes_.size()))
        throw std::runtime_error(fmt::format("a push from rank {}, which is not a worker", from));
      unpack<PushHeader>(buf, grad);
      if (static_cast<int64_t>(grad.size()) != layout_.slice(shard_).count)
        throw std::runtime_error(fmt::format("worker {} sent a slice of {} floats, shard {}'s has {}", w,
                                             grad.size(), shard_, layout_.slice(shard_).count));
      pushes_[static_cast<size_t>(w)].push_back(std::move(grad));
      grad = {};
    }
    return any;
  }

  // Carries out one order; false when it must wait (a kApply whose push is not here yet).
  bool execute(const ShardOrder& o) {
    const auto w = static_cast<size_t>(o.worker);
    switch (o.kind) {
      case ShardOrder::kParams: {
        ParamsHeader h = o.params;
        h.count = c_.store().size();
        if (keep_read_) read_[w] = c_.store().read();  // DC-ASGD: what this gradient reads
        out_[w].post(layout_.worker_rank(static_cast<int32_t>(w)), kTagParams, pack(h, c_.store().peek()));
        return true;
      }
      case ShardOrder::kApply: {
        auto& q = pushes_[w];
        if (q.empty()) return false;
        const GradientInfo info{static_cast<int32_t>(o.worker), o.version_read, o.version_apply, o.staleness};
        if (info.version_apply != c_.store().version())
          throw std::runtime_error(fmt::format("shard {} holds version {}, the server {}", shard_,
                                               c_.store().version(), info.version_apply));
        c_.apply_to_server(c_.worker(w), q.front(), info, read_[w]);
        q.pop_front();
        read_[w].reset();
        ++applied_;
        if (opt_.fault && opt_.fault->shard == shard_ && applied_ >= opt_.fault->iteration)
          ::raise(opt_.fault->hang ? SIGSTOP : SIGKILL);
        return true;
      }
      case ShardOrder::kGather: {
        ShardOrder h;
        h.count = c_.store().size();
        send_polling(pack(h, c_.store().peek()), 0, kTagGather);
        return true;
      }
      default:
        throw std::runtime_error(fmt::format("an order of unknown kind {}", o.kind));
    }
  }

  // The end: every slice sent has reached its worker (each worker takes every part of every
  // message before its stop).
  void finish() {
    pushes_in_.drain();
    for (auto& q : out_) q.wait_all();
    for (auto& r : read_) r.reset();
  }

  WorkerCore& c_;
  int32_t shard_;
  const RealOptions& opt_;
  Layout layout_;
  bool keep_read_;
  Clock::time_point start_ = Clock::now();
  std::vector<std::deque<std::vector<float>>> pushes_;  // by worker: slices received, not applied
  std::vector<Snapshot> read_;                          // by worker: DC-ASGD's read version
  std::vector<SendQueue> out_;                          // by worker: sends not known to be complete
  Inbox pushes_in_{kTagPush};                           // every worker's push slices, at once
  int64_t applied_ = 0;
};

}  // namespace

void run_shard(WorkerCore& c, int32_t shard, const RealOptions& opt, const Layout& l) {
  ShardServer(c, shard, opt, l).run();
}

}  // namespace stalesim::real

#endif
