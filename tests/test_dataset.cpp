// Datasets: the IDX reader (plain, gzip, hostile input), the Fashion-MNIST loader, Gaussian
// blobs, sharding and per-worker batch order.

#include <doctest/doctest.h>
#include <unistd.h>
#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "models/dataset.hpp"

namespace stalesim {
namespace {

namespace fs = std::filesystem;

using Bytes = std::vector<uint8_t>;

Bytes make_idx(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b;
  auto put32 = [&b](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
  };
  put32(magic);
  for (uint32_t d : dims) put32(d);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes iota_bytes(size_t n, uint8_t start = 0) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(start + i);
  return b;
}

// A directory under the system temp dir, unique per test and process, removed afterwards.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() /
           ("stalesim-test-" + name + "-" + std::to_string(static_cast<long>(::getpid())));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_gz(const std::string& path, const Bytes& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, data.data(), static_cast<unsigned>(data.size())) == static_cast<int>(data.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void write_plain(const std::string& path, const Bytes& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  REQUIRE(out.good());
}

Bytes read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes gzip_bytes(const Bytes& data, const TempDir& dir, const std::string& name) {
  write_gz(dir.file(name), data);
  return read_all(dir.file(name));
}

std::string xxh64_hex(const Bytes& b) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, static_cast<uint64_t>(XXH64(b.data(), b.size(), 0)));
  return hex;
}

// Writes a tiny Fashion-MNIST-shaped dataset (2x2 images) into `dir`.
void write_tiny_fashion(const TempDir& dir, const Bytes& train_labels, const Bytes& test_labels) {
  const auto n_train = static_cast<uint32_t>(train_labels.size());
  const auto n_test = static_cast<uint32_t>(test_labels.size());
  write_gz(dir.file("train-images-idx3-ubyte.gz"),
           make_idx(0x803, {n_train, 2, 2}, iota_bytes(4 * n_train, 250)));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), make_idx(0x801, {n_train}, train_labels));
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), make_idx(0x803, {n_test, 2, 2}, iota_bytes(4 * n_test, 0)));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), make_idx(0x801, {n_test}, test_labels));
}

}  // namespace

TEST_CASE("parse_idx reads a hand-built image file and a label file") {
  const IdxArray img = parse_idx(make_idx(0x803, {2, 2, 3}, iota_bytes(12)), "tiny");
  CHECK(img.dims == std::vector<int64_t>{2, 2, 3});
  CHECK(img.data == iota_bytes(12));
  const IdxArray lab = parse_idx(make_idx(0x801, {3}, Bytes{7, 0, 9}), "labels");
  CHECK(lab.dims == std::vector<int64_t>{3});
  CHECK(lab.data == Bytes{7, 0, 9});
}

TEST_CASE("parse_idx rejects malformed headers with a message naming the file") {
  CHECK_THROWS_WITH_AS(parse_idx(make_idx(0x12345678, {1}, {0}), "f.idx"),
                       "f.idx: bad magic number 0x12345678 (expected 0x00000803 for images or "
                       "0x00000801 for labels)",
                       DataError);
  CHECK_THROWS_WITH_AS(parse_idx(make_idx(0x00000d03, {1, 1, 1}, {0, 0, 0, 0}), "f.idx"),
                       "f.idx: unsupported IDX data type 0x0d (expected 0x08, unsigned byte)", DataError);
  CHECK_THROWS_AS(parse_idx(make_idx(0x00000802, {1, 1}, {0}), "f.idx"), DataError);
  CHECK_THROWS_WITH_AS(parse_idx(Bytes{}, "empty"), "empty: truncated: IDX header needs 4 bytes, got 0",
                       DataError);
  CHECK_THROWS_WITH_AS(parse_idx(Bytes{0, 0, 8, 3, 0, 0, 0, 1, 0}, "short"),
                       "short: truncated: IDX header needs 16 bytes, got 9", DataError);
}

