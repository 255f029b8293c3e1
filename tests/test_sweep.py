"""Sweeps: serial and Dask runs agree bit for bit, failures are reported per point, clusters are reachable."""

from __future__ import annotations

import itertools
import os
import warnings

import dask
import numpy as np
import pandas as pd
import pytest
from distributed import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.experiments.sweep import (
    JOBS_ENV,
    SCHEDULER_ENV,
    PointFailure,
    SweepError,
    SweepWarning,
    grid_points,
    local_cluster,
    sweep,
    sweep_environment,
)

# ---------------------------------------------------------------- point functions (module level)


def noisy_stats(policy: str, load: float, seed: int) -> dict:
    """Deterministic float work seeded by the point: sums and quantiles of random service times."""
    rng = np.random.default_rng([seed, int(load * 1000), len(policy)])
    x = rng.gamma(2.0, load, size=2000)
    return {"mean": float(x.mean()), "p99": float(np.quantile(x, 0.99)), "n_big": int((x > 3 * load).sum())}


def per_instance(seed: int, instances: int, workload: np.ndarray) -> pd.DataFrame:
    """Several rows per point, using a shared array."""
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, instances, size=len(workload))
    return pd.DataFrame(
        {"instance": np.arange(instances), "work": np.bincount(owner, weights=workload, minlength=instances)}
    )


def fails_on_seed_3(seed: int) -> dict:
    if seed == 3:
        raise ValueError(f"cannot serve seed {seed}")
    return {"value": seed * 0.5}


def process_id(seed: int) -> dict:
    return {"pid": os.getpid()}


def dies_on_seed_1(seed: int) -> dict:
    if seed == 1:
        os._exit(13)
    return {"value": seed}


class CountingPayload:
    """A shared object that counts how often the client process pickles it."""

    pickled = 0

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __reduce__(self):
        CountingPayload.pickled += 1
        return (CountingPayload, (self.values,))


def payload_sum(seed: int, payload: CountingPayload) -> dict:
    return {"total": float(payload.values.sum() * seed)}


GRID = {"policy": ["round_robin", "smetric"], "load": [0.5, 1.0, 2.0], "seed": [0, 1]}


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(2) as lc:
        yield lc


@pytest.fixture(scope="module")
def client(cluster):
    with Client(cluster) as c:
        yield c


# ---------------------------------------------------------------- grids


def test_dict_grid_is_cartesian_product_with_last_key_fastest():
    points = grid_points({"a": [1, 2], "b": ["x", "y", "z"]})
    assert [(p["a"], p["b"]) for p in points] == list(itertools.product([1, 2], ["x", "y", "z"]))


def test_list_grid_is_kept_in_order():
    points = grid_points([{"a": 3}, {"a": 1}, {"a": 2}])
    assert [p["a"] for p in points] == [3, 1, 2]


@pytest.mark.parametrize(
    "grid, error, words",
    [
        ({"a": "abc"}, TypeError, "grid['a'] must be a list"),
        ({"a": 3}, TypeError, "grid['a'] must be a list"),
        ([{"a": 1}, {"b": 2}], ValueError, "point 1 has parameters ['b']"),
        ([{"a": 1}, 5], TypeError, "grid point 1 must be a dict"),
        ("abc", TypeError, "grid must be a dict of lists"),
    ],
)
def test_bad_grids_fail_naming_the_problem(grid, error, words):
    with pytest.raises(error) as info:
        grid_points(grid)
    assert words in str(info.value)


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), st.lists(st.integers(-5, 5), min_size=1, max_size=3), min_size=1))
def test_serial_result_has_one_row_per_point_with_its_parameters(grid):
    df = sweep(grid, lambda **p: {"total": sum(p.values())}, jobs=1, progress=False)
    n_points = int(np.prod([len(v) for v in grid.values()]))
    assert len(df) == n_points
    assert list(df.columns) == [*grid, "total"]
    assert (df[list(grid)].sum(axis=1) == df["total"]).all()
    for name, values in grid.items():
        assert set(df[name]) == set(values)


# ---------------------------------------------------------------- serial vs dask


def test_serial_and_two_worker_local_cluster_give_identical_frames():
    serial = sweep(GRID, noisy_stats, jobs=1, progress=False)
    parallel = sweep(GRID, noisy_stats, jobs=2, progress=False)
    assert len(serial) == 12
    pd.testing.assert_frame_equal(serial, parallel, check_exact=True)
    assert serial.attrs["failures"] == parallel.attrs["failures"] == ()


def test_frame_outputs_with_shared_data_match_serial_on_a_client(client):
    grid = {"seed": [0, 1, 2, 3], "instances": [2, 5]}
    shared = {"workload": np.random.default_rng(7).random(500)}
    serial = sweep(grid, per_instance, shared=shared, jobs=1, progress=False)
    parallel = sweep(grid, per_instance, shared=shared, client=client, progress=False)
    assert len(serial) == 4 * (2 + 5)
    assert list(serial.columns) == ["seed", "instances", "instance", "work"]
    pd.testing.assert_frame_equal(serial, parallel, check_exact=True)
    totals = serial.groupby(["seed", "instances"])["work"].sum()
    np.testing.assert_allclose(totals, shared["workload"].sum())


def test_shared_objects_are_scattered_once_not_sent_per_point(client):
    CountingPayload.pickled = 0
    payload = CountingPayload(np.arange(1000.0))
    df = sweep({"seed": list(range(12))}, payload_sum, shared={"payload": payload}, client=client, progress=False)
    assert df["total"].tolist() == [float(np.arange(1000.0).sum() * s) for s in range(12)]
    assert 1 <= CountingPayload.pickled <= 2  # one scatter (at most once per worker), not 12 sends


