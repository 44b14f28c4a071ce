// `stalesim validate SCENARIO`: the scenario with every default resolved, and the up-front estimate.

#include <iostream>

#include <fmt/format.h>

#include "sim/build_info.hpp"
#include "sim/estimate/estimate.hpp"
#include "sim/run.hpp"
#include "sim/scenario/to_json.hpp"
#include "tools/cli.hpp"
#include "tools/cmd_estimate.hpp"

namespace stalesim::cli {

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim validate SCENARIO [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("remeasure", "measure this machine again for the wall time, replacing the cached rate")(
      "threads", po::value<int>(),
      "threads of the measuring runs and of the memory estimate (default: as for run)")("help,h",
                                                                                        "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o
              << "\nPrints the scenario with every default resolved on stdout, or the first error (exit 2),\n"
                 "and on stderr the up-front estimate (lines starting 'estimate: '): each worker group's\n"
                 "iteration time split into compute, worker link and server link, the message sizes, the\n"
                 "links' utilisation, the bottleneck, the updates expected in the virtual time, the wall\n"
                 "time and memory on this machine, and a warning when one resource makes the policy\n"
                 "comparison moot (see REFERENCE.md, \"Before you run: the estimate\").\n"
                 "The wall time is at this machine's measured rate: the first validate measures it (short\n"
                 "reference runs, a second or a few) and caches it in\n"
                 "$XDG_CACHE_HOME/stalesim/machine-rate.json (else ~/.cache/stalesim/); --remeasure\n"
                 "measures again.\n";
    return kExitOk;
  }
  const Scenario sc = load(p.vm);
  // The memory at the gradient threads `run` would use here (more add the pool's buffers).
  RunEstimate estimate = estimate_run(sc, threads_option(p.vm, 1));
  check_feasible(sc, estimate, p.vm["scenario"].as<std::string>());
  std::cout << scenario_to_json(sc).dump(2) << "\n";
  std::cout.flush();
  pin_eigen_cache_sizes();
  RunOptions measuring;
  measuring.threads = threads_option(p.vm, 1);
  use_this_machine(estimate, measuring, p.vm.count("remeasure") > 0);
  fmt::print(stderr, "{}", estimate.describe());
  return kExitOk;
}

}  // namespace stalesim::cli
