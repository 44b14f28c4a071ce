#!/bin/bash
# Self-test of the plots/ scripts. Builds tiny run folders (tests/golden/tiny with --set for each
# policy, a time-only DSSP run, an unfinished run) and sweeps with the stalesim binary given as
# $1, runs every script on them into a temporary folder, and checks that each writes a non-empty
# PNG and SVG, that --help works, that bad input exits 2, and that two identical invocations
# write identical SVG bytes.
#
# Usage: plots/selftest.sh STALESIM [PYTHON]
#   PYTHON: the interpreter with matplotlib (default: $PYTHON, else /usr/bin/python3).
# Exit: 0 passed, 1 failed, 77 skipped (PYTHON cannot import matplotlib).
set -u

here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: plots/selftest.sh STALESIM [PYTHON]}
py=${2:-${PYTHON:-/usr/bin/python3}}
scenario=$here/../tests/golden/tiny/scenario.json

[ -x "$bin" ] || { echo "selftest: $bin: not an executable"; exit 1; }
if ! "$py" -c 'import matplotlib' 2>/dev/null; then
  echo "selftest: $py cannot import matplotlib (Debian: apt-get install python3-matplotlib): skipped"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stalesim-plots.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
runs=$tmp/runs
out=$tmp/out
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# stalesim run of the tiny scenario into $runs/NAME, 300 updates, with more --set arguments.
simulate() {
  local name=$1
  shift
  "$bin" run "$scenario" --set stop.max_updates=300 "$@" --out "$runs/$name" --force --quiet \
    >"$tmp/$name.log" 2>&1 || fail "stalesim run $name: exit $?: $(cat "$tmp/$name.log")"
}

# plot NAME SCRIPT ARGS...: runs plots/SCRIPT into $out with --name NAME; checks that it exits 0
# and writes non-empty $out/NAME-<figure>.png and .svg, <figure> being SCRIPT without .py.
plot() {
  local name=$1 script=$2
  shift 2
  local base=$out/$name-${script%.py}
  if ! "$py" "$here/$script" "$@" --out "$out" --name "$name" >"$tmp/$name.log" 2>&1; then
    fail "$script $*: exit $?: $(cat "$tmp/$name.log")"
    return
  fi
  for ext in png svg; do
    [ -s "$base.$ext" ] || fail "$script $*: no $base.$ext"
  done
}

# refuse CODE SCRIPT ARGS...: the script must exit with CODE and say why on stderr.
refuse() {
  local code=$1 script=$2
  shift 2
  "$py" "$here/$script" "$@" --out "$tmp/refused" >"$tmp/refuse.log" 2>&1
  local rc=$?
  [ "$rc" -eq "$code" ] || fail "$script $*: exit $rc, expected $code: $(cat "$tmp/refuse.log")"
  grep -q "error" "$tmp/refuse.log" || fail "$script $*: no error message"
}

# ---- Inputs ------------------------------------------------------------------------------------
target=(--set stop.target_accuracy=0.75)
simulate bsp --set policy.type=bsp "${target[@]}"
simulate asp --set policy.type=asp "${target[@]}"
simulate ssp --set policy.type=ssp "${target[@]}"
simulate essp --set policy.type=essp "${target[@]}"
simulate dssp --set policy.type=dssp --set policy.staleness=0 --set policy.range=4 "${target[@]}"
simulate dssp-time-only --set policy.type=dssp --set policy.staleness=0 --set policy.range=4 \
  --set model.type=time-only --set model.parameters=100000 --set model.flops_per_sample=1e8 \
  --set data.dataset=none
cp -r "$runs/ssp" "$runs/unfinished" && rm -f "$runs/unfinished/done"
all=("$runs"/{bsp,asp,ssp,essp,dssp,dssp-time-only,unfinished})

# A sweep by `stalesim sweep`, and a minimal hand-made sweep.csv: no seed, no result columns, no
# policy.staleness column (read from the run folders; bsp has none).
# (A binary from before `stalesim sweep` existed skips the first.)
if ! "$bin" --help 2>&1 | grep -q '^ *sweep '; then
  echo "note: $bin has no sweep command: time_to_target.py runs on the hand-made sweep.csv only"
