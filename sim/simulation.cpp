#include "sim/simulation.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "models/cost_arch.hpp"
#include "models/device_profile.hpp"
#include "models/model.hpp"
#include "models/partition.hpp"
#include "sim/changed_rows.hpp"
#include "sim/cluster_schedule.hpp"
#include "sim/engine.hpp"
#include "sim/estimate.hpp"
#include "sim/evaluation.hpp"
#include "sim/gradient_pool.hpp"
#include "sim/jitter.hpp"
#include "sim/lazy_deque.hpp"
#include "sim/memory_estimate.hpp"
#include "sim/observer.hpp"
#include "sim/param_store.hpp"
#include "sim/policies/sync_policy.hpp"
#include "sim/policies/vap.hpp"
#include "sim/rules/bfasgd.hpp"
#include "sim/rules/server_optimizer.hpp"
#include "sim/workloads.hpp"

namespace stalesim {

namespace {

enum EventKind : uint32_t {
  kPullRequestArrives = 1,  // a worker's first request for parameters reaches the server
  kParamsArrive = 2,        // parameters reach a worker: it starts computing
  kComputeDone = 3,         // a worker finished its gradient: the push leaves
  kPushAtServer = 4,        // a push reaches the server's link
  kPushApplied = 5,         // the server has received the whole push: apply it
  kEvaluate = 6,            // evaluation point
  kSnapshotArrives = 7,     // cache modes: parameters (fetched or pushed by the server) arrive
  kRefreshArrives = 8,      // VAP: a holding worker's fresh copy arrives
  kOrderStep = 9,           // uniform order: the next update
  kCrash = 10,              // schedule: a worker crashes (payload: index in the crash list)
  kRejoin = 11,             // schedule: a crashed worker rejoins (payload: index in the crash list)
  kRejoinRequest = 12,      // a rejoined worker's request for parameters reaches the server
};

enum class WorkerState { kCommunicating, kComputing, kWaiting };

// The most evaluation points of one run (a metrics row each): eval.every_s far below the run's
// length would otherwise evaluate without end.
constexpr uint64_t kMaxEvaluations = 10'000'000;

// Transfer time of `bytes` over a link of `gbps` gigabits per second (1 Gbit/s = 1 bit/ns).
SimTime transfer_time(int64_t bytes, double gbps) {
  const double ns = static_cast<double>(bytes) * 8.0 / gbps;
  if (!(ns <= SimTime::kMaxNs))
    return SimTime::from_ns_checked(
        ns, fmt::format("a {}-byte message over a {:g} Gbit/s link (cluster.network.bandwidth_gbps, "
                        "server_bandwidth_gbps or cluster.workers.*.bandwidth_gbps) takes too long",
                        bytes, gbps));
  return SimTime::from_ns(static_cast<int64_t>(std::llround(ns)));
}

// Cache modes: one of the worker's own pushes, kept until a snapshot that includes it arrives.
struct OwnPush {
  int64_t index = 0;             // the worker's clock when it computed it
  int64_t applied_version = -1;  // VAP: server version it was applied at (-1: not yet)
  std::vector<float> grad;
  int64_t read_version = 0;
  int64_t read_staleness = 0;
  double loss = 0.0;
  int64_t bytes = 0;          // its size on the wire
  std::vector<int32_t> rows;  // the rows it changes, when copies send changed rows (ChangedRows)
};

// Cache modes: parameters on their way to a worker.
struct InFlight {
  Snapshot params;
  int64_t clock = 0;     // server clock they are stamped with
  int64_t included = 0;  // the worker's own pushes they include
};

struct Worker {
  // Hot: what the pull modes touch at every event, first and together (at 100,000 workers the
  // workers do not fit in the caches; issue 21: a handful of cache lines per event, not a dozen).
  int32_t id = 0;
  int32_t group = 0;  // index into cluster.workers
  // Crash handling: events for this worker carry its generation; a crash bumps it, so whatever the
  // worker had in flight (a compute, a push on the wire, a pull) is dropped when it arrives.
  uint32_t gen = 0;
  bool down = false;
  WorkerState state = WorkerState::kCommunicating;
  bool skip_push = false;   // B-FASGD: this push is skipped (a notice goes instead)
  bool skip_fetch = false;  // B-FASGD: this fetch is skipped (the worker keeps its copy)
  SimTime state_since;
  double base_compute_ns = 0;  // one iteration before jitter
  int64_t read_version = 0;
  int64_t read_staleness = 0;     // worker clock minus server clock when parameters were granted
  int64_t read_server_clock = 0;  // server clock when the held parameters were read
  int64_t seen_version = 0;       // the newest version this worker has received
  Rng jitter_rng{0};
  Snapshot params;
  // Pool mode: the gradient being computed on the pool since the parameters were read (null: none).
  std::unique_ptr<GradientTask> task;
  std::unique_ptr<BatchSampler> sampler;  // null for the time-only model
  LazyDeque<int64_t> push_bytes;          // sizes of the pushes on their way to the server, oldest first
  WorkerStats stats;
  // Cold: the other modes' state.
  std::string profile;
  // Deferred mode: the gradient begun on the parameters when they were read, which are then let go.
  DeferredGradient pending;
  // Cache modes (lazy SSP, ESSP): the worker reads its own copy while it is fresh enough.
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
  // VAP: `own` holds the updates sent but not yet received by every other worker, and
  // in_transit their sum; `held` is an update waiting to be sent.
  std::vector<float> in_transit;
  OwnPush held;
  bool holding = false;
  int64_t refresh_version = 0;  // the version of the fresh copy on its way to a holding worker
  bool refresh_in_flight = false;
  // B-FASGD: the worker's own transmission decisions and the last gradient it pushed.
  Rng transmit_rng{0};
  std::vector<float> last_grad;
  bool has_last_grad = false;
  int64_t last_grad_version = 0;  // the version last_grad was computed on
  int64_t vap_push_bytes = 0;     // VAP: size of the held update
};

}  // namespace

// One worker group's links and jitter, resolved from the group and the cluster defaults.
struct GroupRuntime {
  JitterSampler jitter;
  SimTime latency;
  double bandwidth_gbps = 0;
  double latency_sigma = 0;
};

DataSplit load_data(const Scenario& s) {
  DataSplit d;
  if (s.data.dataset == "fashion-mnist") {
    d = load_fashion_mnist(s.data.path);
  } else if (s.data.dataset == "blobs") {
    d = make_blobs(s.data.blobs, s.seed);
  } else if (s.data.dataset == "ratings" || s.data.dataset == "corpus" || s.data.dataset == "lstsq") {
    d = make_workload_data(s);
  } else {
    return d;  // "none": the time-only model
  }
  truncate_dataset(d.train, s.data.train_samples);
  if (s.data.validation_samples > 0 && s.data.validation_samples >= d.train.size())
    throw ScenarioError(
        fmt::format("/data/validation_samples: {} must leave a training sample (there are {})",
                    s.data.validation_samples, d.train.size()));
  if (s.data.validation_samples > 0) hold_out_validation(d, s.data.validation_samples);
  return d;
}

struct Simulation::Impl {
  const Scenario& sc;
  const DataSplit& data;
  Engine engine;
  std::unique_ptr<Model> model;
  std::unique_ptr<SyncPolicy> policy;
  std::unique_ptr<ServerOptimizer> opt;
  std::unique_ptr<ParamStore> store;
  ClockTable clocks;
  std::vector<Worker> workers;
  std::vector<int32_t> waiting;  // workers held by the policy
  std::vector<float> grad;
  std::vector<int32_t> eval_indices;
  bool math;
  bool cached;  // lazy SSP or ESSP: workers keep a cache and compute while pushes are in flight
  bool eager;   // ESSP: the server pushes parameters to every worker when its clock advances
  int64_t message_bytes;
  ChangedRows changed_rows;            // cached modes, row-oriented models: copies carry the changed rows
  std::vector<int32_t> parked;         // lazy: fetches waiting for the server clock
  VapPolicy* vap = nullptr;            // set when the policy is VAP
  const BfasgdRule* bfasgd = nullptr;  // set when the rule is B-FASGD
  bool uniform;                        // cluster.order "uniform"
  // Pull modes with a model that can split its gradient (Model::can_defer_gradient): a worker
  // begins its gradient when the server reads the parameters for it and holds the factors, not
  // the parameters, until its push is applied. Same gradients; memory grows with live versions
  // only (under ASP every worker would otherwise hold a different version). Where it applies:
  // defers_gradients (sim/memory_estimate.hpp).
  bool defer = false;
  bool record_gradients = false;             // RunOptions::record_gradients
  std::optional<int64_t> refuse_from_clock;  // RunOptions::refuse_from_clock (fault injection)
  Rng order_rng{0};
  std::vector<int32_t> ready;                  // uniform: workers holding parameters, ascending
  SimTime order_step;                          // uniform: virtual time per update
  std::vector<int32_t> holders;                // VAP: workers holding an update, ascending
  std::vector<std::vector<float>> free_grads;  // reusable gradient buffers (cache modes)
  SimTime latency;
  std::vector<SimTime> shard_free;  // when each server shard's link is next idle
  SimTime message_overhead;         // per message and shard on the server link
  std::vector<GroupRuntime> groups;
  std::vector<Rng> net_rngs;  // per worker link, only when some latency jitters
  ClusterSchedule schedule;
  int32_t down_count = 0;       // crashed workers not yet rejoined
  int32_t pending_rejoins = 0;  // scheduled rejoins not yet run
  RunResult result;
  // Since the last metrics row:
  double loss_sum = 0.0;
  int64_t loss_count = 0;
  int64_t staleness_sum = 0;
  int64_t staleness_count = 0;
  bool stopped = false;
  bool measured = false;       // compute.timing "measured": the model's GPU times replace the profiles'
  RunObserver* obs = nullptr;  // RunOptions::observer: trace, timeline, explain (null: none)
  // Pool mode (RunOptions::threads > 1, issue 21): in pull modes, a gradient is queued on the pool
  // when the parameters are read (grant) and collected when its push is applied, at most
  // `max_ahead` at once (beyond that a worker computes as without a pool). Same gradients, same
  // order of application, so the same outputs whatever the thread count.
  int64_t max_ahead = 0;
  int64_t tasks_out = 0;                             // workers holding a task
  std::vector<std::unique_ptr<GradientTask>> spare;  // finished tasks, for reuse
  int64_t in_flight_sum = 0;                         // per applied gradient: begun, not applied
  int64_t in_flight_count = 0;
  int64_t begun = 0;  // gradients begun (parameters read), not applied
  // Declared last: destroyed first, before the workers whose tasks it may still hold.
  std::unique_ptr<GradientPool> pool;
  // The metrics rows' evaluations (math only), in the background on the pool where nothing waits
  // for them (start_pool; sim/evaluation.hpp). Declared after the pool: destroyed before it.
  std::unique_ptr<Evaluations> evals;

