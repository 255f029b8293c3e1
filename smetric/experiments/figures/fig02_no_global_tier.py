"""Figure 2: without a global KV tier, KV-favouring BAILIAN vs LMetric vs load-only (SMetric §4.1, claim C8)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from .. import workload_rows as wr
from ..figure import param
from ._common import TestbedRun


@dataclass(frozen=True)
class Params(TestbedRun):
    rpm_per_instance: tuple[float, ...] = param((24, 36, 44, 52, 60),
                                               "offered loads (requests / min / instance) bracketing the knee")
    policies: tuple[str, ...] = param(("bailian", "lmetric", "least-load", "cache-affinity"), "routers compared")
    second_row: dict = param({"workload": wr.REAL_TRACE, "rpm_per_instance": (1.0, 2.0, 4.0, 6.0, 8.0),
                              "minutes": 10.0},
                             "parameters of the row beside the main one: the real claude-code trace at loads "
                             "around its knee ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(rpm_per_instance=(36, 52), n_instances=4, minutes=2.0, seeds=(0, 1),
                   second_row={"workload": wr.REAL_TRACE, "rpm_per_instance": (2.0, 6.0), "minutes": 4.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return wr.compute_rows(p, lambda q: mo.no_global_tier(q.rpm_per_instance, q.policies, **q.run_kwargs(),
                                                          jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.pivot_table(index=["workload", "rpm_per_instance"], columns="policy",
                          values=["hit_ratio", "goodput_tps"], sort=False).round(2)


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig02_no_global_tier_second_row_claims": wr.row_claims(df, mo.no_global_tier_claims)}


plot = mo.plot_no_global_tier
claims = wr.on_main(mo.no_global_tier_claims)
