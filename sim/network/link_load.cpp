// The static load of a non-star topology's links (sim/network/link_load.hpp).

#include "sim/network/link_load.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "sim/scenario/topology_kinds.hpp"
#include "sim/text.hpp"

namespace stalesim {

namespace {

// One worker's traffic: each channel its push and pull parts cross, with their bits (summed
// over the parts), in channel order; and the longest route latency of each.
struct WorkerTraffic {
  std::vector<std::pair<int32_t, std::array<double, 2>>> channels;
  double latency[2] = {0, 0};
};

void worker_traffic(const Topology& t, int32_t host, int32_t shards, double push_bits, double pull_bits,
                    WorkerTraffic& out) {
  out.channels.clear();
  out.latency[0] = out.latency[1] = 0;
  for (int32_t k = 0; k < shards; ++k) {
    const int32_t h = t.shard_host[static_cast<size_t>(k)];
    const std::vector<int32_t> up = t.route(host, h), down = t.route(h, host);
    for (int32_t ch : up) out.channels.push_back({ch, {push_bits / shards, 0.0}});
    for (int32_t ch : down) out.channels.push_back({ch, {0.0, pull_bits / shards}});
    out.latency[0] = std::max(out.latency[0], t.route_latency(up).seconds());
    out.latency[1] = std::max(out.latency[1], t.route_latency(down).seconds());
  }
  std::stable_sort(out.channels.begin(), out.channels.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t keep = 0;  // merge each channel's entries (in route order: a fixed summation order)
  for (size_t i = 0; i < out.channels.size(); ++i) {
    if (keep > 0 && out.channels[keep - 1].first == out.channels[i].first) {
      out.channels[keep - 1].second[0] += out.channels[i].second[0];
      out.channels[keep - 1].second[1] += out.channels[i].second[1];
    } else {
      out.channels[keep++] = out.channels[i];
    }
  }
  out.channels.resize(keep);
}

}  // namespace

LinkLoad link_load(const Scenario& s, double push_bytes, double pull_bytes) {
  const Topology t = build_topology(s);
  const int32_t shards = s.cluster.servers;
  const auto channels = static_cast<size_t>(t.channels());
  const auto groups = s.cluster.workers.size();
  const auto workers = static_cast<int32_t>(t.worker_host.size());
  std::vector<int32_t> group_of(static_cast<size_t>(workers));
  for (int32_t id = 0, g = 0, end = 0; id < workers; ++id) {
    while (id >= end) end += s.cluster.workers[static_cast<size_t>(g++)].count;
    group_of[static_cast<size_t>(id)] = g - 1;
  }
  // First pass: each channel's bits, and whether the messages of more than one worker cross it.
  std::vector<double> bits(channels, 0.0);
  std::vector<int32_t> first(channels, -1);
  std::vector<char> shared(channels, 0);
  WorkerTraffic traffic;
  for (int32_t id = 0; id < workers; ++id) {
    worker_traffic(t, t.worker_host[static_cast<size_t>(id)], shards, push_bytes * 8, pull_bytes * 8,
                   traffic);
    for (const auto& [ch, b] : traffic.channels) {
      const auto c = static_cast<size_t>(ch);
      bits[c] += b[0] + b[1];
      if (first[c] < 0)
        first[c] = id;
      else if (first[c] != id)
        shared[c] = 1;
    }
  }
  LinkLoad l;
  l.groups = static_cast<int32_t>(groups);
  std::vector<int32_t> station(channels, -1);
  for (size_t c = 0; c < channels; ++c)
    if (shared[c]) station[c] = l.stations++;
  // Second pass: the classes (workers of one group with the same traffic on the stations and the
  // same unloaded paths), each group's seconds on each station, and whether its workers are alike.
  l.push_s.assign(static_cast<size_t>(l.stations) * groups, 0.0);
  l.pull_s.assign(static_cast<size_t>(l.stations) * groups, 0.0);
  std::vector<double> low(2 * groups, std::numeric_limits<double>::infinity()), high(2 * groups, 0.0);
  std::vector<double> path(2 * groups, 0.0), wire(2 * groups, 0.0), route_latency(2 * groups, 0.0);
  std::map<std::pair<int32_t, std::vector<double>>, size_t> class_of;
  const double overhead = s.cluster.network.message_overhead_us * 1e-6;
  for (int32_t id = 0; id < workers; ++id) {
    const auto g = static_cast<size_t>(group_of[static_cast<size_t>(id)]);
    worker_traffic(t, t.worker_host[static_cast<size_t>(id)], shards, push_bytes * 8, pull_bytes * 8,
                   traffic);
    LinkLoad::Class c;
    c.group = static_cast<int32_t>(g);
    double longest[2] = {0, 0};
    std::vector<double> key;  // the class's signature: its stations and seconds, then its paths
    for (const auto& [ch, b] : traffic.channels) {
      const double per_s = 1.0 / (t.channel_gbps(ch) * 1e9);
      for (size_t d = 0; d < 2; ++d) longest[d] = std::max(longest[d], b[d] * per_s);
      const int32_t k = station[static_cast<size_t>(ch)];
      if (k < 0) continue;
      c.stations.push_back(k);
      c.push_s.push_back(b[0] * per_s);
      c.pull_s.push_back(b[1] * per_s);
      key.insert(key.end(), {static_cast<double>(k), b[0] * per_s, b[1] * per_s});
      l.push_s[static_cast<size_t>(k) * groups + g] += b[0] * per_s;
      l.pull_s[static_cast<size_t>(k) * groups + g] += b[1] * per_s;
    }
    c.push_wire_s = longest[0];
    c.pull_wire_s = longest[1];
    c.push_path_s = longest[0] + traffic.latency[0] + overhead;
    c.pull_path_s = longest[1] + traffic.latency[1] + overhead;
    c.latency_s = 0.5 * (traffic.latency[0] + traffic.latency[1]);
    key.insert(key.end(), {c.push_path_s, c.pull_path_s, c.latency_s});
    for (size_t d = 0; d < 2; ++d) {
      const double count = s.cluster.workers[g].count;
      path[d * groups + g] += (d ? c.pull_path_s : c.push_path_s) / count;
      wire[d * groups + g] += longest[d] / count;
      route_latency[d * groups + g] += traffic.latency[d] / count;
    }
    const auto [at, fresh] = class_of.try_emplace({c.group, std::move(key)}, l.classes.size());
    if (fresh) l.classes.push_back(std::move(c));
    ++l.classes[at->second].count;
  }
  // Whether every worker's busiest station in each direction, by its group's seconds on it, is
  // as busy (a class's workers share their stations, so by class).
  for (const auto& c : l.classes) {
    const auto g = static_cast<size_t>(c.group);
    double busiest[2] = {0, 0};
    for (size_t i = 0; i < c.stations.size(); ++i) {
      const auto k = static_cast<size_t>(c.stations[i]);
      if (c.push_s[i] > 0) busiest[0] = std::max(busiest[0], l.push_s[k * groups + g]);
      if (c.pull_s[i] > 0) busiest[1] = std::max(busiest[1], l.pull_s[k * groups + g]);
    }
    for (size_t d = 0; d < 2; ++d) {
      low[d * groups + g] = std::min(low[d * groups + g], busiest[d]);
      high[d * groups + g] = std::max(high[d * groups + g], busiest[d]);
    }
  }
  for (size_t g = 0; g < groups; ++g) {
    const double count = s.cluster.workers[g].count;
    for (int32_t k = 0; k < l.stations; ++k) {
      l.push_s[static_cast<size_t>(k) * groups + g] /= count;
      l.pull_s[static_cast<size_t>(k) * groups + g] /= count;
    }
    l.push_path_s.push_back(path[g]);
    l.pull_path_s.push_back(path[groups + g]);
    l.push_wire_s.push_back(wire[g]);
    l.pull_wire_s.push_back(wire[groups + g]);
    l.latency_s.push_back(0.5 * (route_latency[g] + route_latency[groups + g]));
    l.alike.push_back(low[g] >= 0.99 * high[g] && low[groups + g] >= 0.99 * high[groups + g]);
  }
  int32_t best = 0;
  std::vector<char> shard_node(t.nodes.size(), 0);
  for (int32_t h : t.shard_host) shard_node[static_cast<size_t>(t.hosts[static_cast<size_t>(h)])] = 1;
  for (int32_t ch = 0; ch < t.channels(); ++ch) {
    const double sec = bits[static_cast<size_t>(ch)] / (t.channel_gbps(ch) * 1e9);
    if (sec > l.round_s) {
      l.round_s = sec;
      best = ch;
    }
    const auto& link = t.links[static_cast<size_t>(ch / 2)];
    const auto& a = t.nodes[static_cast<size_t>(link.a)];
    const auto& b = t.nodes[static_cast<size_t>(link.b)];
    if (shard_node[static_cast<size_t>(link.a)] || shard_node[static_cast<size_t>(link.b)])
      l.shard_link_s = std::max(l.shard_link_s, sec);
    else if (!a.host && !b.host)
      l.switch_link_s = std::max(l.switch_link_s, sec);
  }
  l.busiest = t.channel_name(best);
  l.busiest_gbps = t.channel_gbps(best);
  l.hosts = static_cast<int32_t>(t.hosts.size());
  if (t.oversubscription) {
    l.racks = rack_count(s);
    l.oversubscription = *t.oversubscription;
  }
  return l;
}

std::string describe_link_load(const Scenario& s, const LinkLoad& l) {
  std::string out =
      l.racks > 0
          ? fmt::format(
                "estimate: topology racks: {} racks of {} hosts; oversubscription {:g}:1 "
                "(hosts_per_rack x bandwidth_gbps / uplink_bandwidth_gbps)\n",
                l.racks, s.cluster.network.racks.hosts_per_rack, l.oversubscription)
          : fmt::format("estimate: topology {}: {} hosts\n", enum_name(s.cluster.network.topology), l.hosts);
  out += fmt::format(
      "estimate: bottleneck link {} ({:g} Gbit/s): {:.3g} ms per round of every worker's push and pull; "
      "links shared max-min fair, the waits on them by mean value analysis\n",
      escaped(l.busiest), l.busiest_gbps, l.round_s * 1e3);
  return out;
}

}  // namespace stalesim
