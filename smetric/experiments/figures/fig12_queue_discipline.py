"""Figure 12 (beyond the paper): queue disciplines inside an instance where queues form -- fcfs vs the S-Metric
score vs MLFQ, each ranked one with the oracle and the linear decode estimate, at two high-priority shares.

One frame holds both experiments of :mod:`smetric.experiments.queueing_figs`, told apart by ``part``: ``stream``
(one 30B instance) and ``cluster`` (the 30B testbed in open replay, once per ``workload``: the main one and the
real claude-code trace of ``second_row``). The blueprint's promises are judged in ``fig12_claims.csv``
(:func:`tables`; the rules and the starvation bound, stated before running, in that module).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import queueing_figs as qf
from .. import workload_rows as wr
from ..figure import FigureParams, param


@dataclass(frozen=True)
class Params(FigureParams):
    n_instances: int = param(4, "instances of the cluster part (30B testbed, open replay)")
    minutes: float = param(3, "measured window of the cluster part's agent workload")
    loads: tuple[float, ...] = param((64.0, 80.0), "cluster part: offered loads (requests / min / instance), "
                                                   "near and past the knee")
    workload: str = param("bailian-coder", "agent workload of the cluster part (testbeds.WORKLOADS)")
    router: str = param("smetric", "router of the cluster part")
    shares: tuple[float, ...] = param((0.0, 0.2), "shares of high-priority sessions")
    seeds: tuple[int, ...] = param((0, 1, 2, 3, 4, 5, 6, 7), "workload seeds (paired across configurations)")
    warmup_frac: float = param(0.25, "share of the arrival span not measured")
    short_rates: tuple[float, ...] = param((16.0, 22.0), "stream part: short turns per second on one instance "
                                                         "(capacity is ~18/s): near and past it")
    duration: float = param(60.0, "stream part: seconds of stream")
    long_every: float = param(4.0, "stream part: a long turn every this many seconds")
    output_sigma: float = param(1.0, "stream part: log-normal sigma of the output lengths around their medians")
    second_row: dict = param({"workload": wr.REAL_TRACE, "loads": (3.0, 5.0), "minutes": 10.0},
                             "parameters of the cluster row beside the main one: the real claude-code trace near "
                             "and past its knee ({} for none)")

    @classmethod
    def quick(cls) -> Params:
        return cls(n_instances=2, minutes=2, loads=(80.0,), shares=(0.2,), seeds=(0, 1), short_rates=(22.0,),
                   duration=30.0, second_row={})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    cluster = wr.compute_rows(p, lambda q: qf.cluster_comparison(
        q.loads, q.shares, q.seeds, n_instances=q.n_instances, minutes=q.minutes, warmup_frac=q.warmup_frac,
        workload=q.workload, router=q.router, jobs=jobs))
    stream = qf.stream_comparison(p.short_rates, p.shares, p.seeds, duration=p.duration, long_every=p.long_every,
                                  output_sigma=p.output_sigma, warmup_frac=p.warmup_frac, jobs=jobs)
    return pd.concat([stream, cluster], ignore_index=True)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return qf.comparison_table(df).round(3)


def plot(df: pd.DataFrame):
    return qf.plot_queue_discipline(df)


def claims(df: pd.DataFrame) -> list[dict]:
    """No paper claim (the scheduler blueprint is a design note): its promises are judged in
    ``fig12_claims.csv`` (:func:`tables`)."""
    return []


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``fig12_claims``: the blueprint's promises, one row per point, judged by the verdict rules."""
    return {"fig12_claims": qf.promise_claims(df)}


def findings(df: pd.DataFrame) -> str:
    return "Findings (no paper claim for fig12; seed means):\n" + "\n".join(
        f" - {line}" for line in qf.queue_findings(df, qf.promise_claims(df)))
