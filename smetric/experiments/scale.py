"""fig18 experiment: does balancing only each session's first request keep a production-size cluster balanced?

SMETRIC and the baselines on the 30B testbed at N instances (32 ... 1,024) with the **per-instance load held
fixed** (requests/min/instance; the workload's session-start rate grows with N), at the knee and past it,
with one router and with K router replicas (``RouterInfo(router_replicas=K)``, uniform assignment: each
replica sees only its own dispatches and keeps its own counters and policy state). Per run: the summary
metrics, the goodput over the offered window (:func:`offered_goodput`) and the imbalance diagnostics of
:meth:`~smetric.cluster.result.SimResult.diagnostics` (max/mean queued prefill over time, the hottest
instance's share of the prefill work).

**Comparator** (:func:`scale_runs`): per (load, replicas) cell, the baselines alone run at the smallest N on
``screening_seeds`` (disjoint from the comparison seeds); the one with the highest mean offered goodput
(:func:`~smetric.experiments.screening.top_by_name`) is the cell's comparator, held at
every N, so a change of SMETRIC's gain along N is a change against one router. Every baseline's numbers at
every N (one router) are in :func:`cell_gains`.

**Goodput** here is :func:`offered_goodput`: SLO-meeting tokens per second of the measured *arrival* window.
The package's ``goodput_tps`` divides by first arrival -> last finish, and the last finish is the slowest of
all the window's requests, a maximum that grows with N (more requests), and on a short window the drain
tail is a large part of the span: in the committed run SMETRIC's ``goodput_tps`` per instance falls from 770
to 416 tok/s from 32 to 1,024 instances (knee, one router) while its offered goodput stays at 5,378 -> 5,385.
``goodput_tps`` stays in the CSV.

**The rules, stated before the full run** (:data:`RULES`; per (load, replicas) cell, the largest N against the
smallest, per seed, 95 % t-interval over the seeds, judged as bounds by :func:`~smetric.verdicts.point_table`,
Holm over a rule's cells):

* ``scale_retention``: SMETRIC's goodput per instance at the largest N retains >= 95 % of its value at the
  smallest (per seed ``g_max / g_min - 1``; lower bound -0.05);
* ``scale_gain_held``: SMETRIC's gain over the comparator at the largest N is not smaller than at the
  smallest by more than 2 percentage points (per seed ``gain_max - gain_min``; lower bound -0.02);
* ``scale_imbalance``: at the largest N, SMETRIC's max/mean queued prefill is not above the comparator's
  (per seed ``q_smetric / q_comparator - 1``; upper bound 0).

A bound verdict is ``reproduced`` (the rule holds: the whole interval satisfies the bound), ``contradicted``
(the whole interval violates it) or ``inconclusive``. Seeds are paired across N by index: the workloads
differ (N sets the session-start rate), so a seed pairs two independent draws, and the interval is that of
the mean per-seed ratio -- valid, only not narrowed by common random numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..cluster.router_info import RouterInfo
from ..testbeds import agent_workload, paper_cluster
from ..verdicts import combine_verdicts, gain_interval, parse_paper_value, point_table
from .claims import TIDY_COLUMNS
from .screening import top_by_name
from .sweep import sweep

__all__ = ["RULES", "METRIC", "Rule", "scale_runs", "offered_goodput", "comparators", "cell_gains", "scale_claims",
           "claims_text", "plot_scale"]

OURS = "smetric"
#: Summary metrics kept per run.
_SUMMARY = ("n_requests", "goodput_tps", "slo_attainment", "hit_ratio", "ttft_p99", "imbalance")
#: Diagnostics kept per run (:meth:`SimResult.diagnostics`).
_DIAGNOSTICS = ("queued_prefill_max_mean", "hottest_instance_share", "imbalance_waiting_time_avg",
                "followup_moved_share")
_CELL = ["load", "router_replicas"]
#: The goodput every rule and the comparator use (:func:`offered_goodput`, per instance).
METRIC = "offered_goodput_per_instance"


@dataclass(frozen=True)
class Rule:
    """One stated rule: the bound its per-seed statistic is judged against (``value``/``unit`` parse as a
    bound by :func:`~smetric.verdicts.parse_paper_value`) and its wording."""

    claim_id: str
    value: str
    unit: str
    wording: str


RULES = (
    Rule("scale_retention", "-0.05", "relative change (lower bound)",
         "SMETRIC's goodput per instance at the largest N retains >= 95 % of its value at the smallest N"),
    Rule("scale_gain_held", "-0.02", "relative change (lower bound)",
         "SMETRIC's gain over the comparator at the largest N is not smaller than at the smallest N by more "
         "than 2 percentage points"),
    Rule("scale_imbalance", "0", "relative change (upper bound)",
         "at the largest N, SMETRIC's max/mean queued prefill is not above the comparator's"),
)


def _point(n_instances: int, seed: int, runs: Sequence[tuple], *, testbed: str, workload: str, warmup_s: float,
           measured_s: float, reference_rpm: float) -> pd.DataFrame:
    """One (N, seed): every ``(load, rpm, replicas, policy)`` of ``runs`` on the seed's workload (generated once)."""
    from ..cluster.simulate import simulate

    minutes = (warmup_s + measured_s) / 60.0
    rows = []
    for load, rpm, replicas, policy in runs:
        cluster = paper_cluster(testbed, n_instances=int(n_instances),
                                router=RouterInfo(router_replicas=int(replicas)))
        wl = agent_workload(int(n_instances), minutes, int(seed), rpm_per_instance=float(rpm), preset=workload,
                            reference_rpm=float(reference_rpm))
        result = simulate(wl, cluster, policy, seed=int(seed), progress=False)
        since = result.warmup_end(warmup_s / (warmup_s + measured_s))
        summary, diag = result.summary(since), result.diagnostics(since)
        rows.append({"load": load, "rpm_per_instance": float(rpm), "router_replicas": int(replicas),
                     "policy": policy, **{k: summary[k] for k in _SUMMARY},
                     "offered_goodput_per_instance": offered_goodput(result, since) / int(n_instances),
                     **{k: diag[k] for k in _DIAGNOSTICS}})
    return pd.DataFrame(rows)


