"""Figure 3: how much global tier does load-only balancing need? (SMetric §4.1, claim C9)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from ..figure import param
from ._common import TestbedRun


@dataclass(frozen=True)
class Params(TestbedRun):
    capacities_gb: tuple[float, ...] = param((0.0, 50.0, 200.0, float("inf")),
                                             "global-store capacities in GB (0: no store, inf: unlimited)")
    bandwidths_gbs: tuple[float, ...] = param((3.0, 23.75), "store read bandwidth per instance (GB/s)")
    policies: tuple[str, ...] = param(("least-load", "lmetric", "bailian", "smetric"),
                                      "routers compared (least-load is the reference)")
    rpm_per_instance: float = param(48.0, "offered load, near the knee with the provisioned store")
    kv_connector: str = param("ideal", "KV connector: ideal (a per-instance store link of the swept bandwidth)")

    @classmethod
    def quick(cls) -> Params:
        return cls(capacities_gb=(0.0, float("inf")), bandwidths_gbs=(23.75,), n_instances=4, minutes=2.0, seeds=(0, 1))


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mo.global_tier_sweep(p.capacities_gb, p.bandwidths_gbs, p.policies, rpm_per_instance=p.rpm_per_instance,
                                **p.run_kwargs(), kv_connector=p.kv_connector, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return mo.global_tier_gaps(df).round(3)


plot = mo.plot_global_tier
claims = mo.global_tier_claims