def test_jobs_1_runs_in_this_process_without_dask(monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://127.0.0.1:1")  # an explicit jobs=1 wins over the env
    df = sweep({"seed": [0, 1, 2]}, process_id, jobs=1, progress=False)
    assert set(df["pid"]) == {os.getpid()}


def test_jobs_env_variable_selects_serial(monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    monkeypatch.setenv(JOBS_ENV, "1")
    df = sweep({"seed": [0, 1]}, process_id, progress=False)
    assert set(df["pid"]) == {os.getpid()}


# ---------------------------------------------------------------- failures


@pytest.mark.parametrize("where", ["serial", "dask"])
def test_failed_point_is_reported_with_its_parameters_and_the_rest_complete(where, client):
    target = {"jobs": 1} if where == "serial" else {"client": client}
    with pytest.warns(SweepWarning, match=r"1 of 6 sweep points failed.*'seed': 3"):
        df = sweep({"seed": list(range(6))}, fails_on_seed_3, progress=False, **target)
    assert df["seed"].tolist() == [0, 1, 2, 4, 5]
    assert df["value"].tolist() == [0.0, 0.5, 1.0, 2.0, 2.5]
    (failure,) = df.attrs["failures"]
    assert isinstance(failure, PointFailure)
    assert failure.index == 3 and failure.params == {"seed": 3}
    assert failure.error == "ValueError: cannot serve seed 3"
    assert "fails_on_seed_3" in failure.traceback and "cannot serve seed 3" in failure.traceback


@pytest.mark.parametrize("where", ["serial", "dask"])
def test_on_error_raise_stops_with_the_failed_point(where, client):
    target = {"jobs": 1} if where == "serial" else {"client": client}
    with pytest.raises(SweepError, match="cannot serve seed 3") as info:
        sweep({"seed": list(range(6))}, fails_on_seed_3, progress=False, on_error="raise", **target)
    assert info.value.failure.params == {"seed": 3}


def test_a_point_that_kills_its_worker_is_reported_and_no_point_is_lost():
    # Dask retries a task whose worker died (``allowed-failures``, default 3; 0 here to keep the test
    # short) and then gives up on it, and on any point queued on the same dying worker.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with pytest.warns(SweepWarning, match="'seed': 1"):
            df = sweep({"seed": [0, 1, 2, 3]}, dies_on_seed_1, jobs=2, progress=False)
    failed = {f.params["seed"]: f for f in df.attrs["failures"]}
    assert 1 in failed and "KilledWorker" in failed[1].error
    assert sorted([*df["seed"], *failed]) == [0, 1, 2, 3]
    assert (df["value"] == df["seed"]).all() and 1 not in set(df["seed"])


def test_all_points_failing_gives_an_empty_frame_with_parameter_columns():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SweepWarning)
        df = sweep({"seed": [3]}, fails_on_seed_3, jobs=1, progress=False)
    assert df.empty and list(df.columns) == ["seed"] and len(df.attrs["failures"]) == 1


# ---------------------------------------------------------------- reaching an existing cluster


def test_scheduler_address_reaches_the_cluster(cluster, client):
    worker_pids = set(client.run(os.getpid).values())
    df = sweep({"seed": list(range(6))}, process_id, scheduler=cluster.scheduler_address, progress=False)
    assert set(df["pid"]) <= worker_pids and os.getpid() not in set(df["pid"])


def test_scheduler_env_variable_reaches_the_cluster(cluster, client, monkeypatch):
    monkeypatch.delenv(JOBS_ENV, raising=False)
    monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)
    worker_pids = set(client.run(os.getpid).values())
    df = sweep({"seed": list(range(4))}, process_id, progress=False)
    assert set(df["pid"]) <= worker_pids


def test_sweep_environment_overrides_the_other_option():
    assert sweep_environment(jobs=1) == {JOBS_ENV: "1", SCHEDULER_ENV: ""}
    assert sweep_environment(scheduler="tcp://h:8786") == {JOBS_ENV: "", SCHEDULER_ENV: "tcp://h:8786"}
    assert sweep_environment() == {}
    with pytest.raises(ValueError, match="only one of"):
        sweep_environment(jobs=2, scheduler="tcp://h:8786")


# ---------------------------------------------------------------- bad calls


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"jobs": 0}, ValueError, "jobs must be a positive integer"),
        ({"jobs": 2, "scheduler": "tcp://h:1"}, ValueError, "only one of"),
        ({"on_error": "ignore"}, ValueError, "on_error must be one of"),
        ({"shared": {"seed": 1}}, ValueError, "shared names ['seed'] are also grid parameters"),
    ],
)
def test_bad_arguments_fail_loudly(kwargs, error, words):
    with pytest.raises(error) as info:
        sweep({"seed": [0, 1]}, fails_on_seed_3, progress=False, **kwargs)
    assert words in str(info.value)


def test_bad_jobs_env_variable_fails_loudly(monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    monkeypatch.setenv(JOBS_ENV, "many")
    with pytest.raises(ValueError, match="SMETRIC_JOBS must be a positive integer"):
        sweep({"seed": [0]}, fails_on_seed_3, progress=False)


@pytest.mark.parametrize(
    "fn, words",
    [
        (lambda seed: [seed], "TypeError: fn must return a dict or a pandas DataFrame, got list"),
        (lambda seed: {"seed": seed}, "ValueError: fn's outputs ['seed'] repeat grid parameters"),
    ],
)
def test_malformed_outputs_fail_their_point(fn, words):
    with pytest.raises(SweepError) as info:
        sweep({"seed": [0, 1]}, fn, jobs=1, progress=False, on_error="raise")
    assert words in info.value.failure.error and info.value.failure.params == {"seed": 0}
