#pragma once
// The `real` and `compare` commands (issue 28; sim/real/real_run.hpp, sim/analysis/compare.hpp), apart
// from tools/stalesim.cpp, which parses `real`'s scenario options and calls real_main.

#include <string>
#include <vector>

#include "sim/real/real_run.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim::cli {

struct RealCommand {
  Scenario scenario;
  std::string origin;             // the scenario file, for messages
  std::vector<std::string> args;  // `real`'s arguments as given, for the mpirun this command starts
  RealOptions options;
  bool quiet = false;
};

// Under mpirun: runs this rank. Alone: checks what can be checked, then starts
// `mpirun -n N+1 ... stalesim real ARGS` and waits for it. Returns the exit code (README "Real runs").
int real_main(RealCommand command);

// Starts `mpirun -n RANKS [--oversubscribe ...] THIS-PROGRAM COMMAND ARGS` and waits for it (its
// ranks end with this process, even on SIGKILL). Returns 0 or 2 as the job exits, 130 when a
// signal interrupted it (`on_interrupt` is added to that message), 3 for any other failure.
// Throws ScenarioError when mpirun is not on PATH.
int launch_ranks(int ranks, const std::string& command, const std::vector<std::string>& args, bool quiet,
                 const std::string& on_interrupt);

// `stalesim compare RUN_A RUN_B [RUN_B2 ...] [--json FILE]`.
int compare_main(const std::vector<std::string>& args);

// Whether this process is a rank other than 0 of an mpirun job (it then prints no errors: rank 0
// prints them once).
bool quiet_rank();

}  // namespace stalesim::cli
