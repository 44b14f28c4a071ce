// `stalesim schema [--sweep]`: the scenario (or sweep file) format as JSON Schema 2020-12.

#include <iostream>

#include "sim/scenario/schema.hpp"
#include "sim/sweep/sweep_spec.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

int cmd_schema(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout
        << "Usage: stalesim schema [--sweep]\n\nPrints the scenario format as JSON Schema (draft 2020-12), "
           "generated "
           "from\n"
           "the same field table as validation and `stalesim fields`. Save it and point your editor at it.\n"
           "--sweep prints the format of sweep files (REFERENCE.md \"Sweep files\") instead.\n";
    return kExitOk;
  }
  if (args.size() == 1 && args[0] == "--sweep") {
    std::cout << sweep_file_schema().dump(2) << "\n";
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("schema takes no arguments but --sweep, got '" + args[0] + "'");
  std::cout << scenario_json_schema().dump(2) << "\n";
  return kExitOk;
}

}  // namespace stalesim::cli
