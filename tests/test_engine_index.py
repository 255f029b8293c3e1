"""The numba engine's routing index: decisions and every number equal the full view's.

Random cases of the equivalence tests (1-4 instances, every KV path, router information models with replicas
and stale snapshots) and busier cases on 12-48 instances, run with the index forced on (it is normally on from
:data:`~smetric.cluster.engine.driver.SPARSE_MIN_INSTANCES` routable instances) and off: the raw runs are identical
bit for bit, and equal the reference's. The holder lists and min-trees are checked against the tiers and the
load columns while the KV caches evict.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest
from engine_support import agent_workload, router_infos, small_cluster, store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import assert_same_run, cases, tier_cases

from smetric.cluster.abandonment import Patience
from smetric.cluster.engine import driver, layout, loop, router_view, routing_index, tiers
from smetric.cluster.inputs import prepare
from smetric.cluster.load_index import holder_link, holder_unlink, new_trees, tree_set, tree_size
from smetric.cluster.reference import run_reference
from smetric.cluster.result_raw import REASON_ABANDONED
from smetric.cluster.router_info import RouterInfo
from smetric.policies import base as pb

#: every indexable configuration (layout.SP_* modes), and one that is not (the full view decides)
INDEXED = [("smetric", {}), ("smetric", {"cost": "tokens"}), ("smetric", {"guard": "none"}),
           ("smetric", {"hit_ratio": 0.0}), ("smetric", {"slack": 0.05}), ("least-load", {}),
           ("least-load", {"signal": "queued_tokens"})]


@contextlib.contextmanager
def index_from(n: int):
    """Use the routing index from ``n`` routable instances on."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(driver, "SPARSE_MIN_INSTANCES", n)
        yield


