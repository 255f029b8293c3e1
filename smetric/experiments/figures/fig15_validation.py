"""Figure 15: the model next to published operating points (LMetric's artifact, Finding 6, perf-model checks)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import validation as va
from ..figure import FigureParams, param

_FMT = {"float_format": lambda x: f"{x:,.3f}" if abs(x) < 10 else f"{x:,.1f}"}


@dataclass(frozen=True)
class Params(FigureParams):
    seeds: tuple[int, ...] = param(tuple(range(8)), "workload seeds (intervals over seeds)")
    lmetric_loads: tuple[float, ...] = param((30, 40, 48, 53.8, 60, 70, 80, 90, 100, 110, 120),
                                             "loads of the LMetric-artifact sweep (requests/min/instance)")
    variant_loads: tuple[float, ...] = param((40, 48, 53.8, 60, 70),
                                             "loads of the store and open-replay variants of the LMetric setup")
    lmetric_instances: int = param(16, "instances of the LMetric artifact (16 H20)")
    lmetric_minutes: float = param(10.0, "measured window of the LMetric runs (the artifact replays 20 min)")
    trace: str | None = param(None, "a timestamped trace file or catalog name replacing bailian-coder at the LMetric "
                                    "point (the artifact replays the public BAILIAN coder trace: qwen-coder)")
    presets: tuple[str, ...] = param(("bailian-coder", "toolagent", "long-context", "claude-code"),
                                     "workload presets whose knee is compared with Finding 6")
    preset_loads: dict = param({"bailian-coder": (36, 42, 48, 54, 60, 66), "toolagent": (20, 30, 40, 50, 60, 70),
                                "long-context": (8, 12, 16, 20, 24), "claude-code": (1, 2, 4, 6, 8, 10)},
                               "loads per preset bracketing its knee (requests/min/instance)")
    preset_instances: int = param(32, "instances of the 30B testbed for the preset knees")
    preset_minutes: float = param(5.0, "measured window of the preset runs")
    policies: tuple[str, ...] = param(("smetric", "lmetric"), "routers of the preset knees (the best one counts)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(seeds=(0, 1), lmetric_loads=(40, 53.8, 80, 120), variant_loads=(40, 53.8, 70),
                   lmetric_instances=4, lmetric_minutes=3.0, preset_instances=8, preset_minutes=3.0,
                   preset_loads={"bailian-coder": (36, 54, 66), "toolagent": (20, 50, 70),
                                 "long-context": (8, 16, 24), "claude-code": (2.0, 6.0)})


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    return va.validation_runs(**p.as_dict(), jobs=jobs)  # every parameter is an argument of the same name


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return va.point_table(df)


plot = va.plot_validation


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The LMetric point, the knees and the performance model's comparisons (the last does not depend on df)."""
    return {"fig15_validation_point": va.point_table(df), "fig15_validation_knees": va.knee_table(df),
            "fig15_validation_perf": va.perf_model_table()}


def claims(df: pd.DataFrame) -> list[dict]:
    """No paper claim: the consistency verdict (not a claim of the paper) is printed by :func:`findings`."""
    return []


def findings(df: pd.DataFrame) -> str:
    """The LMetric point, the knees against Finding 6 and the implied capacity, the verdict and its cause."""
    v = va.consistency(df)
    knees = va.knee_table(df)
    f6 = knees[knees["block"] == "finding6"]
    lo, hi = va.FINDING6_RPM
    shares = va.arrived_shares(df)
    per_preset = []
    for _, r in f6.iterrows():
        s = shares[(shares["block"] == "finding6") & (shares["preset"] == r["preset"])]
        flow = (f"requests arriving / offered {s['arrived_share'].iloc[0]:.2f} at {s['rpm_per_instance'].iloc[0]:g} "
                f"-> {s['arrived_share'].iloc[-1]:.2f} at {s['rpm_per_instance'].iloc[-1]:g}")
        capacity = (f"capacity (median TTFT <= 1 s) {r['capacity']:.1f} [{r['capacity_low']:.1f}, "
                    f"{r['capacity_high']:.1f}]" if r["capacity_censored"] == 0 else "capacity beyond the grid")
        if r["knee_censored"] == 0:
            knee = (f"knee {r['knee']:.1f} [{r['knee_low']:.1f}, {r['knee_high']:.1f}] ({r['best_router']}); "
                    f"Finding 6 is {lo / r['knee']:.2f}-{hi / r['knee']:.2f}x of it")
        else:
            below, above = r["knee_below_grid"], r["knee_censored"] - r["knee_below_grid"]
            where = "; ".join(part for part in (f"{below} already below it at the grid's lowest load" if below else "",
                                                f"{above} above it at every load" if above else "") if part)
            knee = (f"knee not determined ({va.KNEE_ATTAINMENT:.0%} SLO attainment) for {r['knee_censored']} of "
                    f"{len(df['seed'].unique())} seeds: {where} ({r['best_router']})")
        per_preset.append(f"  {r['preset']}: {knee}; {capacity}; {flow}")
    text = [
        f"LMetric point ({va.LMETRIC_RPM} requests/min/instance, {va.PRIMARY_SETUP}): SLO attainment "
        f"{v['slo_attainment']:.3f} [{v['slo_low']:.3f}, {v['slo_high']:.3f}], busy fraction {v['busy_mean']:.2f}, "
        f"{v['running_mean']:.1f} running sequences per instance; requests missing TTFT {v['ttft_miss']:.3f}, "
        f"TPOT {v['tpot_miss']:.3f} (TPOT p50 {1e3 * v['tpot_p50']:.1f} ms, p99 {1e3 * v['tpot_p99']:.1f} ms).",
        f"Capacity (median TTFT <= 1 s) {v['capacity']:.1f} = {v['capacity_ratio']:.2f}x the implied capacity "
        f"{va.IMPLIED_CAPACITY_RPM:.1f} (the artifact's load is about half the testbed's maximum rate).",
        f"Verdict (capacity within [{va.CONSISTENT_BAND[0]:g}x, {va.CONSISTENT_BAND[1]:g}x]): {v['verdict']}"
        + (f" (fails: {'; '.join(v['failing'])})" if v["failing"] else "") + ".",
        f"Side row, not the verdict (the artifact sets no SLO): SMETRIC's SLO attainment {v['slo_attainment']:.3f}; "
        f"with decode {va.DECODE_ERROR:.0%} faster {v['slo_decode_fast']:.3f}, {va.DECODE_ERROR:.0%} slower "
        f"{v['slo_decode_slow']:.3f}; knee (>= {va.KNEE_ATTAINMENT:.0%} SLO) {v['knee']:.1f} = "
        f"{v['knee_ratio']:.2f}x; most requests that miss the SLO miss its {v['cause']} part.",
        f"Finding 6 ({lo:.0f}-{hi:.0f} requests/min/instance in production) against each preset's knee "
        f"({df['seed'].nunique()} seeds, 95 % t-interval):",
        *per_preset,
        "",
        va.point_table(df).to_string(index=False, **_FMT),
        "",
        knees.to_string(index=False, **_FMT),
        "",
        va.perf_model_table().to_string(index=False, **_FMT),
    ]
    return "\n".join(text)
