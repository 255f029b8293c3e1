"""The DRAM tier's two policies (``ClusterConfig.dram_policy``): ``spill`` (blocks evicted from HBM enter DRAM)
and ``write-through`` (every prompt enters DRAM at its prefill completion, nothing at eviction) -- hand-built
cases whose hits follow from the rules, and the numba engine equal to the reference on random cases."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from engine_support import agent_workload, small_cluster, store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import POLICIES, assert_same_run, kv_path
from test_engine_kvpath import both_engines, workload_of

from smetric.cluster.config import ClusterConfig
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference

PROMPT = 1024  # tokens: 64 blocks of 16


def a_b_a(dram_gb: float, policy: str):
    """Prompt A, then a disjoint prompt B that evicts all of A from HBM (room for one request: 65 blocks), then
    A again."""
    a, b = np.arange(PROMPT), np.arange(10_000, 10_000 + PROMPT)
    wl = workload_of([a, b, a], [0.0, 10.0, 20.0], [1, 1, 1])
    cluster = small_cluster(kv_tokens=1040, block_size=16, dram_gb=dram_gb, dram_policy=policy)
    return wl, cluster


@pytest.mark.parametrize("policy", ["spill", "write-through"])
def test_a_computed_prompt_is_a_dram_hit_after_hbm_evicted_it(policy):
    """DRAM room for both prompts: either way A comes back from DRAM (spilled, or written at its completion)."""
    raw = both_engines(*a_b_a(0.3, policy))
    assert list(raw.hit_hbm) == [0, 0, 0]
    assert list(raw.hit_dram) == [0, 0, PROMPT - 1]
    assert raw.inst_dram_read[0] > 0


def test_write_through_holds_the_latest_computed_prompts_spill_the_latest_evicted():
    """DRAM room for one prompt (plus a few blocks): spilled A is whole in DRAM; written through, B's write
    (tail first, after A's) pushed out all of A but the head blocks DRAM still has room for."""
    spilled = both_engines(*a_b_a(0.15, "spill"))
    assert spilled.hit_dram[2] == PROMPT - 1
    wl, cluster = a_b_a(0.15, "write-through")
    room = prepare(wl, cluster, "round-robin").dram_blocks
    assert PROMPT // 16 < room < 2 * PROMPT // 16
    written = both_engines(wl, cluster)
    assert written.hit_dram[2] == (room - PROMPT // 16) * 16


def test_spill_is_the_default_and_a_bad_policy_is_refused():
    wl, cluster = a_b_a(0.15, "spill")
    default = both_engines(wl, dataclasses.replace(cluster, dram_policy=ClusterConfig.dram_policy))
    assert_same_run(default, both_engines(wl, cluster))
    with pytest.raises(ValueError, match="dram_policy must be one of"):
        small_cluster(dram_gb=1.0, dram_policy="write-back")


@st.composite
def write_through_cases(draw):
    """Tight HBM, multi-turn sessions on 1-3 instances, a small or ample write-through DRAM tier."""
    seed = draw(st.integers(0, 2**31 - 1))
    wl = agent_workload(seed, n_sessions=draw(st.integers(2, 10)), max_turns=draw(st.integers(1, 4)), span=2.0,
                        output=(1, draw(st.sampled_from([2, 40]))))
    cluster = small_cluster(
        kv_tokens=draw(st.sampled_from([2500, 4000, 30_000])), n_instances=draw(st.integers(1, 3)), block_size=16,
        max_num_seqs=draw(st.sampled_from([2, 8])), max_batched_tokens=1024,
        dram_gb=draw(st.sampled_from([0.02, 0.1, 10.0])), dram_policy="write-through",
        global_store=draw(st.sampled_from([None, store(capacity_gb=0.1)])),
        kv_load_overlap=draw(st.booleans()), replay=draw(st.sampled_from(["open", "closed"])), **draw(kv_path()))
    return wl, cluster, draw(st.sampled_from(POLICIES)), seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(write_through_cases())
def test_engine_matches_reference_with_write_through(case):
    wl, cluster, policy, seed = case
    inp = prepare(wl, cluster, policy, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


@pytest.mark.parametrize(("key", "bad", "message"), [("dram_policy", "write-back", "must be one of"),
                                                     ("hybrid_kv_manager", "off", "must be true or false")])
def test_a_spec_arm_overrides_the_cluster(tmp_path, key, bad, message):
    """The tiered-prefix-cache spec's offload arm runs a write-through DRAM tier with vLLM's hybrid KV manager off,
    its baseline neither; a bad override is refused with the file and key."""
    from pathlib import Path

    import yaml

    from smetric.realcluster.runner import cluster_for
    from smetric.realcluster.spec import SpecError, load_spec

    path = Path(__file__).parents[1] / "data" / "validation" / "llmd-tiered-cpu-offload.yaml"
    spec = load_spec(path)
    offload, base = cluster_for(spec, "cpu-offload"), cluster_for(spec, "hbm-only")
    own = spec.routers["cpu-offload"]["cluster"]
    assert (offload.dram_policy, offload.dram_gb, offload.hybrid_kv_manager) == ("write-through", own["cpu_offload"],
                                                                                False)
    assert (base.dram_policy, base.dram_gb, base.hybrid_kv_manager) == ("spill", 0.0, True)
    raw = yaml.safe_load(path.read_text())
    raw["routers"]["cpu-offload"]["cluster"][key] = bad
    bad_file = tmp_path / "bad.yaml"
    bad_file.write_text(yaml.safe_dump(raw))
    with pytest.raises(SpecError, match=f"routers.cpu-offload.cluster.{key}: {message}"):
        load_spec(bad_file)
