#!/usr/bin/python3
"""Cost against scale, from the growth CSV of tools/bench (stalesim_bench_runs --csv FILE).

Usage: plots/bench_scale.py GROWTH_CSV OUT_DIR

Draws two log-log panels and writes OUT_DIR/bench_scale.png and OUT_DIR/bench_scale.svg:
  left:  time against server updates (time-only ASP, fixed workers), with the linear reference
         through the middle point (slope 1 on log-log axes);
  right: time per event against workers (fixed updates), with the flat reference through the
         1,000-worker point.
Times are the simulation thread's CPU time, best of the repetitions (the figure the benchmark
judges); the best wall times are drawn as open circles beside them.
Runs with Debian's /usr/bin/python3 and python3-matplotlib; needs nothing else.
"""

import csv
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401  (a clear message when matplotlib is missing)
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"series", "workers", "updates", "events", "cpu_s", "wall_s", "ns_per_event", "reps"}
    if not rows or not need <= set(rows[0]):
        sys.exit(f"{path}: expected a growth CSV with columns {sorted(need)}")
    return rows


def count_label(v, _pos=None):
    """1000 -> '1k', 1000000 -> '1M': readable tick labels for counts."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, out_dir = sys.argv[1], sys.argv[2]
    rows = read_rows(path)
    by_updates = sorted((r for r in rows if r["series"] == "updates"), key=lambda r: int(r["updates"]))
    by_workers = sorted((r for r in rows if r["series"] == "workers"), key=lambda r: int(r["workers"]))
    if not by_updates or not by_workers:
        sys.exit(f"{path}: needs rows of both series, 'updates' and 'workers'")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)

    # Left: wall time against updates, with the linear reference.
    u = [int(r["updates"]) for r in by_updates]
    t = [float(r["cpu_s"]) for r in by_updates]
    t_wall = [float(r["wall_s"]) for r in by_updates]
    mid = len(u) // 2
    left.plot(u, [t[mid] * x / u[mid] for x in u], "-", color="0.8", lw=6, label="linear (slope 1)")
    left.plot(u, t, "o-", color="C0", label="CPU time (best of reps)")
    left.plot(u, t_wall, "o", mfc="none", color="C0", alpha=0.6, label="wall time (best of reps)")
    for x, y in zip(u, t):
        left.annotate(f"{y * 1e9 / x:.0f} ns/update", (x, y),
                      textcoords="offset points", xytext=(8, -4), fontsize=8, va="top")
    left.set_xscale("log")
    left.set_yscale("log")
    left.xaxis.set_major_formatter(FuncFormatter(count_label))
    left.set_xlabel("server updates")
    left.set_ylabel("time (s)")
    left.set_xlim(u[0] / 2, u[-1] * 3)
    left.set_title(f"Time, time-only ASP, {int(by_updates[0]['workers']):,} workers")
    left.grid(True, which="both", alpha=0.3)
    left.legend(loc="upper left")

    # Right: time per event against workers, with the flat reference.
    w = [int(r["workers"]) for r in by_workers]
    e = [float(r["ns_per_event"]) for r in by_workers]
    e_wall = [float(r["wall_s"]) * 1e9 / int(r["events"]) for r in by_workers]
    ref = next((v for x, v in zip(w, e) if x == 1000), e[0])
    right.plot(w, [ref] * len(w), "-", color="0.8", lw=6, label="flat (at 1k workers)")
    right.plot(w, e, "o-", color="C1", label="CPU time (best of reps)")
    right.plot(w, e_wall, "o", mfc="none", color="C1", alpha=0.6, label="wall time (best of reps)")
    for x, y in zip(w, e):
        right.annotate(f"{y:.0f} ns", (x, y), textcoords="offset points", xytext=(-8, 8), fontsize=8, ha="right")
    right.set_xscale("log")
    right.set_yscale("log")
    right.xaxis.set_major_formatter(FuncFormatter(count_label))
    right.set_xlabel("workers")
    right.set_ylabel("time per event (ns)")
    right.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    right.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    right.tick_params(axis="y", which="minor", labelsize=7)
    lo, hi = min(e + e_wall + [ref]), max(e + e_wall + [ref])
    right.set_ylim(lo / 1.5, hi * 1.5)
    right.set_xlim(w[0] / 2, w[-1] * 2)
    right.set_title(f"Per-event cost, time-only ASP, {int(by_workers[0]['updates']):,} updates")
    right.grid(True, which="both", alpha=0.3)
    right.legend(loc="upper left")

    fig.suptitle("stalesim: cost against scale (tools/bench)")
    os.makedirs(out_dir, exist_ok=True)
    for ext in ("png", "svg"):
        target = os.path.join(out_dir, f"bench_scale.{ext}")
        fig.savefig(target, dpi=130)
        print(f"bench_scale.py: wrote {target}")


if __name__ == "__main__":
    main()
