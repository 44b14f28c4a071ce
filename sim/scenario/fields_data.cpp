// The field table's rows for data (sim/scenario/fields.hpp): the dataset, its split and partition,
// and each dataset's own object (blobs, ratings, lstsq, corpus).
#include <string>
#include <vector>

#include "sim/scenario/table.hpp"

namespace stalesim::scenario_detail {

namespace {

// data: the dataset, its samples and how they reach workers.
std::vector<FieldInfo> dataset_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/data", .type = F::kObject, .doc = "Training and test data."},
      {.path = "/data/dataset",
       .type = F::kString,
       .allowed = enum_name_list<DatasetType>(),
       .default_value = to_json_value(d.data.dataset),
       .default_note = "\"none\" when model.type is \"time-only\"",
       .doc = "Dataset; \"ratings\" goes with model mf, \"corpus\" with lda, \"lstsq\" with lstsq, \"none\" "
              "(no data) with the time-only model, each only with it.",
       .set = set_m<&Scenario::data, &DataSpec::dataset>,
       .get = get_m<&Scenario::data, &DataSpec::dataset>,
       .resolve = [](Scenario& s) { s.data.dataset = has_math(s) ? s.data.dataset : DatasetType::kNone; }},
      {.path = "/data/path",
       .type = F::kString,
       .min_length = 1,
       .default_value = d.data.path,
       .applies_to = "the fashion-mnist dataset",
       .applies_key = "/data/dataset",
       .doc = "Folder with the Fashion-MNIST IDX files (Debian's dataset-fashion-mnist).",
       .applies = [](const Scenario& s) { return s.data.dataset == DatasetType::kFashionMnist; },
       .set = set_m<&Scenario::data, &DataSpec::path>,
       .get = get_m<&Scenario::data, &DataSpec::path>},
      {.path = "/data/train_samples",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 0,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.train_samples,
       .applies_to = "the fashion-mnist and blobs datasets",
       .applies_key = "/data/dataset",
       .doc = "Use the first N training samples; 0 = all.",
       .applies = has_data,
       .set = set_m<&Scenario::data, &DataSpec::train_samples>,
       .get = get_m<&Scenario::data, &DataSpec::train_samples>},
      {.path = "/data/validation_samples",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 0,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.validation_samples,
       .applies_to = "the fashion-mnist, blobs and ratings datasets",
       .applies_key = "/data/dataset",
       .doc = "A validation split for tuning: N > 0 holds out the last N training samples (after "
              "train_samples), trains on the rest and evaluates on them instead of the test set "
              "(metrics keep their names); must leave at least one training sample. 0 = train on all "
              "and evaluate on the test set.",
       .applies =
           [](const Scenario& s) {
             return s.data.dataset == DatasetType::kFashionMnist || s.data.dataset == DatasetType::kBlobs ||
                    s.data.dataset == DatasetType::kRatings;
           },
       .set = set_m<&Scenario::data, &DataSpec::validation_samples>,
       .get = get_m<&Scenario::data, &DataSpec::validation_samples>},
      {.path = "/data/partition",
       .type = F::kString,
       .allowed = enum_name_list<Partition>(),
       .default_value = to_json_value(d.data.partition),
       .applies_to = "the fashion-mnist and blobs datasets",
       .applies_key = "/data/dataset",
       .doc = "How training samples reach workers: iid (a seeded shuffle, equal disjoint slices, each "
              "worker goes through its slice epoch by epoch), shared (every batch drawn uniformly with "
              "replacement from the whole training set, as in the FASGD paper's simulator, Odena 2016, "
              "so batches may exceed a slice) or label-skew (each worker's label mix drawn from "
              "Dirichlet(alpha); slice sizes still differ by at most one; Hsu, Qi and Brown 2019).",
       .applies = has_data,
       .set = set_m<&Scenario::data, &DataSpec::partition>,
       .get = get_m<&Scenario::data, &DataSpec::partition>},
      {.path = "/data/alpha",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1e6,
       .exclusive_minimum = true,
       .default_value = d.data.alpha,
       .applies_to = "label-skew partitions",
       .applies_key = "/data/partition",
       .doc = "Dirichlet concentration of each worker's label mix: 0.1 gives most workers one or two "
              "labels, 100 is close to iid.",
       .applies = [](const Scenario& s) { return has_data(s) && s.data.partition == Partition::kLabelSkew; },
       .set = set_m<&Scenario::data, &DataSpec::alpha>,
       .get = get_m<&Scenario::data, &DataSpec::alpha>},
  };
}

