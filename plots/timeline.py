#!/usr/bin/python3
"""A Gantt chart of a run from its trace.json (stalesim run --trace): one row per worker.

Each worker's compute, push, pull and wait spans are drawn as bars along virtual time, and a red
mark shows where the policy blocked the worker (the trace's "blocked" events; their reason is in
the event's args.why). The same picture as `stalesim timeline`, from the file Perfetto opens.
--from and --to cut the span shown (seconds; default: the whole trace). Writes
OUT/[PREFIX-]timeline.png and .svg.

Example: stalesim run scenarios/tutorial/01-bsp-straggler.json --trace --trace-window 0:0.05
         plots/timeline.py results/tutorial-01-bsp-straggler --out figures
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402

# name in the trace -> (label, colour), in legend order
KINDS = {"compute": ("compute", "C0"), "push": ("push", "C2"), "pull": ("pull", "C8"), "wait": ("wait", "C3")}
WORKERS_PID = 1


def load(path):
    """(title, {tid: worker name}, {tid: {kind: [(start_s, dur_s)]}}, {tid: [blocked_s]})."""
    if os.path.isdir(path):
        path = os.path.join(path, "trace.json")
    if not os.path.isfile(path):
        sr.fail(f"{path}: no trace.json (run with stalesim run --trace)")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sr.fail(f"{path}: not a trace: {e}")
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        sr.fail(f"{path}: no traceEvents array")
    names, spans, blocks = {}, {}, {}
    for e in events:
        if not isinstance(e, dict) or e.get("pid") != WORKERS_PID:
            continue
        tid = e.get("tid")
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[tid] = e.get("args", {}).get("name", f"worker {tid}")
        elif e.get("ph") == "X" and e.get("name") in KINDS:
            spans.setdefault(tid, {}).setdefault(e["name"], []).append((e["ts"] / 1e6, e["dur"] / 1e6))
        elif e.get("ph") == "i" and e.get("name") == "blocked":
            blocks.setdefault(tid, []).append(e["ts"] / 1e6)
    if not spans:
        sr.fail(f"{path}: no worker spans (is it a stalesim trace?)")
    other = doc.get("otherData", {})
    title = f"{other.get('scenario', os.path.basename(os.path.dirname(path)))}: {other.get('policy', '')}"
    if other.get("truncated"):
        sr.warn(f"{path}: the trace was cut at its size limit (t = {other.get('truncated_at_s')} s)")
        title += " (trace cut at its size limit)"
    return title, names, spans, blocks


def main():
    p = sr.parser(__doc__, inputs="TRACE", inputs_help="a trace.json, or a run folder holding one", nargs=None)
    p.add_argument("--from", dest="start", type=float, default=None, metavar="S", help="first second shown")
    p.add_argument("--to", dest="end", type=float, default=None, metavar="S", help="last second shown")
    args = p.parse_args()
    title, names, spans, blocks = load(args.trace)
    sr.style()
    tids = sorted(set(spans) | set(names))
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.35 * len(tids)), constrained_layout=True)
    for row, tid in enumerate(tids):
        for kind, (label, colour) in KINDS.items():
            bars = spans.get(tid, {}).get(kind)
            if bars:
                ax.broken_barh(bars, (row - 0.35, 0.7), color=colour, label=label,
                               linewidth=0)
        marks = blocks.get(tid, [])
        if marks:
            ax.plot(marks, [row - 0.45] * len(marks), "v", color="red", markersize=4, label="blocked by the policy")
    ax.set_yticks(range(len(tids)), [names.get(t, f"worker {t}") for t in tids])
    ax.set_ylim(len(tids) - 0.5, -0.7)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("virtual time (s)")
    if args.start is not None or args.end is not None:
        lo, hi = ax.get_xlim()
        ax.set_xlim(args.start if args.start is not None else lo, args.end if args.end is not None else hi)
    ax.set_title(title, loc="left")
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    sr.legend_below(fig, list(seen.values()), list(seen.keys()), ncol=5)
    sr.save(fig, args, "timeline")


if __name__ == "__main__":
    main()