elif ! "$bin" sweep "$scenario" --grid policy.type=ssp,dssp,asp --grid policy.staleness=0,1,2 --seeds 1..2 \
    --set stop.max_updates=300 "${target[@]}" --out "$tmp/sweep" --quiet >"$tmp/sweep.log" 2>&1; then
  fail "stalesim sweep: $(cat "$tmp/sweep.log")"
fi
mkdir -p "$tmp/minimal"
printf 'policy.type,folder,status\nssp,../runs/ssp,completed\ndssp,../runs/dssp,completed\nbsp,../runs/bsp,completed\n' \
  >"$tmp/minimal/sweep.csv"

if [ "$failures" -ne 0 ]; then
  echo "plots selftest: stalesim could not make the input runs; no figure tested"
  exit 1
fi

# ---- Figures -----------------------------------------------------------------------------------
plot curves curves.py "${all[@]}"
plot curves-linear curves.py --linear-loss "$runs/ssp" "$runs/dssp"
plot staleness staleness.py "${all[@]}"
plot staleness-log staleness.py --log --max-staleness 3 "${all[@]}"
plot workers workers.py "${all[@]}"
plot bandwidth bandwidth.py "${all[@]}"
plot bandwidth-accuracy bandwidth.py --metric accuracy "${all[@]}"
plot dssp_grants dssp_grants.py "$runs/dssp" "$runs/dssp-time-only" "$runs/bsp"
if [ -e "$tmp/sweep/sweep.csv" ]; then
  plot time_to_target time_to_target.py "$tmp/sweep"
  plot time_to_target-csv time_to_target.py "$tmp/sweep/sweep.csv" --group policy.type --x policy.staleness
  # best_of.py: the best final loss per policy over seeds and staleness, tuned over staleness.
  plot best_of best_of.py "$tmp/sweep" --x policy.staleness --group policy.type --over seed
  "$py" "$here/papers_summary.py" "$tmp" >"$tmp/summary.md" || fail "papers_summary.py failed on $tmp"
fi
plot time_to_target-minimal time_to_target.py "$tmp/minimal/sweep.csv"

# The same invocation twice gives the same bytes.
plot again curves.py "${all[@]}"
plot again-staleness staleness.py "${all[@]}"
cmp -s "$out/curves-curves.svg" "$out/again-curves.svg" || fail "curves.py: two runs differ in SVG"
cmp -s "$out/curves-curves.png" "$out/again-curves.png" || fail "curves.py: two runs differ in PNG"
cmp -s "$out/staleness-staleness.svg" "$out/again-staleness-staleness.svg" || fail "staleness.py: two runs differ in SVG"

# --help, and bad input: exit 2 with an error.
for script in curves.py time_to_target.py staleness.py workers.py bandwidth.py dssp_grants.py best_of.py; do
  "$py" "$here/$script" --help >"$tmp/help.log" 2>&1 || fail "$script --help: exit $?"
  grep -q -- "--out" "$tmp/help.log" || fail "$script --help: no --out"
done
for script in curves.py staleness.py workers.py bandwidth.py dssp_grants.py; do
  refuse 2 "$script" "$tmp/minimal"          # not a run folder
done
refuse 2 curves.py "$runs/ssp" "$tmp/no-such-folder"
refuse 2 time_to_target.py "$runs/ssp"        # a run folder, not a sweep
refuse 2 best_of.py "$runs/ssp"               # likewise
refuse 2 best_of.py "$tmp/sweep" --metric no_such_column
refuse 2 dssp_grants.py "$runs/ssp"           # no DSSP run
refuse 2 time_to_target.py "$tmp/minimal/sweep.csv" --x policy.no_such_field

if [ "$failures" -ne 0 ]; then
  echo "plots selftest: $failures failure(s)"
  exit 1
fi
echo "plots selftest: passed ($(find "$out" -name '*.png' | wc -l) figures)"
