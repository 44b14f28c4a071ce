#!/usr/bin/python3
"""The figures of `stalesim report` (tools/cmd_report.cpp writes the page around them).

Usage: plots/report_figures.py OUT INPUT...   (INPUT: a run folder, or a sweep folder)

Sections: the run folders given form one section (drawn together); each sweep folder gives one
section per point (its seeds drawn together), after an overview section with all its points. Per
section, into OUT (PNG only, fixed size, no dates in the metadata: the same runs give the same bytes):
  - timelines, one image per run that has a trace.json (stalesim run --trace): every image the
    same size with the plot area at the same place, the same time axis (ms below 1 s), worker rows
    in id order, each compute bar labelled with its clock, each wait coloured by the worker waited
    for, the policy's blocks marked "->wN" with a count per row at the right of every row;
  - the staleness distribution: gradients per staleness (clocks) and per missed updates, counted
    one bin per value, on a logarithmic count axis (said on the axis);
  - mean staleness over time (metrics.csv), linear and logarithmic (symlog, linear below 1);
  - test accuracy against virtual time: per group of runs that differ only in their seed, the mean
    and the min-max band over the seeds, and the target (stop.target_accuracy) as a dashed line.
Writes OUT/figures.json: {"sections": [{"id", "title", "runs": [{"folder", "label"}], "figures":
[{"file", "kind", "caption"}]}]} for the page. Exit 2 on bad input (a folder neither a run nor a
sweep).
"""

import json
import os
import re
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402
import timeline as tl  # noqa: E402
from stalesim_runs import plt  # noqa: E402

DPI = 110
TIMELINE_W = 10.0  # inches, every timeline
AXES_LEFT, AXES_RIGHT = 0.12, 0.80  # figure fractions: the same plot area in every timeline
WAIT_COLOURS = ["#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#ff7f0e", "#7f7f7f"]


def time_unit(span_s):
    """(scale, unit) for an axis of span_s seconds: ms below 1 s."""
    return (1e3, "ms") if span_s < 1 else (1.0, "s")


