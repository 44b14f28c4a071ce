// The parameter server's traffic on a non-star topology (sim/network/topology_network.hpp).

#include "sim/network/topology_network.hpp"
#include "sim/text.hpp"

#include <fmt/format.h>

namespace stalesim {

std::vector<double> TopologyNetwork::channel_rates(const Topology& t) {
  std::vector<double> r;
  for (int32_t ch = 0; ch < t.channels(); ++ch) r.push_back(t.channel_gbps(ch));
  return r;
}

TopologyNetwork::TopologyNetwork(const Scenario& s, uint32_t flow_event_kind)
    : topo_(build_topology(s)),
      flows_(channel_rates(topo_), flow_event_kind),
      shards_(s.cluster.servers),
      overhead_(SimTime::from_us(s.cluster.network.message_overhead_us)) {
  const auto workers = topo_.worker_host.size();
  for (size_t i = 0; i < workers; ++i) {
    SimTime longest = SimTime::zero();
    for (int32_t k = 0; k < shards_; ++k) {
      const auto up = topo_.route(topo_.worker_host[i], topo_.shard_host[static_cast<size_t>(k)]);
      const auto down = topo_.route(topo_.shard_host[static_cast<size_t>(k)], topo_.worker_host[i]);
      for (const auto* r : {&up, &down}) {
        route_begin_.push_back(static_cast<int32_t>(route_store_.size()));
        route_store_.insert(route_store_.end(), r->begin(), r->end());
        route_latency_.push_back(topo_.route_latency(*r));
      }
      longest = max(longest, route_latency_[route_latency_.size() - 2]);  // the request goes up
    }
    request_latency_.push_back(longest);
  }
  route_begin_.push_back(static_cast<int32_t>(route_store_.size()));
}

void TopologyNetwork::send(Engine& e, int32_t w, int64_t bytes, bool up, FlowNetwork::Done done) {
  parts_.clear();
  for (int32_t k = 0; k < shards_; ++k) {
    const int64_t part = bytes / shards_ + (k < bytes % shards_ ? 1 : 0);
    const size_t pair = static_cast<size_t>(w) * static_cast<size_t>(shards_) + static_cast<size_t>(k);
    const size_t r = 2 * pair + (up ? 0 : 1);
    const auto b = static_cast<size_t>(route_begin_[r]);
    const auto n = static_cast<size_t>(route_begin_[r + 1]) - b;
    parts_.push_back(
        {std::span<const int32_t>(route_store_).subspan(b, n), part, route_latency_[r] + overhead_});
  }
  flows_.send(e, parts_, done);
}

void TopologyNetwork::between_workers(Engine& e, int32_t from, int32_t to, int64_t bytes,
                                      FlowNetwork::Done done) {
  const std::pair<int32_t, int32_t> hosts{topo_.worker_host[static_cast<size_t>(from)],
                                          topo_.worker_host[static_cast<size_t>(to)]};
  auto it = host_routes_.find(hosts);
  if (it == host_routes_.end()) {
    auto r = topo_.route(hosts.first, hosts.second);
    const SimTime latency = topo_.route_latency(r);
    it = host_routes_.emplace(hosts, std::pair{std::move(r), latency}).first;
  }
  const FlowNetwork::Part part{it->second.first, bytes, it->second.second + overhead_};
  flows_.send(e, std::span(&part, 1), done);
}

std::string TopologyNetwork::links_csv(SimTime end) const {
  std::string out = "link,from,to,bandwidth_gbps,bytes,busy_s,utilisation,peak_flows\n";
  const auto& stats = flows_.stats();
  for (int32_t ch = 0; ch < topo_.channels(); ++ch) {
    const auto& st = stats[static_cast<size_t>(ch)];
    const Topology::Link& l = topo_.links[static_cast<size_t>(ch / 2)];
    const int32_t from = ch % 2 == 0 ? l.a : l.b;
    const int32_t to = ch % 2 == 0 ? l.b : l.a;
    const int64_t busy = st.busy_ns + (st.active > 0 ? end.ns() - st.since_ns : 0);
    out +=
        fmt::format("{},{},{},{:g},{},{:.9f},{:.6f},{}\n", ch / 2,
                    csv_escape(topo_.nodes[static_cast<size_t>(from)].name),
                    csv_escape(topo_.nodes[static_cast<size_t>(to)].name), l.gbps, st.bytes,
                    static_cast<double>(busy) * 1e-9,
                    end.ns() > 0 ? static_cast<double>(busy) / static_cast<double>(end.ns()) : 0.0, st.peak);
  }
  return out;
}

void TopologyNetwork::observe(RunObserver* obs) {
  if (!obs) return;
  std::vector<std::string> names;
  for (int32_t ch = 0; ch < topo_.channels(); ++ch) names.push_back(topo_.channel_name(ch));
  flows_.on_load([obs, names = std::move(names), this](SimTime now, int32_t ch, double gbps, int32_t n) {
    obs->link_load(now, names[static_cast<size_t>(ch)], gbps / topo_.channel_gbps(ch), n);
  });
}

void TopologyNetwork::to_worker(Engine& e, int32_t w, int64_t bytes, FlowNetwork::Done done) {
  send(e, w, bytes, false, done);
}

void TopologyNetwork::to_shards(Engine& e, int32_t w, int64_t bytes, FlowNetwork::Done done) {
  send(e, w, bytes, true, done);
}

}  // namespace stalesim