  Impl(const Scenario& s, const DataSplit& d)
      : sc(s), data(d), clocks(s.cluster.worker_count()), schedule(s.cluster) {
    const int32_t n = s.cluster.worker_count();
    const bool wants_data = traits(s.model.type).has_math;
    model = is_workload_model(s.model.type) ? make_workload_model(s, d)
                                            : make_model(s.model, wants_data ? d.train.features : 0,
                                                         wants_data ? d.train.classes : 0, s.compute.backend);
    math = model->has_math();
    policy = make_policy(s.policy, n);
    eager = policy->cache_mode() == CacheMode::kEager;
    cached = policy->cache_mode() != CacheMode::kPullEveryIteration;
    vap = dynamic_cast<VapPolicy*>(policy.get());
    uniform = s.cluster.order == Order::kUniform;
    order_rng = Rng(s.seed, Purpose::kOrder, 0);
    opt = std::make_unique<ServerOptimizer>(s, n, math ? model->parameter_count() : 0, math,
                                            model->update_kind());
    result.metric_name = model->metric_name();
    bfasgd = dynamic_cast<const BfasgdRule*>(&opt->rule());
    store = std::make_unique<ParamStore>(math ? model->parameter_count() : 0);
    message_bytes = model->wire_bytes();
    // The estimates made before a run (memory, sim/estimate) size the model by model_size; the run
    // holds them to the model it built, so the two accounts cannot drift apart unnoticed.
    if (const ModelSize z = scenario_model_size(s);
        z.parameters != static_cast<double>(model->parameter_count()) ||
        z.wire_bytes != static_cast<double>(message_bytes))
      throw std::logic_error(
          fmt::format("model_size says {} parameters ({} wire bytes), the {} model has {} ({})", z.parameters,
                      z.wire_bytes, to_string(s.model.type), model->parameter_count(), message_bytes));
    latency = SimTime::from_us(s.cluster.network.latency_us);
    shard_free.assign(static_cast<size_t>(s.cluster.servers), SimTime::zero());
    message_overhead = SimTime::from_us(s.cluster.network.message_overhead_us);
    bool link_jitter = false;
    for (size_t g = 0; g < s.cluster.workers.size(); ++g) {
      const auto& grp = s.cluster.workers[g];
      const auto& net = s.cluster.network;
      GroupRuntime rt{
          JitterSampler(grp.jitter ? *grp.jitter : s.cluster.jitter,
                        grp.jitter ? fmt::format("/cluster/workers/{}/jitter", g) : "/cluster/jitter"),
          SimTime::from_us(grp.latency_us.value_or(net.latency_us)),
          grp.bandwidth_gbps.value_or(net.bandwidth_gbps), grp.latency_sigma.value_or(net.latency_sigma)};
      link_jitter = link_jitter || rt.latency_sigma > 0;
      groups.push_back(std::move(rt));
    }
    if (link_jitter)
      for (int32_t i = 0; i < n; ++i)
        net_rngs.emplace_back(s.seed, Purpose::kNetwork, static_cast<uint64_t>(i));
    if (math) {
      Rng init_rng(s.seed, Purpose::kInit, 0);
      model->init(store->write(), init_rng);
      grad.resize(static_cast<size_t>(model->parameter_count()));
      const int64_t m =
          s.eval.test_samples > 0 ? std::min(s.eval.test_samples, d.test.size()) : d.test.size();
      eval_indices.resize(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) eval_indices[static_cast<size_t>(i)] = static_cast<int32_t>(i);
      measured = s.compute.timing == "measured";
      defer = model->can_defer_gradient() && !opt->rule().needs_read_params() &&
              defers_gradients(s, static_cast<double>(model->deferred_floats(s.optimizer.batch_size)),
                               static_cast<double>(model->parameter_count()));
      if (measured) {  // warm-up, and the time of the first iterations: a batch of the first samples
        std::vector<int32_t> probe(
            static_cast<size_t>(std::min<int64_t>(s.optimizer.batch_size, d.train.size())));
        std::iota(probe.begin(), probe.end(), 0);
        for (int i = 0; i < 5; ++i) model->loss_and_gradient(store->read().values(), d.train, probe, grad);
      }
    }
    const bool shared_data = s.data.partition == "shared";
    std::vector<std::vector<int32_t>> shards;
    if (math && s.data.partition == "label-skew") {
      shards = shard_label_skew(d.train.y, d.train.classes, n, s.data.alpha, s.seed);
    } else if (math && !shared_data) {
      shards = shard_iid(d.train.size(), n, s.seed);
    }
    double flops_per_sample = model->flops_per_sample();
    if (const auto cost = find_cost_architecture(s.model.cost)) {  // time and size as `cost`
      flops_per_sample = cost->training_flops();
      message_bytes = static_cast<int64_t>(std::llround(cost->parameters * 4.0));
    }
    if (cached && math && s.model.cost == "derived" && model->row_count() > 0) {
      std::vector<int64_t> row_bytes(static_cast<size_t>(model->row_count()));
      for (size_t r = 0; r < row_bytes.size(); ++r) row_bytes[r] = model->row_bytes(static_cast<int32_t>(r));
      changed_rows = ChangedRows(std::move(row_bytes), n);
    }
    const double flops_per_batch = flops_per_sample * s.optimizer.batch_size;
    workers.resize(static_cast<size_t>(n));
    int32_t id = 0;
    for (size_t g = 0; g < s.cluster.workers.size(); ++g) {
      const auto& group = s.cluster.workers[g];
      const DeviceProfile profile = group_profile(group, g);
      for (int32_t k = 0; k < group.count; ++k, ++id) {
        Worker& w = workers[static_cast<size_t>(id)];
        w.id = id;
        w.group = static_cast<int32_t>(g);
        w.profile = profile.name;
        w.base_compute_ns =
            group.iteration_ms
                ? *group.iteration_ms * 1e6
                : flops_per_batch / (peak_tflops(profile, group.precision) * 1e3 * profile.efficiency) +
                      profile.overhead_us * 1e3;
        if (!(w.base_compute_ns <= SimTime::kMaxNs / 16))  // room for jitter and schedule factors
          throw ScenarioError(fmt::format(
              "/cluster/workers/{}: one iteration would take {:g} s ({}), past the simulator's time range "
              "(int64 nanoseconds, about 292 years)",
              g, w.base_compute_ns / 1e9,
              group.iteration_ms ? "iteration_ms"
                                 : "batch_size x model.flops_per_sample / the profile's peak"));
        w.jitter_rng = Rng(s.seed, Purpose::kJitter, static_cast<uint64_t>(id));
        w.transmit_rng = Rng(s.seed, Purpose::kTransmit, static_cast<uint64_t>(id));
        if (math && shared_data) {
          if (d.train.size() < s.optimizer.batch_size)
            throw ScenarioError(
                fmt::format("/optimizer/batch_size: {} is larger than the {} training samples",
                            s.optimizer.batch_size, d.train.size()));
          w.sampler = std::make_unique<BatchSampler>(
              BatchSampler::shared(d.train.size(), s.seed, static_cast<uint32_t>(id)));
        } else if (math) {
          auto& shard = shards[static_cast<size_t>(id)];
          if (static_cast<int64_t>(shard.size()) < s.optimizer.batch_size)
            throw ScenarioError(
                fmt::format("/optimizer/batch_size: {} is larger than worker {}'s shard of {} samples ({} "
                            "training samples over {} workers)",
                            s.optimizer.batch_size, id, shard.size(), d.train.size(), n));
          w.sampler = std::make_unique<BatchSampler>(std::move(shard), s.seed, static_cast<uint32_t>(id));
        }
        w.stats.id = id;
        w.stats.profile = w.profile;
      }
    }
  }

