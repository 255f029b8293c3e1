"""fig17 (hot spots): the axes as data, what each level applies, the comparator and the rules on a hand-made frame."""

import numpy as np
import pandas as pd
import pytest

from smetric.cluster.router_info import RouterInfo
from smetric.experiments import hot_spots as hs
from smetric.experiments.claims import paper_value, record_claims
from smetric.experiments.figures import fig17_hot_spots as fig17
from smetric.verdicts import gain_interval, point_table
from smetric.workload.arrivals import POISSON, fitted_arrival


def test_levels_run_the_default_once_then_each_axis():
    lv = hs.levels(hs.AXES)
    assert lv[0] == (hs.DEFAULT, hs.DEFAULT, {})
    assert len(lv) == 1 + sum(len(v) - 1 for v in hs.AXES.values())
    assert [lab for a, lab, _ in lv if a == "refresh"] == ["0.05 s", "1 s", "5 s"]
    assert [lab for a, lab, _ in lv if a == "replicas"] == ["4 uniform", "8 uniform", "4 session", "8 session"]
    with pytest.raises(ValueError, match="must start with the default"):
        hs.levels({"x": (("a", {"router": "as-deployed"}),)})
    with pytest.raises(ValueError, match="overrides must be"):
        hs.levels({"x": ((hs.DEFAULT, {}), ("a", {"gpu": "h200"}))})
    with pytest.raises(ValueError, match="distinct"):
        hs.levels({"x": ((hs.DEFAULT, {}), ("a", {"arrival": "poisson"}), ("a", {"arrival": "azure-code:gamma"}))})


def test_each_override_kind_resolves_to_its_config():
    cluster, workload = hs.resolve({"router": "as-deployed"}, "llm-d")
    assert cluster["router"] == RouterInfo.as_deployed("llm-d") and cluster["router"].refresh_s == 0.05
    assert hs.resolve({"router": "as-deployed"}, "smetric")[0]["router"].exact  # no published interval: exact
    cluster, _ = hs.resolve(dict(hs.AXES["refresh"])["1 s"], "lmetric")
    assert cluster["router"] == RouterInfo(refresh_s=1.0, kv_refresh_s=1.0)
    cluster, _ = hs.resolve(dict(hs.AXES["replicas"])["8 session"], "dynamo")
    assert cluster["router"] == RouterInfo(router_replicas=8, replica_assignment="session")
    _, workload = hs.resolve({"arrival": "azure-code:mmpp", "workload": {"think_scale": 2.0}}, "smetric")
    assert workload == {"think_scale": 2.0, "arrival": fitted_arrival("azure-code", "mmpp")}
    assert hs.resolve({}, "smetric") == ({}, {})
    with pytest.raises(ValueError, match="arrival"):
        hs.resolve({"arrival": "bursty"}, "smetric")


def _runs(ours, best_screen, best_test, seeds=range(8), screening=(100, 101), levels=((hs.DEFAULT, hs.DEFAULT),
                                                                                      ("refresh", "1 s"))):
    """A fake run: baseline 'a' wins on the screening seeds, 'b' on the comparison seeds (so a comparator chosen on
    the comparison seeds would differ); lmetric and dynamo lower; smetric = a * (1 + ours(level, seed))."""
    rows = []
    for axis, level in levels:
        for s in (*screening, *seeds):
            screen = s in screening
            a = 100.0 + (best_screen if screen else 0.0)
            b = 100.0 + (0.0 if screen else best_test)
            vals = {"a": a, "b": b, "lmetric": 90.0, "dynamo": 80.0}
            if not screen:
                vals["smetric"] = a * (1 + ours(level, s))
            for pol, v in vals.items():
                rows.append({"workload": "w", "axis": axis, "level": level, "seed": s, "policy": pol,
                             "goodput_tps": v, **{k: 1.0 + 0.1 * (pol == "smetric") for k in hs.DIAGNOSTICS}})
    return pd.DataFrame(rows)


