// The pieces of a run the scenario and its data decide (sim/worker/assemble.hpp).

#include "sim/worker/assemble.hpp"

#include <fmt/format.h>

#include "base/errors.hpp"
#include "base/rng.hpp"
#include "models/partition.hpp"
#include "sim/workloads.hpp"

namespace stalesim {

std::unique_ptr<Model> build_model(const Scenario& s, const DataSplit& d) {
  const bool wants_data = traits(s.model.type).has_math;
  return is_workload_model(s.model.type)
             ? make_workload_model(s, d)
             : make_model(s.model, wants_data ? d.train.features : 0, wants_data ? d.train.classes : 0,
                          s.compute.backend == Backend::kCuda);
}

void init_parameters(const Scenario& s, Model& m, std::span<float> params) {
  Rng init_rng(s.seed, Purpose::kInit, 0);
  m.init(params, init_rng);
}

std::vector<std::vector<int32_t>> worker_shards(const Scenario& s, const DataSplit& d) {
  const int32_t n = s.cluster.worker_count();
  if (s.data.partition == Partition::kLabelSkew)
    return shard_label_skew(d.train.y, d.train.classes, n, s.data.alpha, s.seed);
  if (s.data.partition == Partition::kShared) return {};
  return shard_iid(d.train.size(), n, s.seed);
}

std::unique_ptr<BatchSampler> worker_sampler(const Scenario& s, const DataSplit& d,
                                             std::vector<std::vector<int32_t>>& shards, int32_t id) {
  if (s.data.partition == Partition::kShared) {
    if (d.train.size() < s.optimizer.batch_size)
      throw ScenarioError(fmt::format("/optimizer/batch_size: {} is larger than the {} training samples",
                                      s.optimizer.batch_size, d.train.size()));
    return std::make_unique<BatchSampler>(
        BatchSampler::shared(d.train.size(), s.seed, static_cast<uint32_t>(id)));
  }
  auto& shard = shards[static_cast<size_t>(id)];
  if (static_cast<int64_t>(shard.size()) < s.optimizer.batch_size)
    throw ScenarioError(
        fmt::format("/optimizer/batch_size: {} is larger than worker {}'s shard of {} samples ({} training "
                    "samples over {} workers)",
                    s.optimizer.batch_size, id, shard.size(), d.train.size(), s.cluster.worker_count()));
  return std::make_unique<BatchSampler>(std::move(shard), s.seed, static_cast<uint32_t>(id));
}

}  // namespace stalesim
