"""fig13 experiment: SMETRIC's goodput gain over the best baseline as the KV path goes from ``ideal`` to the full stack.

**Mechanism ladder** (:data:`LADDER`, cumulative: each row adds one mechanism to the row above; the
last is exactly the ``lmcache-mooncake`` preset of ``data/perf/kv_path.json``):

1. ``ideal``: the ideal connector (a per-instance link at ``GlobalStore.provisioned``'s 23.75 GB/s per
   GPU, 0.5 ms per load, loads overlapped with the instance's other work, free writes), no reply KV
   in the prefix cache, hits counted in whole engine blocks;
2. ``+ reply KV``: ``cache_replies``;
3. ``+ 16-token hits``: ``hit_granularity=16`` (the ideal connector on the testbed stack);
4. ``+ blocking loads``: the ``lmcache`` connector model with the ideal link's numbers (one transfer
   at 23.75 GB/s per GPU, 0.5 ms, no lookup, no PCIe hop, no NIC pool, free writes), so the only change
   is that the instance's whole batch waits for a load (LMCache's non-layer-wise retrieval);
5. ``+ lookups``: the scheduler-side store lookup per admitted request;
6. ``+ client read cap``: one LMCache client's RDMA read throughput per load;
7. ``+ PCIe hop``: a store read then crosses the GPU's PCIe link, and what is stored is copied
   GPU->host inside the iteration (one parameter, ``pcie_gbs``, sets both: the write copy cannot be
   switched apart from the read's second hop with the existing parameters);
8. ``+ shared NIC``: loads and writes of a node's instances share its NIC pool;
9. ``full (lmcache-mooncake)``: one client's RDMA write throughput caps each store write.

Then four variants of the full stack (not cumulative): ``full, layer-wise`` (loads pipelined with
compute instead of blocking), ``full + store replies`` (``global_store_replies``), and the
``lmcache-mooncake-fast`` / ``-slow`` bounds. Replay stays at the testbed default (closed): the KV
path is the subject, and the replay mode is another axis.

**Loads** (per testbed, stated rule): a short screen on ``screen_seeds`` under the full stack runs
every candidate baseline over a load grid; the best baseline is the one with the highest mean goodput
at any grid load, and its peak load (argmax of its seed-mean goodput) is the **knee**; **past** is
``past_factor`` times the knee. The baselines carried into the ladder are the ``n_baselines`` best
candidates by mean goodput at the knee, plus ``least-load`` (the load-only router of claim C9). In
every (mechanism, load) cell the best carried baseline is chosen once by its mean over seeds and
SMETRIC's gain over it taken seed by seed (:func:`~smetric.verdicts.paired_gains`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from ..cluster.config import GlobalStore
from ..cluster.connector import KVConnector
from ..testbeds import TESTBEDS
from ..verdicts import bound_verdict, gain_intervals, paired_gains, percent
from .comparison import run_cases
from .screening import top_by_name

__all__ = ["LADDER", "VARIANTS", "MECHANISMS", "FULL", "LOAD_ONLY", "mechanism_overrides", "serving_stack",
           "screen_choice", "choice_table", "stack_gains", "load_only_table", "plot_serving_stack", "stack_findings"]

FULL = "lmcache-mooncake"
#: The load-only router of claim C9 (always carried, so its gap to the best can be measured in every row).
LOAD_ONLY = "least-load"
# The connector fields the ladder turns on one at a time after "+ blocking loads", in order.
_STEPS = (("+ lookups", "lookup_s"), ("+ client read cap", "load_gbs"), ("+ PCIe hop", "pcie_gbs"),
          ("+ shared NIC", "nic_gbs_per_gpu"), ("full (lmcache-mooncake)", "store_gbs"))
#: The cumulative rows, ideal -> full stack.
LADDER = ("ideal", "+ reply KV", "+ 16-token hits", "+ blocking loads", *(label for label, _ in _STEPS))
#: Variants of the full stack.
VARIANTS = ("full, layer-wise", "full + store replies", "lmcache-mooncake-fast", "lmcache-mooncake-slow")
MECHANISMS = LADDER + VARIANTS
LOADS = ("knee", "past")
_CELL = ["testbed", "load", "mechanism"]
_OUT = ("goodput_tps", "slo_attainment", "hit_ratio", "hit_ratio_global", "n_requests")


def mechanism_overrides(mechanism: str, tp: int) -> dict:
    """``ClusterConfig`` overrides (on top of the testbed defaults) of a row of :data:`MECHANISMS`."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}; known: {MECHANISMS}")
    if mechanism in VARIANTS:
        if mechanism.startswith("lmcache-"):
            return {"kv_connector": KVConnector.preset(mechanism)}
        if mechanism == "full, layer-wise":
            return {"kv_connector": KVConnector.preset(FULL, layerwise=True)}
        return {"kv_connector": KVConnector.preset(FULL), "global_store_replies": True}
    rank = LADDER.index(mechanism)
    out = {"kv_connector": KVConnector.preset("ideal"), "cache_replies": rank >= 1,
           "hit_granularity": 16 if rank >= 2 else None}
    if rank >= 3:  # the lmcache model carrying the ideal link's numbers (only the blocking differs), then _STEPS
        link, full = GlobalStore.provisioned(tp), KVConnector.preset(FULL)
        blocking = KVConnector.preset(FULL, lookup_s=0.0, load_latency_s=link.latency_s, load_gbs=link.bandwidth_gbs,
                                      store_gbs=math.inf, nic_gbs_per_gpu=math.inf, pcie_gbs=math.inf,
                                      store_total_gbs=math.inf)
        out["kv_connector"] = replace(blocking, **{name: getattr(full, name) for _, name in _STEPS[:rank - 3]})
    return out


