// Datasets: the Fashion-MNIST IDX reader, Gaussian blobs, sharding and per-worker batch order.
// All randomness comes from base/rng.hpp streams (DESIGN.md section 2, rules 2 and 4).

#include "models/dataset.hpp"

#include <xxhash.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "base/file_read.hpp"

namespace stalesim {
namespace {

namespace fs = std::filesystem;

// Largest IDX payload accepted: far above any real dataset, low enough that header + payload
// never overflows size_t arithmetic.
constexpr uint64_t kMaxIdxPayload = uint64_t{1} << 62;
// Deflate cannot expand data by more than about 1032:1; used to bound reservations made from a
// (possibly hostile) header.
constexpr uint64_t kMaxDeflateRatio = 1032;

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw DataError(name + ": " + what);
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

struct IdxHeader {
  size_t header_bytes = 0;  // 4 + 4 * dims
  std::vector<int64_t> dims;
  uint64_t payload = 0;   // product of dims, in bytes (one byte per element)
  const char* unit = "";  // "pixel bytes" or "label bytes", for messages
};

// Parses the IDX header at the start of `b`. Returns nullopt when `b` is too short to hold it
// (the caller decides whether more bytes can come); throws DataError when it is malformed.
std::optional<IdxHeader> try_parse_header(std::span<const uint8_t> b, const std::string& name) {
  if (b.size() < 4) return std::nullopt;
  const uint32_t magic =
      (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  if (b[0] != 0 || b[1] != 0) {
    fail(name, "bad magic number " + hex32(magic) + " (expected " + hex32(kImagesMagic) + " for images or " +
                   hex32(kLabelsMagic) + " for labels)");
  }
  if (b[2] != 0x08) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(b[2]));
    fail(name, std::string("unsupported IDX data type ") + buf + " (expected 0x08, unsigned byte)");
  }
  if (magic != kImagesMagic && magic != kLabelsMagic) {
    fail(name, "bad magic number " + hex32(magic) + " (expected " + hex32(kImagesMagic) + " for images or " +
                   hex32(kLabelsMagic) + " for labels)");
  }
  IdxHeader h;
  const size_t ndims = b[3];
  h.header_bytes = 4 + 4 * ndims;
  h.unit = ndims == 3 ? "pixel bytes" : "label bytes";
  if (b.size() < h.header_bytes) return std::nullopt;
  uint64_t product = 1;
  bool overflow = false;
  std::string shape;
  for (size_t i = 0; i < ndims; ++i) {
    const uint8_t* p = b.data() + 4 + 4 * i;
    const uint32_t d =
        (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
    h.dims.push_back(static_cast<int64_t>(d));
    shape += (i ? " x " : "") + std::to_string(d);
    if (__builtin_mul_overflow(product, uint64_t{d}, &product) || product > kMaxIdxPayload) {
      overflow = true;
    }
  }
  // A zero dimension makes the product 0 even if an earlier partial product overflowed.
  if (std::find(h.dims.begin(), h.dims.end(), 0) != h.dims.end()) {
    overflow = false;
    product = 0;
  }
  if (overflow) fail(name, "absurd dimensions " + shape + " (more than 2^62 bytes)");
  h.payload = product;
  return h;
}

// Asks the kernel to back [p, p + bytes) with transparent huge pages where it allows them on
// request (Linux, THP "madvise"): the training images as floats are 188 MB, and filling them a
// 4 KiB page fault at a time took most of the quick start's load time on a virtual machine. A
// hint only: nothing changes where it is refused.
void advise_huge_pages(void* p, size_t bytes) {
#ifdef __linux__
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

template <class T>
void reserve_huge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

std::string truncated_message(const IdxHeader& h, uint64_t got) {
  return "truncated: expected " + std::to_string(h.payload) + " " + h.unit + ", got " + std::to_string(got);
}

IdxArray parse_plain(std::span<const uint8_t> bytes, const std::string& name) {
  std::optional<IdxHeader> h = try_parse_header(bytes, name);
  if (!h) {
    const size_t need = bytes.size() < 4 ? 4 : 4 + 4 * size_t{bytes[3]};
    fail(name, "truncated: IDX header needs " + std::to_string(need) + " bytes, got " +
                   std::to_string(bytes.size()));
  }
  const uint64_t got = bytes.size() - h->header_bytes;
  if (got < h->payload) fail(name, truncated_message(*h, got));
  if (got > h->payload) {
    fail(name, "expected " + std::to_string(h->payload) + " " + h->unit + ", got " + std::to_string(got) +
                   " (trailing bytes)");
  }
  IdxArray out;
  out.dims = std::move(h->dims);
  reserve_huge(out.data, static_cast<size_t>(h->payload));
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(h->header_bytes), bytes.end());
  return out;
}

bool is_gzip(std::span<const uint8_t> b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

// Inflates a gzip stream (one or more members; anything else after a complete member is ignored,
// as gzread does) and parses the IDX inside. Output is bounded by the header's declared size, so
// a hostile stream cannot make it grow past what the header promises.
IdxArray parse_gzip(std::span<const uint8_t> bytes, const std::string& name) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) fail(name, "cannot initialize zlib");
  struct Guard {
    z_stream* z;
    ~Guard() { inflateEnd(z); }
  } guard{&zs};

