#pragma once
// The up-front estimate of a run (issue 20 point 2): from the scenario alone, before anything is
// built, what paces the cluster, how many updates the virtual time holds, and what the run will
// cost on this machine. `stalesim validate` prints it, `stalesim run` one line of it.
//
// The model is the simulation's own timing (DESIGN.md section 3) at mean values:
// - one iteration of a worker of group g: compute C_g = batch FLOPs / (peak x efficiency) + overhead
//   (or iteration_ms), then the push and the pull, each crossing the worker's link (bytes x 8 /
//   bandwidth, plus latency) and every server shard's link (bytes / shards x 8 / server bandwidth,
//   plus message_overhead_us), which all workers share in arrival order;
// - unloaded, an iteration takes T_g = C_g + L_g + S (L_g: the worker-link part, S: the server
//   part). The server link is offered rho = S x sum over workers of 1 / T_g of its time; above 1
//   it saturates and the workers' rate is cut until it carries exactly 1 / S iterations per second
//   (workers slower than the shared pace keep theirs);
// - lock-step policies (BSP, SSP and DSSP with s = 0) wait for the slowest worker each clock: the
//   pulls leave the server link one after another in worker order, so a clock takes
//   max over groups of (position of its last worker x S_pull + C_g + L_g + S_push);
// - bounded-staleness policies (SSP, ESSP, DSSP) hold every worker to the slowest one's pace in
//   the long run, after a head start of at most the bound (s, or s_L + r_max) clocks; ASP,
//   n-softsync and VAP let each worker go at its own (VAP's holds are not counted);
// - cluster.order "uniform" moves no bytes in time: compute sets the pace.
// Jitter, the schedule (stragglers, pauses, crashes), B-FASGD's skipped messages and VAP's waits
// are left out. The bottleneck is the part that takes most of an average worker's iteration:
// compute, the worker link, or the server link (always, when saturated).

#include <optional>
#include <string>
#include <vector>

#include "models/model.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/plan/run_plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// The model's shape and size come from the run plan (sim/plan/run_plan.hpp), the same the run
// follows: scenario_model_shape and scenario_model_size are declared there.

// Where a run is assumed to spend its wall time on this machine: the math at assumed_gflops(type)
// and kAssumedEventUs per event (about 4 per iteration). The rates are fitted to runs on the
// reference machine (2 cores, x86-64 with AVX2 and FMA): the quick start (784-200-10 MLP, 667
// GFLOP counted as 6 x weights per sample, 7.75 s of wall time) and scenarios/workloads/cnn-fashion
// (3,000 CNN iterations, 13 s); mf and lda, whose per-sample work is scalar and irregular, are
// assumed at 2 GFLOP/s. Figures to check against `run`'s closing "wall time" line, not measurements.
// Time-only models do no math.
double assumed_gflops(ModelType model_type);
inline constexpr double kAssumedEventUs = 0.5;
// Off the star, one flow slot's share of a max-min recompute (sim/network/flows.hpp) in events:
// 9.4 to 13.1 ns per slot and recompute measured at 300 to 3,000 workers in racks (18.7 at 100),
// against the calibration's 0.068 to 0.070 us per event (CPU time, the reference machine, issue 46).
inline constexpr double kFlowPassEvents = 0.15;
// Each message part past the first (a message is split over the server shards, each part on its
// own link): CPU time of 1.5M updates of a time-only ASP star of 1,000 workers, 0.47 s on one
// shard, 0.58 on 4 (64 workers: 0.48 on 2, 0.54 on 4, 0.63 on 8): 12 ns a part, in events.
inline constexpr double kShardPartEvents = 0.18;

struct GroupEstimate {
  std::string profile;  // the device profile's name
  int32_t count = 0;
  double compute_s = 0;          // C_g
  double iteration_wire_s = 0;   // the transfers an unloaded iteration waits for: pull_path_s + push_path_s,
                                 // less under a cache mode (a fetch serves several clocks)
  double slowest_compute_s = 0;  // the expected longest of the group's compute times in one clock (the
                                 // largest of `count` jitter factors; lock-step and all-reduce)
  double worker_link_s = 0;      // L_g: push and pull over the worker's link, latencies included
  double server_link_s = 0;      // S: push and pull through a server shard's link, unloaded
  // A pull's and a push's time from leaving to arriving, unloaded, latency included: each is
  // through when the slower of the worker's and the shard's link has carried it (cut-through,
  // sim/worker/network.hpp), so an unloaded iteration is C_g + pull_path_s + push_path_s.
  double pull_path_s = 0;
  double push_path_s = 0;
  double latency_s = 0;                // one way
  double iteration_s = 0;              // expected, with the server link's queueing and the policy's pace
  double worker_link_utilisation = 0;  // busy share of the worker's link
  double compute_share = 0;            // C_g / iteration_s
};

