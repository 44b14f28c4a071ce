#pragma once
// A non-star network as data (issue 33): nodes (hosts and switches), full-duplex links, routes
// and the placement of workers and server shards on hosts. Built from cluster.network (a topology
// kind off the star: its row in sim/scenario/topology_kinds.cpp builds the nodes and links) when
// the scenario is loaded, which rejects a bad topology, and again by the network model.
//
// Link i is two channels, one per direction: channel 2i from its `a` end to its `b` end, channel
// 2i + 1 back. Each channel has the link's bandwidth to itself (full duplex). A route is the list
// of channels from one host to another with the fewest links; among equally short routes the one
// whose links are listed first wins (breadth-first search visiting each node's links in list
// order), so routes do not depend on anything but the topology. A route never passes through a
// host: hosts are endpoints, switches forward.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/sim_time.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// A bad topology: the JSON path of the element at fault and the problem in words. The loader
// turns it into a ScenarioError naming the file (exit 2).
struct TopologyError {
  std::string path;
  std::string problem;
};

struct Topology {
  struct Node {
    std::string name;  // racks: "rack3/host7", "tor3", "spine"; graph: as given
    bool host = false;
  };
  struct Link {
    int32_t a = 0, b = 0;  // node indices
    double gbps = 0;       // each direction
    SimTime latency;       // one-way
  };
  std::vector<Node> nodes;
  std::vector<Link> links;
  std::vector<int32_t> hosts;        // node index of host h
  std::vector<int32_t> worker_host;  // host of each worker
  std::vector<int32_t> shard_host;   // host of each server shard
  // For a kind's builder: a node (a host is numbered after the hosts before it), and a link.
  int32_t add_node(std::string name, bool host);
  void add_link(int32_t a, int32_t b, double gbps, double latency_us);
  // Racks only: hosts_per_rack x host link bandwidth / uplink bandwidth (1 = none).
  std::optional<double> oversubscription;
  // Racks only (0 on a graph): the hosts of each rack, numbered rack by rack.
  int32_t hosts_per_rack = 0;
  // The rack of host `h` (hierarchical all-reduce groups workers by it). REQUIRES: racks.
  int32_t rack_of(int32_t h) const { return h / hosts_per_rack; }
  // Out-channels of each node in link order, for route(); filled by index() (build_topology
  // calls it), else route() builds them on each call.
  std::vector<std::vector<int32_t>> out;
  // Filled by index() when the links form a forest (no cycle, no two links between one pair, as
  // racks always do): each node's channel towards its tree's root (-1 at a root) and its depth.
  // Between two hosts of a forest there is one path at most, so route() walks it up to the
  // common ancestor instead of searching: the same route in time proportional to its length.
  std::vector<int32_t> parent_channel;
  std::vector<int32_t> depth;
  void index();
  std::vector<int32_t> forest_route(int32_t from, int32_t to) const;  // REQUIRES: index() found a forest

  int32_t channels() const { return static_cast<int32_t>(links.size()) * 2; }
  double channel_gbps(int32_t ch) const { return links[static_cast<size_t>(ch / 2)].gbps; }
  SimTime channel_latency(int32_t ch) const { return links[static_cast<size_t>(ch / 2)].latency; }
  // "tor0->spine": the channel's direction in node names.
  std::string channel_name(int32_t ch) const;
  // The channels from host `from` to host `to` (empty when from == to). Throws TopologyError when
  // there is no route.
  std::vector<int32_t> route(int32_t from, int32_t to) const;
  SimTime route_latency(const std::vector<int32_t>& r) const;
  // The node channel `ch` leads to.
  int32_t channel_to(int32_t ch) const;
  std::string host_name(int32_t h) const {
    return nodes[static_cast<size_t>(hosts[static_cast<size_t>(h)])].name;
  }
};

// The topology of `s` (a kind off the star: cluster.network.topology), built by its kind's row,
// placed and checked: every node name unique, every link between two known, different nodes,
// enough hosts, one worker or shard per host, every worker able to reach every shard. Throws
// TopologyError.
Topology build_topology(const Scenario& s);

// For a kind's builder, once its hosts exist: puts the server shards and the workers on them by
// cluster.network.placement. `racks` and `per_rack` (0 and 0 where hosts stand in no racks) serve
// the "spread" rule; `hosts_path` is the JSON path named when the hosts are too few.
void place_on_hosts(const Scenario& s, int32_t racks, int32_t per_rack, const char* hosts_path, Topology& t);

}  // namespace stalesim
