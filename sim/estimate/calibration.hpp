#pragma once
// This machine's rate for the wall-time estimate (issue 32 point 6; REFERENCE.md "Before you run:
// the estimate"). The estimate assumes the reference machine's rates (estimate.hpp,
// assumed_gflops and kAssumedEventUs); a calibration measures this machine instead, once, by
// running short reference simulations in-process (each twice, short and longer, the difference
// timed): a 784-200-10 MLP on generated blobs (the
// quick start's shape; its math sets the speed factor against the assumed rate, in wall time) and
// the same model time-only on 16 workers (its events set the cost per event, in this thread's CPU
// time, which other processes change less). It takes about a second on an idle 2-core machine, a
// few under load (which the math's rate then measures too).
//
// The result is cached as a small JSON file (the CLI chooses where, from the environment:
// $XDG_CACHE_HOME/stalesim or ~/.cache/stalesim; the library reads no environment). A cache is
// used only when it parses, holds finite positive figures within bounds, and was measured by a
// binary of this version and ISA; otherwise the machine is measured again.
#include <optional>
#include <string>

#include "sim/estimate/estimate.hpp"
#include "sim/simulation.hpp"

namespace stalesim {

struct MachineRate {
  double speed = 1;         // this machine's math rate over the assumed one (assumed_gflops), > 0
  double event_us = 0;      // wall microseconds per simulated event, > 0
  int64_t measured_at = 0;  // Unix time of the measurement
  std::string version;      // stalesim_version of the binary that measured it
  std::string isa;          // and its ISA level
};

// Runs the two reference simulations with `options` (threads) and measures. Takes about a second.
MachineRate measure_machine_rate(const RunOptions& options = {});

// The cache file's text: {"format": "stalesim machine rate", ...} with a trailing newline.
std::string machine_rate_json(const MachineRate& r);

// The rate cached in `path`, read through read_regular_file (at most 64 KiB) and checked: nullopt
// with `why` set ("No such file or directory", "invalid JSON ...", "/speed: expected a number in
// (0.001, 1000]", "measured by stalesim 0.0.9 (x86-64-v2), this is 0.1.0 (x86-64-v3)").
std::optional<MachineRate> read_machine_rate(const std::string& path, std::string& why);

// `e` with its wall time recomputed at the machine's measured rate, saying so in describe() and
// one_line(); `note` says where the figures come from ("measured just now", "cached in PATH").
void use_machine_rate(RunEstimate& e, const MachineRate& r, const std::string& note);

}  // namespace stalesim
