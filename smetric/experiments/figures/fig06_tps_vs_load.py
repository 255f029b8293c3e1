"""Figure 6: goodput TPS vs load, PD colocated with a provisioned global store (claims C12, C13)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ...testbeds import BASELINES
from .. import main_results as mr
from .. import workload_rows as wr
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    testbeds: tuple[str, ...] = param(("30b", "235b"), "paper testbeds to run")
    model: str | None = param(None, "a model name or testbed key (e.g. qwen3-235b-a22b) selects one testbed")
    workload: str = param("bailian-coder", "workload of the first row and of the claims (a preset or trace name)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replacing workload (offered_point trace)")
    loads: dict = param({"30b": (36, 42, 48, 51, 54, 57, 60, 64, 68), "235b": (24, 28, 32, 36, 39, 42, 45, 48, 52)},
                        "offered loads per testbed in requests/min/instance (bracketing the knee)")
    second_workload: str | None = param("claude-code", "workload of the second row (None: no second row)")
    second_loads: dict = param({"30b": (1, 2, 3, 4, 5, 6, 8, 10, 12), "235b": (1, 2, 3, 4, 6, 8, 10)},
                               "offered loads of the second row per testbed")
    policies: tuple[str, ...] = param(("smetric", *BASELINES), "routers: smetric and the baselines screened")
    screen_seeds: tuple[int, ...] = param((100, 101), "seeds of the baseline screening (disjoint from seeds)")
    n_keep: int = param(4, "baselines kept per testbed and workload (top screening peak goodput)")
    seeds: tuple[int, ...] = param(tuple(range(8)), "workload seeds of the comparison (paired statistics)")
    minutes: dict = param({"30b": 4, "235b": 7},
                          "window of the workload per testbed (both shortened to fit the budget)")
    n_instances: dict = param({"30b": 32, "235b": 8}, "instances per testbed (the paper's 32 and 8)")
    sensitivity: dict = param({"workload long-context": (15, 18, 21), "replay open": (51, 54, 57),
                               "kv_connector ideal": (51, 54, 57)},
                              "C13 sensitivity rows on 30B (one change from the defaults) and their loads near "
                              "the peak")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(loads={"30b": (40, 50, 60), "235b": (30, 40, 50)}, second_loads={"30b": (2, 5), "235b": (2, 5)},
                   policies=("smetric", "lmetric", "least-load", "dynamo"), screen_seeds=(100,), n_keep=2, seeds=(0, 1),
                   minutes={"30b": 1.5, "235b": 3}, n_instances={"30b": 8, "235b": 4},
                   sensitivity={"replay open": (50,), "kv_connector ideal": (50,)})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mr.tps_vs_load(**p.as_dict(), jobs=jobs)  # every parameter is an argument of the same name


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df[["testbed", "workload", "variant", "policy", "rpm_per_instance", "seed", "goodput_tps",
               "slo_attainment", "hit_ratio_hbm"]].head()


def plot(df: pd.DataFrame):
    return mr.plot_vs_load(df, title="Goodput vs offered load, PD colocated with a provisioned global store")


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig06_tps_vs_load_screening": mr.screening_table(df),
            "fig06_tps_vs_load_levels": mr.paper_load_gains(df),
            "fig06_tps_vs_load_levels_each": mr.paper_load_gains(df, each=True),
            "fig06_tps_vs_load_peaks": mr.peak_gains(df[df["variant"] == mr.DEFAULT]),  # kept policies only
            "fig06_tps_vs_load_sensitivity": mr.sensitivity_table(df),
            "fig06_tps_vs_load_second_row_claims": wr.row_claims(df, mr.main_result_claims)}


def findings(df: pd.DataFrame) -> str:
    parts = [("Baseline screening (every baseline on the screening seeds; kept = top n_keep by peak goodput)",
              mr.screening_table(df)),
             ("Comparator fixed by the screening (top baseline at the peak)", mr.comparators(df)),
             ("Anchor: the comparator's screening peak = paper 8x", mr.anchor_table(df)),
             ("Paired gains at the paper's load levels (vs the comparator)", mr.paper_load_gains(df)),
             ("The same vs every kept baseline", mr.paper_load_gains(df, each=True)),
             ("Paired per-seed peak gains", mr.peak_gains(df[df["variant"] == mr.DEFAULT])),
             ("C13 sensitivity on 30B (one change each; the verdict of C13 comes from the default row)",
              mr.sensitivity_table(df))]
    return "\n\n".join(f"{title}:\n{mr.table_text(table)}" for title, table in parts if not table.empty)


claims = mr.main_result_claims
