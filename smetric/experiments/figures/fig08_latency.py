"""Figure 8: TTFT and TPOT distributions at a high load (claim C16)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import main_results as mr
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    policies: tuple[str, ...] = param(("smetric", *mr.MAIN_BASELINES), "routers compared")
    testbed: str = param("30b", "paper testbed")
    multiplier: float = param(8, "load in paper multipliers (8x is the best baseline's peak)")
    minutes: float = param(10, "measured window of the agent workload")
    n_instances: int | None = param(None, "instances (None: the paper's size)")
    seeds: tuple[int, ...] = param((0, 1), "workload seeds; quantile functions are averaged over seeds")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(policies=("smetric", "lmetric", "least-load"), minutes=1.5, n_instances=8, seeds=(0,))


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mr.latency_distributions(policies=p.policies, testbed=p.testbed, multiplier=p.multiplier,
                                    minutes=p.minutes, n_instances=p.n_instances, seeds=p.seeds,
                                    warmup_frac=p.warmup_frac, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.head()


plot = mr.plot_latency


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig08_latency_percentiles": mr.latency_table(df)}


def findings(df: pd.DataFrame) -> str:
    return mr.latency_table(df).to_string(index=False,
                                          float_format=lambda x: f"{x:,.3f}" if abs(x) < 10 else f"{x:,.0f}") + "\n"


claims = mr.latency_claims
