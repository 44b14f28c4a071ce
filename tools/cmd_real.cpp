// `stalesim real SCENARIO` (issue 28; sim/real/real_run.hpp): a parameter server and workers over
// MPI, on the wall clock. Alone, it checks what it can and starts mpirun on itself; under mpirun,
// each process runs its rank.

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "models/dataset.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/estimate/real_limits.hpp"
#include "sim/real/real_run.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "tools/cli.hpp"
#include "tools/cpu_quota.hpp"
#include "tools/kernel_net.hpp"

namespace stalesim::cli {

namespace fs = std::filesystem;

namespace {

struct RealCommand {
  Scenario scenario;
  std::string origin;             // the scenario file, for messages
  std::vector<std::string> args;  // `real`'s arguments as given, for the mpirun this command starts
  RealOptions options;
  std::vector<CpuQuota> quotas;  // --cpu-quota: slower workers made by the kernel
  bool quiet = false;
};

// `mpirun` on PATH (or STALESIM_MPIRUN), or "".
std::string find_mpirun() {
  if (const char* m = std::getenv("STALESIM_MPIRUN"); m && *m) return ::access(m, X_OK) == 0 ? m : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t from = 0;
  while (from <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', from), dirs.size());
    const std::string dir = dirs.substr(from, colon - from);
    if (!dir.empty()) {
      const std::string p = dir + "/mpirun";
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
    from = colon + 1;
  }
  return "";
}

// find_mpirun(), or a ScenarioError that says how to get it.
std::string require_mpirun() {
  std::string mpirun = find_mpirun();
  if (mpirun.empty())
    throw ScenarioError(
        "mpirun was not found on PATH (install OpenMPI, e.g. tools/install-deps.sh, or set "
        "STALESIM_MPIRUN to its path); nothing was run");
  return mpirun;
}

pid_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;  // the signal passed on to mpirun, 0 for none
// The first Ctrl-C (or SIGTERM, SIGHUP) reaches the ranks as SIGUSR1, which mpirun passes on at
// once. A real run's rank 0 acts on it (it writes what was measured and ends the job with
// MPI_Abort) and its other ranks ignore it; ranks without a handler (calibrate --cpu) end by it as
// they did by SIGTERM. mpirun's own handling of SIGINT gives the ranks 1 s between its SIGTERM and
// its SIGKILL, too little for rank 0 to write on a loaded machine. The signal itself goes to
// mpirun after kGracefulStopS, or at a second one.
volatile sig_atomic_t g_asked = 0;  // SIGUSR1 sent
constexpr int kGracefulStopS = 20;
extern "C" void forward_signal(int sig) {
  g_forwarded = sig;
  if (g_child <= 0) return;
  if (!g_asked) {
    g_asked = 1;
    ::kill(g_child, SIGUSR1);
    return;
  }
  ::kill(g_child, sig);
}

}  // namespace

// Whether this process is a rank other than 0 of an mpirun job (it then prints no errors: rank 0
// prints them once).
bool quiet_rank() {
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  return mpi_launch_size() > 0 && r && std::atoi(r) != 0;
}

int launch_ranks(int ranks, const std::string& command, const std::vector<std::string>& args, bool quiet,
                 const std::string& on_interrupt, const KernelNet* net) {
  const std::string mpirun = require_mpirun();
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw ScenarioError(fmt::format("cannot find this program (/proc/self/exe): {}", ec.message()));
  std::vector<std::string> argv;
  if (net) argv = kernel_net_before_mpirun(*net);
  argv.insert(argv.end(), {mpirun, "-n", std::to_string(ranks), "--bind-to", "none"});
  // Always: OpenMPI counts slots by physical cores or the batch allocation, not by the logical CPUs
  // this process sees, and the ranks sleep between polls, so oversubscribing costs nothing.
  argv.emplace_back("--oversubscribe");
  if (::geteuid() == 0) argv.emplace_back("--allow-run-as-root");
  if (net) {
    for (auto& o : kernel_net_mpirun_options(*net)) argv.push_back(o);
    for (auto& o : kernel_net_before_rank(*net)) argv.push_back(o);
  }
  argv.push_back(self);
  argv.push_back(command);
  argv.insert(argv.end(), args.begin(), args.end());
  // Idle ranks yield their core (OpenMPI's progress loop); the real mode polls with sleeps anyway.
  ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  if (!quiet) {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    fmt::print(stderr, "stalesim {}: {}\n", command, line);
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::fflush(nullptr);
  // The signals wait until the child is known to the handler: one that came between the fork and
  // the handler would kill this process and leave mpirun and every rank running.
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
  ::sigprocmask(SIG_BLOCK, &block, &old_mask);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    throw ScenarioError(fmt::format("{}: fork failed", command));
  }
  if (child == 0) {
    // mpirun ends (and ends its ranks) when this process dies, even by SIGKILL.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(kExitFailed);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    // mpirun forwards its stdin to rank 0 and reads it meanwhile: the caller's stdin (a `while read`
    // loop over scenarios) stays the caller's.
    const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);  // nothing is read from it
    if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0) _exit(kExitFailed);
    ::execv(cargv[0], cargv.data());
    _exit(127);
  }
  g_child = child;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, forward_signal);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  int asked_for_ms = 0;  // since the graceful stop was asked for
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child || (done < 0 && errno != EINTR)) break;
    ::usleep(50'000);
    if (g_asked && (asked_for_ms += 50) == kGracefulStopS * 1000) ::kill(child, SIGINT);
  }
  g_child = 0;
  if (g_forwarded) {  // Ctrl-C or a kill: mpirun ended the job, and rank 0 wrote what it measured
    fmt::print(stderr, "stalesim {}: interrupted (signal {}); the ranks were ended{}\n", command,
               static_cast<int>(g_forwarded), on_interrupt);
    return kExitInterrupted;
  }
  if (WIFEXITED(status) && (WEXITSTATUS(status) == kExitOk || WEXITSTATUS(status) == kExitBadInput))
    return WEXITSTATUS(status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw ScenarioError(fmt::format("could not start {}", mpirun));
  fmt::print(stderr, "stalesim {}: the MPI job failed ({}); see the messages above\n", command,
             WIFEXITED(status) ? fmt::format("mpirun exited with {}", WEXITSTATUS(status))
                               : fmt::format("mpirun ended by signal {}", WTERMSIG(status)));
  return kExitFailed;
}

