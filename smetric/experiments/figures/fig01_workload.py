"""Figure 1: agent workloads reuse more, closer in time, and are skewed (SMetric §3, findings 1-6)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..figure import FigureParams, param
from ..workload_figs import (
    plot_workload_characterization,
    workload_characterization,
    workload_claim_rows,
    workload_claims,
)


@dataclass(frozen=True)
class Params(FigureParams):
    n_sessions: int = param(30_000, "synthetic agent sessions")
    chat_sessions: int = param(20_000, "synthetic chat sessions")
    seed: int = param(0, "generator seed")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_sessions=1_000, chat_sessions=1_000)


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """The characterization panels of the synthetic workloads and the public Mooncake traces (no sweep)."""
    return workload_characterization(n_sessions=p.n_sessions, chat_sessions=p.chat_sessions, seed=p.seed)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.head()


def plot(df: pd.DataFrame):
    return plot_workload_characterization(df)


def claims(df: pd.DataFrame) -> list[dict]:
    return workload_claim_rows(df)


def findings(df: pd.DataFrame) -> str:
    """Each calibration target and public-trace statistic against its band."""
    return workload_claims(df).to_string(index=False,
                                         float_format=lambda x: f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3f}")
