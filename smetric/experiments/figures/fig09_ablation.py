"""Figure 9: ablation of SMETRIC's cost model and guard (paper p12, claims C15)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import ablation as ab
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    testbeds: tuple[str, ...] = param(("30b", "235b"), "paper testbeds")
    rpm_per_instance: dict = param({"30b": (8.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0),
                                    "235b": (12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0)},
                                   "offered loads (requests / min / instance) per testbed")
    seeds: tuple[int, ...] = param((0, 1, 2, 3), "workload seeds")
    minutes: dict = param({"30b": 10.0, "235b": 20.0}, "measured window per testbed")
    n_instances: dict = param({"30b": 32, "235b": 8}, "instances per testbed")
    warmup_frac: float = param(0.25, "first quarter of the window not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(testbeds=("30b",), rpm_per_instance={"30b": (9.0, 18.0)}, seeds=(0,), minutes={"30b": 2.0},
                   n_instances={"30b": 4})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return ab.ablation(testbeds=p.testbeds, rpm_per_instance=p.rpm_per_instance, seeds=p.seeds, minutes=p.minutes,
                       n_instances=p.n_instances, warmup_frac=p.warmup_frac, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    gains = ab.ablation_gains(df)
    return gains[["testbed", "component", "context", "primary", "peak_from", "peak_to", "gain", "gain_min",
                  "gain_max", "paper"]].round(3)


def plot(df: pd.DataFrame):
    return ab.plot_ablation(df, ab.ablation_gains(df))


def claims(df: pd.DataFrame) -> list[dict]:
    return ab.ablation_claims(ab.ablation_gains(df))
