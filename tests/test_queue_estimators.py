"""Decode-time estimators of the ranked queue disciplines: engine == reference, oracle unchanged,
and a case where an estimate mis-ranks what the oracle ranks right."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from engine_support import small_cluster, unique_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import assert_same_run, cases
from test_queue_engine import contended_cases

from smetric.cluster.engine import run_engine
from smetric.cluster.estimators import (
    EG_A,
    EG_C,
    LINEAR,
    SESSION_MEAN,
    decode_time_nb,
    estimate_nb,
    estimator_state,
    observe_nb,
)
from smetric.cluster.inputs import prepare
from smetric.cluster.queueing import QueueDiscipline
from smetric.cluster.reference import run_reference
from smetric.cluster.simulate import simulate

ESTIMATING = [QueueDiscipline("smetric-score", estimator="session-mean"),
              QueueDiscipline("smetric-score", estimator="linear", window=5),
              QueueDiscipline("mlfq", estimator="linear", short_s=0.01, long_s=0.02, t_low=0.2, t_medium=0.5),
              QueueDiscipline("mlfq", estimator="session-mean", prior_output=3.0)]


def _same(inp):
    a, b = run_engine(inp), run_reference(inp)
    assert_same_run(a, b)
    assert np.array_equal(a.decode_est, b.decode_est)  # shared arithmetic: equal, not close
    return a


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended_cases(), st.sampled_from(ESTIMATING))
def test_engine_matches_reference_with_each_estimator(case, queue):
    wl, cluster, policy, load, seed = case
    _same(prepare(wl, dataclasses.replace(cluster, queue=queue), policy, load=load, seed=seed, n_samples=50))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(ESTIMATING))
def test_engine_matches_reference_with_each_estimator_on_any_cluster(case, queue):
    wl, cluster, policy, load, seed = case
    _same(prepare(wl, dataclasses.replace(cluster, queue=queue), policy, load=load, seed=seed, n_samples=50))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended_cases())
def test_oracle_is_the_default_and_uses_the_true_decode_time(case):
    wl, cluster, policy, load, seed = case
    runs = []
    for queue in (QueueDiscipline("smetric-score"), QueueDiscipline("smetric-score", estimator="oracle")):
        inp = prepare(wl, dataclasses.replace(cluster, queue=queue), policy, load=load, seed=seed, n_samples=50)
        raw = run_engine(inp)
        assert np.array_equal(raw.decode_est, inp.decode_est)
        runs.append(raw)
    for name in ("admit", "first_token", "finish"):
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name), equal_nan=True)


def test_session_mean_falls_back_to_the_global_mean_then_the_prior():
    coef = small_cluster().hardware_spec().coef_array
    sess, ring, g = estimator_state(SESSION_MEAN, 3, 4)
    prior = estimate_nb(SESSION_MEAN, 50.0, coef, sess, g, 0, 100)
    observe_nb(SESSION_MEAN, sess, ring, g, 1, 100, 11, 0.0)
    observe_nb(SESSION_MEAN, sess, ring, g, 1, 100, 31, 0.0)
    observe_nb(SESSION_MEAN, sess, ring, g, 2, 100, 81, 0.0)
    own = estimate_nb(SESSION_MEAN, 50.0, coef, sess, g, 1, 100)        # session 1: mean 21
    other = estimate_nb(SESSION_MEAN, 50.0, coef, sess, g, 0, 100)      # session 0: none finished, global mean 41
    assert own < other < prior                               # prior 50 > 41 > 21 output tokens
    assert own == decode_time_nb(coef, 100, 21.0)


def test_linear_fit_recovers_a_linear_decode_time():
    sess, ring, g = estimator_state(LINEAR, 1, 8)
    for x, z in [(100, 10), (300, 20), (200, 50), (50, 5), (400, 40)]:
        observe_nb(LINEAR, sess, ring, g, 0, x, z, 0.001 * x + 0.02 * z + 0.3)
    assert g[EG_A:EG_C + 1] == pytest.approx([0.001, 0.02, 0.3])


def _misrank_workload():
    """Three earlier turns finish first (sessions 0 and 1 short and long replies, session 2 in between);
    then a long request of session 2 holds the only slot while A (session 0, a long reply) and B (session 1,
    a short one) arrive: the estimators expect A short and B long, the oracle knows better."""
    arrival = [0.0, 1.0, 2.0, 10.0, 10.1, 10.2]
    input_len = [100, 200, 400, 64, 300, 300]
    output_len = [2, 200, 50, 300, 200, 2]
    wl = unique_workload(arrival, input_len, output_len)
    return dataclasses.replace(wl, session=np.array([0, 1, 2, 2, 0, 1]))


@pytest.mark.parametrize("estimator", ["session-mean", "linear"])
def test_an_estimator_misranks_two_requests_the_oracle_ranks_right(estimator):
    wl = _misrank_workload()
    a, b = 4, 5
    base = dict(alpha=1.0, gamma=0.0, delta=0.0)
    cluster = small_cluster(max_num_seqs=1)
    oracle = simulate(wl, dataclasses.replace(cluster, queue=QueueDiscipline("smetric-score", **base)), "round-robin")
    est = simulate(wl, dataclasses.replace(cluster, queue=QueueDiscipline("smetric-score", estimator=estimator,
                                                                            window=3, **base)), "round-robin")
    o, e = oracle.requests, est.requests
    assert o.loc[b, "admit"] < o.loc[a, "admit"]      # the oracle runs the short reply first
    assert e.loc[a, "admit"] < e.loc[b, "admit"]      # the estimate, from the sessions' past, does not
    assert e.loc[a, "decode_est"] < e.loc[b, "decode_est"]
    assert "estimator_mae_s" in est.summary() and est.summary()["estimator_mae_s"] > 0
    assert "estimator_mae_s" not in oracle.summary()
    assert "decode_est" not in o


def test_estimator_needs_a_ranked_discipline():
    with pytest.raises(ValueError, match="estimator does not apply to fcfs"):
        QueueDiscipline.parse("fcfs", {"estimator": "linear"})
    with pytest.raises(ValueError, match="estimator must be one of"):
        QueueDiscipline("mlfq", estimator="psychic")
    q = QueueDiscipline.parse("mlfq", {"estimator": "session_mean", "window": "7"})
    assert (q.estimator, q.window) == ("session-mean", 7)


def test_kpis_hold_the_blueprints_measures():
    wl = _misrank_workload()
    res = simulate(wl, small_cluster(max_num_seqs=1), "round-robin")
    k = res.kpis()
    s = res.summary()
    assert k["latency_p90"] == s["latency_p90"] and k["gpu_busy_cv"] == s["busy_cv"]
    assert k["session_time_p50"] <= k["session_time_p90"] <= k["session_time_p99"]
    assert k["sessions_per_s"] == pytest.approx(3 / s["window_s"])
    assert 0 < k["gpu_busy_frac"] <= 1
    assert "sessions_per_s" not in s