TEST_CASE("parse_idx rejects a payload shorter or longer than the dimensions say") {
  CHECK_THROWS_WITH_AS(parse_idx(make_idx(0x803, {1, 3, 4}, iota_bytes(11)), "img"),
                       "img: truncated: expected 12 pixel bytes, got 11", DataError);
  CHECK_THROWS_WITH_AS(parse_idx(make_idx(0x801, {5}, iota_bytes(2)), "lab"),
                       "lab: truncated: expected 5 label bytes, got 2", DataError);
  CHECK_THROWS_WITH_AS(parse_idx(make_idx(0x801, {2}, iota_bytes(3)), "lab"),
                       "lab: expected 2 label bytes, got 3 (trailing bytes)", DataError);
}

TEST_CASE("parse_idx rejects absurd dimensions whose product overflows") {
  CHECK_THROWS_WITH_AS(parse_idx(make_idx(0x803, {0xffffffffu, 0xffffffffu, 0xffffffffu}, {}), "big"),
                       "big: absurd dimensions 4294967295 x 4294967295 x 4294967295 (more than 2^62 bytes)",
                       DataError);
  // Large but representable: reported as truncated, without trying to allocate it.
  CHECK_THROWS_WITH_AS(parse_idx(make_idx(0x803, {1u << 20, 1u << 20, 1u << 20}, {1}), "big"),
                       "big: truncated: expected 1152921504606846976 pixel bytes, got 1", DataError);
  // A zero dimension is an empty array, even next to huge ones.
  CHECK(parse_idx(make_idx(0x803, {0xffffffffu, 0xffffffffu, 0}, {}), "empty").data.empty());
}

TEST_CASE("parse_idx reads gzip data, including concatenated members") {
  TempDir dir("idx-gz");
  const Bytes idx = make_idx(0x803, {3, 5, 7}, iota_bytes(105, 3));
  const Bytes gz = gzip_bytes(idx, dir, "a.gz");
  REQUIRE(gz.size() > 2);
  CHECK(gz[0] == 0x1f);
  const IdxArray a = parse_idx(gz, "a.gz");
  CHECK(a.dims == std::vector<int64_t>{3, 5, 7});
  CHECK(a.data == iota_bytes(105, 3));

  Bytes two = gzip_bytes(Bytes(idx.begin(), idx.begin() + 20), dir, "b1.gz");
  const Bytes second = gzip_bytes(Bytes(idx.begin() + 20, idx.end()), dir, "b2.gz");
  two.insert(two.end(), second.begin(), second.end());
  CHECK(parse_idx(two, "two.gz").data == iota_bytes(105, 3));
}

TEST_CASE("parse_idx rejects truncated and corrupt gzip data") {
  TempDir dir("idx-gz-bad");
  const Bytes idx = make_idx(0x803, {10, 28, 28}, iota_bytes(7840));
  const Bytes gz = gzip_bytes(idx, dir, "x.gz");
  const Bytes cut(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2));
  CHECK_THROWS_WITH_AS(parse_idx(cut, "x.gz"), doctest::Contains("x.gz: truncated"), DataError);
  const Bytes header_only(gz.begin(), gz.begin() + 12);
  CHECK_THROWS_WITH_AS(parse_idx(header_only, "x.gz"), doctest::Contains("x.gz: truncated"), DataError);
  Bytes bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0xff;  // inside the CRC32 trailer
  CHECK_THROWS_WITH_AS(parse_idx(bad_crc, "x.gz"), doctest::Contains("x.gz: corrupt gzip data"), DataError);
  // The gzip stream is fine but the IDX inside it is short.
  const Bytes short_idx = gzip_bytes(make_idx(0x803, {10, 28, 28}, iota_bytes(1000)), dir, "s.gz");
  CHECK_THROWS_WITH_AS(parse_idx(short_idx, "s.gz"), "s.gz: truncated: expected 7840 pixel bytes, got 1000",
                       DataError);
  const Bytes long_idx = gzip_bytes(make_idx(0x801, {3}, iota_bytes(70000)), dir, "l.gz");
  CHECK_THROWS_WITH_AS(parse_idx(long_idx, "l.gz"), doctest::Contains("(trailing bytes)"), DataError);
}

