"""fig14 (claim robustness map): variants, the anchor rule, judging a hand-made frame, findings from the table."""

import numpy as np
import pandas as pd
import pytest

from smetric.experiments import main_results as mr
from smetric.experiments.figures import fig14_claim_robustness as fig14
from smetric.experiments.robustness import MAP_COLUMNS, Variant, knee_anchor
from smetric.experiments.screening import top_by_name
from smetric.verdicts import claim_columns, gain_interval, parse_paper_value


def test_variants_are_one_at_a_time_with_the_store_resolved():
    p = fig14.Params()
    vs = fig14.variants(p)
    assert vs[0] == Variant()
    assert len(vs) == 1 + sum(len(v) for v in p.variations.values())
    for v in vs[1:]:
        moved = [a for a, x in v.axes().items() if x != getattr(Variant(), a)]
        assert len(moved) == 1 and v.name.startswith(moved[0] + "=")
    under = next(v for v in vs if v.name == "store=under-provisioned")
    assert under.store == "64:6"  # 2 GB per instance x 32 instances, 6 GB/s: full within the window
    assert {v.gpu for v in vs} == {"h20", "h200", "h800"} and {v.attention for v in vs} == {"fa3", "a100-borrowed"}


def _frame(gain_of_seed, anchor=40.0, multipliers=(6, 8, 9, 10, 12)):
    """Per-seed results of a fake run: the baselines' goodput peaks at the anchor, smetric = best * (1 + gain)."""
    rows = []
    for seed in range(8):
        for m in multipliers:
            rpm = anchor * m / mr.ANCHOR_MULTIPLIER
            base = 100.0 - (m - 8) ** 2
            ours = base * (1 + gain_of_seed(seed, m))
            for policy, v in (("least-load", base), ("lmetric", base - 1), ("smetric", ours)):
                for kind, metric in (("colocated", "goodput_tps"), ("pd", "prefill_tps")):
                    rows.append({"kind": kind, "variant": "default", "seed": seed, "policy": policy,
                                 "rpm_per_instance": rpm, metric: v})
    return pd.DataFrame(rows)


def test_judge_gives_the_rules_verdict_on_a_hand_made_frame():
    rng = np.random.default_rng(5)
    noise = rng.normal(0, 0.01, size=8)
    gain = lambda s, m: 0.09 + noise[s]  # noqa: E731 -- +9 % at every load (C13's paper value), per-seed noise
    frame = _frame(gain)
    table = fig14.judge(frame, [Variant()], {("default", "colocated"): 40.0, ("default", "pd"): 40.0},
                        (6, 8, 9, 10, 12))
    assert list(table.columns[:len(MAP_COLUMNS)]) == list(MAP_COLUMNS)
    c13 = table[table["claim_id"] == "C13_peak_30b"].iloc[0]
    expected = gain_interval(pd.Series([gain(s, 8) for s in range(8)]))
    assert c13["gain_mean"] == pytest.approx(expected.mean) and c13["n_seeds"] == 8
    paper = parse_paper_value("+0.09", "relative peak goodput TPS (30B)")
    assert c13["verdict"] == claim_columns([expected], paper)["verdict"] == "reproduced"
    assert c13["best_baseline"] == "least-load" and c13["peaks_at_edge"] == 0
    c12 = table[table["claim_id"] == "C12_gain_vs_load"].set_index("point")
    assert list(c12.index) == list(mr.PAPER_POINTS)
    # C12 at 6x: paper "within 1 %" (TOST), measured +9 % -> wholly outside the margin
    assert c12.loc["6x", "verdict"] == "contradicted"
    assert {"p_value", "p_adjusted", "mde", "verdict_uncorrected"} <= set(table.columns)
    assert (table["p_adjusted"] >= table["p_value"] - 1e-12).all()  # Benjamini-Hochberg over the map
    assert c12.loc["past saturation", "gain_mean"] == pytest.approx(np.mean([gain(s, 10) for s in range(8)]))
    # a loss everywhere is contradicted
    table = fig14.judge(_frame(lambda s, m: -0.05 + noise[s]), [Variant()],
                        {("default", "colocated"): 40.0, ("default", "pd"): 40.0}, (6, 8, 9, 10, 12))
    assert set(table["verdict"]) == {"contradicted"}


def test_findings_are_computed_from_the_table():
    df = pd.DataFrame({"claim_id": ["C13_peak_30b"] * 3, "point": [""] * 3, "variant": ["default", "gpu=h200", "x=y"],
                       "verdict": ["reproduced", "inconclusive", "contradicted"], "gain_mean": [0.08, 0.004, -0.05]})
    text = fig14.findings(df)
    assert text == ("C13_peak_30b: holds when default (reproduced, +8.0 %); fails when gpu=h200 (inconclusive, "
                    "+0.4 %), x=y (contradicted, -5.0 %).")
    assert "holds in no variant" in fig14.findings(df.assign(verdict="inconclusive"))


