#!/usr/bin/python3
"""A Gantt chart of a run from its trace.json (stalesim run --trace): one row per worker.

Each worker's compute, push, pull and wait spans are drawn as bars along virtual time, and a red
mark shows where the policy blocked the worker (the trace's "blocked" events; their reason is in
the event's args.why). Who waited for whom: each mark is labelled with the worker it waited for
(args.waits_for, else "slowest is worker N" in args.why: the slowest worker when the wait began),
and each row ends with its count ("blocked 5x: 5x for w0"). The same picture as `stalesim
timeline`, from the file Perfetto opens. --from and --to cut the span shown (seconds; default: the
whole trace; --to alone starts at the trace's start). A long span stays readable: when a row has
more spans in view than --bins, it is drawn as --bins cells, each the colour of what the worker
did most of that cell (as the terminal timeline), and the marks lose their labels (the counts
stay). Writes OUT/[PREFIX-]timeline.png and .svg (OUT: the run folder by default).

Example: stalesim run scenarios/tutorial/01-bsp-straggler.json --trace --trace-window 0:0.05
         plots/timeline.py results/tutorial-01-bsp-straggler --out figures
"""

import json
import math
import os
import re
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
from stalesim_runs import plt  # noqa: E402

# name in the trace -> (label, colour), in legend order
KINDS = {"compute": ("compute", "C0"), "push": ("push", "C2"), "pull": ("pull", "C8"), "wait": ("wait", "C3")}
WORKERS_PID = 1


WAITS_FOR = re.compile(r"slowest is worker (\d+)")


def waits_for(args):
    """The worker a blocked event waited for: args.waits_for, else the "slowest is worker N" of its
    reason; None when neither says (a value-bound hold waits for no one worker)."""
    if isinstance(args.get("waits_for"), int):
        return args["waits_for"]
    m = WAITS_FOR.search(str(args.get("why", "")))
    return int(m.group(1)) if m else None


def load(path):
    """(title, {tid: worker name}, {tid: {kind: [(start_s, dur_s)]}}, {tid: [(blocked_s, waited for)]})."""
    if os.path.isdir(path):
        path = os.path.join(path, "trace.json")
    if not os.path.isfile(path):
        sr.fail(f"{path}: no trace.json (run with stalesim run --trace)")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        sr.fail(f"{path}: not a trace: {e}")
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        sr.fail(f"{path}: no traceEvents array")
    names, spans, blocks = {}, {}, {}

    def bad(i, what):
        sr.fail(f"{path}: traceEvents[{i}]{what} (not a trace stalesim wrote?)")

    def time_of(e, i, key):
        v = e.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            bad(i, f".{key}: expected a finite number >= 0, got {v!r:.60}")
        return v / 1e6

    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("pid") != WORKERS_PID:
            continue
        tid = e.get("tid")
        if isinstance(tid, bool) or not isinstance(tid, int):
            bad(i, f".tid: expected an integer, got {tid!r:.60}")
        args = e.get("args", {})
        if not isinstance(args, dict):
            bad(i, f".args: expected an object, got {args!r:.60}")
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            name = args.get("name", f"worker {tid}")
            if not isinstance(name, str):
                bad(i, f".args.name: expected a string, got {name!r:.60}")
            names[tid] = name.encode("unicode_escape").decode("ascii")  # no control characters
        elif e.get("ph") == "X" and e.get("name") in KINDS:
            spans.setdefault(tid, {}).setdefault(e["name"], []).append((time_of(e, i, "ts"), time_of(e, i, "dur")))
        elif e.get("ph") == "i" and e.get("name") == "blocked":
            blocks.setdefault(tid, []).append((time_of(e, i, "ts"), waits_for(args)))
    if not spans:
        sr.fail(f"{path}: no worker spans (is it a stalesim trace?)")
    other = doc.get("otherData", {})
    if not isinstance(other, dict):
        sr.fail(f"{path}: otherData: expected an object, got {other!r:.60}")
    title = f"{other.get('scenario', os.path.basename(os.path.dirname(path)))}: {other.get('policy', '')}"
    if other.get("truncated"):
        sr.warn(f"{path}: the trace was cut at its size limit (t = {other.get('truncated_at_s')!r:.40} s)")
        title += " (trace cut at its size limit)"
    return title, names, spans, blocks


