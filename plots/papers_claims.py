#!/usr/bin/python3
"""The claim table of scenarios/papers/README.md: every claim of the three papers, the paper's
number, ours, the spread over seeds, a verdict computed from the numbers, and the command.

Usage:
  plots/papers_claims.py record DIR --command CMD [--out FILE]
      reads the sweeps tools/reproduce-papers wrote to DIR and writes the claims' raw numbers
      (every seed's value) as JSON to FILE (default DIR/claims.json)
  plots/papers_claims.py table CLAIMS.json
      prints the markdown table (means, spreads and verdicts recomputed from the raw numbers)
  plots/papers_claims.py readme CLAIMS.json README.md
      replaces README.md's block between the markers <!-- claims:begin --> and <!-- claims:end -->
  plots/papers_claims.py check CLAIMS.json README.md
      exits 1 (naming the first differing line) when README.md's block is not the table of CLAIMS.json

Verdicts (the rule, stated once): "A faster than B" reproduces when A's mean time to target is
below B's by more than two standard errors of the difference (a seed that never reached the
target counts as the run's length), is contradicted when A's mean is not below B's, and is
inconclusive in between (the claimed direction, within the noise of the seeds); "much faster"
also needs a ratio of mean times of at most 0.8; "A lower/higher than B" likewise on final
values; "A not worse than B" reproduces unless A is worse by more than two standard errors;
claims over a set of points (every lambda, every s) reproduce when each point does and are
contradicted when one point is; with one seed the standard error is 0, except for the paper-length
FASGD runs (--full) where only seed 1 ran: their seed-to-seed noise is taken from the 4,000-update
runs' 5 seeds at the same lambda (the largest of them where that lambda has none), a one-seed
difference having sd sqrt(sd_a^2 + sd_b^2), and a one-seed B-FASGD row is inconclusive where the
4,000-update runs' accuracy sd is above half the one-point tolerance; a contradicted
claim whose cause a test demonstrates is marked "explained" (the cause is named in the claim's
note); a claim without a run is "untested". Exit 2 on bad usage or input.
"""

import json
import math
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
import stalesim_runs as sr  # noqa: E402

BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"


# ---- statistics ---------------------------------------------------------------------------------

def mean(xs):
    return sum(xs) / len(xs) if xs else None


def sd(xs):
    if len(xs) < 2:
        return 0.0
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def se_diff(a, b):
    return math.sqrt(sd(a) ** 2 / len(a) + sd(b) ** 2 / len(b))


def spread(xs, unit=""):
    if len(xs) < 2:
        return f"{len(xs)} seed"
    return f"sd {sd(xs):.3g}{unit}, {min(xs):.4g}-{max(xs):.4g} ({len(xs)} seeds)"


# ---- recording: raw numbers from the sweeps -----------------------------------------------------

def rows_by(sweep, *cols):
    out = {}
    for r in sweep.rows:
        if sweep.ok(r):
            out.setdefault(tuple(sweep.cell(r, c) for c in cols), []).append(r)
    return out


def num(sweep, row, col):
    return sr.number(sweep.cell(row, col))


def open_sweep(root, name):
    path = os.path.join(root, name)
    return sr.Sweep(path) if os.path.isfile(os.path.join(path, "sweep.csv")) else None


def dssp_raw(root, cluster):
    """{label: {"time": [...], "acc": [...], "lr": str, "length": s}} of the final (test-set) sweep."""
    sweep = open_sweep(root, f"dssp-{cluster}")
    if sweep is None:
        return None
    out = {}
    for (kind, s), rows in rows_by(sweep, "policy.type", "policy.staleness").items():
        label = kind + (f"({s})" if kind in ("ssp", "dssp") else "")
        length = num(sweep, rows[0], "stop.virtual_time_s")
        times = [num(sweep, r, "time_to_target_s") for r in rows]
        out[label] = {
            "time": [t if sr.finite(t) else None for t in times],
            "acc": [num(sweep, r, "final_test_accuracy") for r in rows],
            "lr": sweep.cell(rows[0], "optimizer.lr"),
            "length": length,
            "hash": [sweep.cell(r, "result_hash") for r in rows],
            "gap": [sweep.summary(r).get("max_clock_gap") for r in rows],
        }
    return out


def metric_series(sweep, row, metric):
    table = sr.read_csv(os.path.join(sweep.dir, row["folder"], "metrics.csv"))
    return [(sr.number(x["virtual_time_s"]), sr.number(x["server_version"]), sr.number(x.get(metric))) for x in table]