  std::vector<uint8_t> out;
  std::optional<IdxHeader> h;
  uint64_t limit = std::numeric_limits<uint64_t>::max();  // header + payload once known
  std::array<uint8_t, 1 << 16> buf;
  size_t in_pos = 0;
  const size_t max_feed = size_t{1} << 30;  // avail_in is a uInt
  bool ended = false;
  while (!ended) {
    if (zs.avail_in == 0 && in_pos < bytes.size()) {
      const size_t n = std::min(bytes.size() - in_pos, max_feed);
      zs.next_in = const_cast<Bytef*>(bytes.data() + in_pos);
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    zs.next_out = buf.data();
    zs.avail_out = static_cast<uInt>(buf.size());
    const int ret = inflate(&zs, Z_NO_FLUSH);
    if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
      fail(name,
           std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "zlib error " + std::to_string(ret)));
    }
    const size_t produced = buf.size() - zs.avail_out;
    if (out.size() + produced > limit) {
      fail(name,
           "expected " + std::to_string(h->payload) + " " + h->unit + ", got more" + " (trailing bytes)");
    }
    out.insert(out.end(), buf.data(), buf.data() + produced);
    if (!h) {
      h = try_parse_header(out, name);
      if (h) {
        limit = h->header_bytes + h->payload;
        const uint64_t bound = (bytes.size() + 1) * kMaxDeflateRatio;
        reserve_huge(out, static_cast<size_t>(std::min(limit, bound)));
        if (out.size() > limit) {
          fail(name,
               "expected " + std::to_string(h->payload) + " " + h->unit + ", got more" + " (trailing bytes)");
        }
      }
    }
    const bool input_left = zs.avail_in > 0 || in_pos < bytes.size();
    if (ret == Z_STREAM_END) {
      // Another gzip member may follow (concatenated .gz files decompress as one).
      const size_t next = in_pos - zs.avail_in;
      if (is_gzip(bytes.subspan(next))) {
        if (inflateReset(&zs) != Z_OK) fail(name, "cannot reset zlib");
      } else {
        ended = true;
      }
    } else if (produced == 0 && !input_left) {
      // All input consumed, no output, no end of stream: the file was cut short.
      if (!h) {
        fail(name, "truncated: gzip stream ends after " + std::to_string(out.size()) +
                       " bytes, inside the IDX header");
      }
      fail(name, truncated_message(*h, out.size() - h->header_bytes) + " (gzip stream ends early)");
    } else if (produced == 0 && ret == Z_BUF_ERROR && zs.avail_in > 0) {
      fail(name, "corrupt gzip data: no progress");  // cannot happen with a sane zlib
    }
  }
  if (!h) {
    const size_t need = out.size() < 4 ? 4 : 4 + 4 * size_t{out[3]};
    fail(name,
         "truncated: IDX header needs " + std::to_string(need) + " bytes, got " + std::to_string(out.size()));
  }
  const uint64_t got = out.size() - h->header_bytes;
  if (got < h->payload) fail(name, truncated_message(*h, got));
  IdxArray arr;
  arr.dims = std::move(h->dims);
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(h->header_bytes));
  arr.data = std::move(out);
  return arr;
}

