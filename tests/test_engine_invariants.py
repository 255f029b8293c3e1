"""Engine invariants on random cases: completion or a reported reason, KV bounds, monotone clocks,
token conservation, closed-replay causality, determinism."""

from __future__ import annotations

import numpy as np
from engine_support import agent_workload, small_cluster, store, unique_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smetric.cluster import simulate
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import footprint_blocks, prepare
from smetric.cluster.result_raw import REASON_COMPLETED, REASON_TOO_LARGE
from smetric.policies import registry

POLICIES = [spec.name for spec in registry.available()]


@st.composite
def runs(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    wl = agent_workload(seed, n_sessions=draw(st.integers(1, 12)), max_turns=4, span=2.0,
                        first_prompt=(20, draw(st.sampled_from([500, 2500]))), output=(1, 60))
    mode = draw(st.sampled_from(["colocated", "disaggregated"]))
    shape = dict(n_instances=3) if mode == "colocated" else dict(n_instances=3, mode=mode, n_prefill=2, n_decode=1)
    cluster = small_cluster(kv_tokens=draw(st.sampled_from([2000, 6000])), block_size=16,
                            max_num_seqs=draw(st.sampled_from([2, 16])), max_batched_tokens=512,
                            dram_gb=draw(st.sampled_from([0.0, 0.05])),
                            global_store=draw(st.sampled_from([None, store(capacity_gb=0.2)])),
                            kv_load_overlap=draw(st.booleans()), replay=draw(st.sampled_from(["open", "closed"])),
                            **shape)
    inp = prepare(wl, cluster, draw(st.sampled_from(POLICIES)), seed=seed, load=draw(st.sampled_from([1.0, 5.0])),
                  n_samples=40)
    return inp, run_engine(inp)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_invariants(case):
    inp, raw = case
    prompt_blocks, full_blocks = footprint_blocks(inp)
    too_large = (full_blocks > inp.hbm_blocks) | (prompt_blocks > inp.hbm_blocks)
    done = raw.reason == REASON_COMPLETED
    # every request finishes, or is reported with its reason (and only rejections exist here)
    assert np.array_equal(raw.reason == REASON_TOO_LARGE, too_large)
    assert np.all(done | too_large)
    assert np.array_equal(np.isfinite(raw.finish), done)
    # clocks: arrival <= admission <= first token <= finish
    assert np.all(raw.admit[done] >= raw.arrival[done])
    assert np.all(raw.first_token[done] > raw.admit[done])
    assert np.all(raw.finish[done] >= raw.first_token[done])
    assert np.all(raw.finish[done] <= raw.end_time)
    # KV capacity is never exceeded
    assert np.all(raw.inst_kv_peak <= inp.hbm_blocks)
    assert np.all(raw.timeseries[..., 2] <= inp.hbm_blocks)  # no samples when every request was rejected
    # tokens are conserved: computed prefill = prompt - hits; every generated token is decoded once
    hits = raw.hit_hbm + raw.hit_dram + raw.hit_global
    assert np.array_equal(raw.prefill_tokens[done], inp.input_len[done] - hits[done])
    assert np.all(hits < inp.input_len)
    assert raw.inst_prefill_tokens.sum() == raw.prefill_tokens.sum()
    assert raw.inst_decode_tokens.sum() == (inp.n_out[done] - 1).sum()
    # in closed replay a follow-up arrives no earlier than its parent's finish plus its gap
    if inp.closed:
        child = (inp.parent >= 0) & done
        parent_end = raw.finish[inp.parent[child]]
        ok = np.isnan(parent_end) | (raw.arrival[child] >= parent_end + inp.gap[child] - 1e-12)
        assert np.all(ok)
    # disaggregated: decoding happens on decode instances only
    if inp.disaggregated:
        multi = done & (inp.n_out > 1)
        assert np.all(raw.decode_instance[multi] >= inp.n_routable)
        assert np.all(raw.inst_decode_tokens[:inp.n_routable] == 0)


def test_same_seed_same_numbers_and_seed_matters_for_random_policies():
    wl = agent_workload(5, n_sessions=30, max_turns=3, span=3.0)
    cluster = small_cluster(kv_tokens=20_000, n_instances=4, global_store=store())
    a = simulate(wl, cluster, "power-of-two", seed=11)
    b = simulate(wl, cluster, "power-of-two", seed=11)
    c = simulate(wl, cluster, "power-of-two", seed=12)
    cols = ["instance", "admit", "first_token", "finish", "hit_hbm", "hit_global"]
    assert a.requests[cols].equals(b.requests[cols])
    assert not a.requests["instance"].equals(c.requests["instance"])


def test_requests_too_large_for_hbm_are_reported_and_the_rest_complete():
    wl = unique_workload([0.0, 0.1, 0.2], input_len=[500, 5000, 300], output_len=[10, 10, 10])
    res = simulate(wl, small_cluster(kv_tokens=2048, block_size=16), "round-robin")
    assert list(res.requests["status"]) == ["completed", "exceeds_kv_capacity", "completed"]
    assert res.summary()["n_unfinished"] == 1
    assert not res.requests["slo_met"][1]


def test_a_run_whose_every_request_is_rejected_reports_it():
    """Every prompt too large for an instance: no timeseries samples, nothing completed, attainment 0 (no crash)."""
    wl = agent_workload(1, n_sessions=1, max_turns=1, span=2.0, first_prompt=(2349, 2350), output=(30, 31))
    cluster = small_cluster(kv_tokens=2000, block_size=16, max_num_seqs=2, max_batched_tokens=512, n_instances=3)
    result = simulate(wl, cluster, "smetric", progress=False)
    summary = result.summary()
    assert result.timeseries.empty and summary["n_completed"] == 0 and summary["n_unfinished"] == 1
    assert summary["slo_attainment"] == 0.0 and np.isnan(summary["goodput_tps"])
