#pragma once
// The math model interface (DESIGN.md section 1). A model owns no parameters: the server does.
// It knows its parameter count and layout, initializes parameters, computes the loss and gradient
// on a batch, evaluates on a dataset, and reports its cost (FLOPs per sample, bytes on the wire).
//
// One Model instance serves one run on one thread; it may keep scratch buffers between calls, so
// its methods are not const and it must not be shared between concurrent runs.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.hpp"
#include "base/rng.hpp"
#include "models/dataset.hpp"

namespace stalesim {

struct Evaluation {
  double loss = 0.0;      // mean cross-entropy (natural log) over the evaluated samples
  double accuracy = 0.0;  // fraction of arg-max predictions equal to the label
  int64_t samples = 0;
  // Models that are not classifiers (mf, lda) leave out what does not apply and report their own
  // metric instead, named by Model::metric_name().
  bool has_loss = true;
  bool has_accuracy = true;
  std::optional<double> metric;
};

// How the server applies what a worker pushes. kGradient: the learning rule turns it into a step
// (w -= rule(g)). kDelta: it is an additive delta the server adds as is (w += d), with no learning
// rule (LDA's count deltas): only rule "sgd" without momentum or softsync averaging is accepted.
enum class UpdateKind { kGradient, kDelta };

// A gradient computed up to its last, parameter-free step (Model::begin_gradient): what a worker
// holds between reading the parameters and pushing, so that it need not hold the parameters. For
// the dense classifier that is the batch's indices, each layer's output delta and the hidden
// activations: (2 x hidden + classes) x batch floats instead of a whole parameter copy.
struct DeferredGradient {
  std::vector<int32_t> batch;  // the batch's sample indices
  std::vector<float> factors;  // model-specific: what finish_gradient needs besides the data
  double loss = 0.0;           // the batch's mean loss
  bool pending = false;        // holds a begun gradient not yet finished
};

class Model {
 public:
  virtual ~Model() = default;
  // "softmax", "mlp", "cnn", "time-only".
  virtual std::string type() const = 0;
  // Number of float32 parameters.
  virtual int64_t parameter_count() const = 0;
  // Forward plus backward FLOPs for one sample (a multiply-add counts 2), for the cost model.
  virtual double flops_per_sample() const = 0;
  // Bytes one full update or one full parameter copy takes on the wire. Default: 4 per parameter.
  virtual int64_t wire_bytes() const { return parameter_count() * 4; }
  // False for the time-only model, which has parameters by declaration only.
  virtual bool has_math() const { return true; }
  // What loss_and_gradient writes: a gradient (default) or a delta to add (see UpdateKind).
  virtual UpdateKind update_kind() const { return UpdateKind::kGradient; }
  // Bytes of the push for this batch: wire_bytes() unless the model sends sparse updates (mf,
  // lda: only the rows the batch touched).
  virtual int64_t update_bytes(const Dataset& data, std::span<const int32_t> batch) {
    (void)data;
    (void)batch;
    return wire_bytes();
  }
  // Row-oriented tables, as Bosen keeps them (the ESSP paper's system, Dai et al. AAAI 2015):
  // how many rows the parameters form (0 = a dense model: a copy is always the whole model), the
  // rows an update for this batch changes (appended to `rows`, each once), and one row's bytes on
  // the wire (its values and its id). Cached modes send a worker only the rows changed since its
  // last copy (sim/worker/changed_rows.hpp).
  virtual int64_t row_count() const { return 0; }
  virtual void changed_rows(const Dataset& data, std::span<const int32_t> batch, std::vector<int32_t>& rows) {
    (void)data;
    (void)batch;
    (void)rows;
  }
  virtual int64_t row_bytes(int32_t row) const {
    (void)row;
    return wire_bytes();
  }
  // Name of Evaluation::metric in metrics.csv and summary.json ("test_rmse", "loglik_per_token"),
  // or "" when the model reports test loss and accuracy only.
  virtual std::string metric_name() const { return ""; }

