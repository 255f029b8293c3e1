"""Claims bookkeeping: per-figure verdicts joined with the paper's table."""

import pytest

from smetric.experiments.claims import collect_claims, collect_row_claims, paper_claims, record_claims


def test_paper_claims_table_is_complete():
    claims = paper_claims()
    assert claims.index.is_unique
    assert {"figure", "paper_value", "wording"} <= set(claims.columns)
    assert claims.loc["C13_peak_30b", "figure"] == "fig06"


def test_record_and_collect(tmp_path):
    record_claims("fig04", [dict(claim_id="C10_sticky_imbalance", reproduced="1.9x",
                                 verdict="direction only", reason="smaller cluster")], outdir=tmp_path)
    table = collect_claims(outdir=tmp_path).set_index("claim_id")
    assert table.loc["C10_sticky_imbalance", "verdict"] == "direction only"
    assert table.loc["C13_peak_30b", "verdict"] == "not checked"
    assert (tmp_path / "claims.csv").exists()


def test_second_row_claims_are_joined_apart_from_the_verdicts(tmp_path):
    import pandas as pd

    assert collect_row_claims(outdir=tmp_path).empty and not (tmp_path / "claims_second_row.csv").exists()
    claim = "C9_load_only_provisioned"
    pd.DataFrame([{"workload": "claude-code", "claim_id": claim, "verdict": "inconclusive", "gain_mean": -0.01,
                   "ci_low": -0.09,
                   "ci_high": 0.03, "n_seeds": 8, "reproduced": "x", "reason": "y"}]).to_csv(
        tmp_path / "fig03_global_tier_sweep_second_row_claims.csv", index=False)
    table = collect_row_claims(outdir=tmp_path)
    assert table.columns[:4].tolist() == ["figure", "workload", "claim_id", "paper_value"]
    assert table.iloc[0][["figure", "verdict"]].tolist() == ["fig03", "inconclusive"]
    assert table.iloc[0]["p_value"] > 0.05 and table.iloc[0]["mde"] > 0  # tidy, with its statistics
    assert table.iloc[0]["paper_value"] == paper_claims().loc[claim, "paper_value"]
    assert collect_claims(outdir=tmp_path).set_index("claim_id").loc[claim, "verdict"] == "not checked"


@pytest.mark.parametrize("row, message", [
    (dict(claim_id="nope", reproduced="", verdict="reproduced", reason=""), "unknown claim ids"),
    (dict(claim_id="C10_sticky_imbalance", reproduced="", verdict="sort of", reason=""), "verdicts must be"),
])
def test_record_rejects_bad_rows(tmp_path, row, message):
    with pytest.raises(ValueError, match=message):
        record_claims("fig04", [row], outdir=tmp_path)


def _peak_row(low, high, verdict):
    return dict(claim_id="C13_peak_30b", reproduced="x", verdict=verdict, reason="",
                gain_mean=(low + high) / 2, ci_low=low, ci_high=high, n_seeds=8)


@pytest.mark.parametrize("low, high, verdict", [
    (0.05, 0.12, "reproduced"),        # overlaps [0.045, 0.135] of the paper's +9 %
    (0.20, 0.30, "direction only"),    # above zero, misses the band
    (-0.02, 0.05, "inconclusive"),     # contains zero, overlaps the band
    (-0.02, 0.03, "smaller than claimed"),  # excludes even half the paper's +9 %
    (-0.08, -0.01, "contradicted"),    # below zero
])
def test_comparative_rows_carry_the_verdict_the_rules_give(tmp_path, low, high, verdict):
    table = record_claims("fig06", [_peak_row(low, high, verdict)], outdir=tmp_path)
    assert table.loc[0, "verdict"] == verdict
    collected = collect_claims(outdir=tmp_path).set_index("claim_id")
    assert collected.loc["C13_peak_30b", "n_seeds"] == 8


def test_a_hand_written_comparative_verdict_is_refused(tmp_path):
    with pytest.raises(ValueError, match="the rules give 'inconclusive'"):
        record_claims("fig06", [_peak_row(-0.02, 0.05, "reproduced")], outdir=tmp_path)
    with pytest.raises(ValueError, match="is comparative"):
        record_claims("fig06", [dict(claim_id="C13_peak_30b", reproduced="+9 %", verdict="reproduced",
                                     reason="")], outdir=tmp_path)


