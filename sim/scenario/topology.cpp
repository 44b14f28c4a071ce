// A non-star network as data (sim/scenario/topology.hpp): placement, routes, and the checks that
// reject a bad topology. Each kind's builder is its row in sim/scenario/topology_kinds.cpp.

#include "sim/scenario/topology.hpp"
#include "sim/scenario/topology_kinds.hpp"
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

}  // namespace

void place_on_hosts(const Scenario& s, int32_t racks, int32_t per_rack, const char* hosts_path, Topology& t) {
  const auto hosts = static_cast<int32_t>(t.hosts.size());
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
    bad(hosts_path, fmt::format("{} workers and {} server shards need {} hosts, the topology has {}", workers,
                                shards, shards + workers, hosts));
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

int32_t Topology::add_node(std::string name, bool host) {
  const auto n = static_cast<int32_t>(nodes.size());
  if (host) hosts.push_back(n);
  nodes.push_back({std::move(name), host});
  return n;
}

void Topology::add_link(int32_t a, int32_t b, double gbps, double latency_us) {
  links.push_back({a, b, gbps, SimTime::from_us(latency_us)});
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

// The node at the other end of channel `ch` from the node it leaves.
int32_t Topology::channel_to(int32_t ch) const {
  const Link& l = links[static_cast<size_t>(ch / 2)];
  return ch % 2 == 0 ? l.b : l.a;
}

std::vector<int32_t> Topology::route(int32_t from, int32_t to) const {
  const int32_t src = hosts[static_cast<size_t>(from)];
  const int32_t dst = hosts[static_cast<size_t>(to)];
  if (src == dst) return {};
  if (parent_channel.size() == nodes.size()) return forest_route(from, to);
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
    throw TopologyError{"", fmt::format("no route of links from host '{}' to host '{}'",
                                        escaped(host_name(from)), escaped(host_name(to)))};
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

// The one path of a forest from host `from` to host `to`: up from both ends to their common
// ancestor. It is the breadth-first search's route, the only route there is.
std::vector<int32_t> Topology::forest_route(int32_t from, int32_t to) const {
  const int32_t src = hosts[static_cast<size_t>(from)];
  const int32_t dst = hosts[static_cast<size_t>(to)];
  std::vector<int32_t> up, down;  // channels from src up, and (reversed) down to dst
  bool through_host = false;
  auto climb = [&](int32_t& n, std::vector<int32_t>& part, bool towards_root) {
    const int32_t ch = parent_channel[static_cast<size_t>(n)];
    part.push_back(towards_root ? ch : ch ^ 1);
    n = channel_to(ch);
    if (n != src && n != dst && nodes[static_cast<size_t>(n)].host) through_host = true;
  };
  int32_t u = src, v = dst;
  while (depth[static_cast<size_t>(u)] > depth[static_cast<size_t>(v)]) climb(u, up, true);
  while (depth[static_cast<size_t>(v)] > depth[static_cast<size_t>(u)]) climb(v, down, false);
  while (u != v && parent_channel[static_cast<size_t>(u)] >= 0) {
    climb(u, up, true);
    climb(v, down, false);
  }
  if (u != v || through_host)
    throw TopologyError{
        "", fmt::format("no route of links from host '{}' to host '{}'", host_name(from), host_name(to))};
  up.insert(up.end(), down.rbegin(), down.rend());
  return up;
}

namespace {

// Disjoint sets over node indices (union by size, path halving).
class NodeSets {
 public:
  explicit NodeSets(size_t n) : parent_(n), size_(n, 1) {
    for (size_t i = 0; i < n; ++i) parent_[i] = static_cast<int32_t>(i);
  }
  int32_t find(int32_t x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      auto& p = parent_[static_cast<size_t>(x)];
      p = parent_[static_cast<size_t>(p)];
      x = p;
    }
    return x;
  }
  // False when `a` and `b` were already together.
  bool join(int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    if (size_[static_cast<size_t>(a)] < size_[static_cast<size_t>(b)]) std::swap(a, b);
    parent_[static_cast<size_t>(b)] = a;
    size_[static_cast<size_t>(a)] += size_[static_cast<size_t>(b)];
    return true;
  }

 private:
  std::vector<int32_t> parent_;
  std::vector<int32_t> size_;
};

}  // namespace

void Topology::index() {
  out = out_channels(nodes.size(), links);
  parent_channel.clear();
  depth.clear();
  NodeSets sets(nodes.size());
  for (const Link& l : links)
    if (!sets.join(l.a, l.b)) return;  // a cycle: route() searches
  parent_channel.assign(nodes.size(), -1);
  depth.assign(nodes.size(), -1);
  std::vector<int32_t> queue;
  for (size_t root = 0; root < nodes.size(); ++root) {
    if (depth[root] >= 0) continue;
    depth[root] = 0;
    queue.assign(1, static_cast<int32_t>(root));
    for (size_t q = 0; q < queue.size(); ++q) {
      const int32_t n = queue[q];
      for (int32_t ch : out[static_cast<size_t>(n)]) {
        const int32_t next = channel_to(ch);
        if (depth[static_cast<size_t>(next)] >= 0) continue;
        depth[static_cast<size_t>(next)] = depth[static_cast<size_t>(n)] + 1;
        parent_channel[static_cast<size_t>(next)] = ch ^ 1;
        queue.push_back(next);
      }
    }
  }
}

SimTime Topology::route_latency(const std::vector<int32_t>& r) const {
  SimTime total = SimTime::zero();
  for (int32_t ch : r) total = total + channel_latency(ch);
  return total;
}

namespace {

// Every worker must reach every shard (and back: links are full duplex, so one way suffices).
// A route from host to host runs through switches only, so host a reaches host b when a link joins
// them or both touch one component of the switches' links. A worker touching a component that
// every shard touches reaches them all; only the others are checked shard by shard, which finds
// the first worker, by shard then worker, that some shard is out of reach of. Time: the links
// plus, for workers without such a component, shards x their links.
void check_reach(const TopologyKindRow& kind, const Topology& t) {
  const size_t n = t.nodes.size();
  const auto is_host = [&](int32_t node) { return t.nodes[static_cast<size_t>(node)].host; };
  NodeSets switches(n);
  for (const auto& l : t.links)
    if (!is_host(l.a) && !is_host(l.b)) switches.join(l.a, l.b);
  const auto node_of = [&](int32_t host) { return t.hosts[static_cast<size_t>(host)]; };
  const auto shards = static_cast<int32_t>(t.shard_host.size());
  std::vector<int32_t> touched_by(n, 0), stamp(n, -1);  // by component: shards touching it
  for (int32_t k = 0; k < shards; ++k)
    for (int32_t ch : t.out[static_cast<size_t>(node_of(t.shard_host[static_cast<size_t>(k)]))]) {
      const int32_t next = t.channel_to(ch);
      if (is_host(next)) continue;
      const auto c = static_cast<size_t>(switches.find(next));
      if (stamp[c] != k) stamp[c] = k, ++touched_by[c];
    }
  std::vector<size_t> doubtful;  // workers that touch no component every shard touches
  for (size_t i = 0; i < t.worker_host.size(); ++i) {
    const auto& out = t.out[static_cast<size_t>(node_of(t.worker_host[i]))];
    if (!std::any_of(out.begin(), out.end(), [&](int32_t ch) {
          const int32_t next = t.channel_to(ch);
          return !is_host(next) && touched_by[static_cast<size_t>(switches.find(next))] == shards;
        }))
      doubtful.push_back(i);
  }
  if (doubtful.empty()) return;
  std::fill(stamp.begin(), stamp.end(), -1);
  for (int32_t k = 0; k < shards; ++k) {
    const int32_t shard = node_of(t.shard_host[static_cast<size_t>(k)]);
    for (int32_t ch : t.out[static_cast<size_t>(shard)]) {
      const int32_t next = t.channel_to(ch);
      if (!is_host(next)) stamp[static_cast<size_t>(switches.find(next))] = k;
    }
    for (size_t i : doubtful) {
      const int32_t worker = node_of(t.worker_host[i]);
      const auto& out = t.out[static_cast<size_t>(worker)];
      if (std::any_of(out.begin(), out.end(), [&](int32_t ch) {
            const int32_t next = t.channel_to(ch);
            return is_host(next) ? next == shard : stamp[static_cast<size_t>(switches.find(next))] == k;
          }))
        continue;
      bad(kind.nodes_path ? fmt::format("{}/{}", kind.nodes_path, worker) : std::string(kPlacement),
          fmt::format("worker {} cannot reach shard {}: no route of links from host '{}' to host '{}'", i, k,
                      t.host_name(t.worker_host[i]), t.host_name(t.shard_host[static_cast<size_t>(k)])));
    }
  }
}

}  // namespace

Topology build_topology(const Scenario& s) {
  const TopologyKindRow& kind = topology_kind(s.cluster.network.topology);
  Topology t = kind.build(s);
  t.index();
  check_reach(kind, t);
  return t;
}

}  // namespace stalesim
