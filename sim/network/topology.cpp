// A non-star network as data (sim/network/topology.hpp): racks and graph topologies, placement,
// routes, and the checks that reject a bad topology.

#include "sim/network/topology.hpp"
#include "sim/text.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace stalesim {

namespace {

constexpr const char* kPlacement = "/cluster/network/placement";

[[noreturn]] void bad(std::string path, std::string problem) {
  throw TopologyError{std::move(path), std::move(problem)};
}

// Puts the shards and workers on hosts `0..hosts-1`; `rack_of_slot` maps (rack, slot from the
// rack's end) to a host for the "spread" rule, or is empty off racks.
void place(const Scenario& s, int32_t hosts, int32_t racks, int32_t per_rack, Topology& t) {
  const auto& p = s.cluster.network.placement;
  const int32_t shards = s.cluster.servers;
  const int32_t workers = s.cluster.worker_count();
  std::vector<std::string> holder(static_cast<size_t>(hosts));
  auto take = [&](int64_t h, std::string who, const std::string& path) {
    if (h < 0 || h >= hosts)
      bad(path,
          fmt::format("{} is placed on host {}, and the topology's hosts are 0 to {}", who, h, hosts - 1));
    auto& slot = holder[static_cast<size_t>(h)];
    if (!slot.empty())
      bad(path, fmt::format("host {} ('{}') is given to {} and to {}: one worker or shard per host", h,
                            escaped(t.host_name(static_cast<int32_t>(h))), slot, who));
    slot = std::move(who);
    return static_cast<int32_t>(h);
  };
  if (shards + workers > hosts)
    bad(s.cluster.network.topology == TopologyKind::kRacks ? "/cluster/network/racks/count"
                                                           : "/cluster/network/graph/nodes",
        fmt::format("{} workers and {} server shards need {} hosts, the topology has {}", workers, shards,
                    shards + workers, hosts));
  if (p.shards == ShardPlacement::kExplicit && p.shard_hosts.size() != static_cast<size_t>(shards))
    bad(std::string(kPlacement) + "/shard_hosts",
        fmt::format("expected one host per server shard ({}), got {}", shards, p.shard_hosts.size()));
  for (int32_t k = 0; k < shards; ++k) {
    int64_t h = k;
    if (p.shards == ShardPlacement::kExplicit) {
      h = p.shard_hosts[static_cast<size_t>(k)];
    } else if (p.shards == ShardPlacement::kSpread) {
      if (racks > 0) {
        const int32_t from_end = k / racks;
        if (from_end >= per_rack)
          bad(std::string(kPlacement) + "/shards", "more shards than hosts to spread them over");
        h = static_cast<int64_t>(k % racks) * per_rack + (per_rack - 1 - from_end);
      } else {
        h = static_cast<int64_t>(k) * hosts / shards;
      }
    }
    const std::string path = p.shards == ShardPlacement::kExplicit
                                 ? fmt::format("{}/shard_hosts/{}", kPlacement, k)
                                 : std::string(kPlacement) + "/shards";
    t.shard_host.push_back(take(h, fmt::format("shard {}", k), path));
  }
  if (p.workers == WorkerPlacement::kExplicit) {
    if (p.worker_hosts.size() != static_cast<size_t>(workers))
      bad(std::string(kPlacement) + "/worker_hosts",
          fmt::format("expected one host per worker ({}), got {}", workers, p.worker_hosts.size()));
    for (int32_t i = 0; i < workers; ++i)
      t.worker_host.push_back(take(p.worker_hosts[static_cast<size_t>(i)], fmt::format("worker {}", i),
                                   fmt::format("{}/worker_hosts/{}", kPlacement, i)));
    return;
  }
  for (int32_t h = 0; h < hosts && static_cast<int32_t>(t.worker_host.size()) < workers; ++h)
    if (holder[static_cast<size_t>(h)].empty())
      t.worker_host.push_back(take(h, fmt::format("worker {}", t.worker_host.size()), kPlacement));
}

void add_link(Topology& t, int32_t a, int32_t b, double gbps, double latency_us) {
  t.links.push_back({a, b, gbps, SimTime::from_us(latency_us)});
}

Topology build_racks(const Scenario& s) {
  const auto& n = s.cluster.network;
  const int32_t racks = rack_count(s);
  const int32_t per = n.racks.hosts_per_rack;
  Topology t;
  for (int32_t r = 0; r < racks; ++r) {
    t.nodes.push_back({fmt::format("tor{}", r), false});
    for (int32_t h = 0; h < per; ++h) {
      t.hosts.push_back(static_cast<int32_t>(t.nodes.size()));
      t.nodes.push_back({fmt::format("rack{}/host{}", r, h), true});
    }
  }
  const auto spine = static_cast<int32_t>(t.nodes.size());
  t.nodes.push_back({"spine", false});
  place(s, racks * per, racks, per, t);
  std::vector<bool> shard(t.hosts.size(), false);
  for (int32_t h : t.shard_host) shard[static_cast<size_t>(h)] = true;
  for (int32_t r = 0; r < racks; ++r) {
    const int32_t tor = r * (per + 1);
    for (int32_t h = 0; h < per; ++h) {
      const int32_t host = r * per + h;
      add_link(t, t.hosts[static_cast<size_t>(host)], tor,
               shard[static_cast<size_t>(host)] ? n.server_bandwidth_gbps : n.bandwidth_gbps, n.latency_us);
    }
    add_link(t, tor, spine, n.racks.uplink_bandwidth_gbps, n.racks.uplink_latency_us);
  }
  t.oversubscription = per * n.bandwidth_gbps / n.racks.uplink_bandwidth_gbps;
  return t;
}

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
    if (node.kind == NodeKind::kHost) t.hosts.push_back(static_cast<int32_t>(i));
    t.nodes.push_back({node.name, node.kind == NodeKind::kHost});
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
    add_link(t, a, b, l.bandwidth_gbps, l.latency_us);
  }
  place(s, static_cast<int32_t>(t.hosts.size()), 0, 0, t);
  return t;
}

}  // namespace