int launch_on_machine(int ranks, const std::string& command, const std::vector<std::string>& args, bool quiet,
                      const std::string& on_interrupt, MachineShaping shaping) {
  cpu_quota_make(shaping.quotas);
  struct Remove {  // the groups go with the job, also when the launch throws
    std::vector<CpuQuota>& q;
    ~Remove() { cpu_quota_remove(q); }
  } remove{shaping.quotas};
  if (!shaping.kernel_net_of) return launch_ranks(ranks, command, args, quiet, on_interrupt);
  KernelNet net = plan_kernel_net(*shaping.kernel_net_of, ranks, shaping.calibrate);
  kernel_net_up(net);
  struct Down {  // and so does the network
    KernelNet& net;
    ~Down() { kernel_net_down(net); }
  } down{net};
  if (!quiet)
    fmt::print(stderr, "stalesim {}: network {} made by the kernel ({} {})\n", command, net.id, net.tool,
               [&] {
                 std::string a;
                 for (const auto& x : net.up) a += (a.empty() ? "" : " ") + x;
                 return a;
               }());
  return launch_ranks(ranks, command, args, quiet, on_interrupt, &net);
}

namespace {

// Alone: checks the output folder, then starts one rank per process of the real run.
int launch(const RealCommand& c) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int cpu_count = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0
                            ? CPU_COUNT(&cpus)
                            : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  const auto limit = memory_limit(env("STALESIM_MEMORY_LIMIT"));
  if (const std::string why =
          real_local_refusal(c.scenario, cpu_count, limit ? std::optional(limit->bytes) : std::nullopt,
                             limit ? limit->source : std::string());
      !why.empty())
    throw ScenarioError(fmt::format("{}: the real mode cannot start this scenario here: {}", c.origin, why));
  require_mpirun();
  check_output_dir(c.options.out, c.options.force, c.options.guard);
  return launch_on_machine(real_ranks(c.scenario), "real", c.args, c.quiet,
                           fmt::format(", partial outputs in {}/", c.options.out),
                           {c.quotas, c.options.kernel_net ? &c.scenario : nullptr, false});
}

