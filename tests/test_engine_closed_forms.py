"""Closed forms: lone requests, spaced arrivals, M/D/1 (Pollaczek-Khinchine), tier hits and load times,
P->D hand-off. Expected values are computed from the performance-model contract, not the engine."""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import agent_workload, small_cluster, store, unique_workload

from smetric.cluster import simulate
from smetric.cluster.config import GB
from smetric.hardware.kernel import example_coefficients, iteration_time_nb, prefill_attn_work, prefill_time_nb
from smetric.workload.core import Workload

COEF = example_coefficients()
KVB = 131072.0  # HardwareSpec.example's KV bytes per token


def decode_steps(prompt: int, n_out: int) -> np.ndarray:
    """Times of the decode iterations of a lone sequence: context prompt + g for g = 1 .. n_out - 1."""
    return np.array([iteration_time_nb(COEF, 1.0, 0.0, float(prompt + g), 1.0) for g in range(1, n_out)])


def chunked_prefill(prompt: int, budget: int, cached: int = 0) -> float:
    """A lone prompt prefilled in chunks of at most ``budget`` tokens over ``cached`` cached tokens."""
    t, done = 0.0, cached
    while done < prompt:
        c = min(budget, prompt - done)
        t += iteration_time_nb(COEF, float(c), prefill_attn_work(float(c), float(done)), 0.0, 0.0)
        done += c
    return t


@pytest.mark.parametrize("prompt, n_out, budget", [(700, 1, 4096), (700, 25, 4096), (3000, 8, 512)])
def test_lone_request_ttft_is_its_prefill_and_tpot_its_decode_steps(prompt, n_out, budget):
    wl = unique_workload([2.0], prompt, n_out)
    r = simulate(wl, small_cluster(max_batched_tokens=budget), "round-robin").requests.iloc[0]
    expected_ttft = chunked_prefill(prompt, budget)
    if prompt <= budget:
        assert expected_ttft == pytest.approx(prefill_time_nb(COEF, float(prompt), 0.0), rel=1e-12)
    assert r.ttft == pytest.approx(expected_ttft, rel=1e-9)
    steps = decode_steps(prompt, n_out)
    assert r.finish - r.first_token == pytest.approx(steps.sum(), rel=1e-9)
    assert r.tpot == pytest.approx(steps.mean() if n_out > 1 else 0.0, rel=1e-9)


def test_arrivals_spaced_beyond_service_never_queue():
    prompts = np.array([300, 1200, 800, 2000, 150])
    service = [chunked_prefill(p, 4096) + decode_steps(p, 5).sum() for p in prompts]
    arrival = np.concatenate([[0.0], np.cumsum(np.array(service[:-1]) + 0.01)])
    rq = simulate(unique_workload(arrival, prompts, 5), small_cluster(), "round-robin").requests
    assert np.array_equal(rq["admit"].to_numpy(), arrival)
    assert np.allclose(rq["ttft"], [chunked_prefill(p, 4096) for p in prompts], rtol=1e-9)


def test_single_server_poisson_matches_md1_pollaczek_khinchine():
    """One instance serving one request at a time, one output token: an M/D/1 queue."""
    prompt, rho, n = 1024, 0.5, 40_000
    service = prefill_time_nb(COEF, float(prompt), 0.0)
    rng = np.random.default_rng(2024)
    arrival = np.cumsum(rng.exponential(service / rho, n))
    rq = simulate(unique_workload(arrival, prompt, 1), small_cluster(max_num_seqs=1), "round-robin").requests
    assert np.allclose(rq["ttft"] - (rq["admit"] - rq["arrival"]), service, rtol=1e-9)
    wait = (rq["admit"] - rq["arrival"]).mean()
    pk = rho * service / (2 * (1 - rho))  # mean wait in queue of M/D/1
    assert wait == pytest.approx(pk, rel=0.04)


