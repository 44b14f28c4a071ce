// The topology kinds, one row each (sim/scenario/topology_kinds.hpp): the star, racks and graph.

#include "sim/scenario/topology_kinds.hpp"

#include <array>
#include <map>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "sim/text.hpp"

namespace stalesim {

namespace {

[[noreturn]] void bad(std::string path, std::string problem) {
  throw TopologyError{std::move(path), std::move(problem)};
}

// A topology's share of memory (issue 46), from the peak RSS of time-only runs (minus the process
// and the workers' bookkeeping): racks of 32, 96,000 hosts, 588 bytes per link; graphs of 5,000
// and 20,000 hosts behind switches, 1,096 and 1,069 bytes per node and per link.
constexpr double kRacksLinkBytes = 600.0;
constexpr double kGraphElementBytes = 1100.0;

// Racks of hosts (RacksSpec): host h of rack r is host r x hosts_per_rack + h, on the rack's
// top-of-rack switch "torR" (a shard's host link at server_bandwidth_gbps, a worker's at
// bandwidth_gbps), each switch's uplink to the one "spine".
Topology build_racks(const Scenario& s) {
  const auto& n = s.cluster.network;
  const int32_t racks = rack_count(s);
  const int32_t per = n.racks.hosts_per_rack;
  if (const int64_t hosts = int64_t{racks} * per; hosts > kMaxHosts)
    bad(n.racks.count ? "/cluster/network/racks/count" : "/cluster/network/racks/hosts_per_rack",
        fmt::format("{} racks{} x hosts_per_rack {} is {} hosts; at most {}", racks,
                    n.racks.count ? "" : " (just enough for the workers and shards)", per, hosts, kMaxHosts));
  Topology t;
  for (int32_t r = 0; r < racks; ++r) {
    t.add_node(fmt::format("tor{}", r), false);
    for (int32_t h = 0; h < per; ++h) t.add_node(fmt::format("rack{}/host{}", r, h), true);
  }
  const int32_t spine = t.add_node("spine", false);
  place_on_hosts(s, racks, per, "/cluster/network/racks/count", t);
  std::vector<bool> shard(t.hosts.size(), false);
  for (int32_t h : t.shard_host) shard[static_cast<size_t>(h)] = true;
  for (int32_t r = 0; r < racks; ++r) {
    const int32_t tor = r * (per + 1);
    for (int32_t h = 0; h < per; ++h) {
      const int32_t host = r * per + h;
      t.add_link(t.hosts[static_cast<size_t>(host)], tor,
                 shard[static_cast<size_t>(host)] ? n.server_bandwidth_gbps : n.bandwidth_gbps, n.latency_us);
    }
    t.add_link(tor, spine, n.racks.uplink_bandwidth_gbps, n.racks.uplink_latency_us);
  }
  t.oversubscription = per * n.bandwidth_gbps / n.racks.uplink_bandwidth_gbps;
  t.hosts_per_rack = per;
  return t;
}

double racks_bytes(const Scenario& s) {
  const double racks = rack_count(s);
  return (racks * s.cluster.network.racks.hosts_per_rack + racks) * kRacksLinkBytes;
}

// Any switches, hosts and links (GraphSpec), as listed.
Topology build_graph(const Scenario& s) {
  const auto& g = s.cluster.network.graph;
  const std::string base = "/cluster/network/graph";
  Topology t;
  std::map<std::string, int32_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& node = g.nodes[i];
    if (!index.emplace(node.name, static_cast<int32_t>(i)).second)
      bad(fmt::format("{}/nodes/{}/name", base, i),
          fmt::format("'{}' names two nodes (first nodes/{})", escaped(node.name), index[node.name]));
    t.add_node(node.name, node.kind == NodeKind::kHost);
  }
  if (t.hosts.empty()) bad(base + "/nodes", "no node of kind \"host\": workers and shards need hosts");
  for (size_t i = 0; i < g.links.size(); ++i) {
    const auto& l = g.links[i];
    auto end = [&](const std::string& name, const char* key) {
      const auto it = index.find(name);
      if (it == index.end())
        bad(fmt::format("{}/links/{}/{}", base, i, key),
            fmt::format("'{}' is not a node of graph.nodes", escaped(name)));
      return it->second;
    };
    const int32_t a = end(l.from, "from");
    const int32_t b = end(l.to, "to");
    if (a == b)
      bad(fmt::format("{}/links/{}", base, i),
          fmt::format("a loop from '{}' back to itself: no route can use it; remove it", escaped(l.from)));
    t.add_link(a, b, l.bandwidth_gbps, l.latency_us);
  }
  place_on_hosts(s, 0, 0, "/cluster/network/graph/nodes", t);
  return t;
}

double graph_bytes(const Scenario& s) {
  const auto& g = s.cluster.network.graph;
  return static_cast<double>(g.nodes.size() + g.links.size()) * kGraphElementBytes;
}

constexpr std::array kRows{
    TopologyKindRow{TopologyKind::kStar, nullptr, nullptr, nullptr, false, RealNetwork::kEmulatedOrKernel},
    TopologyKindRow{TopologyKind::kRacks, build_racks, racks_bytes, nullptr, true, RealNetwork::kKernel},
    TopologyKindRow{TopologyKind::kGraph, build_graph, graph_bytes, "/cluster/network/graph/nodes", false,
                    RealNetwork::kNone},
};

}  // namespace

const TopologyKindRow& topology_kind(TopologyKind k) {
  for (const auto& row : kRows)
    if (row.kind == k) return row;
  throw std::logic_error(
      fmt::format("topology kind \"{}\" has no row in sim/scenario/topology_kinds.cpp", enum_name(k)));
}

int32_t rack_count(const Scenario& s) {
  const auto& r = s.cluster.network.racks;
  if (r.count) return *r.count;
  const int64_t need = int64_t{s.cluster.worker_count()} + s.cluster.servers;
  return static_cast<int32_t>((need + r.hosts_per_rack - 1) / r.hosts_per_rack);
}

}  // namespace stalesim