  SimTime compute_time(Worker& w) {
    if (measured)  // hardware in the loop: the GPU time of the latest gradient (any worker's)
      return SimTime::from_ns(std::max<int64_t>(1, std::llround(*model->last_measured_seconds() * 1e9)));
    const double ns = groups[static_cast<size_t>(w.group)].jitter.sample_ns(w.base_compute_ns, w.jitter_rng);
    const auto what = [&] {
      return fmt::format(
          "worker {}'s iteration (model.flops_per_sample or the cost architecture, the profile, "
          "cluster.workers.*.iteration_ms, the jitter and cluster.schedule) takes too long",
          w.id);
    };
    if (!(ns <= SimTime::kMaxNs)) SimTime::from_ns_checked(ns, what());
    if (schedule.affects_compute(w.id)) {
      try {
        return schedule.compute_end(w.id, engine.now(), ns) - engine.now();
      } catch (const TimeRangeError& e) {
        throw TimeRangeError(fmt::format("{}: {}", what(), e.what()));
      }
    }
    return SimTime::from_ns(std::max<int64_t>(1, std::llround(ns)));
  }
  SimTime worker_link(const Worker& w, int64_t bytes) const {
    return transfer_time(bytes, groups[static_cast<size_t>(w.group)].bandwidth_gbps);
  }
  SimTime server_link(int64_t bytes) const {
    return transfer_time(bytes, sc.cluster.network.server_bandwidth_gbps);
  }
  // One-way latency of w's link for one message (lognormal jitter of mean 1 when configured).
  SimTime latency_of(const Worker& w) {
    const GroupRuntime& g = groups[static_cast<size_t>(w.group)];
    if (!(g.latency_sigma > 0)) return g.latency;
    const double s = g.latency_sigma;
    const double f = net_rngs[static_cast<size_t>(w.id)].lognormal(-0.5 * s * s, s);
    return SimTime::from_ns_checked(static_cast<double>(g.latency.ns()) * f,
                                    fmt::format("worker {}'s link latency (cluster.network.latency_us and "
                                                "latency_sigma)",
                                                w.id));
  }
  // A message of `bytes` that reaches the server side at `arrive`: each shard's part (the bytes
  // split evenly, the first shards taking the remainder) queues on that shard's link in arrival
  // order. Returns when the last part is through.
  // Observers see shard 0's link (the trace's link track), one span per message.
  SimTime server_transfer(SimTime arrive, int64_t bytes, int32_t worker, WireKind kind) {
    const auto shards = static_cast<int64_t>(shard_free.size());
    SimTime done = arrive;
    for (int64_t k = 0; k < shards; ++k) {
      const int64_t part = bytes / shards + (k < bytes % shards ? 1 : 0);
      SimTime& free = shard_free[static_cast<size_t>(k)];
      const SimTime start = max(arrive, free);
      free = start + server_link(part) + message_overhead;
      if (k == 0 && obs) obs->wire(start, free, worker, kind, part);
      done = max(done, free);
    }
    return done;
  }

