"""Figure 8: TTFT and TPOT distributions at a high load (claim C16)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import main_results as mr
from .. import workload_rows as wr
from ..figure import FigureParams, param
from ..screening import SCREEN_SEEDS


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
    screen_seeds: tuple[int, ...] = param(SCREEN_SEEDS, "seeds on which the baselines alone fix the comparator "
                                                        "(disjoint from seeds)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")
    second_row: dict = param({"workload": wr.REAL_TRACE, "rpm_per_instance": 5.0, "minutes": 10.0},
                             "parameters of the row beside the main one: the real claude-code trace at a high load "
                             "of its own (near its peak) ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(policies=("smetric", "lmetric", "least-load"), minutes=1.5, n_instances=8, seeds=(0, 1),
                   screen_seeds=(100,),
                   second_row={"workload": wr.REAL_TRACE, "rpm_per_instance": 5.0, "minutes": 4.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return wr.compute_rows(p, lambda q: mr.latency_distributions(
        policies=q.policies, testbed=q.testbed, rpm_per_instance=q.rpm_per_instance, minutes=q.minutes,
        n_instances=q.n_instances, seeds=q.seeds, workload=q.workload, trace=q.trace, warmup_frac=q.warmup_frac,
        screen_seeds=q.screen_seeds, jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.groupby("workload", sort=False).head(3)


plot = mr.plot_latency


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig08_latency_percentiles": wr.per_workload(df, mr.latency_table),
            "fig08_latency_changes": wr.per_workload(df, mr.latency_changes),
            "fig08_latency_changes_each": wr.per_workload(df, lambda sub: mr.latency_changes(sub, each=True)),
            "fig08_latency_second_row_claims": wr.row_claims(df, mr.latency_claims)}


def findings(df: pd.DataFrame) -> str:
    return "\n".join(f"{workload} at {sub['rpm_per_instance'].iloc[0]:g} requests/min/instance:\n"
                     + mr.table_text(mr.latency_table(sub))
                     + "\n\nPaired p50 changes vs the comparator (best screening-seed goodput):\n"
                     + mr.table_text(mr.latency_changes(sub)) + "\n\nThe same vs every baseline:\n"
                     + mr.table_text(mr.latency_changes(sub, each=True)) + "\n"
                     for workload, sub in wr.workload_frames(df))


claims = wr.on_main(mr.latency_claims)
