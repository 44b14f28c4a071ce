#pragma once
// The compute-time model (DESIGN.md section 3): one iteration's modelled time per worker (the
// device profile or iteration_ms), its jitter, the cluster schedule's slowdowns and pauses, or
// the GPU's measured time (compute.timing "measured").

#include <vector>

#include "base/sim_time.hpp"
#include "models/device_profile.hpp"
#include "models/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/worker/cluster_schedule.hpp"
#include "sim/worker/jitter.hpp"
#include "sim/worker/worker.hpp"

namespace stalesim {

// One iteration of worker group `g` before jitter, in ns: iteration_ms, else the batch's flops on
// the profile's peak times its efficiency plus its overhead. Throws ScenarioError past the time range.
double base_iteration_ns(const WorkerGroup& group, size_t g, const DeviceProfile& profile,
                         double flops_per_batch);

class ComputeModel {
 public:
  // `model` and `schedule` must outlive it. Reads each group's jitter spec (trace files too).
  ComputeModel(const Scenario& s, const Model& model, const ClusterSchedule& schedule);
  void set_measured(bool measured) { measured_ = measured; }
  bool measured() const { return measured_; }
  // The time of w's next iteration if it starts at `now` (draws from w's jitter stream).
  SimTime time(Worker& w, SimTime now) const;

 private:
  const Model& model_;
  const ClusterSchedule& schedule_;
  std::vector<JitterSampler> jitter_;  // per worker group
  bool measured_ = false;              // the model's GPU times replace the profiles'
};

}  // namespace stalesim
