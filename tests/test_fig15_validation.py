"""Figure 15 (validation against published operating points): the rules on hand-made frames, the setup, a tiny run."""

import math

import numpy as np
import pandas as pd
import pytest

from smetric.experiments import validation as va
from smetric.experiments.figures import fig15_validation as fig15
from smetric.hardware import calibration


@pytest.mark.parametrize("loads, values, expected", [
    ((10, 20, 30), (1.0, 0.95, 0.85), 25.0),  # crosses 0.90 halfway between 20 and 30
    ((30, 10, 20), (0.85, 1.0, 0.95), 25.0),  # order of the grid does not matter
    ((10, 20, 30), (0.95, 0.5, 0.99), 10 + 10 * 0.05 / 0.45),  # the first crossing counts
    ((10, 20), (0.8, 0.7), math.nan),  # fails already at the lowest load
    ((10, 20), (0.99, 0.91), math.inf),  # never fails on the grid
])
def test_knee_interpolates_the_first_crossing(loads, values, expected):
    got = va.knee(loads, values)
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


def test_knee_for_a_value_that_must_stay_below():
    assert va.knee((80, 100), (0.2, 24.2), 1.0, higher_is_better=False) == pytest.approx(80 + 20 * 0.8 / 24.0)
    with pytest.raises(ValueError):
        va.knee((1, 2), (0.5,))


def _frame(attain_at_point, tpot_miss, ttft_miss, knee_shift=0.0, seeds=(0, 1, 2)):
    """LMetric sweep (primary setup) whose attainment falls linearly from 1 at 40 to 0 at 120 (+ shift),
    one preset block, and the point at 53.8 with the given attainment and miss shares."""
    rows = []
    for s in seeds:
        for rpm in (40.0, va.LMETRIC_RPM, 80.0, 120.0):
            att = attain_at_point if rpm == va.LMETRIC_RPM else float(np.clip(1 - (rpm - 40 - knee_shift) / 80, 0, 1))
            rows.append({"block": "lmetric", "preset": "bailian-coder", "seed": s, "setup": va.PRIMARY_SETUP,
                         "policy": "lmetric", "n_instances": 16, "rpm_per_instance": rpm, "slo_attainment": att,
                         "ttft_p50": 0.1 if rpm < 100 else 30.0, "busy_mean": 0.9, "running_mean": 10.0 + s,
                         "ttft_miss": ttft_miss, "tpot_miss": tpot_miss, "hit_ratio": 0.8, "ttft_p99": 1.1,
                         "tpot_p50": 0.018, "tpot_p99": 0.024, "arrived_share": 1.0 - rpm / 1000})
        for policy, scale in (("smetric", 1.0), ("lmetric", 0.9)):
            for rpm in (10.0, 20.0):
                rows.append({**rows[-1], "block": "finding6", "preset": "long-context", "setup": "default stack",
                             "policy": policy, "rpm_per_instance": rpm, "slo_attainment": 1.0 if rpm == 10 else
                             0.8 * scale, "ttft_p50": 0.2, "arrived_share": 1.0 - rpm / 1000})
    return pd.DataFrame(rows)


def test_consistency_rule_and_cause_follow_the_frame():
    # median TTFT 0.1 s at 80, 30 s at 120: capacity 80 + 40 * 0.9 / 29.9 = 81.2, in [53.8, 215.2]: consistent,
    # whatever the SLO attainment at the point (a side row: the artifact sets no SLO)
    low_slo = va.consistency(_frame(attain_at_point=0.7, tpot_miss=0.3, ttft_miss=0.01))
    assert low_slo["verdict"] == "consistent" and not low_slo["failing"]
    assert low_slo["capacity"] == pytest.approx(80 + 40 * 0.9 / 29.9)
    assert low_slo["slo_attainment"] == pytest.approx(0.7) and low_slo["cause"] == "TPOT"
    assert not low_slo["serves_slo"]
    # the point at 0.7 < 0.9 is the first crossing: between 40 (att 1.0) and 53.8 (0.7)
    assert low_slo["knee"] == pytest.approx(40 + 13.8 * 0.1 / 0.3)
    assert va.consistency(_frame(0.7, tpot_miss=0.01, ttft_miss=0.3))["cause"] == "TTFT"
    # a capacity below half the implied one fails, and says so
    df = _frame(attain_at_point=0.95, tpot_miss=0.05, ttft_miss=0.0)
    df.loc[df["rpm_per_instance"] >= va.LMETRIC_RPM, "ttft_p50"] = 30.0  # median TTFT > 1 s from the point on
    bad = va.consistency(df)
    assert bad["verdict"] == "not consistent" and bad["capacity"] < 53.8
    assert bad["failing"] == ["capacity within [53.8, 215.2]"]
    # never saturating on the grid leaves the capacity unknown: not consistent, said so
    never = _frame(attain_at_point=0.95, tpot_miss=0.05, ttft_miss=0.0).assign(ttft_p50=0.1)
    high = va.consistency(never)
    assert high["verdict"] == "not consistent" and math.isinf(high["capacity"])
    assert high["failing"] == ["capacity within [53.8, 215.2] (not found on the load grid)"]


