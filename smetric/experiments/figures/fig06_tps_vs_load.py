"""Figure 6: goodput TPS vs load, PD colocated with a provisioned global store (claims C12, C13)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import main_results as mr
from ..figure import FigureParams, param
from ..setups import BASELINES

_FMT = {"float_format": lambda x: f"{x:,.3f}" if abs(x) < 10 else f"{x:,.0f}"}


@dataclass(frozen=True)
class Params(FigureParams):
    testbeds: tuple[str, ...] = param(("30b", "235b"), "paper testbeds to run")
    model: str | None = param(None, "a model name or testbed key (e.g. qwen3-235b-a22b) selects one testbed")
    load_max: float = param(12, "highest load, in paper multipliers (8x is the best baseline's peak)")
    policies: tuple[str, ...] = param(("smetric", *BASELINES), "routers compared (smetric and every baseline)")
    minutes: dict = param({"30b": 10, "235b": 20}, "measured window of the agent workload per testbed")
    n_instances: dict = param({"30b": 32, "235b": 8}, "instances per testbed (the paper's 32 and 8)")
    multipliers: tuple[float, ...] | None = param(None, "loads in paper multipliers (None: every even one "
                                                                "from 2 and 6-11, up to load_max)")
    seeds: tuple[int, ...] = param((0, 1, 2, 3), "workload seeds (figures and tables use their mean)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(policies=("smetric", "lmetric", "least-load", "dynamo"), minutes={"30b": 1.5, "235b": 3},
                   n_instances={"30b": 8, "235b": 4}, multipliers=(6, 8, 9, 10), seeds=(0,))


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mr.tps_vs_load(testbeds=mr.select_testbeds(p.testbeds, p.model), policies=p.policies,
                          multipliers=p.multipliers, load_max=p.load_max, minutes=p.minutes,
                          n_instances=p.n_instances, seeds=p.seeds, warmup_frac=p.warmup_frac, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df[["testbed", "policy", "multiplier", "rpm_per_instance", "goodput_tps", "slo_attainment", "hit_ratio",
               "hit_ratio_hbm"]].head()


def plot(df: pd.DataFrame):
    return mr.plot_vs_load(df, title="Goodput vs load, PD colocated with a provisioned global store")


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig06_tps_vs_load_peaks": mr.peak_table(df)}


def findings(df: pd.DataFrame) -> str:
    return (mr.peak_table(df).to_string(index=False, **_FMT) + "\n\n"
            + mr.gains_at_paper_loads(df).to_string(index=False, **_FMT) + "\n")


claims = mr.main_result_claims