// data.blobs: the Gaussian blobs' sizes.
std::vector<FieldInfo> blobs_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/data/blobs",
       .type = F::kObject,
       .applies_to = "the blobs dataset",
       .applies_key = "/data/dataset",
       .doc = "Gaussian blobs: class centres N(0, 1) per feature, samples centre + N(0, spread).",
       .applies = [](const Scenario& s) { return s.data.dataset == DatasetType::kBlobs; }},
      {.path = "/data/blobs/classes",
       .type = F::kInteger,
       .minimum = 2,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.blobs.classes,
       .doc = "Number of classes.",
       .set = set_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::classes>,
       .get = get_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::classes>},
      {.path = "/data/blobs/features",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.blobs.features,
       .doc = "Features per sample.",
       .set = set_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::features>,
       .get = get_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::features>},
      {.path = "/data/blobs/train",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.blobs.train,
       .doc = "Training samples.",
       .set = set_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::train>,
       .get = get_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::train>},
      {.path = "/data/blobs/test",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.blobs.test,
       .doc = "Test samples.",
       .set = set_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::test>,
       .get = get_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::test>},
      {.path = "/data/blobs/spread",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.data.blobs.spread,
       .doc = "Standard deviation of samples around their class centre.",
       .set = set_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::spread>,
       .get = get_m<&Scenario::data, &DataSpec::blobs, &BlobsSpec::spread>},
  };
}

// data.ratings: the synthetic rating matrix of model mf.
std::vector<FieldInfo> ratings_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/data/ratings",
       .type = F::kObject,
       .applies_to = "the ratings dataset",
       .applies_key = "/data/dataset",
       .doc = "Synthetic ratings of known rank with Zipf row and column popularity (models/mf.hpp).",
       .applies = [](const Scenario& s) { return s.data.dataset == DatasetType::kRatings; }},
      {.path = "/data/ratings/rows",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = (int64_t{1} << 24) - 1,
       .default_value = d.data.ratings.rows,
       .doc = "Rows (users) of the matrix.",
       .set = set_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::rows>,
       .get = get_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::rows>},
      {.path = "/data/ratings/cols",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = (int64_t{1} << 24) - 1,
       .default_value = d.data.ratings.cols,
       .doc = "Columns (items) of the matrix.",
       .set = set_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::cols>,
       .get = get_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::cols>},
      {.path = "/data/ratings/rank",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 4096,
       .default_value = d.data.ratings.rank,
       .doc = "Rank of the true factors (entries N(0, rank^-1/4): ratings have variance 1 before noise).",
       .set = set_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::rank>,
       .get = get_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::rank>},
      {.path = "/data/ratings/noise",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = false,
       .default_value = d.data.ratings.noise,
       .doc = "Standard deviation of the Gaussian noise added to each rating (the best reachable test RMSE).",
       .set = set_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::noise>,
       .get = get_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::noise>},
      {.path = "/data/ratings/train",
       .type = F::kInteger,
       .unit = "entries",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.ratings.train,
       .doc = "Observed entries for training (distinct cells; train + test <= rows x cols / 2).",
       .set = set_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::train>,
       .get = get_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::train>},
      {.path = "/data/ratings/test",
       .type = F::kInteger,
       .unit = "entries",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.ratings.test,
       .doc = "Held-out entries for the test RMSE.",
       .set = set_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::test>,
       .get = get_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::test>},
      {.path = "/data/ratings/popularity",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = false,
       .default_value = d.data.ratings.popularity,
       .doc = "Zipf exponent a: P(row i) and P(column j) proportional to (index + 1)^-a; 0 = uniform.",
       .set = set_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::popularity>,
       .get = get_m<&Scenario::data, &DataSpec::ratings, &RatingsSpec::popularity>},
  };
}

