// make_model: validates a ModelSpec and builds the model it names.

#include "models/model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "models/classifier_common.hpp"
#include "models/cnn.hpp"
#include "models/cuda/cuda_model.hpp"

namespace stalesim {
namespace {

// Far above any model this simulator trains or times; keeps parameter_count() * 4 bytes and
// every size product far from int64 overflow.
constexpr int64_t kMaxParameters = int64_t{1} << 40;

constexpr std::array<EnumName<ModelType>, 7> kModelNames{{
    {ModelType::kSoftmax, "softmax"},
    {ModelType::kMlp, "mlp"},
    {ModelType::kCnn, "cnn"},
    {ModelType::kMf, "mf"},
    {ModelType::kLda, "lda"},
    {ModelType::kLstsq, "lstsq"},
    {ModelType::kTimeOnly, "time-only"},
}};

constexpr std::array<ModelTraits, 7> kModelTraits{{
    // type            math   classifier dense  dataset
    {ModelType::kSoftmax, true, true, true, ""},
    {ModelType::kMlp, true, true, true, ""},
    {ModelType::kCnn, true, true, false, ""},
    {ModelType::kMf, true, false, false, "ratings"},
    {ModelType::kLda, true, false, false, "corpus"},
    {ModelType::kLstsq, true, false, false, "lstsq"},
    {ModelType::kTimeOnly, false, false, false, ""},
}};
static_assert([] {
  for (size_t i = 0; i < kModelTraits.size(); ++i)
    if (static_cast<size_t>(kModelTraits[i].type) != i) return false;
  return true;
}());

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("model: " + what); }

std::string name(ModelType t) { return std::string(to_string(t)); }

// Checks sizes and that the parameter count of features -> hidden... -> classes stays sane.
void check_dense(const std::string& type, int64_t features, int32_t classes,
                 const std::vector<int64_t>& hidden) {
  if (features < 1) bad(type + ": features must be >= 1, got " + std::to_string(features));
  if (classes < 2) bad(type + ": classes must be >= 2, got " + std::to_string(classes));
  int64_t total = 0;
  int64_t in = features;
  auto add_layer = [&](int64_t out) {
    int64_t count = 0;
    if (__builtin_mul_overflow(in + 1, out, &count) || __builtin_add_overflow(total, count, &total) ||
        total > kMaxParameters) {
      bad(type + ": more than 2^40 parameters");
    }
    in = out;
  };
  for (size_t i = 0; i < hidden.size(); ++i) {
    if (hidden[i] < 1) {
      bad(type + ": hidden[" + std::to_string(i) + "] must be >= 1, got " + std::to_string(hidden[i]));
    }
    add_layer(hidden[i]);
  }
  add_layer(classes);
}

// The CNN takes S x S one-channel images (models/cnn.hpp).
void check_cnn(int64_t features, int32_t classes) {
  if (classes < 2) bad("cnn: classes must be >= 2, got " + std::to_string(classes));
  const double root = std::sqrt(static_cast<double>(std::max<int64_t>(features, 0)));
  const auto side = static_cast<int64_t>(std::llround(root));
  if (side * side != features || !detail::CnnShape::valid_side(side)) {
    bad("cnn: takes square one-channel images S x S with S a multiple of 4 and >= 12 (28 x 28 = 784 "
        "features for Fashion-MNIST), got " +
        std::to_string(features) + " features");
  }
}

}  // namespace

double Model::begin_gradient(std::span<const float>, const Dataset&, std::span<const int32_t>,
                             DeferredGradient&) {
  throw std::logic_error(type() + ": begin_gradient on a model that cannot defer its gradient");
}

void Model::finish_gradient(DeferredGradient&, const Dataset&, std::span<float>) {
  throw std::logic_error(type() + ": finish_gradient on a model that cannot defer its gradient");
}

std::span<const EnumName<ModelType>> enum_names(ModelType) { return kModelNames; }
const ModelTraits& traits(ModelType t) { return kModelTraits[static_cast<size_t>(t)]; }

ModelSize model_size(const ModelSpec& spec, const ModelShape& shape) {
  ModelSize z;
  const auto f = static_cast<double>(shape.features), c = static_cast<double>(shape.classes);
  switch (spec.type) {
    case ModelType::kSoftmax:
    case ModelType::kMlp: {  // as DenseClassifier: W and b per layer
      double in = f, weights = 0;
      if (spec.type == ModelType::kMlp)
        for (int64_t h : spec.hidden) {
          weights += in * static_cast<double>(h);
          z.parameters += (in + 1) * static_cast<double>(h);
          in = static_cast<double>(h);
        }
      weights += in * c;
      z.parameters += (in + 1) * c;
      z.flops_per_sample = 6.0 * weights;
      break;
    }
    case ModelType::kCnn: {
      const auto side = static_cast<int64_t>(std::llround(std::sqrt(f)));
      if (side * side == shape.features && detail::CnnShape::valid_side(side) && shape.classes >= 2) {
        const detail::CnnShape cnn(side, shape.classes);
        z.parameters = static_cast<double>(cnn.parameter_count);
        z.flops_per_sample = cnn.flops_per_sample;
      }
      break;
    }
    case ModelType::kMf:  // as MfModel
      z.parameters = static_cast<double>(shape.rows + shape.cols) * spec.rank;
      z.flops_per_sample = 10.0 * spec.rank;
      break;
    case ModelType::kLda: {  // as LdaModel: (vocabulary + 1) x topics counts
      z.parameters = static_cast<double>(shape.vocabulary + 1) * spec.topics;
      z.flops_per_sample = shape.mean_length * (6.0 * spec.topics + 10.0);
      const double tokens = static_cast<double>(shape.documents) * shape.mean_length;
      // z_ (int32 per token); per document: its offset, its counts n_d (int32 x topics), its stream
      // (4 x uint64); the sampler's scratch is per topic.
      z.state_bytes = tokens * 4.0 + static_cast<double>(shape.documents) * (8.0 + 4.0 * spec.topics + 32.0);
      break;
    }
    case ModelType::kLstsq:  // as LstsqModel: one parameter per coordinate
      z.parameters = static_cast<double>(shape.dimension);
      z.flops_per_sample = 6.0;
      break;
    case ModelType::kTimeOnly:
      z.parameters = static_cast<double>(spec.parameters);
      z.flops_per_sample = spec.flops_per_sample;
      break;
  }
  z.wire_bytes = z.parameters * 4.0;
  return z;
}