std::string join_path(const std::string& dir, const std::string& file) {
  if (dir.empty()) return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

bool is_default_dir(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d == kFashionMnistDefaultDir;
}

// Reads `<dir>/<base>.gz`, or `<dir>/<base>` when only the uncompressed file exists.
std::vector<uint8_t> read_dataset_file(const std::string& dir, const std::string& base, DataFile& info) {
  const std::string gz = join_path(dir, base + ".gz");
  const std::string plain = join_path(dir, base);
  std::error_code ec;
  // The folder itself first: a data.path naming a file would otherwise read as "FILE/x: not found".
  if (const auto st = fs::status(dir.empty() ? "." : dir, ec);
      st.type() != fs::file_type::directory && st.type() != fs::file_type::not_found)
    throw DataError(dir +
                    ": data.path is not a folder (it names a file or device; give the folder that holds " +
                    base + ".gz)");
  std::string path;
  if (fs::is_regular_file(gz, ec)) {
    path = gz;
  } else if (fs::is_regular_file(plain, ec)) {
    path = plain;
  } else if (fs::exists(gz, ec) || fs::exists(plain, ec)) {
    const std::string which = fs::exists(gz, ec) ? gz : plain;
    throw DataError(which + ": not a regular file (a folder, FIFO or device is not read)");
  } else {
    std::string msg = gz + ": not found";
    if (is_default_dir(dir)) {
      msg += " (install Debian's dataset-fashion-mnist: tools/install-deps.sh)";
    }
    throw DataError(msg);
  }
  std::string why;
  const auto text = read_regular_file(path, kMaxDataFileBytes, why);
  if (!text) fail(path, "cannot read: " + why);
  const std::vector<uint8_t> bytes(text->begin(), text->end());
  const uintmax_t size = bytes.size();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, static_cast<uint64_t>(XXH64(bytes.data(), bytes.size(), 0)));
  info = DataFile{path, static_cast<uint64_t>(size), hex};
  return bytes;
}

// Fashion-MNIST as published (Xiao, Rasul, Vollgraf 2017, arXiv 1708.07747; Debian's
// dataset-fashion-mnist): the dimensions of each file and the XXH64 (seed 0) of its payload after
// decompression, so that recompressed copies match and a damaged one does not.
struct KnownIdx {
  const char* base;
  std::vector<int64_t> dims;
  uint64_t payload_xxh64;
};
const std::vector<KnownIdx>& fashion_mnist_files() {
  static const std::vector<KnownIdx> files = {
      {"train-images-idx3-ubyte", {60000, 28, 28}, 0x924ae43d1005aa0eULL},
      {"train-labels-idx1-ubyte", {60000}, 0x97e6779495a8b4baULL},
      {"t10k-images-idx3-ubyte", {10000, 28, 28}, 0x52d5cf267209b007ULL},
      {"t10k-labels-idx1-ubyte", {10000}, 0x440bcedb1e3e9174ULL},
  };
  return files;
}

// A file with Fashion-MNIST's exact dimensions must hold its exact bytes: same-sized damage (a bad
// disk, an interrupted copy patched with zeros, an edited file) is caught here; files of other
// dimensions (smaller test sets in Fashion-MNIST's format) are read as they are.
void verify_known(const std::string& base, const IdxArray& a, const std::string& path) {
  for (const auto& k : fashion_mnist_files()) {
    if (base != k.base || a.dims != k.dims) continue;
    const uint64_t got = XXH64(a.data.data(), a.data.size(), 0);
    if (got != k.payload_xxh64) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "corrupt: has Fashion-MNIST's dimensions but not its content (payload XXH64 %016" PRIx64
                    ", expected %016" PRIx64 ")",
                    got, k.payload_xxh64);
      fail(path, std::string(buf) + "; reinstall it (Debian's dataset-fashion-mnist: tools/install-deps.sh)");
    }
  }
}

