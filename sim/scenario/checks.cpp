// The cross-field checks of the loader: rules between fields that no single field can state
// (evaluation count, dataset and model, workloads, compute, policy and order, cluster and schedule).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "models/cuda/cuda_model.hpp"
#include "models/device_profile.hpp"
#include "sim/scenario/detail.hpp"
#include "sim/scenario/topology_kinds.hpp"

namespace stalesim::scenario_detail {

namespace {

// "ssp with a lazy cache", "essp": the policy in words for messages.
std::string policy_phrase(const Scenario& s) {
  return fmt::format("{}{}", to_string(s.policy.type),
                     s.policy.cache_mode() == CacheMode::kLazy ? " with a lazy cache" : "");
}

// mf and lda (issue 6): each with its own dataset, and lda's count deltas with no learning rule.
void check_workloads(const Scenario& s) {
  const auto t = to_string(s.model.type);
  const std::string ds(to_string(s.data.dataset));
  const std::string want(traits(s.model.type).dataset);
  if (!want.empty() && ds != want)
    fail("/data/dataset", fmt::format("model.type \"{}\" needs dataset \"{}\", got \"{}\"", t, want, ds));
  for (const auto& [type, name] : enum_names(ModelType{}))
    if (want.empty() && traits(type).dataset == ds)
      fail("/data/dataset",
           fmt::format("\"{}\" goes with model.type \"{}\" (model.type is \"{}\")", ds, name, t));
  if (want.empty()) return;
  if (s.compute.backend != Backend::kCpu)
    fail("/compute/backend", fmt::format("model.type \"{}\" runs on the cpu backend only, got \"{}\"", t,
                                         enum_name(s.compute.backend)));
  if (s.model.type == ModelType::kLstsq) return;  // any rule, momentum and policy
  if (s.model.type == ModelType::kMf) {
    const auto& r = s.data.ratings;
    if (static_cast<double>(r.train + r.test) > static_cast<double>(r.rows) * r.cols / 2)
      fail("/data/ratings/train", fmt::format("train + test = {} entries, but at most rows x cols / 2 = {} "
                                              "distinct cells may be drawn",
                                              r.train + r.test, static_cast<int64_t>(r.rows) * r.cols / 2));
  } else {
    const auto& c = s.data.corpus;
    if (c.min_length > c.max_length)
      fail("/data/corpus/min_length",
           fmt::format("expected <= max_length ({}), got {}", c.max_length, c.min_length));
    if (int64_t{c.documents} * c.max_length >= (int64_t{1} << 24))
      fail("/data/corpus/documents", fmt::format("documents x max_length = {} must be below 2^24 = 16777216: "
                                                 "the counts are integers held exactly in float32",
                                                 int64_t{c.documents} * c.max_length));
    if (s.optimizer.rule != RuleType::kSgd)
      fail("/optimizer/rule",
           fmt::format("model.type \"lda\" pushes count deltas that the server adds as is; "
                       "no learning rule applies, so only \"sgd\" (the plain sum) is "
                       "allowed, got \"{}\"",
                       to_string(s.optimizer.rule)));
    if (s.optimizer.momentum != 0.0)
      fail("/optimizer/momentum",
           fmt::format("model.type \"lda\" adds count deltas as is: momentum must be 0, "
                       "got {}",
                       s.optimizer.momentum));
    if (traits(s.policy.type).averages_pushes)
      fail("/policy/type",
           "model.type \"lda\" adds every count delta as is; softsync averages updates, "
           "which would break the counts: use bsp, asp, ssp, essp, dssp or vap");
  }
}

// Groups' precisions and jitter, the schedule, and crash handling (issue 5).
void check_cluster(const Scenario& s, int64_t workers) {
  const auto& c = s.cluster;
  for (size_t g = 0; g < c.workers.size(); ++g) {
    const auto& grp = c.workers[g];
    if (grp.device && find_profile(grp.profile))
      fail(fmt::format("/cluster/workers/{}/device", g),
           fmt::format("applies to a profile file only; \"{}\" is built-in: remove device", grp.profile));
    if (grp.device) {
      if (auto problem = profile_problem(*grp.device))  // what(): "<field>: <problem>"
        fail(fmt::format("/cluster/workers/{}/device{}", g, problem->field()),
             std::string(problem->what()).substr(problem->field().size() + 2));
    } else if (!find_profile(grp.profile)) {
      fail(fmt::format("/cluster/workers/{}/profile", g),
           fmt::format("the profile file \"{}\" was not read (a scenario given as JSON, not as a "
                       "file, must carry its figures in device)",
                       grp.profile));
    }
    const std::optional<DeviceProfile> profile = grp.device ? grp.device : find_profile(grp.profile);
    if (profile && peak_tflops(*profile, grp.precision) <= 0)
      fail(fmt::format("/cluster/workers/{}/precision", g),
           fmt::format("profile \"{}\" has no {} peak; use \"fp32\"{}", grp.profile, enum_name(grp.precision),
                       profile->peak_fp16_tflops > 0 ? " or \"fp16\"" : ""));
    if (grp.jitter && grp.jitter->type == JitterType::kTrace && grp.jitter->path.empty())
      fail(fmt::format("/cluster/workers/{}/jitter/path", g), "required when jitter.type is \"trace\"");
  }
  const bool crashes = std::any_of(c.schedule.begin(), c.schedule.end(),
                                   [](const ScheduleEvent& e) { return e.kind == ScheduleKind::kCrash; });
  for (size_t i = 0; i < c.schedule.size(); ++i) {
    const auto& e = c.schedule[i];
    const std::string at = fmt::format("/cluster/schedule/{}", i);
    if (e.group.has_value() == !e.workers.empty())
      fail(at, "give either workers (a list of worker ids) or group (a group index), not both or neither");
    if (e.group && *e.group >= static_cast<int64_t>(c.workers.size()))
      fail(at + "/group",
           fmt::format("expected a group index in [0, {}], got {}", c.workers.size() - 1, *e.group));
    for (size_t k = 0; k < e.workers.size(); ++k)
      if (e.workers[k] >= workers)
        fail(fmt::format("{}/workers/{}", at, k),
             fmt::format("expected a worker id in [0, {}], got {}", workers - 1, e.workers[k]));
    if (e.until_s && *e.until_s <= e.at_s)
      fail(at + "/until_s", fmt::format("expected a time after at_s ({}), got {}", e.at_s, *e.until_s));
    if ((e.kind == ScheduleKind::kPause || e.kind == ScheduleKind::kDrift) && !e.until_s)
      fail(at + "/until_s", fmt::format("required for a {}", enum_name(e.kind)));
  }
  if (!c.schedule.empty() && c.order == Order::kUniform)
    fail("/cluster/schedule",
         "cluster.order \"uniform\" gives every iteration the same time; a schedule "
         "needs cluster.order \"timed\"");
  if (crashes && !s.policy.pulls_every_clock())
    fail("/cluster/schedule",
         fmt::format("crash events are supported with the policies that fetch every clock "
                     "({}), got {}",
                     pull_mode_policies(), policy_phrase(s)));
}

// The topology kinds whose hosts stand in racks, quoted: "racks".
std::string rack_kinds() {
  std::string out;
  for (const auto& e : enum_names(TopologyKind{}))
    if (topology_kind(e.value).racks) out += fmt::format("{}\"{}\"", out.empty() ? "" : " or ", e.name);
  return out;
}

}  // namespace

// Off the star (issue 33): the parameter server's pull-every-clock traffic only, links set by the
// topology, and the topology itself sound (build_topology names the element at fault).
void check_topology(const Scenario& s) {
  const auto& n = s.cluster.network;
  const TopologyKindRow& kind = topology_kind(n.topology);
  if (s.policy.all_reduce() == AllReduce::kHierarchical && !kind.racks)
    fail("/policy/type",
         fmt::format("\"allreduce-hierarchical\" reduces inside each rack and needs cluster.network.topology "
                     "{} (topology is \"{}\"); use \"allreduce-ring\" on a {}",
                     rack_kinds(), enum_name(n.topology), enum_name(n.topology)));
  if (!kind.build) return;
  if ((!s.policy.pulls_every_clock() || s.policy.type == PolicyType::kVap) && !s.policy.all_reduce())
    fail("/cluster/network/topology",
         fmt::format("\"{}\" carries the traffic of policies that fetch every clock ({}) and of all-reduce, "
                     "got {}; use topology \"star\"",
                     enum_name(n.topology), pull_mode_policies(), policy_phrase(s)));
  if (n.latency_sigma > 0)
    fail("/cluster/network/latency_sigma",
         fmt::format("latency jitter applies to the star topology only (topology is \"{}\")",
                     enum_name(n.topology)));
  for (size_t i = 0; i < s.cluster.workers.size(); ++i) {
    const auto& g = s.cluster.workers[i];
    for (const auto& [key, given] : {std::pair{"latency_us", g.latency_us.has_value()},
                                     std::pair{"bandwidth_gbps", g.bandwidth_gbps.has_value()},
                                     std::pair{"latency_sigma", g.latency_sigma.has_value()}})
      if (given)
        fail(fmt::format("/cluster/workers/{}/{}", i, key),
             fmt::format("a group's own link applies to the star topology only; with topology \"{}\" "
                         "the topology sets every link",
                         enum_name(n.topology)));
  }
  try {
    (void)build_topology(s);
  } catch (const TopologyError& e) {
    fail(e.path, e.problem);
  }
}

// Rules between fields that no single field can state.
void check_cross_fields(const Scenario& s) {
  if (s.stop.virtual_time_s && *s.stop.virtual_time_s / s.eval.every_s >= 1e7)
    fail("/eval/every_s", fmt::format("{:g} s over stop.virtual_time_s {:g} s is {:g} evaluations; at most "
                                      "10000000: raise eval.every_s",
                                      s.eval.every_s, *s.stop.virtual_time_s,
                                      std::floor(*s.stop.virtual_time_s / s.eval.every_s)));
  if (!has_math(s) && has_data(s))
    fail("/data/dataset", fmt::format("a time-only model takes no dataset, got \"{}\"; remove "
                                      "/data/dataset (or set it to \"none\")",
                                      to_string(s.data.dataset)));
  if (has_math(s) && !has_data(s))
    fail("/data/dataset", fmt::format("\"none\" needs model.type \"time-only\" (model.type is \"{}\")",
                                      to_string(s.model.type)));
  check_workloads(s);
  if (s.model.type == ModelType::kCnn && s.data.dataset == DatasetType::kBlobs &&
      !cnn_takes(s.data.blobs.features))
    fail("/data/blobs/features",
         fmt::format(
             "the cnn takes S x S images with S a multiple of 4 and >= 12 (e.g. 784 = 28 x 28), got {}",
             s.data.blobs.features));
  if (s.compute.timing == Timing::kMeasured && s.compute.backend != Backend::kCuda)
    fail("/compute/timing", fmt::format("\"measured\" times iterations on the GPU and needs compute.backend "
                                        "\"cuda\" (compute.backend is \"{}\")",
                                        enum_name(s.compute.backend)));
  if (s.compute.timing == Timing::kMeasured && !s.model.cost_derived())
    fail("/compute/timing", fmt::format("\"measured\" times the math model on the GPU, and model.cost \"{}\" "
                                        "times it as another architecture: use one or the other",
                                        s.model.cost));
  if (s.compute.timing == Timing::kMeasured && s.cluster.order == Order::kUniform)
    fail("/compute/timing",
         "\"measured\" times each iteration on the GPU, which cluster.order \"uniform\" "
         "(every iteration takes the same time) does not use: use cluster.order \"timed\"");
  if (s.compute.backend == Backend::kCuda && !cuda_built())
    fail("/compute/backend",
         "\"cuda\" needs a stalesim built with CUDA, and this one was built without "
         "(configure with -DSTALESIM_CUDA=ON on a machine with the CUDA toolkit)");
  if (policy_has(s, kPolicyN) && s.policy.n > s.cluster.worker_count())
    fail("/policy/n", fmt::format("expected an integer in [1, {}] (the number of workers), got {}",
                                  s.cluster.worker_count(), s.policy.n));
  const bool fetches_every_clock = s.policy.pulls_every_clock();
  if (s.cluster.order == Order::kUniform && !fetches_every_clock)
    fail("/cluster/order", fmt::format("uniform order needs a policy that fetches every clock ({}), got {}",
                                       pull_mode_policies(), policy_phrase(s)));
  if (traits(s.optimizer.rule).gates_transfers && !fetches_every_clock)
    fail("/optimizer/rule", fmt::format("{} decides each fetch and push itself; use it with a policy that "
                                        "fetches every clock ({})",
                                        to_string(s.optimizer.rule), pull_mode_policies()));
  if (!has_math(s) && s.policy.type == PolicyType::kVap)
    fail("/policy/type",
         "vap bounds the values of updates, which the time-only model does not "
         "compute; use a softmax, mlp or cnn model, or another policy");
  int64_t workers = 0;
  for (const auto& g : s.cluster.workers) workers += g.count;
  if (workers > kMaxWorkers)
    fail("/cluster/workers", fmt::format("{} workers in total; at most {}", workers, kMaxWorkers));
  check_cluster(s, workers);
  check_topology(s);
  const auto& stop = s.stop;
  if (stop.at_target && !stop.target_accuracy)
    fail("/stop/at_target", "at_target is true but target_accuracy is not set");
  if (!stop.virtual_time_s && !stop.max_updates && !stop.at_target)
    fail("/stop",
         "the run would never stop: set virtual_time_s, max_updates, or target_accuracy "
         "with at_target");
}

}  // namespace stalesim::scenario_detail