  // `a` names a kCommunicating state for observers: the push, or (default) the parameters' way back.
  // Adds the time since w.state_since to the counter of w's current state.
  static void close_interval(Worker& w, SimTime end) {
    const int64_t dt = (end - w.state_since).ns();
    switch (w.state) {
      case WorkerState::kComputing:
        w.stats.compute_ns += dt;
        break;
      case WorkerState::kWaiting:
        w.stats.wait_ns += dt;
        break;
      case WorkerState::kCommunicating:
        w.stats.communicate_ns += dt;
        break;
    }
  }

  void set_state(Worker& w, WorkerState s, Activity a = Activity::kPull) {
    close_interval(w, engine.now());
    w.state = s;
    w.state_since = engine.now();
    if (obs)
      obs->activity(engine.now(), w.id,
                    s == WorkerState::kComputing ? Activity::kCompute
                    : s == WorkerState::kWaiting ? Activity::kWait
                                                 : a);
  }

  // The server grants worker w its next clock: it reads the current parameters and sends them.
  void grant(Worker& w) {
    const int64_t gap = clocks.clock(w.id) - clocks.min_clock();
    result.max_clock_gap = std::max(result.max_clock_gap, gap);
    if (w.skip_fetch && w.params) {  // B-FASGD: keep computing on the old copy
      w.read_staleness = clocks.clock(w.id) - w.read_server_clock;
      set_state(w, WorkerState::kCommunicating);
      ++result.skipped_fetch;
      if (uniform) return mark_ready(w);
      engine.schedule_in(latency_of(w), kParamsArrive, static_cast<uint32_t>(w.id),
                         w.gen);  // "go on": no data
      return;
    }
    w.read_staleness = gap;
    w.read_server_clock = clocks.min_clock();
    w.params = store->read();
    w.read_version = store->version();
    if (math) ++begun;
    if (pool && tasks_out < max_ahead) {
      start_task(w);
      if (defer) w.params.reset();  // the pin keeps them for the pool (not a live version)
    } else if (defer) {
      // Same batch the push will draw; the parameters are let go at once.
      model->begin_gradient(w.params.values(), data.train, w.sampler->peek(sc.optimizer.batch_size),
                            w.pending);
      w.params.reset();
    }
    set_state(w, WorkerState::kCommunicating);
    const SimTime sent = server_transfer(engine.now(), message_bytes, w.id, WireKind::kPull);
    result.bytes_pull += message_bytes;
    ++result.messages_pull;
    if (uniform) return mark_ready(w);
    engine.schedule(sent + latency_of(w) + worker_link(w, message_bytes), kParamsArrive,
                    static_cast<uint32_t>(w.id), w.gen);
  }

  // Uniform order: w holds parameters and is one of the workers the next step may draw.
  void mark_ready(Worker& w) {
    w.seen_version = w.read_version;
    set_state(w, WorkerState::kComputing);
    ready.insert(std::upper_bound(ready.begin(), ready.end(), w.id), w.id);
  }

  void on_order_step(uint64_t k) {
    if (ready.empty()) return deadlock();
    const auto pick = static_cast<size_t>(order_rng.below(ready.size()));
    Worker& w = workers[static_cast<size_t>(ready[pick])];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    send_push(w);
    if (!stopped)
      engine.schedule(SimTime::from_ns(static_cast<int64_t>(k + 1) * order_step.ns()), kOrderStep, 0, k + 1);
  }

  void on_params_arrive(Worker& w) {
    w.seen_version = w.read_version;
    set_state(w, WorkerState::kComputing);
    engine.schedule_in(compute_time(w), kComputeDone, static_cast<uint32_t>(w.id), w.gen);
    if (vap) recheck_holders();  // this read may complete the receipt of others' updates
  }

  void on_compute_done(Worker& w) {
    if (cached) return on_compute_done_cached(w);
    if (vap) return on_compute_done_vap(w);
    send_push(w);
  }

  // Pull mode: the push leaves; the request for the next parameters rides on it.
  void send_push(Worker& w) {
    if (bfasgd) {  // both draws every time, in a fixed order, from the worker's own stream
      const bool push = w.transmit_rng.uniform() < bfasgd->push_probability();
      const bool fetch = w.transmit_rng.uniform() < bfasgd->fetch_probability();
      w.skip_push = !push && w.has_last_grad;
      w.skip_fetch = !fetch;
      if (w.skip_push) {  // only a notice goes: the server re-applies the last gradient
        ++result.skipped_push;
        if (uniform) return on_push_applied(w);
        set_state(w, WorkerState::kCommunicating, Activity::kPush);
        engine.schedule_in(latency_of(w), kPushApplied, static_cast<uint32_t>(w.id), w.gen);
        return;
      }
    }
    const int64_t bytes = vap ? w.vap_push_bytes : next_push_bytes(w);
    result.bytes_push += bytes;
    ++result.messages_push;
    if (uniform) return on_push_applied(w);
    set_state(w, WorkerState::kCommunicating, Activity::kPush);
    w.push_bytes.push_back(bytes);
    engine.schedule_in(worker_link(w, bytes) + latency_of(w), kPushAtServer, static_cast<uint32_t>(w.id),
                       w.gen);
  }

  // Bytes of a push: the model's size for the batch (sparse for mf and lda) unless a cost
  // architecture sizes every message. Pull mode draws the batch when the push is applied, so the
  // size comes from the batch the worker's sampler will hand out next.
  int64_t push_bytes_for(std::span<const int32_t> batch) {
    if (!math || sc.model.cost != "derived") return message_bytes;
    return model->update_bytes(data.train, batch);
  }
  int64_t next_push_bytes(Worker& w) {
    if (!math || sc.model.cost != "derived") return message_bytes;
    return push_bytes_for(w.sampler->peek(sc.optimizer.batch_size));
  }

  // Pool mode: queues w's gradient on the parameters just read and the batch its push will draw.
  void start_task(Worker& w) {
    std::unique_ptr<GradientTask> t;
    if (!spare.empty()) {
      t = std::move(spare.back());
      spare.pop_back();
    } else {
      t = std::make_unique<GradientTask>();
      t->grad.resize(grad.size());
    }
    t->params = w.params.values();
    t->pin = store->pin(w.params);
    const auto batch = w.sampler->peek(sc.optimizer.batch_size);
    t->batch.assign(batch.begin(), batch.end());
    pool->submit(*t);
    w.task = std::move(t);
    ++tasks_out;
  }

  // Pool mode: w's gradient, once computed; its loss. The gradient stays in w.task->grad until
  // release_task.
  double collect_task(Worker& w, std::span<const int32_t> batch) {
    GradientTask& t = *w.task;
    if (!std::ranges::equal(batch, t.batch))
      throw std::logic_error(
          fmt::format("worker {}: its pooled gradient is not for the batch it pushes", w.id));
    pool->wait(t);
    store->unpin(static_cast<const detail::Block*>(t.pin));
    t.pin = nullptr;
    ++result.pooled_gradients;
    return t.loss;
  }

  void release_task(Worker& w) {
    if (!w.task) return;
    if (w.task->pin) {  // not collected (a crash, the end of the run)
      pool->cancel(*w.task);
      store->unpin(static_cast<const detail::Block*>(w.task->pin));
      w.task->pin = nullptr;
    }
    spare.push_back(std::move(w.task));
    --tasks_out;
  }

