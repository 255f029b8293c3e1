"""Figure 10: sensitivity to SMETRIC's hyperparameters and to the SLO (paper Fig. 17, claim C17)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import ablation as ab
from .. import workload_rows as wr
from ..figure import FigureParams, param
from ..screening import SCREEN_SEEDS
from ._common import SEEDS


@dataclass(frozen=True)
class Params(FigureParams):
    testbed: str = param("30b", "paper testbed")
    hit_ratios: tuple[float, ...] = param((0.1, 0.5, 0.9), "SMETRIC hit-ratio thresholds")
    slacks: tuple[float, ...] = param((0.5, 1.0, 2.0), "SMETRIC SLACK values")
    slo_scales: tuple[float, ...] = param((0.5, 1.0, 2.0), "factors on every SLO limit (TTFT base, TTFT per 1k, TPOT)")
    baselines: tuple[str, ...] = param(("lmetric", "dynamo", "least-load"),
                                       "baselines (the best three at fig06's peaks)")
    rpm_per_instance: tuple[float, ...] = param((48.0, 52.0, 56.0), "offered loads around the knee")
    minutes: float = param(5.0, "measured window")
    n_instances: int = param(32, "instances")
    seeds: tuple[int, ...] = param(SEEDS, "workload seeds (the seed count of fig06; gains paired per seed)")
    screen_seeds: tuple[int, ...] = param(SCREEN_SEEDS, "seeds on which the baselines alone fix C17's comparator "
                                                        "(disjoint from seeds)")
    warmup_frac: float = param(0.25, "share of the arrival span not measured")
    workload: str = param("bailian-coder",
                          "agent workload: a preset or the real claude-code trace (testbeds.WORKLOADS)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replayed at the offered rate "
                                    "(None: workload)")
    second_row: dict = param({"workload": wr.REAL_TRACE, "rpm_per_instance": (4.0, 5.5, 7.0), "minutes": 10.0},
                             "parameters of the row beside the main one: the real claude-code trace at loads "
                             "around its knee ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(hit_ratios=(0.1, 0.9), slacks=(2.0,), slo_scales=(0.5, 1.0), baselines=("least-load",),
                   rpm_per_instance=(24.0, 36.0), minutes=2.0, n_instances=4, seeds=(0, 1), screen_seeds=(100,),
                   second_row={"workload": wr.REAL_TRACE, "rpm_per_instance": (4.0, 6.0), "minutes": 4.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    # every parameter but second_row is an argument of the same name
    return wr.compute_rows(p, lambda q: ab.sensitivity(
        **{k: v for k, v in q.as_dict().items() if k != "second_row"}, jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return ab.sensitivity_summary(df).round(3)


def plot(df: pd.DataFrame):
    return ab.plot_sensitivity(ab.sensitivity_summary(df))


def _claims(df: pd.DataFrame) -> list[dict]:
    """C17 from one workload's rows."""
    return ab.sensitivity_claims(ab.sensitivity_summary(df))


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig10_sensitivity_each": ab.sensitivity_summary(df, each=True),
            "fig10_sensitivity_second_row_claims": wr.row_claims(df, _claims)}


claims = wr.on_main(_claims)
