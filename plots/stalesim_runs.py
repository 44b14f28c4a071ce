"""Reading stalesim run folders and sweep.csv files, and the plumbing the plots/ scripts share.

A run folder (README, "Outputs") holds summary.json, metrics.csv, staleness.csv, decisions.csv
(DSSP only) and `done` (written last). A sweep folder holds sweep.csv (key columns, seed,
folder, status, result columns; see sim/sweep/sweep.hpp kResultColumns) and one run folder per point.

The scripts import this module from their own folder; it needs only Debian's python3-matplotlib.
Every figure is written as PNG and SVG with fixed metadata, so the same inputs give the same bytes.
"""

import argparse
import csv
import json
import math
import os
import sys

import need_matplotlib  # noqa: F401  (a clear message when matplotlib is missing)
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

PROG = os.path.basename(sys.argv[0]) or "plots"

# Statuses whose numbers are results (as for `stalesim sweep`): the others are skipped in sweeps.
RESULT_STATUSES = ("completed", "diverged")


# ---- Messages ----------------------------------------------------------------------------------


def fail(message):
    """Print `PROG: error: message` and exit 2 (bad input, as stalesim itself)."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


def warn(message):
    """Print `PROG: warning: message` on stderr and go on."""
    print(f"{PROG}: warning: {message}", file=sys.stderr)


# ---- Cells and CSV files ---------------------------------------------------------------------


def number(cell):
    """A CSV cell or JSON value as a float; None for an empty cell, null or text."""
    if cell is None or cell == "" or isinstance(cell, bool):
        return None
    try:
        return float(cell)
    except (TypeError, ValueError):
        return None


def finite(x):
    """Whether x is a number that can be drawn (not None, NaN or infinite)."""
    return x is not None and math.isfinite(x)


# old-staleness-names: begin
# The older names of the two staleness quantities, read in folders written before the one-name
# rename until OLD_NAMES_READ_UNTIL (REFERENCE.md "What is simulated"; sim/output/names.hpp holds
# the same table): per file, old column -> current column.
OLD_NAMES_READ_UNTIL = "2027-06-30"
OLD_COLUMNS = {
    "staleness.csv": {"staleness": "value", "clock_gradients": "staleness_gradients",
                      "step_gradients": "missed_updates_gradients"},
    "gradients.csv": {"tau": "missed_updates"},
    "sweep.csv": {"step_staleness_mean": "missed_updates_mean"},
}


def current_summary(summary):
    """summary.json under the current names: an older folder's staleness_per_gradient
    (missed_updates, read_clock_gap) and step_staleness become missed_updates and staleness."""
    if not isinstance(summary, dict):
        return summary
    per = summary.pop("staleness_per_gradient", None)
    if isinstance(per, dict):
        if "missed_updates" in per:
            summary["missed_updates"] = per["missed_updates"]
        if "read_clock_gap" in per:
            summary["staleness"] = per["read_clock_gap"]
    old = summary.pop("step_staleness", None)
    if old is not None and "missed_updates" not in summary:
        summary["missed_updates"] = old
    return summary


# old-staleness-names: end


def read_csv(path):
    """The rows of a CSV file as dicts of strings ([] when the file is missing or empty); an older
    folder's staleness column names (OLD_COLUMNS) come back under the current ones."""
    if not os.path.isfile(path):
        return []
    renamed = OLD_COLUMNS.get(os.path.basename(path), {})
    with open(path, newline="") as f:
        return [{renamed.get(k, k): v for k, v in row.items()} for row in csv.DictReader(f)]


def columns(rows, *names):
    """{name: [float or None per row]} for the named columns (all None when a column is absent)."""
    return {n: [number(r.get(n)) for r in rows] for n in names}


def dig(obj, dotted):
    """obj["a"]["b"][0] for "a.b.0"; None when any step is missing."""
    for key in dotted.split("."):
        if isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
            obj = obj[int(key)]
        elif isinstance(obj, dict) and key in obj:
            obj = obj[key]
        else:
            return None
    return obj


def flatten(obj, prefix=""):
    """{"policy.staleness": 3, ...}: every leaf of a JSON value by its dotted path."""
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    else:
        return {prefix: obj}
    out = {}
    for k, v in items:
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


# ---- Run folders -------------------------------------------------------------------------------


def policy_label(policy):
    """'dssp(s=3,r=12)', 'ssp(s=3,lazy)', 'bsp', 'vap(v=0.5)' from a scenario's policy object."""
    kind = policy.get("type", "?")
    args = []
    if "staleness" in policy and kind in ("ssp", "essp", "dssp"):
        args.append(f"s={policy['staleness']}")
    if kind == "dssp" and "range" in policy:
        args.append(f"r={policy['range']}")
    if kind == "dssp" and policy.get("dssp_grant") == "literal":
        args.append("literal")
    if kind == "ssp" and policy.get("cache") == "lazy":
        args.append("lazy")
    if kind == "vap" and "value_bound" in policy:
        args.append(f"v={policy['value_bound']:g}")
    return f"{kind}({','.join(args)})" if args else kind


