"""Parameters shared by the figures that simulate one testbed at offered loads (figs 2-4)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..figure import FigureParams, param

#: Workload seeds of a comparative claim (at least 8, paired per seed).
SEEDS = (0, 1, 2, 3, 4, 5, 6, 7)


@dataclass(frozen=True)
class TestbedRun(FigureParams):
    """A paper testbed replaying an agent workload (fields common to figs 2-4)."""

    testbed: str = param("30b", "paper testbed: 30b (32x Qwen3-30B-A3B TP1 on H20) or 235b (8x Qwen3-235B-A22B TP8)")
    n_instances: int = param(32, "instances of the testbed's model")
    minutes: float = param(5.0, "measured window of the agent workload (sessions start 6 h earlier)")
    seeds: tuple[int, ...] = param(SEEDS, "workload and policy seeds (claims pair them: same workload per seed)")
    workload: str = param("bailian-coder",
                          "agent workload: a preset or the real claude-code trace (testbeds.WORKLOADS)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replayed at the offered rate "
                                    "(None: workload)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured (cold caches)")
    replay: str = param("closed", "closed: a follow-up waits for its parent's response (default); open: trace replay")

    def run_kwargs(self) -> dict:
        """The keyword arguments every fig02-04 experiment takes from these fields: all of them."""
        return {f.name: getattr(self, f.name) for f in fields(TestbedRun)}
