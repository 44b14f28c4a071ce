// The dense classifier behind "softmax" and "mlp" on the GPU (models/cuda/cuda_model.hpp): the
// forward and backward passes of models/mlp.cpp as cuBLAS SGEMMs and small kernels, on device
// buffers kept between calls. Upload, the softmax cross-entropy head, download and timing are
// CudaClassifier's (models/cuda/cuda_classifier.hpp).

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/classifier_common.hpp"
#include "models/cuda/cuda_classifier.hpp"
#include "models/cuda/cuda_model.hpp"
#include "models/cuda/cuda_util.hpp"

namespace stalesim::detail {
namespace {

// Samples per evaluation chunk: bounds device memory during evaluate() (40 MB of inputs for 784
// features).
constexpr int64_t kEvalChunk = 10000;

class CudaDenseClassifier final : public CudaClassifier {
 public:
  CudaDenseClassifier(const std::string& type, int64_t features, int32_t classes,
                      const std::vector<int64_t>& hidden, bool he_init)
      : CudaClassifier(type, features, classes, kEvalChunk),
        cpu_(type, features, classes, hidden, he_init ? WeightInit::kHe : WeightInit::kGlorot) {
    std::vector<int64_t> widths{features};
    widths.insert(widths.end(), hidden.begin(), hidden.end());
    widths.push_back(classes);
    int64_t offset = 0;
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      ParamBlock layer{
          .out = widths[l + 1], .in = widths[l], .w = offset, .b = offset + widths[l] * widths[l + 1]};
      offset = layer.b + layer.out;
      layers_.push_back(layer);
    }
    if (offset != cpu_.parameter_count())
      throw std::logic_error("cuda " + type + ": layout differs from the CPU model's");
    act_.resize(layers_.size());
    delta_.resize(layers_.size() - 1);
    open_device(offset);
  }

  int64_t parameter_count() const override { return cpu_.parameter_count(); }
  double flops_per_sample() const override { return cpu_.flops_per_sample(); }
  // The CPU model's init: the same Rng draws, so the same bits.
  void init(std::span<float> params, Rng& rng) override { cpu_.init(params, rng); }

 private:
  void reserve_layers(int64_t n) override {
    for (size_t l = 0; l < layers_.size(); ++l)
      act_[l].reserve(layers_[l].out * n, "cudaMalloc (activations)");
    for (size_t l = 0; l < delta_.size(); ++l) delta_[l].reserve(layers_[l].out * n, "cudaMalloc (deltas)");
  }

  float* logits() override { return act_.back().data(); }

  // Forward pass on the first n columns of the inputs; logits end in act_.back().
  void forward(int64_t n) override {
    for (size_t l = 0; l < layers_.size(); ++l) {
      const float* in = l == 0 ? inputs() : act_[l - 1].data();
      // Z (out x n) = W (out x in) * A_prev (in x n), + b, ReLU but on the logits
      layer_forward(layers_[l], in, n, act_[l].data(), l + 1 < layers_.size());
    }
  }

  // Backward pass from d(loss)/d(logits) in act_.back(); writes the whole gradient on the device.
  void backward(int64_t n) override {
    for (size_t k = layers_.size(); k-- > 0;) {
      const float* d = k + 1 == layers_.size() ? act_[k].data() : delta_[k].data();
      const float* in = k == 0 ? inputs() : act_[k - 1].data();
      // dW (out x in) = D (out x n) * A_prev^T (n x in); below the first layer also
      // D_prev (in x n) = W^T (in x out) * D (out x n), then masked by ReLU'
      layer_backward(layers_[k], d, in, n, k > 0 ? delta_[k - 1].data() : nullptr,
                     k > 0 ? act_[k - 1].data() : nullptr);
    }
  }

  DenseClassifier cpu_;  // init, parameter count and FLOPs: the CPU model's, by construction
  std::vector<ParamBlock> layers_;
  std::vector<DeviceBuffer<float>> act_;    // per layer, out x capacity: ReLU outputs, last = logits
  std::vector<DeviceBuffer<float>> delta_;  // per hidden layer: d(loss)/d(pre-activation)
};

}  // namespace

std::unique_ptr<Model> make_cuda_dense(const std::string& type, int64_t features, int32_t classes,
                                       const std::vector<int64_t>& hidden, bool he_init) {
  return std::make_unique<CudaDenseClassifier>(type, features, classes, hidden, he_init);
}

}  // namespace stalesim::detail
