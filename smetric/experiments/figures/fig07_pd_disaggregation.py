"""Figure 7: prefill TPS vs load under PD disaggregation, over a sweep of PD splits (claim C14)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import main_results as mr
from .. import workload_rows as wr
from ..figure import FigureParams, param
from ..screening import SCREEN_SEEDS


@dataclass(frozen=True)
class Params(FigureParams):
    policies: tuple[str, ...] = param(("smetric", *mr.MAIN_BASELINES),
                                      "routers compared (smetric and the paper's named baselines)")
    workload: str = param("bailian-coder", "workload (a preset or trace name)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replacing workload (offered_point trace)")
    splits: tuple[tuple[int, int], ...] = param(((20, 12), (24, 8), (28, 4)), "prefill, decode instances per split")
    loads: tuple[float, ...] = param((12, 18, 24, 30, 36), "offered loads in requests/min/instance")
    minutes: float = param(4, "window of the workload (shortened to fit the budget)")
    seeds: tuple[int, ...] = param(tuple(range(8)), "workload seeds (paired statistics)")
    screen_seeds: tuple[int, ...] = param(SCREEN_SEEDS, "seeds on which the baselines alone fix the split and each "
                                                        "split's comparator (disjoint from seeds)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")
    second_row: dict = param({"workload": wr.REAL_TRACE, "loads": (2, 4, 6), "minutes": 6.0},
                             "parameters of the row beside the main one: the real claude-code trace at loads around "
                             "its knees on the PD splits, its split chosen by the same rule on its own sweep "
                             "({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(policies=("smetric", "lmetric", "least-load"), splits=((6, 2), (5, 3)), loads=(12, 24), minutes=1.5,
                   seeds=(0, 1), screen_seeds=(100,),
                   second_row={"workload": wr.REAL_TRACE, "loads": (2, 5), "minutes": 4.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return wr.compute_rows(p, lambda q: mr.pd_prefill_vs_load(policies=q.policies, splits=q.splits, loads=q.loads,
                                                              seeds=q.seeds, minutes=q.minutes, workload=q.workload,
                                                              trace=q.trace, warmup_frac=q.warmup_frac,
                                                              screen_seeds=q.screen_seeds, jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.groupby("workload", sort=False).head(3)[["workload", "split", "policy", "rpm_per_instance", "seed",
                                                        "prefill_tps", "goodput_tps", "ttft_p50", "tpot_p50"]]


def plot(df: pd.DataFrame):
    return mr.plot_splits(df, title="Prefill TPS vs load, PD disaggregated (30B)")


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig07_pd_disaggregation_splits": wr.per_workload(df, lambda sub: mr.split_table(sub).table),
            "fig07_pd_disaggregation_each": wr.per_workload(df, lambda sub: mr.split_table(sub, each=True).table),
            "fig07_pd_disaggregation_second_row_claims": wr.row_claims(df, mr.pd_claims)}


def findings(df: pd.DataFrame) -> str:
    parts = []
    for workload, sub in wr.workload_frames(df):
        choice = mr.split_table(sub)
        parts.append(f"{workload}: {sub['rpm_per_instance'].nunique()} loads "
                     f"({'/'.join(f'{x:g}' for x in sorted(sub['rpm_per_instance'].unique()))} rpm/instance)\n"
                     f"Rule: {choice.rule}\nChosen: {choice.chosen} (the prefill-TPS rule picks "
                     f"{mr.split_table(sub, 'prefill_tps').chosen})\n\n" + mr.table_text(choice.table)
                     + "\n\nSMETRIC vs every baseline in every split:\n"
                     + mr.table_text(mr.split_table(sub, each=True).table))
    return "\n\n".join(parts)


claims = wr.on_main(mr.pd_claims)
