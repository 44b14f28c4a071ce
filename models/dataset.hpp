#pragma once
// Datasets for classification models, sharding across workers, and per-worker batch order.
// Samples are stored feature-contiguous (sample i occupies x[i*features, (i+1)*features)),
// which is a column-major features x samples matrix: a batch is gathered column by column.

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/rng.hpp"

namespace stalesim {

// A missing, unreadable or corrupt dataset. The message names the file and, where it helps, the
// Debian package that provides it.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Dataset {
  int64_t features = 0;
  int32_t classes = 0;
  std::vector<float> x;    // size() * features values, pixel values scaled to [0, 1]
  std::vector<int32_t> y;  // labels in [0, classes)
  int64_t size() const { return static_cast<int64_t>(y.size()); }
  const float* sample(int64_t i) const { return x.data() + i * features; }
};

// One file a dataset was read from, for the manifest (DESIGN.md section 2, rule 4).
struct DataFile {
  std::string path;
  uint64_t bytes = 0;
  std::string xxh64;  // 16 lower-case hex digits of XXH64 (seed 0) over the file's bytes
  bool operator==(const DataFile&) const = default;
};

struct DataSplit {
  Dataset train;
  Dataset test;
  std::vector<DataFile> files;  // empty for synthetic data
};

// Debian's dataset-fashion-mnist installs here.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// Reads train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and
// t10k-labels-idx1-ubyte.gz from `dir` (gzip through zlib; uncompressed names also accepted).
// Throws DataError naming the file (and the Debian package when dir is the default one) when a
// file is missing, truncated, or has a bad magic number or inconsistent sizes.
DataSplit load_fashion_mnist(const std::string& dir);

// Reads one IDX file (gzip or plain) from memory; exposed for tests and fuzzing.
// Returns the dimensions and the raw unsigned-byte payload. Throws DataError on malformed input;
// `name` is used in messages.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};
IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& name);

// Gaussian blobs: `classes` centres drawn N(0, 1) per feature, samples = centre + N(0, spread).
// Fast, deterministic data for tests and small examples.
struct BlobsSpec {
  int32_t classes = 4;
  int64_t features = 16;
  int64_t train = 2000;
  int64_t test = 500;
  double spread = 1.0;
  bool operator==(const BlobsSpec&) const = default;
};
DataSplit make_blobs(const BlobsSpec& spec, uint64_t seed);

// Keeps the first n samples (n <= 0 or n >= size keeps all).
void truncate_dataset(Dataset& d, int64_t n);
// Moves the last n training samples into `test` (replacing it): a validation split for tuning.
// REQUIRES 0 < n < d.train.size() (throws std::invalid_argument otherwise).
void hold_out_validation(DataSplit& d, int64_t n);

// Splits sample indices [0, n) across `workers` iid: one seeded shuffle, then contiguous slices
// whose sizes differ by at most one. Each shard is sorted ascending.
std::vector<std::vector<int32_t>> shard_iid(int64_t n, int32_t workers, uint64_t seed);

// A worker's batch order: its shard is reshuffled at each epoch from its own stream
// (Purpose::kBatchOrder, entity = worker id) and consumed in batches; a batch that would cross
// the end of an epoch is completed from the next epoch's order. REQUIRES: batch <= shard size.
class BatchSampler {
 public:
  BatchSampler(std::vector<int32_t> shard, uint64_t root_seed, uint32_t worker);
  // Shared data (data.partition "shared", the FASGD paper's simulator): every batch is drawn
  // uniformly with replacement from samples 0..population-1; no per-worker index list.
  static BatchSampler shared(int64_t population, uint64_t root_seed, uint32_t worker);
  // The indices of the next batch; valid until the next call.
  std::span<const int32_t> next(int32_t batch);
  // The indices next(batch) will return, without consuming them (for message sizes that depend
  // on the batch before its gradient is computed).
  std::vector<int32_t> peek(int32_t batch) const;
  int64_t epochs_started() const { return epoch_; }
  int64_t shard_size() const { return population_ > 0 ? population_ : static_cast<int64_t>(order_.size()); }

 private:
  void reshuffle();
  std::vector<int32_t> order_;
  std::vector<int32_t> batch_;
  Rng rng_;
  size_t pos_ = 0;
  int64_t epoch_ = 0;
  int64_t population_ = 0;  // > 0: shared sampling with replacement
};

}  // namespace stalesim
