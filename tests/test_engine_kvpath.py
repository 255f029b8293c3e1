"""The KV path: reply KV in the prefix cache, partial-tail hits, and the lmcache connector's blocking loads,
shared node NIC and costly writes -- hand-built cases with values computed from the rules, plus the ``ideal``
connector without reply caching reproducing a fixture of the engine without these mechanisms bit for bit."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from engine_support import agent_workload, chained_ids, small_cluster, store
from test_engine_equivalence import assert_same_run

from smetric.cluster import KVConnector, simulate
from smetric.cluster.config import GB
from smetric.cluster.connector import CONNECTORS, connector_sources
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference
from smetric.workload.core import Workload

KVB = 131072.0  # HardwareSpec.example's KV bytes per token
FIXTURE = Path(__file__).parent / "data" / "engine_before_kvpath.csv"


def workload_of(prompts: list[np.ndarray], arrival, output, parent=None, session=None, turn=None,
                block_size: int = 16) -> Workload:
    """Requests whose prompts are token-label arrays (equal prefixes -> equal chained block ids)."""
    n = len(prompts)
    table: dict = {}
    ids, offsets = [], [0]
    for p in prompts:
        ids += chained_ids(p, block_size, table)
        offsets.append(len(ids))
    return Workload(arrival=np.asarray(arrival, float), input_len=[len(p) for p in prompts], output_len=output,
                    session=np.arange(n) if session is None else session,
                    turn=np.zeros(n) if turn is None else turn, parent=np.full(n, -1) if parent is None else parent,
                    gap=np.zeros(n), block_offsets=offsets, block_ids=np.array(ids, dtype=np.int64),
                    block_size=block_size)


def both_engines(wl, cluster, policy="round-robin"):
    """The numba run, checked equal to the reference run."""
    inp = prepare(wl, cluster, policy, n_samples=20)
    raw = run_engine(inp)
    assert_same_run(raw, run_reference(inp))
    return raw


# ---------------------------------------------------------------------------------------------- replies
def two_turns(output_first: int = 1024):
    """A 4096-token prompt, its reply, then a 5632-token follow-up (prompt + reply + 512 new tokens)."""
    first = np.arange(4096)
    reply = np.arange(10_000, 10_000 + output_first)
    second = np.concatenate([first, reply, np.arange(20_000, 20_000 + 5632 - 4096 - output_first)])
    return workload_of([first, second], [0.0, 0.0], [output_first, 8], parent=[-1, 0], session=[0, 0], turn=[0, 1])


@pytest.mark.parametrize("engine_block", [256, 512])
def test_follow_up_hits_its_predecessors_reply(engine_block):
    """Closed replay, one instance: the follow-up hits 4096 tokens without reply caching, >= 5120 - B with it,
    and with 16-token hit granularity everything up to the last full 16-token block of prompt + reply."""
    wl = two_turns()
    hits = {}
    for name, kw in {"off": dict(cache_replies=False), "on": dict(), "fine": dict(hit_granularity=16)}.items():
        cluster = small_cluster(block_size=engine_block, replay="closed", **kw)
        raw = both_engines(wl, cluster)
        assert raw.reason.tolist() == [0, 0]
        hits[name] = int(raw.hit_hbm[1])
    assert hits["off"] == 4096
    assert hits["on"] >= 5120 - engine_block
    assert hits["on"] == (4096 + 1024 - 1) // engine_block * engine_block  # the last token has no KV yet
    assert hits["fine"] == (4096 + 1024 - 1) // 16 * 16


def test_reply_is_cached_under_the_childs_ids_only_when_the_child_carries_it():
    """A follow-up shorter than prompt + reply (the reply was not re-sent) gets no reply hit."""
    first = np.arange(4096)
    second = np.concatenate([first, np.arange(50_000, 50_600)])  # new text, not the reply
    wl = workload_of([first, second], [0.0, 0.0], [1024, 4], parent=[-1, 0], session=[0, 0], turn=[0, 1])
    raw = both_engines(wl, small_cluster(block_size=256, replay="closed"))
    assert raw.hit_hbm[1] == 4096


def test_partial_prompt_tail_hits_without_reply_caching():
    """hit_granularity alone: the follow-up also hits its parent's partial last prompt block (to 16 tokens)."""
    first = np.arange(1000)  # 3 full 256-token blocks + 232 tokens
    second = np.concatenate([first, np.arange(9000, 9300)])
    wl = workload_of([first, second], [0.0, 0.0], [1, 4], parent=[-1, 0], session=[0, 0], turn=[0, 1])
    for g, expected in ((None, 768), (16, 768 + 224), (8, 768 + 232)):
        raw = both_engines(wl, small_cluster(block_size=256, replay="closed", cache_replies=False, hit_granularity=g))
        assert raw.hit_hbm[1] == expected, g