// Reads one images/labels pair into `d`; appends both files to `files`.
void load_pair(const std::string& dir, const std::string& prefix, Dataset& d, std::vector<DataFile>& files) {
  DataFile fi, fl;
  const IdxArray images = parse_idx(read_dataset_file(dir, prefix + "-images-idx3-ubyte", fi), fi.path);
  files.push_back(fi);
  const IdxArray labels = parse_idx(read_dataset_file(dir, prefix + "-labels-idx1-ubyte", fl), fl.path);
  files.push_back(fl);
  verify_known(prefix + "-images-idx3-ubyte", images, fi.path);
  verify_known(prefix + "-labels-idx1-ubyte", labels, fl.path);
  if (images.dims.size() != 3) {
    fail(fi.path, "expected an image file (magic 0x00000803), got a label file");
  }
  if (labels.dims.size() != 1) {
    fail(fl.path, "expected a label file (magic 0x00000801), got an image file");
  }
  const int64_t n = images.dims[0];
  const int64_t features = images.dims[1] * images.dims[2];
  if (features == 0) fail(fi.path, "images have zero pixels");
  if (labels.dims[0] != n) {
    fail(fl.path,
         std::to_string(labels.dims[0]) + " labels for " + std::to_string(n) + " images in " + fi.path);
  }
  constexpr int32_t kClasses = 10;
  d.features = features;
  d.classes = kClasses;
  d.y.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t v = labels.data[static_cast<size_t>(i)];
    if (v >= kClasses) {
      fail(fl.path,
           "label " + std::to_string(v) + " at index " + std::to_string(i) + " is out of range 0..9");
    }
    d.y[static_cast<size_t>(i)] = v;
  }
  std::array<float, 256> scale;
  for (int v = 0; v < 256; ++v) scale[static_cast<size_t>(v)] = static_cast<float>(v) / 255.0f;
  reserve_huge(d.x, images.data.size());
  d.x.resize(images.data.size());
  std::transform(images.data.begin(), images.data.end(), d.x.begin(),
                 [&scale](uint8_t v) { return scale[v]; });
}

void generate_blobs(Dataset& d, const BlobsSpec& spec, const std::vector<double>& centres, int64_t n,
                    Rng& rng) {
  d.features = spec.features;
  d.classes = spec.classes;
  d.y.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    d.y[static_cast<size_t>(i)] = static_cast<int32_t>(i % spec.classes);
  }
  rng.shuffle(std::span<int32_t>(d.y));
  d.x.resize(static_cast<size_t>(n * spec.features));
  for (int64_t i = 0; i < n; ++i) {
    const double* c = centres.data() + d.y[static_cast<size_t>(i)] * spec.features;
    float* x = d.x.data() + i * spec.features;
    for (int64_t f = 0; f < spec.features; ++f) {
      x[f] = static_cast<float>(c[f] + spec.spread * rng.normal());
    }
  }
}

}  // namespace

IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& name) {
  return is_gzip(bytes) ? parse_gzip(bytes, name) : parse_plain(bytes, name);
}

DataSplit load_fashion_mnist(const std::string& dir) {
  DataSplit s;
  load_pair(dir, "train", s.train, s.files);
  load_pair(dir, "t10k", s.test, s.files);
  if (s.train.features != s.test.features) {
    fail(s.files[2].path, "images have " + std::to_string(s.test.features) +
                              " pixels but training images have " + std::to_string(s.train.features));
  }
  return s;
}

DataSplit make_blobs(const BlobsSpec& spec, uint64_t seed) {
  const int64_t max_samples = std::numeric_limits<int32_t>::max();
  if (spec.classes < 1) throw std::invalid_argument("make_blobs: classes must be >= 1");
  if (spec.features < 1) throw std::invalid_argument("make_blobs: features must be >= 1");
  if (spec.train < 0 || spec.test < 0 || spec.train > max_samples || spec.test > max_samples) {
    throw std::invalid_argument("make_blobs: train and test must be in [0, 2^31)");
  }
  if (!(spec.spread >= 0.0) || !std::isfinite(spec.spread)) {
    throw std::invalid_argument("make_blobs: spread must be finite and >= 0");
  }
  const int64_t most = std::max<int64_t>({spec.train, spec.test, spec.classes});
  if (spec.features > std::numeric_limits<int64_t>::max() / 4 / most) {
    throw std::invalid_argument("make_blobs: samples x features overflows");
  }
  Rng centre_rng(seed, Purpose::kData, 0);
  std::vector<double> centres(static_cast<size_t>(spec.classes * spec.features));
  for (double& c : centres) c = centre_rng.normal();
  DataSplit s;
  Rng train_rng(seed, Purpose::kData, 1);
  generate_blobs(s.train, spec, centres, spec.train, train_rng);
  Rng test_rng(seed, Purpose::kData, 2);
  generate_blobs(s.test, spec, centres, spec.test, test_rng);
  return s;
}

void truncate_dataset(Dataset& d, int64_t n) {
  if (n <= 0 || n >= d.size()) return;
  d.y.resize(static_cast<size_t>(n));
  d.x.resize(static_cast<size_t>(n * d.features));
}