  // Deferred mode: the gradient w began when its parameters were read, finished into `grad`.
  double finish_deferred(Worker& w, std::span<const int32_t> batch) {
    if (!w.pending.pending || !std::ranges::equal(batch, w.pending.batch))
      throw std::logic_error(
          fmt::format("worker {}: its deferred gradient is not for the batch it pushes", w.id));
    model->finish_gradient(w.pending, data.train, grad);
    return w.pending.loss;
  }

  void on_push_at_server(Worker& w) {
    const int64_t bytes = w.push_bytes.front();
    w.push_bytes.pop_front();
    engine.schedule(server_transfer(engine.now(), bytes, w.id, WireKind::kPush), kPushApplied,
                    static_cast<uint32_t>(w.id), w.gen);
  }

  void diverge(Worker& w, double loss) {
    result.status = RunStatus::kDiverged;
    result.stop_reason = "diverged";
    result.diverged_at_s = engine.now().seconds();
    result.diverged_worker = w.id;
    result.detail = fmt::format("worker {}'s training loss became {} at t={:.6f} s (server version {})", w.id,
                                loss, engine.now().seconds(), store->version());
    stop();
  }

  void on_push_applied(Worker& w) {
    if (cached) return on_push_applied_cached(w);
    GradientInfo info{w.id, w.read_version, store->version(), w.read_staleness};
    double step = 0.0;
    if (math) {  // the available parallelism: gradients begun (parameters read), not yet applied
      in_flight_sum += begun;
      ++in_flight_count;
      begun = std::max<int64_t>(0, begun - 1);
    }
    if (vap) {  // the gradient was computed when the compute ended, to judge its size
      OwnPush& o = w.own.back();
      info.version_read = o.read_version;
      info.clock_staleness = o.read_staleness;
      o.applied_version = store->version();
      loss_sum += o.loss;
      ++loss_count;
      step = opt->add(*store, o.grad, info, read_params(w.params));
    } else if (math && w.skip_push) {            // B-FASGD: the server re-applies the last gradient
      w.sampler->next(sc.optimizer.batch_size);  // the batch the worker used, sent nowhere
      info.version_read = w.last_grad_version;
      step = opt->add(*store, w.last_grad, info, {});
    } else if (math) {
      const auto batch = w.sampler->next(sc.optimizer.batch_size);
      const double loss = w.task  ? collect_task(w, batch)
                          : defer ? finish_deferred(w, batch)
                                  : model->loss_and_gradient(w.params.values(), data.train, batch, grad);
      const std::span<const float> g = w.task ? std::span<const float>(w.task->grad) : grad;
      if (!std::isfinite(loss)) {
        release_task(w);
        return diverge(w, loss);
      }
      result.last_finite_loss = loss;
      loss_sum += loss;
      ++loss_count;
      step = opt->add(*store, g, info, read_params(w.params));
      release_task(w);
      if (bfasgd) {
        w.last_grad = grad;
        w.has_last_grad = true;
        w.last_grad_version = w.read_version;
      }
    } else {
      step = opt->add(*store, {}, info, {});
    }
    note_gradient(info, step);
    if (!(bfasgd && w.skip_fetch)) w.params.reset();
    const bool min_rose = book_applied(w, info);
    if (sc.stop.max_updates && result.server_updates >= *sc.stop.max_updates) {
      set_state(w, WorkerState::kWaiting);
      result.stop_reason = "max_updates";
      return stop();
    }
    const bool go =
        policy->may_start(w.id, clocks) && !(refuse_from_clock && clocks.clock(w.id) >= *refuse_from_clock);
    if (go) grant(w);
    if (!waiting.empty() && (min_rose || policy->recheck_every_push())) release_waiting();
    if (!go) {  // after the release: the pusher is re-checked from the next push on
      set_state(w, WorkerState::kWaiting);
      if (obs) obs->blocked(engine.now(), w.id, WaitCause::kPolicy, clocks.clock(w.id), 0);
      waiting.push_back(w.id);
    }
    if (static_cast<int32_t>(waiting.size()) + down_count == clocks.workers() && pending_rejoins == 0)
      deadlock();
  }

  // ---- Cache modes: lazy SSP (Bosen) and ESSP (Bosen's SSPPush) -------------------------------
  // The worker at clock c (pushes sent) may compute from its copy when that copy's server clock is
  // >= c - s; else it waits: under lazy SSP for the fetch that rides on its last push, under ESSP
  // for the server's next push. Its copy always includes its own updates.

  int64_t staleness_bound() const { return sc.policy.staleness; }

  // The server sends the current parameters to w, stamped with the server clock.
  void send_snapshot(Worker& w) {
    InFlight m{store->read(), clocks.min_clock(), clocks.clock(w.id)};
    const int64_t bytes = changed_rows.copy_bytes(w.id, store->version(), message_bytes);
    const SimTime sent = server_transfer(engine.now(), bytes, w.id, WireKind::kPull);
    result.bytes_pull += bytes;
    ++result.messages_pull;
    w.inbox.push_back(std::move(m));
    engine.schedule(sent + latency_of(w) + worker_link(w, bytes), kSnapshotArrives,
                    static_cast<uint32_t>(w.id), w.gen);
  }

  void on_snapshot_arrives(Worker& w) {
    InFlight m = std::move(w.inbox.front());
    w.inbox.pop_front();
    if (m.clock < w.cache_clock) return;  // an older copy overtaken by a newer one
    w.cache = std::move(m.params);
    w.cache_clock = m.clock;
    while (!w.own.empty() && w.own.front().index < m.included) {
      free_grads.push_back(std::move(w.own.front().grad));
      w.own.pop_front();
    }
    w.has_local = math && !w.own.empty();
    if (w.has_local) {  // own updates the server had not applied when it sent this copy
      const auto v = w.cache.values();
      w.local.assign(v.begin(), v.end());
      for (const auto& o : w.own) apply_own(w, o.grad);
    }
    if (w.blocked && w.cache_clock >= w.sent - staleness_bound()) start_cached(w);
  }

  void apply_own(Worker& w, const std::vector<float>& g) {
    const auto step = static_cast<float>(opt->own_step());
    for (size_t i = 0; i < g.size(); ++i) w.local[i] -= step * g[i];
  }

  void start_cached(Worker& w) {
    w.blocked = false;
    const int64_t gap = w.sent - clocks.min_clock();
    result.max_clock_gap = std::max(result.max_clock_gap, gap);
    w.read_staleness = w.sent - w.cache_clock;
    w.read_version = w.cache.version();
    set_state(w, WorkerState::kComputing);
    engine.schedule_in(compute_time(w), kComputeDone, static_cast<uint32_t>(w.id), w.gen);
  }

