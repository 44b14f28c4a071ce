// Real mode (sim/real/real_run.hpp): the server and worker ranks of `stalesim real`.

#include "sim/real/real_run.hpp"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <vector>

#include "sim/scenario/topology_kinds.hpp"
#include "sim/simulation.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "sim/worker/core.hpp"

#ifdef STALESIM_HAVE_MPI
#include "sim/real/real_server.hpp"
#endif

namespace stalesim {

namespace {

// The topology kinds a real run makes, in words: "star" (emulated, or made by the kernel with
// --net kernel) and "racks" (--net kernel).
std::string real_topologies() {
  std::vector<std::string> kinds;
  for (const auto& e : enum_names(TopologyKind{})) {
    const RealNetwork real = topology_kind(e.value).real;
    if (real != RealNetwork::kNone)
      kinds.push_back(fmt::format("\"{}\" ({})", e.name,
                                  real == RealNetwork::kKernel
                                      ? "--net kernel"
                                      : "emulated, or made by the kernel with --net kernel"));
  }
  std::string out;
  for (size_t i = 0; i < kinds.size(); ++i)
    out += (i == 0 ? "" : i + 1 == kinds.size() ? " and " : ", ") + kinds[i];
  return out;
}

}  // namespace

std::string real_refusal(const Scenario& s, bool emulated, bool kernel_net) {
  const PolicySpec& p = s.policy;
  // Measured timing validates the simulation's cost model: the real gradient must cost what the
  // simulation charges, and each message carry the bytes it charges. A cost architecture charges
  // another model's FLOPs and bytes than the math the ranks compute and send.
  if (!emulated && !s.model.cost_derived())
    return fmt::format(
        "/model/cost: \"{}\" charges that architecture's FLOPs and message bytes, while the ranks compute "
        "and send model \"{}\"'s: a measured run would be compared with a simulation of another model; "
        "remove model.cost (the simulation then charges the model's own), or use --timing emulated",
        s.model.cost, to_string(s.model.type));
  if (p.type == PolicyType::kVap)
    return "/policy/type: \"vap\" holds each update on its worker until every other worker has received "
           "the updates in transit (a value bound that needs every worker's view of every other's "
           "updates); the real mode implements the clock-bounded policies (bsp, asp, ssp with either "
           "cache, dssp, essp, softsync), not VAP's worker-to-worker bookkeeping";
  if (p.all_reduce())
    return fmt::format(
        "/policy/type: \"{}\" has no server; the real mode emulates the parameter-server policies "
        "only (bsp, asp, ssp with either cache, dssp, essp, softsync)",
        to_string(p.type));
  if (!p.pulls_every_clock()) {  // lazy SSP and ESSP: the workers' own copies (sim/real/real_cache.cpp)
    if (s.model.cost_derived() && (s.model.type == ModelType::kMf || s.model.type == ModelType::kLda))
      return fmt::format(
          "/model/type: \"{}\": under a cache policy a simulation sends the changed rows of a row model "
          "(policy \"{}\"); the real mode sends whole copies: use model.cost or a pull-every-iteration "
          "policy",
          to_string(s.model.type), to_string(p.type));
    if (s.optimizer.rule == RuleType::kDcasgd)
      return "/optimizer/rule: \"dcasgd\" needs the parameters each gradient read; under a cache policy "
             "those are the worker's own copy, which the real mode does not send back: use a "
             "pull-every-iteration policy";
  }
  const TopologyKind topology = s.cluster.network.topology;
  if (topology_kind(topology).real == RealNetwork::kKernel && !kernel_net)
    return fmt::format(
        "/cluster/network/topology: \"{}\": the real mode emulates the star network only (each worker's link "
        "and the server's FIFO link); a real run on {} needs the kernel to make them: --net kernel --timing "
        "measured",
        enum_name(topology), enum_name(topology));
  if (topology_kind(topology).real == RealNetwork::kNone)
    return fmt::format("/cluster/network/topology: \"{}\": the real mode runs {}; a {} is simulated only",
                       enum_name(topology), real_topologies(), enum_name(topology));
  if (s.cluster.order == Order::kUniform)
    return "/cluster/order: \"uniform\" is a simulated update order with no transfers; a real run has real "
           "ones";
  if (s.compute.backend != Backend::kCpu)
    return fmt::format("/compute/backend: \"{}\": the real mode computes gradients on the CPU",
                       enum_name(s.compute.backend));
  if (s.compute.timing == Timing::kMeasured)
    return "/compute/timing: \"measured\" is the simulator's GPU timing; for a real run without padding use "
           "'stalesim real --timing measured'";
  if (!traits(s.model.type).has_math)
    return fmt::format("/model/type: \"{}\" has no math: a real run computes and sends real gradients",
                       to_string(s.model.type));
  if (s.optimizer.rule == RuleType::kBfasgd)
    return "/optimizer/rule: \"bfasgd\" cuts pushes and fetches with probabilities that follow the "
           "server's running statistics (its transfer gate); a worker rank does not hold them, and the real "
           "mode does not send them with each grant, so it does not cut messages: use \"fasgd\"";
  if (!ClusterSchedule(s.cluster).crashes().empty())
    return "/cluster/schedule: crashes and rejoins are simulated faults; a real run has only real ones";
  if (!s.stop.virtual_time_s && !s.stop.max_updates && !(s.stop.target_accuracy && s.stop.at_target))
    return "/stop: a real run needs an end: stop.virtual_time_s (wall-clock seconds here), stop.max_updates "
           "or stop.target_accuracy with stop.at_target";
  return "";
}

int real_ranks(const Scenario& s) { return s.cluster.servers + s.cluster.worker_count(); }

#ifndef STALESIM_HAVE_MPI

RealOutcome run_real_rank(const Scenario&, const RealOptions&) {
  throw ScenarioError(
      "this stalesim was built without MPI: the real mode needs it (configure with MPI found)");
}

#else

namespace real {

extern "C" void on_real_signal(int sig) { g_signal.store(sig); }

// ---- A worker (ranks S..S+N-1) -------------------------------------------------------------

void run_pull_worker(WorkerCore& c, int32_t id, const RealOptions& opt, const Layout& l,
                     Clock::time_point epoch) {
  Worker& w = c.worker(static_cast<size_t>(id));
  std::vector<float> grad(c.gradient_size());
  std::vector<char> buf;
  std::vector<float> part, params;
  for (int64_t iteration = 0;; ++iteration) {
    await_server(buf, opt.watchdog_s);
    const auto h = unpack<ParamsHeader>(buf, part);
    if (h.stop) return;
    receive_slices(l, part, params, opt.watchdog_s);  // every shard's part
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
    send_push(l, p, grad);
  }
}

}  // namespace real

RealOutcome run_real_rank(const Scenario& s, const RealOptions& options) {
  if (const std::string why = real_refusal(s, options.emulated, options.kernel_net); !why.empty())
    throw ScenarioError(fmt::format("the real mode cannot run this scenario: {}", why));
  MpiSession mpi;
  const int32_t shards = s.cluster.servers;
  if (mpi.size() != real_ranks(s)) {
    const std::string why = fmt::format(
        "a real run of this scenario takes {} MPI ranks ({} + {} workers); mpirun started {}: run 'mpirun "
        "-n {} stalesim real ...', or 'stalesim real ...' alone",
        real_ranks(s), shards == 1 ? std::string("1 server") : fmt::format("{} server shards", shards),
        s.cluster.worker_count(), mpi.size(), real_ranks(s));
    if (mpi.rank() == 0) {
      fmt::print(stderr, "stalesim: {}\n", why);
      std::fflush(stderr);
    }
    MPI_Barrier(MPI_COMM_WORLD);  // no rank exits before rank 0 has said it
    RealOutcome refused;
    refused.bad_input = true;
    return refused;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  real::precise_sleeps();
  const DataSplit data = load_data(s);
  WorkerCore core(s, data, plan_run(s));
  // The server computes no gradient (the workers do): grants hand out the parameters themselves.
  core.set_run_options(std::nullopt, /*defer_gradients=*/false);
  const real::Layout layout{shards, core.model().parameter_count()};
  const bool is_shard = mpi.rank() < shards;
  if (shards > 1 && is_shard) {  // each server rank keeps its own slice
    const real::Slice slice = layout.slice(mpi.rank());
    core.keep_slice(slice.begin, slice.count);
  }
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
  // Every rank ends with mpirun: a rank whose mpirun died (even by SIGKILL) gets SIGTERM.
  const pid_t launcher = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != launcher) ::raise(SIGTERM);
  std::signal(SIGTERM, real::on_real_signal);
  std::signal(SIGINT, real::on_real_signal);
  // The launcher's graceful stop (tools/cmd_real.cpp): rank 0 writes what was measured and ends the
  // job; the other ranks go on until it does.
  std::signal(SIGUSR1, mpi.rank() == 0 ? real::on_real_signal : SIG_IGN);
  // A ping from every server rank to every rank after it first: OpenMPI connects pairs of ranks
  // lazily, on their first message, which would otherwise delay the first grants. A rank answers
  // the server ranks before it in rank order, then pings the ranks after it (server ranks only).
  char ping = 0;
  for (int r = 0; r < std::min(mpi.rank(), shards); ++r) {
    MPI_Recv(&ping, 1, MPI_BYTE, r, real::kTagParams, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&ping, 1, MPI_BYTE, r, real::kTagPush, MPI_COMM_WORLD);
  }
  if (is_shard)
    for (int r = mpi.rank() + 1; r < mpi.size(); ++r)
      MPI_Sendrecv_replace(&ping, 1, MPI_BYTE, r, real::kTagParams, r, real::kTagPush, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE);
  // One time base: rank 0's CLOCK_MONOTONIC origin (the ranks share one host's clock).
  MPI_Barrier(MPI_COMM_WORLD);
  int64_t origin = real::Clock::now().time_since_epoch().count();
  MPI_Bcast(&origin, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  const real::Clock::time_point epoch{real::Clock::duration(origin)};
  if (mpi.rank() == 0) {
    if (options.announce) {  // from here on, a signal ends the run with what was measured written
      fmt::print(
          stderr,
          "stalesim real: {} ranks ready, the run starts (Ctrl-C stops it and writes what was measured)\n",
          mpi.size());
      std::fflush(stderr);
    }
    real::RealServer server(core, options, layout, epoch);
    return server.run();
  }
  try {
    if (is_shard)
      real::run_shard(core, mpi.rank(), options, layout);
    else if (core.policy().cache_mode() == CacheMode::kPullEveryIteration)
      real::run_pull_worker(core, layout.worker_of(mpi.rank()), options, layout, epoch);
    else
      real::run_cache_worker(core, layout.worker_of(mpi.rank()), options, layout, epoch);
  } catch (const std::runtime_error& e) {  // the watchdog, a signal, an MPI error: end the job
    const int sig = real::g_signal.load();
    if (is_shard)
      fmt::print(stderr, "stalesim real: server shard {} (rank {}): {}\n", mpi.rank(), mpi.rank(), e.what());
    else
      fmt::print(stderr, "stalesim real: worker {} (rank {}): {}\n", layout.worker_of(mpi.rank()), mpi.rank(),
                 e.what());
    std::fflush(stderr);
    if (sig) _exit(128 + sig);  // mpirun ends the job; rank 0 writes what it measured
    MPI_Abort(MPI_COMM_WORLD, real::kExitFailed);
  }
  return {};
}

#endif

}  // namespace stalesim