@contextlib.contextmanager
def holders_at_most(n: int):
    """Bound the enumerated holders at ``n`` (:data:`~smetric.cluster.engine.driver.SPARSE_HOLDERS`): on small clusters
    the shared system prompt is then "widely held", as on large ones."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(driver, "SPARSE_HOLDERS", n)
        yield


def run_both(inp):
    """(indexed run, full-view run) of ``inp``, after checking that the index was (and was not) used."""
    with index_from(1):
        assert driver._make_data(inp).sparse != layout.SP_OFF or inp.kv_event_delay_s > 0
        on = driver.run_engine(inp)
    with index_from(10**9):
        off = driver.run_engine(inp)
    return on, off


def assert_identical(a, b):
    """Two raw runs are equal bit for bit, field by field."""
    for name in (f.name for f in dataclasses.fields(a)):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f"{name} differs"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), router_infos(), st.sampled_from(INDEXED))
def test_index_decides_as_the_full_view_on_random_cases(case, info, policy):
    wl, cluster, _, load, seed = case
    inp = prepare(wl, dataclasses.replace(cluster, router=info), policy[0], policy[1], load=load, seed=seed,
                  n_samples=50)
    on, off = run_both(inp)
    assert_identical(on, off)
    assert_same_run(on, run_reference(inp))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tier_cases(), st.sampled_from(INDEXED))
def test_index_decides_as_the_full_view_under_kv_pressure(case, policy):
    wl, cluster, _, seed = case
    inp = prepare(wl, cluster, policy[0], policy[1], seed=seed, n_samples=50)
    on, off = run_both(inp)
    assert_identical(on, off)
    assert_same_run(on, run_reference(inp))


def _busy(n_instances: int, seed: int, fanout: int = 0, **kw):
    """Many sessions sharing a system prompt on ``n_instances`` instances: real ties, holders and evictions."""
    wl = agent_workload(seed, n_sessions=30 * n_instances, max_turns=5, span=6.0, first_prompt=(20, 1500),
                        output=(1, 200), system_prompt=160, fanout=fanout)
    return wl, small_cluster(kv_tokens=8_000, n_instances=n_instances, block_size=16, max_num_seqs=8,
                             max_batched_tokens=1024, **kw)


@pytest.mark.parametrize("policy, params", INDEXED)
@pytest.mark.parametrize("n_instances, extra", [
    (12, {}),
    (48, {"dram_gb": 0.05, "global_store": store(capacity_gb=0.5)}),
    (24, {"router": RouterInfo(router_replicas=4, refresh_s=0.05)}),
    (24, {"router": RouterInfo(router_replicas=3, replica_assignment="session"), "hit_granularity": 16,
          "cache_replies": True}),
    (16, {"mode": "disaggregated", "n_prefill": 12, "n_decode": 4, "replay": "closed"}),
    (16, {"replay": "closed", "fanout": 3, "patience": Patience("fixed", 0.5)}),  # joins and abandonment
])
def test_index_decides_as_the_full_view_on_busy_clusters(policy, params, n_instances, extra):
    wl, cluster = _busy(n_instances, 5, **extra)
    inp = prepare(wl, cluster, policy, params, load=3.0, seed=2, n_samples=40)
    on, off = run_both(inp)
    assert_identical(on, off)
    if cluster.patience is not None:
        assert (on.reason == REASON_ABANDONED).any()  # the case exercises abandonment
    assert len(np.unique(on.instance)) > n_instances // 2  # the case spreads over the cluster


@pytest.mark.parametrize("policy, params", INDEXED[:5])
@pytest.mark.parametrize("holders", [1, 3])
@pytest.mark.parametrize("n_instances, extra", [
    (12, {}),
    (16, {"dram_gb": 0.05, "global_store": store(capacity_gb=0.5), "hit_granularity": 16, "cache_replies": True}),
    (12, {"router": RouterInfo(router_replicas=3, refresh_s=0.05)}),
])
def test_index_decides_widely_held_prefixes_as_the_full_view(policy, params, holders, n_instances, extra):
    """Follow-ups whose own blocks left every cache but whose long shared prefix is widely held (the common case
    at scale: about half of these arrivals would otherwise need the full view) are decided by the index, as the
    full view decides them."""
    wl = agent_workload(3, n_sessions=30 * n_instances, max_turns=5, span=6.0, first_prompt=(20, 300),
                        appended=(10, 200), output=(1, 200), system_prompt=800)
    cluster = small_cluster(kv_tokens=4_000, n_instances=n_instances, block_size=16, max_num_seqs=8,
                            max_batched_tokens=1024, **extra)
    inp = prepare(wl, cluster, policy, params, load=3.0, seed=4, n_samples=40)
    counts = {}
    with holders_at_most(holders):
        with index_from(1):
            on = driver.run_engine(inp, counters=counts)
        with index_from(10**9):
            off = driver.run_engine(inp)
    assert_identical(on, off)
    assert counts["full_views"] < 0.1 * counts["arrivals"], counts  # the index decided nearly every arrival


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), router_infos(), st.sampled_from(INDEXED[:5]))
def test_index_with_one_holder_decides_as_the_full_view_on_random_cases(case, info, policy):
    wl, cluster, _, load, seed = case
    inp = prepare(wl, dataclasses.replace(cluster, router=info), policy[0], policy[1], load=load, seed=seed,
                  n_samples=50)
    with holders_at_most(1):
        on, off = run_both(inp)
    assert_identical(on, off)


def test_full_view_counter_counts_every_arrival_without_the_index():
    inp = prepare(*_busy(8, 1), "smetric", load=3.0, seed=1, n_samples=20)
    counts = {}
    with index_from(10**9):
        driver.run_engine(inp, counters=counts)
    assert counts["arrivals"] == inp.n and counts["full_views"] == inp.n


def test_index_is_used_only_where_the_rule_allows_it():
    wl, cluster = _busy(64, 1)
    inp = lambda policy, params=None, **kw: prepare(wl, dataclasses.replace(cluster, **kw), policy, params)  # noqa: E731
    mode = lambda i: driver._make_data(i).sparse  # noqa: E731
    assert mode(inp("smetric")) == layout.SP_SMETRIC_ATTN
    assert mode(inp("smetric", {"cost": "tokens"})) == layout.SP_SMETRIC_TOKENS
    assert mode(inp("least-load")) == layout.SP_LL_INFLIGHT
    assert mode(inp("least-load", {"signal": "queued_tokens"})) == layout.SP_LL_QTOKENS
    for policy, params in [("smetric", {"guard": "overload"}), ("smetric", {"rate": "online"}),
                           ("smetric", {"cache_view": "router"}), ("least-load", {"signal": "batch_size"}),
                           ("lmetric", None), ("dynamo", None), ("round-robin", None)]:
        assert mode(inp(policy, params)) == layout.SP_OFF, policy
    assert mode(inp("smetric", router=RouterInfo(kv_event_delay_s=0.1))) == layout.SP_OFF
    small = prepare(*_busy(driver.SPARSE_MIN_INSTANCES - 1, 1), "smetric")
    assert mode(small) == layout.SP_OFF


def _check_index(d, st):
    """The holder lists hold exactly the tiers' blocks, the counts match, the min-trees their columns."""
    m = d.n_instances
    hbm = {}
    for i in range(m):
        for s in range(d.hbm_blocks):
            b = st.hslot[i, layout.HS_BLOCK, s]
            if b >= 0 and tiers._hbm_slot(d, st, i, b) == s:
                hbm.setdefault(b, set()).add(i * d.hbm_blocks + s)
    dram = {}
    if d.dram_slots:
        for i in range(m):
            for s in range(d.dram_slots):
                b = st.dslot[i, layout.DS_BLOCK, s]
                if b >= 0 and tiers._dram_slot(d, st, i, b) == s:
                    dram.setdefault(b, set()).add(i * d.dram_slots + s)
    for tier, want, links in ((0, hbm, st.h_hl), (1, dram, st.h_dl)):
        got = {}
        for b in np.flatnonzero(st.h_head[tier] >= 0):
            e, seen = st.h_head[tier, b], set()
            while e >= 0:
                assert e not in seen
                seen.add(int(e))
                e = links[0, e]
            got[int(b)] = seen
        assert got == {int(b): v for b, v in want.items()}, f"tier {tier} holder lists differ from the tier"
    counts = np.zeros_like(st.h_count)
    for b, v in list(hbm.items()) + list(dram.items()):
        counts[b] += len(v)
    assert np.array_equal(counts, st.h_count)
    routing_index._sp_update(d, st)
    size = d.sp_size
    column = [routing_index._sp_column(d, st, i) for i in range(d.n_routable)]
    assert np.array_equal(st.sp_tree[0, size:size + d.n_routable], column)
    assert np.array_equal(st.sp_tree[1:, size:size + d.n_routable], st.rinf.astype(float))
    for j in range(1, size):
        assert np.array_equal(st.sp_tree[:, j], np.minimum(st.sp_tree[:, 2 * j], st.sp_tree[:, 2 * j + 1]))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dram_gb", [0.0, 0.02])
