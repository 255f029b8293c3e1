"""Priorities and abandonment: engine == reference with both on, exact counts in hand-built cases,
nothing changes when nobody abandons, the KPIs and the CLI."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from engine_support import agent_workload, small_cluster, unique_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import PER_INSTANCE, PER_REQUEST, assert_same_run, cases
from test_queue_engine import contended_cases

from smetric.cli import main
from smetric.cluster.abandonment import Patience, draw_patience
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.queueing import QueueDiscipline
from smetric.cluster.reference import run_reference
from smetric.cluster.result_raw import REASON_ABANDONED, REASON_COMPLETED
from smetric.cluster.simulate import simulate
from smetric.workload.core import Workload
from smetric.workload.priority import HIGH_PRIORITY, with_priority

PATIENCES = [Patience("fixed", 0.02), Patience("fixed", 0.3), Patience("lognormal", 0.1, 1.0),
             Patience("lognormal", 1.0, 2.0)]
QUEUES = [QueueDiscipline("fcfs"), QueueDiscipline("smetric-score", beta=5.0),
          QueueDiscipline("smetric-score", beta=1.0, estimator="linear", window=5),
          QueueDiscipline("mlfq", short_s=0.01, long_s=0.02, t_low=0.2, t_medium=0.5, estimator="session-mean")]


def _run_both(wl, cluster, policy, load, seed, patience, queue, share):
    wl = with_priority(wl, share, seed=seed)
    inp = prepare(wl, dataclasses.replace(cluster, queue=queue, patience=patience), policy, load=load, seed=seed,
                  n_samples=50)
    a = run_engine(inp)
    assert_same_run(a, run_reference(inp))
    return a


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended_cases(), st.sampled_from(PATIENCES), st.sampled_from(QUEUES), st.sampled_from([0.0, 0.3, 1.0]))
def test_engine_matches_reference_with_abandonment_and_priorities(case, patience, queue, share):
    wl, cluster, policy, load, seed = case
    _run_both(wl, cluster, policy, load, seed, patience, queue, share)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(PATIENCES), st.sampled_from(QUEUES), st.sampled_from([0.0, 0.5]))
def test_engine_matches_reference_with_abandonment_on_any_cluster(case, patience, queue, share):
    wl, cluster, policy, load, seed = case
    _run_both(wl, cluster, policy, load, seed, patience, queue, share)


def test_the_random_cases_do_abandon():
    """The equivalence cases exercise the mechanism: a contended closed-replay case loses sessions."""
    wl = agent_workload(5, n_sessions=20, max_turns=4, span=0.2, first_prompt=(20, 1500))
    cluster = small_cluster(kv_tokens=2500, block_size=16, max_num_seqs=2, max_batched_tokens=256, replay="closed")
    raw = _run_both(wl, cluster, "least-load", 4.0, 1, Patience("fixed", 0.3), QUEUES[1], 0.3)
    gone = raw.reason == REASON_ABANDONED
    assert 0 < gone.sum() < len(gone)
    assert np.isnan(raw.arrival[gone]).any()  # descendants that were never released count as abandoned


@pytest.mark.parametrize("engine", ["numba", "reference"])
def test_patience_nobody_reaches_changes_nothing(engine):
    wl = agent_workload(11, n_sessions=30, max_turns=4, span=1.0, first_prompt=(20, 1500))
    cluster = small_cluster(kv_tokens=4000, n_instances=2, block_size=16, max_num_seqs=4, max_batched_tokens=256,
                            replay="closed")
    run = run_engine if engine == "numba" else run_reference
    base = run(prepare(wl, cluster, "least-load", load=2.0, seed=3, n_samples=50))
    patient = run(prepare(wl, dataclasses.replace(cluster, patience=Patience("fixed", 1e9)), "least-load",
                          load=2.0, seed=3, n_samples=50))
    for name in PER_REQUEST + PER_INSTANCE:
        assert np.array_equal(getattr(base, name), getattr(patient, name), equal_nan=True), name
    assert np.array_equal(base.timeseries, patient.timeseries)


def _one_slot(**kw):
    return small_cluster(max_num_seqs=1, max_batched_tokens=1024, **kw)


def test_a_request_that_waits_past_its_patience_abandons_exactly():
    """One slot, three requests at t = 0: the second waits until the first finishes (T1), the third until T2.
    Patience between T1 and T2: exactly the third abandons; patience exactly T1: the second is served at it."""
    wl = unique_workload(np.zeros(3), 300, 40)
    for engine in (run_engine, run_reference):  # each its own times (closed form vs summed iterations)
        admit = engine(prepare(wl, _one_slot(), "round-robin")).admit
        t1, t2 = admit[1], admit[2]
        assert 0 < t1 < t2
        raw = engine(prepare(wl, _one_slot(patience=Patience("fixed", 0.5 * (t1 + t2))), "round-robin"))
        assert list(raw.reason) == [REASON_COMPLETED, REASON_COMPLETED, REASON_ABANDONED]
        assert np.isnan(raw.admit[2]) and np.isnan(raw.finish[2])
        assert raw.admit[1] == t1
        at_deadline = engine(prepare(wl, _one_slot(patience=Patience("fixed", t1)), "round-robin"))
        assert list(at_deadline.reason) == [REASON_COMPLETED, REASON_COMPLETED, REASON_ABANDONED]
        assert at_deadline.admit[1] == t1


def _blocker_and_session(replay_gap: float) -> Workload:
    """Session 0: one long request at t = 0. Session 1: three turns (the first at t = 0, waiting behind it)."""
    return Workload(arrival=[0.0, 0.0, 0.2 + replay_gap, 0.4 + replay_gap], input_len=[2000, 100, 150, 200],
                    output_len=[200, 5, 5, 5], session=[0, 1, 1, 1], turn=[0, 0, 1, 2], parent=[-1, -1, 1, 2],
                    gap=[0.0, 0.1, 0.1, 0.1], block_offsets=[0, 125, 132, 142, 155],
                    block_ids=np.arange(155), block_size=16)


@pytest.mark.parametrize("replay", ["closed", "open"])
def test_an_abandoned_session_serves_none_of_its_remaining_turns(replay):
    """Session 1's first turn waits behind session 0's long request longer than its patience: the session
    abandons and its two later turns are counted abandoned too (closed: never released; open: arriving after the
    abandonment, not routed)."""
    wl = _blocker_and_session(replay_gap=5.0)
    base = simulate(wl, _one_slot(replay=replay), "round-robin")
    wait = base.requests.loc[1, "admit"]
    assert wait > 0.2
    for engine in ("numba", "reference"):
        res = simulate(wl, _one_slot(replay=replay, patience=Patience("fixed", 0.1)), "round-robin", engine=engine)
        rq = res.requests
        assert list(rq["status"]) == ["completed", "abandoned", "abandoned", "abandoned"]
        later = rq.loc[2:]
        assert (later["instance"] == -1).all()
        assert (later["arrival"].notna() if replay == "open" else later["arrival"].isna()).all()
        s = res.summary()
        assert (s["sessions_abandoned"], s["turns_abandoned"], s["abandon_rate"]) == (1, 3, 0.5)
        assert s["n_sessions_completed"] == 1
        k = res.kpis()
        assert (k["sessions_abandoned"], k["turns_abandoned"]) == (1, 3)


def test_summary_has_abandonment_keys_only_with_patience_and_kpis_always():
    wl = _blocker_and_session(replay_gap=0.0)
    plain = simulate(wl, _one_slot(replay="closed"), "round-robin")
    assert "sessions_abandoned" not in plain.summary()
    k = plain.kpis()
    assert (k["sessions_abandoned"], k["turns_abandoned"], k["abandon_rate"]) == (0, 0, 0.0)
    for key in ("session_time_p50", "session_time_p90", "session_time_p99", "latency_p50", "latency_p90",
                "latency_p99", "gpu_busy_frac", "gpu_busy_cv", "gpu_busy_cv_instances", "sessions_per_s"):
        assert np.isfinite(k[key]), key
    assert k["gpu_busy_cv_instances"] == 0.0  # one instance
    two = simulate(agent_workload(2, n_sessions=6), small_cluster(n_instances=2), "round-robin").kpis()
    assert two["gpu_busy_cv_instances"] > 0
    with_patience = simulate(wl, _one_slot(replay="closed", patience="fixed:100"), "round-robin").summary()
    assert with_patience["sessions_abandoned"] == 0 and with_patience["turns_abandoned"] == 0


def test_patience_draws_come_from_their_own_seeded_stream():
    p = Patience("lognormal", 60.0, 1.0)
    a = draw_patience(p, 2000, 7)
    assert np.array_equal(a, draw_patience(p, 2000, 7))
    assert not np.array_equal(a, draw_patience(p, 2000, 8))
    assert abs(np.median(a) / 60.0 - 1.0) < 0.1
    assert np.all(draw_patience(Patience("fixed", 3.0), 5, 0) == 3.0)
    wl = agent_workload(1, n_sessions=5)
    cluster = small_cluster()
    inp, with_p = prepare(wl, cluster, "random", seed=4), prepare(wl, dataclasses.replace(cluster, patience=p),
                                                                  "random", seed=4)
    assert np.array_equal(inp.rand, with_p.rand) and inp.patience is None and len(with_p.patience) == 5


@pytest.mark.parametrize("text, message", [("fixed", "fixed:SECONDS"), ("weibull:3", "fixed:SECONDS"),
                                           ("fixed:-1", "median_s"), ("lognormal:5:-1", "sigma"),
                                           ("fixed:3:1", "fixed:SECONDS")])
def test_bad_patience_names_the_field(text, message):
    with pytest.raises(ValueError, match=message):
        Patience.parse(text)


def test_priority_tiers_mark_whole_sessions_from_their_own_stream():
    wl = agent_workload(3, n_sessions=200, max_turns=4)
    marked = with_priority(wl, 0.25, seed=9)
    per_session = {s: set(marked.priority[wl.session == s]) for s in np.unique(wl.session)}
    assert all(len(v) == 1 for v in per_session.values())
    share = np.mean([v == {HIGH_PRIORITY} for v in per_session.values()])
    assert 0.15 < share < 0.35
    assert np.array_equal(marked.priority, with_priority(wl, 0.25, seed=9).priority)
    assert np.all(with_priority(wl, 0.0).priority == 1.0) and np.all(with_priority(wl, 1.0).priority == 2.0)
    with pytest.raises(ValueError, match="high-priority share"):
        with_priority(wl, 1.5)


def test_synthetic_priority_option_leaves_every_other_draw_unchanged():
    from smetric.workload.synthetic import synth_agent_workload

    base = synth_agent_workload(50, seed=2)
    tiered = synth_agent_workload(50, seed=2, high_priority_share=0.3)
    for name in ("arrival", "input_len", "output_len", "session", "gap", "block_ids"):
        assert np.array_equal(getattr(base, name), getattr(tiered, name)), name
    assert np.all(base.priority == 1.0)
    assert set(np.unique(tiered.priority)) == {1.0, HIGH_PRIORITY}
    with pytest.raises(ValueError, match="high_priority_share"):
        synth_agent_workload(5, seed=2, high_priority_share=2.0)


def test_cli_runs_the_linear_estimator_with_patience_and_prints_the_kpis(tmp_path, capsys):
    rows = [(0, 2000, 200, [0, 1, 2, 3]), (0, 1800, 10, [0, 5, 6, 7]), (100, 2600, 30, [0, 1, 2, 3, 8, 9])]
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h})
                              for t, n, o, h in rows) + "\n")
    args = ["simulate", "--model", "llama-3-8b", "--gpu", "a100", "--policy", "round_robin", "--trace", str(path),
            "--queue", "smetric-score", "--queue-param", "estimator=linear", "--max-num-seqs", "1",
            "--patience", "fixed:0.001", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["estimator"] == "linear" and "estimator_mae_s" in out
    assert out["turns_abandoned"] >= 1 and out["kpis"]["turns_abandoned"] == out["turns_abandoned"]
    for key in ("session_time_p90", "latency_p99", "gpu_busy_cv_instances", "sessions_per_s", "abandon_rate"):
        assert key in out["kpis"]
    assert main(args[:-3] + ["--patience", "soon", "--json"]) == 2
    assert "patience" in capsys.readouterr().err


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.sampled_from(PATIENCES), st.sampled_from(["open", "closed"]))
def test_engine_matches_reference_with_abandonment_and_preemption(seed, patience, replay):
    """Incremental allocation preempts: a preempted request returns to the queue admitted once, never abandons."""
    wl = agent_workload(seed, n_sessions=12, max_turns=3, span=0.3, first_prompt=(20, 800), output=(1, 80))
    cluster = small_cluster(kv_tokens=1500, block_size=16, max_num_seqs=4, max_batched_tokens=256,
                            kv_allocation="incremental", replay=replay, patience=patience)
    inp = prepare(wl, cluster, "least-load", load=2.0, seed=seed, n_samples=50)
    a = run_engine(inp)
    assert_same_run(a, run_reference(inp))
    assert not (a.preemptions[a.reason == REASON_ABANDONED] > 0).any()
