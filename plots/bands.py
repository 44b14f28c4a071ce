#!/usr/bin/python3
"""Learning curves averaged over seeds, with bands, from `stalesim summarize SWEEP_DIR`.

Reads SWEEP_DIR/curves.csv (written by `stalesim summarize`): one line per group of points that
differ only in their seed (e.g. per policy), the mean over seeds of a metrics.csv column against
virtual time, and a band around it: mean +- one standard deviation (default), min..max
(--band minmax) or the 95% confidence interval of the mean (--band ci95, Student's t). Groups are labelled by their swept values. Only the times at which every seed
of a group has an evaluation are drawn (the seeds' last rows, at their own stop times, are
averages of fewer seeds); --all-times draws those too. Writes OUT/[PREFIX-]bands.png and .svg.

Example: /usr/bin/python3 plots/bands.py results/sweep-tiny-2x3 --metric test_loss --out results/figures
"""

import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402


def main():
    p = sr.parser(__doc__, inputs="SWEEP", nargs=None,
                  inputs_help="a sweep folder summarised by `stalesim summarize` (holding curves.csv), "
                              "or a curves.csv file")
    p.add_argument("--metric", default="test_loss", metavar="COLUMN",
                   help="the metrics.csv column drawn (default: test_loss; e.g. test_accuracy, loglik_per_token)")
    p.add_argument("--band", choices=sr.BANDS, default="std",
                   help="the band: mean +- one standard deviation (std, default), min..max over seeds "
                        "(minmax), or the 95%% confidence interval of the mean (ci95)")
    p.add_argument("--logy", action="store_true", help="logarithmic y axis")
    p.add_argument("--all-times", action="store_true",
                   help="also draw times at which only some seeds have an evaluation")
    args = p.parse_args()
    path = args.sweep if args.sweep.endswith(".csv") else os.path.join(args.sweep, "curves.csv")
    if not os.path.isfile(path):
        sr.fail(f"{path}: no such file; run `stalesim summarize {args.sweep}` first")
    rows = sr.read_csv(path)
    if not rows or "virtual_time_s" not in rows[0] or "seeds" not in rows[0]:
        sr.fail(f"{path}: not a curves.csv of `stalesim summarize` (no virtual_time_s and seeds columns)")
    header = list(rows[0])
    if f"{args.metric}_mean" not in header:
        metrics = [c[:-5] for c in header if c.endswith("_mean")]
        sr.fail(f"--metric {args.metric}: not in {path} (one of {', '.join(metrics)})")
    keys = header[:header.index("virtual_time_s")]

    groups = {}
    for r in rows:
        label = ", ".join(f"{k.split('.')[-1]}={r[k]}" for k in keys if r[k] != "") or "all points"
        groups.setdefault(label, []).append(r)

    sr.style()
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    drawn = 0
    for gi, (label, rs) in enumerate(groups.items()):
        pts = []
        full = max(int(r["seeds"]) for r in rs)
        for r in rs:
            if int(r["seeds"]) < full and not args.all_times:
                continue
            t, m = sr.number(r["virtual_time_s"]), sr.number(r[f"{args.metric}_mean"])
            if not (sr.finite(t) and sr.finite(m)):
                continue
            if args.band != "minmax":
                h = sr.band_half_width(args.band, int(r["seeds"]), sr.number(r[f"{args.metric}_std"]))
                lo, hi = (m - h, m + h) if h is not None else (m, m)
            else:
                lo, hi = sr.number(r[f"{args.metric}_min"]), sr.number(r[f"{args.metric}_max"])
            pts.append((t, m, lo, hi, r["seeds"]))
        if not pts:
            continue
        st = sr.series_style(gi)
        ax.plot([x[0] for x in pts], [x[1] for x in pts], label=f"{label} (n={full})", **st)
        ax.fill_between([x[0] for x in pts], [x[2] for x in pts], [x[3] for x in pts], color=st["color"],
                        alpha=0.2, linewidth=0)
        drawn += 1
    if not drawn:
        sr.fail(f"{path}: no finite {args.metric} to draw")
    if args.logy:
        ax.set_yscale("log")
    ax.set_xlabel("virtual time (s)")
    ax.set_ylabel(f"{args.metric}: mean over seeds, band {sr.BAND_TEXT[args.band]}")
    ax.set_title(f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}: {args.metric} averaged over seeds")
    ax.legend()
    sr.save(fig, args, "bands")


if __name__ == "__main__":
    main()
