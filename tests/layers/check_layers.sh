#!/usr/bin/env bash
# tests/layers/check_layers.sh SOURCE_DIR: the layering rules a grep can check (issue 17).
#  1. No algorithm name or option value compared as a string outside the scenario loader: a
#     policy, learning rule, model type, cache mode or cluster order, and every option value (the
#     dataset and its partition, the compute backend and timing, jitter and trace scale, schedule
#     kinds, on_crash, init, precision, dssp_grant, the FASGD variant, the topology and its node
#     and placement kinds) is parsed into its enum once, in sim/scenario/ (and the CLI's own
#     --model option via enum_from_name); everything else switches on the enum or reads the traits
#     (sim/algorithms.hpp, sim/scenario/options.hpp, sim/data/dataset.hpp, models/model.hpp).
#     So are how a run ended and why (RunStatus, StopReason: sim/output/run_result.hpp) and how a
#     sweep's run ended (SweepStatus: sim/sweep/sweep_status.hpp), parsed with enum_from_name where
#     a summary.json, sweep.json or sweep.csv is read.
#  2. base/ includes nothing from sim/ or models/; models/ includes nothing from sim/; sim/data/
#     (the datasets, below the scenario loader) includes nothing from sim/ outside itself: the
#     error it throws for a bad field is base/errors.hpp's ScenarioError (issue 47).
#  3. No dynamic_cast to a policy or a learning rule outside their own folders: explain.cpp and the
#     recorders ask the SyncPolicy interface, the worker protocols (sim/worker/) get the VAP policy
#     from the factory that builds it and B-FASGD's gate from LearningRule::transfer_gate().
#  4. Policies and learning rules see the scenario through sim/scenario/spec.hpp only: nothing in
#     sim/policies/ or sim/rules/ includes models/ or another sim/scenario/ header, but
#     sim/rules/server_optimizer.*, which applies updates to a model's parameters.
#  5. Every file stalesim reads goes through base/file_read (regular file, size cap, JSON depth and
#     duplicate-key checks, one set of messages): no ifstream, fopen, open(O_RDONLY), mmap of a
#     file or gzopen elsewhere, but /proc/meminfo (a kernel file) in sim/estimate/memory_estimate.cpp.
#     Benchmarks under tools/bench/ read /proc and are not the program.
#  6. The library never reads the environment (below).
#  7. Policies and rules see nothing from models/, even through their includes (below).
#  8. The run does not ask the estimator how to run: nothing in the run (sim/simulation.*,
#     sim/run.*, sim/worker/, sim/real/) nor the plan and data layers (sim/plan/, sim/data/)
#     includes sim/estimate/; the run and the estimator both read the run plan (sim/plan/).
#     Inside sim/estimate/, estimate.hpp includes memory_estimate.hpp and not the other way round
#     (memory_estimate.cpp asks estimate_run for the pace the cache modes' pushes keep).
#  9. The real mode (sim/real/) never waits in a blocking MPI point-to-point call (below).
# Prints each offending line; exits 1 when there is one, 0 when there is none.
set -uo pipefail
cd "${1:?usage: check_layers.sh SOURCE_DIR}" || exit 2

names='bsp|asp|ssp|essp|dssp|vap|softsync|sgd|sasgd|fasgd|bfasgd|dcasgd|softmax|mlp|cnn|mf|lda|lstsq|time-only|lazy|pull-every-iteration|timed|uniform'
# Option values (sim/scenario/options.hpp, sim/scenario/topology_spec.hpp, sim/data/dataset.hpp,
# models/model.hpp, models/device_profile.hpp).
names+='|fashion-mnist|blobs|ratings|corpus|none|iid|shared|label-skew|he|glorot|cpu|cuda|modelled|measured'
names+='|lognormal|constant|normal|exponential|gamma|trace|absolute|relative|slow|pause|crash|drift|wait|drop'
names+='|fp32|fp16|bf16|bounded|literal|unbounded|paper|fred|star|racks|graph|host|switch|first|spread|explicit|fill'
# How runs end (sim/output/run_result.hpp, sim/sweep/sweep_status.hpp).
names+='|completed|diverged|deadlock|interrupted|failed|not_run'
names+='|virtual_time|max_updates|target_accuracy|no_events|rank_silent|rank_failed'
# And every name of every enum's names table (STALESIM_ENUM_NAMES in base/, sim/, models/) and of
# every registration row (the policies' and learning rules' `.name = "..."` rows, which build their
# enums' tables), so an option that becomes an enum is covered without editing the lists above;
# "derived" is model.cost's one value that is not a table's (ModelSpec::cost_derived()).
enum_names=$( {
  grep -rhoE --include='*.hpp' --include='*.cpp' '\{[A-Za-z_:]+::k[A-Za-z0-9_]+, "[A-Za-z0-9_.-]+"\}' base sim models
  grep -rhoE --include='*.hpp' --include='*.cpp' '\.name = "[A-Za-z0-9_.-]+"' base sim models
} | sed -E 's/.*"([^"]+)"\}?$/\1/; s/\./\\./g' | sort -u | tr '\n' '|')
# (A tree without tables, such as the tests' scratch trees, keeps the hand list alone.)
[[ -n $enum_names ]] && names+="|${enum_names%|}"
names+="|derived"
fail=0

# A string literal holding one of the names, next to == or != (either side).
compares=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cu' \
  "([!=]=[[:space:]]*\"($names)\")|(\"($names)\"[[:space:]]*[!=]=)" sim models base tools \
  | grep -v '^sim/scenario/' | grep -v '^tools/bench/' | grep -v '"emulated"')