def test_holder_lists_follow_the_tiers_under_eviction(seed, dram_gb):
    wl, cluster = _busy(6, seed, dram_gb=dram_gb, router=RouterInfo(router_replicas=2))
    inp = prepare(wl, cluster, "smetric", load=4.0, seed=seed, n_samples=20)
    with index_from(1):
        d = driver._make_data(inp)
        st_ = driver._make_state(inp, d)
    done = full = False
    while not done:
        done = loop._run(d, st_, 25)
        _check_index(d, st_)
        full = full or bool((st_.ii[:, layout.II_NFREE] == 0).any())
    assert full  # an HBM ran out of free slots: later blocks evicted earlier ones


def test_tree_and_holder_primitives_match_brute_force():
    rng = np.random.default_rng(0)
    n = 13
    size = tree_size(n)
    tree = new_trees(n, 1)
    leaves = np.zeros(n)
    for _ in range(500):
        i, v = int(rng.integers(n)), float(rng.integers(0, 6))
        tree_set(tree[0], size, i, v)
        leaves[i] = v
        assert tree[0, 1] == leaves.min() and np.array_equal(tree[0, size:size + n], leaves)
    head, links, count = np.full(4, -1, dtype=np.int64), np.full((2, 20), -1, dtype=np.int32), np.zeros(4, np.int64)
    members = {b: set() for b in range(4)}
    for _ in range(400):
        e, b = int(rng.integers(20)), int(rng.integers(4))
        holder = next((c for c, s in members.items() if e in s), None)
        if holder is None:
            holder_link(head, links, count, b, e)
            members[b].add(e)
        else:
            holder_unlink(head, links, count, holder, e)
            members[holder].discard(e)
        for c, s in members.items():
            walk, x = set(), head[c]
            while x >= 0:
                walk.add(int(x))
                x = links[0, x]
            assert walk == s and count[c] == len(s)
    with pytest.raises(ValueError, match="n >= 1"):
        tree_size(0)


def test_view_columns_the_index_reads_are_the_view_s():
    """The index's load column is the view's (V_QUEUED_ATTN / V_QUEUED_TOKENS, live or snapshot)."""
    wl, cluster = _busy(8, 3, router=RouterInfo(refresh_s=0.05))
    for params, col in (({}, pb.V_QUEUED_ATTN), ({"cost": "tokens"}, pb.V_QUEUED_TOKENS)):
        inp = prepare(wl, cluster, "smetric", params, load=3.0, seed=1)
        with index_from(1):
            d = driver._make_data(inp)
            st_ = driver._make_state(inp, d)
        for _ in range(6):
            loop._run(d, st_, 40)
            router_view._build_view(d, st_, 0, st_.gf[layout.GF_NOW])
            assert np.array_equal(st_.vbuf[:, col], [routing_index._sp_column(d, st_, i) for i in range(d.n_routable)])


@pytest.mark.parametrize("policy", ["round-robin", "random"])
def test_view_free_policies_skip_the_view_and_decide_as_the_reference(policy):
    inp = prepare(*_busy(6, 2, dram_gb=0.02), policy, load=3.0, seed=3, n_samples=20)
    counts = {}
    run = driver.run_engine(inp, counters=counts)
    assert counts["full_views"] == 0 and counts["arrivals"] == inp.n
    assert_same_run(run, run_reference(inp))