def offered_goodput(result, since: float) -> float:
    """SLO-meeting tokens (input + output) of the requests scheduled at or after ``since`` per second of their
    scheduled span (``since`` to the last scheduled arrival): goodput over the offered window, so a run's drain
    tail (the slowest request's finish, which grows with the number of requests) does not dilute it."""
    rq = result.measured(since)
    span = float(rq["scheduled"].max()) - since
    if not span > 0:
        raise ValueError(f"no measured arrival window after since={since}")
    return float((rq["input_len"] + rq["output_len"])[rq["slo_met"]].sum()) / span


def _sweep(points: list[dict], shared: dict, jobs: int | None) -> pd.DataFrame:
    return sweep(points, _point, shared=shared, jobs=jobs, on_error="raise").drop(columns="runs")


def scale_runs(*, n_instances: Sequence[int], loads: Mapping[str, float], replicas: Sequence[int],
               replica_loads: Sequence[str], every_policy_loads: Sequence[str], policies: Sequence[str],
               seeds: Sequence[int],
               screening_seeds: Sequence[int], testbed: str, workload: str, warmup_s: float, measured_s: float,
               jobs: int | None = None) -> pd.DataFrame:
    """Every run: ``n_instances, seed, screening, load, rpm_per_instance, router_replicas, policy`` and the kept
    metrics. The screening runs fix each cell's comparator (module docstring); then, at every N on ``seeds``
    (largest N run first), every policy with one router at the ``every_policy_loads``, and SMETRIC and the cell's
    comparator in the other cells (the budget: a 1,024-instance run costs seconds). The loads are thinned from
    one workload per (N, seed) generated at the highest load (common random numbers over the loads); the window
    is ``warmup_s`` simulated but not measured, then ``measured_s`` measured, at every N.
    """
    if set(seeds) & set(screening_seeds) or not screening_seeds or not seeds:
        raise ValueError(f"screening_seeds {list(screening_seeds)} and seeds {list(seeds)} must be non-empty and "
                         "disjoint")
    if OURS not in policies or len(policies) < 2:
        raise ValueError(f"policies must hold {OURS!r} and at least one baseline, got {list(policies)}")
    if not loads or min(loads.values()) <= 0:
        raise ValueError(f"loads must map labels to positive requests/min/instance, got {dict(loads)}")
    unknown = sorted((set(replica_loads) | set(every_policy_loads)) - set(loads))
    if unknown or 1 not in replicas:
        raise ValueError(f"replicas {list(replicas)} must include 1, and replica_loads {list(replica_loads)} and "
                         f"every_policy_loads {list(every_policy_loads)} name loads of {sorted(loads)}")
    if not (warmup_s >= 0 and measured_s > 0):
        raise ValueError(f"warmup_s must be >= 0 and measured_s > 0, got {warmup_s}, {measured_s}")
    baselines = [p for p in policies if p != OURS]
    # (load, rpm, replicas) cells: every load with one router, replica_loads with each other replica count
    cells = [(label, float(rpm), 1) for label, rpm in loads.items()]
    cells += [(label, float(loads[label]), int(k)) for k in replicas if k != 1 for label in replica_loads]
    shared = {"testbed": testbed, "workload": workload, "warmup_s": float(warmup_s), "measured_s": float(measured_s),
              "reference_rpm": float(max(loads.values()))}
    n_min = int(min(n_instances))
    screen = _sweep([{"n_instances": n_min, "seed": int(s),
                      "runs": tuple((c[0], c[1], c[2], p) for c in cells for p in baselines)}
                     for s in screening_seeds], shared, jobs).assign(screening=True)
    comp = comparators(screen)
    points = []
    for n in sorted(n_instances, reverse=True):
        for s in seeds:
            runs = tuple((label, rpm, k, p) for label, rpm, k in cells
                         for p in (policies if k == 1 and label in every_policy_loads else (OURS, comp[(label, k)])))
            points.append({"n_instances": int(n), "seed": int(s), "runs": runs})
    frame = pd.concat([screen, _sweep(points, shared, jobs).assign(screening=False)], ignore_index=True)
    frame.insert(2, "screening", frame.pop("screening"))
    return frame.sort_values(["n_instances", "load", "router_replicas", "seed"], kind="stable", ignore_index=True)


