"""fig09-fig11 experiments: ablation, sensitivity and phase diagram on tiny clusters (4 instances, 2 minutes)."""

import numpy as np
import pandas as pd
import pytest

from smetric.cluster.config import GlobalStore
from smetric.experiments.ablation import (
    ABLATION_VARIANTS,
    ablation,
    ablation_claims,
    ablation_gains,
    peak_goodput,
    run_cases,
    sensitivity,
    sensitivity_claims,
    sensitivity_summary,
)
from smetric.experiments.claims import VERDICTS, record_claims
from smetric.experiments.phase import phase_cells, phase_diagram, phase_regimes
from smetric.experiments.setups import offered_point

STORE = GlobalStore(capacity_gb=float("inf"), bandwidth_gbs=2.0)
TINY = {"30b": 4}
MINUTES = 2.0


@pytest.fixture(scope="module")
def ablation_frame():
    return ablation(testbeds=("30b",), rpm_per_instance={"30b": (9.0, 18.0)}, seeds=(0, 1), minutes={"30b": MINUTES},
                    n_instances=TINY, jobs=1)


@pytest.fixture(scope="module")
def sensitivity_frame():
    return sensitivity(hit_ratios=(0.1, 0.9), slacks=(2.0,), slo_scales=(0.5, 2.0), baselines=("least-load", "lmetric"),
                       rpm_per_instance=(9.0, 18.0), minutes=MINUTES, n_instances=4, jobs=1)


@pytest.fixture(scope="module")
def phase_frame():
    return phase_diagram(bandwidths=(2.0, 24.0), turns_medians=(1, 4), rpm_per_instance=(9.0,), n_instances=4,
                         minutes=MINUTES,
                         warmup_minutes=20.0, policies=("smetric", "least-load", "dynamo"), jobs=1)


def test_run_cases_matches_offered_point_and_rejects_unknown_keys():
    setups = {"s": {"testbed": "30b", "n_instances": 4, "minutes": MINUTES, "global_store": STORE}}
    cases = {"tokens": ("smetric", {"cost": "tokens"}), "ll": ("least-load", {})}
    points = [{"tag": "a", "case": "tokens", "setup": "s", "rpm_per_instance": 12.0, "seed": 1},
              {"tag": "b", "case": "ll", "setup": "s", "rpm_per_instance": 12.0, "seed": 1}]
    frame = run_cases(points, cases, setups, warmup_frac=0.25, jobs=1)
    assert list(frame["tag"]) == ["a", "b"] and list(frame["policy"]) == ["smetric", "least-load"]
    direct = offered_point(12.0, "smetric", testbed="30b", n_instances=4, minutes=MINUTES, seed=1, warmup_frac=0.25,
                           global_store=STORE, params={"cost": "tokens"})
    assert frame.loc[0, "goodput_tps"] == direct["goodput_tps"]
    assert frame.loc[0, "hit_ratio_hbm"] == direct["hit_ratio_hbm"]
    with pytest.raises(ValueError, match="unknown case 'nope'"):
        run_cases([{**points[0], "case": "nope"}], cases, setups, jobs=1)
    with pytest.raises(ValueError, match="unknown setup"):
        run_cases([{**points[0], "setup": "x"}], cases, setups, jobs=1)
    with pytest.raises(ValueError, match="no 'rpm_per_instance'"):
        run_cases([{k: v for k, v in points[0].items() if k != "rpm_per_instance"}], cases, setups, jobs=1)
    with pytest.raises(ValueError, match="rpm_per_instance must be > 0"):
        run_cases([{**points[0], "rpm_per_instance": 0.0}], cases, setups, jobs=1)


def test_ablation_frame_covers_every_variant_seed_and_load(ablation_frame):
    df = ablation_frame
    assert len(df) == len(ABLATION_VARIANTS) * 2 * 2
    assert set(df["variant"]) == set(ABLATION_VARIANTS) and set(df["policy"]) == {"smetric"}
    assert set(df["rpm_per_instance"]) == {9.0, 18.0}
    assert (df["goodput_tps"] <= df["throughput_tps"] + 1e-9).all()
    # a different workload seed is a different workload
    by_seed = df.pivot_table(index=["variant", "rpm_per_instance"], columns="seed", values="n_requests")
    assert (by_seed[0] != by_seed[1]).any()
    # the offered load is the workload's arrival rate: twice the rate, about twice the requests
    per_rate = df[df["seed"] == 0].groupby("rpm_per_instance")["n_requests"].first()
    assert 1.5 < per_rate[18.0] / per_rate[9.0] < 2.5


