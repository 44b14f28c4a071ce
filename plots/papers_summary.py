#!/usr/bin/python3
"""Markdown tables of the papers' experiments, from the sweep folders of tools/reproduce-papers.

Usage: plots/papers_summary.py DIR   (DIR holds dssp-hetero/, fasgd-lambda/, bfasgd/, essp-mf/, ...)

Prints, for each sweep folder present: DSSP's time to target per policy (mean over seeds, how many
reached it) with the ratios the paper quotes; FASGD's best final test loss per rule and lambda
(and the learning rate that won); B-FASGD's bytes against accuracy, with the reduction against
c_fetch = 0; SSP against ESSP's staleness and final metrics. Numbers only: the words are in
scenarios/papers/README.md. Exits 2 when DIR holds none of the sweeps.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import need_matplotlib  # noqa: F401,E402  (a clear message when matplotlib is missing)
import stalesim_runs as sr  # noqa: E402


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def fmt(x, spec=".4g"):
    return "n/a" if x is None else format(x, spec)


def groups(sweep, key):
    """{key(row): [rows]} in sweep order, rows with results only."""
    out = {}
    for row in sweep.rows:
        if sweep.ok(row):
            out.setdefault(key(row), []).append(row)
    return out


def num(sweep, row, col):
    return sr.number(sweep.cell(row, col))


def dssp(path, name):
    sweep = sr.Sweep(path)
    # DSSP's grant reading (P11) and the network's speed (the speed sweeps) keep their points apart
    by = groups(sweep, lambda r: (sweep.cell(r, "policy.type"), sweep.cell(r, "policy.staleness") or "",
                                  sweep.cell(r, "policy.dssp_grant") or "",
                                  sweep.cell(r, "cluster.network.bandwidth_gbps") if "cluster.network.bandwidth_gbps" in
                                  sweep.columns else "", sweep.cell(r, "optimizer.lr")))
    print(f"### {name}\n")
    print("| policy | learning rate | seeds | reached target | mean time to target of those that reached it (s) | mean final accuracy | "
          "mean staleness (clocks) |")
    print("|---|---|---|---|---|---|---|")
    times = {}
    for (policy, s, grant, bw, _), rows in by.items():
        t = [num(sweep, r, "time_to_target_s") for r in rows]
        reached = [x for x in t if sr.finite(x)]
        label = policy + (f"(s={s})" if s and policy in ("ssp", "essp", "dssp") else "")
        label += f" {grant}" if grant not in ("", "bounded") else ""
        label += f" at {bw} Gbit/s" if bw else ""
        times.setdefault(label, mean(reached) if len(reached) == len(t) else None)
        lrs = "/".join(dict.fromkeys(str(sweep.cell(r, "optimizer.lr")) for r in rows))
        print(f"| {label} | {lrs} | {len(rows)} | {len(reached)}/{len(t)} | {fmt(mean(reached), '.1f')} | "
              f"{fmt(mean([num(sweep, r, 'final_test_accuracy') for r in rows]), '.4f')} | "
              f"{fmt(mean([num(sweep, r, 'staleness_mean') for r in rows]), '.2f')} |")
    d = times.get("dssp(s=3)")
    for other in ("ssp(s=15)", "ssp(s=3)", "bsp", "asp"):
        o = times.get(other)
        if d is not None and o:
            print(f"\nDSSP / {other.upper() if other in ('bsp', 'asp') else other.replace('ssp', 'SSP')} "
                  f"time to target: {d / o:.3f}", end="")
    print("\n")


def fasgd_lambda(path, name):
    sweep = sr.Sweep(path)
    def rule(r):
        name, variant = sweep.cell(r, "optimizer.rule"), sweep.cell(r, "optimizer.variant")
        return f"{name} ({variant})" if name in ("fasgd", "bfasgd") and variant else name

    by = groups(sweep, lambda r: (rule(r), num(sweep, r, "cluster.workers.0.count")))
    best = {}
    for (rule, lam), rows in by.items():
        r = min(rows, key=lambda r: num(sweep, r, "final_test_loss") if sr.finite(num(sweep, r, "final_test_loss")) else 1e300)
        best[(rule, lam)] = (num(sweep, r, "final_test_loss"), sweep.cell(r, "optimizer.lr"),
                             num(sweep, r, "final_test_accuracy"), [sweep.cell(x, "optimizer.lr") for x in rows])
    lams = sorted({lam for _, lam in best})
    rules = list(dict.fromkeys(rule for rule, _ in best))
    print(f"### {name}: best final test loss over each rule's learning-rate grid\n")
    fasgds = [r for r in rules if r.startswith("fasgd")]
    print("| lambda | " + " | ".join(f"{r} loss (lr, accuracy)" for r in rules) + " | " +
          " | ".join(f"SASGD - {r}" for r in fasgds) + " |")
    print("|---" * (len(rules) + len(fasgds) + 1) + "|")
    for lam in lams:
        cells = []
        for r in rules:
            b = best.get((r, lam))
            edge = ", grid edge" if b and len(b[3]) > 1 and b[1] in (b[3][0], b[3][-1]) else ""
            cells.append("n/a" if not b else f"{b[0]:.4f} (lr {b[1]}{edge}, {b[2]:.4f})")
        s = best.get(("sasgd", lam))
        margins = [fmt(s[0] - best[(f, lam)][0], "+.4f") if s and (f, lam) in best else "n/a" for f in fasgds]
        print(f"| {lam:g} | " + " | ".join(cells + margins) + " |")
    print()


def plain(path, name, cols):
    sweep = sr.Sweep(path)
    keys = sweep.columns[:sweep.columns.index("seed")] if "seed" in sweep.columns else []
    print(f"### {name}\n")
    print("| " + " | ".join(keys + cols) + " |")
    print("|---" * (len(keys) + len(cols)) + "|")
    for row in sweep.rows:
        if not sweep.ok(row):
            continue
        vals = [str(sweep.cell(row, k) or "") for k in keys]
        vals += [fmt(num(sweep, row, c)) for c in cols]
        print("| " + " | ".join(vals) + " |")
    print()


def essp(path, name):
    """SSP against ESSP: staleness, and the workload's own metric (test_rmse for mf,
    loglik_per_token for lda) at a sixth of the run, at version 10,000 and at the end."""
    sweep = sr.Sweep(path)
    rows = [r for r in sweep.rows if sweep.ok(r)]
    if not rows:
        return
    final = sweep.summary(rows[0]).get("final", {})
    metric = next((k for k in ("test_rmse", "loglik_per_token") if k in final), "test_loss")
    better = max if metric == "loglik_per_token" else min
    print(f"### {name}: staleness and {metric} (mean staleness in clocks; time in virtual s)\n")
    print(f"| policy | s | staleness mean | staleness max | updates | {metric} at T/6 | {metric} at version 10000 | "
          f"final {metric} | best {metric} |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        table = sr.read_csv(os.path.join(sweep.dir, r["folder"], "metrics.csv"))
        t_end = num(sweep, r, "virtual_time_s")
        values = [(sr.number(x["virtual_time_s"]), sr.number(x["server_version"]), sr.number(x.get(metric)))
                  for x in table]
        values = [v for v in values if sr.finite(v[2])]
        at_t = next((v[2] for v in values if v[0] >= t_end / 6), None)
        at_v = next((v[2] for v in values if v[1] >= 10000), None)
        print(f"| {sweep.cell(r, 'policy.type')} | {sweep.cell(r, 'policy.staleness')} | "
              f"{fmt(num(sweep, r, 'staleness_mean'), '.3f')} | {fmt(num(sweep, r, 'staleness_max'), 'g')} | "
              f"{fmt(num(sweep, r, 'server_updates'), '.0f')} | {fmt(at_t)} | {fmt(at_v)} | "
              f"{fmt(values[-1][2] if values else None)} | {fmt(better(v[2] for v in values) if values else None)} |")
    print()


def bfasgd(path, name):
    sweep = sr.Sweep(path)
    rows = [r for r in sweep.rows if sweep.ok(r)]
    base = next((r for r in rows if num(sweep, r, "optimizer.c_fetch") == 0), None)
    print(f"### {name}: bytes against accuracy (reductions against c_fetch = 0)\n")
    print("| c_fetch | c_push | pull GB | push GB | pull cut | total cut | final accuracy | accuracy change (points) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        pull, push = num(sweep, r, "bytes_pull"), num(sweep, r, "bytes_push")
        acc = num(sweep, r, "final_test_accuracy")
        if base:
            bp, bq, ba = num(sweep, base, "bytes_pull"), num(sweep, base, "bytes_push"), num(sweep, base, "final_test_accuracy")
            cut = f"{bp / pull:.2f}x" if pull else "all"
            total = f"{(bp + bq) / (pull + push):.2f}x"
            delta = fmt(100 * (acc - ba), "+.2f")
        else:
            cut = total = delta = "n/a"
        print(f"| {sweep.cell(r, 'optimizer.c_fetch')} | {sweep.cell(r, 'optimizer.c_push')} | {pull / 1e9:.3f} | "
              f"{push / 1e9:.3f} | {cut} | {total} | {fmt(acc, '.4f')} | {delta} |")
    print()


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    root = sys.argv[1]
    found = False
    print("# Paper reproductions: figures\n\n(generated by plots/papers_summary.py from the sweeps in this folder)\n")
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, name)
        if not os.path.isfile(os.path.join(path, "sweep.csv")):
            continue
        found = True
        if name.startswith("dssp-"):
            dssp(path, name)
        elif name == "fasgd-lambda":
            fasgd_lambda(path, name)
        elif name == "bfasgd":
            bfasgd(path, name)
        elif name.startswith("essp-"):
            essp(path, name)
        else:
            plain(path, name, ["final_test_loss", "final_test_accuracy", "staleness_mean", "missed_updates_mean"])
    if not found:
        sr.fail(f"{root}: no sweep folder (with sweep.csv) inside")


if __name__ == "__main__":
    main()
