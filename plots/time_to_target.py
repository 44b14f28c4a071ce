#!/usr/bin/python3
"""Time to target accuracy against a swept parameter (the staleness threshold by default).

Reads a sweep folder (or its sweep.csv, as written by `stalesim sweep`): one line per value of
--group (default policy.type), through the mean over seeds of the virtual time at which the
point first reached stop.target_accuracy, with min-max bars when there are several seeds. Points
that never reached the target are hollow markers at the top of the panel. A group without the x
field (bsp and asp have no policy.staleness) is a horizontal dashed line at its mean time.
Columns missing from sweep.csv are read from the points' run folders. Points whose status is not
completed or diverged are left out with a warning. Writes OUT/[PREFIX-]time_to_target.png, .svg.

Example: stalesim sweep scenarios/policies/hetero-resnet110.json --grid policy.type=ssp,dssp,asp \\
           --grid policy.staleness=0,1,2,3,6 --seeds 1..3 --out results/sw
         plots/time_to_target.py results/sw --out figures
"""

import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402
from matplotlib.transforms import offset_copy  # noqa: E402

# Units of fields one is likely to sweep, for the x axis label (README, "Scenario reference").
UNITS = {"policy.staleness": "clocks", "policy.range": "clocks", "optimizer.batch_size": "samples",
         "cluster.network.bandwidth_gbps": "Gbit/s", "cluster.network.server_bandwidth_gbps": "Gbit/s",
         "cluster.network.latency_us": "us", "stop.virtual_time_s": "s", "eval.every_s": "s"}


def collect(sweep, x_col, group_col):
    """{group: {x: [time or None per run]}} of the points that hold results, in sweep order. Points
    that share a run folder (asp at every staleness) count once."""
    cells, skipped = {}, 0
    for i, row in enumerate(sweep.rows):
        if not sweep.ok(row):
            skipped += 1
            continue
        group = str(sweep.cell(row, group_col)) if group_col else "all"
        x = sweep.cell(row, x_col)  # a CSV string or a JSON value from the run folder: one kind of key
        x = x if x is None else sr.number(x) if sr.number(x) is not None else str(x)
        runs = cells.setdefault(group, {}).setdefault(x, {})
        runs[row.get("folder") or i] = sr.number(sweep.cell(row, "time_to_target_s"))
    if skipped:
        sr.warn(f"{skipped} point(s) of {len(sweep.rows)} without results (status not completed/diverged) left out")
    return {g: {x: list(runs.values()) for x, runs in by_x.items()} for g, by_x in cells.items()}


def key_columns(sweep):
    """The grid columns of sweep.csv: those before 'seed' (all but the known result columns)."""
    if "seed" in sweep.columns:
        return sweep.columns[:sweep.columns.index("seed")]
    return [c for c in sweep.columns if c not in sr.SUMMARY_OF_COLUMN and c != "folder"]