def worker_label(worker, index):
    """'w3 gtx1080ti' for an entry of summary.json's workers[]."""
    return f"w{worker.get('id', index)} {worker.get('profile', '?')}"


class Run:
    """One run folder: its summary.json, scenario, name, policy label and CSV files."""

    def __init__(self, folder):
        self.folder = folder
        if not os.path.isdir(folder):
            fail(f"{folder}: no such folder")
        path = os.path.join(folder, "summary.json")
        if not os.path.isfile(path):
            hint = " (a sweep folder? give its run folders, or use time_to_target.py)" if os.path.isfile(
                os.path.join(folder, "sweep.csv")) else ""
            fail(f"{folder}: not a run folder (no summary.json){hint}")
        try:
            with open(path) as f:
                self.summary = current_summary(json.load(f))
        except (OSError, ValueError) as e:
            fail(f"{path}: cannot read: {e}")
        if not isinstance(self.summary, dict):
            fail(f"{path}: not a stalesim summary (expected a JSON object)")
        self.scenario = dig(self.summary, "manifest.scenario") or {}
        self.name = self.scenario.get("name") or os.path.basename(os.path.normpath(folder))
        self.policy = policy_label(self.scenario.get("policy") or {})
        self.status = self.summary.get("status", "unknown")
        self.done = os.path.isfile(os.path.join(folder, "done"))
        self.label = self.policy  # set by load_runs()
        self._tables = {}

    def table(self, filename):
        """The rows of one of the run's CSV files (cached; [] when the file is missing)."""
        if filename not in self._tables:
            self._tables[filename] = read_csv(os.path.join(self.folder, filename))
        return self._tables[filename]

    def metrics(self):
        """metrics.csv as {column: [float or None]}."""
        return columns(self.table("metrics.csv"), "virtual_time_s", "server_version", "test_loss",
                       "test_accuracy", "train_loss", "mean_staleness", "bytes")

    def get(self, dotted):
        """A value of summary.json by dotted path ("final.test_loss"), None when absent."""
        return dig(self.summary, dotted)

    @property
    def workers(self):
        """summary.json's workers[] (each: id, profile, compute_s, communicate_s, wait_s, ...)."""
        return self.summary.get("workers") or []

    @property
    def target_accuracy(self):
        """stop.target_accuracy of the run's scenario, None when unset."""
        return number(dig(self.scenario, "stop.target_accuracy"))


def label_runs(runs):
    """Give each run a legend label: its policy, with the scenario name when names differ,
    '[diverged]' / '(unfinished)' where so, and the fields that tell apart runs that would
    still share a label (their folder names when no field does)."""
    names = {r.name for r in runs}
    for r in runs:
        r.label = r.policy if len(names) == 1 else f"{r.name} {r.policy}"
        if r.status not in ("completed", "interrupted"):
            r.label += f" [{r.status}]"
        if not r.done:
            r.label += " (unfinished)"
    groups = {}
    for r in runs:
        groups.setdefault(r.label, []).append(r)
    for same in groups.values():
        if len(same) < 2:
            continue
        flat = [flatten(dict(r.scenario, seed=r.get("manifest.seed"))) for r in same]
        keys = sorted({k for f in flat for k in f if k != "comment" and len({repr(g.get(k)) for g in flat}) > 1})
        for r, f in zip(same, flat):
            extra = ",".join(f"{k}={f.get(k)}" for k in keys[:2]) or os.path.basename(os.path.normpath(r.folder))
            r.label += f" [{extra}]"
    return runs


def load_runs(folders):
    """Run objects for the given folders, labelled; exits 2 on a folder without summary.json and
    warns on one without `done` (an unfinished run is still drawn, labelled 'unfinished')."""
    runs = [Run(f) for f in folders]
    for r in runs:
        if not r.done:
            warn(f"{r.folder}: unfinished run (no 'done' marker, status {r.status}); plotting it labelled 'unfinished'")
    return label_runs(runs)


def common_title(runs, what):
    """'what: name' when every run has the same scenario name, else just 'what'."""
    names = {r.name for r in runs}
    return f"{what}: {names.pop()}" if len(names) == 1 else what


# ---- Sweeps ------------------------------------------------------------------------------------

