#pragma once
// The network model (DESIGN.md section 3): each worker's link (bandwidth, latency with optional
// lognormal jitter) and the server's links, full duplex as hardware is: each shard's link has two
// directions, each its own FIFO (pushes queue only behind pushes, pulls only behind pulls).
// Cut-through, as a switch forwards and as the flow network (sim/network/flows.hpp) carries a
// message: its bytes cross the sender's link and the receiver's at once, so a message is through
// when the slower of the two has carried it, not after one and then the other.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "base/sim_time.hpp"
#include "sim/engine/engine.hpp"
#include "sim/network/topology_network.hpp"
#include "sim/output/observer.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// Transfer time of `bytes` over a link of `gbps` gigabits per second (1 Gbit/s = 1 bit/ns).
SimTime transfer_time(int64_t bytes, double gbps);

class Network {
 public:
  // Resolves each worker group's link from the group and the cluster defaults.
  explicit Network(const Scenario& s);
  // Time for `bytes` to leave or enter a worker of `group` on its own link.
  SimTime worker_link(int32_t group, int64_t bytes) const {
    return transfer_time(bytes, groups_[static_cast<size_t>(group)].bandwidth_gbps);
  }
  SimTime server_link(int64_t bytes) const { return transfer_time(bytes, server_gbps_); }
  // One-way latency of worker `id`'s link for one message (lognormal jitter of mean 1 when
  // configured; one draw from the worker's network stream).
  SimTime latency(int32_t id, int32_t group);
  // A pull of `bytes` for worker `worker` of `group`, leaving at `now`: each shard's part (the
  // bytes split evenly, the first shards taking the remainder) queues on that shard's link out
  // of the server in order; the worker's link carries the message from the first part's start.
  // Returns when its last byte has left the links, the latency not included (the caller draws
  // it: the byte reaches the worker that much later).
  SimTime pull(SimTime now, int64_t bytes, int32_t worker, int32_t group, RunObserver* obs) {
    const ServerPass p = server_transfer(now, bytes, worker, WireKind::kPull, obs);
    return max(p.done, p.first + worker_link(group, bytes));
  }
  // A push of `bytes` from worker `worker` of `group` whose first byte reaches the server at
  // `first` (a latency after it was sent): its parts queue on the shards' links into the server
  // from `first`; the last byte arrives one worker-link time after the first. Returns when the
  // server holds all of it.
  SimTime push(SimTime first, int64_t bytes, int32_t worker, int32_t group, RunObserver* obs) {
    return max(server_transfer(first, bytes, worker, WireKind::kPush, obs).done,
               first + worker_link(group, bytes));
  }
  // When the shards' links start on a message (the earliest part) and when the last part is
  // through. Observers see shard 0's link (the trace's link tracks, one per direction), one span
  // per message.
  struct ServerPass {
    SimTime first;
    SimTime done;
  };
  ServerPass server_transfer(SimTime arrive, int64_t bytes, int32_t worker, WireKind kind, RunObserver* obs);

  // The messages of the run, whichever network carries them: on the star the links above, off it
  // (cluster.network.topology racks or graph) the flow-level network (TopologyNetwork), which the
  // callers never ask for. `done` is the engine event to schedule when the message has arrived.
  //
  // A pull of `bytes` to worker `worker` of `group`, leaving the server now. With `deliver` it
  // schedules `done` at its arrival; without (the real mode delivers itself) it only occupies
  // the links. Returns, on the star, when its last byte has left the links (the latency not
  // included); off the star nothing (the flows know only as they go).
  std::optional<SimTime> send_pull(Engine& e, int32_t worker, int32_t group, int64_t bytes,
                                   FlowNetwork::Done done, RunObserver* obs, bool deliver);
  // A push of `bytes` from worker `worker`, sent now: `at_server` is scheduled when its first byte
  // reaches the server (the star: a latency later) or, off the star, when all of it has.
  void send_push(Engine& e, int32_t worker, int32_t group, int64_t bytes, FlowNetwork::Done at_server);
  // When a push whose `at_server` event runs `now` is in the server whole: on the star its parts
  // queue on the shards' links from now (push); off the star it is (now).
  SimTime push_through(SimTime now, int64_t bytes, int32_t worker, int32_t group, RunObserver* obs) {
    return flows_ ? now : push(now, bytes, worker, group, obs);
  }
  // A message of `bytes` between two workers (all-reduce): `done` when it has arrived. On the
  // star the slower of the two workers' links plus the sender's latency; off the star one flow
  // along their route.
  void send_between(Engine& e, int32_t from, int32_t from_group, int32_t to, int32_t to_group, int64_t bytes,
                    FlowNetwork::Done done);
  // The flow network's own event (kFlowDone; never scheduled on the star).
  void on_flow_event(Engine& e) { flows_->on_flow_event(e); }
  // Reports each link direction's load to `obs` as it changes (off the star; on the star the
  // links report each message through the observer given with it).
  void observe(RunObserver* obs) {
    if (flows_) flows_->observe(obs);
  }
  // links.csv up to `end` (off the star; empty on the star, which writes none).
  std::string links_csv(SimTime end) const { return flows_ ? flows_->links_csv(end) : std::string(); }
  // The topology off the star. REQUIRES: not the star (hierarchical all-reduce, which the loader
  // allows on racks only).
  const Topology& topology() const { return flows_->topology(); }

 private:
  struct GroupLink {
    SimTime latency;
    double bandwidth_gbps = 0;
    double latency_sigma = 0;
  };
  std::vector<GroupLink> groups_;
  std::vector<Rng> rngs_;  // per worker link, only when some latency jitters
  // When each server shard's link is next idle, per direction: [0] into the server (pushes),
  // [1] out of it (pulls).
  std::vector<SimTime> shard_free_[2];
  SimTime message_overhead_;  // per message and shard on the server link
  double server_gbps_ = 0;
  std::unique_ptr<TopologyNetwork> flows_;
};

}  // namespace stalesim
