#!/usr/bin/python3
"""Time to target accuracy against a swept parameter (the staleness threshold by default).

Reads a sweep folder (or its sweep.csv, as written by `stalesim sweep`): one line per value of
--group (default policy.type), through the mean over seeds of the virtual time at which the
point first reached stop.target_accuracy, with bars when there are several seeds (--band: min-max,
mean +- 1 sd, or the 95% confidence interval of the mean).

A missed target is never hidden. By default (--misses censor) a seed that missed counts at its
run's end, so the mean is over all seeds and is a lower bound where any missed: such points are
drawn as triangles (^, "at least") and labelled "k/n reached". With --misses drop the mean is over
the seeds that reached the target, still labelled "k/n reached". Points where no seed reached it
are hollow markers at the top of the panel. A group without the x field (bsp and asp have no
policy.staleness) is a horizontal dashed line at its mean time. The x axis is logarithmic when
the x values form a geometric grid (--logx auto; on, off). The title names the runs' resolved
scenario and the fields every point shares that differ from it in the sweep (e.g. --set values).
Besides the figure, OUT/[PREFIX-]time_to_target.csv lists what is drawn: per group and x the
runs, how many reached the target, the mean and the band.
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
    """{group: {x: [(time or None, run end or None) per run]}} of the points that hold results, in
    sweep order. Points that share a run folder (asp at every staleness) count once."""
    cells, skipped = {}, 0
    for i, row in enumerate(sweep.rows):
        if not sweep.ok(row):
            skipped += 1
            continue
        # comma-separated columns: one line per combination, named by the values a point has
        group = " ".join(str(v) for v in (sweep.cell(row, c) for c in group_col.split(",")) if v not in (None, "")) \
            if group_col else "all"
        x = sweep.cell(row, x_col)  # a CSV string or a JSON value from the run folder: one kind of key
        x = x if x is None else sr.number(x) if sr.number(x) is not None else str(x)
        runs = cells.setdefault(group, {}).setdefault(x, {})
        runs[row.get("folder") or i] = (sr.number(sweep.cell(row, "time_to_target_s")),
                                        sr.number(sweep.cell(row, "virtual_time_s")))
    if skipped:
        sr.warn(f"{skipped} point(s) of {len(sweep.rows)} without results (status not completed/diverged) left out")
    return {g: {x: list(runs.values()) for x, runs in by_x.items()} for g, by_x in cells.items()}


def x_text(x):
    """An x value as the sidecar CSV writes it: 4 for 4.0, text as it is."""
    return f"{x:g}" if isinstance(x, float) else str(x)


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
                   help="one line per value of this column (comma-separated columns: per combination, e.g. "
                        "policy.type,policy.dssp_grant); '' for one line (default: policy.type)")
    p.add_argument("--band", choices=sr.BANDS, default="minmax",
                   help="the bars over seeds: min-max (minmax, default), mean +- 1 sd (std), or the 95%% "
                        "confidence interval of the mean (ci95)")
    p.add_argument("--misses", choices=("censor", "drop"), default="censor",
                   help="a seed that missed the target: counted at its run's end, the mean a lower bound "
                        "(censor, default), or left out of the mean (drop); either way labelled k/n reached")
    p.add_argument("--logx", choices=("auto", "on", "off"), default="auto",
                   help="logarithmic x axis: when the x values form a geometric grid (auto), always, never")
    args = p.parse_args()
    sweep = sr.Sweep(args.sweep)
    cells = collect(sweep, args.x, args.group)
    if not cells:
        sr.fail(f"{args.sweep}: no point holds results")
    if all(x is None for g in cells.values() for x in g):
        sr.fail(f"{args.sweep}: no point has '{args.x}' (columns: {', '.join(sweep.columns)})")
    others = [c for c in key_columns(sweep) if c != args.x and c not in args.group.split(",")]
    if others:
        sr.warn(f"points that differ only in {', '.join(others)} (and seed) are pooled")
    unit = "runs" if others else "seeds"  # what the runs at one x differ in
    targets = {sr.number(sr.dig(sweep.summary(r), "manifest.scenario.stop.target_accuracy")) for r in sweep.rows}
    targets.discard(None)
    if not targets and all(t is None for g in cells.values() for ts in g.values() for t, _ in ts):
        sr.fail(f"{args.sweep}: the scenario sets no stop.target_accuracy, so no point has a time to target")

    # x positions: the numbers themselves, or evenly spaced categories in order of appearance.
    xs = [x for g in cells.values() for x in g if x is not None]
    numeric = all(sr.number(x) is not None for x in xs)
    categories = list(dict.fromkeys(str(x) for x in xs))
    pos = (lambda x: x) if numeric else (lambda x: categories.index(str(x)))
    logx = numeric and (args.logx == "on" or (args.logx == "auto" and sr.geometric(xs)))
    if logx and any(x <= 0 for x in xs):
        sr.fail(f"--logx on: {args.x} has values <= 0")

    def mean_and_band(times):
        """(mean, low, high, reached, lower bound?) of one point's runs, None when nothing to draw."""
        reached = [t for t, _ in times if sr.finite(t)]
        if args.misses == "censor" and reached:
            values = [t if sr.finite(t) else end for t, end in times]
            if all(sr.finite(v) for v in values):
                return (*sr.spread(values, args.band), len(reached), len(reached) < len(times))
        if not reached:
            return None
        return (*sr.spread(reached, args.band), len(reached), False)

    sr.style()
    fig, ax = plt.subplots(figsize=(8, 5), constrained_layout=True)
    top_row = ax.get_xaxis_transform()  # x in data, y in axes fraction: the "never reached" rows
    positions = sorted({pos(x) for by_x in cells.values() for x in by_x if x is not None})
    missed = total = rows = 0
    censored_any = partial_any = False
    highest = 0.0
    data = []  # the sidecar CSV: what is drawn
    for gi, (group, by_x) in enumerate(cells.items()):
        style = sr.series_style(gi)
        if list(by_x) == [None]:  # no x field: a reference line
            times = by_x[None]
            total += len(times)
            drawn = mean_and_band(times)
            n_reached = sum(1 for t, _ in times if sr.finite(t))
            missed += len(times) - n_reached
            label = f"{group} (no {args.x}): "
            if drawn:
                mean = drawn[0]
                highest = max(highest, mean)
                ax.axhline(mean, lw=1.2, **dict(style, linestyle="--"))
                label += f"mean of {len(times)}" if len(times) > 1 else f"{mean:g} s"
                data.append([group, "", len(times), n_reached, f"{mean:g}", f"{drawn[1]:g}", f"{drawn[2]:g}",
                             int(drawn[4])])
            else:
                data.append([group, "", len(times), 0, "", "", "", 0])
            if n_reached < len(times):
                label += f", {n_reached}/{len(times)} reached" + (" (mean a lower bound)" if drawn and drawn[4] else "")
            if not n_reached:
                label = f"{group} (no {args.x}): never reached"
            ax.plot([], [], **dict(style, linestyle="--"), label=label)
            continue
        if None in by_x:
            sr.warn(f"{group}: {len(by_x[None])} run(s) without {args.x} left out")
        line_x, line_y, lo, hi, bound_x, bound_y, misses = [], [], [], [], [], [], []
        for x, times in sorted(((x, t) for x, t in by_x.items() if x is not None), key=lambda kv: pos(kv[0])):
            drawn = mean_and_band(times)
            n_reached = sum(1 for t, _ in times if sr.finite(t))
            total += len(times)
            missed += len(times) - n_reached
            if drawn:
                mean, low, high, _, bound = drawn
                line_x.append(pos(x))
                line_y.append(mean)
                lo.append(mean - low)
                hi.append(high - mean)
                highest = max(highest, high)
                if bound:
                    bound_x.append(pos(x))
                    bound_y.append(mean)
                    censored_any = True
                if n_reached < len(times):
                    partial_any = True
                    ax.annotate(f"{n_reached}/{len(times)} reached", (pos(x), mean), xytext=(6, 6),
                                textcoords="offset points", fontsize=7, color=style["color"])
                data.append([group, x_text(x), len(times), n_reached, f"{mean:g}", f"{low:g}", f"{high:g}",
                             int(bound)])
            else:
                misses.append((pos(x), len(times)))
                data.append([group, x_text(x), len(times), 0, "", "", "", 0])
        seeds = max(len(t) for t in by_x.values())
        # With error bars, dodge the groups sideways by a few points so that the bars stay apart.
        shift = offset_copy(ax.transData, fig=fig, x=(gi - (len(cells) - 1) / 2) * 4 if seeds > 1 else 0,
                            units="points")
        what = "mean" if args.misses == "censor" else "mean of those that reached it"
        ax.errorbar(line_x, line_y, yerr=[lo, hi] if seeds > 1 else None, marker="o", ms=5, capsize=3,
                    transform=shift,
                    label=group if seeds == 1 else f"{group} ({what}, {sr.BAND_TEXT[args.band]} of {seeds} {unit})",
                    **style)
        if bound_x:  # a mean with misses counted at the run's end: at least this long
            ax.plot(bound_x, bound_y, "^", ms=9, mfc="white", mec=style["color"], mew=1.5, ls="none",
                    transform=shift)
        if misses:  # one row of hollow markers per group, at the top of the panel
            y = 0.96 - 0.06 * rows
            rows += 1
            for px, n in misses:
                ax.plot([px], [y], "o", ms=8, mfc="none", mec=style["color"], mew=1.5, transform=top_row,
                        clip_on=False)
                ax.annotate(f"0/{n} reached" if n > 1 else "not reached", (px, y), xycoords=top_row, xytext=(7, 0),
                            textcoords="offset points", ha="left", va="center", fontsize=7, color=style["color"])
    if censored_any:
        ax.plot([], [], "^", ms=9, mfc="white", mec="0.3", mew=1.5, ls="none",
                label="some seeds missed: each counted at its run's end (the mean is a lower bound)")
    elif partial_any:
        ax.plot([], [], " ", label="k/n reached: the mean is over the k seeds that reached the target")
    if missed:
        ax.plot([], [], "o", ms=8, mfc="none", mec="0.3", mew=1.5, ls="none",
                label=f"target not reached: {missed} of {total} runs")
    if positions:
        if logx:
            ax.set_xscale("log")
            ax.set_xlim(positions[0] / 1.3, positions[-1] * 1.3)
            ax.minorticks_off()
        else:
            pad = 0.06 * (positions[-1] - positions[0]) or 0.5
            ax.set_xlim(positions[0] - pad, positions[-1] + pad)
        if numeric and len(positions) <= 15:
            ax.set_xticks(positions, [f"{p:g}" for p in positions])
    if highest <= 0:  # nothing reached the target: the run length as the scale
        highest = max(sr.number(sweep.cell(r, "virtual_time_s")) or 0 for r in sweep.rows) or 1.0
    ax.set_ylim(0, highest / (0.92 - 0.06 * rows))  # the lines stay below the rows of hollow markers
    if not numeric:
        ax.set_xticks(range(len(categories)), categories)
    ax.set_xlabel(args.x + (f" ({UNITS[args.x]})" if args.x in UNITS else "") + (", log scale" if logx else ""))
    target = ", ".join(f"{t:g}" for t in sorted(targets)) or "target"
    ax.set_ylabel(f"virtual time to test accuracy {target} (s)")
    ax.set_title(f"Time to target: {sweep.title(exclude=(args.x, args.group))}")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i].startswith(("target not reached", "some seeds", "k/n")))
    handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    if handles:
        fig.legend(handles, labels, title=args.group or None, loc="upper left", bbox_to_anchor=(1.0, 0.95))
    sr.save(fig, args, "time_to_target")
    sr.save_data(args, "time_to_target", [args.group or "group", args.x, "runs", "reached", "mean_s", "low_s",
                                          "high_s", "lower_bound"], data)


if __name__ == "__main__":
    main()
