// The network model (sim/worker/network.hpp): link transfer times, latency jitter, the server's shard FIFOs
// (one per direction), cut-through.

#include "sim/worker/network.hpp"

#include "sim/worker/worker.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

namespace stalesim {

SimTime transfer_time(int64_t bytes, double gbps) {
  const double ns = static_cast<double>(bytes) * 8.0 / gbps;
  if (!(ns <= SimTime::kMaxNs))
    return SimTime::from_ns_checked(
        ns, fmt::format("a {}-byte message over a {:g} Gbit/s link (cluster.network.bandwidth_gbps, "
                        "server_bandwidth_gbps or cluster.workers.*.bandwidth_gbps) takes too long",
                        bytes, gbps));
  return SimTime::from_ns(static_cast<int64_t>(std::llround(ns)));
}

Network::Network(const Scenario& s)
    : message_overhead_(SimTime::from_us(s.cluster.network.message_overhead_us)),
      server_gbps_(s.cluster.network.server_bandwidth_gbps) {
  for (auto& dir : shard_free_) dir.assign(static_cast<size_t>(s.cluster.servers), SimTime::zero());
  bool link_jitter = false;
  const auto& net = s.cluster.network;
  for (const auto& grp : s.cluster.workers) {
    GroupLink link{SimTime::from_us(grp.latency_us.value_or(net.latency_us)),
                   grp.bandwidth_gbps.value_or(net.bandwidth_gbps),
                   grp.latency_sigma.value_or(net.latency_sigma)};
    link_jitter = link_jitter || link.latency_sigma > 0;
    groups_.push_back(link);
  }
  if (link_jitter)
    for (int32_t i = 0; i < s.cluster.worker_count(); ++i)
      rngs_.emplace_back(s.seed, Purpose::kNetwork, static_cast<uint64_t>(i));
  if (net.topology != TopologyKind::kStar) flows_ = std::make_unique<TopologyNetwork>(s, kFlowDone);
}

SimTime Network::latency(int32_t id, int32_t group) {
  if (flows_) return flows_->request_latency(id);
  const GroupLink& g = groups_[static_cast<size_t>(group)];
  if (!(g.latency_sigma > 0)) return g.latency;
  const double s = g.latency_sigma;
  const double f = rngs_[static_cast<size_t>(id)].lognormal(-0.5 * s * s, s);
  return SimTime::from_ns_checked(
      static_cast<double>(g.latency.ns()) * f,
      fmt::format("worker {}'s link latency (cluster.network.latency_us and latency_sigma)", id));
}

std::optional<SimTime> Network::send_pull(Engine& e, int32_t worker, int32_t group, int64_t bytes,
                                          FlowNetwork::Done done, RunObserver* obs, bool deliver) {
  if (flows_) {
    if (deliver) flows_->to_worker(e, worker, bytes, done);
    return std::nullopt;
  }
  const SimTime through = pull(e.now(), bytes, worker, group, obs);
  if (deliver) e.schedule(through + latency(worker, group), done.kind, done.target, done.payload);
  return through;
}

void Network::send_push(Engine& e, int32_t worker, int32_t group, int64_t bytes,
                        FlowNetwork::Done at_server) {
  if (flows_) return flows_->to_shards(e, worker, bytes, at_server);
  e.schedule_in(latency(worker, group), at_server.kind, at_server.target, at_server.payload);
}

void Network::send_between(Engine& e, int32_t from, int32_t from_group, int32_t to, int32_t to_group,
                           int64_t bytes, FlowNetwork::Done done) {
  if (flows_) return flows_->between_workers(e, from, to, bytes, done);
  const SimTime wire = max(worker_link(from_group, bytes), worker_link(to_group, bytes));
  e.schedule_in(latency(from, from_group) + wire, done.kind, done.target, done.payload);
}

Network::ServerPass Network::server_transfer(SimTime arrive, int64_t bytes, int32_t worker, WireKind kind,
                                             RunObserver* obs) {
  std::vector<SimTime>& direction = shard_free_[kind == WireKind::kPush ? 0 : 1];
  const auto shards = static_cast<int64_t>(direction.size());
  ServerPass pass{SimTime::max(), arrive};
  for (int64_t k = 0; k < shards; ++k) {
    const int64_t part = bytes / shards + (k < bytes % shards ? 1 : 0);
    SimTime& free = direction[static_cast<size_t>(k)];
    const SimTime start = max(arrive, free);
    free = start + server_link(part) + message_overhead_;
    if (k == 0 && obs) obs->wire(start, free, worker, kind, part);
    pass.first = std::min(pass.first, start);
    pass.done = max(pass.done, free);
  }
  return pass;
}

}  // namespace stalesim
