#!/bin/bash
# Self-test of the plots/ scripts. Builds tiny run folders (tests/golden/tiny with --set for each
# policy, a time-only DSSP run, a traced BSP run, an unfinished run) and sweeps with the stalesim binary given as
# $1, runs every script on them into a temporary folder, and checks that each writes a non-empty
# PNG and SVG, that --help works, that bad input exits 2, and that two identical invocations
# write identical SVG bytes.
#
# Usage: plots/selftest.sh STALESIM [PYTHON]
#   PYTHON: the interpreter with matplotlib (default: tools/find-python, the first of $PYTHON,
#   /usr/bin/python3 and python3 on PATH that imports matplotlib).
# Exit: 0 passed, 1 failed, 77 skipped (no python3 can import matplotlib).
set -u

here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: plots/selftest.sh STALESIM [PYTHON]}
py=${2:-$("$here/../tools/find-python")} || { echo "selftest: skipped"; exit 77; }
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
"$bin" run "$scenario" --set stop.max_updates=300 --set policy.type=bsp --trace --out "$runs/traced" --force \
  --quiet >"$tmp/traced.log" 2>&1 || fail "stalesim run --trace: exit $?: $(cat "$tmp/traced.log")"
simulate asp-gradients --set policy.type=asp --record gradients
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

# The verdict rule on synthetic data: a null difference never reads contradicted, a clear one its way.
"$py" "$here/papers_claims.py" selftest || fail "papers_claims.py selftest"

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
plot timeline timeline.py "$runs/traced"
plot timeline-file timeline.py "$runs/traced/trace.json" --from 0 --to 0.01
# Who waited for whom: under BSP the two GTX 1080 Ti wait for w0, the GTX 1060 (the trace's
# blocked events name it in args.waits_for); each row ends with its count.
grep -q "x for w0" "$out/timeline-timeline.svg" || fail "timeline.py: no row says whom it waited for (x for w0)"
grep -q -- "-&gt;w0" "$out/timeline-file-timeline.svg" || fail "timeline.py: the marks are not labelled ->w0"  # > is &gt; in SVG
plot timeline-to timeline.py "$runs/traced" --to 0.01    # --to alone: from the trace's start
plot timeline-bins timeline.py "$runs/traced" --bins 5   # aggregated into 5 cells a row
grep -q "drawn as 5 cells" "$out/timeline-bins-timeline.svg" || fail "timeline.py --bins 5: not aggregated"
# Without --out, a figure goes into the run folder it was drawn from.
"$py" "$here/timeline.py" "$runs/traced" --name default >"$tmp/default.log" 2>&1 &&
  [ -s "$runs/traced/default-timeline.png" ] || fail "timeline.py without --out: not in the run folder: $(cat "$tmp/default.log")"
# Staleness over time: the staleness from metrics.csv; the missed updates from gradients.csv.
plot staleness_time staleness_time.py "$runs/ssp" "$runs/asp-gradients"
awk -F, 'NR > 1 && $1 ~ /^asp/ && $4 != "" { found = 1 } END { exit !found }' "$out/staleness_time-staleness_time.csv" ||
  fail "staleness_time.py: no missed updates for the run with gradients.csv"
if [ -e "$tmp/sweep/sweep.csv" ]; then
  plot time_to_target time_to_target.py "$tmp/sweep"
  plot time_to_target-csv time_to_target.py "$tmp/sweep/sweep.csv" --group policy.type --x policy.staleness
  # best_of.py: the best final loss per policy over seeds and staleness, tuned over staleness.
  plot best_of best_of.py "$tmp/sweep" --x policy.staleness --group policy.type --over seed
  "$py" "$here/papers_summary.py" "$tmp" >"$tmp/summary.md" || fail "papers_summary.py failed on $tmp"
fi
plot time_to_target-minimal time_to_target.py "$tmp/minimal/sweep.csv"

