#pragma once
// The estimate as the commands print it (issue 32 point 6), shared by `validate` and `sweep`
// (tools/cmd_validate.cpp, tools/cmd_sweep.cpp): this machine's measured rate for `validate` (measured once,
// cached under the user's cache folder: the environment is read here, not in the library;
// sim/estimate/calibration.hpp), and a sweep's estimate for its whole grid before it starts.

#include <optional>
#include <string>

#include "sim/estimate/calibration.hpp"
#include "sim/estimate/estimate.hpp"
#include "sim/sweep/sweep.hpp"

namespace stalesim::cli {

// $XDG_CACHE_HOME/stalesim/machine-rate.json, else $HOME/.cache/stalesim/machine-rate.json; ""
// when neither variable is set (then nothing is cached).
std::string machine_rate_cache_path();

// The cached rate when one is usable ("" when not; nothing is measured).
std::optional<MachineRate> cached_machine_rate(std::string& note);

// `e` at this machine's rate: the cached one, else measured now (saying so on stderr, a second
// or so) and cached; `remeasure` measures even when a cache is usable. A cache that cannot be
// written is said on stderr, and the measured rate is used anyway.
void use_this_machine(RunEstimate& e, const RunOptions& options, bool remeasure);

// The whole grid's estimate, one line each starting "estimate: ": the runs (folders) and points,
// their virtual time, the wall time on `jobs` threads (at the cached machine rate when there is
// one, else the assumed rates, said as such) and the peak memory of `jobs` runs at once, each with
// `threads` gradient threads.
std::string describe_sweep_estimate(const SweepPlan& plan, int jobs, int threads = 1);

}  // namespace stalesim::cli