def essp_raw(root, name):
    """{s: {policy: {"stale": [...], "early": [...], "v10k": [...], "updates": [...]}}, "metric": name}."""
    sweep = open_sweep(root, name)
    if sweep is None:
        return None
    rows = [r for r in sweep.rows if sweep.ok(r)]
    if not rows:
        return None
    final = sweep.summary(rows[0]).get("final", {})
    metric = next((k for k in ("test_rmse", "loglik_per_token") if k in final), "test_loss")
    out, targets, lda = {}, set(), []
    for r in rows:
        s, kind = sweep.cell(r, "policy.staleness"), sweep.cell(r, "policy.type")
        series = [v for v in metric_series(sweep, r, metric) if sr.finite(v[2])]
        t_end = num(sweep, r, "virtual_time_s")
        early = next((v[2] for v in series if v[0] >= t_end / 6), None)
        v10k = next((v[2] for v in series if v[1] >= 10000), None)
        slot = out.setdefault(s, {}).setdefault(kind, {"stale": [], "early": [], "v10k": [], "updates": [],
                                                        "t_target": [], "v_target": []})
        if metric == "test_rmse":  # time and updates to an RMSE of 1.5 x the data's noise; never: the run's
            target = 1.5 * num(sweep, r, "data.ratings.noise")  # length and its updates (censored)
            hit = next((v for v in series if v[2] <= target), None)
            slot["t_target"].append(hit[0] if hit else t_end)
            slot["v_target"].append(hit[1] if hit else num(sweep, r, "server_updates"))
            targets.add(target)
        elif metric == "loglik_per_token" and series:
            lda.append((series, slot))
        slot["stale"].append(num(sweep, r, "staleness_mean"))
        slot["updates"].append(num(sweep, r, "server_updates"))
        slot["lr"] = sweep.cell(r, "optimizer.lr")
        slot["early"].append(early)
        slot["v10k"].append(v10k)
    loglik_target = None
    if lda:  # per second: the virtual time to a level below every run's plateau, 90% of the way from
        # the first row's value to the lowest final value of all runs (the plateaus differ by seed)
        start, floor = min(series[0][2] for series, _ in lda), min(series[-1][2] for series, _ in lda)
        loglik_target = start + 0.9 * (floor - start)
        for series, slot in lda:
            slot["t_target"].append(next(v[0] for v in series if v[2] >= loglik_target))
    return {"metric": metric, "higher_is_better": metric == "loglik_per_token", "by_s": out,
            "rmse_target": min(targets) if targets else None, "loglik_target": loglik_target}


def vap_raw(root):
    """{v: {"early": [...], "updates": [...], "holds": [...]}, "metric": name} of the VAP sweep on MF."""
    sweep = open_sweep(root, "essp-mf-vap")
    if sweep is None:
        return None
    out = {}
    for r in sweep.rows:
        if not sweep.ok(r):
            continue
        series = [v for v in metric_series(sweep, r, "test_rmse") if sr.finite(v[2])]
        t_end = num(sweep, r, "virtual_time_s")
        target = 1.5 * num(sweep, r, "data.ratings.noise")
        slot = out.setdefault(sweep.cell(r, "policy.value_bound"), {"early": [], "updates": [], "holds": [],
                                                                      "t_target": []})
        hit = next((v for v in series if v[2] <= target), None)
        slot["t_target"].append(hit[0] if hit else t_end)
        slot["lr"] = sweep.cell(r, "optimizer.lr")
        slot["early"].append(next((v[2] for v in series if v[0] >= t_end / 6), None))
        slot["updates"].append(num(sweep, r, "server_updates"))
        slot["lr"] = sweep.cell(r, "optimizer.lr")
        slot["holds"].append(sweep.summary(r).get("policy", {}).get("holds"))
    return {"metric": "test_rmse", "by_v": out} if out else None


def rule_key(rule, variant):
    """A learning rule's name in the records: sasgd, or fasgd-paper / fasgd-fred by its form."""
    return rule if rule == "sasgd" else f"{rule}-{variant}"


def rate_grids(sweep, *by):
    """{(values of the `by` columns): {rule key: slot}}: each slot's "grid" maps a learning rate to
    its per-seed held-out losses, and pick_best sets the rate with the lowest mean."""
    out = {}
    for (*group, rule, variant, lr), rows in rows_by(sweep, *by, "optimizer.rule", "optimizer.variant",
                                                     "optimizer.lr").items():
        slot = out.setdefault(tuple(group), {}).setdefault(rule_key(rule, variant), {"grid": {}})
        slot["grid"][lr] = [num(sweep, r, "final_test_loss") for r in rows]
    for rules in out.values():
        for slot in rules.values():
            pick_best(slot)
    return out


def fasgd_raw(root):
    """Per lambda and rule (and FASGD form): every rate's per-seed held-out losses, and the rate
    with the lowest mean (a rate where a seed diverged is never picked)."""
    sweep = open_sweep(root, "fasgd-lambda")
    if sweep is None:
        return None
    return {str(lam): rules for (lam,), rules in rate_grids(sweep, "cluster.workers.0.count").items()}


