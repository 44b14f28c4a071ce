#pragma once
// What the commands of the `stalesim` CLI share (tools/stalesim.cpp dispatches to tools/cmd_*.cpp):
// exit codes, the usage error, option parsing, loading the scenario an option names, the
// interrupt flag, and the environment. The library never reads the environment
// (tests/layers/check_layers.sh): the CLI reads it here and passes what it found as parameters.

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "sim/output/outputs.hpp"
#include "sim/scenario/scenario.hpp"
#include "tools/cpu_quota.hpp"

namespace stalesim::cli {

namespace po = boost::program_options;

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;
// A failed simulation (deadlock), a reproduction mismatch, a write that failed (a full disk), an
// internal error.
inline constexpr int kExitFailed = 3;
inline constexpr int kExitOutOfMemory = 4;
inline constexpr int kExitInterrupted = 130;

// Bad command-line arguments: main() prints the message and a pointer to --help, exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- The environment -------------------------------------------------------------------------

// The environment variable `name`, or "" when it is unset.
std::string env(const char* name);

// The number of processes of the mpirun that started this one (OpenMPI's OMPI_COMM_WORLD_SIZE,
// else PMI_SIZE or PMIX_SIZE), or 0 when it was not started by mpirun.
int mpi_launch_size();

// The folder default output folders go in (results/NAME): --results DIR when `vm` has it, else
// $STALESIM_RESULTS, else "results" (relative to the working directory). Lets the docs be
// followed from a read-only or shared checkout.
std::string results_root(const po::variables_map& vm);

// The option --results DIR (results_root) of the commands that write output folders.
void add_results_option(po::options_description& o);

// RESULTS/name: where a command's output folder goes when --out is not given.
std::string default_output(const po::variables_map& vm, const std::string& name);

// ---- Signals ---------------------------------------------------------------------------------

// Set by SIGINT, SIGTERM and SIGHUP once catch_signals() was called: runs stop, outputs are
// marked interrupted, exit 130.
extern std::atomic<bool> g_interrupt;
void catch_signals();

// ---- Options ---------------------------------------------------------------------------------

struct Parsed {
  po::variables_map vm;
  bool help = false;
};

// Parses `args`; --help skips the checks of required options. Throws UsageError.
Parsed parse(const std::vector<std::string>& args, const po::options_description& opts,
             const po::positional_options_description& pos);

// The positional "scenario" and --set, --seed.
void add_scenario_options(po::options_description& o);

// The scenario of add_scenario_options' options (STALESIM_PROFILE_DIR for profile names).
Scenario load(const po::variables_map& vm);

// --threads, else STALESIM_THREADS, else the machine's cores; the default divided by `share`
// (sweeps: --jobs runs share the cores). Throws UsageError.
int threads_option(const po::variables_map& vm, int share);

// What --force must not delete (the scenario file, this program, $HOME), and the fault-injection
// hook STALESIM_INJECT_KILL_AT_STEP=N: SIGKILL at the N-th step (1-based) of writing and
// installing the output folder, to test that a kill at any instant leaves a complete run
// (REFERENCE.md "Safety and errors").
OutputGuard output_guard(const std::string& scenario_path);

// --compare KEY=A,B (summarize, report): two values of one column of sweep.csv. Throws UsageError.
struct CompareOption {
  std::string key, a, b;
};
CompareOption parse_compare(const std::string& spec);

// ---- Text --------------------------------------------------------------------------------------

// `dir` as the user wrote it, without trailing separators ("out/" -> "out"), for messages.
std::string display_path(std::string dir);

// `v` formatted by `f`, or "n/a".
std::string fmt_opt(const std::optional<double>& v, const char* f = "{:.4f}");

// "45s", "1m12s", "2h03m".
std::string fmt_duration(double s);

// ---- The commands (tools/cmd_<name>.cpp): each takes its arguments after the command name and
// returns the exit code; errors are thrown (main() maps them to exit codes). ------------------

int cmd_run(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_real(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);
int cmd_profiles(const std::vector<std::string>& args);
int cmd_costs(const std::vector<std::string>& args);
int cmd_fields(const std::vector<std::string>& args);
int cmd_schema(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args);
int cmd_reproduce(const std::vector<std::string>& args);
int cmd_summarize(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_timeline(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);

// ---- MPI jobs this program starts on itself (tools/cmd_real.cpp) ----------------------------

// Whether this process is a rank other than 0 of an mpirun job (it then prints no errors: rank 0
// prints them once).
bool quiet_rank();
// Starts `mpirun -n RANKS [--oversubscribe ...] THIS-PROGRAM COMMAND ARGS` and waits for it (its
// ranks end with this process, even on SIGKILL). Returns 0 or 2 as the job exits, 130 when a
// signal interrupted it (`on_interrupt` is added to that message), 3 for any other failure.
// Throws ScenarioError when mpirun is not on PATH.
// With `net` (--net kernel, tools/kernel_net.hpp): mpirun runs in the network's switch namespace
// and each rank in its host's namespace, over TCP only.
struct KernelNet;
int launch_ranks(int ranks, const std::string& command, const std::vector<std::string>& args, bool quiet,
                 const std::string& on_interrupt, const KernelNet* net = nullptr);

// What the launcher makes on this machine for the job, and removes after it (even when the launch
// throws): CPU quota groups (tools/cpu_quota.hpp) and, with `kernel_net_of`, the network of that
// scenario made by the kernel (tools/kernel_net.hpp; `calibrate`: calibrate's two hosts).
struct MachineShaping {
  std::vector<CpuQuota> quotas;
  const Scenario* kernel_net_of = nullptr;
  bool calibrate = false;
};
// launch_ranks inside what `shaping` makes; said on stderr unless `quiet`.
int launch_on_machine(int ranks, const std::string& command, const std::vector<std::string>& args, bool quiet,
                      const std::string& on_interrupt, MachineShaping shaping);

}  // namespace stalesim::cli
