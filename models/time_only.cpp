// "time-only": a model that exists only for the cost model. It declares a parameter count and
// FLOPs per sample (e.g. ResNet-50's) so that a run can be timed as that network would take,
// while no math is done (has_math() is false and the simulation must not call the math).

#include <stdexcept>

#include "models/classifier_common.hpp"

namespace stalesim::detail {
namespace {

class TimeOnlyModel final : public Model {
 public:
  TimeOnlyModel(int64_t parameters, double flops_per_sample)
      : parameters_(parameters), flops_per_sample_(flops_per_sample) {}

  std::string type() const override { return "time-only"; }
  int64_t parameter_count() const override { return parameters_; }
  double flops_per_sample() const override { return flops_per_sample_; }
  bool has_math() const override { return false; }

  void init(std::span<float>, Rng&) override { no_math("init"); }
  double loss_and_gradient(std::span<const float>, const Dataset&, std::span<const int32_t>,
                           std::span<float>) override {
    no_math("loss_and_gradient");
  }
  Evaluation evaluate(std::span<const float>, const Dataset&, std::span<const int32_t>) override {
    no_math("evaluate");
  }

 private:
  [[noreturn]] static void no_math(const char* what) {
    throw std::logic_error(std::string("time-only model: ") + what +
                           " called, but this model has no math (check has_math() first)");
  }
  int64_t parameters_;
  double flops_per_sample_;
};

}  // namespace

std::unique_ptr<Model> make_time_only(int64_t parameters, double flops_per_sample) {
  return std::make_unique<TimeOnlyModel>(parameters, flops_per_sample);
}

}  // namespace stalesim::detail
