#!/usr/bin/python3
"""Picks each policy's learning rate from a tuning sweep (tools/reproduce-papers, issue 19).

Usage: plots/papers_tune.py SWEEP --group COL[,COL...] [--param optimizer.lr[,optimizer.momentum]]

SWEEP is a sweep folder whose points ran on a validation split (data.validation_samples > 0: the
"test" metrics of its summaries are validation metrics, never the test set). For each group (the
distinct values of the --group columns, in sweep order) and each value of --param, over the seeds:

  criterion 1: the smallest mean time to the target (validation accuracy); a seed that never reached
               it counts as never, so a value must reach it on every seed to compete;
  criterion 2 (no value reached it on every seed): the highest mean final validation accuracy.

With --criterion rmse (MF): the same two criteria on the validation RMSE: the smallest mean time
to an RMSE of 1.5 times the ratings' noise level (data.ratings.noise: the best RMSE any model can
reach is about the noise), read from each point's metrics.csv, else the lowest mean final RMSE.

With --criterion loss (FASGD, whose claims compare final losses): the lowest mean final
validation loss; a value where a seed diverged (or did not finish) is never picked.

Prints one line per group to stdout, "GROUPVALUES... VALUE" (space separated, the chosen value
last), and a table of every value's scores to stderr. Exits 1 when a group has no finished point.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import stalesim_runs as sr  # noqa: E402


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def rmse_target(sweep, row):
    """1.5 x the noise level of a ratings point's data: the RMSE the ESSP comparisons time."""
    return 1.5 * sr.number(sweep.cell(row, "data.ratings.noise"))


def time_to_rmse(sweep, row, target):
    """(first virtual time with test_rmse <= target or inf, final test_rmse) of one finished point."""
    rows = sr.read_csv(os.path.join(sweep.dir, row["folder"], "metrics.csv"))
    t, last = math.inf, math.inf
    for r in rows:
        v = sr.number(r.get("test_rmse"))
        if sr.finite(v):
            last = v
            if v <= target and not math.isfinite(t):
                t = sr.number(r["virtual_time_s"])
    return t, last


def pick_rmse(sweep, keys, param):
    table = {}  # group -> value -> [(time to the target RMSE, final RMSE)]
    target = None
    for row in sweep.rows:
        group = tuple(sweep.cell(row, k) or "-" for k in keys)
        slot = table.setdefault(group, {}).setdefault(sweep.cell(row, param), [])
        if not sweep.ok(row):
            slot.append((math.inf, math.inf))
            continue
        target = rmse_target(sweep, row)
        slot.append(time_to_rmse(sweep, row, target))
    print(f"tuning {sweep.name}: {param} per {','.join(keys)} (validation split; min mean time to RMSE "
          f"{target}, else min mean final RMSE)", file=sys.stderr)
    status = 0
    for group, values in table.items():
        scored = []
        for value, runs in values.items():
            t, r = mean([x[0] for x in runs]), mean([x[1] for x in runs])
            scored.append((value, t, r))
            shown = "never" if not math.isfinite(t) else f"{t:.3f} s"
            print(f"  {' '.join(group)} {param}={value}: time {shown}, final RMSE {r:.4f} ({len(runs)} seeds)",
                  file=sys.stderr)
        reached = [x for x in scored if math.isfinite(x[1])]
        best = min(reached, key=lambda x: (x[1], x[2])) if reached else min(scored, key=lambda x: x[2])
        if not math.isfinite(best[2]):
            print(f"papers_tune.py: {sweep.name}: {' '.join(group)}: no finished point", file=sys.stderr)
            status = 1
            continue
        why = "fastest to the RMSE" if reached else "none reached it: lowest final RMSE"
        print(f"  -> {' '.join(group)}: {param}={best[0]} ({why})", file=sys.stderr)
        print(" ".join(group + (best[0],)))
    return status


