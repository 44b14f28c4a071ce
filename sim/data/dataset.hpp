#pragma once
// The data layer (DESIGN.md section 1): what data.dataset names, as an enum with ONE traits row per
// dataset (sim/data/dataset.cpp): the shape a model is sized by, the rows its generator or loader
// makes, and how to make them. The scenario loader parses the name once; the run (load_data), the
// estimates (sim/estimate/), the run plan (sim/plan/) and the sweep's data cache all read the row
// instead of comparing names, so a new dataset is one enum value and one row.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/enum_names.hpp"
#include "models/dataset.hpp"
#include "models/lda.hpp"
#include "models/lstsq.hpp"
#include "models/mf.hpp"
#include "models/model.hpp"

namespace stalesim {

// data.dataset. kNone: no data (the time-only model).
enum class DatasetType { kFashionMnist, kBlobs, kRatings, kCorpus, kLstsq, kNone };
std::span<const EnumName<DatasetType>> enum_names(DatasetType);
inline std::string_view to_string(DatasetType t) { return enum_name(t); }

// data.partition: how training samples reach workers (models/partition.hpp).
enum class Partition {
  kIid,        // a seeded shuffle, equal disjoint slices
  kShared,     // every batch drawn from the whole training set
  kLabelSkew,  // each worker's label mix drawn from Dirichlet(alpha)
};
std::span<const EnumName<Partition>> enum_names(Partition);

struct DataSpec {
  DatasetType dataset = DatasetType::kFashionMnist;
  std::string path = kFashionMnistDefaultDir;  // fashion-mnist: folder with the IDX files
  int64_t train_samples = 0;                   // use the first N training samples; 0 = all
  int64_t validation_samples = 0;              // > 0: hold out the last N training samples and evaluate on
                                               // them instead of the test set (for tuning); 0 = test set
  Partition partition = Partition::kIid;
  BlobsSpec blobs;      // dataset "blobs" only
  RatingsSpec ratings;  // dataset "ratings" only (model mf)
  CorpusSpec corpus;    // dataset "corpus" only (model lda)
  LstsqSpec lstsq;      // dataset "lstsq" only (model lstsq)
  double alpha = 0.5;   // label-skew: Dirichlet concentration, > 0; small = few labels per worker
  bool operator==(const DataSpec&) const = default;
};

// One row per dataset, in enum order.
struct DatasetTraits {
  DatasetType type;
  // The data's shape, from the spec alone (nothing is loaded): what a model is sized by.
  ModelShape (*shape)(const DataSpec&);
  // Rows the generator or loader makes, before data.train_samples truncates the training set.
  double (*train_rows)(const DataSpec&);
  double (*test_rows)(const DataSpec&);
  // Floats stored per sample (besides its int32 label), and raw bytes per sample held while
  // decoding files (Fashion-MNIST's pixels and label), for the memory estimate.
  double (*stored_features)(const DataSpec&);
  double raw_bytes_per_sample;
  // Whether the data depends on the scenario's seed (generated from it).
  bool seeded;
  // The rows, loaded or generated; nullptr for kNone. Throws on bad files (DataError).
  DataSplit (*make)(const DataSpec&, uint64_t seed);
};
const DatasetTraits& traits(DatasetType t);

// The data `spec` names, truncated to train_samples and split for validation_samples. Empty for
// kNone. Throws ScenarioError when validation_samples leaves no training sample.
DataSplit make_data(const DataSpec& spec, uint64_t seed);

// How many test rows an evaluation reads: the dataset's test rows, capped by eval.test_samples
// (`eval_test_samples` > 0).
double evaluated_test_rows(const DataSpec& spec, int64_t eval_test_samples);

}  // namespace stalesim