def test_the_comparator_is_fixed_on_the_screening_seeds_and_the_rules_judge():
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.01, 8)
    ours = lambda level, s: (0.09 if level == hs.DEFAULT else 0.2) + noise[s]  # noqa: E731
    results = _runs(ours, best_screen=5.0, best_test=5.0)
    per_seed = hs.gains(results, (100, 101))
    best = per_seed[per_seed["comparator"] == "best"]
    assert set(best["baseline"]) == {"a"}  # b is better on the comparison seeds, a on the screening ones
    assert best[best["axis"] == hs.DEFAULT]["gain"].tolist() == pytest.approx([ours(hs.DEFAULT, s) for s in range(8)])
    lm = per_seed[(per_seed["comparator"] == "lmetric") & (per_seed["axis"] == hs.DEFAULT)]
    assert lm["gain"].tolist() == pytest.approx([100 * (1 + ours(hs.DEFAULT, s)) / 90 - 1 for s in range(8)])
    assert (best["smetric_followup_moved_share"] == 1.1).all() and (best["baseline_followup_moved_share"] == 1.0).all()

    table = fig17.judge(results, (100, 101))
    gain = table[(table["statistic"] == "gain") & (table["comparator"] == "best")].set_index("axis")
    assert gain.loc[hs.DEFAULT, "verdict"] == "reproduced"  # +9 % at the default: the paper's magnitude
    assert gain.loc["refresh", "verdict"] == "direction only"  # +20 %: above the band [4.5, 13.5] %
    growth = table[(table["statistic"] == "growth") & (table["comparator"] == "best")].iloc[0]
    iv = gain_interval(pd.Series([ours("1 s", s) - ours(hs.DEFAULT, s) for s in range(8)]))
    assert growth["gain_mean"] == pytest.approx(iv.mean) and growth["ci_low"] == pytest.approx(iv.low)
    assert growth["rule"] == "lower bound" and growth["verdict"] == "reproduced"  # the gain grew
    # Holm within each (statistic, comparator) family, as the claims are judged
    ruled = point_table(paper_value("C18_hot_spots"), gain["gain_mean"].tolist(), gain["ci_low"].tolist(),
                        gain["ci_high"].tolist(), gain["n_seeds"].tolist())
    assert list(ruled["verdict"]) == list(gain["verdict"])


def test_the_default_levels_comparator_is_held_at_every_level():
    """Screening rows of another level (if any) do not re-choose it: 'b' wins them, 'a' stays the comparator."""
    results = _runs(lambda level, s: 0.05, best_screen=5.0, best_test=0.0)
    other = (results["axis"] == "refresh") & results["seed"].isin([100, 101]) & (results["policy"] == "b")
    results.loc[other, "goodput_tps"] = 500.0
    best = hs.gains(results, (100, 101)).query("comparator == 'best'")
    assert set(best["baseline"]) == {"a"}


def test_a_shrinking_gain_is_contradicted_and_claims_record(tmp_path):
    noise = np.random.default_rng(4).normal(0, 0.005, 8)
    ours = lambda level, s: (0.09 if level == hs.DEFAULT else -0.03) + noise[s]  # noqa: E731
    table = fig17.judge(_runs(ours, 5.0, 5.0), (100, 101))
    growth = table[(table["statistic"] == "growth") & (table["comparator"] == "best")]
    assert growth["verdict"].tolist() == ["contradicted"]
    rows = fig17.claims(table.assign(rpm_per_instance=40.0))
    assert [r["claim_id"] for r in rows] == ["C18_hot_spots", "C18_hot_spot_growth"]
    assert rows[0]["point"] == "w: default/w: refresh 1 s" and rows[0]["comparator"] == "a/a"
    recorded = record_claims("fig17", rows, outdir=tmp_path)  # refuses a verdict the rules do not give
    assert recorded.set_index("claim_id").loc["C18_hot_spot_growth", "verdict"] == "contradicted"


