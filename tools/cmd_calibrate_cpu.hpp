#pragma once
// `stalesim calibrate --cpu SCENARIO` (issue 28): this machine's time per gradient for the
// scenario's model, as a device profile file, and the MPI transport's latency and bandwidth, as a
// cluster.network block, so that a simulation can predict a `stalesim real --timing measured` run
// on this machine. tools/cmd_calibrate.cpp parses the options and calls calibrate_cpu_main.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace stalesim::cli {

struct CalibrateCpuCommand {
  Scenario scenario;
  std::string origin;             // the scenario file, for messages
  std::vector<std::string> args;  // `calibrate`'s arguments as given, for the mpirun it starts
  std::string out;                // the folder of profile.json and network.json
  std::string name;               // the profile's name ("" : cpu-<host>)
  int32_t repeats = 200;          // timed gradients (and round trips) per size
  int32_t warmup = 20;
  int32_t concurrent = 1;           // threads computing gradients at once while one is timed (--concurrent)
  std::optional<double> cpu_quota;  // --cpu-quota SHARE: the timing thread's share of one core
  // --idle-us: untimed sleep after each timed gradient (the run's communication and waits): a CPU
  // quota is a budget per period, so a worker that idles between gradients computes faster than
  // one timed back to back.
  double idle_us = 0;
  bool kernel_net = false;  // --net kernel: the 2 ranks' link made by the kernel (tools/kernel_net.hpp)
  bool force = false;       // replace profile.json and network.json
  bool quiet = false;
};

// Whether `path` is a file calibrate wrote (not a symbolic link; read bounded): a profile whose
// "source" starts "Measured by stalesim calibrate", or calibrate --cpu's network.json (exactly
// latency_us and bandwidth_gbps, and server_apply_ns_per_parameter or not). Only such a file is
// replaced.
bool calibrate_wrote(const std::filesystem::path& path);

// Checks, before anything is measured, that `file` may be written: nothing there, or (when
// `replace`) a file calibrate wrote. Throws IoError naming the file and why ("a symbolic link";
// "exists; --force replaces it"; "exists and is not a file calibrate wrote").
void check_calibrate_output(const std::filesystem::path& file, bool replace, const std::string& how);

// Writes `text` to `file` with replace_file_checked: never through a symbolic link, an existing
// file replaced only when `replace` and calibrate_wrote says it is ours.
void write_calibrate_output(const std::filesystem::path& file, const std::string& text, bool replace);

// Alone: starts `mpirun -n 2 stalesim calibrate ARGS` and waits for it. Under mpirun (2 ranks):
// rank 0 times the gradients, then both run the link probe (sim/real/link_probe.hpp); rank 0
// writes the files. Returns the exit code.
int calibrate_cpu_main(CalibrateCpuCommand command);

}  // namespace stalesim::cli
