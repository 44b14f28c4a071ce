// The static load of a non-star topology's links (sim/network/link_load.hpp).

#include "sim/network/link_load.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "sim/network/topology.hpp"
#include "sim/text.hpp"

namespace stalesim {

LinkLoad link_load(const Scenario& s, double push_bytes, double pull_bytes) {
  const Topology t = build_topology(s);
  const int32_t shards = s.cluster.servers;
  std::vector<double> bits(static_cast<size_t>(t.channels()), 0.0);
  for (int32_t w : t.worker_host)
    for (int32_t k = 0; k < shards; ++k) {
      const int32_t h = t.shard_host[static_cast<size_t>(k)];
      for (int32_t ch : t.route(w, h)) bits[static_cast<size_t>(ch)] += push_bytes / shards * 8;
      for (int32_t ch : t.route(h, w)) bits[static_cast<size_t>(ch)] += pull_bytes / shards * 8;
    }
  LinkLoad l;
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

std::string describe_link_load(const Scenario& s, const LinkLoad& l, double iterations_per_s) {
  const double workers = s.cluster.worker_count();
  std::string out = l.racks > 0
                        ? fmt::format(
                              "estimate: topology racks: {} racks of {} hosts; oversubscription {:g}:1 "
                              "(hosts_per_rack x bandwidth_gbps / uplink_bandwidth_gbps)\n",
                              l.racks, s.cluster.network.racks.hosts_per_rack, l.oversubscription)
                        : fmt::format("estimate: topology graph: {} hosts\n", l.hosts);
  out += fmt::format(
      "estimate: bottleneck link {} ({:g} Gbit/s): {:.3g} ms per round of every worker's push and pull; "
      "offered {:.0f}% of its capacity at the pace estimated above (which times each message at its "
      "host link's full rate; off the star links are shared max-min fair)\n",
      escaped(l.busiest), l.busiest_gbps, l.round_s * 1e3, 100 * l.round_s * iterations_per_s / workers);
  return out;
}

}  // namespace stalesim
