#pragma once
// The static load of a non-star topology's links (issue 33), for the estimate: the time each
// channel spends carrying one push and one pull of every worker (the bytes split over the shards
// as the simulation splits them), so the busiest channel is the bottleneck link once the workers
// keep the network busy.

#include <cstdint>
#include <string>

#include "sim/scenario/scenario.hpp"

namespace stalesim {

struct LinkLoad {
  std::string busiest;      // its channel's name, e.g. "tor3->spine"
  double round_s = 0;       // its seconds per round of every worker's push and pull
  double busiest_gbps = 0;  // its bandwidth
  int32_t hosts = 0;
  int32_t racks = 0;            // racks only
  double oversubscription = 0;  // racks only
  // The busiest server shard's host link and the busiest link between two switches, each in
  // seconds per round (the wall-time estimate: where a link between switches is nearly as busy as
  // the shards' links, the parts of one message have different bottlenecks and end apart).
  double shard_link_s = 0;
  double switch_link_s = 0;
};

// REQUIRES: a loaded scenario whose topology is not the star.
LinkLoad link_load(const Scenario& s, double push_bytes, double pull_bytes);

// One or two lines for `validate`, each starting "estimate: ": the topology, its
// oversubscription, the bottleneck link and its busy share at `iterations_per_s` (all workers).
std::string describe_link_load(const Scenario& s, const LinkLoad& l, double iterations_per_s);

}  // namespace stalesim