def test_ablation_gains_follow_the_peaks(ablation_frame):
    gains = ablation_gains(ablation_frame)
    assert len(gains) == 4 and gains["primary"].sum() == 2
    peaks = ablation_frame.groupby(["seed", "variant"])["goodput_tps"].max().groupby("variant").mean()
    for row in gains.itertuples():
        assert row.gain == pytest.approx(peaks[row.to_variant] / peaks[row.from_variant] - 1.0)
        assert row.gain_min <= row.gain_max
    primary = gains[gains["primary"]].set_index("claim_id")
    # the paper's order: cost model first (from v1), then the SLO guard on top (to the full SMETRIC)
    assert primary.loc["C15_ablation_cost", "to_variant"] == primary.loc["C15_ablation_guard", "from_variant"]
    assert ABLATION_VARIANTS[primary.loc["C15_ablation_guard", "to_variant"]] == {"cost": "attention", "guard": "slo"}


def test_ablation_claims_are_recordable(ablation_frame, tmp_path):
    rows = ablation_claims(ablation_gains(ablation_frame))
    table = record_claims("fig09", rows, outdir=tmp_path)
    assert set(table["claim_id"]) == {"C15_ablation_cost", "C15_ablation_guard"}
    assert set(table["verdict"]) <= set(VERDICTS)


def _gains(gain, lo, hi, paper):
    return pd.DataFrame({"testbed": ["30b", "235b"], "claim_id": "C15_ablation_cost", "component": "cost model",
                         "context": "with overload filter", "primary": True, "from_variant": "a", "to_variant": "b",
                         "peak_from": 1.0, "peak_to": 1.0, "gain": gain, "gain_min": lo, "gain_max": hi,
                         "n_seeds": 2, "paper": paper})


@pytest.mark.parametrize("gain, lo, hi, verdict", [
    ([0.05, 0.02], [0.03, 0.01], [0.07, 0.03], "reproduced"),
    ([0.05, 0.02], [-0.01, 0.01], [0.07, 0.03], "direction only"),   # one seed negative
    ([0.20, 0.02], [0.15, 0.01], [0.25, 0.03], "direction only"),   # far above the paper's +4.2 %
    ([0.05, -0.01], [0.03, -0.02], [0.07, 0.0], "not reproduced"),
])
def test_ablation_verdict_rule(gain, lo, hi, verdict):
    (row,) = ablation_claims(_gains(gain, lo, hi, [0.042, 0.019]))
    assert row["verdict"] == verdict


def test_sensitivity_frame_and_slo_wiring(sensitivity_frame):
    df = sensitivity_frame
    ours = df[df["policy"] == "smetric"]
    configs = set(map(tuple, ours[["param_hit_ratio", "param_slack", "slo_scale"]].drop_duplicates().to_numpy()))
    assert configs == {(0.5, 1.0, 1.0), (0.1, 1.0, 1.0), (0.9, 1.0, 1.0), (0.5, 2.0, 1.0), (0.5, 1.0, 0.5),
                       (0.5, 1.0, 2.0)}
    assert len(ours) == len(configs) * 2
    base = df[df["policy"] != "smetric"]
    assert base["param_hit_ratio"].isna().all() and set(base["slo_scale"]) == {0.5, 1.0, 2.0}
    # a baseline ignores the SLO, so only the metric changes: same work, more goodput under a looser SLO
    for _, sub in base.groupby(["policy", "rpm_per_instance"]):
        tight, loose = sub.set_index("slo_scale").loc[0.5], sub.set_index("slo_scale").loc[2.0]
        assert tight["throughput_tps"] == loose["throughput_tps"]
        assert tight["goodput_tps"] <= loose["goodput_tps"]