# ("emulated" | "measured" is calibrate's own --timing option, parsed where the CLI reads it.)
if [[ -n "$compares" ]]; then
  echo "check_layers: algorithm names or option values compared as strings outside the scenario loader (switch on the enum):"
  echo "$compares"
  fail=1
fi

up=$(grep -rnE '#include "(sim|models)/' base; grep -rnE '#include "sim/' models
     grep -rnsE '#include "sim/' sim/data | grep -v '#include "sim/data/')
if [[ -n "$up" ]]; then
  echo "check_layers: a lower layer includes a higher one (base/ < models/ < sim/data/ < the rest of sim/):"
  echo "$up"
  fail=1
fi

casts=$(grep -rnE 'dynamic_cast<[^>]*(Policy|Rule)[^>]*>' sim models tools | grep -vE '^sim/(policies|rules)/')
if [[ -n "$casts" ]]; then
  echo "check_layers: a policy or rule cast outside sim/policies/ and sim/rules/ (add what is needed to"
  echo "SyncPolicy or LearningRule):"
  echo "$casts"
  fail=1
fi

heavy=$(grep -rnE '#include "(models/|sim/scenario/)' sim/policies sim/rules \
  | grep -v '#include "sim/scenario/spec\.hpp"' | grep -v '^sim/rules/server_optimizer\.')
if [[ -n "$heavy" ]]; then
  echo "check_layers: a policy or rule includes the model interface or more than sim/scenario/spec.hpp:"
  echo "$heavy"
  fail=1
fi

readers=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cu' \
  '(ifstream|[^o]fstream|fopen|freopen|O_RDONLY|gzopen|mmap[(])' sim models base tools \
  | grep -v '^base/file_read\.' | grep -v '^tools/bench/' | grep -vE '^[^:]+:[0-9]+:#include' \
  | grep -vE '^sim/estimate/memory_estimate\.cpp:[0-9]+:.*"/proc/meminfo"')
if [[ -n "$readers" ]]; then
  echo "check_layers: a file read outside base/file_read (use read_regular_file or read_json_file):"
  echo "$readers"
  fail=1
fi

# 6. The library (sim/, models/, base/) never reads the environment: no getenv, secure_getenv or
#    environ. The CLI reads STALESIM_THREADS, STALESIM_MEMORY_LIMIT, STALESIM_PROFILE_DIR, HOME and
#    mpirun's variables (tools/cli.hpp) and passes what it found down as parameters, so that a run
#    depends on its arguments only and two runs in one process cannot see different settings.
env_reads=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cu' \
  '\b(secure_)?getenv\b|\benviron\b' sim models base)
if [[ -n "$env_reads" ]]; then
  echo "check_layers: the library reads the environment (read it in tools/cli.cpp and pass a parameter):"
  echo "$env_reads"
  fail=1
fi

# 7. (issue 31) Policies and learning rules see nothing from models/ even transitively: the
#    project headers reachable from sim/policies/ and sim/rules/ (but sim/rules/server_optimizer.*)
#    through their includes hold nothing from models/ (sim/scenario/spec.hpp so stays free of it;
#    the cluster's device profiles are sim/scenario/cluster_spec.hpp's).
reach=()
declare -A reached=()
for f in sim/policies/* sim/rules/*; do
  [[ $f == sim/rules/server_optimizer.* ]] || reach+=("$f")
done
while ((${#reach[@]})); do
  f=${reach[0]}
  reach=("${reach[@]:1}")
  for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
    [[ -f $inc && -z ${reached[$inc]-} ]] || continue
    reached[$inc]=$f
    reach+=("$inc")
  done
done
for inc in "${!reached[@]}"; do
  if [[ $inc == models/* ]]; then
    echo "check_layers: a policy or rule sees $inc (included by ${reached[$inc]}, reached from sim/policies/ or sim/rules/)"
    fail=1
  fi
done

# 8. (issue 31) The run does not ask the estimator how to run; see the header.
upward=$(grep -nE '#include "sim/estimate/' sim/simulation.* sim/run.* sim/worker/* sim/real/* sim/plan/* \
  sim/data/* 2>/dev/null; grep -nE '#include "sim/estimate/estimate\.hpp"' sim/estimate/memory_estimate.hpp)
if [[ -n "$upward" ]]; then
  echo "check_layers: the run or the plan includes the estimator, or memory_estimate.hpp includes estimate.hpp"
  echo "(read sim/plan/run_plan.hpp instead):"
  echo "$upward"
  fail=1
fi

# 9. (issue 42) The real mode never waits in a blocking MPI point-to-point call: OpenMPI's spin on a
#    core for as long as a transfer lasts, and the ranks share the host's cores with the workers'
#    gradients (the server rank used 0.58 of a core so). Messages go through real_wire.hpp's
#    send_polling, try_receive, Inbox and SendQueue (MPI_Isend / MPI_Irecv, MPI_Test polls with sleeps);
#    only the start-up handshake in real_run.cpp (1-byte pings on `ping`, before the clock starts)
#    uses blocking calls.
blocking=$(grep -rnE '\bMPI_(Recv|Send|Ssend|Bsend|Rsend|Sendrecv|Sendrecv_replace|Wait|Waitall|Waitany|Waitsome|Probe)\(' \
  sim/real 2>/dev/null | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' | grep -vE '^sim/real/real_run\.cpp:[0-9]+:.*&ping\b')
if [[ -n "$blocking" ]]; then
  echo "check_layers: a blocking MPI call in the real mode (it spins for the whole transfer; use real_wire.hpp's"
  echo "send_polling, try_receive, Inbox or SendQueue):"
  echo "$blocking"
  fail=1
fi

[[ $fail -eq 0 ]] && echo "check_layers: ok"
exit $fail