def test_global_store_replies_puts_the_reply_in_the_store():
    """With the reply stored globally, a follow-up on another instance hits the reply in the store."""
    wl = two_turns()
    got = {}
    for on in (False, True):
        cluster = small_cluster(n_instances=2, block_size=256, replay="closed", global_store=store(),
                                global_store_replies=on)
        raw = both_engines(wl, cluster)  # round-robin: the follow-up runs on the other instance
        assert raw.instance.tolist() == [0, 1]
        got[on] = int(raw.hit_global[1])
        assert raw.global_write == pytest.approx(5632 * KVB)  # the reply's blocks are the follow-up's, written once
    assert got == {False: 4096, True: 4096 + 1023 // 256 * 256}


# ---------------------------------------------------------------------------------------------- connector
def connector(**kw) -> KVConnector:
    """An lmcache connector with every cost off except those given."""
    base = dict(name="test", model="lmcache", lookup_s=0.0, load_latency_s=0.0, load_gbs=math.inf,
                store_gbs=math.inf, nic_gbs_per_gpu=math.inf, gpus_per_node=8, pcie_gbs=math.inf,
                store_total_gbs=math.inf)
    base.update(kw)
    return KVConnector(**base)


def shared_prefix_workload(t_hit: float):
    """Round-robin on 2 instances: r0 writes P (512 tokens) from instance 0, r1 decodes 200 tokens on instance 1,
    r2 is a filler on instance 0, r3 = P + 100 tokens arrives at ``t_hit`` on instance 1 (a global hit of P)."""
    p = np.arange(512)
    prompts = [p, np.arange(1000, 1064), np.arange(2000, 2010), np.concatenate([p, np.arange(3000, 3100)])]
    return workload_of(prompts, [0.0, 0.0, 0.01, t_hit], [1, 200, 1, 2])


def test_a_blocking_load_delays_the_co_batched_decodes_by_the_load_time():
    nic = 5.0  # GB/s per GPU; gpus_per_node=1: each instance its own NIC
    wl = shared_prefix_workload(0.3)
    base = dict(n_instances=2, block_size=16, global_store=store(), cache_replies=False)
    fast = both_engines(wl, small_cluster(kv_connector=connector(gpus_per_node=1), **base))
    slow = both_engines(wl, small_cluster(kv_connector=connector(gpus_per_node=1, nic_gbs_per_gpu=nic), **base))
    assert fast.instance[3] == 1 and fast.hit_global[3] == 512
    assert fast.first_token[3] < fast.finish[1]  # r3 was admitted while r1 decodes
    load = 512 * KVB / (nic * GB)
    assert slow.finish[1] - fast.finish[1] == pytest.approx(load, rel=1e-9)  # r1's decodes waited the load
    assert slow.first_token[3] - fast.first_token[3] == pytest.approx(load, rel=1e-9)
    layer = both_engines(wl, small_cluster(kv_connector=connector(gpus_per_node=1, nic_gbs_per_gpu=nic,
                                                                  layerwise=True), **base))
    assert 0.0 <= layer.finish[1] - fast.finish[1] < load  # layer-wise: the load hides behind compute
    ideal = both_engines(wl, small_cluster(**{**base, "global_store": store(bandwidth_gbs=nic, latency_s=0.0)}))
    assert ideal.finish[1] < slow.finish[1]  # the ideal connector overlaps the load with r1's decodes


def test_two_concurrent_transfers_on_one_node_each_get_half_the_nic():
    """r2 (instance 0) and r3 (instance 1) load a 512-token prefix each at the same moment."""
    nic = 4.0
    p, q = np.arange(512), np.arange(5000, 5512)
    wl = workload_of([p, q, np.concatenate([q, np.arange(100)]), np.concatenate([p, np.arange(200, 300)])],
                     [0.0, 0.0, 1.0, 1.0], [1, 1, 1, 1])
    base = dict(n_instances=2, block_size=16, global_store=store(), cache_replies=False)
    ft = {}
    for name, kw in {"free": dict(), "own": dict(nic_gbs_per_gpu=nic, gpus_per_node=1),
                     "shared": dict(nic_gbs_per_gpu=nic / 8, gpus_per_node=8)}.items():
        raw = both_engines(wl, small_cluster(kv_connector=connector(**kw), **base))
        assert raw.hit_global[2:].tolist() == [512, 512]
        ft[name] = raw.first_token[2:]
    one = 512 * KVB / (nic * GB)  # alone on a NIC of `nic` GB/s (the shared node's pool is nic/8 * 8 = nic)
    assert ft["own"] - ft["free"] == pytest.approx([one, one], rel=1e-9)
    assert ft["shared"] - ft["free"] == pytest.approx([2 * one, 2 * one], rel=1e-9)


def test_a_write_costs_link_time():
    """r2's load on instance 0 starts when instance 0 starts writing r0's 2048-token prompt on the same NIC:
    it runs at half the NIC; and a prefill iteration pays the GPU->host copy of what it stores."""
    nic = 10.0
    a, p = np.arange(2048), np.arange(9000, 9512)
    base = dict(n_instances=2, block_size=16, global_store=store(), cache_replies=False)

    def run(t2, **kw):
        wl = workload_of([a, p, np.concatenate([p, np.arange(100)]), np.arange(7000, 7010)],
                         [0.0, 0.0, t2, t2 + 0.5], [1, 1, 1, 1])
        return both_engines(wl, small_cluster(kv_connector=connector(**kw), **base))

    t_write = run(10.0).first_token[0]  # r0's prefill ends: its write starts (instance 0 idle afterwards)
    free = run(t_write)
    shared = run(t_write, nic_gbs_per_gpu=nic / 8)
    assert free.instance[2] == 0 and free.hit_global[2] == 512
    assert shared.first_token[0] == t_write
    load = 512 * KVB / (nic * GB)
    assert 2048 * KVB / (nic / 2 * GB) > 2 * load  # the write outlasts the load
    assert shared.first_token[2] - free.first_token[2] == pytest.approx(2 * load, rel=1e-9)
    pcie = 20.0  # GPU->host copy of the 2048 computed tokens, inside r0's prefill iteration
    copy = run(10.0, pcie_gbs=pcie)
    assert copy.first_token[0] - t_write == pytest.approx(2048 * KVB / (pcie * GB), rel=1e-9)


def test_lookups_delay_the_iteration_that_admits():
    wl = shared_prefix_workload(0.3)
    base = dict(n_instances=2, block_size=16, global_store=store(), cache_replies=False)
    free = both_engines(wl, small_cluster(kv_connector=connector(), **base))
    looked = both_engines(wl, small_cluster(kv_connector=connector(lookup_s=0.004), **base))
    assert looked.first_token[0] - free.first_token[0] == pytest.approx(0.004, rel=1e-9)


# ---------------------------------------------------------------------------------------------- ideal == before
@pytest.mark.parametrize("engine", ["numba", "reference"])
def test_ideal_without_reply_caching_reproduces_the_engine_before_the_kv_path_work(engine):
    """The fixture (tests/data/engine_before_kvpath.csv) holds the results of the engine without the KV-path
    mechanisms (the ``ideal`` link, no reply KV, whole-block hits)."""
    before = pd.read_csv(FIXTURE)
    wl = agent_workload(23, n_sessions=25, max_turns=4, span=2.0, first_prompt=(20, 1500))
    cases = {
        "store_blocking": (small_cluster(kv_tokens=8000, n_instances=3, block_size=64, max_num_seqs=8,
                                         max_batched_tokens=512, dram_gb=0.05, global_store=store(capacity_gb=0.5),
                                         kv_load_overlap=False, replay="closed"), "lmetric"),
        "store_overlap": (small_cluster(kv_tokens=20000, n_instances=2, block_size=16, max_num_seqs=16,
                                        max_batched_tokens=1024, global_store=store(), replay="open"), "sglang"),
    }
    run = run_engine if engine == "numba" else run_reference
    for name, (cluster, policy) in cases.items():
        cluster = dataclasses.replace(cluster, cache_replies=False, kv_connector="ideal")
        raw = run(prepare(wl, cluster, policy, load=2.0, seed=9, n_samples=40))
        old = before[before.case == name].sort_values("row")
        for col in ("instance", "decode_instance", "hit_hbm", "hit_dram", "hit_global", "reason"):
            assert np.array_equal(old[col].to_numpy(), getattr(raw, col)), (name, col)
        for col in ("admit", "first_token", "finish"):
            if engine == "numba":
                assert np.array_equal(old[col].to_numpy(), getattr(raw, col), equal_nan=True), (name, col)
            else:
                assert np.allclose(old[col].to_numpy(), getattr(raw, col), rtol=1e-9, atol=1e-12,
                                   equal_nan=True), (name, col)
        assert old.global_write.iloc[0] == raw.global_write


# ---------------------------------------------------------------------------------------------- presets
def test_every_preset_parameter_has_a_source_or_is_an_assumption():
    table = connector_sources()
    assert tuple(["ideal"] + list(table["presets"])) == CONNECTORS
    for name, preset in table["presets"].items():
        fields = {f.name for f in dataclasses.fields(KVConnector)} - {"name", "model"}
        assert set(preset["params"]) == fields, name
        for key, entry in preset["params"].items():
            assert entry["source"] in table["sources"] or "assumption" in entry["note"], (name, key)
        KVConnector.preset(name)


def test_presets_order_fast_typical_slow():
    fast, mid, slow = (KVConnector.preset(f"lmcache-mooncake{suffix}") for suffix in ("-fast", "", "-slow"))
    assert fast.layerwise and not mid.layerwise and not slow.layerwise
    assert fast.lookup_s <= mid.lookup_s <= slow.lookup_s
    assert fast.load_gbs >= mid.load_gbs >= slow.load_gbs
    assert fast.nic_gbs_per_gpu >= mid.nic_gbs_per_gpu >= slow.nic_gbs_per_gpu


def test_connector_parse_and_validation():
    c = KVConnector.parse("lmcache_mooncake", {"layerwise": "true", "lookup_s": "0.01", "gpus_per_node": "4"})
    assert c.layerwise and c.lookup_s == 0.01 and c.gpus_per_node == 4 and c.name == "lmcache-mooncake"
    with pytest.raises(ValueError, match="unknown KV connector"):
        KVConnector.parse("nvme")
    with pytest.raises(ValueError, match="unknown KV-connector parameter"):
        KVConnector.parse("lmcache-mooncake", {"speed": "1"})
    with pytest.raises(ValueError, match="no parameters"):
        KVConnector.parse("ideal", {"lookup_s": "1"})
    with pytest.raises(ValueError, match="lookup_s"):
        KVConnector.preset("lmcache-mooncake", lookup_s=-1.0)
    with pytest.raises(ValueError, match="hit_granularity"):
        small_cluster(hit_granularity=0)
    assert small_cluster(kv_connector="lmcache-mooncake-slow").kv_connector == KVConnector.preset(
        "lmcache-mooncake-slow")


def test_simulate_takes_a_connector_and_the_slow_bound_is_slower():
    wl = agent_workload(5, n_sessions=12, max_turns=3, span=1.0, first_prompt=(200, 1500))
    cluster = small_cluster(kv_tokens=6000, n_instances=2, block_size=16, global_store=store(), replay="closed")
    ttft = {}
    for name in CONNECTORS:
        rq = simulate(wl, cluster, "least-load", kv_connector=name).requests
        assert (rq["status"] == "completed").all()
        ttft[name] = float((rq["first_token"] - rq["arrival"]).mean())
    assert ttft["lmcache-mooncake-slow"] > ttft["lmcache-mooncake"] > ttft["ideal"]
    assert json.dumps(ttft)  # plain floats


def test_stored_replies_without_local_reply_caching():
    """global_store_replies alone: the reply reaches the store (another instance hits it) but not the HBM cache."""
    wl = two_turns()
    for n in (2, 1):
        cluster = small_cluster(n_instances=n, block_size=256, replay="closed", global_store=store(),
                                cache_replies=False, global_store_replies=True)
        raw = both_engines(wl, cluster)
        assert raw.hit_global[1] + raw.hit_hbm[1] == 4096 + 1023 // 256 * 256
        if n == 1:  # same instance: the prompt from HBM, the reply from the store
            assert raw.hit_hbm[1] == 4096
