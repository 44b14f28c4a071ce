#pragma once
// Real mode (`stalesim real`, issue 28): a scenario executed by real processes over MPI, to
// measure how far the simulator is from a real run of the same protocol.
//
// Ranks 0..S-1 are the parameter server's S shards (S = cluster.servers, 1 by default), ranks
// S..S+N-1 the scenario's N workers (worker w on rank S + w). Rank 0 is the server: it runs the
// simulator's own objects, the worker core (sim/worker/core.hpp) with its SyncPolicy,
// ServerOptimizer and ParamStore, and the pull protocol (sim/worker/pull.hpp) whose
// on_push_applied decides grants, waits and releases exactly as in a simulation. Its event queue
// is the core's Engine, driven by the wall clock: an event runs once the wall clock has passed
// its time, so engine.now() is wall-clock time since the start (what the policy and the records
// see). A grant sends the parameters to the worker's rank (MPI point to point); a worker computes
// the real gradient of the same model on its own data shard, with the batch its own sampler draws
// (the same sequence as in a simulation), and sends the gradient's bytes back; the server applies
// it through the pull protocol.
// Server shards (S > 1, sim/real/real_shard.cpp): the sync policy stays global, on rank 0; each
// shard rank k holds slice k of the parameters (the simulator's split of a message across the
// shards: P / S floats each, the first P % S shards one more) in its own ParamStore, with its own
// ServerOptimizer of the scenario's rule sized to the slice (WorkerCore::keep_slice; the rules,
// momentum and averaging are element-wise, so the slices hold what one server would). Rank 0 is
// shard 0 too. Every message of parameters or gradients travels as S slices between the worker's
// rank and each shard's rank: a push sends each shard its slice, a grant (or a cache copy)
// gathers every shard's slice at the worker. Rank 0 orders the other shard ranks, in the order its
// policy decides: send your slice to worker w, apply worker w's oldest slice with this
// GradientInfo, send your slice to me (an evaluation and the final parameters need the whole
// vector: rank 0 gathers it). The wire: sim/real/real_wire.hpp. Lazy SSP and ESSP (sim/real/real_cache.cpp):
// a worker computes from its own copy while it is fresh enough (the simulation's cache protocol,
// sim/worker/cache.cpp, split over the ranks); ESSP's server pushes the parameters to every worker at each
// rise of the server clock (a server-initiated send), lazy SSP's answers a blocked worker's fetch. Messages
// and their wire: sim/real/real_wire.hpp; the server: sim/real/real_server.hpp.
//
// Timing (RealOptions::emulated):
//  - emulated (the default): a worker pads each gradient to the time the compute model gives
//    (device profile, jitter, cluster.schedule slowdowns; the same per-worker jitter stream as the
//    simulation), and messages are held until the scenario's network says they arrive: a pull
//    leaves when the server's link queues (sim/worker/network.hpp: one per shard, each with its
//    slice's bytes) let it and reaches the worker latency + size / bandwidth later; a push
//    reaches the server's links at its send time + latency + size / bandwidth. Rank 0 computes
//    every shard link's queue, as a simulation does. The padding needs one clock for all ranks:
//    CLOCK_MONOTONIC of one host (ranks on several hosts would need synchronised clocks; not
//    supported).
//  - measured: no padding at all; the machine's real compute and MPI transport (with shards, each
//    slice over its own pair of ranks).
// What cannot be padded away: a real gradient slower than its emulated time (then no padding;
// timing.csv shows padding 0) and the server's own work (applying updates, evaluations), which a
// simulation counts as free.
//
// Waiting: ranks do not busy-poll. The server polls MPI_Iprobe and sleeps between polls (20 us,
// doubling to 80 us while idle, never past the next event); a worker waits for its parameters
// with MPI_Iprobe and the same sleeps; a message's bytes are sent and received with MPI_Isend /
// MPI_Irecv and MPI_Test polls with the same sleeps (real_wire.hpp: complete), never a blocking
// MPI call, which spins for the whole transfer. The server ranks take every worker's pushes in at
// once (real_wire.hpp: Inbox), not one after the other. Under oversubscription (more ranks than cores)
// busy-polling ranks would steal the cores the computing ranks need; mpirun started by `stalesim
// real` also sets OMPI_MCA_mpi_yield_when_idle=1 for what OpenMPI waits on itself (MPI_Barrier).
//
// Failures: a worker that sends nothing for RealOptions::watchdog_s while the server waits for it
// (with shards rank 0 then gathers from every shard first, so that a silent shard, which a worker
// waits for, is named instead), a shard rank silent for watchdog_s when rank 0 gathers the
// parameters, an MPI error, or
// SIGTERM/SIGINT (mpirun forwards it, and sends it when another rank died, a shard rank as a
// worker): the server writes what it measured so far (status "interrupted", no done marker; with
// shards, the parameters of the last gather and no final row of their own) and ends the whole
// job with MPI_Abort (exit 3; 130 after a signal), so that no rank is left running. A worker that
// hears nothing from the server for watchdog_s (or from a shard whose slice it waits for, 3 x
// watchdog_s: a backstop, rank 0 judges first), or a shard rank that waits watchdog_s for the
// slice of a push it was told to apply, ends the job too, and every rank gets SIGTERM when mpirun
// dies (PR_SET_PDEATHSIG).
//
// Outputs (rank 0): the files of a simulated run with wall-clock seconds in place of virtual ones
// (summary.json, metrics.csv, staleness.csv, gradients.csv, decisions.csv where the policy writes
// it), timing.csv (per worker iteration: compute, padding, wait, communication), and
// summary.json's manifest.real: the run was real and is not bit-reproducible (ranks,
// server_shards, timing, MPI library, host).