# Where a result column of sweep.csv lives in a run's summary.json, for sweep.csv files without it.
SUMMARY_OF_COLUMN = {
    "status": "status", "result_hash": "result_hash", "virtual_time_s": "virtual_time_s",
    "server_updates": "server_updates", "final_test_accuracy": "final.test_accuracy",
    "final_test_loss": "final.test_loss", "time_to_target_s": "time_to_target_s",
    "staleness_mean": "staleness.mean", "staleness_max": "staleness.max",
    "missed_updates_mean": "missed_updates.mean", "bytes_push": "bytes.push", "bytes_pull": "bytes.pull",
}


class Sweep:
    """A sweep folder's sweep.csv: rows of strings, with each cell also readable from the point's
    run folder (manifest.scenario for key columns, summary.json for results) when the CSV lacks it."""

    def __init__(self, path):
        csv_path = os.path.join(path, "sweep.csv") if os.path.isdir(path) else path
        if not os.path.isfile(csv_path):
            hint = " (a run folder? use the run scripts)" if os.path.isfile(os.path.join(path, "summary.json")) else ""
            fail(f"{path}: not a sweep folder or sweep.csv (no {csv_path}){hint}")
        self.dir = os.path.dirname(csv_path) or "."
        with open(csv_path, newline="") as f:
            reader = csv.DictReader(f)
            renamed = OLD_COLUMNS["sweep.csv"]
            self.rows = [{renamed.get(k, k): v for k, v in row.items()} for row in reader]
            self.columns = [renamed.get(c, c) for c in reader.fieldnames or []]
        if not self.rows:
            fail(f"{csv_path}: no rows")
        self.name = os.path.basename(os.path.normpath(self.dir))
        self._summaries = {}

    def summary(self, row):
        """The summary.json of a row's run folder ({} when there is none)."""
        folder = row.get("folder") or ""
        if folder not in self._summaries:
            path = os.path.join(self.dir, folder, "summary.json")
            try:
                with open(path) as f:
                    self._summaries[folder] = current_summary(json.load(f)) if folder else {}
            except (OSError, ValueError):
                self._summaries[folder] = {}
        return self._summaries[folder]

    def cell(self, row, column):
        """The row's value of a column: the CSV cell when present and not empty, else the run
        folder's (a scenario field for a dotted key column); None when neither has it."""
        value = row.get(column)
        if value not in (None, ""):
            return value
        summary = self.summary(row)
        if column in SUMMARY_OF_COLUMN:
            value = dig(summary, SUMMARY_OF_COLUMN[column])
        elif column == "seed":
            value = dig(summary, "manifest.seed")
        else:
            value = dig(summary, "manifest.scenario." + column)
        return None if value in (None, "") else value

    def title(self, exclude=()):
        """What ran: the runs' resolved scenario name (the sweep folder's name when they differ)
        and the fields the sweep set for every point (sweep.json "sets", e.g. --set values), less
        those named in exclude: 'tiny [stop.max_updates=300, stop.target_accuracy=0.75]'."""
        names = {dig(self.summary(r), "manifest.scenario.name") for r in self.rows} - {None}
        title = names.pop() if len(names) == 1 else self.name
        try:
            with open(os.path.join(self.dir, "sweep.json")) as f:
                sets = json.load(f).get("sets") or []
        except (OSError, ValueError, AttributeError):
            sets = []
        sets = [s for s in sets if isinstance(s, str) and s.split("=", 1)[0] not in exclude]
        return f"{title} [{', '.join(sets)}]" if sets else title

    def ok(self, row):
        """Whether the row's run holds results (status completed or diverged)."""
        return self.cell(row, "status") in RESULT_STATUSES


# ---- Spread over seeds ----------------------------------------------------------------------

# Two-sided 95% Student t quantiles t(0.975, dof) for dof 1..30; beyond, the normal 1.96.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)

BANDS = ("minmax", "std", "ci95")
BAND_TEXT = {"minmax": "min-max", "std": "mean +- 1 sd", "ci95": "95% CI of the mean"}


def band_half_width(kind, n, sd):
    """Half the width of a band around a mean of n values with sample standard deviation sd: sd
    for 'std', Student's t(0.975, n-1) * sd / sqrt(n) for 'ci95'; None when n < 2."""
    if n < 2 or not finite(sd):
        return None
    if kind == "std":
        return sd
    return (_T95[n - 2] if n - 1 <= len(_T95) else 1.96) * sd / math.sqrt(n)


