"""fig13 (serving stack): the mechanism ladder's configurations, the knee rule, paired gains and findings."""

import math
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from smetric.cluster.config import GlobalStore
from smetric.cluster.connector import KVConnector
from smetric.experiments import serving_stack as ss
from smetric.experiments.figures import fig13_serving_stack as fig13
from smetric.testbeds import TESTBED_DEFAULTS, paper_cluster
from smetric.verdicts import bound_verdict


@pytest.mark.parametrize("testbed,tp", [("30b", 1), ("235b", 8)])
def test_ladder_goes_from_ideal_to_the_preset_one_change_at_a_time(testbed, tp):
    clusters = [paper_cluster(testbed, **ss.mechanism_overrides(m, tp)) for m in ss.LADDER]
    first, last = clusters[0], clusters[-1]
    assert first.kv_connector.ideal and not first.cache_replies and first.hit_granularity is None
    # the last rung is exactly the testbed default: the lmcache-mooncake preset, reply KV, 16-token hits
    assert last == paper_cluster(testbed) and last.kv_connector == KVConnector.preset("lmcache-mooncake")
    assert TESTBED_DEFAULTS["kv_connector"] == ss.FULL
    blocking = clusters[ss.LADDER.index("+ blocking loads")].kv_connector
    link = GlobalStore.provisioned(tp)
    assert not blocking.layerwise and blocking.load_gbs == link.bandwidth_gbs
    assert blocking.load_latency_s == link.latency_s and blocking.lookup_s == 0
    assert all(math.isinf(getattr(blocking, f)) for f in ("store_gbs", "nic_gbs_per_gpu", "pcie_gbs"))

    def state(c):
        return {"cache_replies": c.cache_replies, "hit_granularity": c.hit_granularity,
                "model": c.kv_connector.model, **{k: v for k, v in asdict(c.kv_connector).items()
                                                  if k not in ("name", "model")}}

    for a, b in zip(clusters, clusters[1:]):
        sa, sb = state(a), state(b)
        changed = [k for k in sa if sa[k] != sb[k]]
        # each rung changes one thing; the switch to the lmcache model also sets its link numbers
        assert len(changed) == 1 or "model" in changed, changed


def test_variants_and_unknown_mechanism():
    layer = paper_cluster("30b", **ss.mechanism_overrides("full, layer-wise", 1))
    assert layer.kv_connector == KVConnector.preset(ss.FULL, layerwise=True)
    replies = paper_cluster("30b", **ss.mechanism_overrides("full + store replies", 1))
    assert replies.global_store_replies and replies.kv_connector == KVConnector.preset(ss.FULL)
    slow = paper_cluster("235b", **ss.mechanism_overrides("lmcache-mooncake-slow", 8))
    assert slow.kv_connector == KVConnector.preset("lmcache-mooncake-slow")
    with pytest.raises(ValueError, match="unknown mechanism"):
        ss.mechanism_overrides("nope", 1)


def _frame(gains=None, ll=None):
    """A hand-made frame: screen on 2 loads, then 2 mechanisms x 2 loads x 4 seeds."""
    rows = []
    screen = {("lmetric", 10.0): 90, ("lmetric", 20.0): 100, ("dynamo", 10.0): 95, ("dynamo", 20.0): 80,
              ("least-load", 10.0): 70, ("least-load", 20.0): 60}
    for (pol, rpm), g in screen.items():
        for seed in (0, 1):
            rows.append({"stage": "screen", "testbed": "30b", "seed": seed, "mechanism": "full (lmcache-mooncake)",
                         "load": "screen", "rpm_per_instance": rpm, "policy": pol, "goodput_tps": g + seed})
    gains = gains or {"ideal": 0.0, "full (lmcache-mooncake)": 0.10}
    ll = ll or {"ideal": -0.02, "full (lmcache-mooncake)": -0.30}
    for mech in gains:
        for load, rpm in (("knee", 20.0), ("past", 25.0)):
            for seed in range(4):
                base = 100.0 + seed
                jitter = 0.01 * (seed - 1.5)
                rows += [{"stage": "main", "testbed": "30b", "seed": seed, "mechanism": mech, "load": load,
                          "rpm_per_instance": rpm, "policy": pol, "goodput_tps": g}
                         for pol, g in (("lmetric", base), ("dynamo", base * 0.9),
                                        ("least-load", base * (1 + ll[mech] + jitter)),
                                        ("smetric", base * (1 + gains[mech] + jitter)))]
    return pd.DataFrame(rows)


def test_screen_rule_best_baseline_knee_and_carried():
    choice = ss.screen_choice(_frame(), n_baselines=1, past_factor=1.25).iloc[0]
    # lmetric peaks highest (100.5 at 20 rpm); dynamo leads at 10 rpm but not at lmetric's knee
    assert choice["best_baseline"] == "lmetric" and choice["knee"] == 20.0 and choice["past"] == 25.0
    assert choice["carried"] == "lmetric/least-load"
    two = ss.screen_choice(_frame(), n_baselines=2, past_factor=1.5).iloc[0]
    assert two["carried"] == "lmetric/dynamo/least-load" and two["past"] == 30.0