def test_the_comparator_is_fixed_on_the_screening_seeds_alone():
    rows = [{"seed": s, "policy": p, "rpm_per_instance": r, "goodput_tps": v}
            for s in (100, 101) for p, vals in {"a": (10, 20, 15), "b": (12, 19, 18)}.items()
            for r, v in zip((30, 40, 50), vals)]
    assert top_by_name(pd.DataFrame(rows), "goodput_tps") == "a"  # peak of the mean 20 > 19
    tied = pd.DataFrame(rows).assign(policy=lambda d: d["policy"].map({"a": "z", "b": "b"}), goodput_tps=1.0)
    assert top_by_name(tied, "goodput_tps") == "b"  # ties: first by name, not by row order
    with pytest.raises(ValueError, match="screening"):
        top_by_name(pd.DataFrame(rows).iloc[:0], "goodput_tps")
    with pytest.raises(ValueError, match="disjoint"):
        fig14.Params.quick().preset(True, screening_seeds=(0,))


def test_knee_anchor_finds_the_peak_and_extends_past_an_end(monkeypatch):
    import smetric.testbeds

    calls = []

    def fake(rpm, policy, **kw):
        calls.append((rpm, policy))
        return {"goodput_tps": -(rpm - peak) ** 2}

    monkeypatch.setattr(smetric.testbeds, "offered_point", fake)
    peak = 70.0  # inside the ladder 20.5..78.1
    anchor, probe = knee_anchor(Variant(), start=40.0, reference_rpm=100.0)
    assert anchor == pytest.approx(40.0 * 1.25 ** 2) and len(probe) == 7
    assert {policy for _, policy in calls} == {"least-load"}  # SMETRIC is not run
    calls.clear()
    peak = 150.0  # beyond the ladder's top: extended step by step until the peak is inside
    anchor, probe = knee_anchor(Variant(), start=40.0, reference_rpm=100.0)
    rpms = [rpm for rpm, _ in calls]
    assert anchor == pytest.approx(40.0 * 1.25 ** 6) and max(rpms) == pytest.approx(40.0 * 1.25 ** 7)
    assert len(probe) == len(set(rpms)) == 11
    with pytest.raises(ValueError, match="ratio > 1"):
        knee_anchor(Variant(), start=40.0, ratio=1.0, reference_rpm=100.0)


def test_quick_compute_runs_every_claim_on_every_variant():
    p = fig14.Params.quick()
    df = fig14.compute(p, jobs=1)
    names = [v.name for v in fig14.variants(p)]
    assert set(df["variant"]) == set(names)
    assert sorted(df["claim_id"].unique()) == ["C12_gain_vs_load", "C13_peak_30b", "C14_pd_prefill"]
    assert (df["n_seeds"] == len(p.seeds)).all() and (df["anchor_rpm"] > 0).all()
    assert df.groupby("variant")["gpu"].first()["gpu=h200"] == "h200"
    assert fig14.findings(df).count("\n") == 5  # 4 C12 points + C13 + C14


def test_a_real_trace_variant_is_measured_over_its_own_window():
    from smetric.experiments.figures import fig14_claim_robustness as fig14
    from smetric.experiments.robustness import Variant

    p = fig14.Params()
    setups = fig14._setups(p, Variant())

    def same(a, b):  # equal but for the window and the reference rate (the probe's start differs per workload)
        return {k: v for k, v in a.items() if k not in ("minutes", "reference_rpm")} == \
            {k: v for k, v in b.items() if k not in ("minutes", "reference_rpm")}

    trace = fig14._setups(p, Variant(workload="claude-code"))["pd"]
    assert trace["minutes"] == p.trace_minutes != p.minutes and same(trace, setups["pd"])
    toolagent = fig14._setups(p, Variant(workload="toolagent"))["colocated"]
    assert toolagent["minutes"] == setups["colocated"]["minutes"] and same(toolagent, setups["colocated"])


def test_a_trace_file_is_one_more_workload_variant(tmp_path):
    """``trace=PATH`` adds a workload variant that replays the file at each offered rate."""
    from smetric.experiments.figures import fig14_claim_robustness as fig14
    from smetric.experiments.robustness import Variant, variant_setup
    from smetric.testbeds import offered_point
    from smetric.workload.synthetic import synth_agent_workload
    from smetric.workload.writers import write_trace

    path = str(write_trace(synth_agent_workload(duration=900.0, warmup=3600.0, seed=4, preset="bailian-coder",
                                                requests_per_minute=120.0), tmp_path / "coder.jsonl", "bailian"))
    p = fig14.Params.quick()
    names = [v.name for v in fig14.variants(fig14.Params(**{**p.as_dict(), "trace": path}))]
    assert names == [v.name for v in fig14.variants(p)] + [f"workload={path}"]
    assert fig14._setups(p, Variant(workload=path))["pd"]["reference_rpm"] == \
        fig14._setups(p, Variant())["pd"]["reference_rpm"]
    setup = variant_setup(Variant(name="t", workload=path), "least-load", reference_rpm=20.0, n_instances=2,
                          minutes=2.0)
    rows = [offered_point(20.0, "least-load", seed=s, **setup)["goodput_tps"] for s in (0, 1)]
    direct = offered_point(20.0, "least-load", n_instances=2, minutes=2.0, trace=path)
    assert rows == [direct["goodput_tps"]] * 2  # the same file for every seed
