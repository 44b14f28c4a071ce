#!/usr/bin/python3
"""Traffic against result: total bytes moved (push + pull, GB) against final test loss or accuracy.

One point per run from summary.json (bytes.push + bytes.pull, in GB = 1e9 bytes; final.test_loss,
or final.test_accuracy with --metric accuracy), annotated with the run's label. Runs without the
metric (time-only models) are left out with a warning. Writes OUT/[PREFIX-]bandwidth.png and .svg.

Example: plots/bandwidth.py results/bsp results/asp results/essp --metric accuracy --out figures
"""

import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402

METRICS = {"loss": ("final.test_loss", "final test loss"), "accuracy": ("final.test_accuracy", "final test accuracy")}


# Where a label may go, relative to its point (offset in points, horizontal alignment).
PLACES = (((6, 3), "left", "bottom"), ((6, -3), "left", "top"), ((-6, 3), "right", "bottom"),
          ((-6, -3), "right", "top"), ((0, 8), "center", "bottom"), ((0, -8), "center", "top"))


def annotate(fig, ax, points):
    """Label each (x, y, text) point at the first place in PLACES where the label overlaps no
    label placed before it (else where it overlaps least)."""
    fig.canvas.draw()  # lays out the figure, so that text extents are known
    renderer = fig.canvas.get_renderer()
    placed = []
    for x, y, text in points:
        best = None
        for offset, ha, va in PLACES:
            t = ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", ha=ha, va=va, fontsize=8)
            box = t.get_window_extent(renderer).expanded(1.05, 1.15)
            overlap = sum(max(0, min(box.x1, b.x1) - max(box.x0, b.x0)) * max(0, min(box.y1, b.y1) - max(box.y0, b.y0))
                          for b in placed)
            if best is None or overlap < best[0]:
                if best is not None:
                    best[1].remove()
                best = (overlap, t, box)
            else:
                t.remove()
            if overlap == 0:
                break
        placed.append(best[2])


def main():
    p = sr.parser(__doc__)
    p.add_argument("--metric", choices=sorted(METRICS), default="loss", help="y axis (default: loss)")
    args = p.parse_args()
    runs = sr.load_runs(args.run)
    key, ylabel = METRICS[args.metric]
    sr.style()
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    values = {}
    for run in runs:
        push, pull, y = (sr.number(run.get(k)) for k in ("bytes.push", "bytes.pull", key))
        if sr.finite(push) and sr.finite(pull) and sr.finite(y):
            values[run] = ((push + pull) / 1e9, y)
        else:
            sr.warn(f"{run.folder}: no bytes or {key} in summary.json; left out")
    runs = sr.label_runs([r for r in runs if r in values])  # labels from the runs drawn only
    points = []
    for i, run in enumerate(runs):
        x, y = values[run]
        ax.plot([x], [y], "o", ms=7, color=sr.series_style(i)["color"])
        points.append((x, y, run.label))
    if not points:
        sr.note(ax, f"no run has bytes and {ylabel}")
    ax.margins(x=0.2, y=0.15)  # room for the annotations
    ax.set_xlabel("bytes moved, push + pull (GB)")
    ax.set_ylabel(ylabel)
    fig.suptitle(sr.common_title(runs, "Traffic and result"))
    annotate(fig, ax, points)
    sr.save(fig, args, "bandwidth")


if __name__ == "__main__":
    main()