def test_gains_pair_per_seed_against_the_best_baseline_by_mean():
    gains = ss.stack_gains(_frame()).set_index(["load", "mechanism"])
    full = gains.loc[("knee", "full (lmcache-mooncake)")]
    assert full["best_baseline"] == "lmetric" and full["n_seeds"] == 4
    assert full["gain_mean"] == pytest.approx(0.10) and full["ci_low"] > 0 and not full["tie"]
    ideal = gains.loc[("knee", "ideal")]
    assert ideal["gain_mean"] == pytest.approx(0.0, abs=1e-12) and ideal["tie"]
    # rows follow the mechanism order, knee before past
    assert list(ss.stack_gains(_frame())["mechanism"][:2]) == ["ideal", "full (lmcache-mooncake)"]


def test_load_only_rule_is_c9s_lower_bound():
    table = ss.load_only_table(_frame()).set_index(["load", "mechanism"])
    for _key, row in table.iterrows():
        assert row["verdict"] == bound_verdict(row["ci_low"], row["ci_high"], -0.07, "lower")
    assert table.loc[("knee", "ideal"), "verdict"] == "reproduced"  # -2 % +- 1 %: within 7 %
    assert table.loc[("knee", "full (lmcache-mooncake)"), "verdict"] == "contradicted"  # -30 %
    # the best policy is the best of all others, SMETRIC included
    assert table.loc[("knee", "full (lmcache-mooncake)"), "best_policy"] == "smetric"


def test_findings_quote_the_frames_numbers():
    frame = _frame()
    text = fig13.findings(frame)
    gains = ss.stack_gains(frame).set_index(["load", "mechanism"])
    g = gains.loc[("knee", "full (lmcache-mooncake)")]
    assert f"full (lmcache-mooncake) {100 * g['gain_mean']:+.1f}% [{100 * g['ci_low']:+.1f}, " \
           f"{100 * g['ci_high']:+.1f}]" in text
    assert "holds in 1 of 2 rows" in text
    assert fig13.claims(frame) == []


def test_quick_run_is_complete_and_its_screen_agrees_with_the_ladder():
    p = fig13.Params.quick()
    df = fig13.compute(p, jobs=1)
    choice = ss.choice_table(df).iloc[0]
    main = df[df["stage"] == "main"]
    policies = ("smetric", *choice["carried"].split("/"))
    assert len(main) == len(p.mechanisms) * 2 * len(policies) * len(p.seeds)
    assert choice["past"] == pytest.approx(p.past_factor * choice["knee"])
    # the full stack at the knee is the screen's run of the same seed and load: same workload, same numbers
    screen = df[(df["stage"] == "screen") & (df["rpm_per_instance"] == choice["knee"])]
    full = main[(main["mechanism"] == "full (lmcache-mooncake)") & (main["load"] == "knee")]
    merged = full.merge(screen, on=["seed", "policy"], suffixes=("", "_screen"))
    assert len(merged) and np.array_equal(merged["goodput_tps"], merged["goodput_tps_screen"])
    # the KV path matters: the slow bound and the ideal path give SMETRIC different goodput past the knee
    sm = main[(main["policy"] == "smetric") & (main["load"] == "past")].groupby("mechanism")["goodput_tps"].mean()
    assert sm["lmcache-mooncake-slow"] != sm["ideal"]
    fig = fig13.plot(df)
    assert len(fig.axes[0].get_yticklabels()) == len(p.mechanisms)


def test_a_trace_file_replaces_the_workload(tmp_path):
    """``trace=PATH``: the screen replays the file at the offered rate, as ``offered_point(trace=PATH)`` does."""
    from smetric.testbeds import offered_point
    from smetric.workload.synthetic import synth_agent_workload
    from smetric.workload.writers import write_trace

    path = write_trace(synth_agent_workload(duration=900.0, warmup=3600.0, seed=5, preset="bailian-coder",
                                            requests_per_minute=150.0), tmp_path / "coder.jsonl", "bailian")
    p = fig13.Params.quick()
    small = {"screen_rpm": {"30b": (36.0,)}, "mechanisms": ("ideal",), "minutes": {"30b": 2.0}}
    df = fig13.compute(fig13.Params(**{**p.as_dict(), **small, "trace": str(path)}), jobs=1)
    screen = df[df["stage"] == "screen"]
    direct = offered_point(36.0, "least-load", n_instances=4, minutes=2.0, trace=str(path),
                           cluster_overrides=ss.mechanism_overrides("full (lmcache-mooncake)", 1))
    assert set(screen["n_requests"]) == {direct["n_requests"]}
    assert screen.loc[screen["policy"] == "least-load", "goodput_tps"].tolist() == [direct["goodput_tps"]]
    preset = fig13.compute(fig13.Params(**{**p.as_dict(), **small}), jobs=1)
    assert not preset["n_requests"].equals(df["n_requests"])
