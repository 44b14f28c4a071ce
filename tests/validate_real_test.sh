#!/usr/bin/env bash
# CTest validate_real_fails_when_wrong (issue 42 point 7): tools/validate-real's measured table can
# fail. The same short validation (ASP, one 4-second real run, the median of 3 calibrations)
# twice: with the calibration as measured, and with the simulation's compute deliberately twice as
# fast as measured (--compute-scale 0.5). The wrong one must exit 1 with its iteration-time figure
# past the bound, at least +50% (the real run takes about twice the predicted time), and the calibrated one's
# iteration-time error must be under half the wrong one's: the verdict follows the calibration, not
# chance. Exit 77 (CTest's skip), said on stderr, where no measurement can be honest: no mpirun, a
# stalesim without MPI, or a machine busy with other work (validate-real's exit 3).
# Usage: tests/validate_real_test.sh STALESIM
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:?usage: validate_real_test.sh STALESIM}
command -v mpirun >/dev/null || { echo "validate_real: skipped: mpirun is not on PATH" >&2; exit 77; }
# shellcheck source=tests/real_skip.sh
source "$root/tests/real_skip.sh"
skip_without_mpi validate_real "$bin" "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 1

rc=0
run() {  # NAME ARGS...: runs the validation into $tmp/NAME; its exit code in $rc (no subshell: exit 77 ends the test)
  local name=$1; shift
  STALESIM_BIN=$bin tools/validate-real --runs 1 --time 4 --policies asp --calibrations 3 --out "$tmp/$name" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  if [[ $rc -eq 3 ]] && grep -q "machine busy" "$tmp/$name.err"; then
    echo "validate_real: skipped: $(grep 'machine busy' "$tmp/$name.err")" >&2; exit 77
  fi
  if [[ $rc -eq 3 ]] && grep -qs "built without MPI" "$tmp/$name/calibration.log"; then
    echo "validate_real: skipped: this stalesim was built without MPI (the sanitizer build)" >&2; exit 77
  fi
}
figure() {  # NAME: the ASP row's mean iteration-time error
  /usr/bin/python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["policies"]["asp"]["compare"]["iteration_time_rel_error"])' \
    "$tmp/$1/validate-real.json"
}

fails=0
run wrong --compute-scale 0.5
wrong=$rc
cat "$tmp/wrong.out"
if [[ $wrong -ne 1 ]]; then
  echo "validate_real: FAIL: a 2x wrong compute calibration exited $wrong, not 1" >&2; cat "$tmp/wrong.err" >&2
  fails=$((fails + 1))
fi
grep -q "| miss: iteration +" "$tmp/wrong.out" ||
  { echo "validate_real: FAIL: the wrong calibration's row does not name the iteration time" >&2; fails=$((fails + 1)); }
e_wrong=$(figure wrong) || { echo "validate_real: FAIL: no figure in $tmp/wrong/validate-real.json" >&2; exit 1; }

run right
right=$rc
cat "$tmp/right.out"
[[ $right -le 1 ]] || { echo "validate_real: FAIL: the calibrated validation exited $right" >&2; cat "$tmp/right.err" >&2; exit 1; }
e_right=$(figure right) || { echo "validate_real: FAIL: no figure in $tmp/right/validate-real.json" >&2; exit 1; }
echo "validate_real: iteration-time error: calibrated $e_right, compute x 0.5 $e_wrong"
awk -v w="$e_wrong" 'BEGIN { exit !(w >= 0.5) }' ||
  { echo "validate_real: FAIL: the wrong calibration's iteration-time error $e_wrong is under +50%" >&2; fails=$((fails + 1)); }
awk -v r="$e_right" -v w="$e_wrong" 'BEGIN { r = r < 0 ? -r : r; exit !(r < w / 2) }' ||
  { echo "validate_real: FAIL: the calibrated error $e_right is not under half the wrong one's $e_wrong" >&2; fails=$((fails + 1)); }
[[ $fails -eq 0 ]] || exit 1
echo "validate_real: pass"
