"""Figure 1: agent workloads reuse more, closer in time, and are skewed (SMetric §3, findings 1-6), on the workload
presets, the real Claude Code agent trace and public chat traces."""

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
    n_sessions: dict = param({"bailian-coder": 20_000, "toolagent": 10_000, "tracelab": 500, "long-context": 10_000,
                              "chat": 20_000},
                             "synthetic sessions per workload preset (tracelab sessions run ~45 turns)")
    agent_trace: str | None = param("claude-code", "real agent-session trace (catalog name; None for none)")
    shared_prefix: bool = param(True, "also characterize the agent trace with its tool/system prefix shared")
    traces: tuple[str, ...] = param(("mooncake-conversation", "mooncake-synthetic"), "public chat traces")
    seed: int = param(0, "generator seed")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_sessions={"bailian-coder": 1_000, "toolagent": 500, "tracelab": 20, "long-context": 500,
                               "chat": 1_000})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """The characterization panels of the presets, the real agent trace and the public traces (no sweep)."""
    return workload_characterization(**p.as_dict())  # every parameter is an argument of the same name


def overview(df: pd.DataFrame) -> pd.DataFrame:
    """The headline statistics of every workload, one column each."""
    stats = ["n_requests", "input_mean", "input_p50", "output_mean", "turns_mean", "reuse_ratio",
             "intra_session_reuse_share", "first_turn_reuse_ratio", "reuse_within_100s", "top25_session_token_share"]
    summary = df[(df["panel"] == "summary") & df["category"].isin(stats)]
    return summary.pivot(index="category", columns="trace", values="y").reindex(stats).round(3)


def plot(df: pd.DataFrame):
    return plot_workload_characterization(df)


def claims(df: pd.DataFrame) -> list[dict]:
    return workload_claim_rows(df)


def findings(df: pd.DataFrame) -> str:
    """Each calibration target and public-trace statistic against its band."""
    return workload_claims(df).to_string(index=False,
                                         float_format=lambda x: f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3f}")
