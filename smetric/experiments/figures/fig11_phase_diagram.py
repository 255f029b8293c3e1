"""Figure 11 (beyond the paper): where SMETRIC wins and where it loses, over store bandwidth, session length, load."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import phase as ph
from .. import workload_rows as wr
from ..figure import FigureParams, param
from ._common import SEEDS


@dataclass(frozen=True)
class Params(FigureParams):
    bandwidths: tuple[float, ...] = param((1.5, 6.0, 24.0), "global-store GB/s per instance (capacity unlimited)")
    turns_medians: tuple[float, ...] = param((1, 4, 16), "median turns per session")
    rpm_per_instance: tuple[float, ...] = param((40.0, 52.0), "offered loads (requests / min / instance)")
    policies: tuple[str, ...] = param(("smetric", "lmetric", "dynamo", "least-load"), "routers compared")
    testbed: str = param("30b", "paper testbed")
    n_instances: int = param(16, "instances")
    minutes: float = param(5.0, "measured window")
    warmup_minutes: float = param(360.0, "sessions start this long before the window")
    seeds: tuple[int, ...] = param(SEEDS, "workload seeds (the seed count of fig06; gains paired per seed)")
    workload: str = param("bailian-coder", "a synthetic preset (the turns axis is a generator knob) or the real "
                                           "claude-code trace (its own sessions: one turns value)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replayed at the offered rate, its own "
                                    "sessions as the one turns value (None: workload)")
    warmup_frac: float = param(0.25, "share of the arrival span not measured")
    kv_connector: str = param("ideal", "KV connector: ideal (a per-instance store link of the swept bandwidth)")
    second_row: dict = param({"workload": wr.REAL_TRACE, "rpm_per_instance": (3.0, 6.0), "minutes": 20.0},
                             "parameters of the row beside the main one: the real claude-code trace (its own sessions) "
                             "at loads around its knee ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(bandwidths=(2.0, 24.0), turns_medians=(1, 4), rpm_per_instance=(40.0,),
                   policies=("smetric", "least-load"), n_instances=4, minutes=2.0, warmup_minutes=60.0, seeds=(0, 1),
                   second_row={"workload": wr.REAL_TRACE, "rpm_per_instance": (5.0,), "minutes": 10.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    # every parameter but second_row is an argument of the same name
    return wr.compute_rows(p, lambda q: ph.phase_diagram(
        **{k: v for k, v in q.as_dict().items() if k != "second_row"}, jobs=jobs))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return ph.phase_cells(df).round(3)


def plot(df: pd.DataFrame):
    return ph.plot_phase(ph.phase_cells(df))


def claims(df: pd.DataFrame) -> list[dict]:
    """No paper claim: :func:`findings` states the regimes found."""
    return []


def findings(df: pd.DataFrame) -> str:
    cells = ph.phase_cells(df)
    return ph.phase_findings(cells) + "\n\n" + ph.phase_regimes(cells).round(3).to_string(index=False)
