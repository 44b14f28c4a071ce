#pragma once
// The real mode's server, rank 0 (sim/real/real_run.hpp): the simulator's worker core and pull
// protocol driven by the wall clock, and the cache modes' server side (real_cache.cpp); with
// server shards it holds shard 0's slice and orders the other shard ranks (real_shard.cpp).
// Internal to sim/real/; built only with MPI.

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/real/real_run.hpp"
#include "sim/real/real_wire.hpp"
#include "sim/run_driver.hpp"
#include "sim/worker/core.hpp"
#include "sim/worker/pull.hpp"

namespace stalesim::real {

class RealServer final : public PullProtocol, public DirectDelivery {
 public:
  // `c` keeps shard 0's slice of the parameters when l.shards > 1 (WorkerCore::keep_slice).
  RealServer(WorkerCore& c, const RealOptions& o, const Layout& l, Clock::time_point epoch);

  // Pull modes: a grant (WorkerCore::grant) sends the parameters to the worker's rank
  // (DirectDelivery: `sent`, when they left the server's link, pads the emulated delivery).
  void params_granted(Worker& w, SimTime sent) override;
  // The server computes nothing: pushes come from the ranks (receive_pushes).
  void push_sent(Worker&) override { throw std::logic_error("the real run's server sent a push"); }

  // Runs the server until the run ends; writes the run folder. A failure ends the job
  // (MPI_Abort) after the partial outputs are written.
  RealOutcome run();

 protected:
  // Pull modes: the worker's gradient, as received, applied through the pull protocol.
  std::optional<double> apply_gradient(Worker& w, GradientInfo& info) override;

 private:
  struct Slot {
    SendQueue out;  // sends not known to be complete, oldest first
    std::vector<float> grad;
    PushHeader push;
    int64_t granted_at = -1, applied_at = -1, heard_at = 0;
    int64_t push_received_at = 0;  // pull modes: when the server had the whole push (timing.csv)
    bool busy = false;             // pull modes: computing, or its push not yet received
    bool stopped = false;          // told the run is over (cache modes: and its bye received)
    int64_t compute_ns = 0, wait_ns = 0, comm_ns = 0;
    // Cache modes: the gradients received, not yet applied, oldest first; pushes received; the
    // clock of the newest copy sent; lazy SSP: a fetch is parked until the server clock allows it.
    std::deque<std::pair<PushHeader, std::vector<float>>> pending;
    int64_t received = 0;
    int64_t copy_clock = -1;
    bool parked = false;
  };

  void send(int32_t w, std::vector<char> message);
  // Parameters to w: `h` with `values` (with shards: slice 0), and with shards the order to every
  // other shard to send w its slice.
  void send_params(int32_t w, const ParamsHeader& h, std::span<const float> values);
  // Server shards: `o` to every shard rank (1..S-1), in the order of the policy's decisions.
  void order(const ShardOrder& o);
  // Shard k's next reply to a kGather order (watchdog: a silent shard throws).
  void await_gather(int32_t k, std::vector<char>& buf);
  // The parameters now, whole: the store's, or with shards every shard's slice (a gather).
  std::span<const float> current_params();
  // Server shards, at the end: the orders still in flight, then kStop to every shard rank.
  void stop_shards();
  // Applying w's push with `info`: the shard ranks apply their slices of it (in this order).
  void order_apply(int32_t w, const GradientInfo& info);
  void send_stop(int32_t w);
  // Receives every push that is there; returns whether there was one.
  bool receive_pushes(bool stopping);
  // Schedules a received push's arrival (emulated: after the worker's link and the latency).
  void schedule_push(Worker& w, const Slot& s, int64_t bytes, int64_t now);
  // One timing.csv row. `split` (pull modes): the communication's parts, in ns: the parameters'
  // way to the worker (grant to arrival), the push's (sent to whole at the server) and the
  // server's own time (whole to applied); the cache modes leave them empty.
  struct CommSplit {
    int64_t pull = 0, push = 0, server = 0;
  };
  void record_timing(int32_t w, const PushHeader& p, int64_t wait, int64_t comm, int64_t now,
                     std::optional<CommSplit> split);
  // The watchdog: a worker the server expects a message from, silent for longer than watchdog_s.
  std::optional<int32_t> silent_worker(int64_t now) const;
  void fail(StopReason reason, const std::string& detail, int code = kExitFailed);
  void finish(SimTime end);
  RealOutcome write(int ranks);

  // ---- Cache modes (real_cache.cpp): lazy SSP and ESSP ----
  // The server sends w the current parameters, stamped with the server clock (CacheProtocol's
  // send_snapshot, sim/worker/cache.cpp).
  void send_copy(Worker& w);
  // w's oldest received gradient reaches the server: apply it, then ESSP's eager push to every
  // worker when the server clock rose, or lazy SSP's parked fetches.
  void on_cache_push_applied(Worker& w);
  // Whether the server expects a push from w: it has a copy fresh enough to compute from.
  bool cache_expects_push(int32_t w) const;

  const RealOptions& opt_;
  Layout layout_;
  Clock::time_point epoch_;
  // Server shards: the orders not known to be sent, by shard rank; the parameters gathered last
  // and whether they are those of the current version (no apply ordered since).
  std::vector<SendQueue> order_out_;
  std::vector<float> gathered_;
  bool gathered_now_ = false;
  bool cache_ = false;  // lazy SSP or ESSP: workers compute from their own copies
  bool eager_ = false;  // ESSP
  int64_t bound_ = 0;   // the cache modes' staleness bound
  std::vector<Slot> slots_;
  Inbox pushes_in_{kTagPush};  // every worker's pushes, received at once
  std::string timing_ = kTimingCsvHeader;
  // The observers, the evaluations and the end of the run (sim/run_driver.hpp).
  RunDriver driver_;
  bool failed_ = false;
  int exit_code_ = kExitFailed;
};

// The worker ranks' loops: pull modes (real_run.cpp) and cache modes (real_cache.cpp).
void run_pull_worker(WorkerCore& c, int32_t id, const RealOptions& opt, const Layout& l,
                     Clock::time_point epoch);
void run_cache_worker(WorkerCore& c, int32_t id, const RealOptions& opt, const Layout& l,
                      Clock::time_point epoch);
// A server shard rank 1..S-1 (real_shard.cpp): `c` keeps that shard's slice; runs rank 0's orders
// until its kStop.
void run_shard(WorkerCore& c, int32_t shard, const RealOptions& opt, const Layout& l);

}  // namespace stalesim::real
