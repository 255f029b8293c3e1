"""Figure 5: how accurate is a load metric? Request count, new tokens and SMETRIC's attention-aware cost (§4.2)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import motivation as mo
from .. import workload_rows as wr
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    testbed: str = param("30b", "paper testbed whose model and GPU time the prefills")
    n_sessions: int = param(3000, "complete agent sessions (of a trace: at most this many, drawn with the seed)")
    workload: str = param("bailian-coder", "workload of the sessions: a synthetic preset or the real claude-code "
                                           "trace")
    trace: str | None = param(None, "a timestamped trace file or catalog name whose sessions replace workload "
                                    "(None: workload)")
    queue_lengths: tuple[float, ...] = param((1, 2, 4, 8, 16), "mean requests per queue")
    n_pairs: int = param(20_000, "queue pairs per length")
    n_decisions: int = param(2_000, "least-loaded-of-N decisions per length")
    n_scatter: int = param(3_000, "requests drawn in panel (a)")
    seed: int = param(0, "workload and sampling seed")
    second_row: dict = param({"workload": wr.REAL_TRACE, "n_sessions": 400},
                             "parameters of the row beside the main one: sessions of the real claude-code trace "
                             "({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_sessions=300, n_pairs=2_000, n_decisions=200, n_scatter=500,
                   second_row={"workload": wr.REAL_TRACE, "n_sessions": 40})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """Metric accuracy panels (no engine, no sweep: ``jobs`` is unused)."""
    return wr.compute_rows(p, lambda q: mo.load_metric_accuracy(
        q.n_sessions, q.queue_lengths, testbed=q.testbed, seed=q.seed, n_pairs=q.n_pairs, n_decisions=q.n_decisions,
        n_scatter=q.n_scatter, workload=q.workload, trace=q.trace))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["panel"] == "fit"].pivot_table(index=["workload", "metric"], columns="stat", values="value",
                                                sort=False).round(3)


plot = mo.plot_load_metric_accuracy


def claims(df: pd.DataFrame) -> list[dict]:
    """The paper's statement is qualitative (no claim id): :func:`findings` prints the comparison."""
    return []


def _fit_line(frame: pd.DataFrame) -> str:
    fit = frame[frame["panel"] == "fit"].set_index(["metric", "stat"])["value"]
    return (f"median |error| of a proportional fit {fit['new tokens', 'median_ape']:.0%} for new tokens vs "
            f"{fit['attention cost', 'median_ape']:.0%} for the attention-aware cost (Spearman "
            f"{fit['new tokens', 'spearman']:.3f} vs {fit['attention cost', 'spearman']:.3f})")


def findings(df: pd.DataFrame) -> str:
    queues = df[df["panel"].isin(["pairs", "argmin"])]
    table = queues.pivot_table(index=["workload", "panel", "stat", "queue_len"], columns="metric", values="value",
                               sort=False).round(4)
    (main, main_rows), *others = wr.workload_frames(df)
    return (table.to_string() + "\n\npaper: Dynamo's token-count load is inaccurate; SMETRIC's attention-aware cost "
            f"is not (qualitative)\nreproduced ({main}): {_fit_line(main_rows)}"
            + "".join(f"\n{w} (second row): {_fit_line(frame)}" for w, frame in others))