def pick_loss(sweep, keys, param):
    table = {}  # group -> value -> [final validation loss, inf where a seed diverged or did not finish]
    for row in sweep.rows:
        group = tuple(sweep.cell(row, k) or "-" for k in keys)
        loss = sr.number(sweep.cell(row, "final_test_loss")) if sweep.ok(row) else math.inf
        table.setdefault(group, {}).setdefault(sweep.cell(row, param), []).append(
            loss if sr.finite(loss) else math.inf)
    print(f"tuning {sweep.name}: {param} per {','.join(keys)} (validation split; min mean final loss)",
          file=sys.stderr)
    status = 0
    for group, values in table.items():
        for value, runs in values.items():
            print(f"  {' '.join(group)} {param}={value}: final loss {mean(runs):.4f} ({len(runs)} seeds)",
                  file=sys.stderr)
        best = min(values, key=lambda v: mean(values[v]))
        if not math.isfinite(mean(values[best])):
            print(f"papers_tune.py: {sweep.name}: {' '.join(group)}: no finished point", file=sys.stderr)
            status = 1
            continue
        print(f"  -> {' '.join(group)}: {param}={best} (lowest final loss)", file=sys.stderr)
        print(" ".join(group + (best,)))
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("--group", required=True, help="comma-separated key columns, e.g. policy.type,policy.staleness")
    ap.add_argument("--param", default="optimizer.lr",
                    help="the tuned column, or (target criterion) comma-separated columns tuned together, "
                    "e.g. optimizer.lr,optimizer.momentum: the chosen values are printed in that order")
    ap.add_argument("--criterion", choices=("target", "rmse", "loss"), default="target")
    args = ap.parse_args()
    sweep = sr.Sweep(args.sweep)
    keys = args.group.split(",")
    if args.criterion == "rmse":
        sys.exit(pick_rmse(sweep, keys, args.param))
    if args.criterion == "loss":
        sys.exit(pick_loss(sweep, keys, args.param))
    table = {}  # group -> value -> [(time, accuracy)]
    params = args.param.split(",")
    for row in sweep.rows:
        group = tuple(sweep.cell(row, k) or "-" for k in keys)
        value = " ".join(sweep.cell(row, p) or "-" for p in params)
        slot = table.setdefault(group, {}).setdefault(value, [])
        if not sweep.ok(row):
            slot.append((math.inf, -math.inf))
            continue
        t = sr.number(sweep.cell(row, "time_to_target_s"))
        a = sr.number(sweep.cell(row, "final_test_accuracy"))
        slot.append((t if sr.finite(t) else math.inf, a if sr.finite(a) else -math.inf))
    status = 0
    print(f"tuning {sweep.name}: {args.param} per {args.group} (validation split; "
          "min mean time to target, else max mean final accuracy)", file=sys.stderr)
    for group, values in table.items():
        scored = []
        for value, runs in values.items():
            t = mean([x[0] for x in runs])
            a = mean([x[1] for x in runs])
            scored.append((value, t, a))
            shown_t = "never" if not math.isfinite(t) else f"{t:.1f} s"
            print(f"  {' '.join(group)} {args.param}={value}: time {shown_t}, final accuracy {a:.4f} "
                  f"({len(runs)} seeds)", file=sys.stderr)
        reached = [x for x in scored if math.isfinite(x[1])]
        if reached:
            best = min(reached, key=lambda x: (x[1], -x[2]))
            why = "fastest to target"
        else:
            best = max(scored, key=lambda x: x[2])
            why = "none reached the target: best final accuracy"
        if not math.isfinite(best[2]):
            print(f"papers_tune.py: {sweep.name}: {' '.join(group)}: no finished point", file=sys.stderr)
            status = 1
            continue
        print(f"  -> {' '.join(group)}: {args.param}={best[0]} ({why})", file=sys.stderr)
        print(" ".join(group + (best[0],)))
    sys.exit(status)


if __name__ == "__main__":
    main()
