"""Figure 18: does first-request balancing hold at production scale?

SMETRIC, LMetric, Dynamo and least-load on the 30B testbed at N = 32, 128, 512 and 1,024 instances, the
per-instance load held fixed at the knee and past it, with one router and with 8 replicas
(:mod:`smetric.experiments.scale`, where the comparator and the three rules are stated).

**Loads** come from fig06's committed full run (``figures/fig06_tps_vs_load_levels.csv``, 30B,
``bailian-coder``): the knee is the 8x anchor (the comparator's screening peak, 36 requests/min/instance) and
past it the 9x point (42); 10x is where goodput collapses, and relative gains would compare two failures.
:func:`fig06_loads` reads them; a test holds :class:`Params` to that file.

**Router information**: uniform replica assignment. The sourced "as deployed" models of these four
routers (``data/routers/as_deployed.json``) are all the exact view (no published refresh interval), so
they add no run. Replicas split only router-local state (in-flight counters, policy state): a policy that
reads only engine-state signals routes identically under any K (LMetric did, bit for bit, in a trial run).

**Budget** (today's engine: CPU per request ~ N^0.86, ~130 us per request at 1,024 instances; generating a
1,024-instance workload with its 6 h of session starts ~10 s): every policy runs only at the knee with one
router; past the knee and with 8 replicas only SMETRIC and the cell's comparator run. The window is 30 s of
arrivals at every N: 20 s simulated but not measured (caches warm, the sessions under way from 6 h of
starts, :data:`~smetric.testbeds.WARMUP_MINUTES`), then 10 s measured -- ~9 measured requests per
instance at every N (~270 at 32 instances, ~8,700 at 1,024 per seed and policy). Enough for the rules because
they read cluster-level quantities (goodput per instance, the time-averaged max/mean over instances) whose
seed-to-seed spread shrinks with N, and the same window at every N leaves N the only change. What it does
not give: the hottest instance's share of the prefill work is taken over 10 s (a handful of requests per
instance), so it mostly measures arrival noise; and the 32-instance cells are the noisiest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import scale
from ..figure import FigureParams, param

_FMT = {"float_format": lambda x: f"{x:,.3f}" if abs(x) < 10 else f"{x:,.0f}"}


@dataclass(frozen=True)
class Params(FigureParams):
    n_instances: tuple[int, ...] = param((32, 128, 512, 1024), "cluster sizes (the rules compare the largest "
                                                                "with the smallest)")
    loads: dict = param({"knee": 36.0, "past": 42.0}, "requests/min/instance held fixed as N grows: fig06's 8x "
                                                      "(knee) and 9x (past it) on 30B")
    replicas: tuple[int, ...] = param((1, 8), "router replicas (uniform assignment, each with its own counters)")
    replica_loads: tuple[str, ...] = param(("knee",), "loads run with more than one replica (SMETRIC and the "
                                                      "cell's comparator only)")
    every_policy_loads: tuple[str, ...] = param(("knee",), "loads where every policy runs with one router (the "
                                                           "other cells: SMETRIC and the comparator)")
    policies: tuple[str, ...] = param(("smetric", "lmetric", "dynamo", "least-load"),
                                      "smetric and the baselines (fig06's best on bailian-coder and claude-code, "
                                      "and the load-only router)")
    seeds: tuple[int, ...] = param(tuple(range(8)), "comparison seeds (paired)")
    screening_seeds: tuple[int, ...] = param((100, 101), "seeds on which the baselines alone fix each cell's "
                                                         "comparator (disjoint from seeds)")
    warmup_s: float = param(20.0, "seconds of arrivals simulated but not measured, at every N (module docstring)")
    measured_s: float = param(10.0, "seconds of arrivals measured after the warm-up, at every N")
    testbed: str = param("30b", "paper testbed")
    workload: str = param("bailian-coder", "workload preset (testbeds.WORKLOADS)")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_instances=(4, 16), policies=("smetric", "lmetric", "least-load"), seeds=(0, 1),
                   screening_seeds=(100,), warmup_s=30.0, measured_s=20.0)


def fig06_loads(path: str | Path, testbed: str = "30b", workload: str = "bailian-coder") -> dict[str, float]:
    """``{"knee": 8x, "past": 9x}`` requests/min/instance of fig06's paper-level table (``*_levels.csv``)."""
    levels = pd.read_csv(path)
    sub = levels[(levels["testbed"] == testbed) & (levels["workload"] == workload)].set_index("paper_load")
    missing = {"8x", "9x"} - set(sub.index)
    if missing:
        raise ValueError(f"{path}: no paper_load {sorted(missing)} rows for {testbed}, {workload}")
    return {"knee": float(sub.loc["8x", "rpm_per_instance"]), "past": float(sub.loc["9x", "rpm_per_instance"])}


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return scale.scale_runs(**p.as_dict(), jobs=jobs)  # every parameter is an argument of the same name


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return scale.cell_gains(df)[["load", "router_replicas", "n_instances", "comparator", "smetric_per_instance",
                                 "comparator_per_instance", "gain_mean", "ci_low", "ci_high"]]


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """SMETRIC's gain and every policy's imbalance per cell, and the rules' verdicts (tidy)."""
    return {"fig18_scale_gains": scale.cell_gains(df), "fig18_claims": scale.scale_claims(df)}


def plot(df: pd.DataFrame):
    return scale.plot_scale(df)


def claims(df: pd.DataFrame) -> list[dict]:
    """No paper claim: the scale rules are this package's, judged in ``fig18_claims.csv`` (:func:`findings`)."""
    return []


claims_text = scale.claims_text


def findings(df: pd.DataFrame) -> str:
    """The per-cell gains and imbalance, then each rule's verdict per cell."""
    gains = scale.cell_gains(df)
    return "\n".join(["Per cell (seed means; gain paired per seed, 95 % t-interval):",
                      gains.to_string(index=False, **_FMT), "", scale.claims_text(scale.scale_claims(df))])
