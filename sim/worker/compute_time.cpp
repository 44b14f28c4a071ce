// The compute-time model (sim/worker/compute_time.hpp): modelled, jittered, scheduled or measured iteration
// times.

#include "sim/worker/compute_time.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

namespace stalesim {

double base_iteration_ns(const WorkerGroup& group, size_t g, const DeviceProfile& profile,
                         double flops_per_batch) {
  const double ns =
      group.iteration_ms
          ? *group.iteration_ms * 1e6
          : flops_per_batch / (peak_tflops(profile, group.precision) * 1e3 * profile.efficiency) +
                profile.overhead_us * 1e3;
  if (!(ns <= SimTime::kMaxNs / 16))  // room for jitter and schedule factors
    throw ScenarioError(fmt::format(
        "/cluster/workers/{}: one iteration would take {:g} s ({}), past the simulator's time range "
        "(int64 nanoseconds, about 292 years)",
        g, ns / 1e9,
        group.iteration_ms ? "iteration_ms" : "batch_size x model.flops_per_sample / the profile's peak"));
  return ns;
}

ComputeModel::ComputeModel(const Scenario& s, const Model& model, const ClusterSchedule& schedule)
    : model_(model), schedule_(schedule) {
  for (size_t g = 0; g < s.cluster.workers.size(); ++g) {
    const auto& grp = s.cluster.workers[g];
    jitter_.emplace_back(grp.jitter ? *grp.jitter : s.cluster.jitter,
                         grp.jitter ? fmt::format("/cluster/workers/{}/jitter", g) : "/cluster/jitter");
  }
}

SimTime ComputeModel::time(Worker& w, SimTime now) const {
  if (measured_)  // hardware in the loop: the GPU time of the latest gradient (any worker's)
    return SimTime::from_ns(std::max<int64_t>(1, std::llround(*model_.last_measured_seconds() * 1e9)));
  const double ns = jitter_[static_cast<size_t>(w.group)].sample_ns(w.base_compute_ns, w.jitter_rng);
  const auto what = [&] {
    return fmt::format(
        "worker {}'s iteration (model.flops_per_sample or the cost architecture, the profile, "
        "cluster.workers.*.iteration_ms, the jitter and cluster.schedule) takes too long",
        w.id);
  };
  if (!(ns <= SimTime::kMaxNs)) SimTime::from_ns_checked(ns, what());
  if (schedule_.affects_compute(w.id)) {
    try {
      return schedule_.compute_end(w.id, now, ns) - now;
    } catch (const TimeRangeError& e) {
      throw TimeRangeError(fmt::format("{}: {}", what(), e.what()));
    }
  }
  return SimTime::from_ns(std::max<int64_t>(1, std::llround(ns)));
}

}  // namespace stalesim
