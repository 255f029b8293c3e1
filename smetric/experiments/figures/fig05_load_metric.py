"""Figure 5: how accurate is a load metric? Request count, new tokens and SMETRIC's attention-aware cost (§4.2)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    testbed: str = param("30b", "paper testbed whose model and GPU time the prefills")
    n_sessions: int = param(3000, "complete synthetic agent sessions")
    workload: str = param("bailian-coder", "synthetic workload preset of the sessions")
    queue_lengths: tuple[float, ...] = param((1, 2, 4, 8, 16), "mean requests per queue")
    n_pairs: int = param(20_000, "queue pairs per length")
    n_decisions: int = param(2_000, "least-loaded-of-N decisions per length")
    n_scatter: int = param(3_000, "requests drawn in panel (a)")
    seed: int = param(0, "workload and sampling seed")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_sessions=300, n_pairs=2_000, n_decisions=200, n_scatter=500)


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """Metric accuracy panels (no engine, no sweep: ``jobs`` is unused)."""
    return mo.load_metric_accuracy(p.n_sessions, p.queue_lengths, testbed=p.testbed, seed=p.seed, n_pairs=p.n_pairs,
                                   n_decisions=p.n_decisions, n_scatter=p.n_scatter, workload=p.workload)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["panel"] == "fit"].pivot(index="metric", columns="stat", values="value").round(3)


plot = mo.plot_load_metric_accuracy


def claims(df: pd.DataFrame) -> list[dict]:
    """The paper's statement is qualitative (no claim id): :func:`findings` prints the comparison."""
    return []


def findings(df: pd.DataFrame) -> str:
    queues = df[df["panel"].isin(["pairs", "argmin"])]
    fit = df[df["panel"] == "fit"].set_index(["metric", "stat"])["value"]
    table = queues.pivot_table(index=["panel", "stat", "queue_len"], columns="metric", values="value").round(4)
    return (table.to_string() + "\n\npaper: Dynamo's token-count load is inaccurate; SMETRIC's attention-aware cost "
            "is not (qualitative)\n"
            f"reproduced: median |error| of a proportional fit {fit['new tokens', 'median_ape']:.0%} for new "
            f"tokens vs {fit['attention cost', 'median_ape']:.0%} for the attention-aware cost (Spearman "
            f"{fit['new tokens', 'spearman']:.3f} vs {fit['attention cost', 'spearman']:.3f})")
