#pragma once
// `stalesim real --net kernel` and `calibrate --cpu --net kernel` (issue 42 point 3): the ranks of
// the MPI job run in a network the Linux kernel makes (tools/real-net: one network namespace per
// rank's host, bridges for the switches, every link shaped in both directions with HTB), so every
// byte crosses a real, shaped, shared queue. The launcher builds the network from the scenario
// (the star: each rank's link at its rate; racks: the ranks' hosts in their racks, each rack's
// uplink at the racks' uplink rate), starts mpirun in the switch namespace with each rank moved into
// its host's namespace, and removes the network when the job ends; a guard process that real-net
// starts removes it too when the launcher dies, even by SIGKILL. Latency is what the kernel gives
// (netem is not available): measure it (calibrate --cpu --net kernel) and give the simulation that.

#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace stalesim::cli {

struct KernelNet {
  std::string tool;             // tools/real-net
  std::string id;               // real-net's ID: "k" and 5 hex digits of this process's id
  std::string state;            // real-net's state file
  std::string bridge;           // the switch namespace's addressed bridge: br0 (star), spine (racks)
  std::vector<std::string> up;  // real-net up's options after the ID
  bool made = false;            // up succeeded: down must run
};

// --net's value: false for "none", true for "kernel"; UsageError naming the allowed values.
bool kernel_net_option(const std::string& value);

// The network of a job of `ranks` ranks of scenario `s` (ranks 0..S-1 the server shards, then the
// workers; calibrate's 2 ranks: two hosts at the network's bandwidth). Throws ScenarioError naming
// the field when the scenario's network cannot be built (a graph topology, more than 253 hosts).
KernelNet plan_kernel_net(const Scenario& s, int ranks, bool calibrate);

// Runs `real-net up` (throws ScenarioError with real-net's own words when it cannot: no root, no
// namespaces, a kernel command failed; nothing is left behind) and `real-net down`.
void kernel_net_up(KernelNet& net);
void kernel_net_down(KernelNet& net);

// What comes before mpirun's path (real-net switch ID env PMIX...=...), mpirun's own options for
// the namespaces, and what comes before this program's path (real-net exec ID rank).
std::vector<std::string> kernel_net_before_mpirun(const KernelNet& net);
std::vector<std::string> kernel_net_mpirun_options(const KernelNet& net);
std::vector<std::string> kernel_net_before_rank(const KernelNet& net);

}  // namespace stalesim::cli
