#pragma once
// Flow-level sharing of links (issue 33), the fluid model of SimGrid's network models and of
// Bertsekas and Gallager, "Data Networks" (1992), section 6.5.2: every message part is a flow
// along its route of channels; at every moment the flows share each channel's bandwidth max-min
// fair, computed by progressive filling (raise every unfixed flow's rate together until a channel
// is full, fix the flows through it, repeat). Rates are recomputed when a flow starts or ends,
// and each flow's finish time with them; the network keeps one engine event, at the earliest
// finish, cancelled and rescheduled when that changes. A part arrives `latency` after its last
// bit has left (the route's propagation delay); a message's completion event is scheduled when
// its last part arrives.
//
// Determinism: flows are ordered by start (a sequence number), every channel lists its flows in
// that order, every sum runs in that order; finish times are integer nanoseconds (rounded up), so
// equal inputs give equal times.
//
// Cost per start or end (PERFORMANCE.md, tools/bench/network-cost): the rates are exact global
// max-min, and one start or end on a shared channel (a shard's link) changes the rate of every
// flow through it, so the work is O(flows) at least: one pass over the flows to advance their bits
// and one for their finish times and the earliest (dense arrays, no allocation). Beyond that:
// the channels' flow lists are kept up to date at each start and end rather than rebuilt;
// progressive filling stops as soon as every flow is fixed (the remaining heap entries cannot
// change a rate); a fixed flow does not walk its route to update each channel's remaining
// bandwidth: a channel's is computed when the filling reaches it (channel_state), with the same
// subtractions in the same order. The reference, which rebuilds everything at each event, is
// tests/flows_reference.hpp; tests/test_flows.cpp checks that both give identical rates, times,
// counters and load reports on random traffic.

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "base/sim_time.hpp"
#include "sim/engine/engine.hpp"

namespace stalesim {

class FlowNetwork {
 public:
  // One part of a message: `bytes` over the channels `route` (storage owned by the caller and
  // kept alive until the part arrives), arriving `latency` after its last bit left.
  struct Part {
    std::span<const int32_t> route;
    int64_t bytes = 0;
    SimTime latency;
  };
  // The event scheduled when a message has arrived whole.
  struct Done {
    uint32_t kind = 0;
    uint32_t target = 0;
    uint64_t payload = 0;
  };
  // Per channel, for links.csv and the trace.
  struct ChannelStats {
    int64_t bytes = 0;     // bytes of the flows that finished on it
    int64_t busy_ns = 0;   // time with at least one flow on it
    int32_t peak = 0;      // most flows on it at once
    int32_t active = 0;    // flows on it now
    int64_t since_ns = 0;  // when `active` last rose from 0
  };

  // `channel_gbps`: each channel's bandwidth (Gbit/s = bit/ns), > 0. `event_kind`: the engine
  // event kind the network's own finish events use; the owner routes them to on_event().
  FlowNetwork(std::vector<double> channel_gbps, uint32_t event_kind);

  // Starts a message of `parts` now. `done` runs when every part has arrived (at once, after the
  // latency, when every part is empty).
  void send(Engine& engine, std::span<const Part> parts, Done done);
  // Runs the network's finish event: ends the flows due now, recomputes the rates.
  void on_event(Engine& engine);

  // Called, when set, for each channel whose flow count or used bandwidth changed, after the
  // rates are recomputed: (now, channel, used Gbit/s, flows). For the trace's link counters.
  using LoadHook = std::function<void(SimTime, int32_t, double, int32_t)>;
  void on_load(LoadHook hook) {
    hook_ = std::move(hook);
    last_load_.assign(capacity_.size(), 0.0);
    last_flows_.assign(capacity_.size(), 0);
  }

  const std::vector<ChannelStats>& stats() const { return stats_; }
  size_t active_flows() const { return live_; }
  // Current rate (Gbit/s) of the flows in start order, for tests.
  std::vector<double> rates() const;

 private:
  // Cold per-flow data, by slot (slots are reused; the hot fields are the arrays below).
  struct Flow {
    std::span<const int32_t> route;
    int64_t bytes = 0;
    SimTime latency;
    int32_t message = 0;
    uint64_t seq = 0;  // start order, from 1; 0: a free slot
  };
  struct Message {
    int32_t parts_left = 0;
    SimTime arrive;
    Done done;
  };
  void advance(SimTime now);
  // Rates, finish times and the engine event; REQUIRES: a flow is active.
  void recompute(Engine& engine, SimTime now);
  // A channel's remaining bandwidth and unfixed flows during a recompute.
  void channel_state(size_t c, double& rem, int32_t& unfixed);
  void reschedule(Engine& engine, int64_t next);
  void part_arrived(Engine& engine, int32_t message, SimTime at);
  void report_loads(SimTime now);
  void channel_up(int32_t ch, int32_t slot, int64_t now);
  void channel_down(int32_t ch, int32_t slot, int64_t now);

  std::vector<double> capacity_;
  uint32_t kind_;
  // Flows by slot, [0, slots): left_/rate_/finish_ are read at every event. A free slot has
  // left 0, rate 0 and finish kNever, so the passes need no test.
  std::vector<Flow> flows_;
  std::vector<double> left_;  // bits not yet sent, as of last_
  std::vector<double> rate_;  // bit/ns
  std::vector<int64_t> finish_;
  std::vector<int32_t> free_slots_;
  size_t live_ = 0;
  uint64_t next_seq_ = 1;
  std::vector<Message> messages_;
  std::vector<int32_t> free_messages_;
  std::vector<ChannelStats> stats_;
  SimTime last_;
  EventId pending_{};
  int64_t pending_at_ = -1;
  // By channel: its flows' slots in start order; `used_` lists the channels with flows (any
  // order: the heap orders them), used_at_ each one's index in it (-1: none).
  std::vector<std::vector<int32_t>> on_channel_;
  std::vector<int32_t> used_;
  std::vector<int32_t> used_at_;
  // Progressive filling scratch: a fill fixes the unfixed flows of one channel at one rate.
  std::vector<uint64_t> fixed_;                   // by slot: == fill_ when fixed in the current recompute
  std::vector<int32_t> fixed_at_;                 // by slot: the fill that fixed it
  uint64_t fill_ = 0;                             // recomputes so far
  std::vector<double> shares_;                    // the rate of each fill so far
  std::vector<int32_t> marks_;                    // scratch of channel_state: fills of its fixed flows
  std::vector<int32_t> counts_;                   // scratch of channel_state: fixed flows by fill
  std::vector<std::pair<double, int32_t>> heap_;  // (share, channel)
  std::vector<int32_t> ended_;                    // scratch of on_event: slots
  LoadHook hook_;
  std::vector<double> last_load_;  // by channel, as last reported (hook set only)
  std::vector<int32_t> last_flows_;
  std::vector<int32_t> touched_;  // channels whose load may have changed since the last report
  std::vector<int32_t> still_;    // scratch of report_loads
};

}  // namespace stalesim
