#pragma once
// The non-classifier workloads of issue 6: matrix factorization (data.dataset "ratings", model.type
// "mf") and LDA (data.dataset "corpus", model.type "lda"). The simulation asks here for their data
// and models; the classifiers go through load_data's other branches and make_model.

#include <memory>

#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// True for model types built by make_workload_model ("mf", "lda").
bool is_workload_model(ModelType type);
// The generated ratings, corpus or lstsq rows of s.data (sim/data/dataset.hpp), from s.seed, untruncated.
// Throws std::invalid_argument unless the model is mf, lda or lstsq.
DataSplit make_workload_data(const Scenario& s);
// The mf or lda model for scenario `s` on `data` (which must outlive it: lda keeps a reference to
// data.train).
std::unique_ptr<Model> make_workload_model(const Scenario& s, const DataSplit& data);

}  // namespace stalesim
