"""fig12 experiment functions on tiny sizes: frame shapes, pairing, the promise verdicts, and properties that
could fail."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smetric.experiments import queueing_figs as qf
from smetric.verdicts import row_points


@pytest.fixture(scope="module")
def stream():
    return qf.stream_comparison(short_rates=(8.0, 24.0), shares=(0.2,), seeds=(0, 1), duration=30.0, jobs=1)


def test_stream_frame_pairs_every_configuration_on_every_seed(stream):
    assert len(stream) == 2 * len(qf.QUEUES) * 1 * 2
    assert {"part", "workload", "regime", "share", "queue", "estimator", "seed", *qf.METRICS} <= set(stream)
    assert not stream.duplicated(["regime", "queue", "estimator", "share", "seed"]).any()
    assert (stream["queue_wait_max"] >= stream["queue_wait_p99"]).all()
    linear = stream[stream["estimator"] == "linear"]
    assert (linear["estimator_mae_s"] > 0).all() and stream.loc[stream["estimator"] == "oracle",
                                                                 "estimator_mae_s"].isna().all()


def test_queues_form_past_capacity_and_the_order_then_matters(stream):
    """Past capacity FCFS's queue waits grow several-fold over those below it, and the disciplines differ."""
    table = qf.comparison_table(stream).set_index(["regime", "queue", "estimator"])
    below = table.loc[("8 shorts/s", "fcfs", "oracle"), "queue_wait_p99"]
    past = table.loc["24 shorts/s"]
    assert past.loc[("fcfs", "oracle"), "queue_wait_p99"] > 3.0 * below
    assert past["session_time_mean"].nunique() > 1


def test_promises_are_judged_by_the_rules(stream):
    claims = qf.promise_claims(stream)
    assert set(claims["claim_id"]) == set(qf.PROMISES)
    assert (claims["n_seeds"] == 2).all() and (claims["comparator"] == "fcfs").all()
    assert set(claims.loc[claims["claim_id"] == "B2_no_starvation", "rule"]) == {"upper bound"}
    assert set(claims.loc[claims["claim_id"] != "B2_no_starvation", "rule"]) == {"positive"}
    n_points = 2 * (len(qf.QUEUES) - 1)
    assert (claims.groupby("claim_id").size() == n_points).all()
    # the verdicts are those the package's rules give the recorded intervals (Holm within each promise)
    for claim, g in claims.groupby("claim_id"):
        paper = "+0.5" if claim == "B2_no_starvation" else "robust"
        unit = "relative, upper bound" if claim == "B2_no_starvation" else ""
        row = pd.Series({"paper_value": paper, "unit": unit, "n_seeds": 2, "point": "/".join(g["point"]),
                         "comparator": "/".join(g["comparator"]),
                         **{c: "/".join(f"{v:+.12g}" for v in g[c]) for c in ("gain_mean", "ci_low", "ci_high")}})
        assert list(row_points(row)["verdict"]) == list(g["verdict"]), claim


def test_paired_gain_uses_fcfs_of_the_same_seed():
    rows = []
    for seed, base in ((0, 10.0), (1, 20.0)):
        for queue, est, value in (("fcfs", "oracle", base), ("mlfq", "oracle", base / 2)):
            rows.append(dict(part="p", workload="w", regime="r", share=0.2, queue=queue, estimator=est, seed=seed,
                             session_time_mean=value, long_wait_p99=value, tier_ratio=1.0))
    claims = qf.promise_claims(pd.DataFrame(rows))
    jct = claims[claims["claim_id"] == "B1_session_jct_lower"].iloc[0]
    assert jct["gain_mean"] == pytest.approx(0.5) and jct["ci_low"] == jct["ci_high"] == pytest.approx(0.5)
    starve = claims[claims["claim_id"] == "B2_no_starvation"].iloc[0]
    assert starve["gain_mean"] == pytest.approx(-0.5) and starve["verdict"] == "reproduced"


def test_short_long_stream():
    wl = qf.short_long_stream(3, duration=20.0, short_rate=5.0, long_every=4.0)
    long = wl.input_len == 12_000
    assert long.sum() == 5 and np.all(np.diff(wl.arrival) >= 0)
    assert len(np.unique(wl.block_ids)) == len(wl.block_ids)  # no reuse: every turn computes its prompt
    assert set(wl.output_len) == {30, 300}
    varied = qf.short_long_stream(3, duration=20.0, short_rate=5.0, long_every=4.0, output_sigma=1.0)
    assert np.array_equal(varied.arrival, wl.arrival) and len(set(varied.output_len)) > 5
    with pytest.raises(ValueError, match="short_rate"):
        qf.short_long_stream(0, short_rate=0.0)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="loads"):
        qf.cluster_comparison(loads=(0.0,), jobs=1)
    with pytest.raises(ValueError, match="shares"):
        qf.stream_comparison(shares=(1.5,), jobs=1)
    with pytest.raises(ValueError, match="workload"):
        qf.cluster_comparison(workload="nope", jobs=1)
