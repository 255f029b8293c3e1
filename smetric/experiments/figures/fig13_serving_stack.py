"""Figure 13: SMETRIC's gain at the knee and past it as the KV path goes from ``ideal`` to the full
vLLM + LMCache + Mooncake stack, one mechanism at a time (:mod:`smetric.experiments.serving_stack`)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import serving_stack as ss
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    testbeds: tuple[str, ...] = param(("30b", "235b"), "paper testbeds")
    workload: str = param("bailian-coder", "workload preset (testbeds.WORKLOADS)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replayed at the offered rate "
                                    "(None: workload)")
    screen_rpm: dict = param({"30b": (42.0, 48.0, 54.0, 60.0), "235b": (30.0, 36.0, 42.0, 48.0)},
                             "screen grid (requests / min / instance) per testbed: finds the best baseline's knee")
    candidates: tuple[str, ...] = param(("lmetric", "llm-d", "sglang", "dynamo", "least-load"),
                                        "baselines screened under the full stack")
    n_baselines: int = param(2, "best screened baselines carried into the ladder (least-load is always carried)")
    past_factor: float = param(1.25, "the past-the-knee load is this times the knee")
    screen_seeds: tuple[int, ...] = param((0, 1), "seeds of the screen")
    seeds: tuple[int, ...] = param((0, 1, 2, 3, 4, 5, 6, 7), "workload seeds of the ladder")
    mechanisms: tuple[str, ...] = param(ss.MECHANISMS, "ladder rows (cumulative) and full-stack variants")
    minutes: dict = param({"30b": 4.0, "235b": 8.0}, "measured window per testbed (shortened to fit the budget)")
    n_instances: dict = param({"30b": 32, "235b": 8}, "instances per testbed")
    warmup_frac: float = param(0.25, "share of the window simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(testbeds=("30b",), screen_rpm={"30b": (36.0, 48.0)}, candidates=("lmetric", "least-load"),
                   n_baselines=1, screen_seeds=(0,), seeds=(0, 1),
                   mechanisms=("ideal", "+ blocking loads", "full (lmcache-mooncake)", "lmcache-mooncake-slow"),
                   minutes={"30b": 2.0}, n_instances={"30b": 4})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return ss.serving_stack(**p.as_dict(), jobs=jobs)  # every parameter is an argument of the same name


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return ss.stack_gains(df).drop(columns="tie").round(4)


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"fig13_serving_stack_gains": ss.stack_gains(df),
            "fig13_serving_stack_screen": ss.choice_table(df),
            "fig13_serving_stack_load_only": ss.load_only_table(df)}


def plot(df: pd.DataFrame):
    return ss.plot_serving_stack(ss.stack_gains(df))


def claims(df: pd.DataFrame) -> list[dict]:
    """fig13 is the home of no claim (C9, C12, C13 live in fig03/fig06): :func:`findings` prints what bears on them."""
    return []


def findings(df: pd.DataFrame) -> str:
    return "Findings (no claim row for fig13; gains are paired over seeds, 95 % t-intervals):\n" + "\n".join(
        f" - {line}" for line in ss.stack_findings(df))
