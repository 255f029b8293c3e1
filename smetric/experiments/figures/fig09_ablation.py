"""Figure 9: ablation of SMETRIC's cost model and guard (paper p12, claims C15)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import ablation as ab
from ..figure import FigureParams, param
from ._common import SEEDS


@dataclass(frozen=True)
class Params(FigureParams):
    testbeds: tuple[str, ...] = param(("30b", "235b"), "paper testbeds")
    rpm_per_instance: dict = param({"30b": (44.0, 48.0, 52.0, 56.0), "235b": (34.0, 40.0, 44.0, 48.0)},
                                   "offered loads (requests / min / instance) per testbed, bracketing the knee")
    seeds: tuple[int, ...] = param(SEEDS, "workload seeds (gains paired per seed)")
    minutes: dict = param({"30b": 5.0, "235b": 10.0}, "measured window per testbed")
    n_instances: dict = param({"30b": 32, "235b": 8}, "instances per testbed")
    warmup_frac: float = param(0.25, "first quarter of the window not measured")
    workload: str = param("bailian-coder", "agent workload: a preset or the real claude-code trace (setups.WORKLOADS)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replayed at the offered rate "
                                    "(None: workload)")

    @classmethod
    def quick(cls) -> Params:
        return cls(rpm_per_instance={"30b": (44.0, 56.0), "235b": (40.0, 48.0)}, seeds=(0, 1),
                   minutes={"30b": 2.0, "235b": 3.0}, n_instances={"30b": 4, "235b": 2})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return ab.ablation(testbeds=p.testbeds, rpm_per_instance=p.rpm_per_instance, seeds=p.seeds, minutes=p.minutes,
                       n_instances=p.n_instances, warmup_frac=p.warmup_frac, workload=p.workload, trace=p.trace,
                       jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    gains = ab.ablation_gains(df)
    return gains[["testbed", "component", "context", "primary", "peak_from", "peak_to", "gain", "ci_low", "ci_high",
                  "n_seeds", "paper"]].round(3)


def plot(df: pd.DataFrame):
    return ab.plot_ablation(df, ab.ablation_gains(df))


def claims(df: pd.DataFrame) -> list[dict]:
    return ab.ablation_claims(ab.ablation_gains(df))
