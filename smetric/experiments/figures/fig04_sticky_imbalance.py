"""Figure 4: session-sticky placement stays imbalanced (SMetric §4.2, claim C10)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from .. import workload_rows as wr
from ..figure import param
from ._common import TestbedRun


@dataclass(frozen=True)
class Params(TestbedRun):
    policies: tuple[str, ...] = param(("session-sticky", "cache-affinity", "smetric", "least-load"), "routers compared")
    rpm_per_instance: float = param(48.0, "offered load (the load of figure 3, near the knee)")
    window_s: float = param(60.0, "averaging window of the per-instance samples (s)")
    n_samples: int = param(1000, "engine samples per instance over the run")
    second_row: dict = param({"workload": wr.REAL_TRACE, "rpm_per_instance": 5.0, "minutes": 10.0},
                             "parameters of the row beside the main one: the real claude-code trace at one load near "
                             "its peak ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_instances=4, minutes=2.0, seeds=(0, 1),
                   second_row={"workload": wr.REAL_TRACE, "rpm_per_instance": 5.0, "minutes": 4.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return wr.compute_rows(p, lambda q: mo.sticky_imbalance(q.policies, rpm_per_instance=q.rpm_per_instance,
                                                            **q.run_kwargs(), window_s=q.window_s,
                                                            n_samples=q.n_samples, jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return mo.imbalance_per_seed(df).groupby(["workload", "policy"], sort=False)[
        ["requests_imbalance", "kv_imbalance", "work_imbalance"]].agg(["mean", "min", "max"]).round(2)


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig04_sticky_imbalance_second_row_claims": wr.row_claims(df, mo.sticky_imbalance_claims)}


plot = mo.plot_sticky_imbalance
claims = wr.on_main(mo.sticky_imbalance_claims)