def test_knee_table_takes_the_best_router_and_its_interval():
    knees = va.knee_table(_frame(0.7, 0.3, 0.0)).set_index("preset")
    row = knees.loc["long-context"]
    assert row["best_router"] == "smetric"  # 0.8 at 20 vs lmetric's 0.72: a later crossing
    assert row["knee"] == pytest.approx(10 + 10 * 0.1 / 0.2) and row["n_seeds"] == 3
    assert row["knee_low"] == row["knee_high"] == pytest.approx(row["knee"])  # equal seeds: zero-width interval
    assert row["capacity_censored"] == 3 and math.isinf(row["capacity"])


def test_point_table_reports_the_interval_over_seeds():
    df = _frame(0.7, 0.3, 0.0)
    df.loc[(df["rpm_per_instance"] == va.LMETRIC_RPM) & (df["seed"] == 2), "slo_attainment"] = 0.4
    p = va.point_table(df).iloc[0]
    assert p["slo_attainment"] == pytest.approx(0.6) and p["n_seeds"] == 3
    assert p["slo_low"] < 0.6 < p["slo_high"]
    assert p["running_mean"] == pytest.approx(11.0)


def test_findings_print_the_frames_numbers():
    df = _frame(0.7, 0.3, 0.01)
    text = fig15.findings(df)
    v = va.consistency(df)
    assert f"SLO attainment {v['slo_attainment']:.3f}" in text
    assert f"Verdict (capacity within [0.5x, 2x]): {v['verdict']}" in text and "miss its TPOT part" in text
    assert f"knee (>= 90% SLO) {v['knee']:.1f}" in text and f"Capacity (median TTFT <= 1 s) {v['capacity']:.1f}" in text
    knee = va.knee_table(df).set_index("preset").loc["long-context", "knee"]
    assert f"long-context: knee {knee:.1f}" in text and f"Finding 6 is {43 / knee:.2f}-{48 / knee:.2f}x" in text
    shares = va.arrived_shares(df)
    lc = shares[shares["preset"] == "long-context"]
    assert lc["arrived_share"].tolist() == pytest.approx([0.99, 0.98])  # the mean over routers and seeds
    assert "requests arriving / offered 0.99 at 10 -> 0.98 at 20" in text


def test_lmetric_cluster_is_the_artifacts_setup():
    c = va.lmetric_cluster()
    assert (c.model, c.gpu, c.tp, c.n_instances, c.mode) == ("qwen3-30b-a3b", "h20", 1, 16, "colocated")
    assert (c.max_batched_tokens, c.gpu_mem_util, c.global_store, c.replay) == (4096, 0.9, None, "closed")
    store = va.lmetric_cluster("lmcache-mooncake, closed")
    assert store.global_store is not None and store.kv_connector.name == "lmcache-mooncake"
    assert va.lmetric_cluster("no store, open").replay == "open"
    with pytest.raises(ValueError, match="setup"):
        va.lmetric_cluster("ideal")
    assert va.IMPLIED_CAPACITY_RPM == pytest.approx(107.6)
    assert c.hardware_spec().kv_capacity_tokens == 15683 * 16  # the artifact's num_blocks, not the 309k estimate