def _run(stage: str, testbeds: Sequence[str], seeds: Sequence[int], runs: Mapping[str, list], *,
         setups: Mapping[tuple, dict], warmup_frac: float, jobs: int | None) -> pd.DataFrame:
    """Every ``(mechanism, load, rpm, policy)`` of ``runs[testbed]`` on every seed, labelled ``stage``."""
    points = [{"stage": stage, "testbed": tb, "seed": int(s), "mechanism": mechanism, "load": load,
               "rpm_per_instance": float(rpm), "policy": policy}
              for tb in testbeds for s in seeds for mechanism, load, rpm, policy in runs[tb]]
    cases = {p: (p, {}) for p in dict.fromkeys(pt["policy"] for pt in points)}
    frame = run_cases(points, cases, setups, warmup_frac=warmup_frac, jobs=jobs, case="policy",
                      setup=("testbed", "mechanism"))
    return frame[[*points[0], *_OUT]]


def screen_choice(frame: pd.DataFrame, n_baselines: int, past_factor: float) -> pd.DataFrame:
    """Per testbed, from the ``screen`` rows: ``best_baseline``, ``knee`` and ``past`` loads, ``carried`` baselines."""
    screen = frame[frame["stage"] == "screen"]
    rows = []
    for tb, sub in screen.groupby("testbed", sort=False):
        means = sub.groupby(["policy", "rpm_per_instance"])["goodput_tps"].mean()
        best = top_by_name(sub)
        knee = float(means.loc[best].idxmax())
        at_knee = means.xs(knee, level="rpm_per_instance").sort_index().sort_values(ascending=False, kind="stable")
        carried = list(at_knee.index[:n_baselines])
        if LOAD_ONLY not in carried:
            carried.append(LOAD_ONLY)
        rows.append({"testbed": tb, "best_baseline": best, "knee": knee, "past": round(past_factor * knee, 6),
                     "carried": "/".join(carried)})
    return pd.DataFrame(rows)