def comparators(df: pd.DataFrame) -> dict[tuple[str, int], str]:
    """(load, replicas) -> the comparator fixed on the screening rows (the highest mean offered goodput)."""
    screen = df[df["screening"]]
    return {key: top_by_name(sub, METRIC) for key, sub in screen.groupby(_CELL, sort=False)}


def _against(df: pd.DataFrame, value: str) -> pd.DataFrame:
    """Per comparison seed, cell and N: SMETRIC's ``value``, its comparator's and the relative change (``ours``,
    ``theirs``, ``gain`` = ours / theirs - 1)."""
    comp = comparators(df)
    wide = df[~df["screening"]].pivot_table(index=[*_CELL, "n_instances", "seed"], columns="policy", values=value,
                                            aggfunc="first")
    names = [comp[(load, k)] for load, k, _, _ in wide.index]
    theirs = [wide.iloc[i][name] for i, name in enumerate(names)]
    out = pd.DataFrame({"comparator": names, "ours": wide[OURS].to_numpy(), "theirs": theirs}, index=wide.index)
    out["gain"] = out["ours"] / out["theirs"] - 1.0
    return out


def cell_gains(df: pd.DataFrame) -> pd.DataFrame:
    """Per (load, replicas, N): the comparator, SMETRIC's and its mean offered goodput per instance, SMETRIC's paired
    gain (mean, 95 % t-interval), and every policy's mean queued-prefill max/mean and hottest share."""
    gp = _against(df, METRIC)
    diag = df[~df["screening"]].groupby([*_CELL, "n_instances", "policy"])[
        [METRIC, "queued_prefill_max_mean", "hottest_instance_share"]].mean()
    rows = []
    for key, sub in gp.groupby(level=[*_CELL, "n_instances"], sort=False):
        iv = gain_interval(sub["gain"])
        comp = sub["comparator"].iloc[0]
        here = diag.loc[key]
        rows.append({**dict(zip([*_CELL, "n_instances"], key)), "comparator": comp,
                     "smetric_per_instance": here.loc[OURS, METRIC], "comparator_per_instance": here.loc[comp, METRIC],
                     "gain_mean": iv.mean, "ci_low": iv.low, "ci_high": iv.high, "n_seeds": iv.n,
                     **{f"queued_max_mean_{p}": here.loc[p, "queued_prefill_max_mean"] for p in here.index},
                     **{f"hottest_share_{p}": here.loc[p, "hottest_instance_share"] for p in here.index}})
    return pd.DataFrame(rows).sort_values([*_CELL, "n_instances"], ignore_index=True)


def _per_seed(df: pd.DataFrame, n_min: int, n_max: int) -> dict[str, pd.DataFrame]:
    """rule -> per (load, replicas, seed): the rule's statistic (``stat``) and the comparator it used."""
    gp = _against(df, METRIC)
    q = _against(df, "queued_prefill_max_mean").xs(n_max, level="n_instances")
    lo, hi = gp.xs(n_min, level="n_instances"), gp.xs(n_max, level="n_instances")
    return {"scale_retention": pd.DataFrame({"stat": hi["ours"] / lo["ours"] - 1.0, "comparator": OURS}),
            "scale_gain_held": pd.DataFrame({"stat": hi["gain"] - lo["gain"], "comparator": hi["comparator"]}),
            "scale_imbalance": pd.DataFrame({"stat": q["gain"], "comparator": q["comparator"]})}


def _routers(replicas: int) -> str:
    return f"{replicas} router{'s' if replicas > 1 else ''}"


