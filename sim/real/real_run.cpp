// Real mode (sim/real/real_run.hpp): the server and worker ranks of `stalesim real`.

#include "sim/real/real_run.hpp"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <vector>

#include "sim/evaluation.hpp"
#include "sim/output/csv_observers.hpp"
#include "sim/output/outputs.hpp"
#include "sim/simulation.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "sim/worker/core.hpp"
#include "sim/worker/pull.hpp"

#ifdef STALESIM_HAVE_MPI
#include <mpi.h>
#endif

namespace stalesim {

std::string real_refusal(const Scenario& s) {
  const PolicySpec& p = s.policy;
  if (p.type == PolicyType::kEssp)
    return "/policy/type: \"essp\" pushes fresh parameters to workers' caches eagerly (a server-initiated "
           "flow); the real mode runs the pull-every-iteration policies only (bsp, asp, ssp, dssp, softsync)";
  if (p.type == PolicyType::kVap)
    return "/policy/type: \"vap\" bounds in-transit update values with its own worker protocol; the real "
           "mode "
           "runs the pull-every-iteration policies only (bsp, asp, ssp, dssp, softsync)";
  if (p.all_reduce())
    return fmt::format(
        "/policy/type: \"{}\" has no server; the real mode emulates the parameter-server policies "
        "only (bsp, asp, ssp, dssp, softsync)",
        to_string(p.type));
  if (!p.pulls_every_clock())
    return "/policy/cache: a lazy cache keeps parameters on the workers between clocks; the real mode runs "
           "the pull-every-iteration policies only (policy.cache \"pull-every-iteration\")";
  if (s.cluster.network.topology != "star")
    return "/cluster/network/topology: the real mode emulates the star network only (each worker's link "
           "and the server's FIFO link); racks and graphs are simulated, not emulated";
  if (s.cluster.order == Order::kUniform)
    return "/cluster/order: \"uniform\" is a simulated update order with no transfers; a real run has real "
           "ones";
  if (s.compute.backend != "cpu")
    return fmt::format("/compute/backend: \"{}\": the real mode computes gradients on the CPU",
                       s.compute.backend);
  if (s.compute.timing == "measured")
    return "/compute/timing: \"measured\" is the simulator's GPU timing; for a real run without padding use "
           "'stalesim real --timing measured'";
  if (!traits(s.model.type).has_math)
    return fmt::format("/model/type: \"{}\" has no math: a real run computes and sends real gradients",
                       to_string(s.model.type));
  if (s.optimizer.rule == RuleType::kBfasgd)
    return "/optimizer/rule: \"bfasgd\" skips pushes and fetches by its own draws; the real mode does not "
           "implement skipped transfers";
  if (!ClusterSchedule(s.cluster).crashes().empty())
    return "/cluster/schedule: crashes and rejoins are simulated faults; a real run has only real ones";
  if (!s.stop.virtual_time_s && !s.stop.max_updates && !(s.stop.target_accuracy && s.stop.at_target))
    return "/stop: a real run needs an end: stop.virtual_time_s (wall-clock seconds here), stop.max_updates "
           "or stop.target_accuracy with stop.at_target";
  return "";
}

int real_ranks(const Scenario& s) { return s.cluster.worker_count() + 1; }

#ifndef STALESIM_HAVE_MPI

RealOutcome run_real_rank(const Scenario&, const RealOptions&) {
  throw ScenarioError(
      "this stalesim was built without MPI: the real mode needs it (configure with MPI found)");
}

#else

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTagParams = 1;
constexpr int kTagPush = 2;
constexpr int kExitFailed = 3;

// Server -> worker: parameters (count floats follow), or the end of the run.
struct ParamsHeader {
  int64_t stop = 0;
  int64_t deliver_at_ns = 0;  // emulated: the worker starts no earlier (0: at once)
  int64_t version = 0;
  int64_t count = 0;
};

// Worker -> server: a gradient (count floats follow) and how its iteration went.
struct PushHeader {
  int64_t iteration = 0;
  int64_t sent_at_ns = 0;    // when it left the worker
  int64_t params_at_ns = 0;  // when the worker had the parameters (after any emulated delay)
  int64_t compute_ns = 0;    // the real gradient
  int64_t padding_ns = 0;    // emulated: the profile's time minus compute_ns (0 when slower)
  int64_t count = 0;
  double loss = 0;
};

std::atomic<int> g_signal{0};
extern "C" void on_real_signal(int sig) { g_signal.store(sig); }

int64_t since(Clock::time_point epoch) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch).count();
}

void sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  timespec t{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (::nanosleep(&t, &t) != 0 && errno == EINTR && g_signal.load() == 0) {
  }
}

// Sleeps between polls while idle: 50 us, doubling to 200 us.
class Backoff {
 public:
  void reset() { ns_ = kMin; }
  void idle(int64_t at_most) {
    sleep_ns(std::min(ns_, std::max<int64_t>(at_most, 1000)));
    ns_ = std::min(ns_ * 2, kMax);
  }

 private:
  static constexpr int64_t kMin = 50'000;
  static constexpr int64_t kMax = 200'000;
  int64_t ns_ = kMin;
};

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(
      fmt::format("MPI {} failed: {}", what, std::string(text, static_cast<size_t>(len))));
}

template <class Header>
std::vector<char> pack(const Header& h, std::span<const float> values) {
  std::vector<char> buf(sizeof(Header) + values.size_bytes());
  std::memcpy(buf.data(), &h, sizeof(Header));
  if (!values.empty()) std::memcpy(buf.data() + sizeof(Header), values.data(), values.size_bytes());
  return buf;
}

template <class Header>
Header unpack(const std::vector<char>& buf, std::vector<float>& values) {
  Header h;
  if (buf.size() < sizeof(Header)) throw std::runtime_error("a real-mode message shorter than its header");
  std::memcpy(&h, buf.data(), sizeof(Header));
  if (buf.size() != sizeof(Header) + static_cast<size_t>(h.count) * sizeof(float))
    throw std::runtime_error("a real-mode message whose size does not match its header");
  values.resize(static_cast<size_t>(h.count));
  if (h.count) std::memcpy(values.data(), buf.data() + sizeof(Header), values.size() * sizeof(float));
  return h;
}

// Receives one message of `tag` from `source` (MPI_ANY_SOURCE: any) if one is there.
bool try_receive(int source, int tag, std::vector<char>& buf, int& from) {
  int flag = 0;
  MPI_Status st;
  check(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &st), "Iprobe");
  if (!flag) return false;
  int bytes = 0;
  check(MPI_Get_count(&st, MPI_BYTE, &bytes), "Get_count");
  buf.resize(static_cast<size_t>(bytes));
  check(MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "Recv");
  from = st.MPI_SOURCE;
  return true;
}