def save(fig, out, name):
    fig.savefig(os.path.join(out, name), dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return name


def group_key(run):
    """Runs that differ only in their seed share this key (a band over seeds)."""
    flat = sr.flatten(run.scenario)
    flat.pop("comment", None)
    flat.pop("seed", None)
    return json.dumps(flat, sort_keys=True, default=str)


def load_trace(run):
    path = os.path.join(run.folder, "trace.json")
    if not os.path.isfile(path):
        return None
    return tl.load(path)


def row_name(tid, name):
    """'w1 gtx1080ti' from the trace's 'worker 1 (gtx1080ti)'."""
    m = re.search(r"\((.*)\)", name)
    return f"w{tid} {m.group(1)}" if m else f"w{tid}"


def clocks_of(path):
    """{tid: [(start_s, dur_s, clock)]} of the compute spans (their args.clock)."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for e in doc.get("traceEvents", []):
        if isinstance(e, dict) and e.get("pid") == tl.WORKERS_PID and e.get("ph") == "X" and e.get("name") == "compute":
            out.setdefault(e.get("tid"), []).append((e["ts"] / 1e6, e["dur"] / 1e6, (e.get("args") or {}).get("clock")))
    return out


def timelines(runs, out, sid):
    traced = [(r, load_trace(r)) for r in runs]
    traced = [(r, t) for r, t in traced if t is not None]
    if not traced:
        return []
    lo = min(s for _, t in traced for row in t[2].values() for bars in row.values() for s, _ in bars)
    hi = max(s + d for _, t in traced for row in t[2].values() for bars in row.values() for s, d in bars)
    scale, unit = time_unit(hi - lo)
    rows = max(len(set(t[2]) | set(t[1])) for _, t in traced)
    height = 1.3 + 0.55 * rows
    figures = []
    for i, (run, (title, names, spans, blocks)) in enumerate(traced):
        clocks = clocks_of(os.path.join(run.folder, "trace.json"))
        fig = plt.figure(figsize=(TIMELINE_W, height))
        ax = fig.add_axes([AXES_LEFT, 0.95 / height, AXES_RIGHT - AXES_LEFT, (height - 1.3) / height])
        tids = sorted(set(spans) | set(names))
        legend = {}
        for row, tid in enumerate(tids):
            row_spans = spans.get(tid, {})
            for kind in ("compute", "push", "pull"):
                bars = [(s * scale, d * scale) for s, d in row_spans.get(kind, []) if s < hi and s + d > lo]
                if bars:
                    h = ax.broken_barh(bars, (row - 0.35, 0.7), color=tl.KINDS[kind][1], linewidth=0)
                    legend.setdefault(kind, h)
            # A wait is coloured by the worker the last block before it waited for.
            marks = sorted(blocks.get(tid, []), key=lambda m: m[0])
            for s, d in row_spans.get("wait", []):
                who = None
                for t, w in marks:
                    if t <= s + 1e-12:
                        who = w
                colour = WAIT_COLOURS[who % len(WAIT_COLOURS)] if isinstance(who, int) else "0.6"
                h = ax.broken_barh([(s * scale, d * scale)], (row - 0.35, 0.7), color=colour, linewidth=0)
                legend.setdefault(f"wait for w{who}" if isinstance(who, int) else "wait (no one worker)", h)
            span = hi - lo
            for s, d, c in clocks.get(tid, []):
                if c is not None and d / span > 0.012:
                    ax.text((s + d / 2) * scale, row, str(c), ha="center", va="center", fontsize=7, color="white",
                            fontweight="bold")
            shown = [(t, w) for t, w in marks if lo <= t <= hi]
            if shown:
                h, = ax.plot([t * scale for t, _ in shown], [row - 0.42] * len(shown), "v", color="red", markersize=6)
                legend.setdefault("blocked by the policy (->wN: waits for worker N)", h)
                if len(shown) <= 40:
                    for t, w in shown:
                        if w is not None:
                            ax.annotate(f"->w{w}", (t * scale, row - 0.42), xytext=(2, 2), textcoords="offset points",
                                        fontsize=8, fontweight="bold", color="red", va="bottom")
            counts = {}
            for _, w in shown:
                counts[w] = counts.get(w, 0) + 1
            parts = [f"{n}x for w{w}" if w is not None else f"{n}x (no one worker)"
                     for w, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))]
            text = f"blocked {len(shown)}x" + (f": {', '.join(parts)}" if parts else "")
            ax.annotate(text, (1.01, row), xycoords=("axes fraction", "data"), fontsize=8, va="center", color="red")
        ax.set_yticks(range(len(tids)), [row_name(t, names.get(t, "")) for t in tids])
        ax.set_ylim(rows - 0.5, -0.7)
        ax.set_xlim(lo * scale, hi * scale)
        ax.set_xlabel(f"virtual time ({unit})")
        ax.grid(axis="y", visible=False)
        ax.set_title(f"{run.label}: {title}", loc="left")
        fig.legend(list(legend.values()), list(legend.keys()), loc="lower left", bbox_to_anchor=(AXES_LEFT, 0.0),
                   ncol=4, fontsize=7, frameon=False)
        name = save(fig, out, f"{sid}-timeline-{i}.png")
        figures.append({"file": name, "kind": "timeline",
                        "caption": f"{run.label}: the first moments ({lo * scale:g} to {hi * scale:g} {unit}) from "
                                   f"its trace.json. Bars carry the worker's clock; waits are coloured by the worker "
                                   f"waited for. Every timeline of this section has the same axis and width."})
    return figures


def staleness(runs, out, sid):
    """Per group of runs (seeds summed), the count of gradients at each value, log count axis."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    drawn = False
    groups = grouped(runs)
    for ax, (column, _, xlabel) in zip(axes, KINDS):
        for i, g in enumerate(groups):
            counts = {}
            for run in g:
                cols = sr.columns(run.table("staleness.csv"), "value", column)
                for v, n in zip(cols["value"], cols[column]):
                    if sr.finite(v) and sr.finite(n) and n > 0:
                        counts[v] = counts.get(v, 0) + n
            if not counts:
                continue
            drawn = True
            pairs = sorted(counts.items())
            total = sum(n for _, n in pairs)
            mean = sum(v * n for v, n in pairs) / total
            ax.plot([v for v, _ in pairs], [n for _, n in pairs], drawstyle="steps-mid", marker=".", markersize=3,
                    label=f"{label_of(g)} (mean {mean:.3g})", **sr.series_style(i))
        ax.set_yscale("log")
        ax.set_xlabel(xlabel + ", one bin per value")
        ax.set_ylabel("gradients (count, log scale)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    if not drawn:
        plt.close(fig)
        return []
    name = save(fig, out, f"{sid}-staleness.png")
    return [{"file": name, "kind": "staleness",
             "caption": "How stale the applied gradients were: the count of gradients at each staleness (left: "
                        "clocks ahead of the slowest worker when read; right: server updates missed), one bin per "
                        "value, count axis logarithmic; runs that differ only in their seed are summed."}]


KINDS = (("staleness_gradients", "staleness", "staleness (clocks)"),
         ("missed_updates_gradients", "missed_updates", "missed updates (server updates)"))


def grouped(runs):
    groups = {}
    for r in runs:
        groups.setdefault(group_key(r), []).append(r)
    return list(groups.values())


def mean_curve(group, column):
    """(times, means, mins, maxs) over the seeds of a group at the times every seed has."""
    per = []
    for r in group:
        m = r.metrics()
        per.append({t: v for t, v in zip(m["virtual_time_s"], m[column]) if sr.finite(t) and sr.finite(v)})
    times = sorted(set.intersection(*[set(p) for p in per])) if per else []
    means = [sum(p[t] for p in per) / len(per) for t in times]
    return times, means, [min(p[t] for p in per) for t in times], [max(p[t] for p in per) for t in times]


def label_of(group):
    if len(group) == 1:
        return group[0].label
    return f"{group[0].label.split(' [')[0]} ({len(group)} seeds)"


def staleness_time(runs, out, sid):
    figures = []
    groups = grouped(runs)
    span = max((max(mean_curve(g, "mean_staleness")[0] or [0]) for g in groups), default=0)
    scale, unit = time_unit(span or 1)
    for log in (False, True):
        fig, ax = plt.subplots(figsize=(10, 3.4), constrained_layout=True)
        drawn = False
        for i, g in enumerate(groups):
            t, m, _, _ = mean_curve(g, "mean_staleness")
            if t:
                drawn = True
                ax.plot([x * scale for x in t], m, label=label_of(g), **sr.series_style(i))
        if not drawn:
            plt.close(fig)
            return []
        if log:
            ax.set_yscale("symlog", linthresh=1)
        ax.set_xlabel(f"virtual time ({unit})")
        ax.set_ylabel("mean staleness (clocks)" + (", symlog: linear below 1" if log else ""))
        ax.legend(fontsize=7)
        figures.append({"file": save(fig, out, f"{sid}-staleness-time-{'log' if log else 'linear'}.png"),
                        "kind": "staleness-time-log" if log else "staleness-time",
                        "caption": "Mean staleness of the gradients of each evaluation interval (metrics.csv), "
                                   + ("logarithmic axis (symlog: linear below 1 so 0 shows)." if log else
                                      "linear axis.")})
    return figures


def accuracy(runs, out, sid):
    groups = grouped(runs)
    fig, ax = plt.subplots(figsize=(10, 3.6), constrained_layout=True)
    span = 0
    curves = []
    for g in groups:
        t, m, lo, hi = mean_curve(g, "test_accuracy")
        if t:
            curves.append((g, t, m, lo, hi))
            span = max(span, t[-1])
    if not curves:
        plt.close(fig)
        return []
    scale, unit = time_unit(span or 1)
    targets = set()
    for i, (g, t, m, lo, hi) in enumerate(curves):
        st = sr.series_style(i)
        x = [v * scale for v in t]
        ax.plot(x, m, label=label_of(g), **st)
        if len(g) > 1:
            ax.fill_between(x, lo, hi, color=st["color"], alpha=0.2, linewidth=0)
        for r in g:
            if r.target_accuracy is not None:
                targets.add(r.target_accuracy)
    for target in sorted(targets):
        ax.axhline(target, color="black", linestyle="--", linewidth=1, label=f"target {target:g}")
    ax.set_xlabel(f"virtual time ({unit})")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=7)
    banded = any(len(g) > 1 for g, *_ in curves)
    return [{"file": save(fig, out, f"{sid}-accuracy.png"), "kind": "accuracy",
             "caption": "Test accuracy against virtual time" +
                        (": the mean over seeds with the min-max band over them" if banded else
                         " (one seed per line: run a sweep with several seeds for bands)") +
                        ("; dashed: the target" if targets else "") + "."}]


def section(sid, title, runs, out):
    figures = timelines(runs, out, sid) + staleness(runs, out, sid) + staleness_time(runs, out, sid) + \
        accuracy(runs, out, sid)
    return {"id": sid, "title": title, "runs": [{"folder": r.folder, "label": r.label} for r in runs],
            "figures": figures}


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    out, inputs = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    sr.style()
    sections = []
    runs = [p for p in inputs if os.path.isfile(os.path.join(p, "summary.json"))]
    sweeps = [p for p in inputs if p not in runs]
    if runs:
        sections.append(section("runs", "The runs given", sr.load_runs(runs), out))
    for k, path in enumerate(sweeps):
        sweep = sr.Sweep(path)
        folders = [os.path.join(sweep.dir, r["folder"]) for r in sweep.rows if sweep.ok(r) and r.get("folder")]
        if not folders:
            sr.fail(f"{path}: no point with a result")
        all_runs = sr.load_runs(folders)
        sections.append(section(f"sweep{k}", f"{sweep.title()}: all points", all_runs, out))
        for j, g in enumerate(grouped(all_runs)):
            sections.append(section(f"sweep{k}-point{j}", f"{sweep.name}: {label_of(g)}", g, out))
    with open(os.path.join(out, "figures.json"), "w") as f:
        json.dump({"sections": sections}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