def test_sensitivity_summary_relative_to_default_and_best(sensitivity_frame):
    summary = sensitivity_summary(sensitivity_frame)
    assert set(summary["knob"]) == {"hit_ratio", "slack", "slo_scale"}
    default = summary[(summary["knob"] == "hit_ratio") & (summary["value"] == 0.5)].iloc[0]
    assert default["rel_to_default"] == 1.0
    base = peak_goodput(sensitivity_frame[sensitivity_frame["policy"] != "smetric"], ["slo_scale", "policy"])
    for row in summary.itertuples():
        best = base.xs(row.slo_scale, level="slo_scale")
        assert row.best_baseline_peak == best.max() and row.best_baseline in {"least-load", "lmetric"}
        assert row.gain_vs_best == pytest.approx(row.smetric_peak / best.max() - 1.0)
    assert summary.loc[summary["knob"] == "slo_scale", "value"].tolist() == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("hyper, slo, verdict", [
    ([0.02, 0.01], [0.03, 0.05], "reproduced"),
    ([0.02, -0.01], [0.03, 0.05], "direction only"),
    ([0.02, 0.01], [-0.03, 0.05], "direction only"),
    ([-0.02, 0.01], [-0.03, 0.05], "not reproduced"),
])
def test_sensitivity_verdict_rule(hyper, slo, verdict):
    summary = pd.DataFrame({"knob": ["hit_ratio", "slack", "slo_scale", "slo_scale"], "value": [0.1, 2.0, 0.5, 2.0],
                            "gain_vs_best": hyper + slo, "rel_to_default": 1.0, "best_baseline": "least-load"})
    (row,) = sensitivity_claims(summary)
    assert row["verdict"] == verdict and row["claim_id"] == "C17_robustness"


def test_phase_diagram_bounds_and_axes(phase_frame):
    df = phase_frame
    assert len(df) == 2 * 2 * 1 * 3
    assert (df["ideal_goodput_tps"] <= df["ideal_tps"]).all() and (df["ideal_goodput_tps"] <= df["offered_tps"]).all()
    assert np.allclose(df["frac_ideal"], df["goodput_tps"] / df["ideal_goodput_tps"])
    turns = df.groupby("turns_median")["mean_turns"].first()
    assert turns.is_monotonic_increasing and turns.iloc[0] > 1.0
    # the bound depends on the workload only, not on the store bandwidth
    assert (df.groupby("turns_median")["ideal_tps"].nunique() == 1).all()


def test_phase_cells_pick_the_best_baseline(phase_frame):
    cells = phase_cells(phase_frame)
    assert len(cells) == 4
    for row in cells.itertuples():
        runs = phase_frame[(phase_frame["bandwidth_gbs"] == row.bandwidth_gbs)
                           & (phase_frame["turns_median"] == row.turns_median)].set_index("policy")
        sub = runs["goodput_tps"]
        assert row.best_goodput == sub.drop("smetric").max() and row.best_baseline != "smetric"
        assert row.best_slo_attainment == runs["slo_attainment"].max()
        if row.regime != "overloaded":
            assert row.gain == pytest.approx(sub["smetric"] / sub.drop("smetric").max() - 1.0)


def test_phase_regimes_classify_by_tie_band_and_overload():
    frame = pd.DataFrame({
        "bandwidth_gbs": [1.0] * 8 + [2.0] * 8, "turns_median": [1.0, 1.0, 2.0, 2.0] * 4,
        "mean_turns": [3.0, 3.0, 6.0, 6.0] * 4, "rpm_per_instance": [5.0] * 4 + [9.0] * 4 + [5.0] * 4 + [9.0] * 4,
        "policy": ["smetric", "least-load"] * 8,
        "goodput_tps": [110, 100, 101, 100, 90, 100, 1, 2, 100, 100, 100, 100, 100, 100, 100, 100],
        "ideal_goodput_tps": 100.0, "hit_ratio_hbm": 0.5,
        "slo_attainment": [0.9] * 6 + [0.1, 0.4] + [0.9] * 8,   # the 7th and 8th rows: an overloaded cell
    })
    frame["frac_ideal"] = frame["goodput_tps"] / frame["ideal_goodput_tps"]
    cells = phase_cells(frame, tie_band=0.03, slo_floor=0.5)
    first = cells[cells["bandwidth_gbs"] == 1.0].set_index(["turns_median", "rpm_per_instance"])["regime"]
    assert first.to_dict() == {(1.0, 5.0): "smetric wins", (2.0, 5.0): "tie", (1.0, 9.0): "smetric loses",
                               (2.0, 9.0): "overloaded"}
    assert np.isnan(cells.set_index(["bandwidth_gbs", "turns_median", "rpm_per_instance"]).loc[(1.0, 2.0, 9.0), "gain"])
    regimes = phase_regimes(cells)
    total = regimes[regimes["axis"] == "all"].iloc[0]
    assert (total["smetric wins"], total["tie"], total["smetric loses"], total["overloaded"]) == (1, 5, 1, 1)
