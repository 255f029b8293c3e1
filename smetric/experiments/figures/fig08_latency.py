"""Figure 8: TTFT and TPOT distributions at a high load (claim C16)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import main_results as mr
from ..figure import FigureParams, param

_FMT = {"float_format": lambda x: f"{x:,.3f}" if abs(x) < 10 else f"{x:,.0f}"}


@dataclass(frozen=True)
class Params(FigureParams):
    policies: tuple[str, ...] = param(("smetric", *mr.MAIN_BASELINES), "routers compared")
    testbed: str = param("30b", "paper testbed")
    workload: str = param("bailian-coder", "workload (a preset or trace name)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replacing workload (offered_point trace)")
    rpm_per_instance: float = param(48, "offered load in requests/min/instance "
                                        "(30B: the best baselines still meet SLO)")
    minutes: float = param(10, "measured window of the workload")
    n_instances: int | None = param(None, "instances (None: the paper's size)")
    seeds: tuple[int, ...] = param(tuple(range(8)), "workload seeds (paired statistics)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(policies=("smetric", "lmetric", "least-load"), minutes=1.5, n_instances=8, seeds=(0, 1))


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mr.latency_distributions(policies=p.policies, testbed=p.testbed, rpm_per_instance=p.rpm_per_instance,
                                    minutes=p.minutes, n_instances=p.n_instances, seeds=p.seeds, workload=p.workload,
                                    trace=p.trace, warmup_frac=p.warmup_frac, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.head()


plot = mr.plot_latency


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig08_latency_percentiles": mr.latency_table(df), "fig08_latency_changes": mr.latency_changes(df)}


def findings(df: pd.DataFrame) -> str:
    return (mr.latency_table(df).to_string(index=False, **_FMT) + "\n\nPaired p50 changes vs the best baseline:\n"
            + mr.latency_changes(df).to_string(index=False, **_FMT) + "\n")


claims = mr.latency_claims
