// `stalesim timeline SCENARIO`: the first seconds of a run as a terminal Gantt chart
// (sim/output/timeline.hpp).

#include <unistd.h>
#include <iostream>

#include <fmt/format.h>

#include "sim/build_info.hpp"
#include "sim/output/timeline.hpp"
#include "sim/run.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

int cmd_timeline(const std::vector<std::string>& args) {
  po::options_description o(
      "Usage: stalesim timeline SCENARIO [--until 5s] [--width N] [options]\n\nOptions");
  add_scenario_options(o);
  o.add_options()("until", po::value<std::string>()->default_value("5s"),
                  "virtual time shown, e.g. 5s, 250ms")(
      "width", po::value<int>()->default_value(72), "cells per row, 10 to 1000")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << R"(
Runs the scenario up to --until (writing nothing) and draws one row per worker: each cell shows
what the worker did for most of its time (compute, communicate, wait); a marked cell is where the
policy blocked it. Colours only when stdout is a terminal and NO_COLOR is unset.
)";
    return kExitOk;
  }
  SimTime until;
  try {
    until = parse_duration(p.vm["until"].as<std::string>());
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--until: {}", e.what()));
  }
  const int width = p.vm["width"].as<int>();
  if (width < 10 || width > 1000)
    throw UsageError(fmt::format("--width: expected 10 to 1000, got {}", width));
  const Scenario sc = load(p.vm);
  pin_eigen_cache_sizes();
  const bool color = ::isatty(STDOUT_FILENO) && env("NO_COLOR").empty();
  std::cout << timeline_of(sc, until, width, color, p.vm["scenario"].as<std::string>());
  return kExitOk;
}

}  // namespace stalesim::cli