def test_workload_claim_rows_are_decided_by_the_real_agent_trace():
    import pandas as pd

    from smetric.experiments.workload_figs import (
        AGENT_LABEL,
        AGENT_TRACE_LABEL,
        CHAT_LABEL,
        SHARED_PREFIX_LABEL,
        workload_claim_rows,
    )

    stats = {"reuse_ratio": 0.9, "intra_session_reuse_share": 0.9, "first_turn_reuse_ratio": 0.19,
             "reuse_within_100s": 0.9, "top25_session_token_share": 0.9}
    rows = [(AGENT_LABEL, k, v) for k, v in stats.items()] + [(CHAT_LABEL, "reuse_ratio", 0.58)]
    rows += [(t, "intra_session_reuse_share", 0.7) for t in ("Mooncake conversation", "Mooncake synthetic")]
    rows += [(t, "reuse_ratio", 0.4) for t in ("Mooncake conversation", "Mooncake synthetic")]
    frame = pd.DataFrame(rows, columns=["trace", "category", "y"]).assign(panel="summary")
    verdicts = {r["claim_id"]: r["verdict"] for r in workload_claim_rows(frame)}
    # no real agent trace: the calibrated generator alone cannot confirm a finding; chat traces do not count
    assert verdicts["C2_intra_session"] == "direction only"
    assert verdicts["C1_agent_reuse"] == "direction only"
    real = {"reuse_ratio": 0.963, "intra_session_reuse_share": 1.0, "first_turn_reuse_ratio": 0.007,
            "reuse_within_100s": 0.878, "top25_session_token_share": 0.678}
    with_trace = pd.concat([frame, pd.DataFrame(
        [(AGENT_TRACE_LABEL, k, v, "summary") for k, v in real.items()]
        + [(SHARED_PREFIX_LABEL, "first_turn_reuse_ratio", 0.19, "summary")], columns=frame.columns)])
    verdicts = {r["claim_id"]: r for r in workload_claim_rows(with_trace)}
    assert {k: r["verdict"] for k, r in verdicts.items() if k != "C1_chat_reuse"} == {
        "C1_agent_reuse": "reproduced", "C2_intra_session": "reproduced", "C4_reuse_distance": "reproduced",
        "C3_first_turn": "not reproduced",   # the trace as recorded breaks it; the shared-prefix option is not judged
        "C5_session_skew": "not reproduced"}
    assert "real Claude Code trace 0.678" in verdicts["C5_session_skew"]["reproduced"]


def test_collected_claims_are_tidy_one_row_per_point(tmp_path):
    import pandas as pd

    from smetric.verdicts import Interval, claim_columns

    paper = paper_claims().loc["C15_ablation_guard"]
    from smetric.verdicts import parse_paper_value

    cols = claim_columns([Interval(0.08, 0.05, 0.11, 8), Interval(0.01, -0.01, 0.03, 8)],
                         parse_paper_value(paper["paper_value"], paper["unit"]), points=["30b", "235b"],
                         comparators=["v1", "v1"])
    record_claims("fig09", [dict(claim_id="C15_ablation_guard", reproduced="x", reason="y", **cols)], outdir=tmp_path)
    table = collect_claims(outdir=tmp_path)
    rows = table[table["claim_id"] == "C15_ablation_guard"]
    assert rows["point"].tolist() == ["30b", "235b"] and rows["comparator"].tolist() == ["v1", "v1"]
    assert rows["verdict"].tolist() == ["reproduced", "smaller than claimed"]
    assert set(rows["claim_verdict"]) == {"smaller than claimed"}
    back = pd.read_csv(tmp_path / "claims.csv")
    for col in ("gain_mean", "ci_low", "ci_high", "p_value", "p_adjusted", "mde", "n_seeds"):
        assert pd.api.types.is_numeric_dtype(back[col]), col
    assert (back.groupby("claim_id").size() >= 1).all() and back["claim_id"].nunique() == len(paper_claims())


def test_band_rule():
    from smetric.experiments.claims import band_verdict, claim_band

    lo, hi, source = claim_band("C1_chat_reuse")
    assert (lo, hi) == (0.54, 0.62) and "abstract" in source
    assert band_verdict([0.374, 0.651], lo, hi) == "not reproduced"  # both public chat traces fall outside
    assert band_verdict([0.58, 0.651], lo, hi) == "inconclusive"
    assert band_verdict(0.6, lo, hi) == "reproduced"
    with pytest.raises(ValueError, match="no band"):
        claim_band("C13_peak_30b")