  void on_compute_done_cached(Worker& w) {
    OwnPush o;
    o.index = w.sent;
    o.read_version = w.read_version;
    o.read_staleness = w.read_staleness;
    if (math) {
      if (!free_grads.empty()) {
        o.grad = std::move(free_grads.back());
        free_grads.pop_back();
      }
      o.grad.resize(grad.size());
      const std::span<const float> view = w.has_local ? std::span<const float>(w.local) : w.cache.values();
      const auto batch = w.sampler->next(sc.optimizer.batch_size);
      o.loss = model->loss_and_gradient(view, data.train, batch, o.grad);
      o.bytes = push_bytes_for(batch);
      if (changed_rows.enabled()) model->changed_rows(data.train, batch, o.rows);
      if (!std::isfinite(o.loss)) return diverge(w, o.loss);
      result.last_finite_loss = o.loss;
      if (!w.has_local) {
        w.local.assign(view.begin(), view.end());
        w.has_local = true;
      }
      apply_own(w, o.grad);
    }
    w.own.push_back(std::move(o));
    ++w.sent;
    // The push leaves on the worker's own link, behind any push still being sent.
    const int64_t bytes = math ? w.own.back().bytes : message_bytes;
    const SimTime start = max(engine.now(), w.link_free);
    w.link_free = start + worker_link(w, bytes);
    result.bytes_push += bytes;
    ++result.messages_push;
    w.push_bytes.push_back(bytes);
    engine.schedule(w.link_free + latency_of(w), kPushAtServer, static_cast<uint32_t>(w.id), w.gen);
    if (w.cache_clock >= w.sent - staleness_bound()) return start_cached(w);
    w.blocked = true;
    w.fetch_wanted = !eager;
    set_state(w, WorkerState::kWaiting);
    if (obs) obs->blocked(engine.now(), w.id, WaitCause::kStaleCache, w.sent, w.cache_clock);
  }

  void on_push_applied_cached(Worker& w) {
    const int64_t index = clocks.clock(w.id);
    OwnPush& o = w.own[static_cast<size_t>(index - w.own.front().index)];
    GradientInfo info{w.id, o.read_version, store->version(), o.read_staleness};
    if (math) {
      loss_sum += o.loss;
      ++loss_count;
    }
    note_gradient(info, opt->add(*store, o.grad, info, read_params(w.cache)));
    changed_rows.note_update(o.rows, store->version());
    const bool min_rose = book_applied(w, info);
    if (sc.stop.max_updates && result.server_updates >= *sc.stop.max_updates) {
      result.stop_reason = "max_updates";
      return stop();
    }
    if (min_rose) {
      if (eager) {
        for (auto& other : workers) send_snapshot(other);
      } else {
        size_t keep = 0;
        for (int32_t id : parked) {
          Worker& p = workers[static_cast<size_t>(id)];
          if (clocks.min_clock() >= p.sent - staleness_bound())
            send_snapshot(p);
          else
            parked[keep++] = id;
        }
        parked.resize(keep);
      }
    }
    // A lazy fetch rides on the worker's last push: the server answers once it is fresh enough.
    if (w.fetch_wanted && index + 1 == w.sent) {
      w.fetch_wanted = false;
      if (clocks.min_clock() >= w.sent - staleness_bound())
        send_snapshot(w);
      else
        parked.insert(std::upper_bound(parked.begin(), parked.end(), w.id), w.id);
    }
  }

  // Books a gradient the server has applied for w: the counters, the staleness statistics, w's
  // clock, the policy and the observers. Returns whether the minimum clock rose.
  bool book_applied(Worker& w, const GradientInfo& info) {
    ++result.server_updates;
    ++w.stats.iterations;
    result.clock_staleness.add(info.clock_staleness);
    result.step_staleness.add(info.step_staleness());
    staleness_sum += info.clock_staleness;
    ++staleness_count;
    const bool min_rose = clocks.advance(w.id);
    policy->on_push(w.id, engine.now(), clocks);
    if (obs) obs->update(engine.now(), w.id, store->version(), info.clock_staleness, info.step_staleness());
    return min_rose;
  }

  // --record gradients: one row per applied gradient.
  void note_gradient(const GradientInfo& info, double step) {
    if (!record_gradients) return;
    result.gradients_csv += fmt::format("{},{},{},{},{},{}\n", engine.now().seconds(), info.worker,
                                        info.version_read, info.version_apply, info.step_staleness(), step);
  }

  // The parameters a gradient was computed on, for rules that need them (DC-ASGD's w_bak).
  std::span<const float> read_params(const Snapshot& s) const {
    return opt->rule().needs_read_params() && s ? s.values() : std::span<const float>();
  }

  // ---- VAP: value-bounded sends -----------------------------------------------------------

  std::vector<float> take_grad_buffer() {
    std::vector<float> g;
    if (!free_grads.empty()) {
      g = std::move(free_grads.back());
      free_grads.pop_back();
    }
    g.resize(grad.size());
    return g;
  }

  void on_compute_done_vap(Worker& w) {
    OwnPush o;
    o.index = clocks.clock(w.id);
    o.read_version = w.read_version;
    o.read_staleness = w.read_staleness;
    o.grad = take_grad_buffer();
    const auto batch = w.sampler->next(sc.optimizer.batch_size);
    o.loss = model->loss_and_gradient(w.params.values(), data.train, batch, o.grad);
    if (!std::isfinite(o.loss)) return diverge(w, o.loss);
    result.last_finite_loss = o.loss;
    w.vap_push_bytes = push_bytes_for(batch);
    if (!opt->rule().needs_read_params()) w.params.reset();  // else kept for the apply
    w.held = std::move(o);
    w.holding = true;
    if (try_send_vap(w)) return;
    vap->note_hold();
    set_state(w, WorkerState::kWaiting);
    if (obs) obs->blocked(engine.now(), w.id, WaitCause::kValueBound, w.held.index, 0);
    holders.insert(std::upper_bound(holders.begin(), holders.end(), w.id), w.id);
    request_refresh(w);
    if (static_cast<int32_t>(holders.size()) == clocks.workers()) {
      // Everyone holds: a fresh copy for each, taken after every applied update, lets each see
      // all of the others' updates, so their in-transit sums empty.
      for (int32_t id : holders) request_refresh(workers[static_cast<size_t>(id)]);
    }
  }

  // Retires w's updates that every other worker has received, then recomputes their sum in a
  // fixed order (no drift from repeated subtraction).
  void retire_received(Worker& w) {
    int64_t min_seen = std::numeric_limits<int64_t>::max();
    for (const auto& q : workers)
      if (q.id != w.id) min_seen = std::min(min_seen, q.seen_version);
    bool retired = false;
    while (!w.own.empty() && w.own.front().applied_version >= 0 && w.own.front().applied_version < min_seen) {
      free_grads.push_back(std::move(w.own.front().grad));
      w.own.pop_front();
      retired = true;
    }
    if (!retired && !w.in_transit.empty()) return;
    const auto step = static_cast<float>(opt->own_step());
    w.in_transit.assign(grad.size(), 0.0f);
    for (const auto& o : w.own)
      for (size_t i = 0; i < grad.size(); ++i) w.in_transit[i] -= step * o.grad[i];
  }

  bool try_send_vap(Worker& w) {
    retire_received(w);
    const auto step = static_cast<float>(opt->own_step());
    const auto& g = w.held.grad;
    double norm = 0.0;
    for (size_t i = 0; i < g.size(); ++i)
      norm = std::max(norm, static_cast<double>(std::fabs(w.in_transit[i] - step * g[i])));
    const bool alone = w.own.empty();
    if (!alone && norm > vap->value_bound()) return false;
    vap->note_send(norm, norm > vap->value_bound());
    for (size_t i = 0; i < g.size(); ++i) w.in_transit[i] -= step * g[i];
    w.own.push_back(std::move(w.held));
    w.holding = false;
    send_push(w);
    return true;
  }

