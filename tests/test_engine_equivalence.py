"""The numba engine equals the pure-Python reference, request by request, on random small cases.

Random agent workloads (shared system prompt, multi-turn sessions that re-send their history)
on random clusters: 1-4 instances, colocated or disaggregated, open or closed replay, tiny HBM
(evictions, head-of-line blocking, rejections), optional DRAM tier and global store (bounded or
not), overlapped or blocking KV loads, every registered routing policy -- and the KV path: reply KV cached
or not (and stored globally or not), partial-tail hits, the ideal or an lmcache connector (blocking or
layer-wise loads, lookups, NIC pools shared by 1-2 instances, capped transfers, costly writes).
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import agent_workload, small_cluster, store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smetric.cluster.connector import CONNECTORS, KVConnector
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference
from smetric.policies import registry

POLICIES = [spec.name for spec in registry.available()]

PER_REQUEST = ("instance", "decode_instance", "arrival", "admit", "first_token", "finish", "hit_hbm", "hit_dram",
               "hit_global", "prefill_tokens", "reason")
PER_INSTANCE = ("inst_prefill_tokens", "inst_decode_tokens", "inst_iterations", "inst_routed", "inst_kv_peak",
                "inst_busy", "inst_dram_read", "inst_global_read", "inst_pd_read")


def assert_same_run(a, b, rtol=1e-9):
    """Two raw runs agree: integers exactly, times to ``rtol`` (closed-form vs summed iteration ends)."""
    for name in PER_REQUEST + PER_INSTANCE:
        x, y = getattr(a, name), getattr(b, name)
        if np.issubdtype(x.dtype, np.integer):
            bad = np.flatnonzero(x != y)
        else:
            bad = np.flatnonzero(~np.isclose(x, y, rtol=rtol, atol=1e-12, equal_nan=True))
        assert len(bad) == 0, f"{name} differs at rows {bad[:5]}: engine {x[bad[:5]]} vs reference {y[bad[:5]]}"
    assert np.isclose(a.global_write, b.global_write, rtol=rtol)
    assert np.array_equal(a.timeseries, b.timeseries)


# a contended connector: 2 GPUs per node, a slow NIC and store, every cost on
CONTENDED = KVConnector(name="contended", model="lmcache", lookup_s=2e-3, load_latency_s=1e-3, load_gbs=3.0,
                        store_gbs=2.0, nic_gbs_per_gpu=2.0, gpus_per_node=2, pcie_gbs=8.0, store_total_gbs=5.0)


@st.composite
def kv_path(draw):
    """ClusterConfig keywords of the KV path."""
    return dict(cache_replies=draw(st.booleans()), global_store_replies=draw(st.booleans()),
                hit_granularity=draw(st.sampled_from([None, 8, 16])),
                kv_connector=draw(st.sampled_from(list(CONNECTORS) + [CONTENDED])))


@st.composite
def cases(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    wl = agent_workload(seed, n_sessions=draw(st.integers(1, 10)), max_turns=draw(st.integers(1, 4)),
                        span=draw(st.sampled_from([0.5, 3.0])), output=(1, draw(st.sampled_from([2, 30, 80]))),
                        first_prompt=(20, draw(st.sampled_from([300, 1500]))))
    mode = draw(st.sampled_from(["colocated", "disaggregated"]))
    n = draw(st.integers(1, 4)) if mode == "colocated" else draw(st.integers(2, 4))
    shape = dict(n_instances=n)
    if mode == "disaggregated":
        n_prefill = draw(st.integers(1, n - 1))
        shape.update(mode=mode, n_prefill=n_prefill, n_decode=n - n_prefill)
    global_store = draw(st.sampled_from([None, store(), store(capacity_gb=0.2, bandwidth_gbs=5.0)]))
    mns = draw(st.sampled_from([1, 2, 4, 64]))
    cluster = small_cluster(
        kv_tokens=draw(st.sampled_from([2000, 3000, 5000, 30_000])), block_size=draw(st.sampled_from([16, 64])),
        max_num_seqs=mns, max_batched_tokens=max(mns, draw(st.sampled_from([64, 256, 2048]))),
        dram_gb=draw(st.sampled_from([0.0, 0.03, 0.2, 10.0])), global_store=global_store,
        kv_load_overlap=draw(st.booleans()), replay=draw(st.sampled_from(["open", "closed"])),
        pd_bandwidth_gbs=draw(st.sampled_from([5.0, float("inf")])), **shape, **draw(kv_path()))
    policy = draw(st.sampled_from(POLICIES))
    load = draw(st.sampled_from([1.0, 4.0]))
    return wl, cluster, policy, load, seed


def assert_engines_agree(case):
    """Run a drawn ``(workload, cluster, policy, load, seed)`` case on both engines, assert that they agree and
    return both runs (engine, reference)."""
    wl, cluster, policy, load, seed = case
    inp = prepare(wl, cluster, policy, load=load, seed=seed, n_samples=50)
    a, b = run_engine(inp), run_reference(inp)
    assert_same_run(a, b)
    return a, b


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_engine_matches_reference(case):
    assert_engines_agree(case)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("connector", ["ideal", CONTENDED])
def test_engine_matches_reference_on_a_busy_cluster(policy, connector):
    """A longer case per policy: 40 sessions on 3 instances with a bounded global store and DRAM (and, with
    the contended connector, every KV-path mechanism on)."""
    wl = agent_workload(7, n_sessions=40, max_turns=4, span=4.0, first_prompt=(20, 2000), output=(1, 300))
    cluster = small_cluster(kv_tokens=12_000, n_instances=3, block_size=64, max_num_seqs=16,
                            max_batched_tokens=1024, dram_gb=0.3, global_store=store(capacity_gb=1.0),
                            kv_connector=connector, global_store_replies=connector != "ideal",
                            hit_granularity=None if connector == "ideal" else 16)
    inp = prepare(wl, cluster, policy, load=2.0, seed=3, n_samples=80)
    assert_same_run(run_engine(inp), run_reference(inp))


@st.composite
def tier_cases(draw):
    """Tight HBM, many multi-turn sessions on 1-2 instances: evictions, DRAM spills and store evictions."""
    seed = draw(st.integers(0, 2**31 - 1))
    wl = agent_workload(seed, n_sessions=draw(st.integers(4, 12)), max_turns=4, span=2.0, output=(1, 40))
    cluster = small_cluster(
        kv_tokens=draw(st.sampled_from([2500, 4000])), n_instances=draw(st.integers(1, 2)), block_size=16,
        max_num_seqs=draw(st.sampled_from([2, 8])), max_batched_tokens=1024,
        dram_gb=draw(st.sampled_from([0.02, 0.1, 10.0])),
        global_store=draw(st.sampled_from([None, store(capacity_gb=0.1), store(capacity_gb=0.5)])),
        kv_load_overlap=draw(st.booleans()), replay=draw(st.sampled_from(["open", "closed"])), **draw(kv_path()))
    return wl, cluster, draw(st.sampled_from(POLICIES)), seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tier_cases())
def test_engine_matches_reference_under_kv_pressure(case):
    wl, cluster, policy, seed = case
    inp = prepare(wl, cluster, policy, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


@pytest.mark.parametrize("policy, params", [
    ("lmetric", {"cache_view": "router"}),
    ("lmetric", {"cache_view": "router", "index_ttl": 1.0}),
    ("smetric", {"cache_view": "router"}),
    ("smetric", {"rate": "online", "rate_min_samples": 2}),
    ("smetric", {"rate": "online", "cache_view": "router", "cost": "tokens", "index_ttl": 2.0}),
    ("llm-d", {"w_no_hit_lru": 2.0}),
    ("llm-d", {"prefix": "precise", "w_prefix": 2.0, "w_queue": 1.0, "w_kv": 1.0, "dram_weight": 0.5,
               "w_no_hit_lru": 1.0}),
])
@pytest.mark.parametrize("seed", [3, 11])
def test_engine_matches_reference_with_deployed_router_options(policy, params, seed):
    """Router-side prefix index, SMETRIC's online prefill rate and llm-d's no-hit-LRU scorer: both engines agree on a
    busy, evicting cluster."""
    wl = agent_workload(seed, n_sessions=30, max_turns=4, span=3.0, first_prompt=(20, 2000))
    cluster = small_cluster(kv_tokens=6_000, n_instances=3, block_size=64, max_num_seqs=8,
                            max_batched_tokens=1024, dram_gb=0.05, global_store=store(capacity_gb=0.5))
    inp = prepare(wl, cluster, policy, params, load=3.0, seed=seed, n_samples=60)
    assert_same_run(run_engine(inp), run_reference(inp))
