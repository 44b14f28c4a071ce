#pragma once
// The network's shape (cluster.network.topology, issue 33): "star" (default; every worker's own
// link to the server shards, each shard's link full duplex, one FIFO per direction: sim/worker/network.hpp),
// "racks" (hosts behind a top-of-rack switch, each switch's uplink to one spine) or "graph" (any switches,
// hosts and links, written out as data like a SimGrid platform file). Workers and server shards sit on hosts
// (PlacementSpec). Off the star, messages are flows that share every link max-min fair
// (sim/network/flows.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace stalesim {

// cluster.network.topology.
enum class TopologyKind { kStar, kRacks, kGraph };
STALESIM_ENUM_NAMES(TopologyKind, {TopologyKind::kStar, "star"}, {TopologyKind::kRacks, "racks"},
                    {TopologyKind::kGraph, "graph"})
// Off the star: the most hosts a topology may have (racks.count x hosts_per_rack, a graph's nodes).
constexpr int64_t kMaxHosts = 1'000'000;

// A graph node's kind, and where shards and workers are placed (PlacementSpec).
enum class NodeKind { kHost, kSwitch };
STALESIM_ENUM_NAMES(NodeKind, {NodeKind::kHost, "host"}, {NodeKind::kSwitch, "switch"})
enum class ShardPlacement { kFirst, kSpread, kExplicit };
STALESIM_ENUM_NAMES(ShardPlacement, {ShardPlacement::kFirst, "first"}, {ShardPlacement::kSpread, "spread"},
                    {ShardPlacement::kExplicit, "explicit"})
enum class WorkerPlacement { kFill, kExplicit };
STALESIM_ENUM_NAMES(WorkerPlacement, {WorkerPlacement::kFill, "fill"},
                    {WorkerPlacement::kExplicit, "explicit"})

// Racks of hosts: host link (cluster.network.bandwidth_gbps and latency_us; a shard's host at
// server_bandwidth_gbps) to the rack's top-of-rack switch, whose uplink goes to the one spine.
// Host h of rack r is host number r * hosts_per_rack + h.
struct RacksSpec {
  std::optional<int32_t> count;          // racks; unset = just enough for the workers and shards
  int32_t hosts_per_rack = 32;           // >= 1
  double uplink_bandwidth_gbps = 100.0;  // each top-of-rack switch's uplink to the spine
  double uplink_latency_us = 1.0;        // one-way latency of an uplink
  bool operator==(const RacksSpec&) const = default;
};

// A general topology: named nodes (hosts and switches) and full-duplex links between them.
// Hosts are numbered in the order they are listed. Routes take the fewest links (ties: the link
// listed first), and never pass through a host.
struct GraphNode {
  std::string name;
  NodeKind kind = NodeKind::kHost;
  bool operator==(const GraphNode&) const = default;
};
struct GraphLink {
  std::string from;
  std::string to;
  double bandwidth_gbps = 10.0;  // each direction
  double latency_us = 0.0;       // one-way
  bool operator==(const GraphLink&) const = default;
};
struct GraphSpec {
  std::vector<GraphNode> nodes;
  std::vector<GraphLink> links;
  bool operator==(const GraphSpec&) const = default;
};

// Which host holds each worker and each server shard (one of them per host).
struct PlacementSpec {
  // "first": shard k on host k; "spread": one per rack in turn from the racks' last hosts (graph:
  // host floor(k x hosts / shards)); "explicit": shard_hosts.
  ShardPlacement shards = ShardPlacement::kFirst;
  std::vector<int64_t> shard_hosts;  // explicit: the host of each shard
  // "fill": the hosts no shard holds, in host order; "explicit": worker_hosts.
  WorkerPlacement workers = WorkerPlacement::kFill;
  std::vector<int64_t> worker_hosts;  // explicit: the host of each worker
  bool operator==(const PlacementSpec&) const = default;
};

}  // namespace stalesim