def scale_claims(df: pd.DataFrame) -> pd.DataFrame:
    """The rules of :data:`RULES` judged per (load, replicas) cell: a tidy table, one row per rule and cell
    (:data:`~smetric.experiments.claims.TIDY_COLUMNS`; ``paper_value``/``unit`` hold the rule's bound)."""
    n_min, n_max = int(df["n_instances"].min()), int(df["n_instances"].max())
    if n_min == n_max:
        raise ValueError(f"the scale rules need two instance counts, got only {n_min}")
    stats = _per_seed(df, n_min, n_max)
    parts = []
    for rule in RULES:
        per = stats[rule.claim_id].dropna(subset=["stat"])
        cells = list(dict.fromkeys(per.index.droplevel("seed")))
        ivs = [gain_interval(per.loc[c, "stat"]) for c in cells]
        comps = ["/".join(dict.fromkeys(per.loc[c, "comparator"])) for c in cells]
        table = point_table(parse_paper_value(rule.value, rule.unit), [iv.mean for iv in ivs],
                            [iv.low for iv in ivs], [iv.high for iv in ivs], [iv.n for iv in ivs],
                            [f"{load}, {_routers(k)}" for load, k in cells], comps)
        table["reproduced"] = [f"N={n_max} vs N={n_min}: {100 * iv.mean:+.1f} % [{100 * iv.low:+.1f}, "
                               f"{100 * iv.high:+.1f}] ({iv.n} seeds)" for iv in ivs]
        table["reason"] = (f"{rule.wording}; per seed, 95 % t-interval, Holm over the {len(cells)} cells; comparator "
                           "fixed per (load, routers) at the smallest N on the screening seeds and held at every N")
        table = table.assign(claim_id=rule.claim_id, figure="fig18", paper_value=rule.value, unit=rule.unit,
                             claim_verdict=combine_verdicts(list(table["verdict"])), band_low=np.nan,
                             band_high=np.nan, band_source=np.nan, wording=rule.wording)
        parts.append(table)
    return pd.concat(parts, ignore_index=True)[list(TIDY_COLUMNS)]


def claims_text(claims: pd.DataFrame) -> str:
    """The claim rows as the notebooks print claims (``id [verdict]``, ``reproduced:``, ``why:`` lines)."""
    return "\n".join(f"{r.claim_id} @ {r.point}  [{r.verdict}]\n  rule:       {r.rule} {r.paper_value}\n"
                     f"  reproduced: {r.reproduced} vs {r.comparator}\n  why:        {r.reason}\n"
                     for r in claims.itertuples())


def plot_scale(df: pd.DataFrame):
    """Per load (columns): goodput per instance vs N (top) and max/mean queued prefill vs N (bottom), one line per
    policy, solid with one router and dashed with more replicas; seed means with 95 % t-intervals. LMetric reads
    only engine-state signals, so its dashed line lies under its solid one."""
    import matplotlib.pyplot as plt
    from scipy import stats

    from .main_results import _styles

    runs = df[~df["screening"]]
    loads = list(dict.fromkeys(runs["load"]))
    policies, palette, _ = _styles(runs["policy"].unique())
    replicas = sorted(runs["router_replicas"].unique())
    fig, axes = plt.subplots(2, len(loads), figsize=(5.2 * len(loads), 7.0), sharex=True, squeeze=False)
    for j, load in enumerate(loads):
        sub = runs[runs["load"] == load]
        for i, (metric, label) in enumerate(((METRIC, "goodput per instance (tok/s, offered window)"),
                                             ("queued_prefill_max_mean", "queued prefill max / mean"))):
            ax = axes[i, j]
            for pol in policies:
                for k in replicas:
                    g = sub[(sub["policy"] == pol) & (sub["router_replicas"] == k)]
                    if g.empty:  # more replicas run SMETRIC and the comparator only
                        continue
                    by = g.groupby("n_instances")[metric]
                    mean = by.mean()
                    half = by.sem() * stats.t.ppf(0.975, by.count() - 1)  # NaN with one seed
                    ax.errorbar(mean.index, mean.to_numpy(), yerr=half.to_numpy(), color=palette[pol],
                                ls="-" if k == replicas[0] else "--", marker="o", ms=3.5, capsize=2,
                                label=f"{pol}, {_routers(k)}")
            ax.set_xscale("log", base=2)
            ax.set_ylabel(label)
            if i == 0:
                ax.set_title(f"{load}: {sub['rpm_per_instance'].iloc[0]:g} requests/min/instance")
            else:
                ax.set_xlabel("instances N")
            ax.grid(alpha=0.3)
    legend = {}  # every line of every panel once (the replica and past panels hold SMETRIC and the comparator)
    for ax in axes[0]:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(name, handle)
    axes[0, 0].legend(legend.values(), legend.keys(), fontsize=7, ncol=2, loc="lower left")
    ns = sorted(runs["n_instances"].unique())
    for ax in axes[-1]:
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
    fig.suptitle("First-request balancing at scale (30B testbed, fixed load per instance): seed means, 95 % "
                 "t-intervals", fontsize=10)
    fig.tight_layout()
    return fig
