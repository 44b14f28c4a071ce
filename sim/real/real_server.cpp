// The real mode's server, rank 0 (sim/real/real_server.hpp): the run loop, the pull modes'
// grants and pushes, and the run folder.

#ifdef STALESIM_HAVE_MPI  // without MPI the real mode refuses to start (real_run.cpp)

#include "sim/real/real_server.hpp"

#include <sys/resource.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <csignal>

#include "sim/output/outputs.hpp"

namespace stalesim::real {

RealServer::RealServer(WorkerCore& c, const RealOptions& o, const Layout& l, Clock::time_point epoch)
    : PullProtocol(c),
      opt_(o),
      layout_(l),
      epoch_(epoch),
      order_out_(static_cast<size_t>(l.shards)),
      slots_(c.workers().size()),
      driver_(c, [this] { return current_params(); }) {
  cache_ = c.policy().cache_mode() != CacheMode::kPullEveryIteration;
  eager_ = c.policy().cache_mode() == CacheMode::kEager;
  bound_ = c.policy().clock_bound().value_or(0);
}

void RealServer::params_granted(Worker& w, SimTime through) {
  Slot& s = slots_[static_cast<size_t>(w.id)];
  s.granted_at = since(epoch_);
  ParamsHeader h;
  h.version = w.read_version;
  h.count = static_cast<int64_t>(w.params.values().size());
  if (opt_.emulated) h.deliver_at_ns = (through + c_.latency_of(w)).ns();
  send_params(w.id, h, w.params.values());
  s.busy = true;
  s.heard_at = s.granted_at;
}

std::optional<double> RealServer::apply_gradient(Worker& w, GradientInfo& info) {
  Slot& s = slots_[static_cast<size_t>(w.id)];
  const int64_t now = since(epoch_);
  const int64_t wait = s.applied_at < 0 ? 0 : std::max<int64_t>(0, s.granted_at - s.applied_at);
  const int64_t comm = std::max<int64_t>(0, s.push.params_at_ns - s.granted_at) +
                       std::max<int64_t>(0, now - s.push.sent_at_ns);
  const CommSplit split{.pull = std::max<int64_t>(0, s.push.params_at_ns - s.granted_at),
                        .push = std::max<int64_t>(0, s.push_received_at - s.push.sent_at_ns),
                        .server = std::max<int64_t>(0, now - s.push_received_at)};
  PushHeader p = s.push;
  p.params_at_ns = s.granted_at;
  record_timing(w.id, p, wait, comm, now, split);
  s.applied_at = now;
  if (std::isfinite(s.push.loss)) order_apply(w.id, info);  // else the run stops as diverged
  return apply_computed(w, info, s.push.loss, s.grad);
}

void RealServer::order_apply(int32_t w, const GradientInfo& info) {
  if (layout_.shards == 1) return;
  ShardOrder o;
  o.kind = ShardOrder::kApply;
  o.worker = w;
  o.version_read = info.version_read;
  o.version_apply = info.version_apply;
  o.staleness = info.staleness;
  order(o);
  gathered_now_ = false;
}

void RealServer::order(const ShardOrder& o) {
  for (int32_t k = 1; k < layout_.shards; ++k)
    order_out_[static_cast<size_t>(k)].post(k, kTagOrder, pack(o, {}));
}

void RealServer::await_gather(int32_t k, std::vector<char>& buf) {
  await_rank(k, kTagGather, buf, opt_.watchdog_s, fmt::format("server shard {} (rank {})", k, k));
}

std::span<const float> RealServer::current_params() {
  if (layout_.shards == 1) return c_.store().peek();
  if (gathered_now_) return gathered_;
  ShardOrder o;
  o.kind = ShardOrder::kGather;
  order(o);
  std::vector<float> part(c_.store().peek().begin(), c_.store().peek().end());
  gathered_.resize(static_cast<size_t>(layout_.params));
  std::vector<char> buf;
  for (int32_t k = 0; k < layout_.shards; ++k) {
    if (k > 0) {
      await_gather(k, buf);
      unpack<ShardOrder>(buf, part);  // a header with the count, then the slice
    }
    const Slice sl = layout_.slice(k);
    if (static_cast<int64_t>(part.size()) != sl.count)
      throw std::runtime_error(
          fmt::format("server shard {} sent {} parameters, its slice has {}", k, part.size(), sl.count));
    std::copy(part.begin(), part.end(), gathered_.begin() + sl.begin);
  }
  gathered_now_ = true;
  return gathered_;
}

void RealServer::stop_shards() {
  if (layout_.shards == 1) return;
  ShardOrder o;
  o.kind = ShardOrder::kStop;
  order(o);
  for (auto& q : order_out_) q.wait_all();
}

void RealServer::record_timing(int32_t w, const PushHeader& p, int64_t wait, int64_t comm, int64_t now,
                               std::optional<CommSplit> split) {
  Slot& s = slots_[static_cast<size_t>(w)];
  timing_ += fmt::format("{},{},{},{},{},{},{},{},", w, p.iteration, p.params_at_ns / 1e9, p.compute_ns / 1e9,
                         p.padding_ns / 1e9, wait / 1e9, comm / 1e9, now / 1e9);
  timing_ +=
      split ? fmt::format("{},{},{}\n", split->pull / 1e9, split->push / 1e9, split->server / 1e9) : ",,\n";
  s.compute_ns += p.compute_ns + p.padding_ns;
  s.wait_ns += wait;
  s.comm_ns += comm;
}

void RealServer::send(int32_t w, std::vector<char> message) {
  slots_[static_cast<size_t>(w)].out.post(layout_.worker_rank(w), kTagParams, std::move(message));
}

void RealServer::send_params(int32_t w, const ParamsHeader& h, std::span<const float> values) {
  send(w, pack(h, values));  // slice 0 with shards
  if (layout_.shards == 1) return;
  ShardOrder o;
  o.kind = ShardOrder::kParams;
  o.worker = w;
  o.params = h;
  order(o);
}

void RealServer::send_stop(int32_t w) {
  ParamsHeader h;
  h.stop = 1;
  send(w, pack(h, {}));
  // Pull modes: the worker ends on it; cache modes: once its bye is in (receive_pushes).
  Slot& s = slots_[static_cast<size_t>(w)];
  s.stopped = !cache_;
  s.busy = cache_;
  s.heard_at = since(epoch_);
}

bool RealServer::receive_pushes(bool stopping) {
  bool any = false;
  std::vector<char> buf;
  std::vector<float> grad;
  int from = 0;
  while (pushes_in_.next(buf, from)) {
    any = true;
    const int32_t w = layout_.worker_of(from);
    Slot& s = slots_[static_cast<size_t>(w)];
    const PushHeader p = unpack<PushHeader>(buf, grad);
    const int64_t now = since(epoch_);
    s.heard_at = now;
    if (p.bye) {
      s.stopped = true;
      s.busy = false;
      continue;
    }
    if (!cache_) {
      s.push = p;
      s.push_received_at = now;
      s.grad.swap(grad);
      s.busy = false;
      if (stopping) send_stop(w);
    }
    if (stopping) continue;  // a push after the end is dropped
    Worker& wk = c_.worker(static_cast<size_t>(w));
    // Its size on the emulated wire: the scenario's (a cost architecture sizes every message;
    // else the model's), which the real bytes (of every shard's part) equal for a dense model.
    const int64_t bytes =
        c_.plan().cost ? c_.message_bytes() : layout_.params * static_cast<int64_t>(sizeof(float));
    c_.count_push(bytes);
    if (cache_) {
      ++s.received;
      c_.note_clock_gap(p.iteration - c_.clocks().min_clock());
      s.pending.emplace_back(p, std::move(grad));
      grad = {};
    }
    schedule_push(wk, s, bytes, now);
    // Measured timing: one push at a time, so that it is applied (and its worker's parameters
    // sent) as soon as it is whole; the other pushes' bytes keep coming in meanwhile (Inbox).
    if (!opt_.emulated) break;
  }
  return any;
}

void RealServer::schedule_push(Worker& w, const Slot& s, int64_t bytes, int64_t now) {
  const SimTime wall = std::max(SimTime::from_ns(now), c_.engine().now());
  if (!opt_.emulated)
    return void(c_.engine().schedule(wall, kPushApplied, static_cast<uint32_t>(w.id), w.gen));
  // As in a simulation: its first byte reaches the server's link a latency after it was sent,
  // and it queues there in arrival order (WorkerCore::on_push_at_server, which has it whole a
  // worker-link time after that first byte). A push that arrived later than that in real time
  // starts at the server so that its last byte is in when it was.
  const PushHeader& p = cache_ ? s.pending.back().first : s.push;
  w.push_bytes.push_back(bytes);
  const SimTime first = SimTime::from_ns(p.sent_at_ns) + c_.latency_of(w);
  const SimTime late = wall - c_.worker_link(w, bytes);
  c_.engine().schedule(max(c_.engine().now(), max(first, late)), kPushAtServer, static_cast<uint32_t>(w.id),
                       w.gen);
}

std::optional<int32_t> RealServer::silent_worker(int64_t now) const {
  for (size_t w = 0; w < slots_.size(); ++w) {
    const Slot& s = slots_[w];
    const bool expected =
        s.stopped ? false : (s.busy || (cache_ && cache_expects_push(static_cast<int32_t>(w))));
    if (expected && now - s.heard_at > opt_.watchdog_s * 1e9) return static_cast<int32_t>(w);
  }
  return std::nullopt;
}

void RealServer::fail(StopReason reason, const std::string& detail, int code) {
  failed_ = true;
  exit_code_ = code;
  c_.result().status = RunStatus::kInterrupted;
  c_.result().stop_reason = reason;
  c_.result().detail = detail;
  c_.stop();
}

namespace {
std::string signal_detail(int sig) {
  return fmt::format(
      "the server received signal {} (the launcher passes a Ctrl-C on as SIGUSR1; mpirun forwards SIGINT "
      "and SIGTERM, and sends SIGTERM when another rank died)",
      sig);
}
}  // namespace

RealOutcome RealServer::run() {
  WorkerCore& c = c_;
  c.deliver_directly(
      this);  // a grant hands the parameters to params_granted (the MPI send), not the event queue
  driver_.start(nullptr, true);  // gradients.csv: always
  for (auto& w : c.workers())    // the first requests for parameters
    c.engine().schedule(opt_.emulated ? c.latency_of(w) : SimTime::zero(), kPullRequestArrives,
                        static_cast<uint32_t>(w.id), w.gen);
  driver_.schedule_first_evaluation();
  const SimTime limit = c.scenario().stop.virtual_time_s
                            ? SimTime::from_seconds(*c.scenario().stop.virtual_time_s)
                            : SimTime::max();
  Backoff backoff;
  SimTime end;
  try {
    while (!c.stopped()) {
      if (const int sig = g_signal.load()) {
        fail(StopReason::kInterrupted, signal_detail(sig), kExitInterrupted);
        break;
      }
      bool worked = receive_pushes(false);
      const int64_t now = since(epoch_);
      const SimTime wall = std::min(SimTime::from_ns(now), limit);
      c.engine().run_until(wall, [&](const Event& e) {
        worked = true;
        if (e.kind == kEvaluate) return driver_.on_evaluate(e.payload);
        if (e.kind == kPushAtServer) return c.on_push_at_server(c.worker(e.target));
        if (cache_ && e.kind == kPushApplied) return on_cache_push_applied(c.worker(e.target));
        if (cache_ && e.kind == kPullRequestArrives) return send_copy(c.worker(e.target));
        if (e.kind == kPushApplied) return on_push_applied(c.worker(e.target));
        on_message(e);  // kPullRequestArrives: the pull protocol's grant
      });
      if (c.stopped()) break;
      if (opt_.fault && opt_.fault->worker < 0 && opt_.fault->shard == 0 &&
          c.result().server_updates >= opt_.fault->iteration)
        ::raise(opt_.fault->hang ? SIGSTOP : SIGKILL);
      if (now >= limit.ns()) {
        c.result().stop_reason = StopReason::kVirtualTime;
        break;
      }
      if (const auto w = silent_worker(now)) {
        // With shards the worker may wait for a silent shard's slice: a gather from every shard
        // (throws SilentRank naming the shard) says which rank is at fault.
        if (layout_.shards > 1) {
          gathered_now_ = false;
          current_params();
        }
        fail(StopReason::kRankSilent,
             fmt::format("worker {} (rank {}) sent nothing for {:g} s while the server waited for its "
                         "push (the watchdog, --watchdog-s)",
                         *w, layout_.worker_rank(*w), opt_.watchdog_s));
        break;
      }
      if (worked) {
        backoff.reset();
        continue;
      }
      const Event* next = c.engine().peek();
      backoff.idle(next ? next->time.ns() - now : 1'000'000);
    }
    end = c.result().stop_reason == StopReason::kVirtualTime ? limit : SimTime::from_ns(since(epoch_));
    if (!failed_) {
      // The end: every worker is told (pull modes: each after its push in flight, dropped, is in;
      // cache modes: at once, and its bye says that every push it sent is in).
      for (size_t w = 0; w < slots_.size(); ++w)
        if (cache_ || !slots_[w].busy) send_stop(static_cast<int32_t>(w));
      while (std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.stopped; })) {
        if (const int sig = g_signal.load()) {
          fail(StopReason::kInterrupted, signal_detail(sig), kExitInterrupted);
          break;
        }
        if (receive_pushes(true)) continue;
        if (const auto w = silent_worker(since(epoch_))) {
          fail(StopReason::kRankSilent,
               fmt::format("worker {} (rank {}) sent nothing for {:g} s at the end of the run", *w,
                           layout_.worker_rank(*w), opt_.watchdog_s));
          break;
        }
        backoff.idle(1'000'000);
      }
      if (!failed_) {
        pushes_in_.drain();
        for (auto& s : slots_) s.out.wait_all();
        if (layout_.shards > 1) {  // the final parameters, then the shard ranks end
          current_params();
          stop_shards();
        }
      }
    }
  } catch (const SilentRank& e) {  // a shard rank that did not answer a gather
    fail(StopReason::kRankSilent, e.what());
    end = SimTime::from_ns(since(epoch_));
  } catch (const std::runtime_error& e) {  // an MPI error: a rank is gone (or a signal in a gather)
    if (const int sig = g_signal.load())
      fail(StopReason::kInterrupted, signal_detail(sig), kExitInterrupted);
    else
      fail(StopReason::kRankFailed, e.what());
    end = SimTime::from_ns(since(epoch_));
  }
  if (end < c.engine().now()) end = c.engine().now();
  finish(end);
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  RealOutcome outcome = write(ranks);
  if (failed_) {
    if (outcome.kept_finished)
      fmt::print(stderr, "stalesim real: {}: {}; the finished run in {}/ was kept, nothing was written\n",
                 to_string(c.result().stop_reason), c.result().detail, opt_.out);
    else
      fmt::print(stderr, "stalesim real: {}: {}; partial outputs in {}/ (no done marker)\n",
                 to_string(c.result().stop_reason), c.result().detail, opt_.out);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code_);
  }
  return outcome;
}

