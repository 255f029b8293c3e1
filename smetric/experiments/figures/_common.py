"""Parameters shared by the figures that simulate one testbed at offered loads (figs 2-4)."""

from __future__ import annotations

from dataclasses import dataclass

from ..figure import FigureParams, param


@dataclass(frozen=True)
class TestbedRun(FigureParams):
    """A paper testbed replaying the synthetic agent workload (fields common to figs 2-4)."""

    testbed: str = param("30b", "paper testbed: 30b (32x Qwen3-30B-A3B TP1 on H20) or 235b (8x Qwen3-235B-A22B TP8)")
    n_instances: int = param(32, "instances of the testbed's model")
    minutes: float = param(20.0, "measured window of the agent workload (sessions start up to 30 min earlier)")
    seed: int = param(0, "workload and policy seed")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured (cold caches)")
    replay: str = param("open", "open: the paper's trace replay; closed: a follow-up waits for its parent's response")
