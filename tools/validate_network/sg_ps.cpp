// stalesim_sg_check: the SimGrid side of tools/validate-network (issue 33 point 5), built only
// when SimGrid (libsimgrid-dev, S4U) is installed.
//
//   stalesim_sg_check run SCENARIO --traffic ps|ring --out DIR
//     Loads SCENARIO with stalesim's own loader and builds its topology (the same hosts, links,
//     placement and routes as stalesim: sim/scenario/topology.hpp), writes it as a SimGrid platform
//     (DIR/platform.xml: one host per topology host, each link SPLITDUPLEX so that each direction
//     has the link's bandwidth to itself, one explicit route per host pair the traffic uses), and
//     runs the same time-only traffic as S4U actors until stop.virtual_time_s:
//     - ps (policy asp or bsp): worker w waits its pull request's latency (the longest route from
//       it to a shard, as stalesim's first request), then repeats: pull (one flow from each
//       shard's host, the bytes split as stalesim splits them), compute iteration_ms, push (one
//       flow to each shard), and the iteration ends when every part has arrived. Under bsp the
//       next pull waits until every worker's push has arrived (a barrier).
//     - ring (chunked ring all-reduce, Patarasuk and Yuan, J. Parallel Distrib. Comput. 2009):
//       per iteration a worker computes, then does 2(N-1) steps; at step k it sends one chunk
//       (S/N bytes, the first S mod N chunks one byte more) to its successor (worker w+1 mod N)
//       as one flow; its step k+1 send starts once it has received step k's chunk and its own
//       step k send has ended; the iteration ends when its last send has ended and its last chunk
//       has arrived. The scenario's policy is read as asp, so that a build without
//       "allreduce-ring" loads the same file.
//     Writes DIR/gradients.csv (virtual_time_s,worker: one row per iteration end, as stalesim's
//     --record gradients) and DIR/sg.log.
//
//   stalesim_sg_check compare STALESIM_GRADIENTS SIMGRID_GRADIENTS --name NAME --json FILE
//     Per worker, the mean iteration time between its first and last recorded iteration end
//     ((last - first) / (count - 1): the first iteration's start-up is left out) in each, their
//     relative difference, and the mean over workers; prints one Markdown row and writes FILE.
//     Exit 0 within 5% (the mean and every worker), 1 past it.
//
// SimGrid's model is configured as plain fluid max-min sharing (CM02 with its correction factors at
// 1, weight-S 0, no TCP window bound, no cross traffic) solved in full at every change
// (network/optim:Full: SimGrid 3.32's default lazy update gave a sharing that is not max-min on the
// racks check); REFERENCE.md "Validation against SimGrid" says why and what remains different.
// --cfg NAME:VALUE (run, repeatable) sets more SimGrid options after these, for diagnosis.
// DIR/messages.csv: each part's start and arrival (ps traffic), to find where two runs part.
// Exit: 0 done, 1 compare past 5%, 2 bad input or usage, 3 the simulation failed.

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/algorithms.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/topology.hpp"

namespace sg4 = simgrid::s4u;
using stalesim::Topology;

namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the actors share: the cluster, as read from the scenario, and the iteration ends.
struct Traffic {
  Topology topo;
  std::vector<sg4::Host*> host;   // by topology host
  std::vector<double> compute_s;  // by worker
  std::vector<double> request_s;  // by worker: the longest route latency to a shard
  int64_t bytes = 0;              // one push or pull, all shards together
  bool bsp = false;
  double stop_s = 0;
  sg4::BarrierPtr barrier;
  // Ring: chunks each worker has received (all iterations), and its wake-up.
  std::vector<int64_t> received;
  std::vector<sg4::MutexPtr> mutex;
  std::vector<sg4::ConditionVariablePtr> arrived;
  std::vector<std::pair<double, int32_t>> ends;                  // (time, worker)
  std::string messages = "start_s,arrive_s,worker,kind,peer\n";  // each part (messages.csv)
};

int64_t split(int64_t bytes, int64_t parts, int64_t k) { return bytes / parts + (k < bytes % parts ? 1 : 0); }

