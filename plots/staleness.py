#!/usr/bin/python3
"""Staleness histograms of runs: the staleness and the missed updates, side by side.

From each run's staleness.csv: left, the fraction of gradients by staleness in clocks (the
worker's clock minus the server clock when it read: what SSP bounds; the column staleness_gradients);
right, by missed updates (server version at apply minus the version read, tau; the column
missed_updates_gradients). The names are REFERENCE.md's ("What is simulated"). One step line per run, normalised to
fractions, the means in the legend. An axis whose staleness goes beyond 20 (ASP's clocks) is
logarithmic above 20, with bins 21-50, 51-100, 101-200, ... there. The fraction axis is logarithmic with --log (shows the tails);
--max-staleness N cuts the x axis at N. Writes OUT/[PREFIX-]staleness.png and .svg.

Example: plots/staleness.py results/ssp results/dssp --log --out figures
"""

import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import numpy  # noqa: E402
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FormatStrFormatter  # noqa: E402

LINEAR_UP_TO = 20  # x axes with a larger staleness are logarithmic above this
SYMLOG_TICKS = [0, 5, 10, 15, 20] + [m * 10 ** e for e in range(1, 7) for m in (5, 10, 20)]

KINDS = (("staleness_gradients", "staleness", "staleness (clocks)"),
         ("missed_updates_gradients", "missed_updates", "missed updates (server updates)"))


def histogram(run, column):
    """(staleness values, fractions of gradients) of one column of staleness.csv, without the
    trailing zero rows (the file has a row per value up to the larger of its two maxima)."""
    cols = sr.columns(run.table("staleness.csv"), "value", column)
    pairs = [(s, n) for s, n in zip(cols["value"], cols[column]) if sr.finite(s) and sr.finite(n)]
    total = sum(n for _, n in pairs)
    while pairs and pairs[-1][1] == 0:
        pairs.pop()
    return [s for s, _ in pairs], [n / total for _, n in pairs]


def bin_edges(widest):
    """One bin per value up to LINEAR_UP_TO, then wider bins ending at the SYMLOG_TICKS."""
    edges = [k - 0.5 for k in range(int(min(widest, LINEAR_UP_TO)) + 2)]
    if widest > LINEAR_UP_TO:
        edges += [t + 0.5 for t in SYMLOG_TICKS if LINEAR_UP_TO < t < widest] + [widest + 0.5]
    return edges


def main():
    p = sr.parser(__doc__)
    p.add_argument("--log", action="store_true", help="logarithmic fraction axis")
    p.add_argument("--max-staleness", type=float, metavar="N", help="cut the x axes at N")
    args = p.parse_args()
    runs = sr.load_runs(args.run)
    sr.style()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    handles = {}
    for ax, (column, _, xlabel) in zip(axes, KINDS):
        hists = {i: histogram(run, column) for i, run in enumerate(runs)}
        widest = max([xs[-1] for xs, _ in hists.values() if xs] + [0])
        if args.max_staleness is not None:
            widest = min(widest, args.max_staleness)
        edges = bin_edges(widest)
        for i, (xs, fr) in hists.items():
            if not xs:
                sr.warn(f"{runs[i].folder}: no {column} in staleness.csv")
                continue
            per_bin, _ = numpy.histogram(xs, bins=edges, weights=fr)
            last = max(k for k, f in enumerate(per_bin) if f > 0 or k == 0) + 1
            handles[i] = ax.stairs(per_bin[:last], edges[:last + 1], lw=1.5, **sr.series_style(i))
        if widest > LINEAR_UP_TO:
            # A long tail (ASP's staleness reaches hundreds): linear up to LINEAR_UP_TO,
            # logarithmic beyond, with wider bins, so the small values stay readable.
            ax.set_xscale("symlog", linthresh=LINEAR_UP_TO, linscale=2)
            ax.xaxis.set_major_locator(FixedLocator([t for t in SYMLOG_TICKS if t <= widest]))
            ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
            xlabel += f"; above {LINEAR_UP_TO}: log scale, bins {LINEAR_UP_TO + 1}-50, 51-100, ..."
        margin = 0.03 * (min(widest, LINEAR_UP_TO) + 1)  # keep the outer bin edges off the spines
        ax.set_xlim(-0.5 - margin, widest + 0.5 + margin if widest <= LINEAR_UP_TO else (widest + 0.5) * 1.1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of gradients (per bin)")
        if args.log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        if not ax.patches:
            sr.note(ax, "no gradients")
    labels = []
    for i in handles:
        means = [sr.number(runs[i].get(key + ".mean")) for _, key, _ in KINDS]
        labels.append(runs[i].label + (" (mean staleness {:.2f}, missed updates {:.2f})".format(*means)
                                       if all(sr.finite(m) for m in means) else ""))
    sr.legend_below(fig, list(handles.values()), labels, ncol=2)
    fig.suptitle(sr.common_title(runs, "Staleness of applied gradients"))
    sr.save(fig, args, "staleness")


if __name__ == "__main__":
    main()
