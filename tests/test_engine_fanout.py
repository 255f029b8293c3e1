"""Fan-out joins in closed replay (the engine side).

A fan-out child (a parallel tool call's or a sub-agent's request) has ``parent`` = the spawning turn and
``join_to`` = the turn that waits for it. A request is released once its parent and every row that joins it
have ended (finished or rejected), ``gap`` after the last of those ends; open replay ignores joins. Hand-built
cases check the release times exactly in both engines; random cases hold the engine equal to the reference
with fan-out on; without joins every number is the one the engine gave before joins existed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from engine_support import agent_workload, chained_ids, router_infos, small_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import assert_same_run, cases

from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import _children_csr, prepare
from smetric.cluster.reference import run_reference
from smetric.cluster.result_raw import REASON_COMPLETED, REASON_TOO_LARGE, RawRun
from smetric.cluster.router_info import RouterInfo
from smetric.cluster.simulate import simulate
from smetric.workload.core import Workload

PROMPT = np.arange(200)              # the spawning turn's prompt (token labels)
REPLY = np.arange(10_000, 10_030)    # and its 30-token reply


def _session(rows, block_size: int = 16) -> Workload:
    """One session from ``(prompt tokens, output, turn, parent, gap, join_to)`` rows, all at trace time 0."""
    table: dict = {}
    ids, offsets = [], [0]
    for r in rows:
        ids += chained_ids(np.asarray(r[0]), block_size, table)
        offsets.append(len(ids))
    n = len(rows)
    col = lambda k: np.array([r[k] for r in rows])  # noqa: E731
    return Workload(arrival=np.zeros(n), input_len=np.array([len(r[0]) for r in rows]), output_len=col(1),
                    session=np.zeros(n, dtype=np.int64), turn=col(2), parent=col(3), gap=col(4).astype(float),
                    block_offsets=np.array(offsets), block_ids=np.array(ids, dtype=np.int64),
                    block_size=block_size, join_to=col(5))


def _task(k: int, n: int = 40) -> np.ndarray:
    return np.arange(20_000 + 1000 * k, 20_000 + 1000 * k + n)


def _fan3() -> Workload:
    """A turn (30-token reply) fanning out to 3 parallel calls of 5, 60 and 25 tokens, joined by the next turn."""
    ctx = np.concatenate([PROMPT, REPLY])
    return _session([
        (PROMPT, 30, 0, -1, 0.0, -1),
        (np.concatenate([ctx, _task(0)]), 5, 1, 0, 0.01, 4),
        (np.concatenate([ctx, _task(1)]), 60, 1, 0, 0.02, 4),
        (np.concatenate([ctx, _task(2)]), 25, 1, 0, 0.03, 4),
        (np.concatenate([ctx, _task(3, 100)]), 10, 1, 0, 0.25, -1),
    ])


def _both(wl: Workload, cluster, policy: str = "round-robin", **kw) -> RawRun:
    inp = prepare(wl, cluster, policy, **kw)
    a = run_engine(inp)
    assert_same_run(a, run_reference(inp))
    return a


def _identical(a: RawRun, b: RawRun) -> None:
    """Two raw runs are equal bit for bit."""
    for f in dataclasses.fields(RawRun):
        x, y = np.asarray(getattr(a, f.name)), np.asarray(getattr(b, f.name))
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f.name


def test_next_turn_arrives_gap_after_the_last_parallel_call_ends():
    wl = _fan3()
    raw = _both(wl, small_cluster(n_instances=3, replay="closed"))
    assert np.all(raw.reason == REASON_COMPLETED)
    for c in (1, 2, 3):  # each call starts its own gap after the spawning turn
        assert raw.arrival[c] == raw.finish[0] + wl.gap[c]
    ends = raw.finish[1:4]
    assert len(set(ends.tolist())) == 3  # three different lengths, three different ends
    assert ends.max() > raw.finish[0] + wl.gap[4]  # without the join the turn would have come earlier
    assert raw.arrival[4] == ends.max() + wl.gap[4]
    assert raw.arrival[4] > ends.min()


def test_a_rejected_child_still_releases_the_join_at_its_rejection():
    ctx = np.concatenate([PROMPT, REPLY])
    wl = _session([
        (PROMPT, 30, 0, -1, 0.0, -1),
        (np.concatenate([ctx, _task(0)]), 5, 1, 0, 0.0, 3),
        (np.concatenate([ctx, _task(1, 3000)]), 5, 1, 0, 2.0, 3),  # can never fit 2,000 KV tokens
        (np.concatenate([ctx, _task(2)]), 10, 1, 0, 0.1, -1),
    ])
    raw = _both(wl, small_cluster(kv_tokens=2000, n_instances=2, replay="closed"))
    assert raw.reason[2] == REASON_TOO_LARGE and raw.reason[3] == REASON_COMPLETED
    assert raw.arrival[2] > raw.finish[1]  # the rejection is the last end
    assert raw.arrival[3] == raw.arrival[2] + wl.gap[3]


def test_a_two_turn_sub_agent_joins_through_its_last_turn():
    ctx = np.concatenate([PROMPT, REPLY])
    sub = np.concatenate([ctx, _task(0)])
    sub2 = np.concatenate([sub, np.arange(30_000, 30_020), _task(1)])
    wl = _session([
        (PROMPT, 30, 0, -1, 0.0, -1),
        (sub, 20, 1, 0, 0.05, -1),   # the sub-agent's first turn
        (sub2, 15, 2, 1, 0.07, 3),   # its last turn joins row 3
        (np.concatenate([ctx, np.arange(31_000, 31_015), _task(2)]), 10, 1, 0, 0.2, -1),
    ])
    inp = prepare(wl, small_cluster(n_instances=2, replay="closed"), "round-robin")
    assert [list(inp.waiters[inp.waiter_offsets[r]:inp.waiter_offsets[r + 1]]) for r in range(4)] == \
        [[1, 3], [2], [3], []]
    assert list(inp.n_deps) == [0, 1, 1, 2]
    raw = run_engine(inp)
    assert_same_run(raw, run_reference(inp))
    assert raw.arrival[1] == raw.finish[0] + wl.gap[1]
    assert raw.arrival[2] == raw.finish[1] + wl.gap[2]
    assert raw.arrival[3] == raw.finish[2] + wl.gap[3]
    assert raw.finish[2] > raw.finish[0] + wl.gap[3]


def test_open_replay_ignores_joins():
    wl = _fan3()
    cluster = small_cluster(n_instances=3, replay="open")
    raw = _both(wl, cluster)
    assert np.array_equal(raw.arrival, wl.arrival)
    _identical(raw, _both(dataclasses.replace(wl, join_to=None), cluster))


@pytest.mark.parametrize("replay", ["closed", "open"])
@pytest.mark.parametrize("policy, info", [("smetric", RouterInfo()), ("lmetric", RouterInfo()),
                                          ("session-sticky", RouterInfo(refresh_s=0.05, router_replicas=2))])
def test_without_joins_a_run_is_todays_bit_for_bit(replay, policy, info):
    """No joins: the waiters are the children, a row waits on its parent only, and an explicit all-(-1)
    ``join_to`` gives the run of a workload built without one."""
    wl = agent_workload(5, n_sessions=20, max_turns=4, span=2.0, first_prompt=(20, 1500))
    assert np.all(wl.join_to == -1)
    cluster = small_cluster(kv_tokens=8000, n_instances=3, block_size=64, max_num_seqs=8, replay=replay,
                            router=info)
    inp = prepare(wl, cluster, policy, load=2.0, seed=1)
    offsets, kids = _children_csr(inp.parent)
    assert np.array_equal(inp.waiter_offsets, offsets) and np.array_equal(inp.waiters, kids)
    assert np.array_equal(inp.n_deps, (inp.parent >= 0).astype(np.int64))
    explicit = dataclasses.replace(wl, join_to=np.full(len(wl), -1))
    _identical(run_engine(inp), run_engine(prepare(explicit, cluster, policy, load=2.0, seed=1)))


def test_fanout_generator_joins_every_chain_to_the_next_turn():
    """The random-case generator: fan-out adds children (same main draws), each chain's last row joins the
    parent's next turn, and the closed run releases every joined turn after all of its chains ended."""
    plain = agent_workload(9, n_sessions=6, max_turns=4)
    wl = agent_workload(9, n_sessions=6, max_turns=4, fanout=3, subagent_turns=2)
    joins = np.flatnonzero(wl.join_to >= 0)
    assert len(joins) > 3 and len(wl) > len(plain)
    assert np.any(wl.parent[joins] != wl.parent[wl.join_to[joins]])  # some joins end a 2-turn sub-agent chain
    raw = _both(wl, small_cluster(n_instances=2, replay="closed"), "least-load")
    for m in np.unique(wl.join_to[joins]):
        deps = np.concatenate([[wl.parent[m]], np.flatnonzero(wl.join_to == m)])
        assert raw.arrival[m] == max(wl.arrival[m], raw.finish[deps].max() + wl.gap[m])