  // Writes initial parameters drawn from `rng`. REQUIRES: params.size() == parameter_count().
  virtual void init(std::span<float> params, Rng& rng) = 0;
  // Overwrites `grad` with the gradient of the mean loss over the batch at `params` and returns
  // that mean loss. REQUIRES: sizes == parameter_count(); indices valid in `data`.
  virtual double loss_and_gradient(std::span<const float> params, const Dataset& data,
                                   std::span<const int32_t> indices, std::span<float> grad) = 0;
  // Deferred gradients: begin_gradient does everything loss_and_gradient does that reads `params`
  // and returns the mean loss; finish_gradient then writes the gradient, bit for bit the one
  // loss_and_gradient(params, data, indices, grad) would have written, from `pending` and `data`
  // alone. Lets a worker drop its parameter copy as soon as it has read it (DESIGN.md section 1:
  // memory grows with live versions, and under ASP every worker reads a different version).
  // Simulation decides where to use it (sim/worker/core.hpp, `defer`).
  // Models that cannot split (the default) return false and throw std::logic_error from both.
  virtual bool can_defer_gradient() const { return false; }
  virtual double begin_gradient(std::span<const float> params, const Dataset& data,
                                std::span<const int32_t> indices, DeferredGradient& pending);
  // REQUIRES: pending.pending, from begin_gradient on this model with the same `data`.
  virtual void finish_gradient(DeferredGradient& pending, const Dataset& data, std::span<float> grad);
  // Floats of DeferredGradient::factors for a batch of `batch` samples (0 when it cannot defer),
  // for the memory estimate.
  virtual int64_t deferred_floats(int64_t batch) const {
    (void)batch;
    return 0;
  }
  // A fresh instance of the same configuration with its own scratch, whose loss_and_gradient is
  // bit for bit this one's, for another thread (sim/gradient_pool.hpp); nullptr (the default)
  // when the model cannot be computed on another thread.
  virtual std::unique_ptr<Model> clone() const { return nullptr; }
  // Mean loss and accuracy over `indices` of `data` (all samples when indices is empty).
  virtual Evaluation evaluate(std::span<const float> params, const Dataset& data,
                              std::span<const int32_t> indices) = 0;
  // Seconds the last loss_and_gradient took on the device, measured with CUDA events (the cuda
  // backend: copies in, forward, backward, copies out), for compute.timing "measured"; nullopt
  // for models that measure nothing (the CPU models) and before the first call.
  virtual std::optional<double> last_measured_seconds() const { return std::nullopt; }
};

// The model families (model.type), parsed from their names once by the scenario loader.
enum class ModelType { kSoftmax, kMlp, kCnn, kMf, kLda, kLstsq, kTimeOnly };
std::span<const EnumName<ModelType>> enum_names(ModelType);
inline std::string_view to_string(ModelType t) { return enum_name(t); }

// One row per model family (models/model.cpp).
struct ModelTraits {
  ModelType type;
  bool has_math;             // false: time-only, whose parameters exist by declaration only
  bool classifier;           // softmax, mlp, cnn: image or blob data, weight init, the cuda backend
  bool dense;                // softmax, mlp: the dense classifier, which can defer its gradient
  std::string_view dataset;  // mf, lda, lstsq: the one data.dataset it trains on; "" otherwise
};
const ModelTraits& traits(ModelType t);

// model.init: how a classifier's weights are drawn.
enum class WeightInit {
  kHe,      // N(0, sqrt(2 / fan_in))
  kGlorot,  // uniform(-sqrt(6 / (fan_in + fan_out)), +sqrt(6 / (fan_in + fan_out)))
};
STALESIM_ENUM_NAMES(WeightInit, {WeightInit::kHe, "he"}, {WeightInit::kGlorot, "glorot"})

// model.cost's one value that is not a cost architecture's name (models/cost_arch.hpp).
inline constexpr std::string_view kDerivedCost = "derived";

struct ModelSpec {
  ModelType type = ModelType::kMlp;   // softmax | mlp | cnn (models/cnn.hpp) | mf | lda | lstsq | time-only
  std::vector<int64_t> hidden{200};   // mlp: hidden layer widths
  WeightInit init = WeightInit::kHe;  // he | glorot: weight initialization
  // "derived" (time and size from this model) or a cost architecture (models/cost_arch.hpp)
  // whose FLOPs and parameter count time every iteration and size every message instead.
  std::string cost{kDerivedCost};
  // Whether `cost` is "derived": the math model times and sizes itself (no cost architecture).
  bool cost_derived() const { return cost == kDerivedCost; }
  int64_t parameters = 0;         // time-only: declared parameter count
  double flops_per_sample = 0.0;  // time-only: declared forward+backward FLOPs per sample
  int32_t rank = 5;               // mf: factor rank
  double l2 = 0.01;               // mf: L2 regularization strength
  int32_t topics = 10;            // lda: number of topics K
  double alpha = 0.1;             // lda: document-topic Dirichlet prior of the sampler
  double beta = 0.01;             // lda: topic-word Dirichlet prior of the sampler
  bool operator==(const ModelSpec&) const = default;
};

// What a model's size depends on besides its spec: the shape of its data.
struct ModelShape {
  int64_t features = 0;    // softmax, mlp, cnn: inputs per sample
  int32_t classes = 0;     // softmax, mlp, cnn: labels
  int64_t rows = 0;        // mf: rows of the rating matrix
  int64_t cols = 0;        // mf: columns
  int64_t vocabulary = 0;  // lda: words
  int64_t documents = 0;   // lda: training documents
  double mean_length = 0;  // lda: expected tokens per document
  int64_t dimension = 0;   // lstsq: parameters
};
// The sizes of a model, from its spec and data shape alone: nothing is built or allocated.
struct ModelSize {
  double parameters = 0;        // float32 values (time-only: as declared)
  double flops_per_sample = 0;  // forward + backward (lda: one Gibbs sweep of a document)
  double wire_bytes = 0;        // one pull message
  double state_bytes = 0;       // what the model holds besides parameters and data, growing with the
                                // data (lda: each token's topic, each document's counts and stream)
};
// The one account of model sizes: the simulation's models report these figures
// (parameter_count(), flops_per_sample(), wire_bytes(); tests/test_estimate.cpp checks every type)
// and the estimates made before a run (sim/estimate/) use them. lda's FLOPs use
// the expected document length, the built model the drawn one. Throws std::invalid_argument for an
// unknown type.
ModelSize model_size(const ModelSpec& spec, const ModelShape& shape);

// The scratch one model instance holds once it has computed gradients of `batch` samples and
// evaluated `eval_samples` samples (in chunks of at most 1,000 for the dense classifiers, 256 for
// the cnn; scratch only grows), in bytes: the dense classifiers' inputs, activations and deltas per
// sample; the cnn's per-chunk im2col matrices and per-sample padded inputs, pooling outputs,
// arg-maxes and dense activations (models/cnn.hpp; on large images many times the parameters).
// mf, lda and lstsq hold scratch per batch entry only (a few bytes each): 0.
double model_scratch_bytes(const ModelSpec& spec, const ModelShape& shape, double batch, double eval_samples);

// Builds the model for inputs of `features` values and `classes` labels (ignored by time-only).
// `cuda` (compute.backend "cuda"): on the local GPU (softmax, mlp and cnn:
// models/cuda/cuda_model.hpp), which throws DeviceError when the build has no CUDA or there is no
// GPU, and std::invalid_argument for the time-only model; else on the CPU (Eigen).
std::unique_ptr<Model> make_model(const ModelSpec& spec, int64_t features, int32_t classes,
                                  bool cuda = false);

}  // namespace stalesim