def serving_stack(*, testbeds: Sequence[str], screen_rpm: Mapping[str, Sequence[float]],
                  candidates: Sequence[str], screen_seeds: Sequence[int], seeds: Sequence[int], n_baselines: int,
                  past_factor: float, n_instances: Mapping[str, int], minutes: Mapping[str, float],
                  warmup_frac: float, workload: str, mechanisms: Sequence[str] = MECHANISMS,
                  trace: str | None = None, jobs: int | None = None) -> pd.DataFrame:
    """The screen (stage ``screen``: candidates over ``screen_rpm`` under the full stack) and the ladder
    (stage ``main``: ``smetric`` and the carried baselines, every mechanism, knee and past loads).

    Every load of a testbed is thinned from one workload generated at ``past_factor`` times the top of
    its screen grid (common random numbers across loads and stages); a ``trace`` (a timestamped trace file or
    catalog name) replaces ``workload``, replayed at each offered rate (``testbeds.trace_workload``).
    """
    if LOAD_ONLY not in candidates:
        raise ValueError(f"the candidates must include {LOAD_ONLY!r} (claim C9's load-only router)")
    unknown = sorted(set(mechanisms) - set(MECHANISMS))
    if unknown:
        raise ValueError(f"unknown mechanism(s) {unknown}; known: {MECHANISMS}")
    setups = {(tb, m): {"testbed": tb, "n_instances": n_instances[tb], "minutes": minutes[tb], "trace": trace,
                        "cluster_overrides": mechanism_overrides(m, TESTBEDS[tb][2]),
                        "workload_overrides": {"preset": workload, "reference_rpm": past_factor * max(screen_rpm[tb])}}
              for tb in testbeds for m in dict.fromkeys(("full (lmcache-mooncake)", *mechanisms))}
    common = {"setups": setups, "warmup_frac": warmup_frac, "jobs": jobs}
    screen_runs = {tb: [("full (lmcache-mooncake)", "screen", rpm, pol) for rpm in screen_rpm[tb]
                        for pol in candidates] for tb in testbeds}
    screen = _run("screen", testbeds, screen_seeds, screen_runs, **common)
    choice = screen_choice(screen, n_baselines, past_factor).set_index("testbed")
    main_runs = {tb: [(mech, load, choice.loc[tb, load], pol) for mech in mechanisms for load in LOADS
                      for pol in ("smetric", *choice.loc[tb, "carried"].split("/"))] for tb in testbeds}
    main = _run("main", testbeds, seeds, main_runs, **common)
    return pd.concat([screen, main], ignore_index=True)


def choice_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per testbed, as run: the screen's best baseline and knee, the ladder's knee and past loads, the carried
    baselines and the seeds."""
    screen = screen_choice(frame, 0, 1.0).set_index("testbed")
    main = _main(frame)
    rows = []
    for tb, sub in main.groupby("testbed", sort=False):
        rpm = sub.groupby("load")["rpm_per_instance"].first()
        screen_seeds = frame.loc[(frame["stage"] == "screen") & (frame["testbed"] == tb), "seed"].nunique()
        carried = "/".join(p for p in dict.fromkeys(sub["policy"]) if p != "smetric")
        rows.append({"testbed": tb, "best_baseline": screen.loc[tb, "best_baseline"], "knee": rpm["knee"],
                     "past": rpm["past"], "carried": carried, "screen_seeds": screen_seeds,
                     "seeds": sub["seed"].nunique()})
    return pd.DataFrame(rows)


def _main(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["stage"] == "main"]


def _cell_gains(main: pd.DataFrame, ours: str) -> pd.DataFrame:
    """Per (testbed, load, mechanism) of the ``main`` rows: ``ours``' paired gain over the best other policy by
    seed mean (:func:`~smetric.verdicts.gain_intervals`), rows by testbed (in run order), load (knee
    first), mechanism (ladder order)."""
    table = gain_intervals(paired_gains(main, by=_CELL, ours=ours), by=_CELL)
    order = {"testbed": list(dict.fromkeys(main["testbed"])), "load": list(LOADS), "mechanism": list(MECHANISMS)}
    return table.sort_values(_CELL, key=lambda col: col.map(order[col.name].index)).reset_index(drop=True)


def stack_gains(frame: pd.DataFrame) -> pd.DataFrame:
    """SMETRIC's gain over the best carried baseline per (testbed, load, mechanism): mean, 95 % t-interval, n."""
    main = _main(frame)
    goodput = main[main["policy"] == "smetric"].groupby(_CELL)["goodput_tps"].mean().rename("smetric_goodput")
    table = _cell_gains(main, "smetric").join(main.groupby(_CELL)["rpm_per_instance"].first(), on=_CELL)
    table = table.join(goodput, on=_CELL)
    table["tie"] = (table["ci_low"] <= 0) & (table["ci_high"] >= 0)
    return table


def load_only_table(frame: pd.DataFrame, bound: float = -0.07) -> pd.DataFrame:
    """Claim C9's rule in every cell: least-load's goodput relative to the best policy (by seed-mean, SMETRIC
    included), paired per seed, its interval and :func:`bound_verdict` against ``bound`` (a lower bound)."""
    table = _cell_gains(_main(frame), LOAD_ONLY)
    table = table.rename(columns={"best_baseline": "best_policy", "gain_mean": "rel_mean"})
    table["verdict"] = [bound_verdict(lo, hi, bound, "lower") for lo, hi in zip(table["ci_low"], table["ci_high"])]
    return table


