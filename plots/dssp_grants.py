#!/usr/bin/python3
"""DSSP's synchronization controller: the extra clocks it granted, over time and in total.

One row per DSSP run: left, every decision of decisions.csv (virtual time against the granted
r*, coloured by worker, with r_max dotted); right, summary.json's grants histogram (decisions
per r*, 0..r_max) and the mean effective threshold (the largest clock gap each decision allowed,
gap - 1 + r*). Runs of other policies are left out with a warning; exits 2 when none is DSSP.
Writes OUT/[PREFIX-]dssp_grants.png and .svg.

Example: plots/dssp_grants.py results/dssp --out figures
"""

import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def scatter(ax, run):
    """Decisions over time, one colour per worker, on ax."""
    rows = run.table("decisions.csv")
    d = sr.columns(rows, "virtual_time_s", "worker", "granted")
    names = {int(w.get("id", i)): sr.worker_label(w, i) for i, w in enumerate(run.workers)}
    by_worker = {}
    for t, w, g in zip(d["virtual_time_s"], d["worker"], d["granted"]):
        if sr.finite(t) and sr.finite(w) and sr.finite(g):
            by_worker.setdefault(int(w), ([], []))
            by_worker[int(w)][0].append(t)
            by_worker[int(w)][1].append(g)
    for w in sorted(by_worker):
        ts, gs = by_worker[w]
        ax.plot(ts, gs, "o", ms=3.5, alpha=0.6, mec="none", color=f"C{w % 10}",
                label=f"{names.get(w, f'w{w}')} ({len(ts)})")
    r_max = sr.number(run.get("policy.r_max"))
    if sr.finite(r_max):
        ax.axhline(r_max, ls=":", color="0.3", lw=1, label=f"r_max = {r_max:g}")
    if not by_worker:
        sr.note(ax, "no decisions in decisions.csv")
    ax.set_xlabel("virtual time (s)")
    ax.set_ylabel("granted extra clocks r*")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{run.label}: decisions", loc="left")
    ax.legend(title="worker (decisions)", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def histogram(ax, run):
    """summary.json's grants histogram on ax."""
    counts = [sr.number(c) or 0 for c in run.get("policy.grants_histogram") or []]
    bars = ax.bar(range(len(counts)), counts, width=0.8, color="C0")
    ax.bar_label(bars, [f"{c:g}" if c else "" for c in counts], fontsize=7, padding=1)
    ax.margins(y=0.12)  # room for the counts
    ax.set_xlabel("granted extra clocks r*")
    ax.set_ylabel("decisions")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if not any(counts):
        sr.note(ax, "no decisions")
    threshold = sr.number(run.get("policy.mean_effective_threshold"))
    title = "grants histogram"
    if sr.finite(threshold):
        title += f"\nmean effective threshold (gap - 1 + r*) = {threshold:.2f}"
    ax.set_title(title, loc="left")


def main():
    args = sr.parser(__doc__).parse_args()
    runs = sr.load_runs(args.run)
    dssp = [r for r in runs if (r.scenario.get("policy") or {}).get("type") == "dssp"]
    for r in runs:
        if r not in dssp:
            sr.warn(f"{r.folder}: not a DSSP run (policy {r.policy}); left out")
    if not dssp:
        sr.fail("no DSSP run among the folders given")
    runs = sr.label_runs(dssp)
    sr.style()
    fig, axes = plt.subplots(len(runs), 2, figsize=(11, 3.4 * len(runs)), squeeze=False,
                             constrained_layout=True, gridspec_kw={"width_ratios": [2.2, 1]})
    for (left, right), run in zip(axes, runs):
        scatter(left, run)
        histogram(right, run)
    fig.suptitle(sr.common_title(runs, "DSSP grants"))
    sr.save(fig, args, "dssp_grants")


if __name__ == "__main__":
    main()