def spread(values, kind):
    """(mean, low, high) of a list of numbers: the band 'minmax', 'std' or 'ci95' around the mean
    (low = high = mean for one value)."""
    n = len(values)
    mean = sum(values) / n
    if kind == "minmax":
        return mean, min(values), max(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    h = band_half_width(kind, n, sd) or 0.0
    return mean, mean - h, mean + h


def geometric(values, tolerance=1e-6):
    """Whether three or more distinct positive numbers form a geometric grid (a constant ratio > 1)."""
    v = sorted(set(values))
    if len(v) < 3 or v[0] <= 0:
        return False
    ratios = [b / a for a, b in zip(v, v[1:])]
    return ratios[0] > 1 + tolerance and all(abs(r / ratios[0] - 1) <= tolerance for r in ratios)


# ---- Figures -----------------------------------------------------------------------------------


def parser(description, inputs="RUN", inputs_help="run folders (each with summary.json)", nargs="+"):
    """An ArgumentParser with the positional inputs and the shared --out and --name options."""
    p = argparse.ArgumentParser(prog=PROG, description=description.strip(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(inputs.lower(), metavar=inputs, nargs=nargs, help=inputs_help)
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder for the PNG and SVG (default: the input's own folder, the run or sweep "
                        "folder, when there is one input; the current folder for several)")
    p.set_defaults(_inputs=inputs.lower())
    p.add_argument("--name", default="", metavar="PREFIX",
                   help="prefix of the file names: PREFIX-<figure>.png/.svg (default: none)")
    return p


def style():
    """Fixed rcParams: deterministic SVG (hash salt, text kept as text) and a readable look."""
    plt.rcParams.update({
        "svg.hashsalt": "stalesim",
        "svg.fonttype": "none",
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.grid": True,
        "axes.axisbelow": True,
        "grid.alpha": 0.3,
        "legend.fontsize": 8,
        "legend.framealpha": 0.9,
    })


def out_dir(args):
    """--out, else the one input's folder (a run or sweep folder, or the folder of a file given),
    else, for several inputs, the current folder."""
    if args.out is None:
        given = getattr(args, getattr(args, "_inputs", ""), None)
        given = [given] if isinstance(given, str) else list(given or [])
        if len(given) == 1:
            args.out = given[0] if os.path.isdir(given[0]) else os.path.dirname(given[0]) or "."
        else:
            args.out = "."
    return args.out


def refuse_link(path):
    """Stop before writing `path` when it is a symbolic link: the plots never write through one
    (it may point at a file of yours outside the folder)."""
    if os.path.islink(path):
        fail(f"{path}: is a symbolic link; the plots never write through one (remove it or choose "
             "another --out)")


def record_in_run_folder(path):
    """Note the file `path` in its folder's plots.list when that folder is a stalesim run or sweep
    folder (holds summary.json or sweep.json): stalesim then knows the figure for ours
    (sim/output/run_folder.hpp recorded_plots), so --force and a resumed sweep still take the folder
    for ours, and reproduce does not take the figure's data for a run file."""
    folder, name = os.path.split(path)
    folder = folder or "."
    if not any(os.path.isfile(os.path.join(folder, f)) for f in ("summary.json", "sweep.json")):
        return
    listed = os.path.join(folder, "plots.list")
    refuse_link(listed)
    names = []
    if os.path.isfile(listed):
        with open(listed) as f:
            names = [line.rstrip("\n") for line in f]
    if name not in names:
        with open(listed, "a") as f:
            f.write(name + "\n")


def save(fig, args, stem):
    """Write OUT/[PREFIX-]stem.png and .svg (no dates in the metadata) and print their paths."""
    os.makedirs(out_dir(args), exist_ok=True)
    base = os.path.join(args.out, f"{args.name}-{stem}" if args.name else stem)
    # bbox_inches="tight" takes in a legend placed under the panels (legend_below).
    for suffix in (".png", ".svg"):
        refuse_link(base + suffix)
    fig.savefig(base + ".png", dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(base + ".svg", bbox_inches="tight", metadata={"Date": None})
    record_in_run_folder(base + ".png")
    record_in_run_folder(base + ".svg")
    plt.close(fig)
    print(f"wrote {base}.png {base}.svg")


def save_data(args, stem, header, rows):
    """Write OUT/[PREFIX-]stem.csv: the numbers a figure draws, for a reader or a test to check."""
    os.makedirs(out_dir(args), exist_ok=True)
    path = os.path.join(args.out, f"{args.name}-{stem}.csv" if args.name else f"{stem}.csv")
    refuse_link(path)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    record_in_run_folder(path)
    print(f"wrote {path}")


def series_style(i):
    """Colour and line style of the i-th series: ten colours, then the next line style."""
    return {"color": f"C{i % 10}", "linestyle": ("-", "--", "-.", ":")[(i // 10) % 4]}


def legend_below(fig, handles, labels, ncol=3):
    """One legend for the whole figure, under the panels, so it never covers data."""
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(ncol, len(handles)))


def note(ax, text):
    """A grey note in the middle of a panel that has nothing to draw."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.4", wrap=True)
