"""Figure 3: how much global tier does load-only balancing need? (SMetric §4.1, claim C9)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from .. import workload_rows as wr
from ..figure import param
from ..screening import SCREEN_SEEDS
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
    screen_seeds: tuple[int, ...] = param(SCREEN_SEEDS, "seeds on which the routers other than least-load alone fix "
                                                        "C9's comparator in its cell (disjoint from seeds)")
    second_row: dict = param({"workload": wr.REAL_TRACE, "rpm_per_instance": 5.0, "minutes": 10.0},
                             "parameters of the row beside the main one: the real claude-code trace on the same store "
                             "grid at one load near its peak ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(capacities_gb=(0.0, float("inf")), bandwidths_gbs=(23.75,), n_instances=4, minutes=2.0, seeds=(0, 1),
                   screen_seeds=(100,),
                   second_row={"workload": wr.REAL_TRACE, "rpm_per_instance": 5.0, "minutes": 4.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return wr.compute_rows(p, lambda q: mo.global_tier_sweep(
        q.capacities_gb, q.bandwidths_gbs, q.policies, rpm_per_instance=q.rpm_per_instance, **q.run_kwargs(),
        kv_connector=q.kv_connector, screen_seeds=q.screen_seeds, jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return wr.per_workload(df, mo.global_tier_gaps).set_index("workload").round(3)


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig03_global_tier_sweep_each": wr.per_workload(df, lambda sub: mo.load_only_gains(sub, each=True)),
            "fig03_global_tier_sweep_second_row_claims": wr.row_claims(df, mo.global_tier_claims)}


plot = mo.plot_global_tier
claims = wr.on_main(mo.global_tier_claims)