def _interval(row) -> str:
    return f"{percent(row['gain_mean'])}% [{percent(row['ci_low'])}, {percent(row['ci_high'])}]"


def plot_serving_stack(gains: pd.DataFrame):
    """Heat map: rows = mechanisms, columns = testbed x load; colour = mean gain, text = mean [95 % CI] and the
    best baseline; a cell whose interval contains 0 is hatched."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    cols = list(dict.fromkeys(zip(gains["testbed"], gains["load"])))
    rows = [m for m in MECHANISMS if m in set(gains["mechanism"])]
    cell = gains.set_index(_CELL)
    grid = np.array([[cell.loc[(tb, ld, m), "gain_mean"] for tb, ld in cols] for m in rows])
    lim = max(0.05, float(np.nanmax(np.abs(grid))))
    fig, ax = plt.subplots(figsize=(2.1 * len(cols) + 2.2, 0.42 * len(rows) + 1.4))
    ax.imshow(grid, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    for i, m in enumerate(rows):
        for j, (tb, ld) in enumerate(cols):
            r = cell.loc[(tb, ld, m)]
            ax.text(j, i, f"{_interval(r)}\nvs {r['best_baseline']}", ha="center", va="center", fontsize=6.5,
                    color="white" if abs(r["gain_mean"]) > 0.6 * lim else "black")
            if r["tie"]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="0.55", lw=0))
    ax.axhline(len(LADDER) - 0.5, color="black", lw=1.2)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([f"{tb} {ld}\n{cell.loc[(tb, ld, rows[0]), 'rpm_per_instance']:g} rpm/inst" for tb, ld in cols],
                       fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=8)
    n_lo, n_hi = int(gains["n_seeds"].min()), int(gains["n_seeds"].max())
    seeds = f"{n_lo} seeds" if n_lo == n_hi else f"{n_lo}-{n_hi} seeds"
    ax.set_title("SMETRIC's goodput gain vs the best baseline, KV path ideal -> full stack (cumulative above the "
                 f"line)\nmean [95 % paired t-interval], {seeds}; hatched: interval contains 0", fontsize=9)
    fig.tight_layout()
    return fig


def stack_findings(frame: pd.DataFrame) -> list[str]:
    """Measured facts: the knee rule's outcome, the gain at each end of the ladder, the largest step, C9's rule."""
    gains = stack_gains(frame)
    choice = choice_table(frame).set_index("testbed")
    out = []
    for (tb, ld), sub in gains.groupby(["testbed", "load"], sort=False):
        g = sub.set_index("mechanism")
        ladder = g.loc[[m for m in LADDER if m in g.index], "gain_mean"]
        steps = ladder.diff().dropna()
        line = (f"{tb} {ld} ({g['rpm_per_instance'].iloc[0]:g} rpm/inst; screen's best baseline "
                f"{choice.loc[tb, 'best_baseline']}, knee {choice.loc[tb, 'knee']:g}): ")
        parts = [f"{m} {_interval(g.loc[m])}" for m in ("ideal", "full (lmcache-mooncake)", "lmcache-mooncake-fast",
                                                         "lmcache-mooncake-slow") if m in g.index]
        if len(steps):
            big = steps.abs().idxmax()
            parts.append(f"largest ladder step {big} ({percent(steps[big])} points)")
        out.append(line + "; ".join(parts))
    main = _main(frame)
    runs = main.set_index(["testbed", "load", "seed", "policy", "mechanism"])["goodput_tps"].unstack("mechanism")
    rungs = [m for m in LADDER if m in runs.columns]
    idle = [b for a, b in zip(rungs, rungs[1:]) if runs[a].equals(runs[b])]
    if idle:
        out.append(f"no effect at all (every policy, seed and load identical to the rung above): {', '.join(idle)}")
    lo = load_only_table(frame)
    knee = lo[lo["load"] == "knee"]
    for tb, sub in knee.groupby("testbed", sort=False):
        held = sub.loc[sub["verdict"] == "reproduced", "mechanism"].tolist()
        out.append(f"C9's rule (least-load within 7 % of the best, lower bound -0.07) at the {tb} knee: "
                   + ", ".join(f"{r.mechanism} {percent(r.rel_mean)}% [{r.verdict}]" for r in sub.itertuples())
                   + f" -- holds in {len(held)} of {len(sub)} rows (a finding; C9's claim row stays in fig03)")
    return out