std::vector<int32_t> eval_indices(const Scenario& s, const DataSplit& d) {
  const int64_t m = s.eval.test_samples > 0 ? std::min(s.eval.test_samples, d.test.size()) : d.test.size();
  std::vector<int32_t> idx(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return idx;
}

// ---- The server (rank 0) -------------------------------------------------------------------

// A grant hands the parameters to params_granted (the MPI send) instead of the event queue.
class RealServer final : public PullProtocol, public DirectDelivery {
 public:
  RealServer(WorkerCore& c, const RealOptions& o, Clock::time_point epoch)
      : PullProtocol(c), opt_(o), epoch_(epoch), slots_(c.workers().size()) {}

  // A grant (WorkerCore::grant): the parameters go to the worker's rank.
  void params_granted(Worker& w, SimTime sent) override {
    Slot& s = slots_[static_cast<size_t>(w.id)];
    s.granted_at = since(epoch_);
    ParamsHeader h;
    h.version = w.read_version;
    h.count = static_cast<int64_t>(w.params.values().size());
    if (opt_.emulated)
      h.deliver_at_ns = (sent + c_.latency_of(w) + c_.worker_link(w, c_.message_bytes())).ns();
    send(w.id, pack(h, w.params.values()));
    s.busy = true;
    s.heard_at = s.granted_at;
  }
  // The server computes nothing: pushes come from the ranks (receive_pushes).
  void push_sent(Worker&) override { throw std::logic_error("the real run's server sent a push"); }

  RealOutcome run();

 protected:
  // The worker's gradient, as received, applied through the pull protocol.
  std::optional<double> apply_gradient(Worker& w, GradientInfo& info) override {
    Slot& s = slots_[static_cast<size_t>(w.id)];
    const int64_t now = since(epoch_);
    const int64_t wait = s.applied_at < 0 ? 0 : std::max<int64_t>(0, s.granted_at - s.applied_at);
    const int64_t comm = std::max<int64_t>(0, s.push.params_at_ns - s.granted_at) +
                         std::max<int64_t>(0, now - s.push.sent_at_ns);
    timing_ +=
        fmt::format("{},{},{},{},{},{},{},{}\n", w.id, s.push.iteration, s.granted_at / 1e9,
                    s.push.compute_ns / 1e9, s.push.padding_ns / 1e9, wait / 1e9, comm / 1e9, now / 1e9);
    s.compute_ns += s.push.compute_ns + s.push.padding_ns;
    s.wait_ns += wait;
    s.comm_ns += comm;
    s.applied_at = now;
    return apply_computed(w, info, s.push.loss, s.grad);
  }

 private:
  struct Slot {
    std::vector<char> out, in;
    std::vector<float> grad;
    PushHeader push;
    MPI_Request send = MPI_REQUEST_NULL;
    int64_t granted_at = -1, applied_at = -1, heard_at = 0;
    bool busy = false;     // computing, or its push not yet received
    bool stopped = false;  // told the run is over
    int64_t compute_ns = 0, wait_ns = 0, comm_ns = 0;
  };

  void send(int32_t w, std::vector<char> message) {
    Slot& s = slots_[static_cast<size_t>(w)];
    check(MPI_Wait(&s.send, MPI_STATUS_IGNORE), "Wait");
    s.out = std::move(message);
    check(MPI_Isend(s.out.data(), static_cast<int>(s.out.size()), MPI_BYTE, w + 1, kTagParams, MPI_COMM_WORLD,
                    &s.send),
          "Isend");
  }
  void send_stop(int32_t w) {
    ParamsHeader h;
    h.stop = 1;
    send(w, pack(h, {}));
    slots_[static_cast<size_t>(w)].stopped = true;
  }
  // Receives every push that is there; returns whether there was one.
  bool receive_pushes(bool stopping);
  void evaluate(uint64_t k);
  // A watchdog: the busy worker silent the longest, when past watchdog_s.
  std::optional<int32_t> silent_worker(int64_t now) const {
    for (size_t w = 0; w < slots_.size(); ++w)
      if (slots_[w].busy && !slots_[w].stopped && now - slots_[w].heard_at > opt_.watchdog_s * 1e9)
        return static_cast<int32_t>(w);
    return std::nullopt;
  }
  void fail(const std::string& reason, const std::string& detail) {
    failed_ = true;
    c_.result().status = RunStatus::kInterrupted;
    c_.result().stop_reason = reason;
    c_.result().detail = detail;
    c_.stop();
  }
  void finish(SimTime end);
  RealOutcome write(int ranks);

  const RealOptions& opt_;
  Clock::time_point epoch_;
  std::vector<Slot> slots_;
  std::string timing_ = kTimingCsvHeader;
  std::unique_ptr<Evaluations> evals_;
  std::vector<int32_t> eval_indices_;
  GradientRecorder gradients_;
  PolicyRecorder policy_records_;
  ObserverList observers_;
  bool failed_ = false;
};

bool RealServer::receive_pushes(bool stopping) {
  bool any = false;
  std::vector<char> buf;
  int from = 0;
  while (try_receive(MPI_ANY_SOURCE, kTagPush, buf, from)) {
    any = true;
    const auto w = static_cast<int32_t>(from - 1);
    Slot& s = slots_[static_cast<size_t>(w)];
    s.push = unpack<PushHeader>(buf, s.grad);
    s.busy = false;
    const int64_t now = since(epoch_);
    s.heard_at = now;
    if (stopping) {
      send_stop(w);
      continue;
    }
    Worker& wk = c_.worker(static_cast<size_t>(w));
    // Its size on the emulated wire: the scenario's (a cost architecture sizes every message;
    // else the model's), which the real bytes equal for a dense model.
    const int64_t bytes = c_.scenario().model.cost != "derived"
                              ? c_.message_bytes()
                              : static_cast<int64_t>(buf.size() - sizeof(PushHeader));
    c_.count_push(bytes);
    const SimTime wall = std::max(SimTime::from_ns(now), c_.engine().now());
    if (!opt_.emulated) {
      c_.engine().schedule(wall, kPushApplied, static_cast<uint32_t>(w), wk.gen);
      continue;
    }
    // As in a simulation: it reaches the server's link after its own link and the latency, and
    // queues there in arrival order (WorkerCore::on_push_at_server).
    wk.push_bytes.push_back(bytes);
    const SimTime arrive =
        SimTime::from_ns(s.push.sent_at_ns) + c_.worker_link(wk, bytes) + c_.latency_of(wk);
    c_.engine().schedule(std::max(arrive, wall), kPushAtServer, static_cast<uint32_t>(w), wk.gen);
  }
  return any;
}

void RealServer::evaluate(uint64_t k) {
  MetricsRow row = c_.take_metrics_row(c_.engine().now());
  if (c_.math())
    evals_->add(std::move(row), c_.store().peek());
  else
    c_.complete_metrics(row);
  if (!c_.stopped())
    c_.engine().schedule(SimTime::from_seconds(c_.scenario().eval.every_s * static_cast<double>(k + 1)),
                         kEvaluate, 0, k + 1);
}

RealOutcome RealServer::run() {
  WorkerCore& c = c_;
  c.deliver_directly(this);
  observers_.add(&gradients_);
  c.set_observer(&observers_);
  std::vector<std::string> profiles;
  for (const auto& w : c.workers()) profiles.push_back(c.profile_of(w));
  observers_.start(c.clocks(), c.policy(), profiles);
  policy_records_.start(c.clocks(), c.policy(), {});
  eval_indices_ = eval_indices(c.scenario(), c.data());
  evals_ = std::make_unique<Evaluations>(c.model(), c.data().test, eval_indices_,
                                         [this](MetricsRow& row) { c_.complete_metrics(row); });
  for (auto& w : c.workers())  // the first requests for parameters
    c.engine().schedule(opt_.emulated ? c.latency_of(w) : SimTime::zero(), kPullRequestArrives,
                        static_cast<uint32_t>(w.id), w.gen);
  c.engine().schedule(SimTime::zero(), kEvaluate, 0, 0);
  const SimTime limit = c.scenario().stop.virtual_time_s
                            ? SimTime::from_seconds(*c.scenario().stop.virtual_time_s)
                            : SimTime::max();
  Backoff backoff;
  SimTime end;
  try {
    while (!c.stopped()) {
      if (const int sig = g_signal.load()) {
        fail("interrupted",
             fmt::format("the server received signal {} (mpirun forwards SIGINT and SIGTERM, and "
                         "sends SIGTERM when another rank died)",
                         sig));
        break;
      }
      bool worked = receive_pushes(false);
      const int64_t now = since(epoch_);
      const SimTime wall = std::min(SimTime::from_ns(now), limit);
      c.engine().run_until(wall, [&](const Event& e) {
        worked = true;
        if (e.kind == kEvaluate) return evaluate(e.payload);
        if (e.kind == kPushAtServer) return c.on_push_at_server(c.worker(e.target));
        if (e.kind == kPushApplied) return on_push_applied(c.worker(e.target));
        on_message(e);  // kPullRequestArrives: the pull protocol's grant
      });
      if (c.stopped()) break;
      if (now >= limit.ns()) {
        c.result().stop_reason = "virtual_time";
        break;
      }
      if (const auto w = silent_worker(now)) {
        fail("rank_silent",
             fmt::format("worker {} (rank {}) sent nothing for {:g} s while the server waited for its "
                         "push (the watchdog, --watchdog-s)",
                         *w, *w + 1, opt_.watchdog_s));
        break;
      }
      if (worked) {
        backoff.reset();
        continue;
      }
      const Event* next = c.engine().peek();
      backoff.idle(next ? next->time.ns() - now : 1'000'000);
    }
    end = c.result().stop_reason == "virtual_time" ? limit : SimTime::from_ns(since(epoch_));
    if (!failed_) {  // the end: every worker is told, each after its push in flight (dropped) is in
      for (size_t w = 0; w < slots_.size(); ++w)
        if (!slots_[w].busy) send_stop(static_cast<int32_t>(w));
      while (std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.stopped; })) {
        if (g_signal.load()) {
          fail("interrupted", "a signal came while the workers were being stopped");
          break;
        }
        if (receive_pushes(true)) continue;
        if (const auto w = silent_worker(since(epoch_))) {
          fail("rank_silent", fmt::format("worker {} (rank {}) sent nothing for {:g} s at the end of the run",
                                          *w, *w + 1, opt_.watchdog_s));
          break;
        }
        backoff.idle(1'000'000);
      }
      if (!failed_)
        for (auto& s : slots_) check(MPI_Wait(&s.send, MPI_STATUS_IGNORE), "Wait");
    }
  } catch (const std::runtime_error& e) {  // an MPI error: a rank is gone
    fail("rank_failed", e.what());
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
                 c.result().stop_reason, c.result().detail, opt_.out);
    else
      fmt::print(stderr, "stalesim real: {}: {}; partial outputs in {}/ (no done marker)\n",
                 c.result().stop_reason, c.result().detail, opt_.out);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, kExitFailed);
  }
  return outcome;
}

