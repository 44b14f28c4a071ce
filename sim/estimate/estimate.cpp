#include "sim/estimate/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "models/cost_arch.hpp"
#include "models/device_profile.hpp"
#include "sim/network/link_load.hpp"
#include "sim/scenario/topology.hpp"
#include "sim/text.hpp"

namespace stalesim {
namespace {

constexpr double kEventsPerIteration = 4;  // params arrive, compute done, push at server, applied
// A link between switches as busy as this share of the busiest shard link: from kSplitFrom the
// parts of a message begin to end apart, from kSplitAll every part ends alone
// (flow_passes_per_iteration). Measured on racks of 32, 4 shards: busiest uplink at 0.72 of the
// shard link (140 workers), 2.5 ends per update; 0.74 (128), 3.1; 0.81 (100), 7.1; 0.62 to 0.51
// (250 to 3,000 workers), 2.0.
constexpr double kSplitFrom = 0.72, kSplitAll = 0.82;

double transfer_s(double bytes, double gbps) { return bytes * 8.0 / (gbps * 1e9); }

std::string seconds(double s) {
  if (s < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.3g} s", s);
  if (s < 7200) return fmt::format("{:.3g} min", s / 60);
  return fmt::format("{:.3g} h", s / 3600);
}

std::string bytes(double b) { return format_bytes(b); }

}  // namespace

double assumed_gflops(ModelType model_type) {
  if (traits(model_type).dense) return 80.0;
  if (model_type == ModelType::kCnn) return 20.0;
  return 2.0;
}

namespace {

// The flops of one sample and the sizes of a push and a pull message.
void estimate_messages(const Scenario& s, const RunPlan& plan, RunEstimate& e) {
  const ModelSize& size = plan.size;
  const ModelShape& shape = plan.shape;
  const auto& cost = plan.cost;
  const bool math = traits(s.model.type).has_math;
  e.math_flops_per_sample = math ? size.flops_per_sample : 0.0;
  e.flops_per_sample = cost ? cost->training_flops() : size.flops_per_sample;
  e.pull_bytes = cost ? std::round(cost->parameters * 4.0) : size.wire_bytes;
  e.push_bytes = e.pull_bytes;
  const double batch = s.optimizer.batch_size;
  if (!cost && s.model.type == ModelType::kMf)  // sparse: the distinct rows and columns of one batch
    e.push_bytes =
        std::min(2.0 * batch, static_cast<double>(shape.rows + shape.cols)) * (s.model.rank * 4.0 + 4);
  if (!cost && s.model.type == ModelType::kLda)  // sparse: the distinct words of one batch of documents
    e.push_bytes = std::min(batch * shape.mean_length, static_cast<double>(shape.vocabulary)) *
                       (s.model.topics * 4.0 + 4) +
                   s.model.topics * 4.0;
}

// A server shard's link per iteration, full duplex (sim/worker/network.hpp): a message's part
// and overhead in each direction; one worker's iteration passes both (push_s + pull_s), the link
// is busy per iteration for the busier direction only. A message crosses the worker's link at
// the same time (cut-through): its path is the slower of the two.
struct ServerLink {
  double push_s = 0;
  double pull_s = 0;
  double path_s() const { return push_s + pull_s; }
  double busy_s() const { return std::max(push_s, pull_s); }
};

// The expected largest of `n` draws of a jitter factor (sim/worker/jitter.cpp, mean 1): the
// normal order statistic by Blom's approximation, E[max] ~ Phi^-1((n - 0.375) / (n + 0.25)),
// through the lognormal's exponent, the normal's and gamma's coefficient of variation (gamma
// by its normal approximation); the exponential's exactly (shift plus its mean times the n-th
// harmonic number). Traces and constants: 1 (a constant is in the mean already).
double expected_max_factor(const JitterSpec& j, double n) {
  if (n <= 1) return 1.0;
  const double p = (n - 0.375) / (n + 0.25);
  double lo = -10, hi = 10;  // Phi(z) = p by bisection (fixed steps: deterministic)
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  const double z = 0.5 * (lo + hi);
  switch (j.type) {
    case JitterType::kLognormal:
      return std::exp(-0.5 * j.sigma * j.sigma + j.sigma * z);
    case JitterType::kNormal:
    case JitterType::kGamma:
      return 1 + j.cv * z;
    case JitterType::kExponential: {
      double harmonic = 0;
      for (double k = 1; k <= n; ++k) harmonic += 1 / k;
      return j.shift + (1 - j.shift) * harmonic;
    }
    default:
      return 1.0;
  }
}

// Each group's unloaded iteration time (compute, its own link, the server link) into `unloaded`
// and its time on the wire into `wire_s`; returns the server link's times per iteration.
ServerLink estimate_groups(const Scenario& s, RunEstimate& e, std::vector<double>& unloaded,
                           std::vector<double>& wire_s) {
  const auto& c = s.cluster;
  const auto& net = c.network;
  const double shards = c.servers;
  const double batch = s.optimizer.batch_size;
  ServerLink server;
  if (e.transfers_timed) {
    server.push_s =
        transfer_s(e.push_bytes / shards, net.server_bandwidth_gbps) + net.message_overhead_us * 1e-6;
    server.pull_s =
        transfer_s(e.pull_bytes / shards, net.server_bandwidth_gbps) + net.message_overhead_us * 1e-6;
  }
  for (size_t g = 0; g < c.workers.size(); ++g) {
    const auto& grp = c.workers[g];
    const DeviceProfile p = group_profile(grp, g);
    GroupEstimate ge;
    ge.profile = p.name;
    ge.count = grp.count;
    ge.compute_s = grp.iteration_ms
                       ? *grp.iteration_ms * 1e-3
                       : e.flops_per_sample * batch / (peak_tflops(p, grp.precision) * 1e12 * p.efficiency) +
                             p.overhead_us * 1e-6;
    ge.slowest_compute_s = ge.compute_s * expected_max_factor(grp.jitter ? *grp.jitter : c.jitter, grp.count);
    const double bw = grp.bandwidth_gbps.value_or(net.bandwidth_gbps);
    const double lat = grp.latency_us.value_or(net.latency_us) * 1e-6;
    double push_wire = 0, pull_wire = 0;
    if (e.transfers_timed) {
      push_wire = transfer_s(e.push_bytes, bw);
      pull_wire = transfer_s(e.pull_bytes, bw);
      ge.latency_s = lat;
      ge.worker_link_s = push_wire + pull_wire + 2 * lat;
      ge.pull_path_s = lat + std::max(pull_wire, server.pull_s);
      ge.push_path_s = lat + std::max(push_wire, server.push_s);
    }
    ge.server_link_s = server.path_s();
    wire_s.push_back(push_wire + pull_wire);
    ge.iteration_wire_s = ge.pull_path_s + ge.push_path_s;
    // The cache modes (sim/worker/cache.cpp) fetch a copy that serves for up to s clocks more (s:
    // the policy's clock bound), the round trip of a push and the reply overlapping the compute:
    // lazy, a worker computes s + 1 clocks from a copy, then waits for the fetch that rides on
    // its last push: C + RT / (s + 1) a clock; eager, the server sends a copy at every clock,
    // which a worker needs s clocks later: max(C, RT / s) (s = 0: C + RT).
    const CacheMode cache = s.policy.cache_mode();
    if (cache != CacheMode::kPullEveryIteration && e.transfers_timed) {
      const double bound = static_cast<double>(s.policy.clock_bound().value_or(0));
      const double rt = ge.pull_path_s + ge.push_path_s;
      ge.iteration_wire_s = cache == CacheMode::kLazy ? rt / (bound + 1)
                            : bound > 0               ? std::max(0.0, rt / bound - ge.compute_s)
                                                      : rt;
    }
    unloaded.push_back(ge.compute_s + ge.iteration_wire_s);
    e.groups.push_back(ge);
  }
  return server;
}

// Off the star (sim/network/flows.hpp) the links are shared max-min fair, so a worker whose
// message finds others on a shared link waits for them however the link orders them: the
// cluster is a closed queueing network, each worker cycling through its unloaded iteration
// (compute, latencies, its messages at its own path's rate) and the shared links (LinkLoad's
// stations, one per link direction, each processor sharing). Its throughput by approximate mean
// value analysis (Schweitzer 1979; Lazowska et al., "Quantitative System Performance" (1984),
// chapter 7), one class per LinkLoad::Class (workers of a group with the same traffic), in a
// fluid form: a message's parts cross their links at once, so it adds to its unloaded time the
// longest wait of a part, its demand at a station (seconds at the link's full bandwidth) times
// the others there (the station's mean queue less this worker's share of its class's, as
// Schweitzer); a part's queue at a station is its class's throughput times demand times (1 +
// others). Where one link is offered more than it carries, its queue grows to the workers that
// cross it and the pace tends to its capacity. Then the groups that fall into step (below).
// Returns each group's iteration time.
std::vector<double> shared_links_pace(const Scenario& s, const RunEstimate& e, const LinkLoad& l,
                                      const std::vector<double>& unloaded) {
  const auto groups = static_cast<size_t>(l.groups);
  const auto stations = static_cast<size_t>(l.stations);
  const auto classes = l.classes.size();
  std::vector<double> count(groups), base(groups), total(stations, 0.0), next_total(stations, 0.0);
  for (size_t g = 0; g < groups; ++g) {
    count[g] = s.cluster.workers[g].count;
    base[g] = unloaded[g] - (e.groups[g].push_path_s - e.groups[g].latency_s) -
              (e.groups[g].pull_path_s - e.groups[g].latency_s);
  }
  // By class: its unloaded iteration, its pace, and its queue at each of its stations.
  std::vector<double> own(classes), cycle(classes);
  std::vector<std::vector<double>> queue(classes);
  for (size_t c = 0; c < classes; ++c) {
    const auto& k = l.classes[c];
    own[c] = e.groups[static_cast<size_t>(k.group)].compute_s + k.push_path_s + k.pull_path_s;
    cycle[c] = own[c];
    queue[c].assign(k.stations.size(), 0.0);
  }
  // A staleness bound holds every worker to the slowest one's pace (estimate_pace), so the
  // others' load on the links is at that pace too.
  const auto hold_to_slowest = [&](std::vector<double>& p) {
    if (e.bounded && !p.empty()) std::fill(p.begin(), p.end(), *std::max_element(p.begin(), p.end()));
  };
  // Each station's utilisation at the classes' current pace, into `into`; returns the largest.
  const auto utilisation = [&](std::vector<double>& into) {
    std::fill(into.begin(), into.end(), 0.0);
    for (size_t c = 0; c < classes; ++c) {
      const auto& k = l.classes[c];
      for (size_t i = 0; i < k.stations.size(); ++i)
        into[static_cast<size_t>(k.stations[i])] += k.count / cycle[c] * (k.push_s[i] + k.pull_s[i]);
    }
    return stations ? *std::max_element(into.begin(), into.end()) : 0.0;
  };
  // Start where no link carries more than its bandwidth (every class slowed alike until the
  // busiest is full), each station's queue that of a processor-sharing queue at its utilisation
  // (rho / (1 - rho), at most the workers that cross it), shared by the classes as their load.
  hold_to_slowest(cycle);
  if (const double busiest = utilisation(next_total); busiest > 1)
    for (double& c : cycle) c *= busiest;
  std::vector<double> crossing(stations, 0.0);
  for (const auto& k : l.classes)
    for (int32_t st : k.stations) crossing[static_cast<size_t>(st)] += k.count;
  utilisation(next_total);
  for (size_t st = 0; st < stations; ++st) {
    const double rho = std::min(next_total[st], 1.0);
    total[st] = rho < 1 ? std::min(rho / (1 - rho), crossing[st]) : crossing[st];
  }
  for (size_t c = 0; c < classes; ++c) {
    const auto& k = l.classes[c];
    for (size_t i = 0; i < k.stations.size(); ++i) {
      const auto st = static_cast<size_t>(k.stations[i]);
      queue[c][i] = next_total[st] > 0
                        ? total[st] * k.count / cycle[c] * (k.push_s[i] + k.pull_s[i]) / next_total[st]
                        : 0.0;
    }
  }
  // Damped fixed-point steps, at most a fixed number (deterministic; converged to 1e-9 relative
  // well before the last on every shipped scenario) and at most about 1e7 station visits in all
  // (a topology of a million hosts: a few dozen steps, the capacity check below then holds).
  size_t visits = 1;
  for (const auto& k : l.classes) visits += k.stations.size();
  const int steps = static_cast<int>(std::clamp<size_t>(10'000'000 / visits, 20, 2000));
  bool converged = false;
  std::vector<double> before(classes);
  for (int step = 0; step < steps && !converged; ++step) {
    double moved = 0;
    before = cycle;
    std::fill(next_total.begin(), next_total.end(), 0.0);
    for (size_t c = 0; c < classes; ++c) {
      const auto& k = l.classes[c];
      double push = 0, pull = 0;  // the longest wait of a part of each
      for (size_t i = 0; i < k.stations.size(); ++i) {
        const auto st = static_cast<size_t>(k.stations[i]);
        const double others = total[st] - queue[c][i] / k.count;
        push = std::max(push, k.push_s[i] * others);
        pull = std::max(pull, k.pull_s[i] * others);
        queue[c][i] = k.count / cycle[c] * (k.push_s[i] + k.pull_s[i]) * (1 + others);
        next_total[st] += queue[c][i];
      }
      cycle[c] = 0.5 * (cycle[c] + own[c] + push + pull);
    }
    hold_to_slowest(cycle);  // then how far each moved, held as it is
    for (size_t c = 0; c < classes; ++c) moved = std::max(moved, std::abs(cycle[c] - before[c]) / before[c]);
    for (size_t st = 0; st < stations; ++st) {
      moved = std::max(moved, std::abs(next_total[st] - total[st]) / std::max(next_total[st], 1e-300));
      total[st] = next_total[st];
    }
    converged = step > 0 && moved < 1e-9;
  }
  // No link carries more than its bandwidth. A saturated link shared by very many workers
  // converges slowly (its queue grows by a factor of its utilisation, near 1, per step): where
  // the steps stop short, the pace is the saturated link's (every class slowed or sped alike
  // until the busiest station is just full), which the analysis tends to as the workers grow.
  if (const double busiest = utilisation(next_total); busiest > 1 || (!converged && busiest > 0))
    for (double& c : cycle) c *= busiest;
  // Each group's iteration: its workers' count over their throughput.
  std::vector<double> rate(groups, 0.0), pace(groups);
  for (size_t c = 0; c < classes; ++c)
    rate[static_cast<size_t>(l.classes[c].group)] += l.classes[c].count / cycle[c];
  for (size_t g = 0; g < groups; ++g) pace[g] = count[g] / rate[g];
  // A group whose compute times do not vary (jitter none or constant) and whose workers are
  // alike on the links (LinkLoad::alike) falls into step: its workers pull at once and push at
  // once, and parts that start together end together, so each direction waits for the whole
  // group's messages on its busiest link (slowed by the other groups' share of that link) while
  // the other direction idles. Measured: without jitter the runs follow this, with lognormal
  // jitter of sigma 0.1 the mean value analysis above (REFERENCE.md, "The estimate").
  std::vector<char> in_step(groups, 0);
  for (size_t g = 0; g < groups; ++g) {
    const auto& grp = s.cluster.workers[g];
    const JitterType jitter = (grp.jitter ? *grp.jitter : s.cluster.jitter).type;
    in_step[g] = (jitter == JitterType::kNone || jitter == JitterType::kConstant) && l.alike[g];
  }
  const std::vector<double> mixed = pace;
  for (int step = 0; step < 200 && std::find(in_step.begin(), in_step.end(), 1) != in_step.end(); ++step) {
    double moved = 0;
    for (size_t g = 0; g < groups; ++g) {
      if (!in_step[g]) continue;
      double push = e.groups[g].push_path_s - e.groups[g].latency_s;
      double pull = e.groups[g].pull_path_s - e.groups[g].latency_s;
      for (size_t k = 0; k < stations; ++k) {
        double others = 0;  // the other groups' share of the link
        for (size_t h = 0; h < groups; ++h)
          if (h != g) others += count[h] / pace[h] * (l.push_s[k * groups + h] + l.pull_s[k * groups + h]);
        const double stretch = 1 / (1 - std::min(others, 0.9));
        push = std::max(push, l.push_s[k * groups + g] * count[g] * stretch);
        pull = std::max(pull, l.pull_s[k * groups + g] * count[g] * stretch);
      }
      const double next = 0.5 * (pace[g] + std::max(mixed[g], base[g] + push + pull));
      moved = std::max(moved, std::abs(next - pace[g]) / pace[g]);
      pace[g] = next;
    }
    hold_to_slowest(pace);
    if (moved < 1e-9) break;
  }
  return pace;
}

// A lock-step clock off the star: every worker pulls at once, computes, pushes; the pulls share
// the links and end together with the busiest link's share of them, then the slowest worker's
// compute, then the pushes likewise. Returns the clock's length.
double shared_links_clock(const RunEstimate& e, const LinkLoad& l) {
  const auto groups = static_cast<size_t>(l.groups);
  double compute = 0, latency = 0, push = 0, pull = 0;
  for (const auto& ge : e.groups) {
    compute = std::max(compute, ge.slowest_compute_s);
    latency = std::max(latency, ge.latency_s);
    push = std::max(push, ge.push_path_s - ge.latency_s);
    pull = std::max(pull, ge.pull_path_s - ge.latency_s);
  }
  for (size_t k = 0; k < static_cast<size_t>(l.stations); ++k) {
    double in = 0, out = 0;
    for (size_t g = 0; g < groups; ++g) {
      in += l.push_s[k * groups + g] * e.groups[g].count;
      out += l.pull_s[k * groups + g] * e.groups[g].count;
    }
    push = std::max(push, in);
    pull = std::max(pull, out);
  }
  return compute + 2 * latency + push + pull;
}

// Sets each group's iteration time (lock-step clock, shared pace of a saturated server link, or
// unloaded; a staleness bound holds all to the slowest); returns the bounded workers' head start
// in iterations.
double estimate_pace(const Scenario& s, RunEstimate& e, const std::vector<double>& unloaded,
                     const ServerLink& server, const LinkLoad* flows) {
  const double n = s.cluster.worker_count();
  const double offered = e.server_offered;
  if (flows && e.lockstep) {
    const double clock = shared_links_clock(e, *flows);
    for (auto& ge : e.groups) ge.iteration_s = clock;
  } else if (flows) {
    const std::vector<double> pace = shared_links_pace(s, e, *flows, unloaded);
    for (size_t g = 0; g < e.groups.size(); ++g) e.groups[g].iteration_s = pace[g];
  } else if (e.lockstep) {
    // Every clock: the pulls leave the server one after the other (in worker order, each P on
    // the link out; the k-th starts at (k - 1) P and takes its path), each worker computes and
    // pushes; the pushes queue on the link in (each U) from their first byte; the clock ends
    // with the last push through.
    double clock = 0, position = 0, first_push = std::numeric_limits<double>::infinity();
    for (const auto& ge : e.groups) {
      position += ge.count;  // the group's last worker
      clock = std::max(
          clock, (position - 1) * server.pull_s + ge.pull_path_s + ge.slowest_compute_s + ge.push_path_s);
      first_push = std::min(first_push, ge.pull_path_s + ge.compute_s + ge.latency_s);
    }
    clock = std::max(clock, first_push + n * server.push_s);
    for (auto& ge : e.groups) ge.iteration_s = clock;
  } else if (offered > 1) {
    // Saturated: find the shared pace T* with sum count / max(T_g, T*) = 1 / S (bisection).
    // S is the busier direction's time per iteration.
    const double busy = server.busy_s();
    double lo = 0, hi = n * busy + *std::max_element(unloaded.begin(), unloaded.end());
    for (int i = 0; i < 200; ++i) {
      const double mid = 0.5 * (lo + hi);
      double rate = 0;
      for (size_t g = 0; g < e.groups.size(); ++g) rate += e.groups[g].count / std::max(unloaded[g], mid);
      (rate * busy > 1 ? lo : hi) = mid;
    }
    for (size_t g = 0; g < e.groups.size(); ++g) e.groups[g].iteration_s = std::max(unloaded[g], hi);
  } else {
    for (size_t g = 0; g < e.groups.size(); ++g) e.groups[g].iteration_s = unloaded[g];
  }
  // A staleness bound lets no worker get more than a bounded number of clocks ahead: in the long
  // run every worker goes at the slowest one's pace, after a head start of at most the bound.
  double head_start = 0;
  if (e.bounded && !e.lockstep) {
    double slowest = 0;
    for (const auto& ge : e.groups) slowest = std::max(slowest, ge.iteration_s);
    const double bound = static_cast<double>(
        s.policy.staleness + ((traits(s.policy.type).fields & kPolicyRange) ? s.policy.range : 0));
    for (auto& ge : e.groups) {
      if (ge.iteration_s < slowest) head_start += ge.count * bound;
      ge.iteration_s = slowest;
    }
  }
  return head_start;
}

// Shares of an average worker's time: computing, on its own link, and at the server (queueing
// included; lock-step: the clock's serial transfers).
void estimate_shares(RunEstimate& e, const std::vector<double>& wire_s, const ServerLink& server, double n) {
  const double offered = e.server_offered;
  double computing = 0, worker_part = 0, server_part = 0;
  for (size_t g = 0; g < e.groups.size(); ++g) {
    auto& ge = e.groups[g];
    e.iterations_per_s += ge.count / ge.iteration_s;
    ge.compute_share = ge.compute_s / ge.iteration_s;
    ge.worker_link_utilisation = wire_s[g] / ge.iteration_s;
    computing += ge.count * ge.compute_share;
    worker_part += ge.count * ge.worker_link_s / ge.iteration_s;
    server_part +=
        ge.count *
        (e.lockstep ? n * server.busy_s() : std::max(0.0, ge.iteration_s - ge.compute_s - ge.worker_link_s)) /
        ge.iteration_s;
  }
  e.server_utilisation = std::min(1.0, e.iterations_per_s * server.busy_s());
  e.communication_share = 1 - computing / n;
  if (!e.transfers_timed || (offered <= 1 && computing >= worker_part && computing >= server_part))
    e.bottleneck = "compute";
  else if (offered > 1 || server_part >= worker_part)
    e.bottleneck = "server link";
  else
    e.bottleneck = "worker link";
}

// All-reduce (sim/policies/allreduce.hpp): one iteration's collective, unloaded. The ring's
// 2 (R - 1) steps each move a chunk of S / R over its slowest hop: the hop's narrowest link plus
// its latency (Patarasuk and Yuan 2009); on the star a hop is the slower of two worker links and
// the sender's latency. Hierarchical: the ring of the racks' leaders, plus the gather to and the
// broadcast from each leader, its rack's gradients one after the other on the leader's route.
double allreduce_s(const Scenario& s, double bytes) {
  const auto& net = s.cluster.network;
  const int32_t n = s.cluster.worker_count();
  if (net.topology == TopologyKind::kStar) {
    double bw = std::numeric_limits<double>::infinity(), lat = 0;
    for (const auto& g : s.cluster.workers) {
      bw = std::min(bw, g.bandwidth_gbps.value_or(net.bandwidth_gbps));
      lat = std::max(lat, g.latency_us.value_or(net.latency_us) * 1e-6);
    }
    return n > 1 ? 2.0 * (n - 1) * (transfer_s(bytes / n, bw) + lat) : 0.0;
  }
  const Topology t = build_topology(s);
  const double overhead = net.message_overhead_us * 1e-6;
  // A hop's time for `b` bytes from worker a's host to worker b's.
  const auto hop = [&](int32_t a, int32_t b, double size) {
    const auto r = t.route(t.worker_host[static_cast<size_t>(a)], t.worker_host[static_cast<size_t>(b)]);
    double bw = std::numeric_limits<double>::infinity();
    for (int32_t ch : r) bw = std::min(bw, t.channel_gbps(ch));
    return (std::isfinite(bw) ? transfer_s(size, bw) : 0.0) + t.route_latency(r).seconds() + overhead;
  };
  std::vector<int32_t> ring;
  double gather = 0;
  if (s.policy.all_reduce() == AllReduce::kHierarchical) {
    std::vector<std::vector<int32_t>> racks;  // by rack: its workers, the leader first
    for (int32_t w = 0; w < n; ++w) {
      const auto r = static_cast<size_t>(t.rack_of(t.worker_host[static_cast<size_t>(w)]));
      if (r >= racks.size()) racks.resize(r + 1);
      racks[r].push_back(w);
    }
    for (const auto& members : racks) {
      if (members.empty()) continue;
      ring.push_back(members[0]);
      double rack_s = 0;
      for (size_t m = 1; m < members.size(); ++m) rack_s += hop(members[m], members[0], bytes);
      gather = std::max(gather, rack_s);
    }
  } else {
    for (int32_t w = 0; w < n; ++w) ring.push_back(w);
  }
  const auto r = static_cast<int32_t>(ring.size());
  double slowest = 0;
  for (int32_t i = 0; r > 1 && i < r; ++i)
    slowest = std::max(slowest,
                       hop(ring[static_cast<size_t>(i)], ring[static_cast<size_t>((i + 1) % r)], bytes / r));
  return 2.0 * (r - 1) * slowest + 2 * gather;
}

// All-reduce's pace: every worker's iteration is the slowest compute plus the collective; no server.
void estimate_allreduce_pace(const Scenario& s, RunEstimate& e, std::vector<double>& wire_s) {
  const double ring_s = e.transfers_timed ? allreduce_s(s, e.push_bytes) : 0.0;
  double slowest = 0;
  for (const auto& ge : e.groups) slowest = std::max(slowest, ge.slowest_compute_s);
  for (size_t g = 0; g < e.groups.size(); ++g) {
    auto& ge = e.groups[g];
    ge.worker_link_s = ring_s;
    ge.server_link_s = 0;
    ge.pull_path_s = 0;
    ge.push_path_s = ring_s;
    ge.latency_s = 0;
    ge.iteration_s = slowest + ring_s;
    wire_s[g] = ring_s;
  }
  e.server_offered = 0;
}

// Off the star (sim/network/flows.hpp) every flow start and end recomputes the max-min rates: a
// pass over every flow slot (advance, finish times) and the channels in use, so an iteration
// costs its recomputes times the flows in flight. Its recomputes: the push's and the pull's
// start, and their ends: one each where the parts of a message (one per shard) share one
// bottleneck, the shards' links, and so end together; one per part where a link between
// switches is nearly as busy (kSplitFrom, kSplitAll: a part across it is held there now and
// then). Flows in flight: each worker's parts while it is not computing.
// Measured (issue 46; time-only ASP, 4 shards spread over racks of 32, CPU seconds, counters in
// the flow network): 300, 1,000 and 3,000 workers, 4.0, 4.0 and 4.6 recomputes per update over
// 1,199, 3,958 and 11,414 slots, 11.7, 13.1 and 11.0 ns per slot and recompute; 64 and 100
// workers (4 racks, uplinks 0.8 as busy as a shard's link), 7.1 and 9.1 recomputes.
double flow_passes_per_iteration(const Scenario& s, const RunEstimate& e, const LinkLoad& load) {
  const double shards = s.cluster.servers;
  double in_flight = 0;
  for (const auto& ge : e.groups)
    in_flight += ge.count * shards * std::clamp(1.0 - ge.compute_s / ge.iteration_s, 0.0, 1.0);
  const double busy = load.shard_link_s > 0 ? load.switch_link_s / load.shard_link_s : 0.0;
  const double apart = std::clamp((busy - kSplitFrom) / (kSplitAll - kSplitFrom), 0.0, 1.0);
  const double ends = 1 + (shards - 1) * apart;
  return (2 + 2 * ends) * in_flight;
}

}  // namespace

RunEstimate estimate_run(const Scenario& s, int threads) { return estimate_run(s, plan_run(s), threads); }

RunEstimate estimate_run(const Scenario& s, const RunPlan& plan, int threads) {
  RunEstimate e;
  estimate_messages(s, plan, e);
  const bool math = traits(s.model.type).has_math;
  const double batch = s.optimizer.batch_size;

  const auto& c = s.cluster;
  const double n = c.worker_count();
  e.transfers_timed = c.order != Order::kUniform;
  e.bounded = s.policy.uses_staleness();
  e.lockstep = plan.lockstep;
  std::vector<double> unloaded, wire_s;
  ServerLink server = estimate_groups(s, e, unloaded, wire_s);

  // The pace: each group's iteration time. The offered load is the busier direction's.
  double offered = 0;
  for (size_t g = 0; g < e.groups.size(); ++g) offered += e.groups[g].count * server.busy_s() / unloaded[g];
  e.server_offered = offered;
  double head_start = 0;
  const auto all_reduce = s.policy.all_reduce();
  // Off the star, the parameter server's traffic on the topology's links (link_load).
  std::optional<LinkLoad> load;
  if (c.network.topology != TopologyKind::kStar && !all_reduce)
    load = link_load(s, e.push_bytes, e.pull_bytes);
  if (load && e.transfers_timed)  // the messages' unloaded paths on the topology's own links and routes
    for (size_t g = 0; g < e.groups.size(); ++g) {
      auto& ge = e.groups[g];
      ge.push_path_s = load->push_path_s[g];
      ge.pull_path_s = load->pull_path_s[g];
      ge.latency_s = load->latency_s[g];
      ge.worker_link_s = load->push_wire_s[g] + load->pull_wire_s[g] + 2 * ge.latency_s;
      ge.iteration_wire_s = ge.push_path_s + ge.pull_path_s;
      wire_s[g] = load->push_wire_s[g] + load->pull_wire_s[g];
      unloaded[g] = ge.compute_s + ge.iteration_wire_s;
    }
  if (all_reduce) {
    estimate_allreduce_pace(s, e, wire_s);
    offered = 0;
    server = ServerLink{};
  } else {
    head_start = estimate_pace(s, e, unloaded, server, load && e.transfers_timed ? &*load : nullptr);
  }
  estimate_shares(e, wire_s, server, n);
  // The server's own work: a shard applies one push at a time (WorkerCore::server_apply), so the
  // pushes are at most one per apply time; a pace the network allows beyond that is the apply's.
  if (!all_reduce && e.transfers_timed && c.network.server_apply_ns_per_parameter > 0) {
    e.apply_s = e.push_bytes / 4.0 / c.servers * c.network.server_apply_ns_per_parameter * 1e-9;
    e.apply_offered = e.iterations_per_s * e.apply_s;
    if (e.apply_offered > 1) {
      e.server_utilisation /= e.apply_offered;  // the links carry the apply's pace
      e.iterations_per_s = 1 / e.apply_s;
      e.bottleneck = "server apply";
    }
  }

  const double per_update = traits(s.policy.type).averages_pushes
                                ? std::max(1.0, std::floor(n / static_cast<double>(s.policy.n)))
                                : 1.0;
  e.updates_per_s = e.iterations_per_s / per_update;
  e.virtual_time_s = s.stop.virtual_time_s;
  double end = std::numeric_limits<double>::infinity();
  if (s.stop.virtual_time_s) end = *s.stop.virtual_time_s;
  if (s.stop.max_updates) end = std::min(end, static_cast<double>(*s.stop.max_updates) / e.updates_per_s);
  e.expected_end_s = end;
  e.expected_updates = std::floor(end * e.updates_per_s + head_start / per_update + 1e-9);
  if (all_reduce && std::isfinite(end) &&
      !e.groups.empty())  // every worker's update at the end of a collective
    e.expected_updates = std::floor(end / e.groups.front().iteration_s + 1e-9) * n / per_update;
  if (s.stop.max_updates) e.expected_updates = std::min<double>(e.expected_updates, *s.stop.max_updates);

  const double iterations = e.expected_updates * per_update;
  const double evals = std::isfinite(end) && s.eval.every_s > 0 ? std::floor(end / s.eval.every_s) + 1 : 1;
  const double math_flops =
      math ? iterations * batch * e.math_flops_per_sample +
                 evals * evaluated_test_rows(s.data, s.eval.test_samples) * e.math_flops_per_sample / 3
           : 0.0;
  e.gflops = math ? assumed_gflops(s.model.type) : 0.0;
  e.math_gflop = math_flops / 1e9;
  e.events = iterations * (all_reduce ? 2 * n : kEventsPerIteration);
  // The engine's events, and on the star each push's and pull's parts past the first (one per shard).
  e.part_events = all_reduce || c.network.topology != TopologyKind::kStar
                      ? 0.0
                      : iterations * 2 * (c.servers - 1) * kShardPartEvents;
  if (load && e.transfers_timed) {
    // Off the star the figures name the busiest link (by its time per round of every worker's
    // push and pull), offered at the unloaded pace and busy at the estimated one; workers wait on
    // the shared links (the analysis above) and the bottleneck is that link once the waiting
    // outweighs computing and the worker's own link.
    double unloaded_rate = 0, waiting = 0, computing = 0, own_link = 0;
    for (size_t g = 0; g < e.groups.size(); ++g) {
      const auto& ge = e.groups[g];
      unloaded_rate += ge.count / unloaded[g];
      waiting += ge.count * (ge.iteration_s - unloaded[g]) / ge.iteration_s;
      computing += ge.count * ge.compute_share;
      own_link += ge.count * ge.worker_link_s / ge.iteration_s;
    }
    e.loaded_link = "link " + load->busiest;
    e.server_offered = load->round_s * unloaded_rate / n;
    e.server_utilisation = std::min(1.0, load->round_s * e.iterations_per_s / n);
    offered = e.server_offered;
    if (e.server_offered > 1 || (waiting >= computing && waiting >= own_link))
      e.bottleneck = e.loaded_link;
    else if (e.bottleneck == "server link")
      e.bottleneck = own_link >= computing ? "worker link" : "compute";
  }
  if (load) {
    e.topology = describe_link_load(s, *load);
    if (e.transfers_timed) e.flow_passes = iterations * flow_passes_per_iteration(s, e, *load);
  }
  e.wall_s = (math ? e.math_gflop / e.gflops : 0.0) + e.work_events() * kAssumedEventUs * 1e-6;
  e.memory = estimate_memory(s, plan, e, threads);

  if (e.communication_share > 0.9)
    e.warnings.push_back(fmt::format(
        "communication takes {:.1f}% of an average worker's time ({} bound): the devices' speeds (the GPU "
        "mix) and the policy's staleness bound barely change the pace, so a comparison of policies here "
        "mostly measures the network; raise cluster.network.bandwidth_gbps or server_bandwidth_gbps, add "
        "servers, or use a larger optimizer.batch_size",
        100 * e.communication_share, e.bottleneck));
  if (e.transfers_timed && offered > 1)
    e.warnings.push_back(
        fmt::format("the {} is offered {:.1f}x what it carries: workers queue for it and the cluster runs at "
                    "its pace ({:.3g} iterations per second), whatever the workers' devices",
                    escaped(e.loaded_link), offered, e.iterations_per_s));
  if (!std::isfinite(end))
    e.warnings.push_back("the run has no virtual-time or update limit: it stops only at its target");
  return e;
}

void check_feasible(const Scenario& s, const RunEstimate& e, const std::string& origin) {
  const double end = e.expected_end_s;
  if (!std::isfinite(end) || end <= 0) return;
  const auto fail = [&](const char* field, const std::string& why) {
    throw ScenarioError(fmt::format("{}: {}: {}; nothing was run", origin, field, why));
  };
  // The clock's last instant, in seconds (int64 nanoseconds).
  const double clock_s = static_cast<double>(std::numeric_limits<int64_t>::max()) / 1e9;
  if (end >= clock_s)
    fail(s.stop.virtual_time_s ? "/stop/virtual_time_s" : "/stop/max_updates",
         fmt::format("the estimate ends this run at about {:.3g} s of virtual time ({:.3g} updates at {:.3g} "
                     "per virtual second), past the simulator's clock range ({:.3g} s, about 292 years): "
                     "lower stop.max_updates or set stop.virtual_time_s",
                     end, e.expected_updates, e.updates_per_s, clock_s));
  const double evaluations = std::floor(end / s.eval.every_s);
  if (evaluations >= static_cast<double>(kMaxEvaluations))
    fail("/eval/every_s",
         fmt::format(
             "{:g} s until the expected end at about {:.3g} s of virtual time is {:.3g} evaluations; at "
             "most {}: raise eval.every_s",
             s.eval.every_s, end, evaluations, kMaxEvaluations));
}

std::string RunEstimate::describe() const {
  std::string out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& ge = groups[g];
    out += fmt::format(
        "estimate: group {} ({} x {}): iteration {} = compute {} + transfers {} (worker link {}, server "
        "link {}, at once{}){}; computing {:.1f}% of the time, worker link busy {:.1f}%\n",
        g, ge.count, escaped(ge.profile), seconds(ge.iteration_s), seconds(ge.compute_s),
        seconds(ge.iteration_wire_s), seconds(ge.worker_link_s), seconds(ge.server_link_s),
        ge.iteration_wire_s < (ge.pull_path_s + ge.push_path_s) * 0.9999
            ? fmt::format("; a cached copy: of each round trip of {} the part the compute does not hide",
                          seconds(ge.pull_path_s + ge.push_path_s))
            : "",
        ge.iteration_s > (ge.compute_s + ge.iteration_wire_s) * 1.0001
            ? fmt::format(" + waiting {}", seconds(ge.iteration_s - ge.compute_s - ge.iteration_wire_s))
            : "",
        100 * ge.compute_share, 100 * ge.worker_link_utilisation);
  }
  out += fmt::format("estimate: messages: push {}, pull {}{}\n", bytes(push_bytes), bytes(pull_bytes),
                     transfers_timed ? "" : " (cluster.order uniform: transfers take no time)");
  out += fmt::format(
      "estimate: {} busy {:.1f}% (offered {:.2f}x its capacity); communication {:.1f}% of a "
      "worker's time; bottleneck: {}{}\n",
      escaped(loaded_link), 100 * server_utilisation, server_offered, 100 * communication_share,
      escaped(bottleneck), lockstep ? " (lock-step policy: every clock waits for the slowest worker)" : "");
  if (apply_s > 0)
    out += fmt::format(
        "estimate: server apply {} a push on each shard (cluster.network.server_apply_ns_per_parameter), "
        "busy {:.1f}% "
        "(offered {:.2f}x what it applies)\n",
        seconds(apply_s), 100 * std::min(1.0, iterations_per_s * apply_s), apply_offered);
  out += fmt::format("estimate: {:.4g} updates per virtual second; about {:.0f} updates by t={} s{}\n",
                     updates_per_s, expected_updates, fmt::format("{:g}", expected_end_s),
                     lockstep  ? ""
                     : bounded ? " (the staleness bound holds every worker to the slowest one's pace)"
                               : "");
  out += fmt::format(
      "estimate: wall time about {} on this machine (math at {} {:.3g} GFLOP/s, {:.3g} us per "
      "event{}{}); memory about {}\n",
      seconds(wall_s), rate_note.empty() ? "an assumed" : "a measured", gflops, event_us,
      flow_passes > 0 ? fmt::format(", {:.3g} events and {:.3g} passes over flows in flight (each flow "
                                    "start and end recomputes every rate), {:.3g} events' worth",
                                    events, flow_passes, flow_passes * kFlowPassEvents)
                      : "",
      rate_note.empty() ? ": assumed, not measured" : "; " + rate_note, memory.describe());
  out += topology;
  for (const auto& w : warnings) out += "estimate: warning: " + w + "\n";
  return out;
}

std::string RunEstimate::one_line() const {
  return fmt::format(
      "estimate: {} bound ({:.0f}% communication), ~{:.0f} updates by t={:g} s, ~{} wall{}, {}{}", bottleneck,
      100 * communication_share, expected_updates, expected_end_s, seconds(wall_s),
      rate_note.empty() ? "" : " (measured rate)", format_bytes(memory.total()),
      warnings.empty() ? ""
                       : "; warning: " + warnings.front().substr(0, warnings.front().find(':')) +
                             " (stalesim validate says more)");
}

}  // namespace stalesim