def pick_best(slot):
    """Sets slot's loss and lr to its grid's rate with the lowest mean loss, where no seed diverged."""
    ok = {lr: xs for lr, xs in slot["grid"].items() if xs and all(sr.finite(x) for x in xs)}
    if ok:
        lr = min(ok, key=lambda k: mean(ok[k]))
        slot.update(loss=ok[lr], lr=lr)


LONG_LAMBDAS = ("250", "1000", "10000")


def fasgd_long_raw(root):
    """--full: per lambda, "rules": per rule and form, every rate's held-out loss after 100,000
    updates (seed 1), the rate with the lowest, and its losses at seeds 2 and 3 where they ran;
    "points": the grid's finished points and all its points (an interrupted widening of the grid
    leaves some unfinished). None where a lambda's grid has not run."""
    out = {}
    for lam in LONG_LAMBDAS:
        sweep = open_sweep(root, f"fasgd-long-{lam}")
        if sweep is None:
            return None
        rules = rate_grids(sweep).get((), {})
        seeds = open_sweep(root, f"fasgd-long-{lam}-seeds")  # more seeds at the picked rates
        if seeds is not None and all(seeds.ok(r) for r in seeds.rows):
            for (rule, variant, lr), rows in rows_by(seeds, "optimizer.rule", "optimizer.variant",
                                                     "optimizer.lr").items():
                slot = rules.get(rule_key(rule, variant), {})
                if slot.get("lr") == lr:
                    slot["loss"] = slot["loss"] + [num(seeds, r, "final_test_loss") for r in rows]
        out[lam] = {"rules": rules, "points": [sum(sweep.ok(r) for r in sweep.rows), len(sweep.rows)]}
    return out


def mulambda_raw(root):
    out = {}
    for rule in ("sasgd", "fasgd"):
        sweep = open_sweep(root, f"fasgd-mu-lambda-{rule}")
        if sweep is None:
            return None
        for (mu, lam), rows in rows_by(sweep, "optimizer.batch_size", "cluster.workers.0.count").items():
            out.setdefault(f"({mu}, {lam})", {})[rule] = [num(sweep, r, "final_test_loss") for r in rows]
    return out


def bfasgd_raw(root, name="bfasgd"):
    """Per (c_fetch, c_push): every seed's bytes fetched and pushed and final accuracy."""
    sweep = open_sweep(root, name)
    if sweep is None:
        return None
    out = []
    for rows in rows_by(sweep, "optimizer.c_fetch", "optimizer.c_push").values():
        r0 = rows[0]
        out.append({"c_fetch": num(sweep, r0, "optimizer.c_fetch"), "c_push": num(sweep, r0, "optimizer.c_push"),
                    "pull": [num(sweep, r, "bytes_pull") for r in rows],
                    "push": [num(sweep, r, "bytes_push") for r in rows],
                    "acc": [num(sweep, r, "final_test_accuracy") for r in rows]})
    return out


def record(root, command):
    return {
        "command": command,
        "dssp": {c: dssp_raw(root, c) for c in ("hetero", "homo")},
        "fasgd_lambda": fasgd_raw(root),
        "fasgd_mu_lambda": mulambda_raw(root),
        "bfasgd": bfasgd_raw(root),
        "fasgd_long": fasgd_long_raw(root),
        "bfasgd_long": bfasgd_raw(root, "bfasgd-long"),
        "essp": {w: essp_raw(root, f"essp-{w}") for w in ("mf", "mf-paperlike", "lda")},
        "vap": vap_raw(root),
    }


# ---- verdicts -----------------------------------------------------------------------------------

def censored(p):
    return [t if t is not None else p["length"] for t in p["time"]]


def direction(d, se):
    """A difference d claimed positive: beyond two standard errors, the wrong way, or within noise."""
    return "reproduced" if d > 2 * se else ("contradicted" if d <= 0 else "inconclusive")


def faster(a, b, max_ratio=None):
    """(verdict, ours, spread) for 'a reaches the target faster than b' ('much faster': the ratio of
    mean times must also be at most max_ratio)."""
    ta, tb = censored(a), censored(b)
    ma, mb = mean(ta), mean(tb)
    never = lambda p: sum(t is None for t in p["time"])  # noqa: E731
    verdict = direction(mb - ma, se_diff(ta, tb))
    if max_ratio is not None and ma / mb > max_ratio:
        verdict = "contradicted"
    ours = (f"{ma:.1f} s vs {mb:.1f} s (ratio {ma / mb:.2f}; never reached: {never(a)} and {never(b)} of "
            f"{len(ta)}; lr {a['lr']} vs {b['lr']})")
    return verdict, ours, f"sd {sd(ta):.3g} s and {sd(tb):.3g} s ({len(ta)} seeds)"


