#include "sim/scenario.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "models/cuda/cuda_model.hpp"
#include "models/device_profile.hpp"
#include "sim/file_read.hpp"
#include "sim/scenario_fields.hpp"

#include "models/cost_arch.hpp"
#include "sim/text.hpp"

namespace stalesim {

namespace {

using json = nlohmann::json;

// Bounds are compared as long double, which must hold every int64, uint64 and double exactly.
static_assert(std::numeric_limits<long double>::digits >= 64,
              "scenario bounds need a long double with a 64-bit mantissa (x86-64)");

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxInt53 = int64_t{1} << 53;  // largest count every JSON reader holds exactly
constexpr int64_t kMaxWorkers = 1'000'000;
constexpr int64_t kMaxHiddenWidth = 65536;
constexpr size_t kMaxHiddenLayers = 64;
constexpr size_t kMaxScheduleEvents = 100'000;
constexpr size_t kMaxNameLength = 100;
constexpr double kMaxSeconds = 1e9;  // keeps every time well inside SimTime's int64 nanoseconds
// Bounds that keep every derived duration (compute time x jitter x schedule, transfer time)
// inside SimTime's range; a run that still leaves it stops with a TimeRangeError (sim_time.hpp).
constexpr double kMaxFactor = 1e6;
constexpr double kMaxSigma = 4;
constexpr double kMaxCv = 100;
constexpr double kMaxFlopsPerSample = 1e18;
constexpr double kMinGbps = 1e-6;  // 1 kbit/s
constexpr double kMaxGbps = 1e6;
constexpr size_t kMaxRenderedValue = 60;

// ---- Errors --------------------------------------------------------------------------------

// A problem at a JSON path; the entry points add the origin and turn it into a ScenarioError.
struct PathError {
  std::string path;
  std::string problem;
};

[[noreturn]] void fail(std::string path, std::string problem) {
  throw PathError{std::move(path), std::move(problem)};
}

ScenarioError scenario_error(const std::string& origin, const PathError& e) {
  return ScenarioError(fmt::format("{}: {}: {}", origin, e.path.empty() ? "/" : e.path, e.problem));
}

// ---- Paths and values ----------------------------------------------------------------------

std::string_view parent_path(std::string_view pointer) {
  return pointer.substr(0, pointer.rfind('/') == std::string_view::npos ? 0 : pointer.rfind('/'));
}

std::string_view leaf_name(std::string_view pointer) {
  const size_t slash = pointer.rfind('/');
  return slash == std::string_view::npos ? pointer : pointer.substr(slash + 1);
}

// "/policy/type" -> "policy.type", the spelling of --set and of prose.
std::string dotted(std::string_view pointer) {
  std::string out(pointer.substr(pointer.empty() ? 0 : 1));
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

// A pattern with "*" replaced by the element index.
std::string instantiate(std::string_view pattern, size_t index) {
  std::string out(pattern);
  if (const size_t star = out.find('*'); star != std::string::npos)
    out.replace(star, 1, std::to_string(index));
  return out;
}

// The value as compact JSON, cut to about 60 characters (never inside a UTF-8 sequence).
std::string render(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= kMaxRenderedValue) return text;
  size_t cut = kMaxRenderedValue - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

// An integral JSON number (1e3 counts), exactly; nullopt for anything else.
std::optional<long double> integral_value(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d) return static_cast<long double>(d);
  }
  return std::nullopt;
}

long double number_value(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

// A bound for messages: integral values without a fraction ("1000000000", not "1e+09").
std::string format_bound(const json& b) {
  if (b.is_number_integer()) return b.dump();
  const double d = b.get<double>();
  if (std::floor(d) == d && std::fabs(d) < 1e15) return fmt::format("{}", static_cast<int64_t>(d));
  return fmt::format("{}", d);
}

// The bounds in words; a maximum that is only a representation limit is left out unless asked.
std::string describe_range(const FieldInfo& f, bool with_limit = false) {
  const bool lo = !f.minimum.is_null(), hi = !f.maximum.is_null() && (with_limit || !f.maximum_is_limit);
  if (lo && hi)
    return fmt::format("in {}{}, {}{}", f.exclusive_minimum ? '(' : '[', format_bound(f.minimum),
                       format_bound(f.maximum), f.exclusive_maximum ? ')' : ']');
  if (lo) return fmt::format("{} {}", f.exclusive_minimum ? ">" : ">=", format_bound(f.minimum));
  if (hi) return fmt::format("{} {}", f.exclusive_maximum ? "<" : "<=", format_bound(f.maximum));
  return "";
}

bool below_maximum(const FieldInfo& f, long double x) {
  if (f.maximum.is_null()) return true;
  const long double m = number_value(f.maximum);
  return f.exclusive_maximum ? x < m : x <= m;
}

bool in_range(const FieldInfo& f, long double x) {
  if (!f.minimum.is_null()) {
    const long double m = number_value(f.minimum);
    if (f.exclusive_minimum ? !(x > m) : !(x >= m)) return false;
  }
  return below_maximum(f, x);
}

std::string quoted_list(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + json(v).dump();
  return out;
}

// ---- Conversions between JSON and Scenario members ----------------------------------------

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
T integer_from(const json& v) {  // REQUIRES: integral_value(v) and in T's range
  if (v.is_number_unsigned()) return static_cast<T>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<T>(v.get<int64_t>());
  return static_cast<T>(v.get<double>());
}

template <class T>
T from_json_value(const json& v) {  // REQUIRES: v passed the field's checks
  if constexpr (IsOptional<T>::value) {
    if (v.is_null()) return std::nullopt;
    return from_json_value<typename T::value_type>(v);
  } else if constexpr (std::is_enum_v<T>) {  // a name, checked against the field's allowed values
    return *enum_from_name<T>(v.get<std::string>());
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    T out;
    for (const auto& item : v) out.push_back(integer_from<int64_t>(item));
    return out;
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    return v.get<T>();
  } else if constexpr (std::is_integral_v<T>) {
    return integer_from<T>(v);
  } else {
    static_assert(std::is_same_v<T, double>);
    return v.get<double>();
  }
}

template <class T>
json to_json_value(const T& x) {
  if constexpr (IsOptional<T>::value) {
    return x ? to_json_value(*x) : json(nullptr);
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(enum_name(x));
  } else {
    return json(x);
  }
}

// The member reached from `obj` through a chain of member pointers: member<&A::b, &B::c>(a) is a.b.c.
template <auto M, auto... Ms, class T>
auto& member(T& obj) {
  if constexpr (sizeof...(Ms) == 0) {
    return obj.*M;
  } else {
    return member<Ms...>(obj.*M);
  }
}

template <auto... Ms>
void set_m(Scenario& s, size_t, const json& v) {
  auto& m = member<Ms...>(s);
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto... Ms>
json get_m(const Scenario& s, size_t) {
  return to_json_value(member<Ms...>(s));
}
template <auto M>
void set_worker(Scenario& s, size_t i, const json& v) {
  auto& m = s.cluster.workers[i].*M;
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto M>
json get_worker(const Scenario& s, size_t i) {
  return to_json_value(s.cluster.workers[i].*M);
}

// A group's own jitter object (cluster.workers[i].jitter): absent unless given, so its keys are
// written back only for groups that have one (a discarded JSON value means "omit").
template <auto M>
void set_group_jitter(Scenario& s, size_t i, const json& v) {
  auto& g = s.cluster.workers[i];
  if (!g.jitter) g.jitter = JitterSpec{};
  auto& m = (*g.jitter).*M;
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto M>
json get_group_jitter(const Scenario& s, size_t i) {
  const auto& g = s.cluster.workers[i];
  return g.jitter ? to_json_value((*g.jitter).*M) : json(json::value_t::discarded);
}
// A group's profile-file figures (cluster.workers[i].device): absent unless given, as the jitter.
template <auto M>
void set_group_device(Scenario& s, size_t i, const json& v) {
  auto& g = s.cluster.workers[i];
  if (!g.device) g.device = DeviceProfile{};
  auto& m = (*g.device).*M;
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto M>
json get_group_device(const Scenario& s, size_t i) {
  const auto& g = s.cluster.workers[i];
  return g.device ? to_json_value((*g.device).*M) : json(json::value_t::discarded);
}
template <auto M>
void set_event(Scenario& s, size_t i, const json& v) {
  auto& m = s.cluster.schedule[i].*M;
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto M>
json get_event(const Scenario& s, size_t i) {
  return to_json_value(s.cluster.schedule[i].*M);
}

// ---- Checks used by the table --------------------------------------------------------------

// A built-in name or a profile file's path; whether the file exists and holds a profile is checked
// when the scenario file is loaded (load_scenario_text), which copies it into `device`.
std::string check_profile(const json& v) {
  const auto name = v.get<std::string>();
  if (find_profile(name) || name.ends_with(".json")) return "";
  std::string known;
  for (const auto& p : builtin_profiles()) known += (known.empty() ? "" : ", ") + p.name;
  return fmt::format(
      "unknown device profile {}; built-in: {}; or a profile file: a path ending in .json (relative to the "
      "scenario's folder), or NAME for NAME.json in $STALESIM_PROFILE_DIR",
      render(v), known);
}

bool has_math(const Scenario& s) { return traits(s.model.type).has_math; }
bool rule_has(const Scenario& s, uint32_t field) { return (traits(s.optimizer.rule).fields & field) != 0; }
bool policy_has(const Scenario& s, uint32_t field) { return (traits(s.policy.type).fields & field) != 0; }
bool is_fasgd(const Scenario& s) { return rule_has(s, kRuleFasgd); }
// "bsp, asp, ssp with pull-every-iteration, dssp, softsync": the pull-mode policies, from the traits.
std::string pull_mode_policies() {
  std::string out;
  for (const auto& [type, name] : enum_names(PolicyType{})) {
    if (!traits(type).pull_mode) continue;
    out += fmt::format("{}{}{}", out.empty() ? "" : ", ", name,
                       (traits(type).fields & kPolicyCache) ? " with pull-every-iteration" : "");
  }
  return out;
}
bool has_data(const Scenario& s) { return s.data.dataset != "none"; }
bool is_workload(const Scenario& s) { return !traits(s.model.type).dataset.empty(); }
// Whether the cnn (models/cnn.hpp) takes images of `features` pixels: S x S, S % 4 == 0, S >= 12.
bool cnn_takes(int64_t features) {
  for (int64_t side = 12; side * side <= features; side += 4)
    if (side * side == features) return true;
  return false;
}

// ---- The table ---------------------------------------------------------------------------

std::vector<FieldInfo> build_fields() {
  using F = FieldType;
  Scenario d;  // the defaults of scenario.hpp, with one default worker group
  d.cluster.workers.resize(1);
  std::string profile_list;
  for (const auto& p : builtin_profiles()) profile_list += (profile_list.empty() ? "" : ", ") + p.name;

  std::vector<FieldInfo> t = {
      {.path = "/name",
       .type = F::kString,
       .min_length = 1,
       .max_length = kMaxNameLength,
       .default_note = "the file name without .json (other characters than those allowed become _)",
       .doc = "Name of the run, used in outputs and as the default output folder results/<name>: letters, "
              "digits and . _ - + = , @ (not starting with .).",
       .check = check_scenario_name,
       .set = set_m<&Scenario::name>,
       .get = get_m<&Scenario::name>},
      {.path = "/seed",
       .type = F::kInteger,
       .minimum = 0,
       .maximum = std::numeric_limits<uint64_t>::max(),
       .maximum_is_limit = true,
       .default_value = d.seed,
       .doc = "Root seed of every random stream; --seed overrides it.",
       .set = set_m<&Scenario::seed>,
       .get = get_m<&Scenario::seed>},
      {.path = "/comment",
       .type = F::kString,
       .max_length = 65536,
       .default_value = d.comment,
       .doc = "Free text: paper, figure, what is scaled down.",
       .set = set_m<&Scenario::comment>,
       .get = get_m<&Scenario::comment>},

      {.path = "/data", .type = F::kObject, .doc = "Training and test data."},
      {.path = "/data/dataset",
       .type = F::kString,
       .allowed = {"fashion-mnist", "blobs", "ratings", "corpus", "lstsq", "none"},
       .default_value = d.data.dataset,
       .default_note = "\"none\" when model.type is \"time-only\"",
       .doc = "Dataset; \"ratings\" goes with model mf, \"corpus\" with lda, \"lstsq\" with lstsq, \"none\" "
              "(no data) with the time-only model, each only with it.",
       .set = set_m<&Scenario::data, &DataSpec::dataset>,
       .get = get_m<&Scenario::data, &DataSpec::dataset>,
       .resolve = [](Scenario& s) { s.data.dataset = has_math(s) ? s.data.dataset : "none"; }},
      {.path = "/data/path",
       .type = F::kString,
       .min_length = 1,
       .default_value = d.data.path,
       .applies_to = "the fashion-mnist dataset",
       .applies_key = "/data/dataset",
       .doc = "Folder with the Fashion-MNIST IDX files (Debian's dataset-fashion-mnist).",
       .applies = [](const Scenario& s) { return s.data.dataset == "fashion-mnist"; },
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
             return s.data.dataset == "fashion-mnist" || s.data.dataset == "blobs" || s.data.dataset == "ratings";
           },
       .set = set_m<&Scenario::data, &DataSpec::validation_samples>,
       .get = get_m<&Scenario::data, &DataSpec::validation_samples>},
      {.path = "/data/partition",
       .type = F::kString,
       .allowed = {"iid", "shared", "label-skew"},
       .default_value = d.data.partition,
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
       .applies = [](const Scenario& s) { return has_data(s) && s.data.partition == "label-skew"; },
       .set = set_m<&Scenario::data, &DataSpec::alpha>,
       .get = get_m<&Scenario::data, &DataSpec::alpha>},
      {.path = "/data/blobs",
       .type = F::kObject,
       .applies_to = "the blobs dataset",
       .applies_key = "/data/dataset",
       .doc = "Gaussian blobs: class centres N(0, 1) per feature, samples centre + N(0, spread).",
       .applies = [](const Scenario& s) { return s.data.dataset == "blobs"; }},
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
      {.path = "/data/ratings",
       .type = F::kObject,
       .applies_to = "the ratings dataset",
       .applies_key = "/data/dataset",
       .doc = "Synthetic ratings of known rank with Zipf row and column popularity (models/mf.hpp).",
       .applies = [](const Scenario& s) { return s.data.dataset == "ratings"; }},
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
      {.path = "/data/lstsq",
       .type = F::kObject,
       .applies_to = "the lstsq dataset",
       .applies_key = "/data/dataset",
       .doc = "Synthetic least-squares problem with Hessian diag(lambda), lambda spaced evenly in log from "
              "curvature down to curvature / condition, solution w* ~ N(0, 1) from the seed "
              "(models/lstsq.hpp).",
       .applies = [](const Scenario& s) { return s.data.dataset == "lstsq"; }},
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
      {.path = "/data/corpus",
       .type = F::kObject,
       .applies_to = "the corpus dataset",
       .applies_key = "/data/dataset",
       .doc = "Synthetic corpus drawn from known topics by LDA's generative process (models/lda.hpp).",
       .applies = [](const Scenario& s) { return s.data.dataset == "corpus"; }},
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

      {.path = "/model", .type = F::kObject, .doc = "The model that is trained (the math)."},
      {.path = "/model/type",
       .type = F::kString,
       .allowed = enum_name_list<ModelType>(),
       .default_value = to_json_value(d.model.type),
       .doc = "softmax regression, a ReLU MLP, a LeNet-5-style CNN for 28x28 images (see README), matrix "
              "factorization (mf), LDA by collapsed Gibbs sampling (lda), an ill-conditioned least-squares "
              "problem with exact gradients (lstsq), or a model that is only timed (no math).",
       .set = set_m<&Scenario::model, &ModelSpec::type>,
       .get = get_m<&Scenario::model, &ModelSpec::type>},
      {.path = "/model/hidden",
       .type = F::kIntegerArray,
       .unit = "units",
       .minimum = 1,
       .maximum = kMaxHiddenWidth,
       .min_items = 1,
       .max_items = kMaxHiddenLayers,
       .default_value = d.model.hidden,
       .applies_to = "mlp models",
       .applies_key = "/model/type",
       .doc = "Hidden layer widths.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kMlp; },
       .set = set_m<&Scenario::model, &ModelSpec::hidden>,
       .get = get_m<&Scenario::model, &ModelSpec::hidden>},
      {.path = "/model/init",
       .type = F::kString,
       .allowed = {"he", "glorot"},
       .default_value = d.model.init,
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Weight initialization.",
       .applies = [](const Scenario& s) { return has_math(s) && !is_workload(s); },
       .set = set_m<&Scenario::model, &ModelSpec::init>,
       .get = get_m<&Scenario::model, &ModelSpec::init>},
      {.path = "/model/parameters",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = int64_t{1} << 40,
       .required = true,
       .applies_to = "time-only models",
       .applies_key = "/model/type",
       .doc = "Declared parameter count (sets message sizes: 4 bytes each).",
       .applies = [](const Scenario& s) { return !has_math(s); },
       .set = set_m<&Scenario::model, &ModelSpec::parameters>,
       .get = get_m<&Scenario::model, &ModelSpec::parameters>},
      {.path = "/model/flops_per_sample",
       .type = F::kNumber,
       .unit = "FLOP",
       .minimum = 0,
       .maximum = kMaxFlopsPerSample,
       .exclusive_minimum = true,
       .required = true,
       .applies_to = "time-only models",
       .applies_key = "/model/type",
       .doc = "Declared forward plus backward FLOPs per sample (sets compute time).",
       .applies = [](const Scenario& s) { return !has_math(s); },
       .set = set_m<&Scenario::model, &ModelSpec::flops_per_sample>,
       .get = get_m<&Scenario::model, &ModelSpec::flops_per_sample>},
      {.path = "/model/cost",
       .type = F::kString,
       .allowed =
           [] {
             std::vector<std::string> names{"derived"};
             for (const auto& a : cost_architectures()) names.push_back(a.name);
             return names;
           }(),
       .default_value = d.model.cost,
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Time each iteration and size each message as this architecture would (FLOPs and "
              "parameters from its paper; see README) while the math model trains; \"derived\": "
              "from the math model.",
       .applies = [](const Scenario& s) { return has_math(s); },
       .set = set_m<&Scenario::model, &ModelSpec::cost>,
       .get = get_m<&Scenario::model, &ModelSpec::cost>},
      {.path = "/model/rank",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 4096,
       .default_value = d.model.rank,
       .applies_to = "mf models",
       .applies_key = "/model/type",
       .doc = "Rank of the learned factors.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kMf; },
       .set = set_m<&Scenario::model, &ModelSpec::rank>,
       .get = get_m<&Scenario::model, &ModelSpec::rank>},
      {.path = "/model/l2",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.model.l2,
       .applies_to = "mf models",
       .applies_key = "/model/type",
       .doc = "L2 strength lambda: each observation adds 0.5 lambda (|u_i|^2 + |v_j|^2) to its loss.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kMf; },
       .set = set_m<&Scenario::model, &ModelSpec::l2>,
       .get = get_m<&Scenario::model, &ModelSpec::l2>},
      {.path = "/model/topics",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 65536,
       .default_value = d.model.topics,
       .applies_to = "lda models",
       .applies_key = "/model/type",
       .doc = "Number of topics K the sampler fits.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kLda; },
       .set = set_m<&Scenario::model, &ModelSpec::topics>,
       .get = get_m<&Scenario::model, &ModelSpec::topics>},
      {.path = "/model/alpha",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.model.alpha,
       .applies_to = "lda models",
       .applies_key = "/model/type",
       .doc = "Sampler's symmetric document-topic Dirichlet prior.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kLda; },
       .set = set_m<&Scenario::model, &ModelSpec::alpha>,
       .get = get_m<&Scenario::model, &ModelSpec::alpha>},
      {.path = "/model/beta",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.model.beta,
       .applies_to = "lda models",
       .applies_key = "/model/type",
       .doc = "Sampler's symmetric topic-word Dirichlet prior.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kLda; },
       .set = set_m<&Scenario::model, &ModelSpec::beta>,
       .get = get_m<&Scenario::model, &ModelSpec::beta>},

      {.path = "/optimizer", .type = F::kObject, .doc = "How gradients become updates."},
      {.path = "/optimizer/rule",
       .type = F::kString,
       .allowed = enum_name_list<RuleType>(),
       .default_value = to_json_value(d.optimizer.rule),
       .doc = "Learning rule applied by the server (see README, Learning rules).",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::rule>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::rule>},
      {.path = "/optimizer/lr",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.optimizer.lr,
       .doc = "Learning rate.",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::lr>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::lr>},
      {.path = "/optimizer/batch_size",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.optimizer.batch_size,
       .doc = "Samples per worker iteration.",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::batch_size>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::batch_size>},
      {.path = "/optimizer/aggregate",
       .type = F::kString,
       .allowed = enum_name_list<Aggregate>(),
       .default_value = "sum",
       .applies_to = "every policy but softsync (which averages its own way)",
       .applies_key = "/policy/type",
       .doc = "sum: each push applies lr * g, the parameter server's additive update (Ho et al. "
              "2013; MXNet's kvstore, behind the DSSP paper, sums too); mean: each push applies "
              "(lr / workers) * g (sgd and sasgd). The default is sum for every policy, BSP "
              "included (BSP used to default to mean: set mean for that).",
       .applies = [](const Scenario& s) { return !traits(s.policy.type).averages_pushes; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::aggregate>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::aggregate>},
      {.path = "/optimizer/momentum",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.optimizer.momentum,
       .doc = "Server-side heavy-ball momentum mu (v = mu v + u; w -= v), for every rule.",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::momentum>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::momentum>},
      {.path = "/optimizer/gamma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .exclusive_maximum = true,
       .default_value = d.optimizer.gamma,
       .applies_to = "fasgd and bfasgd (paper variant)",
       .applies_key = "/optimizer/rule",
       .doc = "Decay of FASGD's moving averages of g and g^2.",
       .applies = [](const Scenario& s) { return is_fasgd(s) && s.optimizer.variant == "paper"; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::gamma>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::gamma>},
      {.path = "/optimizer/beta",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .exclusive_maximum = true,
       .default_value = d.optimizer.beta,
       .applies_to = "fasgd and bfasgd (paper variant)",
       .applies_key = "/optimizer/rule",
       .doc = "Decay of FASGD's moving average of sigma.",
       .applies = [](const Scenario& s) { return is_fasgd(s) && s.optimizer.variant == "paper"; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::beta>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::beta>},
      {.path = "/optimizer/epsilon",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.optimizer.epsilon,
       .applies_to = "fasgd and bfasgd (paper variant)",
       .applies_key = "/optimizer/rule",
       .doc = "Added to the averaged sigma in FASGD's denominator.",
       .applies = [](const Scenario& s) { return is_fasgd(s) && s.optimizer.variant == "paper"; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::epsilon>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::epsilon>},
      {.path = "/optimizer/variant",
       .type = F::kString,
       .allowed = {"paper", "fred"},
       .default_value = d.optimizer.variant,
       .applies_to = "fasgd and bfasgd",
       .applies_key = "/optimizer/rule",
       .doc = "paper: alpha g / (max(tau,1)(sigma_bar + epsilon)); fred: the paper's code, "
              "alpha g / ((tau+1)(EMA_0.9|g| + 0.001)).",
       .applies = [](const Scenario& s) { return is_fasgd(s); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::variant>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::variant>},
      {.path = "/optimizer/c_fetch",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.optimizer.c_fetch,
       .applies_to = "bfasgd",
       .applies_key = "/optimizer/rule",
       .doc = "B-FASGD: a worker fetches with probability 1 / (1 + c_fetch / (v_bar + 1e-4)).",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleBfasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::c_fetch>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::c_fetch>},
      {.path = "/optimizer/c_push",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.optimizer.c_push,
       .applies_to = "bfasgd",
       .applies_key = "/optimizer/rule",
       .doc = "B-FASGD: a worker pushes with probability 1 / (1 + c_push / (v_bar + 1e-4)).",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleBfasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::c_push>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::c_push>},
      {.path = "/optimizer/lambda",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.optimizer.lambda,
       .applies_to = "dcasgd",
       .applies_key = "/optimizer/rule",
       .doc = "DC-ASGD's lambda_0, the strength of the delay compensation.",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleDcasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::lambda>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::lambda>},
      {.path = "/optimizer/adaptive",
       .type = F::kBool,
       .default_value = d.optimizer.adaptive,
       .applies_to = "dcasgd",
       .applies_key = "/optimizer/rule",
       .doc = "DC-ASGD-a: lambda_t = lambda_0 / sqrt(MS_t + 1e-7) per element; false: constant.",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleDcasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::adaptive>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::adaptive>},
      {.path = "/optimizer/ms_decay",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.optimizer.ms_decay,
       .applies_to = "dcasgd",
       .applies_key = "/optimizer/rule",
       .doc = "DC-ASGD-a: decay of the moving average MS of g^2.",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleDcasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::ms_decay>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::ms_decay>},

      {.path = "/policy", .type = F::kObject, .doc = "When a worker may start its next clock."},
      {.path = "/policy/type",
       .type = F::kString,
       .allowed = enum_name_list<PolicyType>(),
       .default_value = to_json_value(d.policy.type),
       .doc = "Bulk synchronous, asynchronous, stale synchronous, eager SSP, dynamic SSP, "
              "value-bounded parallel, or n-softsync (see README, Policies).",
       .set = set_m<&Scenario::policy, &PolicySpec::type>,
       .get = get_m<&Scenario::policy, &PolicySpec::type>},
      {.path = "/policy/staleness",
       .type = F::kInteger,
       .unit = "clocks",
       .minimum = 0,
       .maximum = kMaxInt53,
       .maximum_is_limit = true,
       .default_value = d.policy.staleness,
       .applies_to = "ssp, essp and dssp",
       .applies_key = "/policy/type",
       .doc = "SSP/ESSP bound s (a worker runs at most s clocks ahead of the slowest); DSSP's "
              "lower bound s_L. 0 for the other policies.",
       .applies = [](const Scenario& s) { return s.policy.uses_staleness(); },
       .set = set_m<&Scenario::policy, &PolicySpec::staleness>,
       .get = get_m<&Scenario::policy, &PolicySpec::staleness>,
       .resolve =
           [](Scenario& s) { s.policy.staleness = s.policy.uses_staleness() ? s.policy.staleness : 0; }},
      {.path = "/policy/range",
       .type = F::kInteger,
       .unit = "clocks",
       .minimum = 0,
       .maximum = 1000000,
       .default_value = d.policy.range,
       .applies_to = "dssp",
       .applies_key = "/policy/type",
       .doc = "DSSP's r_max: the most extra clocks the synchronization controller grants beyond s_L.",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyRange); },
       .set = set_m<&Scenario::policy, &PolicySpec::range>,
       .get = get_m<&Scenario::policy, &PolicySpec::range>},
      {.path = "/policy/dssp_grant",
       .type = F::kString,
       .allowed = {"bounded", "literal"},
       .default_value = d.policy.dssp_grant,
       .applies_to = "dssp",
       .applies_key = "/policy/type",
       .doc = "bounded: a grant counts as the first extra clock (gap <= s_L + r_max); literal: the "
              "paper's literal reading (gap <= s_L + r_max + 1).",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyRange); },
       .set = set_m<&Scenario::policy, &PolicySpec::dssp_grant>,
       .get = get_m<&Scenario::policy, &PolicySpec::dssp_grant>},
      {.path = "/policy/cache",
       .type = F::kString,
       .allowed = enum_name_list<CacheMode>(),
       .default_value = to_json_value(d.policy.cache),
       .applies_to = "ssp",
       .applies_key = "/policy/type",
       .doc = "pull-every-iteration: fetch parameters before every clock (MXNet style); lazy: read "
              "the cached copy while it is fresh enough and fetch only when not (Bosen).",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyCache); },
       .set = set_m<&Scenario::policy, &PolicySpec::cache>,
       .get = get_m<&Scenario::policy, &PolicySpec::cache>},
      {.path = "/policy/n",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 1000000,
       .default_value = d.policy.n,
       .applies_to = "softsync",
       .applies_key = "/policy/type",
       .doc = "n-softsync: the server applies the mean of every floor(workers / n) gradients; "
              "1 <= n <= workers.",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyN); },
       .set = set_m<&Scenario::policy, &PolicySpec::n>,
       .get = get_m<&Scenario::policy, &PolicySpec::n>},
      {.path = "/policy/value_bound",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .required = true,
       .applies_to = "vap",
       .applies_key = "/policy/type",
       .doc = "VAP's v: the infinity norm a worker's updates not yet seen by every worker may reach.",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyValueBound); },
       .set = set_m<&Scenario::policy, &PolicySpec::value_bound>,
       .get = get_m<&Scenario::policy, &PolicySpec::value_bound>},

      {.path = "/cluster", .type = F::kObject, .doc = "Workers, network and compute jitter."},
      {.path = "/cluster/workers",
       .type = F::kObjectArray,
       .min_items = 1,
       .max_items = kMaxWorkers,
       .required = true,
       .doc = "Worker groups; at most 1000000 workers in total.",
       .set = [](Scenario& s, size_t, const json& v) { s.cluster.workers.assign(v.size(), WorkerGroup{}); },
       .get = [](const Scenario& s,
                 size_t) { return json(std::vector<json>(s.cluster.workers.size(), json::object())); }},
      {.path = "/cluster/workers/*/profile",
       .type = F::kString,
       .min_length = 1,
       .required = true,
       .doc = "Device profile of the group's workers: a built-in name (" + profile_list +
              "; stalesim profiles), or a profile file: a path ending in .json, relative to the "
              "scenario's folder (e.g. written by stalesim calibrate), or NAME for NAME.json in "
              "$STALESIM_PROFILE_DIR.",
       .check = check_profile,
       .set = set_worker<&WorkerGroup::profile>,
       .get = get_worker<&WorkerGroup::profile>},
      {.path = "/cluster/workers/*/device",
       .type = F::kObject,
       .doc = "The profile file's figures, copied in when the scenario is loaded so that the manifest "
              "reproduces without the file (keys as in the file); absent for a built-in profile.",
       .get =
           [](const Scenario& s, size_t i) {
             return s.cluster.workers[i].device ? json::object() : json(json::value_t::discarded);
           }},
      {.path = "/cluster/workers/*/device/name",
       .type = F::kString,
       .doc = "As the profile file's name.",
       .set = set_group_device<&DeviceProfile::name>,
       .get = get_group_device<&DeviceProfile::name>},
      {.path = "/cluster/workers/*/device/description",
       .type = F::kString,
       .doc = "As the profile file's description.",
       .set = set_group_device<&DeviceProfile::description>,
       .get = get_group_device<&DeviceProfile::description>},
      {.path = "/cluster/workers/*/device/peak_fp32_tflops",
       .type = F::kNumber,
       .unit = "TFLOP/s",
       .minimum = 0,
       .exclusive_minimum = true,
       .doc = "Peak FP32 throughput.",
       .set = set_group_device<&DeviceProfile::peak_fp32_tflops>,
       .get = get_group_device<&DeviceProfile::peak_fp32_tflops>},
      {.path = "/cluster/workers/*/device/peak_fp16_tflops",
       .type = F::kNumber,
       .unit = "TFLOP/s",
       .minimum = 0,
       .doc = "Peak FP16 (Tensor Core, dense) throughput; 0: not offered.",
       .set = set_group_device<&DeviceProfile::peak_fp16_tflops>,
       .get = get_group_device<&DeviceProfile::peak_fp16_tflops>},
      {.path = "/cluster/workers/*/device/peak_bf16_tflops",
       .type = F::kNumber,
       .unit = "TFLOP/s",
       .minimum = 0,
       .doc = "Peak BF16 (Tensor Core, dense) throughput; 0: not offered.",
       .set = set_group_device<&DeviceProfile::peak_bf16_tflops>,
       .get = get_group_device<&DeviceProfile::peak_bf16_tflops>},
      {.path = "/cluster/workers/*/device/memory_bandwidth_gbs",
       .type = F::kNumber,
       .unit = "GB/s",
       .minimum = 0,
       .doc = "Memory bandwidth.",
       .set = set_group_device<&DeviceProfile::memory_bandwidth_gbs>,
       .get = get_group_device<&DeviceProfile::memory_bandwidth_gbs>},
      {.path = "/cluster/workers/*/device/efficiency",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .doc = "Fraction of peak that training kernels sustain.",
       .set = set_group_device<&DeviceProfile::efficiency>,
       .get = get_group_device<&DeviceProfile::efficiency>},
      {.path = "/cluster/workers/*/device/overhead_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .doc = "Fixed per-iteration cost.",
       .set = set_group_device<&DeviceProfile::overhead_us>,
       .get = get_group_device<&DeviceProfile::overhead_us>},
      {.path = "/cluster/workers/*/device/source",
       .type = F::kString,
       .doc = "Where the figures come from.",
       .set = set_group_device<&DeviceProfile::source>,
       .get = get_group_device<&DeviceProfile::source>},
      {.path = "/cluster/workers/*/count",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = kMaxWorkers,
       .default_value = d.cluster.workers[0].count,
       .doc = "Workers in the group.",
       .set = set_worker<&WorkerGroup::count>,
       .get = get_worker<&WorkerGroup::count>},
      {.path = "/cluster/workers/*/precision",
       .type = F::kString,
       .allowed = {"fp32", "fp16", "bf16"},
       .default_value = d.cluster.workers[0].precision,
       .doc = "Which peak of the profile times the group's compute (fp16/bf16: Tensor Core peaks, "
              "where the profile has them).",
       .set = set_worker<&WorkerGroup::precision>,
       .get = get_worker<&WorkerGroup::precision>},
      {.path = "/cluster/workers/*/iteration_ms",
       .type = F::kNumber,
       .unit = "ms",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .exclusive_minimum = true,
       .maximum_is_limit = true,
       .nullable = true,
       .doc = "Explicit time of one iteration before jitter and schedule (e.g. measured for the cost "
              "architecture); null: batch FLOPs / (peak x efficiency) + overhead.",
       .set = set_worker<&WorkerGroup::iteration_ms>,
       .get = get_worker<&WorkerGroup::iteration_ms>},
      {.path = "/cluster/workers/*/latency_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .nullable = true,
       .doc = "One-way latency of this group's links; null: cluster.network.latency_us.",
       .set = set_worker<&WorkerGroup::latency_us>,
       .get = get_worker<&WorkerGroup::latency_us>},
      {.path = "/cluster/workers/*/bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .nullable = true,
       .doc = "Bandwidth of this group's links; null: cluster.network.bandwidth_gbps.",
       .set = set_worker<&WorkerGroup::bandwidth_gbps>,
       .get = get_worker<&WorkerGroup::bandwidth_gbps>},
      {.path = "/cluster/workers/*/latency_sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .nullable = true,
       .doc = "Latency jitter of this group's links; null: cluster.network.latency_sigma.",
       .set = set_worker<&WorkerGroup::latency_sigma>,
       .get = get_worker<&WorkerGroup::latency_sigma>},
      {.path = "/cluster/workers/*/jitter",
       .type = F::kObject,
       .doc = "This group's compute jitter, replacing cluster.jitter for it (keys as there; "
              "defaults as there, not the cluster's values). Per worker: a group of one.",
       .get =
           [](const Scenario& s, size_t i) {
             return s.cluster.workers[i].jitter ? json::object() : json(json::value_t::discarded);
           }},
      {.path = "/cluster/workers/*/jitter/type",
       .type = F::kString,
       .allowed = {"lognormal", "none", "constant", "normal", "exponential", "gamma", "trace"},
       .default_value = d.cluster.jitter.type,
       .doc = "As cluster.jitter.type.",
       .set = set_group_jitter<&JitterSpec::type>,
       .get = get_group_jitter<&JitterSpec::type>},
      {.path = "/cluster/workers/*/jitter/sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .default_value = d.cluster.jitter.sigma,
       .doc = "As cluster.jitter.sigma.",
       .set = set_group_jitter<&JitterSpec::sigma>,
       .get = get_group_jitter<&JitterSpec::sigma>},
      {.path = "/cluster/workers/*/jitter/cv",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxCv,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.cv,
       .doc = "As cluster.jitter.cv.",
       .set = set_group_jitter<&JitterSpec::cv>,
       .get = get_group_jitter<&JitterSpec::cv>},
      {.path = "/cluster/workers/*/jitter/factor",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxFactor,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.factor,
       .doc = "As cluster.jitter.factor.",
       .set = set_group_jitter<&JitterSpec::factor>,
       .get = get_group_jitter<&JitterSpec::factor>},
      {.path = "/cluster/workers/*/jitter/shift",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.cluster.jitter.shift,
       .doc = "As cluster.jitter.shift.",
       .set = set_group_jitter<&JitterSpec::shift>,
       .get = get_group_jitter<&JitterSpec::shift>},
      {.path = "/cluster/workers/*/jitter/path",
       .type = F::kString,
       .default_value = d.cluster.jitter.path,
       .doc = "As cluster.jitter.path.",
       .set = set_group_jitter<&JitterSpec::path>,
       .get = get_group_jitter<&JitterSpec::path>},
      {.path = "/cluster/workers/*/jitter/scale",
       .type = F::kString,
       .allowed = {"absolute", "relative"},
       .default_value = d.cluster.jitter.scale,
       .doc = "As cluster.jitter.scale.",
       .set = set_group_jitter<&JitterSpec::scale>,
       .get = get_group_jitter<&JitterSpec::scale>},
      {.path = "/cluster/order",
       .type = F::kString,
       .allowed = enum_name_list<Order>(),
       .default_value = to_json_value(d.cluster.order),
       .doc = "timed: cost and network models time every step; uniform: order-only mode of the "
              "FASGD paper's simulator (equal iteration times, next worker drawn uniformly among "
              "those not blocked, no transfer time).",
       .set = set_m<&Scenario::cluster, &ClusterSpec::order>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::order>},
      {.path = "/cluster/servers",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 65536,
       .default_value = d.cluster.servers,
       .doc = "Server shards: the parameters are split evenly over them, each has its own link "
              "(server_bandwidth_gbps), and a push or pull is done when all its shard transfers are.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::servers>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::servers>},
      {.path = "/cluster/on_crash",
       .type = F::kString,
       .allowed = {"wait", "drop"},
       .default_value = d.cluster.on_crash,
       .doc = "wait: synchronous policies wait for a crashed worker to rejoin; drop: it leaves the "
              "slowest-clock computation until it rejoins, at the then minimum clock.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::on_crash>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::on_crash>},
      {.path = "/cluster/schedule",
       .type = F::kObjectArray,
       .max_items = kMaxScheduleEvents,
       .default_value = json::array(),
       .doc = "Timed events: slow a worker down, pause it, crash it (and rejoin), or let its speed drift.",
       .set = [](Scenario& s, size_t,
                 const json& v) { s.cluster.schedule.assign(v.size(), ScheduleEvent{}); },
       .get = [](const Scenario& s,
                 size_t) { return json(std::vector<json>(s.cluster.schedule.size(), json::object())); }},
      {.path = "/cluster/schedule/*/kind",
       .type = F::kString,
       .allowed = {"slow", "pause", "crash", "drift"},
       .required = true,
       .doc = "slow: compute takes factor x longer over [at_s, until_s); pause: no compute progress "
              "over it; crash: in-flight work is lost, rejoins at until_s; drift: the factor rises "
              "linearly from 1 at at_s to factor at until_s (judged at each iteration's start).",
       .set = set_event<&ScheduleEvent::kind>,
       .get = get_event<&ScheduleEvent::kind>},
      {.path = "/cluster/schedule/*/workers",
       .type = F::kIntegerArray,
       .minimum = 0,
       .maximum = kMaxWorkers - 1,
       .max_items = kMaxWorkers,
       .default_value = json::array(),
       .doc = "Worker ids it applies to (groups numbered in order from 0); or give group.",
       .set = set_event<&ScheduleEvent::workers>,
       .get = get_event<&ScheduleEvent::workers>},
      {.path = "/cluster/schedule/*/group",
       .type = F::kInteger,
       .minimum = 0,
       .maximum = kMaxWorkers - 1,
       .nullable = true,
       .doc = "Index of the worker group it applies to (every worker of it); or give workers.",
       .set = set_event<&ScheduleEvent::group>,
       .get = get_event<&ScheduleEvent::group>},
      {.path = "/cluster/schedule/*/at_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .required = true,
       .doc = "Virtual time it starts.",
       .set = set_event<&ScheduleEvent::at_s>,
       .get = get_event<&ScheduleEvent::at_s>},
      {.path = "/cluster/schedule/*/until_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .nullable = true,
       .doc = "When it ends (> at_s): slow and drift: null = for good; pause: required; crash: "
              "the rejoin time, null = never rejoins.",
       .set = set_event<&ScheduleEvent::until_s>,
       .get = get_event<&ScheduleEvent::until_s>},
      {.path = "/cluster/schedule/*/factor",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxFactor,
       .exclusive_minimum = true,
       .default_value = ScheduleEvent{}.factor,
       .doc = "slow: compute time multiplier; drift: the multiplier reached at until_s.",
       .set = set_event<&ScheduleEvent::factor>,
       .get = get_event<&ScheduleEvent::factor>},
      {.path = "/cluster/network", .type = F::kObject, .doc = "Links between workers and server."},
      {.path = "/cluster/network/latency_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = d.cluster.network.latency_us,
       .doc = "One-way latency of each worker's link.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_us>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_us>},
      {.path = "/cluster/network/bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .default_value = d.cluster.network.bandwidth_gbps,
       .doc = "Bandwidth of each worker's link.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::bandwidth_gbps>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::bandwidth_gbps>},
      {.path = "/cluster/network/server_bandwidth_gbps",
       .type = F::kNumber,
       .unit = "Gbit/s",
       .minimum = kMinGbps,
       .maximum = kMaxGbps,
       .default_note = "equal to bandwidth_gbps",
       .doc = "Bandwidth of the server's link, shared by all workers in arrival order.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::server_bandwidth_gbps>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::server_bandwidth_gbps>,
       .resolve =
           [](Scenario& s) { s.cluster.network.server_bandwidth_gbps = s.cluster.network.bandwidth_gbps; }},
      {.path = "/cluster/network/latency_sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .default_value = d.cluster.network.latency_sigma,
       .doc = "Latency jitter: each message's latency is multiplied by a lognormal factor of mean 1 "
              "with this log standard deviation (own stream per worker link); 0 = none.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_sigma>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::latency_sigma>},
      {.path = "/cluster/network/message_overhead_us",
       .type = F::kNumber,
       .unit = "us",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = d.cluster.network.message_overhead_us,
       .doc = "Per message and shard, time the server link is busy on top of the bytes.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::message_overhead_us>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::network, &NetworkSpec::message_overhead_us>},
      {.path = "/cluster/jitter", .type = F::kObject, .doc = "Random variation of compute time."},
      {.path = "/cluster/jitter/type",
       .type = F::kString,
       .allowed = {"lognormal", "none", "constant", "normal", "exponential", "gamma", "trace"},
       .default_value = d.cluster.jitter.type,
       .doc = "Multiply each compute time by a factor of mean 1: lognormal (sigma), normal (cv, "
              "clipped at 0.001), gamma (cv), exponential (shift), constant (factor); none; or "
              "trace: draw each iteration's time uniformly from a file of measured times.",
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::type>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::type>},
      {.path = "/cluster/jitter/sigma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxSigma,
       .default_value = d.cluster.jitter.sigma,
       .applies_to = "lognormal jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "Standard deviation of the factor's log.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == "lognormal"; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::sigma>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::sigma>},
      {.path = "/cluster/jitter/cv",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxCv,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.cv,
       .applies_to = "normal and gamma jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "Coefficient of variation (standard deviation / mean) of the factor.",
       .applies =
           [](const Scenario& s) {
             return s.cluster.jitter.type == "normal" || s.cluster.jitter.type == "gamma";
           },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::cv>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::cv>},
      {.path = "/cluster/jitter/factor",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = kMaxFactor,
       .exclusive_minimum = true,
       .default_value = d.cluster.jitter.factor,
       .applies_to = "constant jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "The constant factor.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == "constant"; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::factor>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::factor>},
      {.path = "/cluster/jitter/shift",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.cluster.jitter.shift,
       .applies_to = "exponential jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "factor = shift + Exp(mean 1 - shift): the least an iteration can take, as a fraction of the "
              "mean.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == "exponential"; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::shift>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::shift>},
      {.path = "/cluster/jitter/path",
       .type = F::kString,
       .min_length = 1,
       .required = true,
       .applies_to = "trace jitter",
       .applies_key = "/cluster/jitter/type",
       .doc = "Text file of iteration times in ms, whitespace separated, # comments; relative to the "
              "working directory.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == "trace"; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::path>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::path>},
      {.path = "/cluster/jitter/scale",
       .type = F::kString,
       .allowed = {"absolute", "relative"},
       .default_value = d.cluster.jitter.scale,
       .applies_to = "trace jitter",
       .applies_key = "/cluster/jitter/type",
       .doc =
           "absolute: an iteration takes the drawn time; relative: the modelled time x drawn / trace mean.",
       .applies = [](const Scenario& s) { return s.cluster.jitter.type == "trace"; },
       .set = set_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::scale>,
       .get = get_m<&Scenario::cluster, &ClusterSpec::jitter, &JitterSpec::scale>},

      {.path = "/compute",
       .type = F::kObject,
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Where the math runs and what times each iteration.",
       .applies = has_math},
      {.path = "/compute/backend",
       .type = F::kString,
       .allowed = {"cpu", "cuda"},
       .default_value = d.compute.backend,
       .doc = "cpu: Eigen on this CPU; cuda: cuBLAS on the local NVIDIA GPU (a build with CUDA), whose "
              "results are bit-identical only on the same GPU model, driver and build.",
       .set = set_m<&Scenario::compute, &ComputeSpec::backend>,
       .get = get_m<&Scenario::compute, &ComputeSpec::backend>},
      {.path = "/compute/timing",
       .type = F::kString,
       .allowed = {"modelled", "measured"},
       .default_value = d.compute.timing,
       .doc = "modelled: an iteration takes the time the worker's device profile gives; measured: the "
              "time the latest gradient took on the local GPU (CUDA events), for every worker; needs "
              "backend cuda and makes the run not bit-reproducible.",
       .set = set_m<&Scenario::compute, &ComputeSpec::timing>,
       .get = get_m<&Scenario::compute, &ComputeSpec::timing>},

      {.path = "/stop",
       .type = F::kObject,
       .doc = "When the run ends: set virtual_time_s, max_updates, or target_accuracy with "
              "at_target; the first reached ends it."},
      {.path = "/stop/virtual_time_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .exclusive_minimum = true,
       .maximum_is_limit = true,
       .nullable = true,
       .default_note = "unset",
       .doc = "Stop at this virtual time.",
       .set = set_m<&Scenario::stop, &StopSpec::virtual_time_s>,
       .get = get_m<&Scenario::stop, &StopSpec::virtual_time_s>},
      {.path = "/stop/max_updates",
       .type = F::kInteger,
       .unit = "updates",
       .minimum = 1,
       .maximum = kMaxInt53,
       .maximum_is_limit = true,
       .nullable = true,
       .default_note = "unset",
       .doc = "Stop after this many server updates.",
       .set = set_m<&Scenario::stop, &StopSpec::max_updates>,
       .get = get_m<&Scenario::stop, &StopSpec::max_updates>},
      {.path = "/stop/target_accuracy",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .nullable = true,
       .default_note = "unset",
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Test accuracy whose first reaching time is recorded.",
       .applies = has_math,
       .set = set_m<&Scenario::stop, &StopSpec::target_accuracy>,
       .get = get_m<&Scenario::stop, &StopSpec::target_accuracy>},
      {.path = "/stop/at_target",
       .type = F::kBool,
       .default_value = d.stop.at_target,
       .doc = "Also stop when target_accuracy is reached.",
       .set = set_m<&Scenario::stop, &StopSpec::at_target>,
       .get = get_m<&Scenario::stop, &StopSpec::at_target>},

      {.path = "/eval", .type = F::kObject, .doc = "Evaluation of the server's parameters."},
      {.path = "/eval/every_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 1e-9,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = d.eval.every_s,
       .doc = "Evaluate every this many virtual seconds.",
       .set = set_m<&Scenario::eval, &EvalSpec::every_s>,
       .get = get_m<&Scenario::eval, &EvalSpec::every_s>},
      {.path = "/eval/test_samples",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 0,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.eval.test_samples,
       .applies_to = "the fashion-mnist and blobs datasets",
       .applies_key = "/data/dataset",
       .doc = "Evaluate on the first N test samples; 0 = all.",
       .applies = has_data,
       .set = set_m<&Scenario::eval, &EvalSpec::test_samples>,
       .get = get_m<&Scenario::eval, &EvalSpec::test_samples>},
  };
  return t;
}

const std::map<std::string, size_t, std::less<>>& field_index() {
  static const auto index = [] {
    std::map<std::string, size_t, std::less<>> m;
    const auto& fields = scenario_fields();
    for (size_t i = 0; i < fields.size(); ++i) m.emplace(fields[i].path, i);
    return m;
  }();
  return index;
}

// The object or object array holding `f`, or nullptr at the top level.
const FieldInfo* parent_field(const FieldInfo& f) {
  std::string_view p = parent_path(f.path);
  if (p.ends_with("/*")) p.remove_suffix(2);
  return p.empty() ? nullptr : find_scenario_field(p);
}

bool applies_in(const FieldInfo& f, const Scenario& s) {
  for (const FieldInfo* p = &f; p != nullptr; p = parent_field(*p))
    if (p->applies && !p->applies(s)) return false;
  return true;
}

// "policy.type is \"bsp\"": the value that decides whether `f` applies.
std::string applies_context(const FieldInfo& f, const Scenario& s) {
  const FieldInfo* key = find_scenario_field(f.applies_key);
  return fmt::format("{} is {}", dotted(f.applies_key), key ? render(key->get(s, 0)) : "?");
}

// ---- Validation of one value ---------------------------------------------------------------

struct Problem {
  std::string suffix;  // path below the field, e.g. "/1" for an array item
  std::string text;
};

std::string check_number(const FieldInfo& f, const json& v, bool integer) {
  const char* noun = integer ? "an integer" : "a number";
  if (integer ? !integral_value(v) : !v.is_number())
    return fmt::format("expected {}, got {}", noun, render(v));
  const long double x = number_value(v);
  if (!in_range(f, x))
    return fmt::format("expected {} {}, got {}", noun, describe_range(f, !below_maximum(f, x)), render(v));
  return "";
}

std::optional<Problem> check_value(const FieldInfo& f, const json& v) {
  std::string text;
  switch (f.type) {
    case FieldType::kString:
      if (!v.is_string()) {
        text = f.allowed.empty() || f.check
                   ? fmt::format("expected a string, got {}", render(v))
                   : fmt::format("expected one of {}, got {}", quoted_list(f.allowed), render(v));
      } else if (v.get_ref<const std::string&>().size() < f.min_length) {
        text = fmt::format("expected a non-empty string, got {}", render(v));
      } else if (v.get_ref<const std::string&>().size() > f.max_length) {
        text = fmt::format("expected at most {} characters, got {}", f.max_length,
                           v.get_ref<const std::string&>().size());
      } else if (f.check) {
        text = f.check(v);
      } else if (!f.allowed.empty() && std::find(f.allowed.begin(), f.allowed.end(),
                                                 v.get_ref<const std::string&>()) == f.allowed.end()) {
        text = fmt::format("expected one of {}, got {}", quoted_list(f.allowed), render(v));
      }
      break;
    case FieldType::kBool:
      if (!v.is_boolean()) text = fmt::format("expected true or false, got {}", render(v));
      break;
    case FieldType::kInteger:
    case FieldType::kNumber:
      text = check_number(f, v, f.type == FieldType::kInteger);
      break;
    case FieldType::kIntegerArray:
      if (!v.is_array()) {
        text = fmt::format("expected an array of integers, got {}", render(v));
      } else if (v.size() < f.min_items) {
        text =
            fmt::format("expected {} array of integers, got {}",
                        f.min_items == 1 ? "a non-empty" : fmt::format("a {}+ item", f.min_items), render(v));
      } else if (v.size() > f.max_items) {
        text = fmt::format("expected at most {} items, got {}", f.max_items, v.size());
      } else {
        for (size_t i = 0; i < v.size(); ++i)
          if (auto t = check_number(f, v[i], true); !t.empty())
            return Problem{"/" + std::to_string(i), std::move(t)};
      }
      break;
    case FieldType::kObject:
    case FieldType::kObjectArray:
      break;  // handled by the walk
  }
  if (text.empty()) return std::nullopt;
  return Problem{"", std::move(text)};
}

// ---- Did you mean --------------------------------------------------------------------------

[[noreturn]] void unknown_key(std::string_view pattern, const std::string& at, const std::string& key) {
  std::vector<std::string> allowed;  // sorted: the table's order is not the reader's concern here
  for (const auto& f : scenario_fields())
    if (parent_path(f.path) == pattern) allowed.emplace_back(leaf_name(f.path));
  std::sort(allowed.begin(), allowed.end());
  std::string allowed_text;
  for (const auto& a : allowed) allowed_text += (allowed_text.empty() ? "" : ", ") + a;

  const size_t limit = std::min<size_t>(2, std::max<size_t>(1, key.size() / 3));
  size_t best = limit + 1;
  std::vector<std::string> close;
  for (const auto& a : allowed) {
    const size_t dist = edit_distance(key, a);
    if (dist < best) {
      close.clear();
      best = dist;
    }
    if (dist == best) close.push_back(a);
  }
  if (!close.empty()) {
    std::string names;
    for (size_t i = 0; i < close.size(); ++i)
      names += (i == 0 ? "" : i + 1 == close.size() ? " or " : ", ") + ("'" + close[i] + "'");
    fail(at, fmt::format("unknown key; did you mean {}?", names));
  }
  std::vector<std::string> elsewhere;
  for (const auto& f : scenario_fields())
    if (leaf_name(f.path) == key) elsewhere.push_back(f.path);
  if (!elsewhere.empty()) {
    std::string names;
    for (size_t i = 0; i < elsewhere.size(); ++i)
      names += (i == 0 ? "" : i + 1 == elsewhere.size() ? " or " : ", ") + elsewhere[i];
    fail(at, fmt::format("unknown key here; did you mean {}? (allowed here: {})", names, allowed_text));
  }
  fail(at, fmt::format("unknown key; allowed: {}", allowed_text));
}

// ---- The loader ----------------------------------------------------------------------------

class Loader {
 public:
  Scenario load(const json& doc, const std::string& default_name) {
    if (!doc.is_object()) fail("", fmt::format("the top level must be an object, got {}", render(doc)));
    s_.name = default_name;
    walk(doc, "", "", 0);
    const auto& fields = scenario_fields();
    for (const auto& f : fields)
      if (f.resolve && !given(f, 0)) f.resolve(s_);
    for (const auto& g : given_)
      if (g.field->applies && !g.field->applies(s_))
        fail(g.path, fmt::format("{} applies to {} only ({}); remove it", leaf_name(g.field->path),
                                 g.field->applies_to, applies_context(*g.field, s_)));
    for (const auto& f : fields) {
      if (!f.required) continue;
      if (f.path.find('*') == std::string::npos) {
        if (applies_in(f, s_) && !given(f, 0))
          fail(f.path, f.applies ? fmt::format("required when {}", applies_context(f, s_)) : "required");
      } else {  // a key of each element of an array of objects
        const size_t elements = parent_field(f)->get(s_, 0).size();
        for (size_t i = 0; i < elements; ++i)
          if (!given(f, i)) fail(instantiate(f.path, i), "required");
      }
    }
    if (s_.name.empty()) fail("/name", "required (there is no file name to take it from)");
    check_consistency();
    return std::move(s_);
  }

 private:
  struct Given {
    const FieldInfo* field;
    std::string path;
    size_t index;
  };

  bool given(const FieldInfo& f, size_t index) const { return given_set_.contains({&f, index}); }

  void mark_given(const FieldInfo& f, const std::string& at, size_t index) {
    given_.push_back({&f, at, index});
    given_set_.insert({&f, index});
  }

  void walk(const json& obj, const std::string& pattern, const std::string& at, size_t index) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string child = at + "/" + escape_token(it.key());
      const FieldInfo* f = find_scenario_field(pattern + "/" + escape_token(it.key()));
      if (f == nullptr) unknown_key(pattern, child, it.key());
      visit(*f, it.value(), child, index);
    }
  }

  void visit(const FieldInfo& f, const json& v, const std::string& at, size_t index) {
    if (f.type == FieldType::kObject) {
      if (!v.is_object()) fail(at, fmt::format("expected an object, got {}", render(v)));
      mark_given(f, at, index);
      walk(v, f.path, at, index);
    } else if (f.type == FieldType::kObjectArray) {
      if (!v.is_array()) fail(at, fmt::format("expected an array of objects, got {}", render(v)));
      if (v.size() < f.min_items)
        fail(at, fmt::format("expected a non-empty array of objects, got {}", render(v)));
      if (v.size() > f.max_items)
        fail(at, fmt::format("expected at most {} items, got {}", f.max_items, v.size()));
      f.set(s_, 0, v);
      mark_given(f, at, index);
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string item = at + "/" + std::to_string(i);
        if (!v[i].is_object()) fail(item, fmt::format("expected an object, got {}", render(v[i])));
        walk(v[i], f.path + "/*", item, i);
      }
    } else if (v.is_null() && f.nullable) {
      f.set(s_, index, v);  // unset; not "given" for applicability and requirements
    } else {
      if (auto p = check_value(f, v)) fail(at + p->suffix, p->text);
      f.set(s_, index, v);
      mark_given(f, at, index);
    }
  }

  // Rules between fields that no single field can state.
  void check_consistency() const {
    if (s_.stop.virtual_time_s && *s_.stop.virtual_time_s / s_.eval.every_s >= 1e7)
      fail("/eval/every_s", fmt::format("{:g} s over stop.virtual_time_s {:g} s is {:g} evaluations; at most "
                                        "10000000: raise eval.every_s",
                                        s_.eval.every_s, *s_.stop.virtual_time_s,
                                        std::floor(*s_.stop.virtual_time_s / s_.eval.every_s)));
    if (!has_math(s_) && has_data(s_))
      fail("/data/dataset", fmt::format("a time-only model takes no dataset, got \"{}\"; remove "
                                        "/data/dataset (or set it to \"none\")",
                                        s_.data.dataset));
    if (has_math(s_) && !has_data(s_))
      fail("/data/dataset", fmt::format("\"none\" needs model.type \"time-only\" (model.type is \"{}\")",
                                        to_string(s_.model.type)));
    check_workloads();
    if (s_.model.type == ModelType::kCnn && s_.data.dataset == "blobs" && !cnn_takes(s_.data.blobs.features))
      fail("/data/blobs/features",
           fmt::format(
               "the cnn takes S x S images with S a multiple of 4 and >= 12 (e.g. 784 = 28 x 28), got {}",
               s_.data.blobs.features));
    if (s_.compute.timing == "measured" && s_.compute.backend != "cuda")
      fail("/compute/timing",
           fmt::format("\"measured\" times iterations on the GPU and needs compute.backend "
                       "\"cuda\" (compute.backend is \"{}\")",
                       s_.compute.backend));
    if (s_.compute.timing == "measured" && s_.model.cost != "derived")
      fail("/compute/timing",
           fmt::format("\"measured\" times the math model on the GPU, and model.cost \"{}\" "
                       "times it as another architecture: use one or the other",
                       s_.model.cost));
    if (s_.compute.timing == "measured" && s_.cluster.order == Order::kUniform)
      fail("/compute/timing",
           "\"measured\" times each iteration on the GPU, which cluster.order \"uniform\" "
           "(every iteration takes the same time) does not use: use cluster.order \"timed\"");
    if (s_.compute.backend == "cuda" && !cuda_built())
      fail("/compute/backend",
           "\"cuda\" needs a stalesim built with CUDA, and this one was built without "
           "(configure with -DSTALESIM_CUDA=ON on a machine with the CUDA toolkit)");
    if (policy_has(s_, kPolicyN) && s_.policy.n > s_.cluster.worker_count())
      fail("/policy/n", fmt::format("expected an integer in [1, {}] (the number of workers), got {}",
                                    s_.cluster.worker_count(), s_.policy.n));
    const bool fetches_every_clock = s_.policy.pulls_every_clock();
    if (s_.cluster.order == Order::kUniform && !fetches_every_clock)
      fail("/cluster/order", fmt::format("uniform order needs a policy that fetches every clock ({}), got {}",
                                         pull_mode_policies(), policy_phrase()));
    if (traits(s_.optimizer.rule).gates_transfers && !fetches_every_clock)
      fail("/optimizer/rule", fmt::format("{} decides each fetch and push itself; use it with a policy that "
                                          "fetches every clock ({})",
                                          to_string(s_.optimizer.rule), pull_mode_policies()));
    if (!has_math(s_) && s_.policy.type == PolicyType::kVap)
      fail("/policy/type",
           "vap bounds the values of updates, which the time-only model does not "
           "compute; use a softmax, mlp or cnn model, or another policy");
    int64_t workers = 0;
    for (const auto& g : s_.cluster.workers) workers += g.count;
    if (workers > kMaxWorkers)
      fail("/cluster/workers", fmt::format("{} workers in total; at most {}", workers, kMaxWorkers));
    check_cluster(workers);
    const auto& stop = s_.stop;
    if (stop.at_target && !stop.target_accuracy)
      fail("/stop/at_target", "at_target is true but target_accuracy is not set");
    if (!stop.virtual_time_s && !stop.max_updates && !stop.at_target)
      fail("/stop",
           "the run would never stop: set virtual_time_s, max_updates, or target_accuracy "
           "with at_target");
  }

  // mf and lda (issue 6): each with its own dataset, and lda's count deltas with no learning rule.
  void check_workloads() const {
    const auto t = to_string(s_.model.type);
    const auto& ds = s_.data.dataset;
    const std::string want(traits(s_.model.type).dataset);
    if (!want.empty() && ds != want)
      fail("/data/dataset", fmt::format("model.type \"{}\" needs dataset \"{}\", got \"{}\"", t, want, ds));
    for (const auto& [type, name] : enum_names(ModelType{}))
      if (want.empty() && traits(type).dataset == ds)
        fail("/data/dataset",
             fmt::format("\"{}\" goes with model.type \"{}\" (model.type is \"{}\")", ds, name, t));
    if (want.empty()) return;
    if (s_.compute.backend != "cpu")
      fail("/compute/backend",
           fmt::format("model.type \"{}\" runs on the cpu backend only, got \"{}\"", t, s_.compute.backend));
    if (s_.model.type == ModelType::kLstsq) return;  // any rule, momentum and policy
    if (s_.model.type == ModelType::kMf) {
      const auto& r = s_.data.ratings;
      if (static_cast<double>(r.train + r.test) > static_cast<double>(r.rows) * r.cols / 2)
        fail("/data/ratings/train", fmt::format("train + test = {} entries, but at most rows x cols / 2 = {} "
                                                "distinct cells may be drawn",
                                                r.train + r.test, static_cast<int64_t>(r.rows) * r.cols / 2));
    } else {
      const auto& c = s_.data.corpus;
      if (c.min_length > c.max_length)
        fail("/data/corpus/min_length",
             fmt::format("expected <= max_length ({}), got {}", c.max_length, c.min_length));
      if (int64_t{c.documents} * c.max_length >= (int64_t{1} << 24))
        fail("/data/corpus/documents",
             fmt::format("documents x max_length = {} must be below 2^24 = 16777216: "
                         "the counts are integers held exactly in float32",
                         int64_t{c.documents} * c.max_length));
      if (s_.optimizer.rule != RuleType::kSgd)
        fail("/optimizer/rule",
             fmt::format("model.type \"lda\" pushes count deltas that the server adds as is; "
                         "no learning rule applies, so only \"sgd\" (the plain sum) is "
                         "allowed, got \"{}\"",
                         to_string(s_.optimizer.rule)));
      if (s_.optimizer.momentum != 0.0)
        fail("/optimizer/momentum",
             fmt::format("model.type \"lda\" adds count deltas as is: momentum must be 0, "
                         "got {}",
                         s_.optimizer.momentum));
      if (traits(s_.policy.type).averages_pushes)
        fail("/policy/type",
             "model.type \"lda\" adds every count delta as is; softsync averages updates, "
             "which would break the counts: use bsp, asp, ssp, essp, dssp or vap");
    }
  }

  // Groups' precisions and jitter, the schedule, and crash handling (issue 5).
  void check_cluster(int64_t workers) const {
    const auto& c = s_.cluster;
    for (size_t g = 0; g < c.workers.size(); ++g) {
      const auto& grp = c.workers[g];
      if (grp.device && find_profile(grp.profile))
        fail(fmt::format("/cluster/workers/{}/device", g),
             fmt::format("applies to a profile file only; \"{}\" is built-in: remove device", grp.profile));
      if (grp.device) {
        if (auto problem = profile_problem(*grp.device))  // what(): "<field>: <problem>"
          fail(fmt::format("/cluster/workers/{}/device{}", g, problem->field()),
               std::string(problem->what()).substr(problem->field().size() + 2));
      } else if (!find_profile(grp.profile)) {
        fail(fmt::format("/cluster/workers/{}/profile", g),
             fmt::format("the profile file \"{}\" was not read (a scenario given as JSON, not as a "
                         "file, must carry its figures in device)",
                         grp.profile));
      }
      const std::optional<DeviceProfile> profile = grp.device ? grp.device : find_profile(grp.profile);
      if (profile && peak_tflops(*profile, grp.precision) <= 0)
        fail(fmt::format("/cluster/workers/{}/precision", g),
             fmt::format("profile \"{}\" has no {} peak; use \"fp32\"{}", grp.profile, grp.precision,
                         profile->peak_fp16_tflops > 0 ? " or \"fp16\"" : ""));
      if (grp.jitter && grp.jitter->type == "trace" && grp.jitter->path.empty())
        fail(fmt::format("/cluster/workers/{}/jitter/path", g), "required when jitter.type is \"trace\"");
    }
    const bool crashes = std::any_of(c.schedule.begin(), c.schedule.end(),
                                     [](const ScheduleEvent& e) { return e.kind == "crash"; });
    for (size_t i = 0; i < c.schedule.size(); ++i) {
      const auto& e = c.schedule[i];
      const std::string at = fmt::format("/cluster/schedule/{}", i);
      if (e.group.has_value() == !e.workers.empty())
        fail(at, "give either workers (a list of worker ids) or group (a group index), not both or neither");
      if (e.group && *e.group >= static_cast<int64_t>(c.workers.size()))
        fail(at + "/group",
             fmt::format("expected a group index in [0, {}], got {}", c.workers.size() - 1, *e.group));
      for (size_t k = 0; k < e.workers.size(); ++k)
        if (e.workers[k] >= workers)
          fail(fmt::format("{}/workers/{}", at, k),
               fmt::format("expected a worker id in [0, {}], got {}", workers - 1, e.workers[k]));
      if (e.until_s && *e.until_s <= e.at_s)
        fail(at + "/until_s", fmt::format("expected a time after at_s ({}), got {}", e.at_s, *e.until_s));
      if ((e.kind == "pause" || e.kind == "drift") && !e.until_s)
        fail(at + "/until_s", fmt::format("required for a {}", e.kind));
    }
    if (!c.schedule.empty() && c.order == Order::kUniform)
      fail("/cluster/schedule",
           "cluster.order \"uniform\" gives every iteration the same time; a schedule "
           "needs cluster.order \"timed\"");
    if (crashes && !s_.policy.pulls_every_clock())
      fail("/cluster/schedule",
           fmt::format("crash events are supported with the policies that fetch every clock "
                       "({}), got {}",
                       pull_mode_policies(), policy_phrase()));
  }

  // "ssp with a lazy cache", "essp": the policy in words for messages.
  std::string policy_phrase() const {
    return fmt::format("{}{}", to_string(s_.policy.type),
                       s_.policy.cache_mode() == CacheMode::kLazy ? " with a lazy cache" : "");
  }

  Scenario s_;
  std::vector<Given> given_;  // in document order (keys sorted), objects before their keys
  std::set<std::pair<const FieldInfo*, size_t>> given_set_;
};

// ---- Files and overrides -------------------------------------------------------------------

std::string read_file(const std::string& path) {
  std::string why;
  auto text = read_regular_file(path, kMaxScenarioBytes, why);
  if (!text) throw ScenarioError(fmt::format("{}: cannot read: {}", path, why));
  return std::move(*text);
}

// Parses JSON text, rejecting duplicate keys. Throws ScenarioError "<origin>:L:C: invalid JSON: ...".
json parse_json_text(const std::string& text, const std::string& origin) {
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key{};
    std::set<std::string> keys{};
  };
  std::vector<Frame> stack;
  auto where = [&] {
    std::string p;
    for (size_t i = 0; i + 1 < stack.size(); ++i)
      p += "/" + (stack[i].array ? std::to_string(stack[i].index) : escape_token(stack[i].key));
    return p;
  };
  auto element_done = [&] {
    if (!stack.empty() && stack.back().array) ++stack.back().index;
  };
  const json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        stack.push_back({});
        break;
      case json::parse_event_t::array_start:
        stack.push_back({.array = true});
        break;
      case json::parse_event_t::key: {
        auto key = parsed.get<std::string>();
        if (!stack.back().keys.insert(key).second) {
          stack.back().key = key;
          stack.push_back({});  // so that where() includes the key
          fail(where(), "duplicate key");
        }
        stack.back().key = std::move(key);
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        stack.pop_back();
        element_done();
        break;
      case json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  };
  if (const std::string shape = json_shape_problem(text); !shape.empty())
    throw ScenarioError(fmt::format("{}: invalid JSON: {}", origin, shape));
  try {
    return json::parse(text, on_event);
  } catch (const PathError& e) {
    throw scenario_error(origin, e);
  } catch (const json::parse_error& e) {
    // e.byte counts the characters read, the offending one included: its 1-based offset.
    const size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    const size_t column = offset - line_start + 1;
    std::string reason = e.what();
    if (const size_t at = reason.find("column "); at != std::string::npos)
      if (const size_t colon = reason.find(": ", at); colon != std::string::npos)
        reason = reason.substr(colon + 2);
    if (const size_t last = reason.find("; last read: "); last != std::string::npos) {
      const size_t next = reason.find("; ", last + 2);
      reason.erase(last, next == std::string::npos ? std::string::npos : next - last);
    }
    throw ScenarioError(fmt::format("{}:{}:{}: invalid JSON: {}", origin, line, column, reason));
  } catch (const json::out_of_range& e) {
    // A number too large for a double ("1e400"): nlohmann says which, but not where. Found by
    // tests/fuzz/fuzz_scenario (it escaped as an internal error, exit 3).
    std::string reason = e.what();
    if (const size_t at = reason.find("] "); at != std::string::npos) reason = reason.substr(at + 2);
    std::string where;
    if (const size_t q = reason.find('\''), q2 = reason.rfind('\''); q != std::string::npos && q2 > q)
      if (const size_t at = text.find(reason.substr(q + 1, q2 - q - 1)); at != std::string::npos) {
        const size_t line = 1 + static_cast<size_t>(std::count(
                                    text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
        const size_t nl = text.rfind('\n', at);
        where = fmt::format(":{}:{}", line, at - (nl == std::string::npos ? 0 : nl + 1) + 1);
      }
    throw ScenarioError(
        fmt::format("{}{}: invalid JSON: {} (larger than a double can hold)", origin, where, reason));
  }
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

std::string override_text(const Override& o) { return o.path + "=" + o.value; }

std::string override_pointer(const Override& o) {
  std::string p;
  for (const auto& part : split_path(o.path)) p += "/" + escape_token(part);
  return p;
}

// Whether one JSON pointer is the other or lies below it.
bool related(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.starts_with(a) && (b.size() == a.size() || b[a.size()] == '/');
}

std::string_view type_phrase(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

}  // namespace

// ---- Public: the field table ---------------------------------------------------------------

std::string_view to_string(FieldType t) {
  switch (t) {
    case FieldType::kString:
      return "string";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kNumber:
      return "number";
    case FieldType::kBool:
      return "boolean";
    case FieldType::kIntegerArray:
      return "array of integers";
    case FieldType::kObject:
      return "object";
    case FieldType::kObjectArray:
      return "array of objects";
  }
  return "?";
}

const std::vector<FieldInfo>& scenario_fields() {
  static const std::vector<FieldInfo> fields = build_fields();
  return fields;
}

std::string escape_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

const FieldInfo* find_scenario_field(std::string_view path) {
  const auto& index = field_index();
  const auto it = index.find(path);
  return it == index.end() ? nullptr : &scenario_fields()[it->second];
}

namespace {
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '+' || c == '=' || c == ',' || c == '@';
}
}  // namespace

std::string check_scenario_name(const json& v) {
  const std::string& n = v.get_ref<const std::string&>();
  if (n.size() > kMaxNameLength)
    return fmt::format("expected at most {} characters, got {}", kMaxNameLength, n.size());
  for (char c : n)
    if (!name_char(c))
      return fmt::format(
          "expected letters, digits and . _ - + = , @ only (the name becomes a folder name), got {} "
          "(character {:#04x})",
          render(v), static_cast<unsigned char>(c));
  if (n.front() == '.') return fmt::format("expected a name not starting with '.', got {}", render(v));
  return "";
}

std::string sanitize_scenario_name(std::string_view stem) {
  std::string out;
  for (char c : stem) out += name_char(c) ? c : '_';
  while (!out.empty() && out.front() == '.') out.front() = '_';
  if (out.size() > kMaxNameLength) out.resize(kMaxNameLength);
  return out;
}

std::string describe_allowed(const FieldInfo& f) {
  switch (f.type) {
    case FieldType::kString:
      if (!f.allowed.empty()) return quoted_list(f.allowed);
      if (f.check == check_scenario_name)
        return fmt::format("1 to {} characters: letters, digits, . _ - + = , @; not starting with .",
                           f.max_length);
      return fmt::format("{} {} characters", f.min_length > 0 ? "1 to" : "at most", f.max_length);
    case FieldType::kInteger:
    case FieldType::kNumber:
      return describe_range(f, /*with_limit=*/true);
    case FieldType::kIntegerArray: {
      std::string out = fmt::format("{} {} items", f.min_items == 1 ? "1 to" : "at most", f.max_items);
      const std::string range = describe_range(f, /*with_limit=*/true);
      if (!range.empty()) out += "; each " + range;
      return out;
    }
    case FieldType::kObjectArray:
      return fmt::format("{} {} items", f.min_items == 1 ? "1 to" : "at most", f.max_items);
    case FieldType::kBool:
    case FieldType::kObject:
      return "";
  }
  return "";
}

std::string scenario_fields_markdown() {
  auto cell = [](std::string text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string md =
      "| Path | Type | Unit | Default | Allowed / range | Description |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& f : scenario_fields()) {
    std::string def = f.required ? "required" : "";  // values as code, words as words
    if (!f.default_value.is_null()) def = "`" + cell(f.default_value.dump()) + "`";
    if (!f.default_note.empty()) def += (def.empty() ? "" : "; ") + cell(f.default_note);
    std::string doc = f.doc;
    if (!f.applies_to.empty())
      doc += fmt::format(" Applies to {} only ({}).", f.applies_to, dotted(f.applies_key));
    if (f.nullable) doc += " null = unset.";
    const std::string allowed = describe_allowed(f);
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", f.path, to_string(f.type), cell(f.unit), def,
                      cell(allowed), cell(doc));
  }
  return md;
}

// ---- Public: loading -----------------------------------------------------------------------

std::span<const EnumName<Aggregate>> enum_names(Aggregate) {
  static constexpr EnumName<Aggregate> kNames[] = {{Aggregate::kSum, "sum"}, {Aggregate::kMean, "mean"}};
  return kNames;
}
std::string_view to_string(Aggregate a) { return enum_name(a); }

Override parse_override(std::string_view arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw ScenarioError(fmt::format("--set '{}': expected PATH=VALUE", arg));
  Override o{std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1))};
  for (const auto& part : split_path(o.path))
    if (part.empty())
      throw ScenarioError(
          fmt::format("--set '{}': expected PATH=VALUE (empty key in path '{}')", arg, o.path));
  return o;
}

void apply_overrides(nlohmann::json& doc, std::span<const Override> sets) {
  for (const auto& o : sets) {
    const std::string origin = "--set " + override_text(o);
    if (const std::string shape = json_shape_problem(o.value); !shape.empty())
      throw ScenarioError(fmt::format("{}: {}", origin, shape));
    try {
      json value = json::parse(o.value, nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded()) value = o.value;
      const auto parts = split_path(o.path);
      json* cur = &doc;
      std::string at;
      std::string pattern;  // `at` with "*" for array indices, to look the field up
      for (size_t k = 0; k < parts.size(); ++k) {
        const std::string& part = parts[k];
        if (part.empty()) fail(at, fmt::format("empty key in path '{}'", o.path));
        if (cur->is_array()) {
          const bool digits =
              !part.empty() && part.size() <= 9 &&
              std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
          if (!digits) fail(at, fmt::format("expected an array index, got '{}'", part));
          const size_t i = std::stoul(part);
          at += "/" + part;
          pattern += "/*";
          if (i >= cur->size())
            fail(at, fmt::format("index out of range (array has {} element{})", cur->size(),
                                 cur->size() == 1 ? "" : "s"));
          cur = &(*cur)[i];
        } else if (cur->is_object()) {
          at += "/" + escape_token(part);
          pattern += "/" + escape_token(part);
          if (!cur->contains(part) && k + 1 < parts.size()) (*cur)[part] = json::object();
          cur = &(*cur)[part];
        } else {
          fail(at, cur->is_null() ? fmt::format("cannot set key '{}' inside null", part)
                                  : fmt::format("cannot set key '{}' inside {} ({})", part, type_phrase(*cur),
                                                render(*cur)));
        }
      }
      // A string field takes the text as it is ("name=2024"), unless it is a quoted JSON string.
      const FieldInfo* field = find_scenario_field(pattern);
      if (field && field->type == FieldType::kString && !value.is_string()) value = o.value;
      *cur = std::move(value);
    } catch (const PathError& e) {
      throw scenario_error(origin, e);
    }
  }
}

// Profiles as data (issue 20): each group whose profile names a file and that carries no `device`
// yet gets the file's figures as `device`, and its profile the path as resolved, so that the
// manifest shows which file ran and reproduces without it. Errors name the scenario, the group's
// profile key, the profile file and its key.
static void read_profile_files(json& doc, const std::string& scenario_path) {
  if (!doc.is_object() || !doc.contains("cluster") || !doc["cluster"].is_object()) return;
  json& cluster = doc["cluster"];
  if (!cluster.contains("workers") || !cluster["workers"].is_array()) return;
  const std::string dir = std::filesystem::path(scenario_path).parent_path().string();
  for (size_t g = 0; g < cluster["workers"].size(); ++g) {
    json& group = cluster["workers"][g];
    if (!group.is_object() || group.contains("device") || !group.contains("profile") ||
        !group["profile"].is_string())
      continue;
    const auto file = profile_file_path(group["profile"].get<std::string>(), dir);
    if (!file) continue;  // a built-in name, or unknown (the loader says so)
    try {
      group["device"] = json(profile_to_json(load_profile_file(*file)));
    } catch (const ProfileError& e) {
      throw ScenarioError(fmt::format("{}: /cluster/workers/{}/profile: {}", scenario_path, g, e.what()));
    }
    group["profile"] = *file;
  }
}

std::optional<std::string> profile_file_path(const std::string& value, const std::string& scenario_dir) {
  namespace fs = std::filesystem;
  if (value.ends_with(".json")) {
    const fs::path p(value);
    return (p.is_absolute() || scenario_dir.empty() ? p : fs::path(scenario_dir) / p)
        .lexically_normal()
        .string();
  }
  if (find_profile(value)) return std::nullopt;
  const char* dir = std::getenv("STALESIM_PROFILE_DIR");
  if (dir == nullptr || *dir == '\0' || value.find('/') != std::string::npos) return std::nullopt;
  const fs::path p = fs::path(dir) / (value + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  return p.lexically_normal().string();
}

DeviceProfile group_profile(const WorkerGroup& g, size_t index) {
  if (g.device) return *g.device;
  if (auto p = find_profile(g.profile)) return *p;
  throw ScenarioError(
      fmt::format("/cluster/workers/{}/profile: unknown device profile \"{}\"", index, g.profile));
}

Scenario parse_scenario(const nlohmann::json& doc, const std::string& origin,
                        const std::string& default_name) {
  try {
    return Loader().load(doc, default_name);
  } catch (const PathError& e) {
    throw scenario_error(origin, e);
  }
}

Scenario load_scenario_file(const std::string& path, std::span<const Override> sets,
                            std::optional<uint64_t> seed) {
  return load_scenario_text(read_file(path), path, sets, seed);
}

Scenario load_scenario_text(const std::string& text, const std::string& path, std::span<const Override> sets,
                            std::optional<uint64_t> seed) {
  json doc = parse_json_text(text, path);
  apply_overrides(doc, sets);
  if (seed && doc.is_object()) doc["seed"] = *seed;
  read_profile_files(doc, path);
  std::string name = std::filesystem::path(path).filename().string();
  if (name.ends_with(".json") && name.size() > 5) name.resize(name.size() - 5);
  name = sanitize_scenario_name(name);
  // A --set that changes what another field depends on (`--set policy.type=bsp` on a file that
  // gives policy.staleness) drops the file's fields that no longer apply, instead of failing: the
  // user asked for the change, and the resolved scenario in the manifest shows what ran.
  for (size_t attempt = 0; attempt < scenario_fields().size(); ++attempt) {
    try {
      return Loader().load(doc, name);
    } catch (const PathError& e) {
      const FieldInfo* f = find_scenario_field(e.path);
      const auto touched = [&](std::string_view pointer) {
        return std::any_of(sets.begin(), sets.end(),
                           [&](const Override& o) { return related(override_pointer(o), pointer); });
      };
      const bool inapplicable =
          f && !f->applies_key.empty() && e.problem.find(" applies to ") != std::string::npos;
      if (!inapplicable || !touched(f->applies_key) || touched(e.path)) break;
      const json::json_pointer ptr(e.path);
      doc[ptr.parent_pointer()].erase(ptr.back());
    }
  }
  try {
    return Loader().load(doc, name);
  } catch (const PathError& e) {
    // Name the --set arguments that touch the failing path (all of them if none does), so that
    // an error caused by an override does not send the reader looking in the file.
    std::string after;
    for (const auto& o : sets)
      if (related(override_pointer(o), e.path))
        after += (after.empty() ? "" : ", ") + ("--set " + override_text(o));
    if (after.empty())
      for (const auto& o : sets) after += (after.empty() ? "" : ", ") + ("--set " + override_text(o));
    throw scenario_error(after.empty() ? path : fmt::format("{} (after {})", path, after), e);
  }
}

nlohmann::json scenario_to_json(const Scenario& s) {
  json out = json::object();
  for (const auto& f : scenario_fields()) {
    if (!applies_in(f, s)) continue;
    if (const size_t star = f.path.find('*'); star != std::string::npos) {
      const json::json_pointer array_ptr(f.path.substr(0, star - 1));
      if (!out.contains(array_ptr)) continue;
      for (size_t i = 0; i < out[array_ptr].size(); ++i) {
        json v = f.get(s, i);
        if (!v.is_discarded()) out[json::json_pointer(instantiate(f.path, i))] = std::move(v);  // absent
      }
    } else if (f.type == FieldType::kObject) {
      out[json::json_pointer(f.path)] = json::object();
    } else {
      out[json::json_pointer(f.path)] = f.get(s, 0);
    }
  }
  return out;
}

}  // namespace stalesim