# A missed target is never hidden (issue 32): a hand-written sweep whose numbers are worked out here.
# ssp at s = 1: seeds reach the target at 2 s and 4 s, the third misses in a 10 s run; at s = 2 all
# three reach it (3, 5, 7 s); at s = 4 none does. x = 1, 2, 4, 8 is a geometric grid: a log axis.
mkdir -p "$tmp/missed"
{
  echo "policy.type,policy.staleness,seed,folder,status,time_to_target_s,virtual_time_s"
  echo "ssp,1,1,,completed,2,10"; echo "ssp,1,2,,completed,4,10"; echo "ssp,1,3,,completed,,10"
  echo "ssp,2,1,,completed,3,10"; echo "ssp,2,2,,completed,5,10"; echo "ssp,2,3,,completed,7,10"
  echo "ssp,4,1,,completed,,10"; echo "ssp,4,2,,completed,,10"; echo "ssp,8,1,,completed,6,10"
} >"$tmp/missed/sweep.csv"
missed_check() {  # missed_check NAME WANT-LINE...: the sidecar CSV of plot NAME holds each line
  local name=$1 line
  shift
  for line in "$@"; do
    grep -qx -- "$line" "$out/$name-time_to_target.csv" ||
      fail "time_to_target.py $name: no line '$line' in $(cat "$out/$name-time_to_target.csv" 2>&1)"
  done
}
plot missed time_to_target.py "$tmp/missed"
# censored: (2 + 4 + 10) / 3 = 5.33333, a lower bound; min-max 2..10. s = 4: nothing reached.
missed_check missed "ssp,1,3,2,5.33333,2,10,1" "ssp,2,3,3,5,3,7,0" "ssp,4,2,0,,,,0" "ssp,8,1,1,6,6,6,0"
grep -q "2/3 reached" "$out/missed-time_to_target.svg" || fail "time_to_target.py: the miss is not labelled '2/3 reached'"
grep -q "lower bound" "$out/missed-time_to_target.svg" || fail "time_to_target.py: the legend does not explain the lower bound"
grep -q "log scale" "$out/missed-time_to_target.svg" || fail "time_to_target.py: a geometric grid without a log axis"
plot missed-drop time_to_target.py "$tmp/missed" --misses drop --band std --logx off
# dropped: the mean of 2 and 4 is 3, sd 1.41421; 3, 5, 7: mean 5, sd 2.
missed_check missed-drop "ssp,1,3,2,3,1.58579,4.41421,0" "ssp,2,3,3,5,3,7,0"
grep -q "2/3 reached" "$out/missed-drop-time_to_target.svg" || fail "time_to_target.py --misses drop: the miss is not labelled"
if grep -q "log scale" "$out/missed-drop-time_to_target.svg"; then fail "time_to_target.py --logx off: a log axis"; fi
plot missed-ci time_to_target.py "$tmp/missed" --band ci95
# 95% CI of 3, 5, 7: 5 +- 4.303 * 2 / sqrt(3) = 5 +- 4.96868.
missed_check missed-ci "ssp,2,3,3,5,0.0313236,9.96868,0"
if [ -e "$tmp/sweep/sweep.csv" ]; then  # the title names what ran: the scenario and the sweep's --set
  grep -q "golden-tiny \[stop.max_updates=300, stop.target_accuracy=0.75\]" "$out/time_to_target-time_to_target.svg" ||
    fail "time_to_target.py: the title does not name the sweep's --set fields"
fi

# Seed-averaged curves with bands: the shipped sweep file, stalesim summarize, bands.py.
if "$bin" sweep "$here/../scenarios/sweep-tiny.sweep.json" --out "$tmp/bands" --quiet >"$tmp/bands.log" 2>&1 &&
  "$bin" summarize "$tmp/bands" --quiet >>"$tmp/bands.log" 2>&1; then
  plot bands bands.py "$tmp/bands"
  plot bands-minmax bands.py "$tmp/bands/curves.csv" --band minmax --metric test_accuracy
  plot bands-ci bands.py "$tmp/bands" --band ci95
  refuse 2 bands.py "$tmp/bands" --metric no_such_column
  refuse 2 bands.py "$tmp/minimal"            # not summarised
else
  fail "sweep file or summarize: $(cat "$tmp/bands.log")"
fi

# stalesim report's figures: a traced run beside an untraced one, and a sweep over seeds; every
# figure figures.json names is a non-empty PNG, with a timeline, the staleness and accuracy bands.
if [ -f "$tmp/bands/sweep.csv" ] &&
  "$py" "$here/report_figures.py" "$tmp/report" "$runs/traced" "$runs/ssp" "$tmp/bands" >"$tmp/report.log" 2>&1; then
  "$py" - "$tmp/report" <<'PY' || fail "report_figures.py: $(cat "$tmp/report.log")"
import json, os, sys
out = sys.argv[1]
sections = json.load(open(os.path.join(out, "figures.json")))["sections"]
kinds = {f["kind"] for s in sections for f in s["figures"]}
for s in sections:
    for f in s["figures"]:
        assert os.path.getsize(os.path.join(out, f["file"])) > 0, f["file"]
assert {"timeline", "staleness", "staleness-time", "staleness-time-log", "accuracy"} <= kinds, kinds
assert any("min-max band" in f["caption"] for s in sections for f in s["figures"]), "no band over seeds"
PY
else
  fail "report_figures.py failed: $(cat "$tmp/report.log" 2>/dev/null)"
fi

