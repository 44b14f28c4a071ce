#!/usr/bin/python3
"""Staleness over time: the staleness, and the missed updates where recorded, against virtual time.

Top: from each run's metrics.csv, the mean staleness (the reader's clock minus the slowest
worker's clock when it read: what SSP bounds; the column mean_staleness) of the gradients applied
since the previous evaluation. Bottom, for runs recorded with `--record gradients`: the mean
missed updates (server updates applied between a gradient's read and its application, tau; the
gradients.csv column missed_updates) over the same intervals. A policy that bounds the staleness
shows a flat line at or under its bound; ASP's staleness grows while its missed updates stay near workers - 1 (README,
"What is simulated"). Writes OUT/[PREFIX-]staleness_time.png and .svg, and
OUT/[PREFIX-]staleness_time.csv with the numbers drawn.

Example: stalesim run scenarios/tutorial/02-asp-staleness.json --record gradients --out results/asp
         plots/staleness_time.py results/asp
"""

import bisect
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402


def missed_updates_by_interval(run, times):
    """[mean missed updates of the gradients applied in (times[i-1], times[i]]] from gradients.csv; None where
    an interval has none, and None for the whole run when it was not recorded."""
    rows = run.table("gradients.csv")
    if not rows:
        return None
    sums, counts = [0.0] * len(times), [0] * len(times)
    for r in rows:
        t, missed = sr.number(r.get("virtual_time_s")), sr.number(r.get("missed_updates"))
        if t is None or missed is None:
            continue
        i = bisect.bisect_left(times, t)
        if i < len(times):
            sums[i] += missed
            counts[i] += 1
    return [s / c if c else None for s, c in zip(sums, counts)]


def main():
    args = sr.parser(__doc__).parse_args()
    runs = sr.load_runs(args.run)
    sr.style()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, constrained_layout=True)
    data, any_missed = [], False
    for i, run in enumerate(runs):
        m = run.metrics()
        times = [t for t in m["virtual_time_s"] if t is not None]
        gap = m["mean_staleness"][:len(times)]
        style = sr.series_style(i)
        points = [(t, g) for t, g in zip(times, gap) if sr.finite(g)]
        top.plot([t for t, _ in points], [g for _, g in points], label=run.label, **style)
        missed = missed_updates_by_interval(run, times)
        if missed is not None:
            any_missed = True
            pts = [(t, x) for t, x in zip(times, missed) if x is not None]
            bottom.plot([t for t, _ in pts], [x for _, x in pts], label=run.label, **style)
        for k, t in enumerate(times):
            g = gap[k] if k < len(gap) else None
            x = missed[k] if missed is not None else None
            data.append([run.label, f"{t:g}", "" if g is None else f"{g:g}", "" if x is None else f"{x:g}"])
    top.set_ylabel("staleness (clocks)\nmean per evaluation interval")
    bottom.set_ylabel("missed updates\nmean per evaluation interval")
    bottom.set_xlabel("virtual time (s)")
    if not any_missed:
        sr.note(bottom, "missed updates over time need gradients.csv: run with --record gradients")
    top.set_title(sr.common_title(runs, "Staleness over time"))
    handles, labels = top.get_legend_handles_labels()
    sr.legend_below(fig, handles, labels)
    sr.save(fig, args, "staleness_time")
    sr.save_data(args, "staleness_time", ["run", "virtual_time_s", "staleness_mean", "missed_updates_mean"],
                 data)


if __name__ == "__main__":
    main()
