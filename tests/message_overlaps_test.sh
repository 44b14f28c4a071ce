#!/usr/bin/env bash
# tools/message-overlaps on a timing.csv made by hand (issue 42): each message lands in the group
# its spans put it in, the means are those of its group, and bad input exits 2 naming the file.
set -euo pipefail
root=$1
tool="$root/tools/message-overlaps"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
work=$(mktemp -d "${TMPDIR:-/tmp}/stalesim-overlaps-XXXXXX")
trap 'rm -rf -- "$work"' EXIT
mkdir "$work/run"
# Worker 0: pull [0, 1], push [2, 3] (applied 3.5, server 0.5).
# Worker 1: pull [0.5, 2] (overlaps worker 0's pull: same direction), push [4, 6] (alone).
# Worker 0: pull [5, 5.5] (overlaps only worker 1's push: opposite), push [7, 7.25] (alone).
cat > "$work/run/timing.csv" <<'CSV'
worker,iteration,granted_s,compute_s,padding_s,wait_s,communicate_s,applied_s,pull_s,push_s,server_s
0,0,0,1,0,0,2,3.5,1,1,0.5
1,0,0.5,2,0,0.25,3.5,6,1.5,2,0
0,1,5,1.5,0,0.5,0.75,7.25,0.5,0.25,0
CSV
out=$("$py" "$tool" "$work/run")
"$py" - "$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
def near(a, b): assert abs(a - b) < 1e-12, (a, b)
assert d["iterations"] == 3, d
near(d["compute_s"], 1.5)
near(d["communicate_and_wait_s"], (2 + 3.75 + 1.25) / 3)
pull, push = d["pull"], d["push"]
assert pull["overlapping_same_direction"]["count"] == 2, pull
near(pull["overlapping_same_direction"]["mean_s"], 1.25)
assert pull["overlapping_only_opposite_direction"]["count"] == 1, pull
near(pull["overlapping_only_opposite_direction"]["mean_s"], 0.5)
assert pull["alone"]["count"] == 0 and pull["alone"]["mean_s"] is None, pull
near(pull["mean_s"], 1.0)
# Worker 0's first push [2, 3] overlaps worker 1's pull [0.5, 2]? No: it ends at 2 (touching is not
# overlapping). All three pushes: [2,3] alone, [4,6] overlaps worker 0's pull [5,5.5] (opposite),
# [7,7.25] alone.
assert push["alone"]["count"] == 2, push
near(push["alone"]["mean_s"], 0.625)
assert push["overlapping_only_opposite_direction"]["count"] == 1, push
near(push["overlapping_only_opposite_direction"]["mean_s"], 2.0)
assert push["overlapping_same_direction"]["count"] == 0, push
PY
# Bad input: exit 2, the file named.
printf 'worker,iteration\n0,0\n' > "$work/run/timing.csv"
set +e
err=$("$py" "$tool" "$work/run" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || { echo "expected exit 2 on a timing.csv without the columns, got $rc"; exit 1; }
case $err in *"$work/run/timing.csv"*"no column"*) ;; *) echo "unexpected message: $err"; exit 1 ;; esac
printf '%s\n' 'worker,iteration,granted_s,compute_s,padding_s,wait_s,communicate_s,applied_s,pull_s,push_s,server_s' \
  '0,0,0,1,0,0,2,3.5,,,' > "$work/run/timing.csv"
set +e
err=$("$py" "$tool" "$work/run" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || { echo "expected exit 2 on empty pull_s (a cache mode's timing.csv), got $rc"; exit 1; }
case $err in *"line 2"*"cache modes"*) ;; *) echo "unexpected message: $err"; exit 1 ;; esac
echo "message-overlaps: ok"
