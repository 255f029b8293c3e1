"""The time series (and the busy metrics built on it) cover the whole run: first arrival to last finish."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from engine_support import agent_workload, small_cluster, unique_workload

from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference
from smetric.cluster.sampling import halve_samples
from smetric.cluster.simulate import simulate


def _busy_fraction_from_requests(requests: pd.DataFrame, n_instances: int) -> float:
    """Time with >= 1 admitted request (union of [admit, finish) per instance) over instances x run."""
    busy = 0.0
    for _, g in requests.groupby("instance"):
        end = -np.inf
        for a, f in sorted(zip(g["admit"], g["finish"])):
            start = max(a, end)
            if f > start:
                busy += f - start
            end = max(end, f)
    run = requests["finish"].max() - requests["arrival"].min()
    return busy / (n_instances * run)


@pytest.mark.parametrize("case", ["agent", "all-at-zero"])
def test_busy_fraction_matches_the_per_request_csv(case, tmp_path):
    if case == "agent":  # steady arrivals, a drain after the last one
        wl = agent_workload(7, n_sessions=40, max_turns=4, span=20.0, first_prompt=(200, 3000), output=(20, 200))
    else:  # every request at t = 0: a spacing from the arrival span would cover only the first 1e-3 * n_samples s
        rng = np.random.default_rng(1)
        wl = unique_workload(np.zeros(60), rng.integers(100, 3000, 60), rng.integers(1, 600, 60))
    cluster = small_cluster(kv_tokens=30_000, n_instances=3, block_size=16, max_num_seqs=4, max_batched_tokens=512)
    res = simulate(wl, cluster, "least-load", n_samples=4000)
    res.to_csv(tmp_path)
    requests = pd.read_csv(tmp_path / "requests.csv")
    assert (requests["status"] == "completed").all()
    expected = _busy_fraction_from_requests(requests, cluster.n_instances)
    assert expected < 0.97  # instances do fall idle before the end: the case can tell the two apart
    assert res.summary()["busy_mean"] == pytest.approx(expected, rel=0.01)
    ts = pd.read_csv(tmp_path / "timeseries.csv")
    dt = ts["time"].diff().loc[lambda d: d > 0].min()
    last_finish = requests["finish"].max()
    assert last_finish - dt <= ts["time"].max() < last_finish  # the samples reach the last finish, not beyond
    assert 2000 <= ts["time"].nunique() <= 4000


def test_samples_halve_and_both_engines_agree():
    wl = unique_workload(np.zeros(30), 2000, 100)
    cluster = small_cluster(kv_tokens=8000, n_instances=2, block_size=16, max_num_seqs=2, max_batched_tokens=256)
    inp = prepare(wl, cluster, "round-robin", n_samples=8)
    ref = run_reference(inp)
    num = simulate(wl, cluster, "round-robin", n_samples=8)
    assert ref.sample_dt > inp.sample_dt  # the spacing doubled at least once
    assert 4 <= ref.timeseries.shape[1] <= 8
    assert num.timeseries["time"].nunique() == ref.timeseries.shape[1]
    assert np.array_equal(num.timeseries["running"].to_numpy().reshape(2, -1), ref.timeseries[:, :, 1])


def test_halve_samples_keeps_the_even_samples():
    ts = np.arange(2 * 5 * 3, dtype=np.int64).reshape(2, 5, 3)
    sampled = np.array([5, 4], dtype=np.int64)
    halve_samples(ts, sampled)
    assert sampled.tolist() == [3, 2]
    assert ts[0, :3, 0].tolist() == [0, 6, 12] and ts[1, :2, 0].tolist() == [15, 21]


def test_n_samples_below_two_is_rejected():
    with pytest.raises(ValueError, match="n_samples"):
        simulate(unique_workload([0.0], 64, 2), small_cluster(), "round-robin", n_samples=1)
