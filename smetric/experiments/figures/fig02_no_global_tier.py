"""Figure 2: without a global KV tier, KV-favouring BAILIAN vs LMetric vs load-only (SMetric §4.1, claim C8)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from ..figure import param
from ._common import TestbedRun


@dataclass(frozen=True)
class Params(TestbedRun):
    rpm_per_instance: tuple[float, ...] = param((24, 36, 44, 52, 60),
                                               "offered loads (requests / min / instance) bracketing the knee")
    policies: tuple[str, ...] = param(("bailian", "lmetric", "least-load", "cache-affinity"), "routers compared")

    @classmethod
    def quick(cls) -> Params:
        return cls(rpm_per_instance=(36, 52), n_instances=4, minutes=2.0, seeds=(0, 1))


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mo.no_global_tier(p.rpm_per_instance, p.policies, **p.run_kwargs(), jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.pivot_table(index="rpm_per_instance", columns="policy", values=["hit_ratio", "goodput_tps"]).round(2)


plot = mo.plot_no_global_tier
claims = mo.no_global_tier_claims