// Under mpirun: runs this rank. Alone: checks what can be checked, then starts
// `mpirun -n S+N ... stalesim real ARGS` (S server shards, N workers) and waits for it. Returns the exit code
// (README "Real runs").
int real_main(RealCommand c) {
  if (const std::string why = real_refusal(c.scenario, c.options.emulated, c.options.kernel_net);
      !why.empty())
    throw ScenarioError(fmt::format("{}: the real mode cannot run this scenario: {}", c.origin, why));
  if (!mpi_built())
    throw ScenarioError(
        "the real mode needs MPI, and this stalesim was built without it (configure with OpenMPI installed)");
  if (const char* f = std::getenv("STALESIM_REAL_INJECT_FAULT"); f && *f) {
    RealOptions::Fault fault;
    long long it = -1;
    char how[8] = "";
    const std::string spec = f;
    const bool server = spec.starts_with("server:");
    const bool shard = spec.starts_with("shard:");
    if (server || shard) fault.worker = -1;
    bool parsed = false;
    if (server)
      parsed = std::sscanf(f + 7, "%lld:%7s", &it, how) == 2;
    else if (shard)
      parsed = std::sscanf(f + 6, "%d:%lld:%7s", &fault.shard, &it, how) == 3 && fault.shard >= 1;
    else
      parsed = std::sscanf(f, "%d:%lld:%7s", &fault.worker, &it, how) == 3 && fault.worker >= 0;
    if (!parsed || it < 0 || (std::string(how) != "kill" && std::string(how) != "stop"))
      throw ScenarioError(
          fmt::format("STALESIM_REAL_INJECT_FAULT='{}': expected WORKER:ITERATION:kill|stop, "
                      "server:UPDATES:kill|stop or shard:K:UPDATES:kill|stop (K >= 1)",
                      f));
    fault.iteration = it;
    fault.hang = std::string(how) == "stop";
    c.options.fault = fault;
  }
  if (mpi_launch_size() == 0) return launch(c);
  if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK"))  // a limited worker's rank joins its cgroup
    join_cpu_group(std::atoi(r), /*thread_only=*/false);
  const RealOutcome r = run_real_rank(c.scenario, c.options);
  if (r.bad_input) return kExitBadInput;  // rank 0 said why
  if (quiet_rank()) return kExitOk;
  fmt::print(
      "{}: real run {} ({}) at t={:g} s wall after {} updates ({} timing); wrote {}/ (result_hash {}, not "
      "bit-reproducible)\n",
      c.scenario.name, to_string(r.status), to_string(r.stop_reason), r.end_s, r.server_updates,
      c.options.emulated ? "emulated" : "measured", c.options.out, r.result_hash);
  if (r.status == RunStatus::kDeadlock) {
    fmt::print(stderr, "stalesim: deadlock: {}\n", r.detail);
    return kExitFailed;
  }
  if (r.status == RunStatus::kDiverged) fmt::print(stderr, "stalesim: diverged: {}\n", r.detail);
  return kExitOk;
}

}  // namespace