void RealServer::finish(SimTime end) {
  WorkerCore& c = c_;
  RunResult& r = c.result();
  observers_.finish(end);
  policy_records_.finish(end);
  for (size_t i = 0; i < c.workers().size(); ++i) {
    Worker& w = c.worker(i);
    const Slot& s = slots_[i];
    w.params.reset();
    r.workers.push_back(WorkerStats{w.id, c.profile_of(w), w.iterations, s.compute_ns, s.wait_ns, s.comm_ns});
  }
  r.end_time = end;
  if (c.needs_final_row(end)) {
    MetricsRow row = c.take_metrics_row(end);
    if (c.math()) {
      evals_->add(std::move(row), c.store().peek());
    } else {
      c.complete_metrics(row);
    }
  }
  evals_->finish();
  c.finish_result();
  r.policy_facts = policy_records_.take_facts();
  r.decisions_csv = policy_records_.take_decisions_csv();
  r.gradients_csv = gradients_.take();
}

RealOutcome RealServer::write(int ranks) {
  const RunResult& r = c_.result();
  OutputFiles files = render_outputs(c_.scenario(), r);
  files.timing_csv = timing_;
  nlohmann::json summary = nlohmann::json::parse(files.summary_json);
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(library, &len);
  std::string lib(library, static_cast<size_t>(len));
  if (const auto nl = lib.find_first_of("\r\n,"); nl != std::string::npos) lib.resize(nl);
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  summary["manifest"]["real"] = {
      {"real", true},
      {"bit_reproducible", false},
      {"timing", opt_.emulated ? "emulated" : "measured"},
      {"clock", "wall-clock seconds since the start, in place of virtual seconds"},
      {"ranks", ranks},
      {"mpi", lib},
      {"host", host},
      {"waiting", "MPI_Iprobe / MPI_Test polls with 50 to 200 us sleeps (no busy-polling)"}};
  files.summary_json = summary.dump(2) + "\n";
  // A failed run (a rank died, the watchdog, a signal) never replaces a finished run that --force
  // was rerunning over: it keeps it and writes nothing, as `stalesim run` does on Ctrl-C.
  const bool kept = failed_ && holds_finished_run(opt_.out);
  if (!kept) write_outputs(opt_.out, files, !failed_, opt_.force, opt_.guard);
  return RealOutcome{r.status, r.stop_reason, r.end_time.seconds(), r.server_updates, files.result_hash,
                     r.detail, kept};
}