def test_session_metrics_count_concurrent_requests():
    """A session with requests in flight together: its completion time runs to its latest finish, and every
    fan-out child counts as a routed follow-up."""
    res = simulate(_fan3(), small_cluster(n_instances=3, replay="closed"), "round-robin")
    rq = res.requests
    s = res.summary()
    assert s["n_sessions_completed"] == 1
    assert s["session_time_mean"] == rq["finish"].max() - rq["arrival"].min()
    assert res.diagnostics()["n_followups_routed"] == 4


@st.composite
def fanout_cases(draw):
    """The equivalence tests' random clusters and policies, in closed replay, on fanned-out sessions."""
    _, cluster, policy, load, seed = draw(cases())
    wl = agent_workload(seed, n_sessions=draw(st.integers(1, 8)), max_turns=draw(st.integers(2, 4)),
                        span=draw(st.sampled_from([0.5, 3.0])), output=(1, draw(st.sampled_from([2, 30, 80]))),
                        first_prompt=(20, draw(st.sampled_from([300, 1500]))), fanout=draw(st.integers(1, 3)),
                        subagent_turns=draw(st.integers(1, 3)))
    return wl, dataclasses.replace(cluster, replay="closed"), policy, load, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fanout_cases())
def test_engine_matches_reference_with_fanout(case):
    wl, cluster, policy, load, seed = case
    inp = prepare(wl, cluster, policy, load=load, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fanout_cases(), router_infos())