  void recheck_holders() {
    size_t keep = 0;
    for (int32_t id : holders)
      if (!try_send_vap(workers[static_cast<size_t>(id)])) holders[keep++] = id;
    holders.resize(keep);
  }

  void request_refresh(Worker& w) {
    if (w.refresh_in_flight) return;
    w.refresh_in_flight = true;
    // The copy holds at least what the server has now (counted conservatively: updates applied
    // while the request travels are not counted as received). The request takes the latency;
    // the reply queues on the server link like any copy.
    w.refresh_version = store->version();
    const SimTime at_server = engine.now() + latency_of(w);
    const SimTime sent = server_transfer(at_server, message_bytes, w.id, WireKind::kPull);
    result.bytes_pull += message_bytes;
    ++result.messages_pull;
    engine.schedule(sent + latency_of(w) + worker_link(w, message_bytes), kRefreshArrives,
                    static_cast<uint32_t>(w.id), w.gen);
  }

  void on_refresh_arrives(Worker& w) {
    w.refresh_in_flight = false;
    w.seen_version = std::max(w.seen_version, w.refresh_version);
    recheck_holders();
  }

  // Grants every waiting worker the policy now allows, in worker order.
  void release_waiting() {
    std::sort(waiting.begin(), waiting.end());
    size_t keep = 0;
    for (int32_t id : waiting) {
      if (policy->may_start(id, clocks))
        grant(workers[static_cast<size_t>(id)]);
      else
        waiting[keep++] = id;
    }
    waiting.resize(keep);
  }

  // ---- Schedule: crashes and rejoins (issue 5) ----------------------------------------------
  // A crash loses whatever the worker had in flight: its compute, its push (unless applied), its
  // pull. Under on_crash "drop" it also leaves the minimum-clock computation, so synchronous
  // policies proceed without it; under "wait" they wait for it. The time down counts as waiting.

  void on_crash(Worker& w) {
    if (w.down || stopped) return;
    w.down = true;
    ++w.gen;
    w.push_bytes.clear();  // its pushes in flight are lost with it
    changed_rows.forget(w.id);
    ++down_count;
    if (math && (w.task || w.pending.pending || w.params)) begun = std::max<int64_t>(0, begun - 1);
    release_task(w);
    w.params.reset();
    w.pending.pending = false;
    set_state(w, WorkerState::kWaiting);
    if (const auto it = std::find(waiting.begin(), waiting.end(), w.id); it != waiting.end())
      waiting.erase(it);
    const bool alone = down_count == clocks.workers();
    if (sc.cluster.on_crash == "drop" && !alone && clocks.drop(w.id)) release_waiting();
    if (static_cast<int32_t>(waiting.size()) + down_count == clocks.workers() && pending_rejoins == 0)
      deadlock();
  }

  void on_rejoin(Worker& w) {
    --pending_rejoins;
    if (!w.down || stopped) return;
    w.down = false;
    --down_count;
    if (clocks.dropped(w.id)) clocks.rejoin(w.id);
    engine.schedule_in(latency_of(w), kRejoinRequest, static_cast<uint32_t>(w.id), w.gen);
  }

  // The rejoined worker asks for leave and parameters like any worker after a push.
  void on_rejoin_request(Worker& w) {
    if (policy->may_start(w.id, clocks)) return grant(w);
    waiting.push_back(w.id);
  }

  void deadlock() {
    result.status = RunStatus::kDeadlock;
    result.stop_reason = "deadlock";
    // Who waits for whom: a worker ahead of the minimum clock waits for the slowest worker; a
    // worker at the minimum clock waits for no other worker, only for the policy's leave, which
    // nothing left in the run can change.
    std::string who;
    const int32_t slowest = clocks.slowest();
    for (size_t i = 0; i < waiting.size() && i < 8; ++i) {
      const int32_t id = waiting[i];
      const int64_t c = clocks.clock(id);
      who += i ? "; " : "";
      if (c > clocks.min_clock())
        who += fmt::format("worker {} (clock {}) waits for worker {} (clock {})", id, c, slowest,
                           clocks.min_clock());
      else
        who += fmt::format("worker {} (clock {}, the slowest) waits for the policy's leave", id, c);
    }
    if (waiting.size() > 8) who += fmt::format("; and {} more", waiting.size() - 8);
    result.detail = fmt::format(
        "at t={:g} s every worker is blocked and no event is pending: {}; policy {}, minimum clock {}",
        engine.now().seconds(), who, policy->name(), clocks.min_clock());
    stop();
  }

  void stop() {
    stopped = true;
    engine.stop();
  }

  void record_metrics(SimTime now) {
    MetricsRow row;
    row.time = now;
    row.server_version = store->version();
    if (math && loss_count) row.train_loss = loss_sum / static_cast<double>(loss_count);
    if (staleness_count)
      row.mean_staleness = static_cast<double>(staleness_sum) / static_cast<double>(staleness_count);
    row.bytes = result.bytes_push + result.bytes_pull;
    loss_sum = 0;
    loss_count = 0;
    staleness_sum = 0;
    staleness_count = 0;
    if (math) return evals->add(std::move(row), store->peek());  // complete_metrics, now or later
    complete_metrics(row);
  }

  // A metrics row with its evaluation, in the order of record_metrics.
  void complete_metrics(MetricsRow& row) {
    if (obs) obs->evaluation(row);
    result.metrics.push_back(row);
    if (row.test_accuracy && sc.stop.target_accuracy && !result.time_to_target_s &&
        *row.test_accuracy >= *sc.stop.target_accuracy) {
      result.time_to_target_s = row.time.seconds();
      if (sc.stop.at_target) {
        result.stop_reason = "target_accuracy";
        stop();
      }
    }
  }

  void handle(const Event& e) {
    // At 100,000 workers the next event's worker is a cache miss: start loading its hot fields
    // now, while this event runs (a hint only; issue 21).
    if (const Event* next = engine.peek(); next && next->target < workers.size()) {
      const Worker& n = workers[next->target];
      const char* hot = reinterpret_cast<const char*>(&n);
      const char* hot_end = reinterpret_cast<const char*>(&n.stats + 1);
      for (const char* line = hot; line < hot_end; line += 64) __builtin_prefetch(line);
    }
    if (e.kind == kOrderStep) return on_order_step(e.payload);
    if (e.kind == kEvaluate) {
      record_metrics(engine.now());
      if (!stopped) {
        if (e.payload + 1 >= kMaxEvaluations)
          throw ScenarioError(fmt::format(
              "/eval/every_s: {:g} s gives more than {} evaluations by t={:g} s; raise eval.every_s",
              sc.eval.every_s, kMaxEvaluations, engine.now().seconds()));
        int64_t next = 0;
        if (__builtin_mul_overflow(static_cast<int64_t>(e.payload + 1), eval_every().ns(), &next))
          throw TimeRangeError("the next evaluation (eval.every_s): past the simulator's time range");
        engine.schedule(SimTime::from_ns(next), kEvaluate, 0, e.payload + 1);
      }
      return;
    }
    Worker& w = workers[e.target];
    if (e.kind == kCrash) return on_crash(w);
    if (e.kind == kRejoin) return on_rejoin(w);
    if (e.payload != w.gen) return;  // sent before a crash: lost
    switch (e.kind) {
      case kRejoinRequest:
        on_rejoin_request(w);
        break;
      case kPullRequestArrives:
        cached ? send_snapshot(w) : grant(w);
        break;
      case kSnapshotArrives:
        on_snapshot_arrives(w);
        break;
      case kRefreshArrives:
        on_refresh_arrives(w);
        break;
      case kParamsArrive:
        on_params_arrive(w);
        break;
      case kComputeDone:
        on_compute_done(w);
        break;
      case kPushAtServer:
        on_push_at_server(w);
        break;
      case kPushApplied:
        on_push_applied(w);
        break;
      default:
        break;
    }
  }

