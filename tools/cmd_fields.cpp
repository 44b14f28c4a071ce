// `stalesim fields`: the scenario field reference as Markdown (sim/scenario/fields.hpp).

#include <iostream>

#include "sim/scenario/fields.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

int cmd_fields(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout
        << "Usage: stalesim fields\n\nPrints the reference of every scenario field as a Markdown table.\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("fields takes no arguments, got '" + args[0] + "'");
  std::cout << scenario_fields_markdown();
  return kExitOk;
}

}  // namespace stalesim::cli
