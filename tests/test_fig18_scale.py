"""fig18 (first-request balancing at scale): the loads from fig06, the comparator, the stated rules, a small run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smetric.cluster.router_info import RouterInfo
from smetric.context import run_context
from smetric.experiments import scale
from smetric.experiments.claims import TIDY_COLUMNS, collect_claims, record_claims
from smetric.experiments.figures import fig18_scale as fig
from smetric.verdicts import verdict_violations

SEEDS = (0, 1, 2, 3)


def _frame(drop: float = -0.08) -> pd.DataFrame:
    """Two sizes (2, 8), one load and router; baselines ``a`` and ``b``. SMETRIC keeps 99 % of its goodput per
    instance; its gain over ``a`` goes from +3 % to +3 % + ``drop``; its queued-prefill max/mean is 1.5 against a's
    2.0. On the screening seed ``a`` beats ``b``, on the comparison seeds ``b`` beats ``a``."""
    rng = np.random.default_rng(7)
    rows = []
    for n in (2, 8):
        for s in (100, *SEEDS):
            ours = 103.0 * (0.99 if n == 8 else 1.0) * (1 + 0.002 * rng.standard_normal())
            a = ours / (1.03 + (drop if n == 8 else 0.0))
            values = {"a": a, "b": a * (0.9 if s == 100 else 1.2), **({} if s == 100 else {"smetric": ours})}
            for pol, gpi in values.items():
                q = {"smetric": 1.5, "a": 2.0, "b": 1.2}[pol] * (1 + 0.01 * rng.standard_normal())
                rows.append({"n_instances": n, "seed": s, "screening": s == 100, "load": "knee",
                             "rpm_per_instance": 51.0, "router_replicas": 1, "policy": pol,
                             "goodput_tps": gpi * n, scale.METRIC: gpi, "queued_prefill_max_mean": q,
                             "hottest_instance_share": 1.0 / n})
    return pd.DataFrame(rows)


def test_loads_are_fig06s_knee_and_the_point_past_it():
    committed = run_context().root / "figures" / "fig06_tps_vs_load_levels.csv"
    assert fig.Params().loads == fig.fig06_loads(committed)
    with pytest.raises(ValueError, match="paper_load"):
        fig.fig06_loads(committed, testbed="nope")


def test_as_deployed_models_of_the_four_routers_are_exact():
    """Why fig18 runs no "as deployed" variant: for these policies it is the exact view."""
    assert all(RouterInfo.as_deployed(p).exact for p in fig.Params().policies)


def test_comparator_is_fixed_on_the_screening_seeds():
    gains = scale.cell_gains(_frame())
    assert list(gains["comparator"]) == ["a", "a"]  # b is better on the comparison seeds, a on the screening one
    assert gains.loc[gains["n_instances"] == 2, "gain_mean"].item() == pytest.approx(0.03, abs=0.01)


def test_rules_judge_the_hand_built_frame():
    claims = scale.scale_claims(_frame())
    assert list(claims.columns) == list(TIDY_COLUMNS)
    by = claims.set_index("claim_id")
    assert by.loc["scale_retention", "verdict"] == "reproduced"  # -1 % against a -5 % bound
    assert by.loc["scale_gain_held", "verdict"] == "contradicted"  # -8 points against a -2 point bound
    assert by.loc["scale_imbalance", "verdict"] == "reproduced"  # 1.5 / 2.0 - 1 = -25 % <= 0
    assert by.loc["scale_retention", "point"] == "knee, 1 router"
    assert by.loc["scale_gain_held", "comparator"] == "a"  # one comparator at every N
    assert verdict_violations(claims) == []
    held = scale.scale_claims(_frame(drop=0.0)).set_index("claim_id")
    assert held.loc["scale_gain_held", "verdict"] == "reproduced"


def test_rules_need_two_sizes():
    with pytest.raises(ValueError, match="two instance counts"):
        scale.scale_claims(_frame()[lambda d: d["n_instances"] == 2])


def test_scale_runs_validates_its_inputs():
    common = {"n_instances": (2,), "loads": {"knee": 51.0}, "replicas": (1,), "replica_loads": (),
              "every_policy_loads": ("knee",),
              "testbed": "30b", "workload": "bailian-coder", "warmup_s": 10.0, "measured_s": 10.0}
    with pytest.raises(ValueError, match="disjoint"):
        scale.scale_runs(policies=("smetric", "lmetric"), seeds=(0, 1), screening_seeds=(1,), **common)
    with pytest.raises(ValueError, match="smetric"):
        scale.scale_runs(policies=("lmetric", "dynamo"), seeds=(0,), screening_seeds=(1,), **common)
    with pytest.raises(ValueError, match="positive"):
        scale.scale_runs(policies=("smetric", "lmetric"), seeds=(0,), screening_seeds=(1,),
                         **{**common, "loads": {"knee": 0.0}})
    with pytest.raises(ValueError, match="replica_loads"):
        scale.scale_runs(policies=("smetric", "lmetric"), seeds=(0,), screening_seeds=(1,),
                         **{**common, "replicas": (1, 8), "replica_loads": ("past",)})


def test_fig18_claims_stay_out_of_the_paper_claims_table(tmp_path):
    record_claims("fig01", [{"claim_id": "C1_agent_reuse", "reproduced": "x", "verdict": "reproduced",
                             "reason": "y"}], outdir=tmp_path)
    before = collect_claims(outdir=tmp_path)
    scale.scale_claims(_frame()).to_csv(tmp_path / "fig18_claims.csv", index=False)
    pd.testing.assert_frame_equal(collect_claims(outdir=tmp_path), before)


@pytest.fixture(scope="module")
def small_run():
    return scale.scale_runs(n_instances=(2, 4), loads={"knee": 51.0}, replicas=(1, 2), replica_loads=("knee",),
                            every_policy_loads=("knee",),
                            policies=("smetric", "least-load"), seeds=(0, 1), screening_seeds=(100,),
                            testbed="30b", workload="bailian-coder", warmup_s=15.0, measured_s=15.0, jobs=1)


def test_a_small_run_has_every_cell_and_sane_diagnostics(small_run):
    df = small_run
    screen = df[df["screening"]]
    assert set(screen["policy"]) == {"least-load"} and set(screen["n_instances"]) == {2}  # baselines, smallest N
    assert len(df) == 2 + 2 * 2 * 2 * 2  # screening: 2 cells; comparison: N x seeds x cells x 2 policies
    assert (df["hottest_instance_share"] >= 1.0 / df["n_instances"] - 1e-12).all()
    assert (df["hottest_instance_share"] <= 1.0).all()
    assert (df["queued_prefill_max_mean"] >= 1.0).all()
    assert (df[scale.METRIC] > 0).all() and (df["slo_attainment"] <= 1).all()
    claims = scale.scale_claims(df)
    assert list(claims["point"].unique()) == ["knee, 1 router", "knee, 2 routers"]
    assert verdict_violations(claims) == []


def test_replicas_change_the_routing(small_run):
    """One router and two replicas see different counters: least-load's runs differ."""
    ll = small_run[(small_run["policy"] == "least-load") & ~small_run["screening"]]
    one = ll[ll["router_replicas"] == 1].set_index(["n_instances", "seed"])["queued_prefill_max_mean"]
    two = ll[ll["router_replicas"] == 2].set_index(["n_instances", "seed"])["queued_prefill_max_mean"]
    assert not np.allclose(one.to_numpy(), two.loc[one.index].to_numpy())
