"""Figure 4: session-sticky placement stays imbalanced (SMetric §4.2, claim C10)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from ..figure import param
from ._common import TestbedRun


@dataclass(frozen=True)
class Params(TestbedRun):
    policies: tuple[str, ...] = param(("session-sticky", "cache-affinity", "smetric", "least-load"), "routers compared")
    rpm_per_instance: float = param(48.0, "offered load (the load of figure 3, near the knee)")
    window_s: float = param(60.0, "averaging window of the per-instance samples (s)")
    n_samples: int = param(1000, "engine samples per instance over the run")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_instances=4, minutes=2.0, seeds=(0, 1))


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mo.sticky_imbalance(p.policies, rpm_per_instance=p.rpm_per_instance, **p.run_kwargs(), window_s=p.window_s,
                               n_samples=p.n_samples, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return mo.imbalance_per_seed(df).groupby("policy")[["requests_imbalance", "kv_imbalance", "work_imbalance"]].agg(
        ["mean", "min", "max"]).round(2)


plot = mo.plot_sticky_imbalance
claims = mo.sticky_imbalance_claims
