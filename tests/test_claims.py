"""Claims bookkeeping: per-figure verdicts joined with the paper's table."""

import pytest

from smetric.experiments.claims import collect_claims, paper_claims, record_claims


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


@pytest.mark.parametrize("row, message", [
    (dict(claim_id="nope", reproduced="", verdict="reproduced", reason=""), "unknown claim ids"),
    (dict(claim_id="C10_sticky_imbalance", reproduced="", verdict="sort of", reason=""), "verdicts must be"),
])
def test_record_rejects_bad_rows(tmp_path, row, message):
    with pytest.raises(ValueError, match=message):
        record_claims("fig04", [row], outdir=tmp_path)
