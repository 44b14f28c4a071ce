#pragma once
// The parameter server's traffic on a non-star topology (issue 33): a pull is one flow per server
// shard from the shard's host to the worker's host, a push one flow per shard the other way (the
// bytes split as on the star: evenly, the first shards taking the remainder), all sharing the
// links max-min fair (FlowNetwork). A part arrives after its flow's last bit plus its own route's
// latency (a pull's route from the shard, which on a graph may differ from the push's) plus
// cluster.network.message_overhead_us (per message and shard). Requests and notices that carry no data take
// the longest route latency from the worker to a shard.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/network/flows.hpp"
#include "sim/output/observer.hpp"
#include "sim/scenario/topology.hpp"

namespace stalesim {

class TopologyNetwork {
 public:
  // REQUIRES: the scenario's topology passed the loader's checks (build_topology).
  TopologyNetwork(const Scenario& s, uint32_t flow_event_kind);

  // A pull of `bytes` to worker `w`: `done` when every shard's part has arrived.
  void to_worker(Engine& e, int32_t w, int64_t bytes, FlowNetwork::Done done);
  // A push of `bytes` from worker `w`: `done` when every shard's part has arrived.
  void to_shards(Engine& e, int32_t w, int64_t bytes, FlowNetwork::Done done);
  // A message of `bytes` from worker `from`'s host to worker `to`'s host, one flow along their
  // route (all-reduce's transfers, sim/worker/allreduce.cpp): `done` when it has arrived, the
  // route's latency plus message_overhead_us after its last bit.
  void between_workers(Engine& e, int32_t from, int32_t to, int64_t bytes, FlowNetwork::Done done);
  void on_flow_event(Engine& e) { flows_.on_event(e); }
  // Reports each link direction's load to `obs` as it changes (the trace's counters); null: none.
  void observe(RunObserver* obs);
  SimTime request_latency(int32_t w) const { return request_latency_[static_cast<size_t>(w)]; }

  // links.csv: one row per channel (link direction) in link order: its name, ends (quoted per RFC
  // 4180 when a name holds a comma or quote), bandwidth,
  // the bytes of the flows that finished on it, its busy time (at least one flow) up to `end`,
  // busy share of [0, end], and the most flows it carried at once.
  std::string links_csv(SimTime end) const;

  const Topology& topology() const { return topo_; }
  const FlowNetwork& flows() const { return flows_; }

 private:
  void send(Engine& e, int32_t w, int64_t bytes, bool up, FlowNetwork::Done done);
  static std::vector<double> channel_rates(const Topology& t);

  Topology topo_;
  FlowNetwork flows_;
  int32_t shards_ = 1;
  SimTime overhead_;
  // Routes by (worker, shard, direction): offsets into route_store_, [begin, end).
  std::vector<int32_t> route_store_;
  std::vector<int32_t> route_begin_;
  std::vector<SimTime> route_latency_;  // by (worker, shard, direction), as route_begin_
  std::vector<SimTime> request_latency_;
  std::vector<FlowNetwork::Part> parts_;  // scratch
  // between_workers: the routes by (from host, to host), made when first used (a map: the flows
  // hold spans of them) and their latencies.
  std::map<std::pair<int32_t, int32_t>, std::pair<std::vector<int32_t>, SimTime>> host_routes_;
};

}  // namespace stalesim
