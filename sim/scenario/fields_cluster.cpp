// The field table's rows for the cluster (sim/scenario/fields.hpp): worker groups (profile, device,
// count, links, jitter), order, servers, crash handling, the schedule, the network and the jitter.
#include <string>
#include <vector>

#include "models/device_profile.hpp"
#include "sim/scenario/table.hpp"

namespace stalesim::scenario_detail {

namespace {

// cluster.workers: the groups, each group's profile and its profile file's figures.
std::vector<FieldInfo> worker_group_fields() {
  using F = FieldType;
  std::string profile_list;
  for (const auto& p : builtin_profiles()) profile_list += (profile_list.empty() ? "" : ", ") + p.name;
  return {
      {.path = "/cluster", .type = F::kObject, .doc = "Workers, network and compute jitter."},
      {.path = "/cluster/workers",
       .type = F::kObjectArray,
       .min_items = 1,
       .max_items = kMaxWorkers,
       .required = true,
       .doc = "Worker groups; at most 1000000 workers in total.",
       .set = [](Scenario& s, size_t, const json& v) { s.cluster.workers.assign(v.size(), WorkerGroup{}); },
       .get = [](const Scenario& s,
                 size_t) { return json(std::vector<json>(s.cluster.workers.size(), json::object())); }},
      {.path = "/cluster/workers/*/profile",
       .type = F::kString,
       .min_length = 1,
       .required = true,
       .doc = "Device profile of the group's workers: a built-in name (" + profile_list +
              "; stalesim profiles), or a profile file: a path ending in .json (e.g. written by "
              "stalesim calibrate), relative to the scenario file's folder when the file names it and "
              "to the working directory when --set or --grid does, or NAME for NAME.json in "
              "$STALESIM_PROFILE_DIR.",
       .check = check_profile,
       .set = set_item<&ClusterSpec::workers, &WorkerGroup::profile>,
       .get = get_item<&ClusterSpec::workers, &WorkerGroup::profile>},
      {.path = "/cluster/workers/*/device",
       .type = F::kObject,
       .doc = "The profile file's figures, copied in when the scenario is loaded so that the manifest "
              "reproduces without the file (keys as in the file); absent for a built-in profile.",
       .get =
           [](const Scenario& s, size_t i) {
             return s.cluster.workers[i].device ? json::object() : json(json::value_t::discarded);
           }},
      {.path = "/cluster/workers/*/device/name",
       .type = F::kString,
       .doc = "As the profile file's name.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::name>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::name>},
      {.path = "/cluster/workers/*/device/description",
       .type = F::kString,
       .doc = "As the profile file's description.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::description>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::description>},
      {.path = "/cluster/workers/*/device/peak_fp32_tflops",
       .type = F::kNumber,
       .unit = "TFLOP/s",
       .minimum = 0,
       .exclusive_minimum = true,
       .doc = "Peak FP32 throughput.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::peak_fp32_tflops>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::peak_fp32_tflops>},
      {.path = "/cluster/workers/*/device/peak_fp16_tflops",
       .type = F::kNumber,
       .unit = "TFLOP/s",
       .minimum = 0,
       .doc = "Peak FP16 (Tensor Core, dense) throughput; 0: not offered.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::peak_fp16_tflops>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::peak_fp16_tflops>},
      {.path = "/cluster/workers/*/device/peak_bf16_tflops",
       .type = F::kNumber,
       .unit = "TFLOP/s",
       .minimum = 0,
       .doc = "Peak BF16 (Tensor Core, dense) throughput; 0: not offered.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::peak_bf16_tflops>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::peak_bf16_tflops>},
      {.path = "/cluster/workers/*/device/memory_bandwidth_gbs",
       .type = F::kNumber,
       .unit = "GB/s",
       .minimum = 0,
       .doc = "Memory bandwidth.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::memory_bandwidth_gbs>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::memory_bandwidth_gbs>},
      {.path = "/cluster/workers/*/device/efficiency",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .doc = "Fraction of peak that training kernels sustain.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::efficiency>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::efficiency>},
      {.path = "/cluster/workers/*/device/overhead_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .doc = "Fixed per-iteration cost.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::overhead_us>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::overhead_us>},
      {.path = "/cluster/workers/*/device/source",
       .type = F::kString,
       .doc = "Where the figures come from.",
       .set = set_group_part<&WorkerGroup::device, &DeviceProfile::source>,
       .get = get_group_part<&WorkerGroup::device, &DeviceProfile::source>},
  };
}

// cluster.workers: each group's count, precision, iteration time and links.
std::vector<FieldInfo> group_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/cluster/workers/*/count",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = kMaxWorkers,
       .default_value = d.cluster.workers[0].count,
       .doc = "Workers in the group.",
       .set = set_item<&ClusterSpec::workers, &WorkerGroup::count>,
       .get = get_item<&ClusterSpec::workers, &WorkerGroup::count>},
      {.path = "/cluster/workers/*/precision",
       .type = F::kString,
       .allowed = enum_name_list<Precision>(),
       .default_value = to_json_value(d.cluster.workers[0].precision),
       .doc = "Which peak of the profile times the group's compute (fp16/bf16: Tensor Core peaks, "
              "where the profile has them).",
       .set = set_item<&ClusterSpec::workers, &WorkerGroup::precision>,
       .get = get_item<&ClusterSpec::workers, &WorkerGroup::precision>},
      {.path = "/cluster/workers/*/iteration_ms",
       .type = F::kNumber,
       .unit = "ms",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .exclusive_minimum = true,
       .maximum_is_limit = true,
       .nullable = true,
       .doc = "Explicit time of one iteration before jitter and schedule (e.g. measured for the cost "
              "architecture); null: batch FLOPs / (peak x efficiency) + overhead.",
       .set = set_item<&ClusterSpec::workers, &WorkerGroup::iteration_ms>,
       .get = get_item<&ClusterSpec::workers, &WorkerGroup::iteration_ms>},
      {.path = "/cluster/workers/*/latency_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .nullable = true,
       .doc = "One-way latency of this group's links; null: cluster.network.latency_us.",
       .set = set_item<&ClusterSpec::workers, &WorkerGroup::latency_us>,
       .get = get_item<&ClusterSpec::workers, &WorkerGroup::latency_us>},
      {.path = "/cluster/workers/*/bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .nullable = true,
       .doc = "Bandwidth of this group's links; null: cluster.network.bandwidth_gbps.",
       .set = set_item<&ClusterSpec::workers, &WorkerGroup::bandwidth_gbps>,
       .get = get_item<&ClusterSpec::workers, &WorkerGroup::bandwidth_gbps>},
      {.path = "/cluster/workers/*/latency_sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .nullable = true,
       .doc = "Latency jitter of this group's links; null: cluster.network.latency_sigma.",
       .set = set_item<&ClusterSpec::workers, &WorkerGroup::latency_sigma>,
       .get = get_item<&ClusterSpec::workers, &WorkerGroup::latency_sigma>},
  };
}

// cluster.workers.N.jitter: a group's own jitter.
std::vector<FieldInfo> group_jitter_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/cluster/workers/*/jitter",
       .type = F::kObject,
       .doc = "This group's compute jitter, replacing cluster.jitter for it (keys as there; "
              "defaults as there, not the cluster's values). Per worker: a group of one.",
       .get =
           [](const Scenario& s, size_t i) {
             return s.cluster.workers[i].jitter ? json::object() : json(json::value_t::discarded);
           }},
      {.path = "/cluster/workers/*/jitter/type",
       .type = F::kString,
       .allowed = enum_name_list<JitterType>(),
       .default_value = to_json_value(d.cluster.jitter.type),
       .doc = "As cluster.jitter.type.",
       .set = set_group_part<&WorkerGroup::jitter, &JitterSpec::type>,
       .get = get_group_part<&WorkerGroup::jitter, &JitterSpec::type>},
      {.path = "/cluster/workers/*/jitter/sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .default_value = d.cluster.jitter.sigma,
       .doc = "As cluster.jitter.sigma.",
       .set = set_group_part<&WorkerGroup::jitter, &JitterSpec::sigma>,
       .get = get_group_part<&WorkerGroup::jitter, &JitterSpec::sigma>},
      {.path = "/cluster/workers/*/jitter/cv",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxCv,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.cv,
       .doc = "As cluster.jitter.cv.",
       .set = set_group_part<&WorkerGroup::jitter, &JitterSpec::cv>,
       .get = get_group_part<&WorkerGroup::jitter, &JitterSpec::cv>},
      {.path = "/cluster/workers/*/jitter/factor",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxFactor,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.factor,
       .doc = "As cluster.jitter.factor.",
       .set = set_group_part<&WorkerGroup::jitter, &JitterSpec::factor>,
       .get = get_group_part<&WorkerGroup::jitter, &JitterSpec::factor>},
      {.path = "/cluster/workers/*/jitter/shift",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.cluster.jitter.shift,
       .doc = "As cluster.jitter.shift.",
       .set = set_group_part<&WorkerGroup::jitter, &JitterSpec::shift>,
       .get = get_group_part<&WorkerGroup::jitter, &JitterSpec::shift>},
      {.path = "/cluster/workers/*/jitter/path",
       .type = F::kString,
       .default_value = d.cluster.jitter.path,
       .doc = "As cluster.jitter.path.",
       .set = set_group_part<&WorkerGroup::jitter, &JitterSpec::path>,
       .get = get_group_part<&WorkerGroup::jitter, &JitterSpec::path>},
      {.path = "/cluster/workers/*/jitter/scale",
       .type = F::kString,
       .allowed = enum_name_list<TraceScale>(),
       .default_value = to_json_value(d.cluster.jitter.scale),
       .doc = "As cluster.jitter.scale.",
       .set = set_group_part<&WorkerGroup::jitter, &JitterSpec::scale>,
       .get = get_group_part<&WorkerGroup::jitter, &JitterSpec::scale>},
  };
}

// cluster: order, servers, crash handling and the schedule.
std::vector<FieldInfo> schedule_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/cluster/order",
       .type = F::kString,
       .allowed = enum_name_list<Order>(),
       .default_value = to_json_value(d.cluster.order),
       .doc = "timed: cost and network models time every step; uniform: order-only mode of the "
              "FASGD paper's simulator (equal iteration times, next worker drawn uniformly among "
              "those not blocked, no transfer time).",
       .set = set_m<&Scenario::cluster, &ClusterSpec::order>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::order>},
      {.path = "/cluster/servers",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 65536,
       .default_value = d.cluster.servers,
       .doc = "Server shards: the parameters are split evenly over them, each has its own link "
              "(server_bandwidth_gbps), and a push or pull is done when all its shard transfers are.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::servers>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::servers>},
      {.path = "/cluster/on_crash",
       .type = F::kString,
       .allowed = enum_name_list<OnCrash>(),
       .default_value = to_json_value(d.cluster.on_crash),
       .doc = "wait: synchronous policies wait for a crashed worker to rejoin; drop: it leaves the "
              "slowest-clock computation until it rejoins, at the then minimum clock.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::on_crash>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::on_crash>},
      {.path = "/cluster/schedule",
       .type = F::kObjectArray,
       .max_items = kMaxScheduleEvents,
       .default_value = json::array(),
       .doc = "Timed events: slow a worker down, pause it, crash it (and rejoin), or let its speed drift.",
       .set = [](Scenario& s, size_t,
                 const json& v) { s.cluster.schedule.assign(v.size(), ScheduleEvent{}); },
       .get = [](const Scenario& s,
                 size_t) { return json(std::vector<json>(s.cluster.schedule.size(), json::object())); }},
      {.path = "/cluster/schedule/*/kind",
       .type = F::kString,
       .allowed = enum_name_list<ScheduleKind>(),
       .required = true,
       .doc = "slow: compute takes factor x longer over [at_s, until_s); pause: no compute progress "
              "over it; crash: in-flight work is lost, rejoins at until_s; drift: the factor rises "
              "linearly from 1 at at_s to factor at until_s (judged at each iteration's start).",
       .set = set_item<&ClusterSpec::schedule, &ScheduleEvent::kind>,
       .get = get_item<&ClusterSpec::schedule, &ScheduleEvent::kind>},
      {.path = "/cluster/schedule/*/workers",
       .type = F::kIntegerArray,
       .minimum = 0,
       .maximum = kMaxWorkers - 1,
       .max_items = kMaxWorkers,
       .default_value = json::array(),
       .doc = "Worker ids it applies to (groups numbered in order from 0); or give group.",
       .set = set_item<&ClusterSpec::schedule, &ScheduleEvent::workers>,
       .get = get_item<&ClusterSpec::schedule, &ScheduleEvent::workers>},
      {.path = "/cluster/schedule/*/group",
       .type = F::kInteger,
       .minimum = 0,
       .maximum = kMaxWorkers - 1,
       .nullable = true,
       .doc = "Index of the worker group it applies to (every worker of it); or give workers.",
       .set = set_item<&ClusterSpec::schedule, &ScheduleEvent::group>,
       .get = get_item<&ClusterSpec::schedule, &ScheduleEvent::group>},
      {.path = "/cluster/schedule/*/at_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .required = true,
       .doc = "Virtual time it starts.",
       .set = set_item<&ClusterSpec::schedule, &ScheduleEvent::at_s>,
       .get = get_item<&ClusterSpec::schedule, &ScheduleEvent::at_s>},
      {.path = "/cluster/schedule/*/until_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .nullable = true,
       .doc = "When it ends (> at_s): slow and drift: null = for good; pause: required; crash: "
              "the rejoin time, null = never rejoins.",
       .set = set_item<&ClusterSpec::schedule, &ScheduleEvent::until_s>,
       .get = get_item<&ClusterSpec::schedule, &ScheduleEvent::until_s>},
      {.path = "/cluster/schedule/*/factor",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxFactor,
       .exclusive_minimum = true,
       .default_value = ScheduleEvent{}.factor,
       .doc = "slow: compute time multiplier; drift: the multiplier reached at until_s.",
       .set = set_item<&ClusterSpec::schedule, &ScheduleEvent::factor>,
       .get = get_item<&ClusterSpec::schedule, &ScheduleEvent::factor>},
  };
}

// cluster.network: the links.
std::vector<FieldInfo> network_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/cluster/network", .type = F::kObject, .doc = "Links between workers and server."},
      {.path = "/cluster/network/latency_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = d.cluster.network.latency_us,
       .doc = "One-way latency of each worker's link.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_us>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_us>},
      {.path = "/cluster/network/bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .default_value = d.cluster.network.bandwidth_gbps,
       .doc = "Bandwidth of each worker's link.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::bandwidth_gbps>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::bandwidth_gbps>},
      {.path = "/cluster/network/server_bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .default_note = "equal to bandwidth_gbps",
       .doc = "Bandwidth of the server's link, shared by all workers in arrival order.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::server_bandwidth_gbps>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::server_bandwidth_gbps>,
       .resolve =
           [](Scenario& s) { s.cluster.network.server_bandwidth_gbps = s.cluster.network.bandwidth_gbps; }},
      {.path = "/cluster/network/latency_sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .default_value = d.cluster.network.latency_sigma,
       .doc = "Latency jitter: each message's latency is multiplied by a lognormal factor of mean 1 "
              "with this log standard deviation (own stream per worker link); 0 = none.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_sigma>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_sigma>},
      {.path = "/cluster/network/message_overhead_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = d.cluster.network.message_overhead_us,
       .doc = "Per message and shard, time the server link is busy on top of the bytes.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::message_overhead_us>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::message_overhead_us>},
      {.path = "/cluster/network/server_apply_ns_per_parameter",
       .type = F::kNumber,
       .unit = "ns",
       .minimum = 0,
       .maximum = 1e6,
       .default_value = d.cluster.network.server_apply_ns_per_parameter,
       .applies_to = "a timed run with a parameter server",
       .applies_key = "/cluster/order",
       .doc = "The server's own work: a shard applies one push at a time, each taking this many ns "
              "per float of its part of the push (stalesim calibrate --cpu measures it for the "
              "scenario's rule); 0: applying is free.",
       .applies =
           [](const Scenario& s) { return s.cluster.order == Order::kTimed && !s.policy.all_reduce(); },
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::server_apply_ns_per_parameter>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::server_apply_ns_per_parameter>},
  };
}

// cluster.jitter: random variation of compute time.
std::vector<FieldInfo> jitter_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/cluster/jitter", .type = F::kObject, .doc = "Random variation of compute time."},
      {.path = "/cluster/jitter/type",
       .type = F::kString,
       .allowed = enum_name_list<JitterType>(),
       .default_value = to_json_value(d.cluster.jitter.type),
       .doc = "Multiply each compute time by a factor of mean 1: lognormal (sigma), normal (cv, "
              "clipped at 0.001), gamma (cv), exponential (shift), constant (factor); none; or "
              "trace: draw each iteration's time uniformly from a file of measured times.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::type>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::type>},
      {.path = "/cluster/jitter/sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .default_value = d.cluster.jitter.sigma,
       .applies_to = "lognormal jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "Standard deviation of the factor's log.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == JitterType::kLognormal; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::sigma>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::sigma>},
      {.path = "/cluster/jitter/cv",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxCv,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.cv,
       .applies_to = "normal and gamma jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "Coefficient of variation (standard deviation / mean) of the factor.",
       .applies =
           [](const Scenario& s) {
             return s.cluster.jitter.type == JitterType::kNormal ||
                    s.cluster.jitter.type == JitterType::kGamma;
           },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::cv>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::cv>},
      {.path = "/cluster/jitter/factor",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxFactor,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.factor,
       .applies_to = "constant jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "The constant factor.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == JitterType::kConstant; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::factor>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::factor>},
      {.path = "/cluster/jitter/shift",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.cluster.jitter.shift,
       .applies_to = "exponential jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "factor = shift + Exp(mean 1 - shift): the least an iteration can take, as a fraction of the "
              "mean.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == JitterType::kExponential; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::shift>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::shift>},
      {.path = "/cluster/jitter/path",
       .type = F::kString,
       .min_length = 1,
       .required = true,
       .applies_to = "trace jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "Text file of iteration times in ms, whitespace separated, # comments; relative to the "
              "scenario file's folder when the file names it and to the working directory when --set "
              "or --grid does (as a profile file).",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == JitterType::kTrace; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::path>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::path>},
      {.path = "/cluster/jitter/scale",
       .type = F::kString,
       .allowed = enum_name_list<TraceScale>(),
       .default_value = to_json_value(d.cluster.jitter.scale),
       .applies_to = "trace jitter",
       .applies_key = "/cluster/jitter/type",
       .doc =
           "absolute: an iteration takes the drawn time; relative: the modelled time x drawn / trace mean.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == JitterType::kTrace; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::scale>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::scale>},
  };
}

}  // namespace

std::vector<FieldInfo> cluster_fields(const Scenario& d) {
  std::vector<FieldInfo> t = worker_group_fields();
  append(t, group_fields(d));
  append(t, group_jitter_fields(d));
  append(t, schedule_fields(d));
  append(t, network_fields(d));
  append(t, topology_fields(d));
  append(t, jitter_fields(d));
  return t;
}

}  // namespace stalesim::scenario_detail