TEST_CASE("parse_idx only ever returns a consistent array or throws DataError on mutated input") {
  TempDir dir("idx-fuzz");
  const Bytes plain = make_idx(0x803, {4, 3, 3}, iota_bytes(36));
  const Bytes gz = gzip_bytes(plain, dir, "f.gz");
  Rng rng(7, Purpose::kData, 99);
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = (iter % 2 == 0) ? plain : gz;
    const int edits = 1 + static_cast<int>(rng.below(4));
    for (int e = 0; e < edits; ++e) {
      switch (rng.below(3)) {
        case 0:  // flip a byte
          b[rng.below(b.size())] = static_cast<uint8_t>(rng.below(256));
          break;
        case 1:  // cut
          b.resize(rng.below(b.size() + 1));
          break;
        default:  // append junk
          b.push_back(static_cast<uint8_t>(rng.below(256)));
          break;
      }
      if (b.empty()) break;
    }
    try {
      const IdxArray a = parse_idx(b, "fuzz");
      uint64_t product = 1;
      for (int64_t d : a.dims) product *= static_cast<uint64_t>(d);
      REQUIRE(product == a.data.size());
      ++accepted;
    } catch (const DataError&) {
      ++rejected;
    }
  }
  CHECK(accepted > 0);
  CHECK(rejected > 0);
}

TEST_CASE("load_fashion_mnist reads a tiny gzip dataset, scales pixels and checksums files") {
  TempDir dir("fashion-tiny");
  write_tiny_fashion(dir, Bytes{3, 0, 9}, Bytes{1, 2});
  const DataSplit s = load_fashion_mnist(dir.path.string());
  CHECK(s.train.size() == 3);
  CHECK(s.test.size() == 2);
  CHECK(s.train.features == 4);
  CHECK(s.train.classes == 10);
  CHECK(s.train.y == std::vector<int32_t>{3, 0, 9});
  CHECK(s.test.y == std::vector<int32_t>{1, 2});
  CHECK(s.train.x[0] == 250.0f / 255.0f);
  CHECK(s.train.x[5] == 1.0f);  // byte 255
  CHECK(s.train.x[6] == 0.0f);  // byte 256 wraps to 0
  CHECK(s.test.x[7] == 7.0f / 255.0f);
  REQUIRE(s.files.size() == 4);
  const char* names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
  for (size_t i = 0; i < 4; ++i) {
    const std::string path = dir.file(names[i]);
    CHECK(s.files[i].path == path);
    CHECK(s.files[i].bytes == fs::file_size(path));
    CHECK(s.files[i].xxh64 == xxh64_hex(read_all(path)));
  }
}

TEST_CASE("load_fashion_mnist accepts uncompressed files when no .gz exists") {
  TempDir dir("fashion-plain");
  write_tiny_fashion(dir, Bytes{3, 0, 9}, Bytes{1, 2});
  fs::remove(dir.file("t10k-labels-idx1-ubyte.gz"));
  const Bytes labels = make_idx(0x801, {2}, Bytes{4, 5});
  write_plain(dir.file("t10k-labels-idx1-ubyte"), labels);
  const DataSplit s = load_fashion_mnist(dir.path.string() + "/");
  CHECK(s.test.y == std::vector<int32_t>{4, 5});
  CHECK(s.files[3].path == dir.file("t10k-labels-idx1-ubyte"));
  CHECK(s.files[3].xxh64 == xxh64_hex(labels));
}

TEST_CASE("load_fashion_mnist rejects inconsistent files") {
  SUBCASE("a label out of range") {
    TempDir dir("fashion-label");
    write_tiny_fashion(dir, Bytes{3, 10, 9}, Bytes{1, 2});
    CHECK_THROWS_WITH_AS(
        load_fashion_mnist(dir.path.string()),
        (dir.file("train-labels-idx1-ubyte.gz") + ": label 10 at index 1 is out of range 0..9").c_str(),
        DataError);
  }
  SUBCASE("fewer labels than images") {
    TempDir dir("fashion-count");
    write_tiny_fashion(dir, Bytes{3, 0, 9}, Bytes{1, 2});
    write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), make_idx(0x801, {1}, Bytes{1}));
    CHECK_THROWS_WITH_AS(load_fashion_mnist(dir.path.string()), doctest::Contains("1 labels for 2 images"),
                         DataError);
  }
  SUBCASE("labels where images should be") {
    TempDir dir("fashion-swap");
    write_tiny_fashion(dir, Bytes{3, 0, 9}, Bytes{1, 2});
    write_gz(dir.file("train-images-idx3-ubyte.gz"), make_idx(0x801, {3}, Bytes{1, 2, 3}));
    CHECK_THROWS_WITH_AS(load_fashion_mnist(dir.path.string()), doctest::Contains("expected an image file"),
                         DataError);
  }
}