def test_engine_matches_reference_with_fanout_and_router_info(case, info):
    wl, cluster, policy, load, seed = case
    inp = prepare(wl, dataclasses.replace(cluster, router=info), policy, load=load, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


def test_a_fresh_context_sub_agent_does_not_take_its_parents_reply_ids():
    """The parent's reply ids come from the next turn that re-sends it, not from a sub-agent listed first."""
    ctx = np.concatenate([PROMPT, REPLY])
    wl = _session([
        (PROMPT, 30, 0, -1, 0.0, -1),
        (_task(5, 120), 8, 1, 0, 0.01, 2),                       # sub-agent: a fresh context, joins row 2
        (np.concatenate([ctx, _task(6, 60)]), 10, 1, 0, 0.1, -1),  # the next turn re-sends prompt + reply
    ])
    inp = prepare(wl, small_cluster(cache_replies=True), "round-robin")
    chain = inp.reply_ids[inp.reply_offsets[0]:inp.reply_offsets[1]]
    nxt = inp.block_ids[inp.block_offsets[2]:inp.block_offsets[3]]
    full = (200 + 30 - 1) // 16 - 200 // 16              # full reply blocks of row 0
    assert full >= 1 and np.array_equal(chain[:full], nxt[200 // 16:200 // 16 + full])
    # and the next turn finds them: with the sub-agent first by row, its prompt shares nothing with row 0
    assert not np.isin(chain[:full], inp.block_ids[inp.block_offsets[1]:inp.block_offsets[2]]).any()