def test_perf_table_reads_the_calibration_numbers():
    table = va.perf_model_table()
    assert not table["comparison"].str.contains("splitwise").any()
    ds, _ = calibration.distserve_table()
    for (dataset, model), sub in ds.groupby(["dataset", "model"]):
        row = table[(table["comparison"] == dataset) & (table["model"] == model)].iloc[0]
        assert row["mape_min_pct"] == sub["mape_pct"].min() and row["worst_pct"] == sub["max_ape_pct"].max()
    linear = calibration.linear_mape_table()
    assert table[table["comparison"] == "vidur-linear"]["mape_max_pct"].max() == linear[
        linear["dataset"] == "vidur-linear"]["mape_pct"].max()


def test_tiny_run_shapes_and_bounds():
    df = va.validation_runs(seeds=(0, 1), lmetric_loads=(20.0, va.LMETRIC_RPM), variant_loads=(va.LMETRIC_RPM,),
                            lmetric_minutes=1.5, presets=("bailian-coder",),
                            preset_loads={"bailian-coder": (20.0, 40.0)},
                            preset_instances=2, preset_minutes=1.5, policies=("lmetric", "least-load"),
                            lmetric_instances=2, jobs=1)
    lm = df[df["block"] == "lmetric"]
    assert set(lm["policy"]) == {"lmetric"} and set(lm["setup"]) == set(va.LMETRIC_SETUPS)
    assert len(lm) == 2 * (2 + 1 + 1)
    assert len(df[df["block"] == "finding6"]) == 2 * 2 * 2
    assert df["slo_attainment"].between(0, 1).all() and df["busy_mean"].between(0, 1).all()
    # a request that meets the SLO meets both parts: the misses cover every failure
    assert (df["ttft_miss"] + df["tpot_miss"] >= 1 - df["slo_attainment"] - 1e-12).all()
    assert len(va.point_table(df)) == len(va.LMETRIC_SETUPS)


def test_the_lmetric_point_replays_a_trace_file(tmp_path):
    """``trace=PATH``: the LMetric block runs the file at each load (the same requests for every seed)."""
    from smetric.testbeds import trace_workload
    from smetric.workload.synthetic import synth_agent_workload
    from smetric.workload.writers import write_trace

    path = write_trace(synth_agent_workload(duration=900.0, warmup=3600.0, seed=2, preset="bailian-coder",
                                            requests_per_minute=120.0), tmp_path / "coder.jsonl", "bailian")
    df = va.validation_runs(seeds=(0, 1), lmetric_loads=(20.0,), variant_loads=(20.0,), lmetric_minutes=2.0,
                            presets=("bailian-coder",), preset_loads={"bailian-coder": (20.0,)}, preset_instances=2,
                            preset_minutes=1.5, policies=("lmetric",), lmetric_instances=2, trace=str(path), jobs=1)
    lm = df[df["block"] == "lmetric"]
    assert set(lm["preset"]) == {str(path)} and set(df.loc[df["block"] == "finding6", "preset"]) == {"bailian-coder"}
    arrived = len(trace_workload(str(path), 2, 2.0, 20.0).window(30.0, 120.0))  # after the warm-up quarter
    primary = lm[lm["setup"] == va.PRIMARY_SETUP]
    assert primary.groupby("seed")["n_requests"].first().nunique() == 1  # the same file for every seed
    assert abs(primary["n_requests"].iloc[0] - arrived) <= 2


@pytest.mark.parametrize("kwargs, match", [({"seeds": (0,)}, "at least 2 seeds"),
                                           ({"presets": ("toolagent",)}, "no loads")])
def test_validation_runs_rejects_bad_plans(kwargs, match):
    base = {"seeds": (0, 1), "lmetric_loads": (20.0,), "variant_loads": (20.0,), "lmetric_minutes": 1.0,
            "presets": ("bailian-coder",), "preset_loads": {"bailian-coder": (20.0,)}, "preset_instances": 2,
            "preset_minutes": 1.0, "policies": ("lmetric",)}
    with pytest.raises(ValueError, match=match):
        va.validation_runs(**{**base, **kwargs})
