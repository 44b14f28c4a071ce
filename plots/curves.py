#!/usr/bin/python3
"""Learning curves of runs: test accuracy and test loss against virtual time and server updates.

A 2x2 figure from each run's metrics.csv: rows test accuracy and test loss, columns virtual time
(s) and server updates; one line per run, labelled by policy (e.g. "dssp(s=3,r=12)"), and a
dashed line at stop.target_accuracy where the scenario sets one. The loss axis is logarithmic
unless --linear-loss. Writes OUT/[PREFIX-]curves.png and .svg.

Example: plots/curves.py results/bsp results/ssp results/dssp --out figures
"""

import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter  # noqa: E402

X_AXES = (("virtual_time_s", "virtual time (s)"), ("server_version", "server updates"))
Y_AXES = (("test_accuracy", "test accuracy"), ("test_loss", "test loss"))


def log_axis(ax):
    """A logarithmic y axis with plain tick labels (0.5, 1, 2), several per decade when the
    data span less than two decades."""
    low, high = ax.dataLim.y0, ax.dataLim.y1
    ax.set_yscale("log")
    if low > 0 and high / low < 100:
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 1.5, 2, 3, 4, 5, 6, 8)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def main():
    p = sr.parser(__doc__)
    p.add_argument("--linear-loss", action="store_true", help="linear instead of logarithmic loss axis")
    args = p.parse_args()
    runs = sr.load_runs(args.run)
    sr.style()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharex="col", constrained_layout=True)
    handles, labels = [], []
    for i, run in enumerate(runs):
        m = run.metrics()
        handle = None
        for (yk, _), row in zip(Y_AXES, axes):
            for (xk, _), ax in zip(X_AXES, row):
                pts = [(x, y) for x, y in zip(m[xk], m[yk]) if sr.finite(x) and sr.finite(y)]
                if pts:
                    handle, = ax.plot(*zip(*pts), lw=1.4, **sr.series_style(i))
        if handle is not None:
            handles.append(handle)
            labels.append(run.label)
        else:
            sr.warn(f"{run.folder}: no test accuracy or loss in metrics.csv (a time-only model?)")
    # One dashed line per target; with several, each in the colour of the first run that has it.
    targets = {}
    for i, run in enumerate(runs):
        if run.target_accuracy is not None:
            targets.setdefault(run.target_accuracy, sr.series_style(i)["color"])
    for target, colour in sorted(targets.items()):
        for ax in axes[0]:
            line = ax.axhline(target, ls="--", lw=1, color=colour if len(targets) > 1 else "0.35")
        handles.append(line)
        labels.append(f"target accuracy {target:g}")
    for (yk, ylabel), row in zip(Y_AXES, axes):
        for (xk, xlabel), ax in zip(X_AXES, row):
            if not ax.lines:
                sr.note(ax, "no test metrics\n(time-only model?)")
            if ax in axes[1]:
                ax.set_xlabel(xlabel)
            if ax is row[0]:
                ax.set_ylabel(ylabel)
            if yk == "test_loss" and not args.linear_loss and ax.lines:
                log_axis(ax)
    fig.suptitle(sr.common_title(runs, "Learning curves"))
    sr.legend_below(fig, handles, labels)
    sr.save(fig, args, "curves")


if __name__ == "__main__":
    main()
