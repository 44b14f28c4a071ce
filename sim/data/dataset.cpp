#include "sim/data/dataset.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "base/errors.hpp"

namespace stalesim {
namespace {

constexpr std::array<EnumName<DatasetType>, 6> kDatasetNames{{
    {DatasetType::kFashionMnist, "fashion-mnist"},
    {DatasetType::kBlobs, "blobs"},
    {DatasetType::kRatings, "ratings"},
    {DatasetType::kCorpus, "corpus"},
    {DatasetType::kLstsq, "lstsq"},
    {DatasetType::kNone, "none"},
}};

constexpr std::array<EnumName<Partition>, 3> kPartitionNames{{
    {Partition::kIid, "iid"},
    {Partition::kShared, "shared"},
    {Partition::kLabelSkew, "label-skew"},
}};

// Fashion-MNIST as Debian ships it: 60,000 + 10,000 images of 28 x 28 pixels, 10 classes.
constexpr int64_t kFashionFeatures = 784, kFashionTrain = 60000, kFashionTest = 10000;
constexpr int32_t kFashionClasses = 10;

double as_rows(int64_t n) { return static_cast<double>(n); }
double no_rows(const DataSpec&) { return 0; }

// Each dataset's row. The sizes match what the generators in models/ make: blobs and ratings
// their spec's train and test; a corpus `documents` training documents and no test set
// (models/lda.cpp; lda evaluates on its training documents); lstsq kLstsqRowsPerCoordinate x d
// training rows and d test rows (models/lstsq.cpp).
constexpr std::array<DatasetTraits, 6> kDatasetTraits{{
    {.type = DatasetType::kFashionMnist,
     .shape =
         [](const DataSpec&) { return ModelShape{.features = kFashionFeatures, .classes = kFashionClasses}; },
     .train_rows = [](const DataSpec&) { return as_rows(kFashionTrain); },  // truncated after loading
     .test_rows = [](const DataSpec&) { return as_rows(kFashionTest); },
     .stored_features = [](const DataSpec&) { return as_rows(kFashionFeatures); },
     .raw_bytes_per_sample = kFashionFeatures + 1.0,  // pixel bytes and the label byte
     .seeded = false,
     .make = [](const DataSpec& d, uint64_t) { return load_fashion_mnist(d.path); }},
    {.type = DatasetType::kBlobs,
     .shape =
         [](const DataSpec& d) {
           return ModelShape{.features = d.blobs.features, .classes = d.blobs.classes};
         },
     .train_rows = [](const DataSpec& d) { return as_rows(d.blobs.train); },
     .test_rows = [](const DataSpec& d) { return as_rows(d.blobs.test); },
     .stored_features = [](const DataSpec& d) { return as_rows(d.blobs.features); },
     .raw_bytes_per_sample = 0,
     .seeded = true,
     .make = [](const DataSpec& d, uint64_t seed) { return make_blobs(d.blobs, seed); }},
    {.type = DatasetType::kRatings,
     .shape = [](const DataSpec& d) { return ModelShape{.rows = d.ratings.rows, .cols = d.ratings.cols}; },
     .train_rows = [](const DataSpec& d) { return as_rows(d.ratings.train); },
     .test_rows = [](const DataSpec& d) { return as_rows(d.ratings.test); },
     // (row, column, rating), as models/mf.cpp stores each entry in x; the rating is also its label.
     .stored_features = [](const DataSpec&) { return 3.0; },
     .raw_bytes_per_sample = 0,
     .seeded = true,
     .make = [](const DataSpec& d, uint64_t seed) { return generate_ratings(d.ratings, seed).split; }},
    {.type = DatasetType::kCorpus,
     .shape =
         [](const DataSpec& d) {
           return ModelShape{.vocabulary = d.corpus.vocabulary,
                             .documents = d.corpus.documents,
                             .mean_length = 0.5 * (d.corpus.min_length + d.corpus.max_length)};
         },
     .train_rows = [](const DataSpec& d) { return as_rows(d.corpus.documents); },
     .test_rows = no_rows,
     .stored_features = [](const DataSpec& d) { return d.corpus.max_length + 1.0; },  // length, word ids
     .raw_bytes_per_sample = 0,
     .seeded = true,
     .make = [](const DataSpec& d, uint64_t seed) { return generate_corpus(d.corpus, seed).split; }},
    {.type = DatasetType::kLstsq,
     .shape = [](const DataSpec& d) { return ModelShape{.dimension = d.lstsq.dimension}; },
     .train_rows =
         [](const DataSpec& d) { return as_rows(int64_t{kLstsqRowsPerCoordinate} * d.lstsq.dimension); },
     .test_rows = [](const DataSpec& d) { return as_rows(d.lstsq.dimension); },
     .stored_features = [](const DataSpec&) { return 1.0; },  // the coordinate; the target is the label
     .raw_bytes_per_sample = 0,
     .seeded = false,  // generate_lstsq takes no seed
     .make = [](const DataSpec& d, uint64_t) { return generate_lstsq(d.lstsq); }},
    {.type = DatasetType::kNone,
     .shape = [](const DataSpec&) { return ModelShape{}; },
     .train_rows = no_rows,
     .test_rows = no_rows,
     .stored_features = no_rows,
     .raw_bytes_per_sample = 0,
     .seeded = false,
     .make = nullptr},
}};
static_assert([] {
  for (size_t i = 0; i < kDatasetTraits.size(); ++i)
    if (static_cast<size_t>(kDatasetTraits[i].type) != i) return false;
  return true;
}());

}  // namespace

std::span<const EnumName<DatasetType>> enum_names(DatasetType) { return kDatasetNames; }
std::span<const EnumName<Partition>> enum_names(Partition) { return kPartitionNames; }
const DatasetTraits& traits(DatasetType t) { return kDatasetTraits[static_cast<size_t>(t)]; }

DataSplit make_data(const DataSpec& spec, uint64_t seed) {
  const auto& row = traits(spec.dataset);
  if (!row.make) return {};
  DataSplit d = row.make(spec, seed);
  truncate_dataset(d.train, spec.train_samples);
  if (spec.validation_samples > 0 && spec.validation_samples >= d.train.size())
    throw ScenarioError(
        fmt::format("/data/validation_samples: {} must leave a training sample (there are {})",
                    spec.validation_samples, d.train.size()));
  if (spec.validation_samples > 0) hold_out_validation(d, spec.validation_samples);
  return d;
}

double evaluated_test_rows(const DataSpec& spec, int64_t eval_test_samples) {
  const double test = traits(spec.dataset).test_rows(spec);
  return eval_test_samples > 0 ? std::min(test, static_cast<double>(eval_test_samples)) : test;
}

}  // namespace stalesim
