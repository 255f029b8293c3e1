"""Figure 7: prefill TPS vs load under PD disaggregation (claim C14)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import main_results as mr
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    policies: tuple[str, ...] = param(("smetric", *mr.MAIN_BASELINES),
                                      "routers compared (smetric and the paper's named baselines)")
    multipliers: tuple[float, ...] = param((2, 3, 4, 5, 6, 7, 8, 9, 10), "loads in paper multipliers")
    split: tuple[int, int] = param((24, 8), "prefill, decode instances")
    minutes: float = param(10, "measured window of the agent workload")
    seeds: tuple[int, ...] = param((0, 1, 2, 3), "workload seeds")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(policies=("smetric", "lmetric", "least-load"), multipliers=(4, 6), minutes=1.5, seeds=(0,))


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return mr.pd_prefill_vs_load(policies=p.policies, multipliers=p.multipliers, split=tuple(p.split),
                                 minutes=p.minutes, seeds=p.seeds, warmup_frac=p.warmup_frac, jobs=jobs)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df[["policy", "multiplier", "rpm_per_instance", "prefill_tps", "goodput_tps", "ttft_p50",
               "hit_ratio_hbm"]].head()


def plot(df: pd.DataFrame):
    return mr.plot_vs_load(df, metric="prefill_tps", ylabel="prefill TPS (k prompt tokens/s within TTFT SLO)",
                           title=f"Prefill TPS vs load, PD disaggregated {mr.split_label(df)}")


def findings(df: pd.DataFrame) -> str:
    return mr.peak_table(df, "prefill_tps").to_string(
        index=False, float_format=lambda x: f"{x:,.3f}" if abs(x) < 10 else f"{x:,.0f}")


claims = mr.pd_claims
