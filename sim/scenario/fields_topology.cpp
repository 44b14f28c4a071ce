// The field table's rows for cluster.network's topology (sim/scenario/fields.hpp, issue 33): the
// topology's kind, racks, a general graph of switches, hosts and links, and the placement of
// workers and server shards on hosts (sim/scenario/topology_spec.hpp).
#include <string>
#include <vector>

#include "sim/scenario/table.hpp"

namespace stalesim::scenario_detail {

namespace {

bool racks(const Scenario& s) { return s.cluster.network.topology == TopologyKind::kRacks; }
bool graph(const Scenario& s) { return s.cluster.network.topology == TopologyKind::kGraph; }
bool off_star(const Scenario& s) { return s.cluster.network.topology != TopologyKind::kStar; }

// A member of item i of graph.nodes or graph.links.
template <auto Items, auto M>
void set_graph(Scenario& s, size_t i, const json& v) {
  auto& m = (s.cluster.network.graph.*Items)[i].*M;
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto Items, auto M>
json get_graph(const Scenario& s, size_t i) {
  return to_json_value((s.cluster.network.graph.*Items)[i].*M);
}

constexpr auto kNet = &ClusterSpec::network;
constexpr auto kRacks = &NetworkSpec::racks;
constexpr auto kPlace = &NetworkSpec::placement;

}  // namespace

std::vector<FieldInfo> topology_fields(const Scenario& d) {
  using F = FieldType;
  const auto& n = d.cluster.network;
  return {
      {.path = "/cluster/network/topology",
       .type = F::kString,
       .allowed = enum_name_list<TopologyKind>(),
       .default_value = to_json_value(n.topology),
       .doc = "star: each worker's own link to the server shards, each shard's link full duplex, one FIFO "
              "per direction, a message on both links at once (cut-through); racks: "
              "hosts behind top-of-rack switches with uplinks to one spine; graph: any switches, hosts "
              "and links. Off the star, messages are flows sharing every link max-min fair, full duplex.",
       .set = set_m<&Scenario::cluster, kNet, &NetworkSpec::topology>,
       .get = get_m<&Scenario::cluster, kNet, &NetworkSpec::topology>},
      {.path = "/cluster/network/racks",
       .type = F::kObject,
       .applies_to = "racks",
       .applies_key = "/cluster/network/topology",
       .doc = "Racks: host links at bandwidth_gbps (a shard's host: server_bandwidth_gbps) and latency_us "
              "to the rack's switch; one uplink per rack to the spine.",
       .applies = racks},
      {.path = "/cluster/network/racks/count",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = kMaxHosts,
       .nullable = true,
       .default_note = "just enough racks for the workers and shards",
       .doc = "Number of racks; racks x hosts_per_rack is at most 1000000 hosts.",
       .set = set_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::count>,
       .get = get_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::count>},
      {.path = "/cluster/network/racks/hosts_per_rack",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = kMaxHosts,
       .default_value = n.racks.hosts_per_rack,
       .doc = "Hosts in each rack; host h of rack r is host r x hosts_per_rack + h.",
       .set = set_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::hosts_per_rack>,
       .get = get_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::hosts_per_rack>},
      {.path = "/cluster/network/racks/uplink_bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .default_value = n.racks.uplink_bandwidth_gbps,
       .doc = "Bandwidth of each rack's uplink to the spine, each direction (oversubscription: "
              "hosts_per_rack x bandwidth_gbps / this, printed by validate).",
       .set = set_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::uplink_bandwidth_gbps>,
       .get = get_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::uplink_bandwidth_gbps>},
      {.path = "/cluster/network/racks/uplink_latency_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = n.racks.uplink_latency_us,
       .doc = "One-way latency of each uplink.",
       .set = set_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::uplink_latency_us>,
       .get = get_m<&Scenario::cluster, kNet, kRacks, &RacksSpec::uplink_latency_us>},
      {.path = "/cluster/network/graph",
       .type = F::kObject,
       .applies_to = "graph",
       .applies_key = "/cluster/network/topology",
       .doc = "A general topology: nodes and full-duplex links; routes take the fewest links (ties: the "
              "link listed first) and never pass through a host.",
       .applies = graph},
      {.path = "/cluster/network/graph/nodes",
       .type = F::kObjectArray,
       .min_items = 1,
       .max_items = kMaxHosts,
       .required = true,
       .doc = "The nodes; hosts are numbered in list order from 0.",
       .set = [](Scenario& s, size_t,
                 const json& v) { s.cluster.network.graph.nodes.assign(v.size(), GraphNode{}); },
       .get =
           [](const Scenario& s, size_t) {
             return json(std::vector<json>(s.cluster.network.graph.nodes.size(), json::object()));
           }},
      {.path = "/cluster/network/graph/nodes/*/name",
       .type = F::kString,
       .min_length = 1,
       .max_length = 100,
       .required = true,
       .doc = "The node's name, unique.",
       .set = set_graph<&GraphSpec::nodes, &GraphNode::name>,
       .get = get_graph<&GraphSpec::nodes, &GraphNode::name>},
      {.path = "/cluster/network/graph/nodes/*/kind",
       .type = F::kString,
       .allowed = enum_name_list<NodeKind>(),
       .default_value = to_json_value(GraphNode{}.kind),
       .doc = "host: holds a worker or a shard; switch: forwards.",
       .set = set_graph<&GraphSpec::nodes, &GraphNode::kind>,
       .get = get_graph<&GraphSpec::nodes, &GraphNode::kind>},
      {.path = "/cluster/network/graph/links",
       .type = F::kObjectArray,
       .min_items = 1,
       .max_items = kMaxHosts,
       .required = true,
       .doc = "The links, each full duplex (each direction its own bandwidth).",
       .set = [](Scenario& s, size_t,
                 const json& v) { s.cluster.network.graph.links.assign(v.size(), GraphLink{}); },
       .get =
           [](const Scenario& s, size_t) {
             return json(std::vector<json>(s.cluster.network.graph.links.size(), json::object()));
           }},
      {.path = "/cluster/network/graph/links/*/from",
       .type = F::kString,
       .min_length = 1,
       .max_length = 100,
       .required = true,
       .doc = "One end: a node's name.",
       .set = set_graph<&GraphSpec::links, &GraphLink::from>,
       .get = get_graph<&GraphSpec::links, &GraphLink::from>},
      {.path = "/cluster/network/graph/links/*/to",
       .type = F::kString,
       .min_length = 1,
       .max_length = 100,
       .required = true,
       .doc = "The other end: a node's name.",
       .set = set_graph<&GraphSpec::links, &GraphLink::to>,
       .get = get_graph<&GraphSpec::links, &GraphLink::to>},
      {.path = "/cluster/network/graph/links/*/bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .required = true,
       .doc = "Bandwidth, each direction.",
       .set = set_graph<&GraphSpec::links, &GraphLink::bandwidth_gbps>,
       .get = get_graph<&GraphSpec::links, &GraphLink::bandwidth_gbps>},
      {.path = "/cluster/network/graph/links/*/latency_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = GraphLink{}.latency_us,
       .doc = "One-way latency.",
       .set = set_graph<&GraphSpec::links, &GraphLink::latency_us>,
       .get = get_graph<&GraphSpec::links, &GraphLink::latency_us>},
      {.path = "/cluster/network/placement",
       .type = F::kObject,
       .applies_to = "racks and graph",
       .applies_key = "/cluster/network/topology",
       .doc = "Which host holds each worker and each server shard (one per host).",
       .applies = off_star},
      {.path = "/cluster/network/placement/shards",
       .type = F::kString,
       .allowed = enum_name_list<ShardPlacement>(),
       .default_value = to_json_value(n.placement.shards),
       .doc = "first: shard k on host k; spread: one per rack in turn, from each rack's last host (graph: "
              "host k x hosts / shards); explicit: shard_hosts.",
       .set = set_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::shards>,
       .get = get_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::shards>},
      {.path = "/cluster/network/placement/shard_hosts",
       .type = F::kIntegerArray,
       .minimum = 0,
       .maximum = kMaxHosts - 1,
       .min_items = 1,
       .max_items = 65536,
       .required = true,
       .applies_to = "explicit shard placement",
       .applies_key = "/cluster/network/placement/shards",
       .doc = "The host of each shard.",
       .applies =
           [](const Scenario& s) { return s.cluster.network.placement.shards == ShardPlacement::kExplicit; },
       .set = set_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::shard_hosts>,
       .get = get_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::shard_hosts>},
      {.path = "/cluster/network/placement/workers",
       .type = F::kString,
       .allowed = enum_name_list<WorkerPlacement>(),
       .default_value = to_json_value(n.placement.workers),
       .doc = "fill: the hosts no shard holds, in host order; explicit: worker_hosts.",
       .set = set_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::workers>,
       .get = get_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::workers>},
      {.path = "/cluster/network/placement/worker_hosts",
       .type = F::kIntegerArray,
       .minimum = 0,
       .maximum = kMaxHosts - 1,
       .min_items = 1,
       .max_items = kMaxHosts,
       .required = true,
       .applies_to = "explicit worker placement",
       .applies_key = "/cluster/network/placement/workers",
       .doc = "The host of each worker, in worker order.",
       .applies =
           [](const Scenario& s) {
             return s.cluster.network.placement.workers == WorkerPlacement::kExplicit;
           },
       .set = set_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::worker_hosts>,
       .get = get_m<&Scenario::cluster, kNet, kPlace, &PlacementSpec::worker_hosts>},
  };
}

}  // namespace stalesim::scenario_detail
