"""Figure 12 (beyond the paper): queue disciplines inside an instance -- fcfs vs S-Metric score vs MLFQ.

One frame holds both experiments, told apart by ``part``: ``disciplines`` (the 30B testbed in closed
replay, routers x disciplines x loads, once per ``workload``: the main one and the real claude-code
trace of ``second_row``) and ``weights`` (the score's weights on one instance fed short
turns past capacity plus a periodic long turn).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import queueing_figs as qf
from .. import workload_rows as wr
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    testbed: str = param("30b", "paper testbed (provisioned global store)")
    n_instances: int = param(32, "instances")
    minutes: float = param(5, "measured window of the agent workload (sessions start 6 h earlier)")
    loads: tuple[float, ...] = param((36.0, 48.0, 56.0),
                                     "offered loads (requests / min / instance): below, at, past the knee")
    routers: tuple[str, ...] = param(("smetric", "least-load"), "routers")
    disciplines: tuple[str, ...] = param(("fcfs", "smetric-score", "mlfq"), "queue disciplines")
    seeds: tuple[int, ...] = param((0, 1, 2), "workload seeds")
    warmup_frac: float = param(0.25, "share of the arrival span not measured")
    workload: str = param("bailian-coder", "agent workload: a preset or the real claude-code trace (setups.WORKLOADS)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replayed at the offered rate "
                                    "(None: workload)")
    alphas: tuple[float, ...] = param((0.0, 1.0, 10.0, 100.0), "weight sweep: alpha (1 / estimated GPU time)")
    gammas: tuple[float, ...] = param((0.0, 1.0, 10.0), "weight sweep: gamma (waiting time)")
    short_rate: float = param(24.0, "weight sweep: short turns per second (capacity is ~18/s)")
    duration: float = param(120.0, "weight sweep: seconds of stream")
    long_every: float = param(4.0, "weight sweep: a long turn every this many seconds")
    second_row: dict = param({"workload": wr.REAL_TRACE, "loads": (3.0, 5.0, 8.0), "minutes": 10.0},
                             "parameters of the disciplines row beside the main one: the real claude-code trace "
                             "below, at and past its knee ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_instances=4, minutes=2, loads=(36.0, 56.0), seeds=(0,), alphas=(0.0, 1.0, 100.0),
                   gammas=(0.0, 10.0), duration=60.0,
                   second_row={"workload": wr.REAL_TRACE, "loads": (3.0, 8.0), "minutes": 10.0})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    routed = wr.compute_rows(p, lambda q: qf.discipline_comparison(
        q.loads, q.routers, q.disciplines, q.seeds, testbed=q.testbed, n_instances=q.n_instances, minutes=q.minutes,
        warmup_frac=q.warmup_frac, workload=q.workload, trace=q.trace, jobs=jobs))
    weights = qf.weight_sweep(p.alphas, p.gammas, p.seeds, short_rate=p.short_rate, duration=p.duration,
                              long_every=p.long_every, jobs=jobs)
    return pd.concat([routed.assign(part="disciplines"), weights.assign(part="weights")], ignore_index=True)


def parts(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``disciplines`` and ``weights`` experiments, each with only its own columns."""
    def part(name):
        return df[df["part"] == name].drop(columns="part").dropna(axis=1, how="all").reset_index(drop=True)

    return part("disciplines"), part("weights")


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return qf.comparison_table(parts(df)[0]).round(3)


def plot(df: pd.DataFrame):
    return qf.plot_queue_discipline(*parts(df))


def claims(df: pd.DataFrame) -> list[dict]:
    """No paper claim (the scheduler blueprint is a design note): :func:`findings` prints what was measured."""
    return []


def findings(df: pd.DataFrame) -> str:
    return "Findings (no paper claim for fig12; seed means):\n" + "\n".join(
        f" - {line}" for line in qf.queue_findings(*parts(df)))
