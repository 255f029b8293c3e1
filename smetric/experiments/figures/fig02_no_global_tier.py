"""Figure 2: without a global KV tier, KV-favouring BAILIAN vs LMetric vs load-only (SMetric §4.1, claim C8)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from ..figure import param
from ._common import TestbedRun


@dataclass(frozen=True)
class Params(TestbedRun):
    rpm_per_instance: tuple[float, ...] = param((2, 3, 4, 6, 8, 10, 13, 16),
                                               "offered loads (requests / min / instance)")
    policies: tuple[str, ...] = param(("bailian", "lmetric", "least-load", "cache-affinity"), "routers compared")

    @classmethod
    def quick(cls) -> Params:
        return cls(rpm_per_instance=(4, 10), n_instances=4, minutes=5.0)


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mo.no_global_tier(p.rpm_per_instance, p.policies, testbed=p.testbed, n_instances=p.n_instances,
                             minutes=p.minutes, seed=p.seed, warmup_frac=p.warmup_frac, replay=p.replay, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.pivot(index="rpm_per_instance", columns="policy", values=["hit_ratio", "goodput_tps"]).round(2)


plot = mo.plot_no_global_tier
claims = mo.no_global_tier_claims
