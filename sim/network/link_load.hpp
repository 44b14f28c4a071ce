#pragma once
// The static load of a non-star topology's links (issue 33), for the estimate: the time each
// channel spends carrying one push and one pull of every worker (the bytes split over the shards
// as the simulation splits them), so the busiest channel is the bottleneck link once the workers
// keep the network busy.

#include <cstdint>
#include <string>
#include <vector>

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
  // The links that the messages of more than one worker cross (a shard's host link, a link
  // between switches, a host link that several workers share): the queueing stations of the
  // estimate's pace (sim/estimate/estimate.cpp), in channel order. A link that one worker's
  // messages alone cross is not a station: that worker's pushes and pulls use its two
  // directions, nothing queues there. `push_s[station * groups + g]`: the seconds the station
  // spends at its full bandwidth on one push of a worker of group g (the parts of it that cross
  // it), averaged over the group's workers; `pull_s` likewise.
  int32_t groups = 0;
  int32_t stations = 0;
  std::vector<double> push_s, pull_s;
  // Workers of one group whose messages cross the same stations with the same seconds and take
  // the same unloaded paths (in racks, a group's workers of one rack): the classes of the mean
  // value analysis, in order of their first worker.
  struct Class {
    int32_t group = 0;
    int32_t count = 0;
    std::vector<int32_t> stations;       // the stations its messages cross, in channel order
    std::vector<double> push_s, pull_s;  // one worker's seconds on each
    // One push's and one pull's unloaded path (the transfer, each part at once on its route, the
    // longest route latency and message_overhead_us), the transfer alone, and the route latency
    // (mean of the two directions).
    double push_path_s = 0, pull_path_s = 0, push_wire_s = 0, pull_wire_s = 0, latency_s = 0;
  };
  std::vector<Class> classes;
  // By group, the means over its workers of the classes' paths, transfers and latencies.
  std::vector<double> push_path_s, pull_path_s, push_wire_s, pull_wire_s, latency_s;
  // By group: whether its workers are alike on the links (each one's busiest station in each
  // direction, by the group's seconds on it, within 1% of every other's).
  std::vector<char> alike;
};

// REQUIRES: a loaded scenario whose topology is not the star.
LinkLoad link_load(const Scenario& s, double push_bytes, double pull_bytes);

// Two lines for `validate`, each starting "estimate: ": the topology and its oversubscription,
// and the busiest link with its time per round (its load is on the estimate's line of the
// loaded link, sim/estimate/estimate.hpp).
std::string describe_link_load(const Scenario& s, const LinkLoad& l);

}  // namespace stalesim
