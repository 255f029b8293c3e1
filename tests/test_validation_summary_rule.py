"""Per-metric summary rules of a validation spec (``load.summary`` as a mapping metric -> pooled / stage-mean):
each metric is summarised by its own rule, and bad rules fail with one line naming the file and key."""
import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from smetric.realcluster.runner import _run_summary
from smetric.realcluster.spec import SpecError, load_spec

REPO = Path(__file__).resolve().parents[1]
#: A published spec whose load is cut to two measured stages (the test feeds its own requests).
DOC = yaml.safe_load((REPO / "data" / "validation" / "llmd-precise-guide.yaml").read_text())
DOC["load"]["measured_stages"] = [1, 2]


def _spec(tmp_path, summary):
    doc = copy.deepcopy(DOC)
    doc["load"]["summary"] = summary
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_spec(path)


def _requests():
    """Two stages of unequal size and speed: stage 1 one slow request, stage 2 three fast ones (TTFT 4 s vs 1 s),
    so the mean of the stages' TTFT means (2.5 s) and the request-pooled mean (1.75 s) differ."""
    return pd.DataFrame({
        "stage": [1, 2, 2, 2], "arrival": [0.0, 20.0, 21.0, 22.0], "first_token": [4.0, 21.0, 22.0, 23.0],
        "finish": [10.0, 25.0, 26.0, 27.0], "input_len": [80] * 4, "output_len": [8] * 4,
        "hit_hbm": [0.0] * 4, "hit_dram": [0.0] * 4, "status": ["completed"] * 4})


def test_each_metric_takes_its_own_rule(tmp_path):
    reqs = _requests()
    pooled = _run_summary(_spec(tmp_path, "pooled"), reqs)
    stage_mean = _run_summary(_spec(tmp_path, "stage-mean"), reqs)
    assert pooled["ttft_mean_s"] == pytest.approx(1.75) and stage_mean["ttft_mean_s"] == pytest.approx(2.5)
    mixed = _run_summary(_spec(tmp_path, {"output_tps": "stage-mean", "default": "pooled"}), reqs)
    assert mixed["output_tps"] == pytest.approx(stage_mean["output_tps"])
    assert mixed["output_tps"] != pytest.approx(pooled["output_tps"])
    for metric in ("ttft_mean_s", "request_tps", "e2e_mean_s"):
        assert mixed[metric] == pytest.approx(pooled[metric])
    flipped = _run_summary(_spec(tmp_path, {"ttft_mean_s": "pooled", "default": "stage-mean"}), reqs)
    assert flipped["ttft_mean_s"] == pytest.approx(pooled["ttft_mean_s"])
    assert flipped["e2e_mean_s"] == pytest.approx(stage_mean["e2e_mean_s"])
    assert not np.isclose(pooled["e2e_mean_s"], stage_mean["e2e_mean_s"])


def test_rule_lookup_defaults_to_pooled(tmp_path):
    spec = _spec(tmp_path, {"output_tps": "stage-mean"})
    assert spec.summary == "per-metric"
    assert spec.summary_of("output_tps") == "stage-mean" and spec.summary_of("ttft_mean_s") == "pooled"
    assert _spec(tmp_path, "stage-mean").summary_of("ttft_mean_s") == "stage-mean"


@pytest.mark.parametrize("summary, key, reason", [
    ({"output_tps": "seed-mean"}, "load.summary.output_tps", "must be one of pooled, stage-mean"),
    ({"ttft_mean": "pooled"}, "load.summary.ttft_mean", "unknown metric"),
    ({"default": "median"}, "load.summary.default", "must be one of pooled, stage-mean"),
    ("mean", "load.summary", "must be one of pooled, stage-mean, seed-mean"),
])
def test_bad_rules_fail_in_one_line(tmp_path, summary, key, reason):
    with pytest.raises(SpecError) as err:
        _spec(tmp_path, summary)
    message = str(err.value)
    assert "\n" not in message and "rule.yaml" in message and f"{key}: {reason}" in message
