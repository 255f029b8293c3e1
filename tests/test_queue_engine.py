"""The queue disciplines inside the engines: engine = reference for every discipline, FCFS unchanged,
no deadlock when the best-ranked request cannot fit, anti-starvation within the promotion bound."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from engine_support import agent_workload, small_cluster, store, unique_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import POLICIES, assert_same_run, cases

from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.queueing import QueueDiscipline
from smetric.cluster.reference import run_reference
from smetric.cluster.simulate import simulate

FIXTURE = Path(__file__).parent / "data" / "fcfs_before_queue.csv"

RANKED = [QueueDiscipline("smetric-score"), QueueDiscipline("mlfq"),
          QueueDiscipline("smetric-score", alpha=0.0, delta=5.0),  # resource-averse: big requests wait
          QueueDiscipline("mlfq", short_s=0.01, long_s=0.02, t_low=0.2, t_medium=0.5)]  # every level in use


@st.composite
def contended_cases(draw):
    """Queues that hold several requests at once (short span, few slots, small budget, tight HBM), so that
    the discipline's order decides who goes first; colocated or disaggregated, open or closed replay."""
    seed = draw(st.integers(0, 2**31 - 1))
    wl = agent_workload(seed, n_sessions=draw(st.integers(6, 20)), max_turns=draw(st.integers(1, 4)),
                        span=draw(st.sampled_from([0.2, 1.0])), output=(1, draw(st.sampled_from([10, 60]))),
                        first_prompt=(20, draw(st.sampled_from([400, 1500]))))
    n = draw(st.integers(1, 3))
    shape = dict(n_instances=n)
    if n >= 2 and draw(st.booleans()):
        shape.update(mode="disaggregated", n_prefill=n - 1, n_decode=1)
    mns = draw(st.sampled_from([2, 4, 16]))
    cluster = small_cluster(
        kv_tokens=draw(st.sampled_from([2500, 5000, 30_000])), block_size=16, max_num_seqs=mns,
        max_batched_tokens=max(mns, draw(st.sampled_from([64, 256, 1024]))),
        global_store=draw(st.sampled_from([None, store()])), kv_load_overlap=draw(st.booleans()),
        replay=draw(st.sampled_from(["open", "closed"])), **shape)
    return wl, cluster, draw(st.sampled_from(POLICIES)), draw(st.sampled_from([1.0, 4.0])), seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(RANKED))
def test_engine_matches_reference_for_every_discipline(case, queue):
    wl, cluster, policy, load, seed = case
    inp = prepare(wl, dataclasses.replace(cluster, queue=queue), policy, load=load, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended_cases(), st.sampled_from(RANKED))
