// `stalesim costs`: the cost architectures of model.cost (models/cost_arch.hpp).

#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "models/cost_arch.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

int cmd_costs(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout
        << "Usage: stalesim costs\n\nLists the cost architectures (model.cost, models/cost_arch.cpp): the "
           "parameters\n(message bytes = 4 x parameters), the training FLOPs per sample (3 x forward; "
           "a multiply-add\ncounts 2) that time every iteration, and where the figures come from.\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("costs takes no arguments, got '" + args[0] + "'");
  fmt::print("{:<15} {:>12} {:>14} {:>22}  {}\n", "name", "parameters", "message bytes",
             "training FLOP/sample", "description");
  for (const auto& a : cost_architectures())
    fmt::print("{:<15} {:>12.0f} {:>14.0f} {:>22.4g}  {}\n", a.name, a.parameters,
               std::round(a.parameters * 4.0), a.training_flops(), a.description);
  std::cout << "\nSources:\n";
  for (const auto& a : cost_architectures()) fmt::print("  {}: {}\n", a.name, a.source);
  std::cout << "\nmodel.cost \"derived\" (the default) times and sizes the run by its own model instead.\n";
  return kExitOk;
}

}  // namespace stalesim::cli
