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
};

enum class WorkerState : uint8_t { kCommunicating, kComputing, kWaiting };

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

struct alignas(64) Worker {
  // What the pull modes touch at every event, packed together (at 100,000 workers the workers do
  // not fit in the caches; issue 21: a handful of cache lines per event, not a dozen). The rest
  // of a worker's state is in WorkerCold. Three cache lines, aligned (sizeof is 192 bytes).
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
  // Sizes of the pushes on their way to the server, oldest first (the pull modes have one at most).
  InlineHeadQueue<int64_t, INT64_MIN> push_bytes;
  // Its time split and pushes applied (WorkerStats without the id and profile, which are cold).
  int64_t iterations = 0;
  int64_t compute_ns = 0;
  int64_t wait_ns = 0;
  int64_t communicate_ns = 0;
};
static_assert(sizeof(Worker) <= 192, "Worker's hot state grew past three cache lines");

// The rest of a worker's state: what the cache modes, VAP, B-FASGD and deferred gradients use, and
// its profile. Kept apart from Worker (WorkerCore::cold, by worker id) so that the fields the pull
// modes touch at every event are packed together (issue 21: per-event cost at 100,000 workers).
struct WorkerCold {
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

}  // namespace stalesim