def dominant_cells(row_spans, lo, hi, bins):
    """{kind: [(start_s, width_s)]}: the window cut into `bins` cells, each given to the kind that
    covers most of it (cells nothing covers stay empty)."""
    width = (hi - lo) / bins
    cover = [dict() for _ in range(bins)]
    for kind, bars in row_spans.items():
        for start, dur in bars:
            a, b = max(start, lo), min(start + dur, hi)
            if b <= a:
                continue
            for c in range(int((a - lo) / width), min(bins, int((b - lo) / width) + 1)):
                cell_lo = lo + c * width
                overlap = min(b, cell_lo + width) - max(a, cell_lo)
                if overlap > 0:
                    cover[c][kind] = cover[c].get(kind, 0.0) + overlap
    out = {}
    for c, kinds in enumerate(cover):
        if kinds:
            best = max(KINDS, key=lambda k: kinds.get(k, 0.0))  # ties: the first in KINDS
            out.setdefault(best, []).append((lo + c * width, width))
    return out


def main():
    p = sr.parser(__doc__, inputs="TRACE", inputs_help="a trace.json, or a run folder holding one", nargs=None)
    p.add_argument("--from", dest="start", type=float, default=None, metavar="S", help="first second shown")
    p.add_argument("--to", dest="end", type=float, default=None, metavar="S", help="last second shown")
    p.add_argument("--bins", type=int, default=400, metavar="N",
                   help="a row with more spans than N in view is drawn as N cells of its main activity (default 400)")
    args = p.parse_args()
    if args.bins < 1:
        sr.fail(f"--bins {args.bins}: expected an integer >= 1")
    title, names, spans, blocks = load(args.trace)
    first = min(start for row in spans.values() for bars in row.values() for start, _ in bars)
    last = max(start + dur for row in spans.values() for bars in row.values() for start, dur in bars)
    lo = args.start if args.start is not None else first
    hi = args.end if args.end is not None else last
    if hi <= lo:
        sr.fail(f"--from {lo:g} --to {hi:g}: an empty span (the trace covers {first:g} to {last:g} s)")
    sr.style()
    tids = sorted(set(spans) | set(names))
    label_of = {t: names.get(t, f"worker {t}") for t in tids}
    short = {t: f"w{t}" for t in tids}
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.35 * len(tids)), constrained_layout=True)
    aggregated = False
    for row, tid in enumerate(tids):
        row_spans = {k: [(s0, d) for s0, d in bars if s0 < hi and s0 + d > lo]
                     for k, bars in spans.get(tid, {}).items()}
        if sum(len(b) for b in row_spans.values()) > args.bins:
            row_spans = dominant_cells(row_spans, lo, hi, args.bins)
            aggregated = True
        for kind, (label, colour) in KINDS.items():
            bars = row_spans.get(kind)
            if bars:
                ax.broken_barh(bars, (row - 0.35, 0.7), color=colour, label=label, linewidth=0)
        marks = [(t, w) for t, w in blocks.get(tid, []) if lo <= t <= hi]
        if not marks:
            continue
        ax.plot([t for t, _ in marks], [row - 0.45] * len(marks), "v", color="red", markersize=4,
                label="blocked by the policy (-> the worker it waits for)")
        if len(marks) <= 40:
            for t, w in marks:
                if w is not None:
                    ax.annotate(f"->{short.get(w, w)}", (t, row - 0.45), xytext=(2, 1), textcoords="offset points",
                                fontsize=6, color="red", va="bottom")
        counts = {}
        for _, w in marks:
            counts[w] = counts.get(w, 0) + 1
        parts = [f"{n}x for {short.get(w, w)}" if w is not None else f"{n}x (no one worker)"
                 for w, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))]
        ax.annotate(f"blocked {len(marks)}x: {', '.join(parts)}", (1.01, row), xycoords=("axes fraction", "data"),
                    fontsize=7, va="center", color="red")
    ax.set_yticks(range(len(tids)), [label_of[t] for t in tids])
    ax.set_ylim(len(tids) - 0.5, -0.7)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("virtual time (s)" + (f"; rows with more than {args.bins} spans drawn as {args.bins} cells "
                                        "of their main activity" if aggregated else ""))
    ax.set_xlim(lo, hi)
    ax.set_title(title, loc="left")
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    sr.legend_below(fig, list(seen.values()), list(seen.keys()), ncol=5)
    sr.save(fig, args, "timeline")


if __name__ == "__main__":
    main()