TEST_CASE("a missing dataset file is named in the error, with the package for the default dir") {
  TempDir dir("fashion-missing");
  CHECK_THROWS_WITH_AS(load_fashion_mnist(dir.path.string()),
                       (dir.file("train-images-idx3-ubyte.gz") + ": not found").c_str(), DataError);
  write_tiny_fashion(dir, Bytes{3, 0, 9}, Bytes{1, 2});
  fs::remove(dir.file("t10k-images-idx3-ubyte.gz"));
  CHECK_THROWS_WITH_AS(load_fashion_mnist(dir.path.string()),
                       (dir.file("t10k-images-idx3-ubyte.gz") + ": not found").c_str(), DataError);
  if (fs::exists(kFashionMnistDefaultDir)) {
    MESSAGE("Fashion-MNIST is installed: the default-dir message is not exercised");
  } else {
    CHECK_THROWS_WITH_AS(
        load_fashion_mnist(kFashionMnistDefaultDir),
        (std::string(kFashionMnistDefaultDir) + "/train-images-idx3-ubyte.gz: not found (install Debian's "
                                                "dataset-fashion-mnist: tools/install-deps.sh)")
            .c_str(),
        DataError);
  }
}

TEST_CASE("the installed Fashion-MNIST loads as 60000 + 10000 images of 784 pixels") {
  if (!fs::exists(kFashionMnistDefaultDir)) {
    MESSAGE("skipped: ", kFashionMnistDefaultDir, " not found (Debian dataset-fashion-mnist)");
    return;
  }
  const DataSplit s = load_fashion_mnist(kFashionMnistDefaultDir);
  CHECK(s.train.size() == 60000);
  CHECK(s.test.size() == 10000);
  CHECK(s.train.features == 784);
  CHECK(s.test.features == 784);
  CHECK(s.train.x.size() == 60000u * 784u);
  // Both splits are exactly balanced.
  std::vector<int> train_counts(10), test_counts(10);
  for (int32_t y : s.train.y) ++train_counts.at(static_cast<size_t>(y));
  for (int32_t y : s.test.y) ++test_counts.at(static_cast<size_t>(y));
  CHECK(train_counts == std::vector<int>(10, 6000));
  CHECK(test_counts == std::vector<int>(10, 1000));
  const auto [lo, hi] = std::minmax_element(s.train.x.begin(), s.train.x.end());
  CHECK(*lo == 0.0f);
  CHECK(*hi == 1.0f);
  REQUIRE(s.files.size() == 4);
  for (const DataFile& f : s.files) {
    CHECK(f.bytes == fs::file_size(f.path));
    CHECK(f.xxh64.size() == 16);
  }
}