def fnum(x):
    """4 decimals, or whole numbers from 100 up (counts of updates)."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.4f}"


def lower(xa, xb, what, higher=False):
    """(verdict, ours, spread) for 'xa lower than xb' (or higher)."""
    ma, mb = mean(xa), mean(xb)
    d = (ma - mb) if higher else (mb - ma)
    return direction(d, se_diff(xa, xb)), f"{what} {fnum(ma)} vs {fnum(mb)}", \
        f"sd {sd(xa):.2g} and {sd(xb):.2g} ({len(xa)} seeds)"


def not_worse(xa, xb, what, higher=True):
    """'xa not worse than xb': contradicted only when worse by more than two standard errors."""
    ma, mb = mean(xa), mean(xb)
    worse = (mb - ma) if higher else (ma - mb)
    ok = worse <= 2 * se_diff(xa, xb)
    return ("reproduced" if ok else "contradicted"), f"{what} {fnum(ma)} vs {fnum(mb)}", \
        f"sd {sd(xa):.2g} and {sd(xb):.2g} ({len(xa)} seeds)"


UNTESTED = ("untested", "not run", "")


def with_lr(result, d, a, b):
    verdict, ours, spread_ = result
    return verdict, f"{ours} (lr {d[a]['lr']} vs {d[b]['lr']})", spread_


def dssp_claims(raw):
    cmd = "tools/reproduce-papers --only dssp"
    het, hom = (raw.get("dssp") or {}).get("hetero"), (raw.get("dssp") or {}).get("homo")
    need = lambda d, *k: d is not None and all(x in d for x in k)  # noqa: E731
    out = []

    def add(claim, paper, result, note=""):
        out.append({"paper": "DSSP", "claim": claim, "paper_number": paper, "result": result,
                    "command": cmd, "note": note})

    equiv = ("explained: under a steady speed gap bounded DSSP(3, 12) applies the gradients of SSP(15) "
             "(tests/test_dssp_equivalence.cpp)")
    add("Heterogeneous cluster: DSSP(3, 12) reaches the target much faster than SSP(15) (ratio at most 0.8)",
        "3046.3 s vs 7255.6 s (ratio 0.42)",
        faster(het["dssp(3)"], het["ssp(15)"], 0.8) if need(het, "dssp(3)", "ssp(15)")
        else UNTESTED, equiv)
    add("Heterogeneous cluster: DSSP reaches the target faster than SSP(3)", "faster (qualitative)",
        faster(het["dssp(3)"], het["ssp(3)"]) if need(het, "dssp(3)", "ssp(3)") else UNTESTED)
    add("Heterogeneous cluster: DSSP much faster than BSP (ratio at most 0.8)", "much faster (qualitative)",
        faster(het["dssp(3)"], het["bsp"], 0.8) if need(het, "dssp(3)", "bsp") else UNTESTED)
    add("ASP converges fast but to a lower accuracy than BSP", "lower final accuracy (qualitative)",
        with_lr(lower(het["asp"]["acc"], het["bsp"]["acc"], "final accuracy"), het, "asp", "bsp")
        if need(het, "asp", "bsp") else UNTESTED)
    add("DSSP's final accuracy is not below SSP(15)'s", "comparable or higher (qualitative)",
        with_lr(not_worse(het["dssp(3)"]["acc"], het["ssp(15)"]["acc"], "final accuracy"), het, "dssp(3)", "ssp(15)")
        if need(het, "dssp(3)", "ssp(15)") else UNTESTED)
    same = need(hom, "dssp(3)", "ssp(15)") and hom["dssp(3)"].get("hash") and \
        hom["dssp(3)"]["hash"] == hom["ssp(15)"].get("hash")
    gaps = [g for g in (hom or {}).get("dssp(3)", {}).get("gap", []) if g is not None]
    add("Homogeneous cluster: DSSP a little faster than SSP(15)", "a little better (qualitative)",
        faster(hom["dssp(3)"], hom["ssp(15)"]) if need(hom, "dssp(3)", "ssp(15)") else UNTESTED,
        f"explained: on identical GPUs the clock gap stays below s_L = 3 (at most {max(gaps)}), so no "
        "bound ever binds and DSSP(3, 12) and SSP(15) give the same result hash in every seed"
        if same and gaps and max(gaps) < 3 else "")
    return out


def combine(verdicts):
    """A claim over several points: contradicted when one point is, reproduced when all are."""
    if "contradicted" in verdicts:
        return "contradicted"
    return "reproduced" if all(v == "reproduced" for v in verdicts) else "inconclusive"


def seeds_of(xs):
    return xs if isinstance(xs, list) else [xs]  # a record from before seeds: one number


def fasgd_claims(raw):
    out = []
    lam = raw.get("fasgd_lambda")
    cmd = "tools/reproduce-papers --only fasgd"

    def add(claim, paper, result, note=""):
        out.append({"paper": "FASGD", "claim": claim, "paper_number": paper, "result": result,
                    "command": cmd, "note": note})

    if lam and all("loss" in v.get("sasgd", {}) and "loss" in v.get("fasgd-fred", {}) for v in lam.values()):
        keys = sorted(lam, key=float)
        sas = {k: seeds_of(lam[k]["sasgd"]["loss"]) for k in keys}
        fred = {k: seeds_of(lam[k]["fasgd-fred"]["loss"]) for k in keys}
        paper = {k: seeds_of(lam[k].get("fasgd-paper", {}).get("loss", [math.nan])) for k in keys}
        margins = [mean(sas[k]) - mean(fred[k]) for k in keys]
        ses = [se_diff(sas[k], fred[k]) for k in keys]
        n = len(sas[keys[0]])
        ours = "; ".join(f"lambda {k}: SASGD {mean(sas[k]):.4f} (lr {lam[k]['sasgd']['lr']}) vs FASGD "
                         f"{mean(fred[k]):.4f} (lr {lam[k]['fasgd-fred']['lr']})" for k in keys)
        spread_ = "; ".join(f"sd {sd(sas[k]):.2g} and {sd(fred[k]):.2g}" for k in keys) + \
            f" ({n} seed{'s' if n > 1 else ''}), each rule's rate the best mean of its grid"
        add("FASGD (the released code's form) ends with a lower held-out loss than SASGD at every lambda",
            "lower at every lambda (figure)",
            (combine([direction(m, se) for m, se in zip(margins, ses)]), ours, spread_),
            "the form of the paper's text: margins " +
            ", ".join(f"{mean(sas[k]) - mean(paper[k]):+.3f}" for k in keys))
        steps = [direction(b - a, math.sqrt(sa ** 2 + sb ** 2))
                 for (a, sa), (b, sb) in zip(zip(margins, ses), list(zip(margins, ses))[1:])]
        add("FASGD's margin over SASGD grows with lambda", "grows (figure)",
            (combine(steps), "margins " + ", ".join(f"{m:+.4f}" for m in margins) + " at lambda " +
             ", ".join(keys), "standard errors " + ", ".join(f"{se:.2g}" for se in ses) + f" ({n} seeds)"),
            "4,000 updates; the paper ran 100,000+ (tools/reproduce-papers --full)")
    else:
        add("FASGD (the released code's form) ends with a lower held-out loss than SASGD at every lambda",
            "lower at every lambda (figure)", UNTESTED)
        add("FASGD's margin over SASGD grows with lambda", "grows (figure)", UNTESTED)
    ml = raw.get("fasgd_mu_lambda")
    if ml and all("sasgd" in v and "fasgd" in v for v in ml.values()):
        order = sorted(ml, key=lambda k: int(k.strip("()").split(",")[0]))
        sas = {k: seeds_of(ml[k]["sasgd"]) for k in order}
        fas = {k: seeds_of(ml[k]["fasgd"]) for k in order}
        gaps = {k: mean(sas[k]) - mean(fas[k]) for k in order}
        ahead = combine([direction(gaps[k], se_diff(sas[k], fas[k])) for k in order])
        most_where_small = all(gaps[a] >= gaps[b] for a, b in zip(order, order[1:]))
        verdict = "contradicted" if ahead == "contradicted" or not most_where_small else ahead
        n = len(sas[order[0]])
        add("mu x lambda = 128: FASGD ahead at every point, most where mu is small", "ahead everywhere (table)",
            (verdict, "; ".join(f"{k}: SASGD {mean(sas[k]):.4f} vs FASGD {mean(fas[k]):.4f}" for k in order),
             "; ".join(f"sd {sd(sas[k]):.2g} and {sd(fas[k]):.2g}" for k in order) +
             f" ({n} seed{'s' if n > 1 else ''})"))
    else:
        add("mu x lambda = 128: FASGD ahead at every point, most where mu is small", "ahead everywhere (table)",
            UNTESTED)
    bf = raw.get("bfasgd")
    base = no_cut(bf)
    if base:
        add("B-FASGD cuts fetch traffic about 10x with little loss of accuracy", "about 10x",
            bfasgd_cut(bf, base))
    else:
        add("B-FASGD cuts fetch traffic about 10x with little loss of accuracy", "about 10x", UNTESTED)
    return out + fasgd_long_claims(raw)


def no_cut(bf):
    """The B-FASGD point that skips nothing (c_fetch 0, c_push 0 or unset), or None."""
    return next((p for p in bf or [] if p["c_fetch"] == 0 and (p["c_push"] or 0) == 0), None)


def bfasgd_cut(bf, base, short_base=None):
    """(verdict, ours, spread) for 'B-FASGD cuts fetches about 10x within a point of accuracy';
    short_base: the 4,000-update runs' no-cut point, whose spread stands in where one seed ran."""
    acc = lambda p: mean(seeds_of(p["acc"]))  # noqa: E731
    pull = lambda p: mean(seeds_of(p["pull"]))  # noqa: E731
    push = lambda p: mean(seeds_of(p["push"]))  # noqa: E731
    within = [p for p in bf if acc(base) - acc(p) <= 0.01 and pull(p) > 0]
    best = max(within, key=lambda p: pull(base) / pull(p))
    cut = pull(base) / pull(best)
    total = (pull(base) + push(base)) / (pull(best) + push(best))
    n = len(seeds_of(base["acc"]))
    if n > 1:
        spread_ = f"accuracy sd {sd(seeds_of(base['acc'])):.2g} (no cut) and {sd(seeds_of(best['acc'])):.2g} ({n} seeds)"
    else:
        spread_ = f"1 seed: no spread (accuracy with no cut {acc(base):.4f}, at the cut {acc(best):.4f})"
        if short_base:
            spread_ += (f"; at 4,000 updates the no-cut accuracy's sd over {len(seeds_of(short_base['acc']))} "
                        f"seeds was {sd(seeds_of(short_base['acc'])):.2g}")
    verdict = "reproduced" if cut >= 5 else "contradicted"
    if n == 1 and short_base and 2 * sd(seeds_of(short_base["acc"])) > 0.01:
        verdict = "inconclusive"  # one seed cannot tell a point of accuracy from the seeds' noise
    return (verdict, f"largest fetch cut within 1 point of mean accuracy: {cut:.2f}x (total {total:.2f}x) at c_fetch "
            f"{best['c_fetch']:g}, c_push {best['c_push']:g}", spread_)


