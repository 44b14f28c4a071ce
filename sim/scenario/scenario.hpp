#pragma once
// Scenario: the plain values of one run, every default resolved (DESIGN.md section 1; style.md
// habits 5-7). Loading parses strictly, once (sim/scenario/load.hpp): unknown keys are errors with
// a "did you mean", every value is range-checked, and errors name the file, the JSON path, the
// value and what is allowed. After loading nothing touches JSON; scenario_to_json()
// (sim/scenario/to_json.hpp) writes the resolved scenario back for the manifest, and loading that
// JSON again yields an equal Scenario. The specs that need no model are in sim/scenario/spec.hpp.

#include <cstdint>
#include <string>

#include "models/dataset.hpp"
#include "models/lda.hpp"
#include "models/lstsq.hpp"
#include "models/mf.hpp"
#include "models/model.hpp"
#include "sim/scenario/cluster_spec.hpp"
#include "sim/scenario/spec.hpp"

namespace stalesim {

struct DataSpec {
  std::string dataset =
      "fashion-mnist";  // "fashion-mnist" | "blobs" | "ratings" | "corpus" | "lstsq" | "none"
  std::string path = kFashionMnistDefaultDir;  // fashion-mnist: folder with the IDX files
  int64_t train_samples = 0;                   // use the first N training samples; 0 = all
  int64_t validation_samples = 0;              // > 0: hold out the last N training samples and evaluate on
                                               // them instead of the test set (for tuning); 0 = test set
  std::string partition =
      "iid";            // "iid" | "shared" (all draw from all) | "label-skew" (models/partition.hpp)
  BlobsSpec blobs;      // dataset "blobs" only
  RatingsSpec ratings;  // dataset "ratings" only (model mf)
  CorpusSpec corpus;    // dataset "corpus" only (model lda)
  LstsqSpec lstsq;      // dataset "lstsq" only (model lstsq)
  double alpha = 0.5;   // label-skew: Dirichlet concentration, > 0; small = few labels per worker
  bool operator==(const DataSpec&) const = default;
};

struct Scenario {
  std::string name;  // default: the file name without .json
  uint64_t seed = 1;
  std::string comment;  // free text (paper, figure, what is scaled down)
  DataSpec data;
  ModelSpec model;
  OptimizerSpec optimizer;
  PolicySpec policy;
  ClusterSpec cluster;
  ComputeSpec compute;
  StopSpec stop;
  EvalSpec eval;
  bool operator==(const Scenario&) const = default;
};

}  // namespace stalesim
