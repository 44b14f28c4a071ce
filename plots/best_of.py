#!/usr/bin/python3
"""Best result over a tuned knob, against a swept parameter: the FASGD paper's comparison.

Reads a sweep folder (or its sweep.csv): for each value of --group (default optimizer.rule) and of
--x (default cluster.workers.0.count, the paper's lambda), the best --metric (default
final_test_loss, lowest wins; accuracy columns highest wins) over the values of --over (default
optimizer.lr) and over seeds (the mean over seeds of each knob value is compared). One line per
group through the best values, each point annotated with the knob value that won, so a winner at
the edge of the grid is visible. Points without results are left out with a warning.
Writes OUT/[PREFIX-]best_of.png and .svg, and prints the table of winners.

Example: stalesim sweep scenarios/papers/fasgd-lambda.json --grid cluster.workers.0.count=250,1000 \\
           --zip optimizer.rule=sasgd,sasgd,fasgd,fasgd --zip optimizer.lr=0.1,0.2,0.001,0.003 --out sw
         plots/best_of.py sw --out figures
"""

import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402


def best_table(sweep, x_col, group_col, over_col, metric, higher):
    """{group: {x: (best mean, knob value, runs pooled)}} in sweep order."""
    cells, skipped, no_x = {}, 0, 0
    for row in sweep.rows:
        value = sr.number(sweep.cell(row, metric)) if sweep.ok(row) else None
        if not sr.finite(value):
            skipped += 1
            continue
        group = "/".join(str(v) for v in (sweep.cell(row, c) for c in group_col.split(",")) if v not in (None, "")) \
            if group_col else "all"
        x = sr.number(sweep.cell(row, x_col))
        if x is None:  # asp has no policy.staleness, say
            no_x += 1
            continue
        knob = str(sweep.cell(row, over_col)) if over_col else ""
        cells.setdefault(group, {}).setdefault(x, {}).setdefault(knob, []).append(value)
    if skipped:
        sr.warn(f"{skipped} point(s) of {len(sweep.rows)} without a finite {metric} left out")
    if no_x:
        sr.warn(f"{no_x} point(s) of {len(sweep.rows)} without a number for '{x_col}' left out")
    table = {}
    for group, by_x in cells.items():
        for x, by_knob in by_x.items():
            means = {k: sum(v) / len(v) for k, v in by_knob.items()}
            knob = (max if higher else min)(means, key=lambda k: (means[k], k))
            table.setdefault(group, {})[x] = (means[knob], knob, sum(len(v) for v in by_knob.values()),
                                              list(by_knob))
    return table


def main():
    p = sr.parser(__doc__, inputs="SWEEP", nargs=None,
                  inputs_help="a sweep folder (holding sweep.csv) or a sweep.csv file")
    p.add_argument("--x", default="cluster.workers.0.count", metavar="COLUMN",
                   help="the x axis, a numeric column or scenario field (default: cluster.workers.0.count)")
    p.add_argument("--group", default="optimizer.rule", metavar="COLUMN",
                   help="one line per value of this column, or of several joined by commas "
                        "(e.g. optimizer.rule,optimizer.variant) (default: optimizer.rule)")
    p.add_argument("--over", default="optimizer.lr", metavar="COLUMN",
                   help="the knob tuned per group and x: the best of its values is drawn (default: optimizer.lr)")
    p.add_argument("--metric", default="final_test_loss", metavar="COLUMN",
                   help="the result column compared (default: final_test_loss); accuracies: highest wins")
    p.add_argument("--logx", action="store_true", help="logarithmic x axis")
    args = p.parse_args()
    if args.metric not in sr.SUMMARY_OF_COLUMN:
        sr.fail(f"--metric {args.metric}: not a result column (one of {', '.join(sorted(sr.SUMMARY_OF_COLUMN))})")
    higher = "accuracy" in args.metric
    sweep = sr.Sweep(args.sweep)
    table = best_table(sweep, args.x, args.group, args.over, args.metric, higher)
    if not table:
        sr.fail(f"{args.sweep}: no point holds a finite {args.metric} and a number for '{args.x}' "
                f"(columns: {', '.join(sweep.columns)})")

    print(f"{args.group or 'group'},{args.x},best {args.metric},{args.over} that won,of")
    for group, by_x in table.items():
        for x, (best, knob, _, knobs) in sorted(by_x.items()):
            edge = " (edge of the grid)" if len(knobs) > 1 and knob in (knobs[0], knobs[-1]) else ""
            print(f"{group},{x:g},{best:.6g},{knob}{edge},{'/'.join(knobs)}")

    sr.style()
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    for gi, (group, by_x) in enumerate(table.items()):
        xs = sorted(by_x)
        ys = [by_x[x][0] for x in xs]
        ax.plot(xs, ys, marker="o", ms=5, label=group, **sr.series_style(gi))
        for x, y in zip(xs, ys):
            ax.annotate(f"{args.over.split('.')[-1]}={by_x[x][1]}", (x, y), xytext=(5, 4), textcoords="offset points",
                        fontsize=7, color=f"C{gi % 10}")
    if args.logx:
        ax.set_xscale("log")
    ax.set_xlabel(args.x)
    ax.set_ylabel(f"{args.metric} ({'highest' if higher else 'lowest'} over {args.over})")
    ax.set_title(f"{sweep.name}: best {args.metric} per {args.group}, tuned over {args.over}")
    ax.legend()
    sr.save(fig, args, "best_of")


if __name__ == "__main__":
    main()
