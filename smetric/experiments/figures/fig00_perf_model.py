"""Figure 0: the calibrated performance model vs measured GPU timings, with its accuracy targets."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..figure import FigureParams, param
from ..perf_figs import perf_mape, perf_validation, plot_perf_validation


@dataclass(frozen=True)
class Params(FigureParams):
    max_rows_per_group: int = param(2000, "rows kept per (dataset, GPU, model, TP) group; attention grids are "
                                              "subsampled (seeded)")
    seed: int = param(0, "seed of the subsampling")

    @classmethod
    def quick(cls) -> Params:
        return cls(max_rows_per_group=150)


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """Measured vs predicted seconds for every profile row (no sweep: ``jobs`` is unused)."""
    return perf_validation(**p.as_dict())  # every parameter is an argument of the same name


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df.groupby(["dataset", "kind"], observed=True).size().rename("rows").reset_index()


def plot(df: pd.DataFrame):
    return plot_perf_validation(df)


def claims(df: pd.DataFrame) -> list[dict]:
    """No paper claim: the model's accuracy against its targets is printed by :func:`findings`."""
    return []


def findings(df: pd.DataFrame) -> str:
    """Worst linear-layer MAPE, MoE-block MAPE, attention MAPE per grid and DistServe iteration MAPE against their
    targets."""
    mape = perf_mape(df)
    lin = mape[mape["dataset"].isin(["vidur-linear", "lss-linear"])]
    att = mape[mape["dataset"].isin(["vidur-attention", "lss-attention"])]
    lines = [f"{'claim':50s} {'target':>8s} {'reproduced':>11s}",
             f"{'linear layers, worst (GPU, model, TP) MAPE':50s} {'<=10%':>8s} {lin['mape_pct'].max():10.1f}%"]
    for _, row in mape[mape["dataset"] == "lss-moe"].iterrows():
        lines.append(f"{'MoE block ' + row['gpu'] + ' ' + row['model']:50s} {'-':>8s} {row['mape_pct']:10.1f}%")
    for _, row in att.iterrows():
        lines.append(f"{'attention ' + row['dataset'] + ' ' + row['model']:50s} {'<=15%':>8s} {row['mape_pct']:10.1f}%")
    for name in ["distserve", "distserve-vllm"]:
        sub = mape[mape["dataset"] == name]
        pct = (sub["mape_pct"] * sub["rows"]).sum() / sub["rows"].sum()
        lines.append(f"{name + ' (OPT, A100) iteration MAPE':50s} {'-':>8s} {pct:10.1f}%")
    return "\n".join(lines)