def test_engine_matches_reference_when_the_order_matters(case, queue):
    wl, cluster, policy, load, seed = case
    inp = prepare(wl, dataclasses.replace(cluster, queue=queue), policy, load=load, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


def _fixture_cases():
    """The two cases whose FCFS results were stored by the engine before the queue disciplines existed."""
    wl = agent_workload(11, n_sessions=30, max_turns=4, span=3.0, first_prompt=(20, 1500))
    yield "closed_tight", wl, small_cluster(
        kv_tokens=6000, n_instances=2, block_size=16, max_num_seqs=8, max_batched_tokens=512, dram_gb=0.05,
        global_store=store(capacity_gb=0.5), replay="closed"), "least-load"
    yield "open_disagg", wl, small_cluster(
        kv_tokens=8000, n_instances=3, mode="disaggregated", n_prefill=2, n_decode=1, block_size=64,
        max_num_seqs=16, max_batched_tokens=1024, pd_bandwidth_gbs=5.0), "smetric"


@pytest.mark.parametrize("engine", ["numba", "reference"])
def test_fcfs_results_equal_those_before_the_queue_disciplines(engine):
    before = pd.read_csv(FIXTURE)
    run = run_engine if engine == "numba" else run_reference
    for name, wl, cluster, policy in _fixture_cases():
        cluster = dataclasses.replace(cluster, cache_replies=False)  # the fixture predates reply caching
        raw = run(prepare(wl, cluster, policy, load=2.0, seed=5, n_samples=40))
        old = before[before.case == name].sort_values("row")
        assert len(old) == len(raw.arrival)
        for col in ("instance", "decode_instance", "hit_hbm", "reason"):
            assert np.array_equal(old[col].to_numpy(), getattr(raw, col)), (name, col)
        for col in ("admit", "first_token", "finish"):  # the fixture is the numba engine's, bit for bit
            if engine == "numba":
                assert np.array_equal(old[col].to_numpy(), getattr(raw, col), equal_nan=True), (name, col)
            else:  # the reference sums iteration times: equal to rounding (as in test_engine_equivalence)
                assert np.allclose(old[col].to_numpy(), getattr(raw, col), rtol=1e-9, atol=1e-12,
                                   equal_nan=True), (name, col)


def test_fixture_exercises_head_of_line_blocking():
    """The stored FCFS case is one where the discipline matters: admission order differs under a score."""
    name, wl, cluster, policy = next(_fixture_cases())
    fcfs = simulate(wl, cluster, policy, load=2.0, seed=5)
    score = simulate(wl, cluster, policy, load=2.0, seed=5, queue="smetric-score")
    assert not np.array_equal(fcfs.requests["admit"].to_numpy(), score.requests["admit"].to_numpy())


def test_a_request_that_cannot_fit_now_does_not_block_the_others():
    """The best-ranked request (oldest, so γ favours it) needs more KV than is free: the others pass it."""
    # one instance, 1000-token KV; request 0 holds 600 tokens for a long decode, request 1 (900 tokens,
    # best rank by waiting time) cannot fit until it leaves, requests 2-5 (100 tokens each) can.
    wl = unique_workload([0.0, 0.01, 0.02, 0.03, 0.04, 0.05], [400, 800, 50, 50, 50, 50], [200, 10, 5, 5, 5, 5])
    cluster = small_cluster(kv_tokens=1024, block_size=16, max_num_seqs=8, max_batched_tokens=2048)
    for queue in ("smetric-score", "mlfq"):
        q = QueueDiscipline(queue, alpha=0.0, gamma=1.0, delta=0.0)
        res = simulate(wl, cluster, "round-robin", queue=q).requests
        assert (res["status"] == "completed").all(), queue
        assert (res["finish"].iloc[2:] < res["admit"].iloc[1]).all(), queue  # the small ones went first
    fcfs = simulate(wl, cluster, "round-robin").requests
    assert (fcfs["admit"].iloc[2:] >= fcfs["admit"].iloc[1]).all()  # FCFS: head-of-line blocking


def test_mlfq_long_request_is_admitted_within_its_promotion_bound():
    """A long follow-up turn under a stream of short first turns arriving faster than they are served.

    One slot (max_num_seqs=1). A pure urgency score keeps preferring the shorts, so the long turn waits
    for the whole stream; mlfq promotes it to the high level at ``t_medium``, where it is the oldest,
    so it starts as soon as the short in service at that moment leaves.
    """
    n = 201
    long_row = 1
    arrivals = np.concatenate([[0.0, 0.005], 0.015 * np.arange(1, n - 1)])
    wl = unique_workload(arrivals, np.where(np.arange(n) == long_row, 3000, 64), np.full(n, 2))
    wl = dataclasses.replace(wl, turn=(np.arange(n) == long_row).astype(np.int64))
    cluster = small_cluster(kv_tokens=200_000, block_size=16, max_num_seqs=1, max_batched_tokens=4096)
    t_medium = 0.5
    mlfq = QueueDiscipline("mlfq", short_s=1e-3, long_s=2e-3, t_low=0.25, t_medium=t_medium)
    urgency_only = QueueDiscipline("smetric-score", alpha=1.0, gamma=0.0, delta=0.0)
    waits, short_service = {}, {}
    for q in (mlfq, urgency_only):
        req = simulate(wl, cluster, "round-robin", queue=q).requests
        waits[q.name] = float(req["admit"].iloc[long_row] - req["arrival"].iloc[long_row])
        shorts = req.drop(index=req.index[long_row])
        short_service[q.name] = float((shorts["finish"] - shorts["admit"]).max())
        assert shorts["arrival"].iloc[-1] > 4 * t_medium  # the stream outlasts the bound
    assert waits["smetric-score"] > 4 * t_medium  # starved by the stream
    assert waits["mlfq"] >= t_medium  # high level only after promotion (the shorts kept coming)
    assert waits["mlfq"] <= t_medium + short_service["mlfq"] + 1e-9