def test_findings_quote_the_table():
    ours = lambda level, s: 0.09 + 0.001 * s  # noqa: E731
    table = fig17.judge(_runs(ours, 5.0, 5.0), (100, 101)).assign(rpm_per_instance=40.0)
    text = fig17.findings(table)
    assert text.startswith("w at 40 rpm/instance: default +9.4 % vs a")
    assert "refresh: 1 s +9.4 % vs a [reproduced; runs as at the default; imbalance 1.00x/1.10x]" in text


def test_params_validate():
    with pytest.raises(ValueError, match="disjoint"):
        fig17.Params.preset(True, screening_seeds=(0,))
    with pytest.raises(ValueError, match="must include"):
        fig17.Params.preset(True, policies=("smetric", "lmetric"))
    with pytest.raises(ValueError, match="probe_start"):
        fig17.Params.preset(True, workloads=("toolagent",))
    assert set(fig17.Params().axes) == {"burstiness", "refresh", "replicas", "information", "fan-out",
                                        "context growth"}


def test_fan_out_and_context_levels_resolve_and_name_their_workloads():
    from smetric.workload.context import CONTEXT_VARIANTS
    from smetric.workload.fanout import fitted_fanout

    levels = dict(hs.AXES["fan-out"])
    _, workload = hs.resolve(levels["10 % of turns spawn"], "smetric")
    assert workload["fanout"].spawn_prob == 0.1
    assert workload["fanout"].children_probs == fitted_fanout("claude-code").children_probs
    assert hs.resolve(levels["measured (claude-code)"], "smetric")[1]["fanout"] == fitted_fanout("claude-code")
    assert hs.applies(levels["sub-agents split off"], "claude-code")
    assert not hs.applies(levels["sub-agents split off"], "bailian-coder")
    assert hs.applies(dict(hs.AXES["refresh"])["1 s"], "bailian-coder")  # no `only`: every workload
    context = dict(hs.AXES["context growth"])["claude-measured compaction"]
    assert hs.resolve(context, "smetric")[1] == CONTEXT_VARIANTS["claude-measured"]


def test_the_trace_takes_a_bursty_start_process_and_keeps_its_poisson_draws():
    """``Conversations.workload(arrival=)``: the default draws what the loader drew before (the same generator
    calls), a fitted MMPP makes the conversation starts over-dispersed."""
    from smetric.testbeds import trace_conversations
    from smetric.workload.arrivals import burstiness

    conv = trace_conversations("claude-code")
    rate, d, w = 0.05, 3600.0, 600.0
    rng = np.random.default_rng(7)
    n = rng.poisson(rate * (d + w))
    start = np.sort(rng.uniform(0.0, d + w, n)) - w
    old = conv._placed(rng.integers(0, conv.n_conversations, n), start, begin=0.0, end=d)
    new = conv.workload(session_rate=rate, seed=7, duration=d, warmup=w)
    for name in ("arrival", "session", "block_ids"):
        np.testing.assert_array_equal(getattr(old, name), getattr(new, name))
    assert conv.workload(session_rate=rate, seed=7, duration=d, warmup=w, arrival=POISSON).arrival.tolist() == \
        new.arrival.tolist()
    bursty = conv.workload(session_rate=rate, seed=7, duration=d, warmup=w, arrival=fitted_arrival("azure-code",
                                                                                                    "mmpp"))
    starts = lambda x: x.arrival[x.turn == 0]  # noqa: E731
    assert burstiness(starts(bursty))["iod_60s"] > 2 * burstiness(starts(new))["iod_60s"]
    with pytest.raises(ValueError, match="needs a duration"):
        conv.workload(session_rate=rate, arrival=fitted_arrival("azure-code", "gamma"))


def test_a_level_that_changes_neither_run_has_no_growth_point():
    ours = lambda level, s: 0.05 + 0.01 * s  # noqa: E731 -- the same gain at both levels: identical runs
    table = fig17.judge(_runs(ours, 5.0, 5.0), (100, 101))
    assert table[table["statistic"] == "growth"].empty
    assert len(table[table["statistic"] == "gain"]) == 2 * len(hs.COMPARATORS)
