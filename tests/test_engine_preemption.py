"""Incremental KV allocation with recompute preemption (``kv_allocation='incremental'``, vLLM's rule).

Both engines agree on random small cases with tiny HBM; hand-built cases check who is preempted, that
tokens are conserved and KV capacity is never exceeded, and that ample KV changes nothing but admission.
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import agent_workload, small_cluster, unique_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import PER_INSTANCE, PER_REQUEST, POLICIES, assert_engines_agree, assert_same_run

from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference
from smetric.cluster.result_raw import REASON_COMPLETED


@st.composite
def cases(draw):
    """Tight HBM, long outputs, multi-turn sessions, 1-2 colocated instances: decodes, prefills, loads preempted."""
    seed = draw(st.integers(0, 2**31 - 1))
    wl = agent_workload(seed, n_sessions=draw(st.integers(1, 10)), max_turns=draw(st.integers(1, 4)),
                        span=draw(st.sampled_from([0.5, 3.0])), output=(1, draw(st.sampled_from([30, 300, 800]))),
                        first_prompt=(20, draw(st.sampled_from([300, 1500]))))
    mns = draw(st.sampled_from([2, 8, 64]))
    cluster = small_cluster(
        kv_tokens=draw(st.sampled_from([2000, 3000, 5000])), block_size=draw(st.sampled_from([16, 64])),
        n_instances=draw(st.integers(1, 2)), max_num_seqs=mns,
        max_batched_tokens=max(mns, draw(st.sampled_from([64, 256, 2048]))),
        dram_gb=draw(st.sampled_from([0.0, 0.03, 10.0])), kv_load_overlap=draw(st.booleans()),
        replay=draw(st.sampled_from(["open", "closed"])), cache_replies=draw(st.booleans()),
        hit_granularity=draw(st.sampled_from([None, 16])), kv_allocation="incremental")
    return wl, cluster, draw(st.sampled_from(POLICIES)), draw(st.sampled_from([2.0, 8.0])), seed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_engine_matches_reference_with_incremental_allocation(case):
    a, b = assert_engines_agree(case)
    assert np.array_equal(a.preemptions, b.preemptions)
    assert np.array_equal(a.inst_preemptions, b.inst_preemptions)


def test_busy_cluster_preempts_and_engines_agree():
    """A longer case that does preempt: both engines agree and every request completes."""
    wl = agent_workload(7, n_sessions=40, max_turns=4, span=4.0, first_prompt=(20, 2000), output=(1, 300))
    cluster = small_cluster(kv_tokens=8_000, n_instances=2, block_size=64, max_num_seqs=16,
                            max_batched_tokens=1024, dram_gb=0.3, kv_allocation="incremental")
    inp = prepare(wl, cluster, "round-robin", load=2.0, seed=3, n_samples=80)
    a, b = run_engine(inp), run_reference(inp)
    assert_same_run(a, b)
    assert np.array_equal(a.preemptions, b.preemptions)
    assert a.preemptions.sum() > 0
    assert (a.reason == REASON_COMPLETED).all()
    assert a.inst_preemptions.sum() == a.preemptions.sum()


def _two_requests(kv_allocation: str):
    """Two 32-token prompts generating 40 tokens each on 6 blocks of 16 tokens: both prompts fit (2 blocks
    each) but not both decodes (5 blocks each at the end)."""
    wl = unique_workload([0.0, 0.001], 32, 40, block_size=16)
    cluster = small_cluster(kv_tokens=96, block_size=16, kv_allocation=kv_allocation, cache_replies=False)
    return prepare(wl, cluster, "round-robin", n_samples=200)


@pytest.mark.parametrize("engine", [run_engine, run_reference])
def test_the_later_admitted_request_is_preempted_and_recomputes(engine):
    inp = _two_requests("incremental")
    raw = engine(inp)
    reserve = engine(_two_requests("reserve"))
    assert (raw.reason == REASON_COMPLETED).all()
    assert raw.preemptions.tolist() == [0, 1]
    assert raw.inst_preemptions.tolist() == [1]
    # both were admitted at once (reserve admits the second only after the first finished)
    assert raw.admit[1] < reserve.admit[1]
    assert raw.first_token[1] < reserve.first_token[1]
    # the preempted one finishes after the other, and recomputed its prompt + generated tokens
    assert raw.finish[1] > raw.finish[0]
    assert raw.prefill_tokens[0] == 32 and raw.prefill_tokens[1] > 32
    # tokens conserved: every output token decoded once (the recompute's last token is a prefill's)
    assert raw.inst_decode_tokens.sum() == 2 * 39 - 1
    # KV capacity never exceeded
    assert raw.inst_kv_peak.max() <= inp.hbm_blocks
    assert raw.timeseries[..., 2].max() <= inp.hbm_blocks


def test_ample_kv_changes_nothing_but_admission():
    """With KV to spare nobody is preempted and, where admission was never KV-bound, the runs are equal."""
    wl = agent_workload(5, n_sessions=6, max_turns=3, span=2.0, output=(1, 50))
    kw = dict(kv_tokens=2_000_000, n_instances=2, block_size=16, max_num_seqs=4, max_batched_tokens=512)
    runs = [run_engine(prepare(wl, small_cluster(kv_allocation=a, **kw), "round-robin", seed=1, n_samples=50))
            for a in ("reserve", "incremental")]
    assert runs[1].preemptions.sum() == 0
    for name in PER_REQUEST + PER_INSTANCE:
        if name != "inst_kv_peak":
            assert np.allclose(getattr(runs[0], name), getattr(runs[1], name), rtol=1e-9, equal_nan=True), name
    used = [r.timeseries[..., 2] for r in runs]  # blocks pinned or reserved: only what is in KV
    assert (used[1] <= used[0]).all() and (used[1] < used[0]).any()


def test_incremental_is_rejected_where_not_implemented():
    from smetric.cluster.config import ClusterConfig

    with pytest.raises(ValueError, match="colocated"):
        small_cluster(n_instances=2, mode="disaggregated", n_prefill=1, n_decode=1, kv_allocation="incremental")
    with pytest.raises(ValueError, match="kv_allocation must be one of"):
        ClusterConfig("example", "example", kv_allocation="lazy")


def test_simulate_cli_takes_the_allocation_rule(tmp_path, capsys):
    import json

    from smetric.cli import main

    rows = [(t, 1500, 400, [0, 1, 2]) for t in range(0, 600, 20)]
    path = tmp_path / "burst.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h})
                              for t, n, o, h in rows) + "\n")
    base = ["simulate", "--model", "llama-3-8b", "--gpu", "a100", "--policy", "round_robin", "--trace", str(path),
            "--json"]
    out = {}
    for rule in ("reserve", "incremental"):
        assert main(base + ["--kv-allocation", rule]) == 0
        out[rule] = json.loads(capsys.readouterr().out)
    assert "n_preempted" not in out["reserve"] and out["incremental"]["n_preempted"] >= 0
    assert out["incremental"]["n_completed"] == out["reserve"]["n_completed"] == len(rows)
    with pytest.raises(SystemExit):
        main(base + ["--kv-allocation", "lazy"])