TEST_CASE("make_blobs is deterministic, balanced and seed-dependent") {
  BlobsSpec spec;
  spec.classes = 3;
  spec.features = 5;
  spec.train = 300;
  spec.test = 90;
  const DataSplit a = make_blobs(spec, 11);
  const DataSplit b = make_blobs(spec, 11);
  const DataSplit c = make_blobs(spec, 12);
  CHECK(a.train.size() == 300);
  CHECK(a.test.size() == 90);
  CHECK(a.train.x.size() == 1500);
  CHECK(a.train.classes == 3);
  CHECK(a.files.empty());
  CHECK(a.train.x == b.train.x);
  CHECK(a.train.y == b.train.y);
  CHECK(a.test.x == b.test.x);
  CHECK(a.train.x != c.train.x);
  CHECK(a.train.y != c.train.y);  // shuffled order depends on the seed
  std::vector<int> counts(3);
  for (int32_t y : a.train.y) ++counts.at(static_cast<size_t>(y));
  CHECK(counts == std::vector<int>{100, 100, 100});
  // Train and test come from different streams.
  CHECK(!std::equal(a.test.x.begin(), a.test.x.end(), a.train.x.begin()));
  // With spread 0 every sample is its class centre: samples are equal exactly when classes are.
  spec.spread = 0.0;
  const Dataset exact = make_blobs(spec, 11).train;
  int inconsistent = 0;
  for (int64_t i = 0; i < exact.size(); ++i) {
    for (int64_t j = 0; j < exact.size(); j += 37) {
      const bool same_class = exact.y[static_cast<size_t>(i)] == exact.y[static_cast<size_t>(j)];
      const bool same_x = std::equal(exact.sample(i), exact.sample(i) + 5, exact.sample(j));
      inconsistent += same_class != same_x;
    }
  }
  CHECK(inconsistent == 0);
}

TEST_CASE("make_blobs rejects impossible specs") {
  BlobsSpec spec;
  spec.classes = 0;
  CHECK_THROWS_AS(make_blobs(spec, 1), std::invalid_argument);
  spec = BlobsSpec{};
  spec.features = 0;
  CHECK_THROWS_AS(make_blobs(spec, 1), std::invalid_argument);
  spec = BlobsSpec{};
  spec.train = -1;
  CHECK_THROWS_AS(make_blobs(spec, 1), std::invalid_argument);
  spec = BlobsSpec{};
  spec.spread = -0.5;
  CHECK_THROWS_AS(make_blobs(spec, 1), std::invalid_argument);
}

TEST_CASE("truncate_dataset keeps the first n samples and ignores n outside (0, size)") {
  BlobsSpec spec;
  spec.features = 3;
  spec.train = 10;
  spec.test = 0;
  Dataset d = make_blobs(spec, 1).train;
  const Dataset original = d;
  truncate_dataset(d, 0);
  CHECK(d.size() == 10);
  truncate_dataset(d, 10);
  CHECK(d.size() == 10);
  truncate_dataset(d, 4);
  CHECK(d.size() == 4);
  CHECK(d.x.size() == 12);
  CHECK(std::equal(d.x.begin(), d.x.end(), original.x.begin()));
  CHECK(std::equal(d.y.begin(), d.y.end(), original.y.begin()));
}