def two_turn_session(first: int, reply: int, appended: int, second_at: float, block: int = 16) -> Workload:
    """One session of two turns; turn 2 re-sends turn 1's prompt and reply, then new text."""
    wl = agent_workload(0, n_sessions=1, max_turns=1, system_prompt=0, first_prompt=(first, first),
                        output=(reply, reply), block_size=block)
    ids = list(wl.block_ids)
    n2 = -(-(first + reply + appended) // block)
    full = first // block  # turn 1's full blocks are shared; its partial last block is not
    ids2 = ids[:full] + list(range(10**6, 10**6 + n2 - full))
    return Workload(arrival=[0.0, second_at], input_len=[first, first + reply + appended], output_len=[reply, 4],
                    session=[0, 0], turn=[0, 1], parent=[-1, 0], gap=[0.0, 0.0],
                    block_offsets=[0, len(ids), len(ids) + n2], block_ids=ids + ids2, block_size=block)


@pytest.mark.parametrize("cache_replies", [False, True])
def test_follow_up_on_the_same_instance_hits_its_history_in_hbm(cache_replies):
    wl = two_turn_session(first=1000, reply=30, appended=200, second_at=5.0)
    rq = simulate(wl, small_cluster(block_size=16, cache_replies=cache_replies), "round-robin").requests
    hit = ((1000 + 30 - 1) if cache_replies else 1000) // 16 * 16  # the reply's full blocks (its last token: no KV)
    assert rq.hit_hbm[1] == hit and rq.hit_global[1] == 0
    assert rq.ttft[1] == pytest.approx(prefill_time_nb(COEF, float(1230 - hit), float(hit)), rel=1e-9)


@pytest.mark.parametrize("overlap", [True, False])
def test_follow_up_elsewhere_loads_its_history_from_the_global_store(overlap):
    wl = two_turn_session(first=1000, reply=30, appended=200, second_at=5.0)
    link = store(bandwidth_gbs=10.0, latency_s=2e-3)
    cluster = small_cluster(block_size=16, n_instances=2, global_store=link, kv_load_overlap=overlap)
    rq = simulate(wl, cluster, "round-robin").requests  # round-robin: turn 2 lands on instance 1
    hit = (1000 // 16) * 16
    assert list(rq.instance) == [0, 1] and rq.hit_global[1] == hit and rq.hit_hbm[1] == 0
    load = hit * KVB / (10.0 * GB) + 2e-3
    assert rq.ttft[1] == pytest.approx(load + prefill_time_nb(COEF, float(1230 - hit), float(hit)), rel=1e-9)


@pytest.mark.parametrize("cache_replies", [False, True])
def test_history_evicted_from_hbm_is_found_in_dram(cache_replies):
    wl = two_turn_session(first=1000, reply=30, appended=200, second_at=5.0)
    # an unrelated 1500-token request between the turns forces turn 1's blocks out of a 2000-token HBM
    other = unique_workload([2.0], 1500, 2)
    ids = np.concatenate([wl.blocks(0), other.block_ids + 10**7, wl.blocks(1)])
    lens = [wl.input_len[0], 1500, wl.input_len[1]]
    offsets = np.concatenate([[0], np.cumsum([len(wl.blocks(0)), len(other.block_ids), len(wl.blocks(1))])])
    mixed = Workload(arrival=[0.0, 2.0, 5.0], input_len=lens, output_len=[30, 2, 4], session=[0, 1, 0],
                     turn=[0, 0, 1], parent=[-1, -1, 0], gap=[0.0, 0.0, 0.0], block_offsets=offsets,
                     block_ids=ids, block_size=16)
    cluster = small_cluster(kv_tokens=2000, block_size=16, dram_gb=1.0, dram_bandwidth_gbs=20.0,
                            cache_replies=cache_replies)
    rq = simulate(mixed, cluster, "round-robin").requests
    h = ((1000 + 30 - 1) if cache_replies else 1000) // 16 * 16  # with its reply's full blocks
    assert rq.hit_hbm[2] + rq.hit_dram[2] == h
    assert rq.hit_dram[2] > 0
    load = rq.hit_dram[2] * KVB / (20.0 * GB)
    assert rq.ttft[2] == pytest.approx(load + prefill_time_nb(COEF, float(1230 - h), float(h)), rel=1e-9)


def test_disaggregated_request_is_prefilled_transferred_then_decoded():
    prompt, n_out, bw = 900, 12, 25.0
    cluster = small_cluster(n_instances=2, mode="disaggregated", n_prefill=1, n_decode=1, pd_bandwidth_gbs=bw)
    rq = simulate(unique_workload([1.0], prompt, n_out), cluster, "round-robin").requests.iloc[0]
    assert (rq.instance, rq.decode_instance) == (0, 1)
    assert rq.ttft == pytest.approx(prefill_time_nb(COEF, float(prompt), 0.0), rel=1e-9)
    transfer = prompt * KVB / (bw * GB)
    assert rq.finish - rq.first_token == pytest.approx(transfer + decode_steps(prompt, n_out).sum(), rel=1e-9)


def test_closed_replay_waits_for_the_previous_turn():
    wl = two_turn_session(first=1000, reply=30, appended=200, second_at=0.01)
    wl = Workload(**{**{f: getattr(wl, f) for f in ("arrival", "input_len", "output_len", "session", "turn",
                                                      "parent", "block_offsets", "block_ids", "block_size")},
                     "gap": [0.0, 0.5]})
    rq = simulate(wl, small_cluster(replay="closed"), "round-robin").requests
    assert rq.arrival[1] == pytest.approx(rq.finish[0] + 0.5, rel=1e-12)
    rq_open = simulate(wl, small_cluster(replay="open"), "round-robin").requests
    assert rq_open.arrival[1] == pytest.approx(0.01)
