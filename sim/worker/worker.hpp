#pragma once
// The state of one simulated worker (DESIGN.md section 3) and the events that move it: what the
// worker core (sim/worker/core.hpp) and every worker protocol (sim/worker/protocol.hpp) share.

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "base/sim_time.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/engine/lazy_deque.hpp"
#include "sim/gradient_pool.hpp"
#include "sim/output/run_result.hpp"
#include "sim/param_store.hpp"

namespace stalesim {

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
  kFlowDone = 13,           // off the star: the network's earliest flow finishes (sim/network/flows.hpp)
  kCollective = 14,         // all-reduce: a transfer arrived (payload: its slot; sim/worker/allreduce.cpp)
};

enum class WorkerState : uint8_t { kCommunicating, kComputing, kWaiting };

// Cache modes and VAP: one of the worker's own pushes, kept until a snapshot that includes it
// arrives (cache) or every other worker has received it (VAP).
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

struct alignas(64) Worker {
  // What the pull modes touch at every event, packed together (at 100,000 workers the workers do
  // not fit in the caches; issue 21: a handful of cache lines per event, not a dozen). The rest
  // of a worker's state is its protocol's (each keeps its own, by worker id: sim/worker/cache.cpp,
  // vap_protocol.cpp, pull.hpp for B-FASGD) or the core's (deferred gradients). Three cache lines,
  // aligned (sizeof is 192 bytes).
  int32_t id = 0;
  int32_t group = 0;  // index into cluster.workers
  // Crash handling: events for this worker carry its generation; a crash bumps it, so whatever the
  // worker had in flight (a compute, a push on the wire, a pull) is dropped when it arrives.
  uint32_t gen = 0;
  bool down = false;
  WorkerState state = WorkerState::kCommunicating;
  bool skip_push = false;   // B-FASGD: this push is skipped (a notice goes instead)
  bool skip_fetch = false;  // B-FASGD: this fetch is skipped (the worker keeps its copy; read by grant)
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
  // Sizes of the pushes on their way to the server, oldest first (the pull modes have one at most).
  InlineHeadQueue<int64_t, INT64_MIN> push_bytes;
  // Its time split and pushes applied (WorkerStats without the id and profile, which are cold).
  int64_t iterations = 0;
  int64_t compute_ns = 0;
  int64_t wait_ns = 0;
  int64_t communicate_ns = 0;
};
static_assert(sizeof(Worker) <= 192, "Worker's hot state grew past three cache lines");

}  // namespace stalesim
