// stalesim: the command-line front end. This file dispatches to one file per command
// (tools/cmd_<command>.cpp) and maps errors to exit codes; what the commands share is in
// tools/cli.hpp. The simulator itself lives in the stalesim::sim and stalesim::models libraries.
//
// Exit codes: 0 success (a diverged run included: its outputs say so), 2 bad input (usage,
// scenario, data, output folder), 3 failed simulation (deadlock), 4 out of memory (std::bad_alloc),
// 130 interrupted.
// sweep: 3 when any point failed. reproduce: 3 on MISMATCH.

#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/sim_time.hpp"
#include "models/cuda/cuda_model.hpp"
#include "models/dataset.hpp"
#include "sim/build_info.hpp"
#include "tools/cli.hpp"

using namespace stalesim;
using namespace stalesim::cli;

namespace {

const char* kMainHelp = R"(stalesim: a deterministic simulator of distributed SGD on a parameter server

Usage: stalesim COMMAND [options]

Commands:
  run SCENARIO       run a scenario and write its outputs
  validate SCENARIO  check a scenario and print it with every default resolved
  sweep SCENARIO     run a grid of variants and seeds of a scenario, one folder each (resumable)
  sweep FILE         run a sweep file (*.sweep.json: grid, zip, seeds, derived fields, constraints)
  reproduce SUMMARY  rerun a finished run from its summary.json and compare its files byte for byte
  reproduce DIR      rerun every point of a sweep folder and compare, point by point
  summarize DIR      mean and spread over seeds per sweep point, seed-averaged curves with bands
  timeline SCENARIO  draw the first seconds of a run in the terminal, a row per worker
  report RUN_OR_SWEEP...  one HTML page on runs and sweeps: timelines, staleness, accuracy, comparison
  real SCENARIO      run a scenario for real: a parameter server and workers over MPI (wall clock)
  compare A B [B..]  compare run folders (a simulation and real runs): errors, KS distance, spread
  profiles [FILE]    list the built-in device profiles (or check profile files) and how to add yours
  costs              list the cost architectures (model.cost): parameters, FLOPs per sample, source
  calibrate          time a model on this machine's GPU and write its device profile (CUDA builds);
                     --cpu SCENARIO: this CPU's gradient time and the MPI link, for real runs
  fields             print the scenario field reference (Markdown)
  schema [--sweep]   print the scenario (or sweep file) format as JSON Schema 2020-12 (for editors)
  version            print the version and build

Run 'stalesim COMMAND --help' for a command's options.
Exit codes: 0 success, 2 bad input, 3 failed simulation (deadlock), 4 out of memory, 130 interrupted.
            sweep: 3 when a point failed; reproduce: 3 on MISMATCH.
)";

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kMainHelp;
    return kExitBadInput;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kMainHelp;
    return kExitOk;
  }
  if (cmd == "run") return cmd_run(args);
  if (cmd == "validate") return cmd_validate(args);
  if (cmd == "profiles") return cmd_profiles(args);
  if (cmd == "costs") return cmd_costs(args);
  if (cmd == "fields") return cmd_fields(args);
  if (cmd == "schema") return cmd_schema(args);
  if (cmd == "calibrate") return cmd_calibrate(args);
  if (cmd == "sweep") return cmd_sweep(args);
  if (cmd == "reproduce") return cmd_reproduce(args);
  if (cmd == "summarize") return cmd_summarize(args);
  if (cmd == "timeline") return cmd_timeline(args);
  if (cmd == "report") return cmd_report(args);
  if (cmd == "real") return cmd_real(args);
  if (cmd == "compare") return cmd_compare(args);
  if (cmd == "version" || cmd == "--version") {
    std::cout << build_info_json().dump(2) << "\n";
    return kExitOk;
  }
  throw UsageError(
      fmt::format("unknown command '{}' (commands: run, validate, profiles, costs, fields, schema, sweep, "
                  "reproduce, summarize, timeline, report, real, compare, calibrate, version)",
                  cmd));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const UsageError& e) {
    fmt::print(stderr, "stalesim: {}\nRun 'stalesim --help' for usage.\n", e.what());
  } catch (const ScenarioError& e) {
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const DataError& e) {
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const IoError& e) {
    fmt::print(stderr, "stalesim: {}\n", e.what());
    if (e.write_failed()) return kExitFailed;  // a full disk: the request was fine, the write failed
  } catch (const TimeRangeError& e) {          // a duration past int64 nanoseconds: bad input
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const DeviceError& e) {  // no GPU, or a build without CUDA
    fmt::print(stderr, "stalesim: {}\n", e.what());
  } catch (const std::bad_alloc&) {
    // Out of memory is not a deadlock (exit 3) nor bad input: its own code, and what to do.
    fmt::print(stderr,
               "stalesim: out of memory: the process could not allocate what it needed; 'stalesim validate "
               "SCENARIO' prints the memory estimate (lower the model, batch, workers or cache, or run "
               "on a machine with more memory)\n");
    return kExitOutOfMemory;
  } catch (const std::exception& e) {
    fmt::print(stderr, "stalesim: internal error: {}\n", e.what());
    return kExitFailed;
  }
  return kExitBadInput;
}