// data.lstsq: the least-squares problem of model lstsq.
std::vector<FieldInfo> lstsq_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/data/lstsq",
       .type = F::kObject,
       .applies_to = "the lstsq dataset",
       .applies_key = "/data/dataset",
       .doc = "Synthetic least-squares problem with Hessian diag(lambda), lambda spaced evenly in log from "
              "curvature down to curvature / condition, solution w* ~ N(0, 1) from the seed "
              "(models/lstsq.hpp).",
       .applies = [](const Scenario& s) { return s.data.dataset == DatasetType::kLstsq; }},
      {.path = "/data/lstsq/dimension",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = (int64_t{1} << 24) / kLstsqRowsPerCoordinate,
       .default_value = d.data.lstsq.dimension,
       .doc = "Number of parameters d (the problem has 64 x d rows).",
       .set = set_m<&Scenario::data, &DataSpec::lstsq, &LstsqSpec::dimension>,
       .get = get_m<&Scenario::data, &DataSpec::lstsq, &LstsqSpec::dimension>},
      {.path = "/data/lstsq/condition",
       .type = F::kNumber,
       .minimum = 1,
       .default_value = d.data.lstsq.condition,
       .doc = "Condition number lambda_max / lambda_min of the Hessian.",
       .set = set_m<&Scenario::data, &DataSpec::lstsq, &LstsqSpec::condition>,
       .get = get_m<&Scenario::data, &DataSpec::lstsq, &LstsqSpec::condition>},
      {.path = "/data/lstsq/curvature",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.data.lstsq.curvature,
       .doc = "Largest curvature lambda_max: SGD with delay tau is stable iff lr x lambda_max < "
              "2 sin(pi / (2 (2 tau + 1))).",
       .set = set_m<&Scenario::data, &DataSpec::lstsq, &LstsqSpec::curvature>,
       .get = get_m<&Scenario::data, &DataSpec::lstsq, &LstsqSpec::curvature>},
  };
}

// data.corpus: the synthetic corpus of model lda.
std::vector<FieldInfo> corpus_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/data/corpus",
       .type = F::kObject,
       .applies_to = "the corpus dataset",
       .applies_key = "/data/dataset",
       .doc = "Synthetic corpus drawn from known topics by LDA's generative process (models/lda.hpp).",
       .applies = [](const Scenario& s) { return s.data.dataset == DatasetType::kCorpus; }},
      {.path = "/data/corpus/vocabulary",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = (int64_t{1} << 24) - 1,
       .default_value = d.data.corpus.vocabulary,
       .doc = "Vocabulary size V.",
       .set = set_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::vocabulary>,
       .get = get_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::vocabulary>},
      {.path = "/data/corpus/topics",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 65536,
       .default_value = d.data.corpus.topics,
       .doc = "Number of true topics.",
       .set = set_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::topics>,
       .get = get_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::topics>},
      {.path = "/data/corpus/documents",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.corpus.documents,
       .doc = "Documents (documents x max_length < 2^24 keeps counts exact in float32).",
       .set = set_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::documents>,
       .get = get_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::documents>},
      {.path = "/data/corpus/min_length",
       .type = F::kInteger,
       .unit = "tokens",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.corpus.min_length,
       .doc = "Fewest tokens in a document (lengths are uniform in [min_length, max_length]).",
       .set = set_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::min_length>,
       .get = get_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::min_length>},
      {.path = "/data/corpus/max_length",
       .type = F::kInteger,
       .unit = "tokens",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.data.corpus.max_length,
       .doc = "Most tokens in a document.",
       .set = set_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::max_length>,
       .get = get_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::max_length>},
      {.path = "/data/corpus/alpha",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.data.corpus.alpha,
       .doc = "Generator's Dirichlet concentration of each document's topic mixture.",
       .set = set_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::alpha>,
       .get = get_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::alpha>},
      {.path = "/data/corpus/beta",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.data.corpus.beta,
       .doc = "Generator's Dirichlet concentration of each topic's word distribution.",
       .set = set_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::beta>,
       .get = get_m<&Scenario::data, &DataSpec::corpus, &CorpusSpec::beta>},
  };
}

}  // namespace

std::vector<FieldInfo> data_fields(const Scenario& d) {
  std::vector<FieldInfo> t = dataset_fields(d);
  append(t, blobs_fields(d));
  append(t, ratings_fields(d));
  append(t, lstsq_fields(d));
  append(t, corpus_fields(d));
  return t;
}

}  // namespace stalesim::scenario_detail
