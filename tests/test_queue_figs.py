"""fig12 experiment functions on tiny sizes: frame shapes, and properties that could fail."""

from __future__ import annotations

import numpy as np
import pytest

from smetric.experiments import queueing_figs as qf


@pytest.fixture(scope="module")
def comparison():
    return qf.discipline_comparison(loads=(12.0, 40.0), routers=("least-load",), seeds=(0,), n_instances=2,
                                    minutes=2.0, jobs=1)


@pytest.fixture(scope="module")
def weights():
    return qf.weight_sweep(alphas=(0.0, 100.0), gammas=(0.0, 10.0), seeds=(0,), duration=30.0, jobs=1)


def test_comparison_frame(comparison):
    assert len(comparison) == 2 * 1 * 3
    assert {"rpm", "router", "queue", "seed", *qf.METRICS, "long_wait_p99", "sessions_starved_frac"} <= set(comparison)
    assert (comparison["goodput_tps"] <= comparison["throughput_tps"] + 1e-9).all()
    assert (comparison["queue_wait_max"] >= comparison["queue_wait_p99"]).all()
    table = qf.comparison_table(comparison)
    assert len(table) == 6 and not table.duplicated(["rpm", "router", "queue"]).any()


def test_disciplines_agree_when_queues_stay_short(comparison):
    """At a light load on many instances the order of an (almost always empty) queue hardly matters."""
    light = comparison[comparison["rpm"] == 12.0].set_index("queue")
    assert light["goodput_tps"].max() <= 1.05 * light["goodput_tps"].min()


def test_short_long_stream():
    wl = qf.short_long_stream(3, duration=20.0, short_rate=5.0, long_every=4.0)
    long = wl.input_len == 12_000
    assert long.sum() == 5 and np.all(np.diff(wl.arrival) >= 0)
    assert len(np.unique(wl.block_ids)) == len(wl.block_ids)  # no reuse: every turn computes its prompt
    with pytest.raises(ValueError, match="short_rate"):
        qf.short_long_stream(0, short_rate=0.0)


def test_weight_sweep_shows_the_starvation_trade_off(weights):
    """Urgency alone starves the long turns behind shorts past capacity; the waiting-time weight rescues them."""
    w = weights.set_index(["alpha", "gamma"])
    assert w.loc[(100.0, 0.0), "long_wait_p99"] > w.loc[(0.0, 10.0), "long_wait_p99"]
    assert w.loc[(100.0, 0.0), "short_wait_mean"] < w.loc[(0.0, 10.0), "short_wait_mean"]  # the shorts pay
    lines = qf.queue_findings(qf.discipline_comparison(loads=(12.0,), routers=("least-load",), seeds=(0,),
                                                       n_instances=1, minutes=1.0, jobs=1), weights)
    assert any("fcfs" in line for line in lines) and lines[-1].startswith("weights")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown queue disciplines"):
        qf.discipline_comparison(disciplines=("sjf",), jobs=1)
    with pytest.raises(ValueError, match="loads"):
        qf.discipline_comparison(loads=(0.0,), jobs=1)
    with pytest.raises(ValueError, match="weights"):
        qf.weight_sweep(alphas=(-1.0,), jobs=1)