struct RunEstimate {
  std::vector<GroupEstimate> groups;
  double push_bytes = 0;          // one push (mf, lda: the most a sparse push of one batch carries)
  double pull_bytes = 0;          // one pull
  bool lockstep = false;          // BSP-like pace
  bool bounded = false;           // SSP, ESSP, DSSP: a staleness bound holds workers together
  bool transfers_timed = true;    // false for cluster.order "uniform"
  double server_offered = 0;      // rho: the server link's offered load at unloaded rates, its busier
                                  // direction (full duplex; > 1: saturated); off the star the
                                  // busiest link's (LinkLoad::busiest)
  double server_utilisation = 0;  // its busy share at the expected rate, <= 1
  std::string loaded_link = "server link";  // the link they describe: off the star "link NAME"
  std::string bottleneck;                   // "compute", "worker link", "server link" or off the star
                                            // "link NAME" (the busiest link, where workers wait on links)
  double communication_share = 0;           // share of an average worker's time not computing
  // The server's own work (cluster.network.server_apply_ns_per_parameter > 0): one push's apply on a
  // shard, and the share of the time a shard spends applying at the expected pace (<= 1). Where
  // the network's pace would offer more than a shard can apply, the pace is the apply's and the
  // bottleneck "server apply".
  double apply_s = 0;
  double apply_offered = 0;              // pushes offered x apply_s at the network's pace (> 1: saturated)
  double iterations_per_s = 0;           // pushes per virtual second, all workers
  double updates_per_s = 0;              // server updates per virtual second (softsync: a push group each)
  std::optional<double> virtual_time_s;  // stop.virtual_time_s
  double expected_updates = 0;           // updates by the end: the virtual time's, capped by stop.max_updates
  double expected_end_s = 0;             // virtual time when the run is expected to stop
  double flops_per_sample = 0;           // what an iteration is timed by (the cost architecture's, if any)
  double math_flops_per_sample = 0;      // what the run computes (0: time-only)
  double wall_s = 0;                     // expected wall time on this machine (assumed_gflops above)
  double gflops = 0;                     // the rate assumed for it
  double math_gflop = 0;                 // the math the run computes (wall_s's first part: / gflops)
  double events = 0;                     // the events it processes (wall_s's second part: x event_us)
  double part_events = 0;                // on the star: the shards' message parts past the first, in
                                         // events (kShardPartEvents each)
  double flow_passes = 0;                // off the star: flow slots passed over by its max-min
                                         // recomputes (x kFlowPassEvents events each)
  double event_us = kAssumedEventUs;     // the cost assumed per event
  std::string rate_note;                 // "": the rates are assumed; else where the measured ones come
                                         // from (use_machine_rate, sim/estimate/calibration.hpp)
  MemoryEstimate memory;
  std::vector<std::string> warnings;  // one sentence each
  std::string topology;               // off the star: its lines (sim/network/link_load.hpp)

  // What the event loop's wall time is counted in: the events and the flow recomputes' passes.
  double work_events() const { return events + part_events + flow_passes * kFlowPassEvents; }
  // Several lines for `validate`, each starting "estimate: ".
  std::string describe() const;
  // One line for `run`.
  std::string one_line() const;
};

// REQUIRES: a loaded (validated) scenario; `plan` is plan_run(s), the plan the run follows.
// `threads`: the run's gradient threads, for its memory estimate (estimate_memory).
RunEstimate estimate_run(const Scenario& s, const RunPlan& plan, int threads = 1);
RunEstimate estimate_run(const Scenario& s, int threads = 1);  // with plan_run(s)

// Refuses, before anything runs, a run the estimate already knows cannot finish: one expected to
// end past the clock's range (int64 nanoseconds, about 292 years; e.g. stop.max_updates with a
// slow pace and no stop.virtual_time_s), or one whose evaluations (eval.every_s over the expected
// end) exceed the simulation's cap of 10,000,000. Throws ScenarioError naming `origin` and the
// field to change. `validate` and `run` both call it.
void check_feasible(const Scenario& s, const RunEstimate& e, const std::string& origin);

}  // namespace stalesim