double model_scratch_bytes(const ModelSpec& spec, const ModelShape& shape, double batch,
                           double eval_samples) {
  const auto f = static_cast<double>(shape.features), c = static_cast<double>(shape.classes);
  switch (spec.type) {
    case ModelType::kSoftmax:
    case ModelType::kMlp: {  // DenseClassifier::reserve: x_ (features), act_ per layer, delta_ but the last
      const double n = std::max(batch, std::min(eval_samples, static_cast<double>(detail::kDenseEvalChunk)));
      double rows = f + c;
      if (spec.type == ModelType::kMlp)
        for (int64_t h : spec.hidden) rows += 2.0 * static_cast<double>(h);
      return n * (rows * 4.0 + 4.0);  // floats, and a label each
    }
    case ModelType::kCnn: {  // Cnn::reserve
      const auto side = static_cast<int64_t>(std::llround(std::sqrt(f)));
      if (side * side != shape.features || !detail::CnnShape::valid_side(side) || shape.classes < 2) return 0;
      using S = detail::CnnShape;
      const S cnn(side, shape.classes);
      const double n = std::max(batch, std::min(eval_samples, static_cast<double>(S::kEvalChunk)));
      const double h1 = static_cast<double>(cnn.h1 * cnn.h1), p1 = static_cast<double>(cnn.p1 * cnn.p1),
                   h2 = static_cast<double>(cnn.h2 * cnn.h2), k = S::kChunk;
      const double padded = static_cast<double>((side + 2 * S::kPad1) * (side + 2 * S::kPad1));
      // Per chunk of kChunk samples: cols1_, z1_, dp1_, cols2_, z2_ (floats), split_.
      const double chunk =
          4.0 * (k * h1 * (S::kK1 + S::kC1) + k * p1 * S::kC1 + k * h2 * (S::kK2 + S::kC2) + h2);
      // Per sample: xpad_, p1_ (floats) and arg1_ (bytes), arg2_ (bytes), flat_ and gflat_, the
      // dense layers' outputs and gradients, the logits, the label.
      const double flat = static_cast<double>(cnn.flat);
      const double per_sample = 4.0 * padded + 5.0 * S::kC1 * p1 + flat +
                                4.0 * (2 * flat + 2 * S::kDense1 + 2 * S::kDense2 + c + 1);
      return chunk + n * per_sample;
    }
    default:
      return 0;
  }
}

std::unique_ptr<Model> make_model(const ModelSpec& spec, int64_t features, int32_t classes, bool cuda) {
  if (cuda) {  // validated as for the CPU; built by models/cuda/ (or its stub)
    const auto he = [&] { return spec.init == WeightInit::kHe; };
    switch (spec.type) {
      case ModelType::kSoftmax:
        check_dense(name(spec.type), features, classes, {});
        return detail::make_cuda_dense(name(spec.type), features, classes, {}, he());
      case ModelType::kMlp:
        if (spec.hidden.empty()) bad("mlp: hidden must list at least one width (or use softmax)");
        check_dense(name(spec.type), features, classes, spec.hidden);
        return detail::make_cuda_dense(name(spec.type), features, classes, spec.hidden, he());
      case ModelType::kCnn:
        check_cnn(features, classes);
        return detail::make_cuda_cnn(features, classes, he());
      case ModelType::kTimeOnly:
        bad("time-only: has no math to run on the cuda backend (use backend cpu)");
      default:
        bad("type '" + name(spec.type) +
            "' is not built here (allowed on the cuda backend: softmax, mlp, cnn)");
    }
  }
  switch (spec.type) {
    case ModelType::kSoftmax:
      // spec.hidden is ignored: softmax regression has no hidden layer.
      check_dense(name(spec.type), features, classes, {});
      return detail::make_softmax(features, classes, spec.init);
    case ModelType::kMlp:
      if (spec.hidden.empty()) bad("mlp: hidden must list at least one width (or use softmax)");
      check_dense(name(spec.type), features, classes, spec.hidden);
      return detail::make_mlp(features, classes, spec.hidden, spec.init);
    case ModelType::kCnn:
      check_cnn(features, classes);
      return detail::make_cnn(features, classes, spec.init);
    case ModelType::kTimeOnly:
      if (spec.parameters < 1 || spec.parameters > kMaxParameters)
        bad("time-only: parameters must be in [1, 2^40], got " + std::to_string(spec.parameters));
      if (!std::isfinite(spec.flops_per_sample) || spec.flops_per_sample <= 0.0)
        bad("time-only: flops_per_sample must be finite and > 0, got " +
            std::to_string(spec.flops_per_sample));
      return detail::make_time_only(spec.parameters, spec.flops_per_sample);
    default:
      bad("type '" + name(spec.type) +
          "' is not built here (allowed: softmax, mlp, cnn, time-only; mf, lda and "
          "lstsq: sim/workloads.hpp)");
  }
}

}  // namespace stalesim
