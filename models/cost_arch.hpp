#pragma once
// Cost architectures (DESIGN.md section 1, "the math model and the cost model are separate"):
// a run may train a small model for real while timing every iteration, and sizing every message,
// as a named architecture would, so that papers' clusters can be studied on a laptop.
// Training FLOPs per sample = 3 x forward FLOPs (forward, plus about twice that backward);
// a multiply-add counts as 2 FLOPs.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stalesim {

struct CostArchitecture {
  std::string name;          // the key scenarios use in model.cost
  std::string description;   // e.g. "ResNet-110 for CIFAR-10 (32x32)"
  double parameters = 0;     // float32 parameters: message bytes = 4 x parameters
  double forward_flops = 0;  // per sample
  std::string source;
  double training_flops() const { return 3.0 * forward_flops; }
};

// All built-in architectures, in a fixed order.
const std::vector<CostArchitecture>& cost_architectures();
// The architecture named `name`, or nullopt.
std::optional<CostArchitecture> find_cost_architecture(std::string_view name);

}  // namespace stalesim
