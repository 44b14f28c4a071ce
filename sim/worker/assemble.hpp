#pragma once
// The pieces of a run that the scenario and its data decide, built the one way the worker core
// (sim/worker/core.hpp) builds them: the model, its initial parameters and each worker's batch
// sampler. Callers that need a model and its batches without a run (`stalesim calibrate --cpu`
// times the run's own gradients) build them here, so they time what the run computes.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// The scenario's model: a workload model (mf, lda, ...) or a classifier sized to the data.
std::unique_ptr<Model> build_model(const Scenario& s, const DataSplit& d);

// The model's initial parameters (the seed's Purpose::kInit stream) into `params`, zeroed and
// parameter_count() long.
void init_parameters(const Scenario& s, Model& m, std::span<float> params);

// The workers' shards of the training samples (data.partition): one per worker, or none when
// every worker samples the whole set ("shared").
std::vector<std::vector<int32_t>> worker_shards(const Scenario& s, const DataSplit& d);

// Worker `id`'s batch sampler over its shard (taken from `shards`, as worker_shards made them) or
// the whole set. Throws ScenarioError when the batch is larger than what it samples.
std::unique_ptr<BatchSampler> worker_sampler(const Scenario& s, const DataSplit& d,
                                             std::vector<std::vector<int32_t>>& shards, int32_t id);

}  // namespace stalesim