def fasgd_long_claims(raw):
    """The FASGD claims again at the paper's length (tools/reproduce-papers --full): each rule's
    rate picked on seed 1, then seeds 2 and 3 at it; where those have not run, one seed whose noise
    is taken from the 4,000-update runs' seeds (the module's docstring)."""
    out = []
    cmd = "tools/reproduce-papers --full --only fasgd"

    def add(claim, paper, result, note=""):
        out.append({"paper": "FASGD", "claim": claim, "paper_number": paper, "result": result,
                    "command": cmd, "note": note})

    long_ = {k: v["rules"] for k, v in (raw.get("fasgd_long") or {}).items()}
    first = "At 100,000 updates: FASGD (the released code's form) ends with a lower held-out loss than SASGD at " \
        "every lambda"
    grows = "At 100,000 updates: FASGD's margin over SASGD grows with lambda"
    if long_ and all("loss" in long_[k].get("sasgd", {}) and "loss" in long_[k].get("fasgd-fred", {})
                     for k in LONG_LAMBDAS):
        short = raw.get("fasgd_lambda") or {}
        proxy = {k: math.sqrt(sd(seeds_of(short[k]["sasgd"]["loss"])) ** 2 +
                              sd(seeds_of(short[k]["fasgd-fred"]["loss"])) ** 2)
                 for k in LONG_LAMBDAS if k in short and "loss" in short[k].get("sasgd", {})
                 and "loss" in short[k].get("fasgd-fred", {})}
        worst = max(proxy.values()) if proxy else 0.0
        sas = {k: seeds_of(long_[k]["sasgd"]["loss"]) for k in LONG_LAMBDAS}
        fred = {k: seeds_of(long_[k]["fasgd-fred"]["loss"]) for k in LONG_LAMBDAS}
        se, spreads = {}, []
        for k in LONG_LAMBDAS:  # the standard error of each lambda's margin, and what it rests on
            n = min(len(sas[k]), len(fred[k]))
            if n > 1:
                se[k] = se_diff(sas[k], fred[k])
                spreads.append(f"lambda {k}: sd {sd(sas[k]):.2g} and {sd(fred[k]):.2g} ({n} seeds)")
            else:
                se[k] = proxy.get(k, worst)
                spreads.append(f"lambda {k}: 1 seed, noise sd {se[k]:.2g} (the 4,000-update runs' seeds)")
        margins = [mean(sas[k]) - mean(fred[k]) for k in LONG_LAMBDAS]
        for k in LONG_LAMBDAS:
            done, points = raw["fasgd_long"][k]["points"]
            if done < points:
                spreads.append(f"lambda {k}: {done} of {points} grid points finished")

        def lr(k, rule):  # the picked rate, flagged where it is the smallest or largest of its grid
            slot = long_[k][rule]
            grid = sorted(slot["grid"], key=float)
            return f"lr {slot['lr']}" + (", grid edge" if slot["lr"] in (grid[0], grid[-1]) else "")

        ours = "; ".join(f"lambda {k}: SASGD {mean(sas[k]):.4f} ({lr(k, 'sasgd')}) vs FASGD {mean(fred[k]):.4f} "
                         f"({lr(k, 'fasgd-fred')})" for k in LONG_LAMBDAS)
        paper_form = ", ".join(
            f"{sas[k][0] - seeds_of(long_[k]['fasgd-paper']['loss'])[0]:+.3f} ({lr(k, 'fasgd-paper')})"
            if "loss" in long_[k].get("fasgd-paper", {}) else "n/a" for k in LONG_LAMBDAS)
        add(first, "lower at every lambda (figure)",
            (combine([direction(m, se[k]) for m, k in zip(margins, LONG_LAMBDAS)]), ours,
             "; ".join(spreads) + "; each rule's rate the best of its grid on seed 1"),
            "the form of the paper's text, seed 1: margins " + paper_form)
        steps = [direction(margins[i + 1] - margins[i], math.sqrt(se[a] ** 2 + se[b] ** 2))
                 for i, (a, b) in enumerate(zip(LONG_LAMBDAS, LONG_LAMBDAS[1:]))]
        add(grows, "grows (figure)",
            (combine(steps), "margins " + ", ".join(f"{m:+.4f}" for m in margins) + " at lambda " +
             ", ".join(LONG_LAMBDAS), "standard errors " + ", ".join(f"{se[k]:.2g}" for k in LONG_LAMBDAS)))
    else:
        add(first, "lower at every lambda (figure)", UNTESTED)
        add(grows, "grows (figure)", UNTESTED)
    bf = raw.get("bfasgd_long")
    base = no_cut(bf)
    claim = "At 100,000 updates, with fetch and push cuts: B-FASGD cuts fetch traffic about 10x with little loss " \
        "of accuracy"
    add(claim, "about 10x", bfasgd_cut(bf, base, no_cut(raw.get("bfasgd"))) if base else UNTESTED)
    return out


