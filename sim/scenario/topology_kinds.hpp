#pragma once
// The topology kinds (cluster.network.topology), one row each in sim/scenario/topology_kinds.cpp:
// the one place a kind is registered (CONTRIBUTING.md, "Adding a topology kind"). A kind's name is
// its enum's (sim/scenario/topology_spec.hpp); its row says how its nodes and links are built, what
// its topology costs in memory, whether its hosts stand in racks and what a real run can make of
// it, and everything else asks the row: building and checking (sim/scenario/topology.cpp), the
// loader's checks, the memory estimate, the real mode's refusals and the estimate's words.

#include <cstdint>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/topology.hpp"

namespace stalesim {

// What `stalesim real` can run on a kind.
enum class RealNetwork {
  kEmulatedOrKernel,  // emulated links, or made by the kernel with --net kernel (the star)
  kKernel,            // made by the kernel only (--net kernel; tools/kernel_net.cpp builds it)
  kNone,              // simulated only
};

struct TopologyKindRow {
  TopologyKind kind;
  // Its nodes and links, with the workers and shards placed (place_on_hosts); build_topology
  // indexes and checks the result. Null for the star, whose links are the worker core's own FIFOs
  // (sim/worker/network.hpp); every other kind is carried by the flow network.
  Topology (*build)(const Scenario& s);
  // The bytes its Topology and flow network hold (the memory estimate, sim/estimate/); null: none.
  double (*memory_bytes)(const Scenario& s);
  // The JSON array of its nodes, named with a worker's node index when it cannot reach a shard;
  // null: cluster.network.placement is named.
  const char* nodes_path;
  // Its hosts stand in racks (Topology::rack_of): hierarchical all-reduce runs on it.
  bool racks;
  RealNetwork real;
};

const TopologyKindRow& topology_kind(TopologyKind k);

// Racks: how many racks a scenario's racks topology has (racks.count, else just enough).
int32_t rack_count(const Scenario& s);

}  // namespace stalesim