# A python3 without matplotlib (a stand-in package that fails to import): every script names
# /usr/bin/python3 and exits 3, without a traceback.
mkdir -p "$tmp/nompl/matplotlib"
echo 'raise ImportError("No module named matplotlib (selftest stand-in)")' >"$tmp/nompl/matplotlib/__init__.py"
for script in "$here"/*.py; do
  name=$(basename "$script")
  [ "$name" = need_matplotlib.py ] && continue
  PYTHONPATH="$tmp/nompl" PYTHONDONTWRITEBYTECODE=1 "$py" "$script" --help >"$tmp/nompl.log" 2>&1
  rc=$?
  [ "$rc" -eq 3 ] || fail "$name without matplotlib: exit $rc, expected 3: $(cat "$tmp/nompl.log")"
  grep -q "/usr/bin/python3" "$tmp/nompl.log" || fail "$name without matplotlib: the message does not name /usr/bin/python3"
  if grep -q "Traceback" "$tmp/nompl.log"; then fail "$name without matplotlib: a traceback"; fi
done

# The same invocation twice gives the same bytes.
plot again curves.py "${all[@]}"
plot again-staleness staleness.py "${all[@]}"
cmp -s "$out/curves-curves.svg" "$out/again-curves.svg" || fail "curves.py: two runs differ in SVG"
cmp -s "$out/curves-curves.png" "$out/again-curves.png" || fail "curves.py: two runs differ in PNG"
cmp -s "$out/staleness-staleness.svg" "$out/again-staleness-staleness.svg" || fail "staleness.py: two runs differ in SVG"

# --help, and bad input: exit 2 with an error.
for script in curves.py time_to_target.py staleness.py staleness_time.py workers.py bandwidth.py dssp_grants.py best_of.py timeline.py bands.py; do
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
refuse 2 timeline.py "$runs/ssp"              # a run without --trace
refuse 2 timeline.py "$runs/traced" --from 0.5 --to 0.1
# A forged trace.json: a clean error naming the event, never a traceback (issue 46).
forged_traces=('{"traceEvents":[{"pid":1,"tid":0,"ph":"X","name":"compute","ts":"x","dur":1}]}'
  '{"traceEvents":[{"pid":1,"tid":[1],"ph":"X","name":"compute","ts":0,"dur":1}]}'
  '{"traceEvents":[{"pid":1,"tid":0,"ph":"X","name":"compute"}]}'
  '{"traceEvents":[{"pid":1,"tid":0,"ph":"M","name":"thread_name","args":5}]}'
  '{"traceEvents":[{"pid":1,"tid":0,"ph":"X","name":"compute","ts":0,"dur":1}],"otherData":5}')
for forged in "${forged_traces[@]}"; do
  printf '%s' "$forged" >"$tmp/forged-trace.json"
  refuse 2 timeline.py "$tmp/forged-trace.json"
  if grep -q "Traceback" "$tmp/refuse.log"; then fail "timeline.py $forged: a traceback"; fi
done
# A plot never writes through a symbolic link (it may point outside the folder).
mkdir -p "$tmp/linked-out"
echo mine >"$tmp/victim.png"
ln -sf "$tmp/victim.png" "$tmp/linked-out/timeline.png"
"$py" "$here/timeline.py" "$runs/traced" --out "$tmp/linked-out" >"$tmp/link.log" 2>&1
[ $? -eq 2 ] || fail "timeline.py into a folder holding a link named timeline.png: not refused: $(cat "$tmp/link.log")"
[ "$(cat "$tmp/victim.png")" = mine ] || fail "timeline.py wrote through a symbolic link"
refuse 2 staleness_time.py "$tmp/minimal"      # not a run folder
refuse 2 time_to_target.py "$tmp/minimal/sweep.csv" --x policy.no_such_field

# ---- papers_tune.py --criterion loss and the paper-length FASGD claim rows ---------------------
# Sweep folders written by hand (sweep.csv only): the picking rule and the claim table's reading of
# the --full runs, checked against numbers worked out here.
long_sweep() {  # long_sweep DIR LINES...: a sweep.csv of rule,variant,lr,seed,status,loss lines
  local dir=$1
  shift
  mkdir -p "$dir"
  {
    echo "optimizer.rule,optimizer.variant,optimizer.lr,seed,folder,status,final_test_loss"
    local i=0 line
    for line in "$@"; do
      IFS=, read -r rule variant lr seed status loss <<<"$line"
      echo "$rule,$variant,$lr,$seed,p$i,$status,$loss"
      i=$((i + 1))
    done
  } >"$dir/sweep.csv"
}
papers=$tmp/papers
for lam in 250 1000 10000; do
  # SASGD best at 0.2 (inside its grid); FASGD (fred) best at 0.008, below 0.016, which diverged:
  # never picked, but it brackets 0.008 from above; the paper form's 0.002 did not finish, which
  # leaves its 0.001 at the edge of what ran.
  long_sweep "$papers/fasgd-long-$lam" sasgd,,0.1,1,completed,0.50 sasgd,,0.2,1,completed,0.40 \
    sasgd,,0.4,1,completed,0.45 fasgd,paper,0.001,1,completed,0.42 fasgd,paper,0.002,1,interrupted, \
    fasgd,fred,0.004,1,completed,0.39 fasgd,fred,0.008,1,completed,0.35 fasgd,fred,0.016,1,diverged,nan
done
long_sweep "$papers/fasgd-long-250-seeds" sasgd,,0.2,2,completed,0.42 sasgd,,0.2,3,completed,0.44 \
  fasgd,fred,0.008,2,completed,0.37 fasgd,fred,0.008,3,completed,0.39
picked=$("$py" "$here/papers_tune.py" "$papers/fasgd-long-250" --group optimizer.rule,optimizer.variant \
  --criterion loss 2>"$tmp/tune.log") || fail "papers_tune.py --criterion loss: exit $?: $(cat "$tmp/tune.log")"
[ "$picked" = $'sasgd - 0.2\nfasgd paper 0.001\nfasgd fred 0.008' ] ||
  fail "papers_tune.py --criterion loss picked: $picked"
long_sweep "$tmp/none" sasgd,,0.2,1,diverged,nan
"$py" "$here/papers_tune.py" "$tmp/none" --group optimizer.rule --criterion loss >/dev/null 2>&1
[ $? -eq 1 ] || fail "papers_tune.py --criterion loss: no finished point should exit 1"
if "$py" "$here/papers_claims.py" record "$papers" --command test --out "$tmp/claims.json" &&
   "$py" "$here/papers_claims.py" table "$tmp/claims.json" >"$tmp/claims.md"; then
  row=$(grep "held-out loss at every lambda, 100,000 updates" "$tmp/claims.md")
  # lambda 250: seeds 0.40, 0.42, 0.44 against 0.35, 0.37, 0.39: margin 0.05, sd 0.02 each, SE
  # 0.01633 at 4 Welch degrees of freedom: 3.06 SEs, beyond the t level, reproduced; lambdas 1000 and 10000 one seed a side: no SE,
  # inconclusive; so the claim is inconclusive. The paper form's rate flagged at its edge; the
  # unfinished point counted (a diverged run finished: 7 of 8).
  for want in "lambda 250: SASGD 0.4200 (lr 0.2) vs FASGD 0.3700 (lr 0.008)" "-0.020 (lr 0.001, grid edge)" \
              "lambda 250: sd 0.02 and 0.02 (3 seeds)" "lambda 1000: sd 0 and 0 (1 seeds)" "7 of 8 grid points finished" \
              "lambda 250: d +0.05, SE 0.01633, df 4: reproduced" "lambda 1000: d +0.05, SE n/a, df n/a: inconclusive" \
              "**inconclusive**"; do
    [[ $row == *"$want"* ]] || fail "papers_claims.py: the paper-length row lacks '$want': $row"
  done
  # The protocol's tuning seed (101): the grid picks the rate and does not count in the mean, which
  # is the reported seeds' alone (0.42, 0.44 against 0.37, 0.39).
  cp -r "$papers" "$tmp/papers-101"
  sed -i 's/,1,p/,101,p/' "$tmp/papers-101"/fasgd-long-250/sweep.csv
  "$py" "$here/papers_claims.py" record "$tmp/papers-101" --command test --out "$tmp/claims-101.json" &&
    "$py" "$here/papers_claims.py" table "$tmp/claims-101.json" >"$tmp/claims-101.md" ||
    fail "papers_claims.py record/table with a tuning-seed grid: exit $?"
  grep -q "lambda 250: SASGD 0.4300 (lr 0.2) vs FASGD 0.3800 (lr 0.008)" "$tmp/claims-101.md" ||
    fail "papers_claims.py: a grid on the tuning seed counted in the reported mean: $(grep 'lambda 250' "$tmp/claims-101.md")"
  "$py" "$here/papers_claims.py" verify "$tmp/claims.md" || fail "papers_claims.py verify: its own table fails the rule"
else
  fail "papers_claims.py record/table on hand-written --full sweeps: exit $?"
fi

# The verdict rule on synthetic data: a null difference never reads contradicted, a clear one its way.
"$py" "$here/papers_claims.py" selftest || fail "papers_claims.py selftest"

if [ "$failures" -ne 0 ]; then
  echo "plots selftest: $failures failure(s)"
  exit 1
fi
echo "plots selftest: passed ($(find "$out" -name '*.png' | wc -l) figures)"