int32_t rack_count(const Scenario& s) {
  const auto& r = s.cluster.network.racks;
  if (r.count) return *r.count;
  const int64_t need = int64_t{s.cluster.worker_count()} + s.cluster.servers;
  return static_cast<int32_t>((need + r.hosts_per_rack - 1) / r.hosts_per_rack);
}

std::string Topology::channel_name(int32_t ch) const {
  const Link& l = links[static_cast<size_t>(ch / 2)];
  const int32_t from = ch % 2 == 0 ? l.a : l.b;
  const int32_t to = ch % 2 == 0 ? l.b : l.a;
  return nodes[static_cast<size_t>(from)].name + "->" + nodes[static_cast<size_t>(to)].name;
}

namespace {
std::vector<std::vector<int32_t>> out_channels(size_t nodes, const std::vector<Topology::Link>& links) {
  std::vector<std::vector<int32_t>> out(nodes);
  for (size_t i = 0; i < links.size(); ++i) {
    out[static_cast<size_t>(links[i].a)].push_back(static_cast<int32_t>(2 * i));
    out[static_cast<size_t>(links[i].b)].push_back(static_cast<int32_t>(2 * i + 1));
  }
  return out;
}
}  // namespace

std::vector<int32_t> Topology::route(int32_t from, int32_t to) const {
  const int32_t src = hosts[static_cast<size_t>(from)];
  const int32_t dst = hosts[static_cast<size_t>(to)];
  if (src == dst) return {};
  std::vector<std::vector<int32_t>> local;  // not indexed: built for this call
  if (out.size() != nodes.size()) local = out_channels(nodes.size(), links);
  const auto& adjacent = local.empty() ? out : local;
  std::vector<int32_t> via(nodes.size(), -1);  // channel that reached the node
  std::vector<int32_t> queue{src};
  via[static_cast<size_t>(src)] = -2;
  for (size_t q = 0; q < queue.size() && via[static_cast<size_t>(dst)] == -1; ++q) {
    const int32_t n = queue[q];
    if (n != src && nodes[static_cast<size_t>(n)].host) continue;  // hosts do not forward
    for (int32_t ch : adjacent[static_cast<size_t>(n)]) {
      const Link& l = links[static_cast<size_t>(ch / 2)];
      const int32_t next = ch % 2 == 0 ? l.b : l.a;
      if (via[static_cast<size_t>(next)] != -1) continue;
      via[static_cast<size_t>(next)] = ch;
      queue.push_back(next);
    }
  }
  if (via[static_cast<size_t>(dst)] == -1)
    throw TopologyError{
        "", fmt::format("no route of links from host '{}' to host '{}'", escaped(host_name(from)),
                        escaped(host_name(to)))};
  std::vector<int32_t> r;
  for (int32_t n = dst; n != src;) {
    const int32_t ch = via[static_cast<size_t>(n)];
    r.push_back(ch);
    const Link& l = links[static_cast<size_t>(ch / 2)];
    n = ch % 2 == 0 ? l.a : l.b;
  }
  std::reverse(r.begin(), r.end());
  return r;
}

void Topology::index() { out = out_channels(nodes.size(), links); }

SimTime Topology::route_latency(const std::vector<int32_t>& r) const {
  SimTime total = SimTime::zero();
  for (int32_t ch : r) total = total + channel_latency(ch);
  return total;
}

Topology build_topology(const Scenario& s) {
  Topology t = s.cluster.network.topology == TopologyKind::kRacks ? build_racks(s) : build_graph(s);
  t.index();
  // Every worker must reach every shard (and back: links are full duplex, so one way suffices).
  for (size_t k = 0; k < t.shard_host.size(); ++k)
    for (size_t i = 0; i < t.worker_host.size(); ++i) {
      try {
        (void)t.route(t.worker_host[i], t.shard_host[k]);
      } catch (const TopologyError& e) {
        const int32_t node = t.hosts[static_cast<size_t>(t.worker_host[i])];
        bad(s.cluster.network.topology == TopologyKind::kGraph
                ? fmt::format("/cluster/network/graph/nodes/{}", node)
                : std::string(kPlacement),
            fmt::format("worker {} cannot reach shard {}: {}", i, k, e.problem));
      }
    }
  return t;
}

}  // namespace stalesim