// ---- A worker (ranks 1..N) -----------------------------------------------------------------

void run_worker(WorkerCore& c, int32_t id, const RealOptions& opt, Clock::time_point epoch) {
  Worker& w = c.worker(static_cast<size_t>(id));
  std::vector<float> grad(c.gradient_size());
  std::vector<char> buf;
  std::vector<float> params;
  int from = 0;
  Backoff backoff;
  for (int64_t iteration = 0;; ++iteration) {
    while (!try_receive(0, kTagParams, buf, from)) backoff.idle(1'000'000);
    backoff.reset();
    const auto h = unpack<ParamsHeader>(buf, params);
    if (h.stop) return;
    // Emulated: the parameters arrive at the scenario's time (they are here earlier unless the
    // machine is late), and the gradient takes the profile's time from then on. The stamps are
    // those times, not the moments this rank woke up, so a sleep's overshoot does not add up over
    // the iterations; a real delay past them (a late message, a slow gradient) does.
    const int64_t received = since(epoch);
    sleep_ns(h.deliver_at_ns - received);
    PushHeader p;
    p.iteration = iteration;
    p.params_at_ns = std::max(received, h.deliver_at_ns);
    const int64_t begin = since(epoch);
    const auto batch = w.sampler->next(c.scenario().optimizer.batch_size);
    p.loss = c.model().loss_and_gradient(params, c.data().train, batch, grad);
    const int64_t done = since(epoch);
    p.compute_ns = done - begin;
    p.sent_at_ns = done;
    if (opt.emulated) {  // the rest of the time the device profile gives (the simulation's draw)
      const int64_t target = c.compute_time(w, SimTime::from_ns(p.params_at_ns)).ns();
      p.padding_ns = std::max<int64_t>(0, target - p.compute_ns);
      p.sent_at_ns = std::max(done, p.params_at_ns + target);
      sleep_ns(p.sent_at_ns - done);
    }
    if (opt.fault && opt.fault->worker == id && opt.fault->iteration == iteration)
      ::raise(opt.fault->hang ? SIGSTOP : SIGKILL);
    p.count = static_cast<int64_t>(grad.size());
    const auto out = pack(p, grad);
    check(MPI_Send(out.data(), static_cast<int>(out.size()), MPI_BYTE, 0, kTagPush, MPI_COMM_WORLD), "Send");
  }
}

}  // namespace

