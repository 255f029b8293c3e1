"""HBM prefix reuse of hybrid sliding-window models (``ServingStack.swa_prefix_reuse``, ``EngineInput.hbm_reuse``):
which clusters lose it, the rule on a hand-built case (no HBM hit; a write-through DRAM tier still serves the
prefix), and the numba engine equal to the reference on random cases without HBM reuse."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from engine_support import small_cluster, store
from hypothesis import HealthCheck, given, settings
from test_engine_dram_policy import write_through_cases
from test_engine_equivalence import assert_same_run, cases
from test_engine_kvpath import workload_of

from smetric.cluster import ClusterConfig
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference
from smetric.cluster.serving_stack import ServingStack, parse

PROMPT = 1024  # tokens: 64 blocks of 16


@pytest.mark.parametrize(("model", "engine", "reuse"), [
    ("gpt-oss-120b", "vllm-v1-async", False),
    ("gpt-oss-120b", "vllm-v1-sync", False),
    ("gpt-oss-120b", "vllm-v0", False),
    ("gpt-oss-120b", "sglang-overlap", True),
    ("gpt-oss-120b", "legacy", True),
    ("gpt-oss-120b", "vllm-v1-async:swa_prefix_reuse=true", True),
    ("llama-3.1-8b", "vllm-v1-async", True),
])
def test_only_sliding_window_models_on_engines_without_reuse_lose_hbm_hits(model, engine, reuse):
    cluster = ClusterConfig(model, "h100", tp=1, engine=parse(engine))
    assert cluster.hbm_prefix_reuse is reuse


def test_the_rule_is_part_of_what_legacy_excludes():
    assert ServingStack().is_legacy
    assert not ServingStack(swa_prefix_reuse=False).is_legacy
    with pytest.raises(ValueError, match="swa_prefix_reuse must be a bool"):
        ServingStack(swa_prefix_reuse=0)


def _same_prompt_twice(reuse: bool, dram_gb: float):
    """Prompt A at t = 0, then A again at t = 10 s (HBM keeps it): both engines, held equal."""
    a = np.arange(PROMPT)
    wl = workload_of([a, a], [0.0, 10.0], [1, 1])
    inp = prepare(wl, small_cluster(kv_tokens=8_000, block_size=16, dram_gb=dram_gb, dram_policy="write-through"),
                  "round-robin", n_samples=20)
    inp = dataclasses.replace(inp, hbm_reuse=reuse)
    raw = run_engine(inp)
    assert_same_run(raw, run_reference(inp))
    return raw


def test_without_hbm_reuse_a_cached_prompt_is_recomputed_or_loaded_from_dram():
    with_reuse = _same_prompt_twice(True, 0.0)
    assert list(with_reuse.hit_hbm) == [0, PROMPT - 1]
    alone = _same_prompt_twice(False, 0.0)
    assert list(alone.hit_hbm) == [0, 0] and list(alone.hit_dram) == [0, 0]
    assert alone.prefill_tokens[1] == PROMPT
    tiered = _same_prompt_twice(False, 0.3)
    assert list(tiered.hit_hbm) == [0, 0]
    assert list(tiered.hit_dram) == [0, PROMPT - 1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_engine_matches_reference_without_hbm_reuse(case):
    wl, cluster, policy, load, seed = case
    inp = dataclasses.replace(prepare(wl, cluster, policy, load=load, seed=seed, n_samples=50), hbm_reuse=False)
    assert_same_run(run_engine(inp), run_reference(inp))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(write_through_cases())
def test_engine_matches_reference_without_hbm_reuse_and_a_write_through_tier(case):
    wl, cluster, policy, seed = case
    inp = dataclasses.replace(prepare(wl, cluster, policy, seed=seed, n_samples=50), hbm_reuse=False)
    assert_same_run(run_engine(inp), run_reference(inp))


def test_a_partial_tail_held_in_hbm_alone_adds_nothing_without_hbm_reuse():
    """Reply kept in HBM but not stored, no DRAM tier: the follow-up's hit over the global store stops at the
    parent's partial tail (HBM may not serve it), in both engines."""
    wl = workload_of([np.arange(159), np.concatenate([np.arange(144), np.arange(500, 537)])], [0.32, 0.38], [1, 1],
                     parent=[-1, 0], session=[0, 0], turn=[0, 1])
    cluster = small_cluster(kv_tokens=2000, block_size=16, max_num_seqs=1, max_batched_tokens=64,
                            global_store=store(), kv_load_overlap=False, cache_replies=True, hit_granularity=8)
    inp = dataclasses.replace(prepare(wl, cluster, "round-robin", n_samples=20), hbm_reuse=False)
    raw = run_engine(inp)
    assert_same_run(raw, run_reference(inp))
    assert raw.hit_hbm[1] == 0 and raw.hit_global[1] == 144
