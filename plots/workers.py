#!/usr/bin/python3
"""Where each worker's time went: compute, communicate and wait seconds, one panel per run.

From summary.json's workers[]: one horizontal stacked bar per worker (labelled "w3 gtx1080ti"),
its compute_s, communicate_s and wait_s, which add up to the run's virtual time; the wait
fraction is written at the end of each bar. Panels share the time axis when the runs have the
same virtual time. Writes OUT/[PREFIX-]workers.png and .svg.

Example: plots/workers.py results/bsp results/ssp results/dssp --out figures
"""

import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402

PARTS = (("compute_s", "compute", "C0"), ("communicate_s", "communicate", "C2"), ("wait_s", "wait", "C3"))
MAX_LABELLED = 40  # runs with more workers get a tick label on every n-th worker only


def draw(ax, run):
    """The stacked bars of one run on ax (worker 0 at the top)."""
    workers = run.workers
    ys = list(range(len(workers)))
    left = [0.0] * len(workers)
    for key, label, colour in PARTS:
        width = [sr.number(w.get(key)) or 0.0 for w in workers]
        ax.barh(ys, width, left=left, height=0.7, color=colour, label=label)
        left = [a + b for a, b in zip(left, width)]
    if len(workers) <= MAX_LABELLED:
        for y, end, w in zip(ys, left, workers):
            fraction = sr.number(w.get("wait_fraction"))
            if sr.finite(fraction):
                ax.text(end, y, f" {fraction:.0%} wait", va="center", fontsize=7, color="0.25")
    step = max(1, -(-len(workers) // MAX_LABELLED))
    ax.set_yticks(ys[::step], [sr.worker_label(w, i) for i, w in enumerate(workers)][::step])
    ax.set_ylim(len(workers) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    ax.set_title(run.label, loc="left")


def main():
    args = sr.parser(__doc__).parse_args()
    runs = sr.load_runs(args.run)
    sr.style()
    sizes = [max(1, min(len(r.workers), MAX_LABELLED)) for r in runs]
    times = {sr.number(r.get("virtual_time_s")) for r in runs}
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 1.0 + 0.3 * sum(sizes) + 0.45 * len(runs)),
                             sharex=len(times) == 1, squeeze=False, constrained_layout=True,
                             gridspec_kw={"height_ratios": [s + 1.5 for s in sizes]})
    for ax, run in zip(axes[:, 0], runs):
        if run.workers:
            draw(ax, run)
        else:
            sr.warn(f"{run.folder}: no workers in summary.json")
            ax.set_title(run.label, loc="left")
            sr.note(ax, "no workers in summary.json")
    ends = [ax.get_xlim()[1] for ax in axes[:, 0]]
    for ax, end in zip(axes[:, 0], ends):
        ax.set_xlim(0, max(ends) * 1.1 if len(times) == 1 else end * 1.1)  # room for "37% wait"
        ax.set_xlabel("virtual time (s)")
        if len(times) == 1 and ax is not axes[-1, 0]:
            ax.set_xlabel("")
    fig.suptitle(sr.common_title(runs, "Worker time"))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    sr.legend_below(fig, handles, labels)
    sr.save(fig, args, "workers")


if __name__ == "__main__":
    main()