RealOutcome run_real_rank(const Scenario& s, const RealOptions& options) {
  if (const std::string why = real_refusal(s); !why.empty())
    throw ScenarioError(fmt::format("the real mode cannot run this scenario: {}", why));
  MpiSession mpi;
  if (mpi.size() != real_ranks(s))
    throw ScenarioError(
        fmt::format("a real run of this scenario takes {} MPI ranks (1 server + {} workers); mpirun "
                    "started {}: run 'mpirun -n {} stalesim real ...', or 'stalesim real ...' alone",
                    real_ranks(s), real_ranks(s) - 1, mpi.size(), real_ranks(s)));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const DataSplit data = load_data(s);
  WorkerCore core(s, data);
  // Rank 0 checks its output folder; every rank learns the verdict before anything runs.
  int ok = 1;
  std::string refusal;
  if (mpi.rank() == 0) {
    try {
      check_output_dir(options.out, options.force, options.guard);
    } catch (const IoError& e) {
      ok = 0;
      refusal = e.what();
    }
  }
  if (!mpi.broadcast(ok)) {
    if (mpi.rank() == 0) throw IoError(refusal);
    throw IoError("rank 0 refused its output folder");
  }
  if (mpi.rank() == 0) {
    std::signal(SIGTERM, on_real_signal);
    std::signal(SIGINT, on_real_signal);
  }
  // A ping to every worker first: OpenMPI connects pairs of ranks lazily, on their first message,
  // which would otherwise delay the first grants.
  char ping = 0;
  if (mpi.rank() == 0) {
    for (int r = 1; r < mpi.size(); ++r)
      MPI_Sendrecv_replace(&ping, 1, MPI_BYTE, r, kTagParams, r, kTagPush, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&ping, 1, MPI_BYTE, 0, kTagParams, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&ping, 1, MPI_BYTE, 0, kTagPush, MPI_COMM_WORLD);
  }
  // One time base: rank 0's CLOCK_MONOTONIC origin (the ranks share one host's clock).
  MPI_Barrier(MPI_COMM_WORLD);
  int64_t origin = Clock::now().time_since_epoch().count();
  MPI_Bcast(&origin, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  const Clock::time_point epoch{Clock::duration(origin)};
  if (mpi.rank() > 0) {
    run_worker(core, mpi.rank() - 1, options, epoch);
    return {};
  }
  RealServer server(core, options, epoch);
  return server.run();
}

#endif

}  // namespace stalesim