void hold_out_validation(DataSplit& d, int64_t n) {
  const int64_t train = d.train.size();
  if (n <= 0 || n >= train)
    throw std::invalid_argument("validation_samples must be in [1, " + std::to_string(train - 1) +
                                "] (it must leave a training sample), got " + std::to_string(n));
  const int64_t keep = train - n;
  const auto f = static_cast<size_t>(d.train.features);
  Dataset v;
  v.features = d.train.features;
  v.classes = d.train.classes;
  v.x.assign(d.train.x.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(keep) * f), d.train.x.end());
  v.y.assign(d.train.y.begin() + static_cast<std::ptrdiff_t>(keep), d.train.y.end());
  truncate_dataset(d.train, keep);
  d.test = std::move(v);
}

std::vector<std::vector<int32_t>> shard_iid(int64_t n, int32_t workers, uint64_t seed) {
  if (n < 0 || n > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument("shard_iid: n must be in [0, 2^31), got " + std::to_string(n));
  }
  if (workers < 1) {
    throw std::invalid_argument("shard_iid: workers must be >= 1, got " + std::to_string(workers));
  }
  std::vector<int32_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  Rng rng(seed, Purpose::kShard, 0);
  rng.shuffle(std::span<int32_t>(perm));
  std::vector<std::vector<int32_t>> shards(static_cast<size_t>(workers));
  const int64_t base = n / workers;
  const int64_t extra = n % workers;  // the first `extra` shards get one more sample
  int64_t begin = 0;
  for (int32_t w = 0; w < workers; ++w) {
    const int64_t len = base + (w < extra ? 1 : 0);
    auto& s = shards[static_cast<size_t>(w)];
    s.assign(perm.begin() + begin, perm.begin() + begin + len);
    std::sort(s.begin(), s.end());
    begin += len;
  }
  return shards;
}

BatchSampler::BatchSampler(std::vector<int32_t> shard, uint64_t root_seed, uint32_t worker)
    : order_(std::move(shard)), rng_(root_seed, Purpose::kBatchOrder, worker) {}

BatchSampler BatchSampler::shared(int64_t population, uint64_t root_seed, uint32_t worker) {
  if (population < 1) throw std::invalid_argument("BatchSampler::shared: population must be >= 1");
  BatchSampler b({}, root_seed, worker);
  b.population_ = population;
  return b;
}

void BatchSampler::reshuffle() {
  rng_.shuffle(std::span<int32_t>(order_));
  pos_ = 0;
  ++epoch_;
}

std::span<const int32_t> BatchSampler::next(int32_t batch) {
  if (batch < 1) {
    throw std::invalid_argument("BatchSampler: batch must be >= 1, got " + std::to_string(batch));
  }
  if (population_ == 0 && static_cast<size_t>(batch) > order_.size()) {
    throw std::invalid_argument("BatchSampler: batch " + std::to_string(batch) +
                                " is larger than the shard of " + std::to_string(order_.size()) + " samples");
  }
  batch_.resize(static_cast<size_t>(batch));
  if (population_ > 0) {
    for (auto& i : batch_) i = static_cast<int32_t>(rng_.below(static_cast<uint64_t>(population_)));
    return batch_;
  }
  size_t filled = 0;
  while (filled < batch_.size()) {
    if (epoch_ == 0 || pos_ == order_.size()) reshuffle();
    const size_t take = std::min(batch_.size() - filled, order_.size() - pos_);
    std::copy_n(order_.begin() + static_cast<std::ptrdiff_t>(pos_), take,
                batch_.begin() + static_cast<std::ptrdiff_t>(filled));
    pos_ += take;
    filled += take;
  }
  return batch_;
}

std::vector<int32_t> BatchSampler::peek(int32_t batch) const {
  if (epoch_ > 0 && batch >= 1 && pos_ + static_cast<size_t>(batch) <= order_.size())
    return {order_.begin() + static_cast<std::ptrdiff_t>(pos_),
            order_.begin() + static_cast<std::ptrdiff_t>(pos_) + batch};
  BatchSampler copy = *this;  // the batch crosses an epoch: replay the reshuffle on a copy
  const auto b = copy.next(batch);
  return {b.begin(), b.end()};
}

}  // namespace stalesim