std::string host_id(const Topology& t, int32_t h) {
  std::string s = t.host_name(h);
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

// DIR/platform.xml: the topology's hosts and links, and the routes of `pairs` (host to host).
std::string platform_xml(const Topology& t, const std::set<std::pair<int32_t, int32_t>>& pairs) {
  std::string x =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<!-- Written by stalesim_sg_check (tools/validate-network) from a stalesim scenario's topology. -->\n"
      "<platform version=\"4.1\">\n<zone id=\"cluster\" routing=\"Full\">\n";
  for (size_t h = 0; h < t.hosts.size(); ++h)
    x += fmt::format("  <host id=\"{}\" speed=\"1Gf\"/>\n", host_id(t, static_cast<int32_t>(h)));
  for (size_t i = 0; i < t.links.size(); ++i) {
    const auto& l = t.links[i];
    x += fmt::format(
        "  <link id=\"l{}\" bandwidth=\"{:.17g}Bps\" latency=\"{}ns\" sharing_policy=\"SPLITDUPLEX\"/>"
        "  <!-- {} - {} -->\n",
        i, l.gbps * 1e9 / 8, l.latency.ns(), t.nodes[static_cast<size_t>(l.a)].name,
        t.nodes[static_cast<size_t>(l.b)].name);
  }
  for (const auto& [from, to] : pairs) {
    x += fmt::format("  <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\">", host_id(t, from), host_id(t, to));
    for (int32_t ch : t.route(from, to))  // channel 2i: link i from its a end (UP), 2i + 1 back
      x += fmt::format("<link_ctn id=\"l{}\" direction=\"{}\"/>", ch / 2, ch % 2 == 0 ? "UP" : "DOWN");
    x += "</route>\n";
  }
  return x + "</zone>\n</platform>\n";
}

void ps_worker(Traffic& tr, int32_t w) {
  const auto shards = static_cast<int64_t>(tr.topo.shard_host.size());
  sg4::Host* me = tr.host[static_cast<size_t>(tr.topo.worker_host[static_cast<size_t>(w)])];
  auto transfer = [&](bool push) {
    std::vector<sg4::CommPtr> comms;
    for (int64_t k = 0; k < shards; ++k) {
      sg4::Host* shard = tr.host[static_cast<size_t>(tr.topo.shard_host[static_cast<size_t>(k)])];
      const auto part = static_cast<uint64_t>(split(tr.bytes, shards, k));
      comms.push_back(push ? sg4::Comm::sendto_async(me, shard, part)
                           : sg4::Comm::sendto_async(shard, me, part));
    }
    const double start = sg4::Engine::get_clock();
    std::vector<int64_t> shard_of(comms.size());
    for (size_t k = 0; k < comms.size(); ++k) shard_of[k] = static_cast<int64_t>(k);
    while (!comms.empty()) {  // each part's arrival, for messages.csv
      const auto done = static_cast<size_t>(sg4::Comm::wait_any(comms));
      tr.messages += fmt::format("{:.12f},{:.12f},{},{},{}\n", start, sg4::Engine::get_clock(), w,
                                 push ? "push" : "pull", shard_of[done]);
      comms.erase(comms.begin() + static_cast<std::ptrdiff_t>(done));
      shard_of.erase(shard_of.begin() + static_cast<std::ptrdiff_t>(done));
    }
  };
  sg4::this_actor::sleep_for(tr.request_s[static_cast<size_t>(w)]);
  for (;;) {
    transfer(false);
    sg4::this_actor::sleep_for(tr.compute_s[static_cast<size_t>(w)]);
    transfer(true);
    tr.ends.emplace_back(sg4::Engine::get_clock(), w);
    if (tr.bsp) tr.barrier->wait();
  }
}

void ring_worker(Traffic& tr, int32_t w) {
  const auto n = static_cast<int32_t>(tr.topo.worker_host.size());
  const int32_t next = (w + 1) % n;
  sg4::Host* me = tr.host[static_cast<size_t>(tr.topo.worker_host[static_cast<size_t>(w)])];
  sg4::Host* succ = tr.host[static_cast<size_t>(tr.topo.worker_host[static_cast<size_t>(next)])];
  const int64_t steps = 2 * int64_t{n - 1};
  auto wait_received = [&](int64_t count) {
    std::unique_lock lock(*tr.mutex[static_cast<size_t>(w)]);
    while (tr.received[static_cast<size_t>(w)] < count) tr.arrived[static_cast<size_t>(w)]->wait(lock);
  };
  for (int64_t iter = 0;; ++iter) {
    sg4::this_actor::sleep_for(tr.compute_s[static_cast<size_t>(w)]);
    for (int64_t k = 0; k < steps; ++k) {
      if (k > 0) wait_received(iter * steps + k);  // step k-1's chunk is in
      // Reduce-scatter step k sends chunk (w - k) mod n; all-gather step k' = k - (n-1) sends
      // chunk (w + 1 - k') mod n.
      const int64_t chunk = ((k < n - 1 ? w - k : w + 1 - (k - (n - 1))) % n + n) % n;
      sg4::Comm::sendto(me, succ, static_cast<uint64_t>(split(tr.bytes, n, chunk)));
      std::unique_lock lock(*tr.mutex[static_cast<size_t>(next)]);
      ++tr.received[static_cast<size_t>(next)];
      tr.arrived[static_cast<size_t>(next)]->notify_all();
    }
    wait_received((iter + 1) * steps);
    tr.ends.emplace_back(sg4::Engine::get_clock(), w);
  }
}

int run(int argc, char** argv) {
  std::string scenario, traffic = "ps", out;
  std::vector<std::string> extra_cfg;  // --cfg NAME:VALUE, after ours (for diagnosis)
  std::vector<char*> sg_args{argv[0]};
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--traffic" || a == "--out") && i + 1 < argc)
      (a == "--traffic" ? traffic : out) = argv[++i];
    else if (a == "--cfg" && i + 1 < argc)
      extra_cfg.emplace_back(argv[++i]);
    else if (a.rfind("--", 0) == 0)
      throw UsageError(fmt::format("unknown option '{}'", a));
    else if (scenario.empty())
      scenario = a;
    else
      throw UsageError(fmt::format("one scenario only ('{}' and '{}')", scenario, a));
  }
  if (scenario.empty() || out.empty()) throw UsageError("run needs SCENARIO and --out DIR");
  if (traffic != "ps" && traffic != "ring")
    throw UsageError(fmt::format("--traffic '{}': ps or ring", traffic));
  const bool ring = traffic == "ring";
  std::vector<stalesim::Override> sets;
  if (ring) sets.push_back({"policy.type", "asp"});
  const stalesim::Scenario s = stalesim::load_scenario_file(scenario, sets);
  auto refuse = [&](const std::string& why) {
    throw stalesim::ScenarioError(fmt::format("{}: {}", scenario, why));
  };
  if (s.model.type != stalesim::ModelType::kTimeOnly || !s.model.cost_derived())
    refuse("/model: the check runs time-only models with their declared parameters");
  if (s.cluster.network.topology == stalesim::TopologyKind::kStar)
    refuse(
        "/cluster/network/topology: star is stalesim's FIFO model; write the star as a graph (one switch)");
  if (s.cluster.network.message_overhead_us != 0) refuse("/cluster/network/message_overhead_us: must be 0");
  if (!s.stop.virtual_time_s) refuse("/stop/virtual_time_s: required");
  if (!ring && s.policy.type != stalesim::PolicyType::kAsp && s.policy.type != stalesim::PolicyType::kBsp)
    refuse("/policy/type: the parameter-server traffic is checked under asp or bsp");
  Traffic tr;
  tr.topo = stalesim::build_topology(s);
  tr.bytes = s.model.parameters * 4;  // the time-only model's wire_bytes (models/model.hpp)
  tr.bsp = !ring && s.policy.type == stalesim::PolicyType::kBsp;
  tr.stop_s = *s.stop.virtual_time_s;
  for (size_t g = 0; g < s.cluster.workers.size(); ++g) {
    const auto& grp = s.cluster.workers[g];
    if (!grp.iteration_ms) refuse(fmt::format("/cluster/workers/{}/iteration_ms: required", g));
    // stalesim's compute time: iteration_ms in whole nanoseconds (sim/worker/compute_time.cpp).
    for (int32_t i = 0; i < grp.count; ++i)
      tr.compute_s.push_back(std::llround(*grp.iteration_ms * 1e6) * 1e-9);
  }
  const auto workers = static_cast<int32_t>(tr.compute_s.size());
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (int32_t w = 0; w < workers; ++w) {
    const int32_t wh = tr.topo.worker_host[static_cast<size_t>(w)];
    if (ring) {
      pairs.insert({wh, tr.topo.worker_host[static_cast<size_t>((w + 1) % workers)]});
      continue;
    }
    int64_t longest = 0;
    for (int32_t sh : tr.topo.shard_host) {
      pairs.insert({wh, sh});
      pairs.insert({sh, wh});
      longest = std::max(longest, tr.topo.route_latency(tr.topo.route(wh, sh)).ns());
    }
    tr.request_s.push_back(static_cast<double>(longest) * 1e-9);
  }
  std::filesystem::create_directories(out);
  const std::string xml_path = out + "/platform.xml";
  if (!(std::ofstream(xml_path) << platform_xml(tr.topo, pairs)))
    throw std::runtime_error(fmt::format("cannot write {}", xml_path));

  int sg_argc = 1;
  sg4::Engine e(&sg_argc, sg_args.data());
  // Plain fluid max-min: CM02 without its corrections (see the header).
  for (const char* cfg :
       {"network/model:CM02", "network/latency-factor:1", "network/bandwidth-factor:1", "network/weight-S:0",
        "network/TCP-gamma:0", "network/crosstraffic:0", "network/optim:Full"})
    sg4::Engine::set_config(cfg);
  for (const auto& cfg : extra_cfg) sg4::Engine::set_config(cfg);
  e.load_platform(xml_path);
  for (size_t h = 0; h < tr.topo.hosts.size(); ++h)
    tr.host.push_back(e.host_by_name(host_id(tr.topo, static_cast<int32_t>(h))));
  if (tr.bsp) tr.barrier = sg4::Barrier::create(static_cast<unsigned>(workers));
  tr.received.assign(static_cast<size_t>(workers), 0);
  for (int32_t w = 0; w < workers; ++w) {
    tr.mutex.push_back(sg4::Mutex::create());
    tr.arrived.push_back(sg4::ConditionVariable::create());
  }
  sg4::Host* first = tr.host[0];
  for (int32_t w = 0; w < workers; ++w) {
    sg4::Host* at = tr.host[static_cast<size_t>(tr.topo.worker_host[static_cast<size_t>(w)])];
    sg4::Actor::create(fmt::format("worker{}", w), at, [&tr, w, ring] {
      sg4::Actor::self()->daemonize();  // ends when the clock actor does
      ring ? ring_worker(tr, w) : ps_worker(tr, w);
    });
  }
  sg4::Actor::create("clock", first, [&tr] { sg4::this_actor::sleep_until(tr.stop_s); });
  e.run();
  std::sort(tr.ends.begin(), tr.ends.end());
  std::string csv = "virtual_time_s,worker\n";
  for (const auto& [t, w] : tr.ends)
    if (t <= tr.stop_s) csv += fmt::format("{:.12f},{}\n", t, w);
  std::ofstream(out + "/gradients.csv") << csv;
  std::ofstream(out + "/messages.csv") << tr.messages;
  std::printf("stalesim_sg_check: %s (%s): %zu iteration ends in %g s; wrote %s/gradients.csv\n",
              scenario.c_str(), traffic.c_str(), tr.ends.size(), tr.stop_s, out.c_str());
  return 0;
}