TEST_CASE("shard_iid splits samples into sorted disjoint shards covering all of them") {
  const auto shards = shard_iid(103, 4, 5);
  REQUIRE(shards.size() == 4);
  std::vector<int> seen(103);
  size_t lo = 1000, hi = 0;
  for (const auto& s : shards) {
    CHECK(std::is_sorted(s.begin(), s.end()));
    lo = std::min(lo, s.size());
    hi = std::max(hi, s.size());
    for (int32_t i : s) ++seen.at(static_cast<size_t>(i));
  }
  CHECK(hi - lo <= 1);
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  CHECK(shards == shard_iid(103, 4, 5));
  CHECK(shards != shard_iid(103, 4, 6));
  // Not contiguous ranges: the assignment is shuffled.
  CHECK(shards[0].back() - shards[0].front() > 26);
  // More workers than samples: some shards are empty.
  const auto sparse = shard_iid(3, 5, 1);
  CHECK(sparse[0].size() == 1);
  CHECK(sparse[4].empty());
  CHECK_THROWS_AS(shard_iid(10, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(shard_iid(-1, 2, 1), std::invalid_argument);
}

TEST_CASE("a batch sampler visits its shard exactly once per epoch, even across batch edges") {
  std::vector<int32_t> shard;
  for (int32_t i = 0; i < 10; ++i) shard.push_back(3 * i + 1);
  BatchSampler sampler(shard, 42, 3);
  CHECK(sampler.shard_size() == 10);
  CHECK(sampler.epochs_started() == 0);
  std::vector<int32_t> stream;
  for (int k = 0; k < 10; ++k) {  // 10 batches of 4 = 4 epochs of 10
    const auto b = sampler.next(4);
    REQUIRE(b.size() == 4);
    stream.insert(stream.end(), b.begin(), b.end());
  }
  CHECK(sampler.epochs_started() == 4);
  std::vector<std::vector<int32_t>> epochs;
  for (size_t e = 0; e < 4; ++e) {
    std::vector<int32_t> ep(stream.begin() + static_cast<std::ptrdiff_t>(10 * e),
                            stream.begin() + static_cast<std::ptrdiff_t>(10 * e + 10));
    epochs.push_back(ep);
    std::sort(ep.begin(), ep.end());
    CHECK(ep == shard);
  }
  CHECK(epochs[0] != epochs[1]);  // reshuffled each epoch
}

TEST_CASE("batch order is deterministic per seed and worker and differs across workers") {
  std::vector<int32_t> shard(50);
  for (int32_t i = 0; i < 50; ++i) shard[static_cast<size_t>(i)] = i;
  auto draw = [&shard](uint64_t seed, uint32_t worker) {
    BatchSampler s(shard, seed, worker);
    std::vector<int32_t> out;
    for (int k = 0; k < 7; ++k) {
      const auto b = s.next(16);
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  };
  CHECK(draw(1, 0) == draw(1, 0));
  CHECK(draw(1, 0) != draw(1, 1));
  CHECK(draw(1, 0) != draw(2, 0));
}

TEST_CASE("a batch sampler rejects batches larger than its shard or below one") {
  BatchSampler s({1, 2, 3}, 1, 0);
  CHECK_THROWS_WITH_AS(s.next(4), "BatchSampler: batch 4 is larger than the shard of 3 samples",
                       std::invalid_argument);
  CHECK_THROWS_AS(s.next(0), std::invalid_argument);
  CHECK(s.next(3).size() == 3);
  BatchSampler empty({}, 1, 0);
  CHECK_THROWS_AS(empty.next(1), std::invalid_argument);
}

TEST_CASE("shared sampling draws batches larger than any shard, in range, and the same per seed and worker") {
  auto a = BatchSampler::shared(50, 7, 2);
  auto b = BatchSampler::shared(50, 7, 2);
  auto c = BatchSampler::shared(50, 7, 3);
  std::set<int32_t> seen;
  bool differs = false;
  for (int k = 0; k < 20; ++k) {
    const auto xs = a.next(128);
    const std::vector<int32_t> x(xs.begin(), xs.end());
    const auto y = b.next(128);
    const auto z = c.next(128);
    CHECK(std::equal(x.begin(), x.end(), y.begin(), y.end()));
    differs = differs || !std::equal(x.begin(), x.end(), z.begin(), z.end());
    for (const int32_t i : x) {
      CHECK(i >= 0);
      CHECK(i < 50);
      seen.insert(i);
    }
  }
  CHECK(differs);
  CHECK(seen.size() == 50);  // with replacement from all 50: every sample turns up over 2,560 draws
  CHECK_THROWS(BatchSampler::shared(0, 1, 0));
}

TEST_CASE("hold_out_validation moves the last training samples into the evaluation set") {
  DataSplit d = make_blobs(BlobsSpec{.classes = 3, .features = 4, .train = 50, .test = 20, .spread = 1.0}, 7);
  const DataSplit whole = d;
  hold_out_validation(d, 15);
  CHECK(d.train.size() == 35);
  CHECK(d.test.size() == 15);
  CHECK(d.test.features == 4);
  CHECK(d.test.classes == 3);
  CHECK(std::equal(d.train.x.begin(), d.train.x.end(), whole.train.x.begin()));
  CHECK(std::equal(d.test.x.begin(), d.test.x.end(), whole.train.x.begin() + 35 * 4));
  CHECK(std::equal(d.test.y.begin(), d.test.y.end(), whole.train.y.begin() + 35));
  DataSplit e = whole;
  CHECK_THROWS_AS(hold_out_validation(e, 50), std::invalid_argument);  // no training sample left
  CHECK_THROWS_AS(hold_out_validation(e, 0), std::invalid_argument);
}

}  // namespace stalesim