void RealServer::finish(SimTime end) {
  WorkerCore& c = c_;
  RunResult& r = c.result();
  // Every worker's times as measured.
  auto close_workers = [&] {
    for (size_t i = 0; i < c.workers().size(); ++i) {
      Worker& w = c.worker(i);
      const Slot& s = slots_[i];
      w.params.reset();
      r.workers.push_back(
          WorkerStats{w.id, c.profile_of(w), w.iterations, s.compute_ns, s.wait_ns, s.comm_ns});
    }
  };
  // Server shards: the parameters gathered last; after a failure (a gather may be what failed)
  // they may be older than the end, and then the run has no final row of its own.
  driver_.finish(end, close_workers, layout_.shards == 1 || gathered_now_);
  if (layout_.shards > 1) r.final_params = gathered_;
  r.recorded["timing.csv"] = std::move(timing_);
}

RealOutcome RealServer::write(int ranks) {
  const RunResult& r = c_.result();
  OutputFiles files = render_outputs(c_.scenario(), r);
  nlohmann::json summary = nlohmann::json::parse(files.text("summary.json"));
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(library, &len);
  std::string lib(library, static_cast<size_t>(len));
  if (const auto nl = lib.find_first_of("\r\n,"); nl != std::string::npos) lib.resize(nl);
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  // The server rank's own CPU time (user + system, every thread): a measured run's server must
  // stay a small share of a core, or its polling and applying compete with the workers' compute.
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  const double server_cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  summary["manifest"]["real"] = {
      {"real", true},
      {"bit_reproducible", false},
      {"timing", opt_.emulated ? "emulated" : "measured"},
      {"clock", "wall-clock seconds since the start, in place of virtual seconds"},
      {"ranks", ranks},
      {"server_shards", layout_.shards},
      {"mpi", lib},
      {"host", host},
      {"server_cpu_s", std::round(server_cpu_s * 1000) / 1000},
      {"waiting",
       "MPI_Iprobe / MPI_Test polls with 20 to 80 us sleeps, also while a message is in "
       "flight (no blocking MPI call, no busy-polling); the server takes every worker's push in at once"}};
  files.set("summary.json", summary.dump(2) + "\n");
  // A failed run (a rank died, the watchdog, a signal) never replaces a finished run that --force
  // was rerunning over: it keeps it and writes nothing, as `stalesim run` does on Ctrl-C.
  const bool kept = failed_ && holds_finished_run(opt_.out);
  if (!kept) write_outputs(opt_.out, files, !failed_, opt_.force, opt_.guard);
  return RealOutcome{r.status, r.stop_reason, r.end_time.seconds(), r.server_updates, files.result_hash,
                     r.detail, kept};
}

}  // namespace stalesim::real

#endif