def essp_claims(raw):
    out = []
    ess = raw.get("essp") or {}

    def add(claim, paper, result, w, note=""):
        out.append({"paper": "ESSP", "claim": claim, "paper_number": paper, "result": result,
                    "command": f"tools/reproduce-papers --only essp (essp-{w})", "note": note})

    def every_s(w, field, what, better_lower=True, at_least_as_good=False):
        d = ess.get(w)
        if not d:
            return UNTESTED
        verdicts, parts, spreads = [], [], []
        for s in sorted(d["by_s"], key=int):
            p = d["by_s"][s]
            if "ssp" not in p or "essp" not in p:
                continue
            a = [x for x in p["essp"][field] if x is not None]
            b = [x for x in p["ssp"][field] if x is not None]
            if not a or not b:
                return UNTESTED
            higher = d["higher_is_better"] if field in ("early", "v10k") else not better_lower
            if at_least_as_good:
                v, o, sp = not_worse(a, b, f"s={s}:", higher=higher)
            else:
                v, o, sp = lower(a, b, f"s={s}:", higher=higher)
            verdicts.append(v)
            lrs = [p[k].get("lr") for k in ("essp", "ssp")]
            tags = [f", lr {x}" if x and not d["higher_is_better"] else "" for x in lrs]  # LDA: no step size
            parts.append(o.replace(" vs ", f" (ESSP{tags[0]}) vs ") + f" (SSP{tags[1]})")
            spreads.append(f"s={s}: {sp}")
        if not verdicts:
            return UNTESTED
        v = ("reproduced" if all(x == "reproduced" for x in verdicts) else
             "contradicted" if "contradicted" in verdicts else "inconclusive")
        return v, f"{what}: " + "; ".join(parts), "; ".join(spreads)

    target = (ess.get("mf") or {}).get("rmse_target")
    add("MF: ESSP converges faster per second than SSP", "faster (figure)",
        every_s("mf", "t_target", f"virtual seconds to a test RMSE of {target:g} (1.5 x the noise)")
        if target else UNTESTED, "mf")
    add("MF: ESSP's reads are fresher than SSP's (mixed GPUs, 30% jitter)", "lower staleness (histograms)",
        every_s("mf", "stale", "mean read staleness (clocks)"), "mf")
    add("MF, paper-like cluster (identical GPUs, 20 ms clocks, 3% jitter): ESSP's reads are fresher than SSP's",
        "lower staleness (histograms)", every_s("mf-paperlike", "stale", "mean read staleness (clocks)"),
        "mf-paperlike")
    add("MF: ESSP converges at least as well per iteration", "better per iteration (figure)",
        every_s("mf", "v_target", f"updates to a test RMSE of {target:g}", at_least_as_good=True)
        if target else UNTESTED, "mf")
    lda_target = (ess.get("lda") or {}).get("loglik_target")
    add("LDA: ESSP converges faster per second than SSP", "faster (figure)",
        every_s("lda", "t_target", f"virtual seconds to a log-likelihood per token of {lda_target:.4f} (90% "
                "of the way from the start to the lowest final value of all runs, below every plateau)")
        if lda_target is not None else every_s("lda", "early", "log-likelihood per token at a sixth of the run"),
        "lda")
    add("VAP (value-bounded) guarantees convergence but is costly to run: at its best value bound it "
        "reaches the target RMSE later than ESSP at its best s", "costly (qualitative)", vap_vs_essp(raw), "mf-vap",
        "an idealized VAP: the simulator knows for free which updates each worker has received; a real "
        "VAP also pays for that bookkeeping")
    return out


