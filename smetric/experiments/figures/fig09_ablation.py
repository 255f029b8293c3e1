"""Figure 9: ablation of SMETRIC's cost model and guard (paper p12, claims C15)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import ablation as ab
from .. import workload_rows as wr
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
    workload: str = param("bailian-coder",
                          "agent workload: a preset or the real claude-code trace (testbeds.WORKLOADS)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replayed at the offered rate "
                                    "(None: workload)")
    second_row: dict = param({"workload": wr.REAL_TRACE, "rpm_per_instance": {"30b": (4.0, 5.5, 7.0),
                                                                              "235b": (4.0, 6.0, 8.0)},
                              "minutes": {"30b": 10.0, "235b": 20.0}},
                             "parameters of the row beside the main one: the real claude-code trace at loads "
                             "around its knee per testbed ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(rpm_per_instance={"30b": (44.0, 56.0), "235b": (40.0, 48.0)}, seeds=(0, 1),
                   minutes={"30b": 2.0, "235b": 3.0}, n_instances={"30b": 4, "235b": 2},
                   second_row={"workload": wr.REAL_TRACE, "rpm_per_instance": {"30b": (4.0, 6.0), "235b": (4.0, 6.0)},
                               "minutes": {"30b": 4.0, "235b": 6.0}})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return wr.compute_rows(p, lambda q: ab.ablation(
        testbeds=q.testbeds, rpm_per_instance=q.rpm_per_instance, seeds=q.seeds, minutes=q.minutes,
        n_instances=q.n_instances, warmup_frac=q.warmup_frac, workload=q.workload, trace=q.trace, jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    gains = ab.ablation_gains(df)
    return gains[["workload", "testbed", "component", "context", "primary", "peak_from", "peak_to", "gain", "ci_low",
                  "ci_high", "n_seeds", "paper"]].round(3)


def plot(df: pd.DataFrame):
    return ab.plot_ablation(df, ab.ablation_gains(df))


def _claims(df: pd.DataFrame) -> list[dict]:
    """C15 from one workload's rows."""
    return ab.ablation_claims(ab.ablation_gains(df))


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig09_ablation_second_row_claims": wr.row_claims(df, _claims)}


claims = wr.on_main(_claims)