#include <cstdint>
#include <optional>
#include <string>

#include "sim/output/outputs.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// Why the real mode cannot run `s` with that timing (the JSON path and the reason), or "" when it
// can. Both timings run the same scenarios today (server shards included: a rank each).
std::string real_refusal(const Scenario& s, bool emulated = true, bool kernel_net = false);

// Ranks a real run of `s` takes: one per server shard (cluster.servers) and one per worker.
int real_ranks(const Scenario& s);

struct RealOptions {
  bool emulated = true;     // pad compute and messages to the scenario (see above); false: measured
  double watchdog_s = 60;   // the longest the server waits on a silent worker before it aborts
  bool kernel_net = false;  // --net kernel: the ranks run in a kernel-made network (tools/kernel_net.hpp)
  bool announce = true;     // rank 0 says on stderr when every rank is ready and the run starts
  std::string out;          // the run folder rank 0 writes
  bool force = false;       // replace `out` when it holds a stalesim run
  OutputGuard guard;
  // Fault injection for tests (STALESIM_REAL_INJECT_FAULT=WORKER:ITERATION:kill|stop): that
  // worker's rank sends itself SIGKILL (dies) or SIGSTOP (hangs) when it is about to push that
  // iteration; server:UPDATES:kill|stop (worker -1): the server, once it applied that many;
  // shard:K:UPDATES:kill|stop (worker -1, shard K >= 1): server shard K's rank, once it applied
  // its slice of that many.
  struct Fault {
    int32_t worker = 0;
    int64_t iteration = 0;
    bool hang = false;
    int32_t shard = 0;
  };
  std::optional<Fault> fault;
};

// What rank 0 reports of a real run.
struct RealOutcome {
  RunStatus status = RunStatus::kCompleted;
  StopReason stop_reason = StopReason::kNoEvents;
  double end_s = 0;
  int64_t server_updates = 0;
  std::string result_hash;
  std::string detail;
  // The run failed over a finished run in the output folder, which was kept: nothing was written.
  bool kept_finished = false;
  // Every rank: the job has the wrong number of ranks; rank 0 has said so on stderr (exit 2).
  bool bad_input = false;
};

// Runs this process's rank of a real run of `s` inside an MPI job of real_ranks(s) ranks (started
// by mpirun; MPI is initialized here). Rank 0 writes the run folder and returns its outcome; the
// other shards and the workers return a default outcome. A job with the wrong number of ranks:
// rank 0 prints why on stderr, and every rank returns `bad_input` once it has (mpirun ends the job
// at a rank's first non-zero exit, and could drop what rank 0 still had to print). Throws
// ScenarioError when the scenario cannot run for real (every rank throws the same), IoError when
// rank 0 cannot write. A failure during the run ends the whole job (MPI_Abort) with exit code 3, after
// rank 0 wrote the partial outputs. REQUIRES: a build with MPI (mpi_built()).
RealOutcome run_real_rank(const Scenario& s, const RealOptions& options);

// timing.csv's header line.
inline constexpr const char* kTimingCsvHeader =
    "worker,iteration,granted_s,compute_s,padding_s,wait_s,communicate_s,applied_s,pull_s,push_s,server_s\n";

}  // namespace stalesim