def vap_vs_essp(raw):
    """'VAP converges more slowly per second than ESSP': each at its best parameter (the value bound
    v, the staleness s) by the mean time to a test RMSE of 1.5 x the noise, over the same seeds."""
    vap, mf = raw.get("vap"), (raw.get("essp") or {}).get("mf")
    if not vap or not mf:
        return UNTESTED
    complete = lambda xs: xs and all(x is not None for x in xs)  # noqa: E731
    field = "t_target"
    vs = {v: d for v, d in vap["by_v"].items() if complete(d.get(field))}
    ss = {s: p["essp"] for s, p in mf["by_s"].items() if "essp" in p and complete(p["essp"].get(field))}
    if not vs or not ss:
        return UNTESTED
    v = min(vs, key=lambda k: mean(vs[k][field]))
    s = min(ss, key=lambda k: mean(ss[k][field]))
    verdict, ours, spread_ = lower(ss[s][field], vs[v][field],
                                   f"virtual seconds to a test RMSE of {mf['rmse_target']:g}:")
    holds = [h for h in vs[v]["holds"] if h is not None]
    lr = lambda d: f", lr {d['lr']}" if d.get("lr") else ""  # noqa: E731
    ours = (ours.replace(" vs ", f" (ESSP, best s={s}{lr(ss[s])}) vs ") + f" (VAP, best v={v}{lr(vs[v])}); VAP(v={v}) "
            f"{mean(vs[v]['updates']):.0f} updates, {mean(holds):.0f} holds a run; ESSP(s={s}) "
            f"{mean(ss[s]['updates']):.0f} updates" if holds and ss[s].get("updates") else ours)
    return verdict, ours, spread_