// Per worker: (first end, last end, count) from a gradients.csv (virtual_time_s first, worker second).
std::map<int64_t, std::vector<double>> read_ends(const std::string& path) {
  std::string error;
  const auto text = stalesim::read_regular_file(path, stalesim::kMaxSummaryBytes, error);
  if (!text) throw stalesim::ScenarioError(fmt::format("{}: {}", path, error));
  std::map<int64_t, std::vector<double>> ends;
  std::istringstream in(*text);
  std::string line;
  std::getline(in, line);
  if (line.rfind("virtual_time_s,worker", 0) != 0)
    throw stalesim::ScenarioError(fmt::format("{}: expected a header 'virtual_time_s,worker,...'", path));
  while (std::getline(in, line)) {
    double t = 0;
    long long w = 0;
    if (std::sscanf(line.c_str(), "%lf,%lld", &t, &w) != 2)
      throw stalesim::ScenarioError(fmt::format("{}: bad row '{}'", path, line));
    ends[w].push_back(t);
  }
  return ends;
}

int compare(int argc, char** argv) {
  std::vector<std::string> files;
  std::string name = "scenario", json_path;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--name" || a == "--json") && i + 1 < argc)
      (a == "--name" ? name : json_path) = argv[++i];
    else if (a.rfind("--", 0) == 0)
      throw UsageError(fmt::format("unknown option '{}'", a));
    else
      files.push_back(a);
  }
  if (files.size() != 2 || json_path.empty())
    throw UsageError("compare needs STALESIM_GRADIENTS SIMGRID_GRADIENTS --json FILE");
  const auto a = read_ends(files[0]);
  const auto b = read_ends(files[1]);
  nlohmann::json j = {{"name", name}, {"stalesim", files[0]}, {"simgrid", files[1]}};
  nlohmann::json per = nlohmann::json::array();
  double sum_a = 0, sum_b = 0, worst = 0;
  int32_t worst_worker = -1;
  if (a.size() != b.size())
    throw stalesim::ScenarioError(fmt::format("{} and {}: not the same workers", files[0], files[1]));
  for (const auto& [w, ta] : a) {
    const auto it = b.find(w);
    if (it == b.end() || ta.size() < 2 || it->second.size() < 2)
      throw stalesim::ScenarioError(
          fmt::format("worker {}: fewer than two iteration ends in one of the runs", w));
    const auto& tb = it->second;
    const double ma = (ta.back() - ta.front()) / static_cast<double>(ta.size() - 1);
    const double mb = (tb.back() - tb.front()) / static_cast<double>(tb.size() - 1);
    const double diff = ma / mb - 1;
    if (worst_worker < 0 || std::abs(diff) > std::abs(worst))
      worst = diff, worst_worker = static_cast<int32_t>(w);
    sum_a += ma;
    sum_b += mb;
    per.push_back({{"worker", w},
                   {"stalesim_ms", ma * 1e3},
                   {"simgrid_ms", mb * 1e3},
                   {"diff", diff},
                   {"iterations_stalesim", ta.size()},
                   {"iterations_simgrid", tb.size()}});
  }
  const double n = static_cast<double>(a.size());
  const double mean_diff = sum_a / sum_b - 1;
  const bool pass = std::abs(mean_diff) <= 0.05 && std::abs(worst) <= 0.05;
  j["workers"] = a.size();
  j["stalesim_ms"] = sum_a / n * 1e3;
  j["simgrid_ms"] = sum_b / n * 1e3;
  j["diff"] = mean_diff;
  j["worst_worker"] = worst_worker;
  j["worst_worker_diff"] = worst;
  j["pass"] = pass;
  j["per_worker"] = per;
  std::ofstream(json_path) << j.dump(1) << "\n";
  std::printf("| %s | %zu | %.4f | %.4f | %+.2f%% | %+.2f%% (worker %d) | %s |\n", name.c_str(), a.size(),
              sum_b / n * 1e3, sum_a / n * 1e3, mean_diff * 100, worst * 100, worst_worker,
              pass ? "yes" : "no");
  return pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "run") return run(argc, argv);
    if (mode == "compare") return compare(argc, argv);
    if (mode == "-h" || mode == "--help") {
      std::printf(
          "usage: stalesim_sg_check run SCENARIO --traffic ps|ring --out DIR\n"
          "       stalesim_sg_check compare STALESIM_GRADIENTS SIMGRID_GRADIENTS --name NAME --json FILE\n"
          "The SimGrid side of tools/validate-network (see its --help).\n");
      return 0;
    }
    throw UsageError("expected 'run' or 'compare' (--help)");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "stalesim_sg_check: %s\n", e.what());
    return 2;
  } catch (const stalesim::ScenarioError& e) {
    std::fprintf(stderr, "stalesim_sg_check: %s\n", e.what());
    return 2;
  } catch (const stalesim::TopologyError& e) {
    std::fprintf(stderr, "stalesim_sg_check: %s: %s\n", e.path.c_str(), e.problem.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stalesim_sg_check: %s\n", e.what());
    return 3;
  }
}