int cmd_real(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim real SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("out", po::value<std::string>(),
                  "output folder (default: RESULTS/<scenario name>-real, RESULTS: --results)")(
      "force", "replace the output folder when it holds a stalesim run")(
      "timing", po::value<std::string>()->default_value("emulated"),
      "emulated: pad compute and messages to the scenario's devices and network; measured: no padding")(
      "cpu-quota", po::value<std::vector<std::string>>(),
      "WORKER=SHARE: that worker's rank gets SHARE of one core (a cgroup CPU quota; needs root): a "
      "slower worker made by the kernel (repeatable)")(
      "net", po::value<std::string>()->default_value("none"),
      "none: the ranks talk as MPI likes (shared memory here); kernel: each rank on its own host in a "
      "network the Linux kernel makes from the scenario's links (needs root and --timing measured; "
      "star and racks; tools/real-net)")(
      "watchdog-s", po::value<double>()->default_value(60),
      "end the job when a worker the server waits for, or the server a worker waits for, sends nothing "
      "for this many seconds")("quiet", "no mpirun line and no start line on stderr")("help,h",
                                                                                      "show this help");
  add_results_option(o);
  po::positional_options_description pos;
  pos.add("scenario", 1);
  try {
    const auto p = parse(args, o, pos);
    if (p.help) {
      std::cout << o
                << "\nRuns one rank per server shard (rank 0: the parameter server, and shard 0 of\n"
                   "cluster.servers) and one rank per worker. Under mpirun give it -n SERVERS+WORKERS;\n"
                   "alone it starts mpirun itself. Writes summary.json, metrics.csv,\n"
                   "staleness.csv, gradients.csv, timing.csv (wall-clock seconds); see REFERENCE.md \"Real "
                   "runs\".\n"
                   "Exit codes: 0 success, 2 bad input or a scenario the real mode refuses, 3 a failed run\n"
                   "(a rank died or fell silent), 130 interrupted (SIGINT or SIGTERM).\n";
      return kExitOk;
    }
    RealCommand c;
    c.scenario = load(p.vm);
    c.origin = p.vm["scenario"].as<std::string>();
    c.args = args;
    const std::string timing = p.vm["timing"].as<std::string>();
    if (timing != "emulated" && timing != "measured")
      throw UsageError(fmt::format("--timing '{}': allowed: emulated, measured", timing));
    c.options.emulated = timing == "emulated";

    c.options.kernel_net = kernel_net_option(p.vm["net"].as<std::string>());
    if (p.vm.count("cpu-quota"))
      for (const auto& q : p.vm["cpu-quota"].as<std::vector<std::string>>())
        c.quotas.push_back(parse_cpu_quota(q, c.scenario.cluster.worker_count(), /*with_worker=*/true));
    for (auto& q : c.quotas) q.rank = c.scenario.cluster.servers + q.worker;
    if (!c.quotas.empty() && c.options.emulated)
      throw UsageError(
          "--cpu-quota: emulated timing pads each gradient to the scenario's time, so a quota changes "
          "nothing it reports: use --timing measured");
    if (c.options.kernel_net && c.options.emulated)
      throw UsageError(
          "--net kernel: the kernel shapes the links, so nothing is padded: use --timing measured (emulated "
          "timing would charge each message twice)");
    c.options.watchdog_s = p.vm["watchdog-s"].as<double>();
    if (!(c.options.watchdog_s > 0 && c.options.watchdog_s <= 86400))
      throw UsageError(
          fmt::format("--watchdog-s: expected a number in (0, 86400], got {}", c.options.watchdog_s));
    c.options.out = display_path(p.vm.count("out") ? p.vm["out"].as<std::string>()
                                                   : default_output(p.vm, c.scenario.name + "-real"));
    c.options.force = p.vm.count("force") > 0;
    c.options.guard = output_guard(c.origin);
    c.quiet = p.vm.count("quiet") > 0;
    c.options.announce = !c.quiet;
    return real_main(std::move(c));
  } catch (const ScenarioError&) {
    if (quiet_rank()) return kExitBadInput;  // bad input: rank 0 says it, once
    throw;
  } catch (const UsageError&) {
    if (quiet_rank()) return kExitBadInput;
    throw;
  } catch (const DataError&) {
    if (quiet_rank()) return kExitBadInput;
    throw;
  } catch (const std::exception&) {
    // A worker rank's failure (an MPI send after rank 0 died, say) is a failed run, not bad input:
    // mpirun passes the first non-zero code on to the launcher.
    if (quiet_rank()) return kExitFailed;
    throw;
  }
}

}  // namespace stalesim::cli
