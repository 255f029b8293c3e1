"""Serving-stack mechanisms one at a time, and the before/after tables built from them."""

from __future__ import annotations

import pandas as pd
import pytest

from smetric.cluster.serving_stack import ServingStack
from smetric.realcluster import scoring
from smetric.realcluster.mechanisms import MECHANISMS, mechanism_stack
from smetric.realcluster.scoring import mechanism_table


def test_each_mechanism_takes_only_its_fields_from_the_row():
    row = ServingStack.preset("vllm-v1-async")
    assert mechanism_stack("vllm-v1-async", "none").is_legacy
    assert mechanism_stack("vllm-v1-async", "all") == row
    lag = mechanism_stack("vllm-v1-async", "lag")
    assert lag.first_token_lag_iterations == 1 and lag.api_server_s == 0 and not lag.cpu_overlaps_gpu
    it = mechanism_stack("vllm-v1-async", "iteration")
    assert it.iteration_overhead_s == row.overlap_gap_s and it.first_token_lag_iterations == 0
    out = mechanism_stack("vllm-v1-async", "outside")
    assert out.api_server_s == row.api_server_s and out.iteration_overhead_s is None
    with pytest.raises(ValueError, match="unknown mechanism"):
        mechanism_stack("vllm-v1-async", "gpu")


def _frame(errors: dict) -> pd.DataFrame:
    rows = []
    for mechanism, per_metric in errors.items():
        for metric, err in per_metric.items():
            for k, e in enumerate(err):
                rows.append({"experiment": f"blis-{k}", "router": "vllm", "baseline": "vllm", "harness": "blis",
                             "metric": metric, "measured": 1.0, "predicted": 1.0 + e, "rel_error": e,
                             "blis_error": 0.05, "mechanism": mechanism})
    return pd.DataFrame(rows)


def test_mechanism_table_reports_median_absolute_errors_in_order():
    frame = _frame({"none": {"e2e_mean_s": [0.2, -0.3, 0.25]}, "lag": {"e2e_mean_s": [0.1, -0.05, 0.0]},
                    "all": {"e2e_mean_s": [0.01, 0.02, -0.03]}})
    table = mechanism_table(frame)
    assert list(table["mechanism"]) == [m for m in MECHANISMS if m in ("none", "lag", "all")]
    assert table.set_index("mechanism").loc["none", "e2e_mean_s"] == pytest.approx(0.25)
    assert table.set_index("mechanism").loc["all", "runs"] == 3


def test_before_after_scores_the_legacy_rows_and_the_specified_ones_separately():
    frame = _frame({"none": {"e2e_mean_s": [0.2, -0.3, 0.25]}, "all": {"e2e_mean_s": [0.01, 0.02, -0.03]}})
    ba = scoring.before_after(frame).set_index("target")
    assert ba.loc["e2e", "before"] == pytest.approx(0.25) and ba.loc["e2e", "after"] == pytest.approx(0.02)
    assert ba.loc["e2e", "verdict_before"] == "missed" and ba.loc["e2e", "verdict_after"] == "met"
    text = scoring.readme_tables(frame)
    assert "Before and after the serving stack" in text and "| none | 3 |" in text