def main():
    p = sr.parser(__doc__, inputs="SWEEP", nargs=None,
                  inputs_help="a sweep folder (holding sweep.csv) or a sweep.csv file")
    p.add_argument("--x", default="policy.staleness", metavar="COLUMN",
                   help="the x axis: a column of sweep.csv or a scenario field (default: policy.staleness)")
    p.add_argument("--group", default="policy.type", metavar="COLUMN",
                   help="one line per value of this column; '' for one line (default: policy.type)")
    args = p.parse_args()
    sweep = sr.Sweep(args.sweep)
    cells = collect(sweep, args.x, args.group)
    if not cells:
        sr.fail(f"{args.sweep}: no point holds results")
    if all(x is None for g in cells.values() for x in g):
        sr.fail(f"{args.sweep}: no point has '{args.x}' (columns: {', '.join(sweep.columns)})")
    others = [c for c in key_columns(sweep) if c not in (args.x, args.group)]
    if others:
        sr.warn(f"points that differ only in {', '.join(others)} (and seed) are pooled")
    unit = "runs" if others else "seeds"  # what the runs at one x differ in
    targets = {sr.number(sr.dig(sweep.summary(r), "manifest.scenario.stop.target_accuracy")) for r in sweep.rows}
    targets.discard(None)
    if not targets and all(t is None for g in cells.values() for ts in g.values() for t in ts):
        sr.fail(f"{args.sweep}: the scenario sets no stop.target_accuracy, so no point has a time to target")

    # x positions: the numbers themselves, or evenly spaced categories in order of appearance.
    xs = [x for g in cells.values() for x in g if x is not None]
    numeric = all(sr.number(x) is not None for x in xs)
    categories = list(dict.fromkeys(str(x) for x in xs))
    pos = (lambda x: x) if numeric else (lambda x: categories.index(str(x)))

    sr.style()
    fig, ax = plt.subplots(figsize=(8, 5), constrained_layout=True)
    top_row = ax.get_xaxis_transform()  # x in data, y in axes fraction: the "never reached" rows
    positions = sorted({pos(x) for by_x in cells.values() for x in by_x if x is not None})
    missed = total = rows = 0
    several = any(len(t) > 1 for by_x in cells.values() for x, t in by_x.items() if x is not None)
    highest = 0.0
    for gi, (group, by_x) in enumerate(cells.items()):
        style = sr.series_style(gi)
        if list(by_x) == [None]:  # no x field: a reference line
            times = [t for t in by_x[None] if sr.finite(t)]
            total += len(by_x[None])
            missed += len(by_x[None]) - len(times)
            label = f"{group} (no {args.x}): "
            if times:
                mean = sum(times) / len(times)
                highest = max(highest, mean)
                ax.axhline(mean, lw=1.2, **dict(style, linestyle="--"))
                label += f"mean of {len(times)}" if len(by_x[None]) > 1 else f"{mean:g} s"
                if len(times) < len(by_x[None]):
                    label += f", {len(by_x[None]) - len(times)} not reached"
            else:
                label += "never reached"
            ax.plot([], [], **dict(style, linestyle="--"), label=label)
            continue
        if None in by_x:
            sr.warn(f"{group}: {len(by_x[None])} run(s) without {args.x} left out")
        line_x, line_y, lo, hi, misses = [], [], [], [], []
        for x, times in sorted(((x, t) for x, t in by_x.items() if x is not None), key=lambda kv: pos(kv[0])):
            reached = [t for t in times if sr.finite(t)]
            total += len(times)
            missed += len(times) - len(reached)
            if reached:
                mean = sum(reached) / len(reached)
                line_x.append(pos(x))
                line_y.append(mean)
                lo.append(mean - min(reached))
                hi.append(max(reached) - mean)
                highest = max(highest, max(reached))
            if len(reached) < len(times):
                misses.append((pos(x), len(times) - len(reached), len(times)))
        seeds = max(len(t) for t in by_x.values())
        # With error bars, dodge the groups sideways by a few points so that the bars stay apart.
        shift = offset_copy(ax.transData, fig=fig, x=(gi - (len(cells) - 1) / 2) * 4 if seeds > 1 else 0,
                            units="points")
        ax.errorbar(line_x, line_y, yerr=[lo, hi] if seeds > 1 else None, marker="o", ms=5, capsize=3,
                    transform=shift, label=group if seeds == 1 else f"{group} (mean, min-max of {seeds} {unit})",
                    **style)
        if misses:  # one row of hollow markers per group, at the top of the panel
            y = 0.96 - 0.06 * rows
            rows += 1
            for px, m, n in misses:
                ax.plot([px], [y], "o", ms=8, mfc="none", mec=style["color"], mew=1.5, transform=top_row,
                        clip_on=False)
                if n > 1:
                    ax.annotate(f"{m}/{n}", (px, y), xycoords=top_row, xytext=(7, 0), textcoords="offset points",
                                ha="left", va="center", fontsize=7, color=style["color"])
    if missed:
        ax.plot([], [], "o", ms=8, mfc="none", mec="0.3", mew=1.5, ls="none",
                label=f"target not reached: {missed} of {total} runs" + (f" (k/n: k of n {unit})" if several else ""))
    if positions:
        pad = 0.06 * (positions[-1] - positions[0]) or 0.5
        ax.set_xlim(positions[0] - pad, positions[-1] + pad)
        if numeric and len(positions) <= 15:
            ax.set_xticks(positions, [f"{p:g}" for p in positions])
    if highest <= 0:  # nothing reached the target: the run length as the scale
        highest = max(sr.number(sweep.cell(r, "virtual_time_s")) or 0 for r in sweep.rows) or 1.0
    ax.set_ylim(0, highest / (0.92 - 0.06 * rows))  # the lines stay below the rows of hollow markers
    if not numeric:
        ax.set_xticks(range(len(categories)), categories)
    ax.set_xlabel(args.x + (f" ({UNITS[args.x]})" if args.x in UNITS else ""))
    target = ", ".join(f"{t:g}" for t in sorted(targets)) or "target"
    ax.set_ylabel(f"virtual time to test accuracy {target} (s)")
    scenario = {sr.dig(sweep.summary(r), "manifest.scenario.name") for r in sweep.rows} - {None}
    ax.set_title(f"Time to target: {scenario.pop() if len(scenario) == 1 else sweep.name}")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i].startswith("target not reached"))
    handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    if handles:
        fig.legend(handles, labels, title=args.group or None, loc="upper left", bbox_to_anchor=(1.0, 0.95))
    sr.save(fig, args, "time_to_target")


if __name__ == "__main__":
    main()