def claims(raw):
    rows = dssp_claims(raw) + fasgd_claims(raw) + essp_claims(raw)
    for r in rows:
        if r["result"][0] == "contradicted" and r["note"].startswith("explained:"):
            r["result"] = ("explained",) + tuple(r["result"][1:])
    return rows


def table(raw):
    lines = [BEGIN,
             f"Generated by `plots/papers_claims.py readme` from `{raw.get('source', 'claims.json')}` "
             f"(the run `{raw['command']}`); `ctest -R papers_claims` checks this block against it.",
             "",
             "| # | paper | claim | paper's number | ours | spread over seeds | verdict | command |",
             "|---|---|---|---|---|---|---|---|"]
    for i, c in enumerate(claims(raw), 1):
        verdict, ours, spread_ = c["result"]
        note = f" ({c['note']})" if c["note"] and verdict != "untested" else ""
        lines.append(f"| {i} | {c['paper']} | {c['claim']} | {c['paper_number']} | {ours}{note} | {spread_} | "
                     f"**{verdict}** | `{c['command']}` |")
    lines.append(END)
    return "\n".join(lines)


def block_of(text, path):
    if BEGIN not in text or END not in text:
        sr.fail(f"{path}: no {BEGIN} ... {END} block")
    a = text.index(BEGIN)
    b = text.index(END) + len(END)
    return a, b


def load(path):
    try:
        with open(path) as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        print(f"papers_claims.py: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    raw["source"] = os.path.basename(path)
    return raw


def main():
    a = sys.argv[1:]
    if not a or a[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if a else 2)
    if a[0] == "record" and len(a) >= 4 and a[2] == "--command":
        root, command = a[1], a[3]
        dest = a[5] if len(a) == 6 and a[4] == "--out" else os.path.join(root, "claims.json")
        with open(dest, "w") as f:
            json.dump(record(root, command), f, indent=1, sort_keys=True)
            f.write("\n")
    elif a[0] == "table" and len(a) == 2:
        print(table(load(a[1])))
    elif a[0] in ("readme", "check") and len(a) == 3:
        raw, readme = load(a[1]), a[2]
        text = open(readme).read()
        i, j = block_of(text, readme)
        want = table(raw)
        if a[0] == "readme":
            with open(readme, "w") as f:
                f.write(text[:i] + want + text[j:])
        elif text[i:j] != want:
            have = text[i:j].splitlines()
            for n, (x, y) in enumerate(zip(have, want.splitlines())):
                if x != y:
                    print(f"papers_claims.py: {readme}: claim table line {n + 1} differs from {a[1]}:\n"
                          f"  README: {x}\n  run:    {y}", file=sys.stderr)
                    break
            else:
                print(f"papers_claims.py: {readme}: claim table has {len(have)} lines, the run's {len(want.splitlines())}",
                      file=sys.stderr)
            sys.exit(1)
    else:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