  SimTime eval_every() const { return SimTime::from_seconds(sc.eval.every_s); }

  RunResult run(const RunOptions& opt) {
    record_gradients = opt.record_gradients;
    obs = opt.observer;
    if (obs) {
      std::vector<std::string> profiles;
      for (const auto& w : workers) profiles.push_back(w.profile);
      obs->start(clocks, *policy, profiles);
    }
    refuse_from_clock = opt.refuse_from_clock;
    defer = defer && opt.defer_gradients;
    result.deferred_gradients = defer;
    if (math)
      evals = std::make_unique<Evaluations>(*model, data.test, eval_indices,
                                            [this](MetricsRow& row) { complete_metrics(row); });
    start_pool(opt.threads);
    if (record_gradients)
      result.gradients_csv = "virtual_time_s,worker,version_read,version_apply,tau,step\n";
    const SimTime limit =
        sc.stop.virtual_time_s ? SimTime::from_seconds(*sc.stop.virtual_time_s) : SimTime::max();
    if (uniform) {
      // Every worker reads the initial parameters at time 0; then one update per step.
      double mean_ns = 0;
      for (const auto& w : workers) mean_ns += w.base_compute_ns;
      mean_ns /= static_cast<double>(workers.size());
      order_step =
          SimTime::from_ns(std::max<int64_t>(1, std::llround(mean_ns / static_cast<double>(workers.size()))));
      for (auto& w : workers) grant(w);
      engine.schedule(order_step, kOrderStep, 0, 1);
    } else {
      for (auto& w : workers)
        engine.schedule(latency_of(w), kPullRequestArrives, static_cast<uint32_t>(w.id), w.gen);
      const auto& crashes = schedule.crashes();
      for (size_t i = 0; i < crashes.size(); ++i) {
        engine.schedule(crashes[i].at, kCrash, static_cast<uint32_t>(crashes[i].worker), i);
        if (crashes[i].rejoin) {
          engine.schedule(*crashes[i].rejoin, kRejoin, static_cast<uint32_t>(crashes[i].worker), i);
          ++pending_rejoins;
        }
      }
    }
    engine.schedule(SimTime::zero(), kEvaluate, 0, 0);
    Progress progress;
    progress.virtual_time_limit_s = sc.stop.virtual_time_s.value_or(0.0);
    progress.max_updates = sc.stop.max_updates.value_or(0);
    auto report = [&] {
      if (!opt.on_progress) return;
      if (evals) evals->deliver_ready();
      progress.virtual_time_s = engine.now().seconds();
      progress.server_updates = result.server_updates;
      if (!result.metrics.empty()) progress.last_accuracy = result.metrics.back().test_accuracy;
      opt.on_progress(progress);
    };
    const uint64_t every = std::max<uint64_t>(1, opt.progress_every);
    while (!stopped) {
      if (opt.interrupt && opt.interrupt->load(std::memory_order_relaxed)) {
        result.status = RunStatus::kInterrupted;
        result.stop_reason = "interrupted";
        break;
      }
      bool ran = false;
      engine.run_until(limit, [&](const Event& e) {
        handle(e);
        ran = true;
        if (engine.events_run() % every == 0 ||
            (opt.interrupt && opt.interrupt->load(std::memory_order_relaxed)))
          engine.stop();  // an interrupt stops at the next event
      });
      if (engine.events_run() % every == 0) report();
      if (!ran) {
        if (!stopped) result.stop_reason = sc.stop.virtual_time_s ? "virtual_time" : "no_events";
        break;
      }
    }
    // The clock ends at the time limit when the run reached it.
    SimTime end = engine.now();
    if (result.stop_reason == "virtual_time") end = limit;
    finish(end);
    report();
    return std::move(result);
  }

  // Pool mode where it applies: pull modes (not the cache modes nor VAP, which compute from a
  // worker's own copy when the compute ends), a model that computes on other threads
  // (Model::clone), on the CPU, with simulated times (measured times follow the order in which
  // gradients are computed), without B-FASGD's skipped pushes.
  void start_pool(int threads) {
    if (threads < 1) throw std::invalid_argument(fmt::format("threads: expected >= 1, got {}", threads));
    if (threads == 1 || !math || cached || vap || bfasgd || measured || sc.compute.backend != "cpu") return;
    std::vector<std::unique_ptr<Model>> helpers;
    for (int i = 1; i < threads; ++i) {
      auto m = model->clone();
      if (!m) return;
      helpers.push_back(std::move(m));
    }
    max_ahead = 4 * static_cast<int64_t>(threads);
    pool = std::make_unique<GradientPool>(*model, std::move(helpers), data.train);
    // Unless a row's evaluation decides what happens next (the target stops the run) or an
    // observer sees rows as they happen: at most 2 (their parameter copies) waiting at once.
    if (!obs && !(sc.stop.at_target && sc.stop.target_accuracy)) evals->use_pool(pool.get(), 2);
  }

  void finish(SimTime end) {
    if (obs) obs->finish(end);
    for (auto& w : workers) release_task(w);
    if (evals) {
      evals->use_pool(nullptr, 1);  // the rows still in flight, before the pool goes
      result.background_evaluations = evals->background_count();
    }
    pool.reset();
    if (in_flight_count)
      result.gradients_in_flight = static_cast<double>(in_flight_sum) / static_cast<double>(in_flight_count);
    // Close every worker's open interval at `end`.
    for (auto& w : workers) {
      close_interval(w, end);
      w.state_since = end;
      w.params.reset();
      result.workers.push_back(w.stats);
    }
    result.end_time = end;
    // A final evaluation at the end, unless the last row already describes this state.
    if (result.status != RunStatus::kDiverged &&
        (result.metrics.empty() || result.metrics.back().time != end ||
         result.metrics.back().server_version != store->version()))
      record_metrics(end);
    if (math) {
      auto p = store->peek();
      result.final_params.assign(p.begin(), p.end());
    }
    result.data_files = data.files;
    result.policy_facts = policy->facts();
    result.decisions_csv = policy->decisions_csv();
    result.peak_live_versions = store->peak_live_blocks();
    result.events = engine.events_run();
  }
};

Simulation::Simulation(const Scenario& scenario, const DataSplit& data)
    : impl_(std::make_unique<Impl>(scenario, data)) {}
Simulation::~Simulation() = default;
RunResult Simulation::run(const RunOptions& options) { return impl_->run(options); }

RunResult run_scenario(const Scenario& s, const RunOptions& options) {
  const DataSplit data = load_data(s);
  Simulation sim(s, data);
  return sim.run(options);
}

}  // namespace stalesim
