"""Figure 3: how much global tier does load-only balancing need? (SMetric §4.1, claim C9)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from ..figure import param
from ._common import TestbedRun


@dataclass(frozen=True)
class Params(TestbedRun):
    capacities_gb: tuple[float, ...] = param((0.0, 50.0, 200.0, 800.0, float("inf")),
                                             "global-store capacities in GB (0: no store, inf: unlimited)")
    bandwidths_gbs: tuple[float, ...] = param((1.0, 3.0, 8.0, 23.75), "store read bandwidth per instance (GB/s)")
    policies: tuple[str, ...] = param(("least-load", "lmetric", "bailian", "smetric"),
                                      "routers compared (least-load is the reference)")
    rpm_per_instance: float = param(12.0, "offered load, near least-load's knee with the provisioned store")

    @classmethod
    def quick(cls) -> Params:
        return cls(capacities_gb=(0.0, 50.0, float("inf")), bandwidths_gbs=(3.0, 23.75), n_instances=4, minutes=5.0)


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mo.global_tier_sweep(p.capacities_gb, p.bandwidths_gbs, p.policies, rpm_per_instance=p.rpm_per_instance,
                                testbed=p.testbed, n_instances=p.n_instances, minutes=p.minutes, seed=p.seed,
                                warmup_frac=p.warmup_frac, replay=p.replay, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return mo.global_tier_gaps(df).round(3)


plot = mo.plot_global_tier
claims = mo.global_tier_claims
