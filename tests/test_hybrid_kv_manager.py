"""vLLM's hybrid KV cache manager (``ClusterConfig.hybrid_kv_manager``): with it off, a sliding-window model stores
every layer in full -- a token's KV counts all layers, the same bytes hold fewer tokens in HBM and DRAM, and HBM's
cached blocks serve prefix hits; models without sliding-window layers are unaffected. The spec key that turns
it off for one arm is tested with the other per-arm keys (``tests/test_engine_dram_policy.py``)."""

from __future__ import annotations

import dataclasses

import pytest
from engine_support import agent_workload

from smetric.cluster import ClusterConfig
from smetric.cluster.inputs import prepare
from smetric.cluster.serving_stack import parse
from smetric.hardware.models import MODELS


def _gpt_oss(**kw) -> ClusterConfig:
    return ClusterConfig("gpt-oss-120b", "h100", tp=1, gpu_mem_util=0.95, max_batched_tokens=8192,
                         weight_dtype="mxfp4", engine=parse("vllm-v1-async"), **kw)


def test_off_stores_every_layer_of_a_sliding_window_model():
    on, off = _gpt_oss(), _gpt_oss(hybrid_kv_manager=False)
    m = MODELS["gpt-oss-120b"]
    assert off.kv_layer_factor == m.layers / m.full_attention_layers == 2.0 and on.kv_layer_factor == 1.0
    hw_on, hw_off = on.hardware_spec(), off.hardware_spec()
    assert hw_off.kv_bytes_per_token == 2 * hw_on.kv_bytes_per_token
    assert hw_off.kv_capacity_tokens == hw_on.kv_capacity_tokens // 2
    # an explicit pool is the manager-on pool of the same bytes
    assert _gpt_oss(kv_capacity_tokens=275_639, hybrid_kv_manager=False).hardware_spec().kv_capacity_tokens == 137_819
    # the engine row drops HBM hits of sliding-window models; stored in full, they serve again
    assert not on.hbm_prefix_reuse and off.hbm_prefix_reuse


def test_off_has_no_effect_without_sliding_window_layers():
    dense = ClusterConfig("llama-3.1-8b", "h100", engine=parse("vllm-v1-async"))
    off = dataclasses.replace(dense, hybrid_kv_manager=False)
    assert off.kv_layer_factor == 1.0 and off.hardware_spec() == dense.hardware_spec()
    with pytest.raises(ValueError, match="hybrid_kv_manager must be a bool"):
        ClusterConfig("llama-3.1-8b", "h100", hybrid_kv_manager="no")


def test_off_halves_the_dram_tier_and_hbm_blocks_of_the_engine_input():
    wl = agent_workload(0, n_sessions=10, max_turns=2, span=3.0, first_prompt=(200, 2000))
    on = prepare(wl, _gpt_oss(dram_gb=10.0, dram_policy="write-through", block_size=128), "round-robin", n_samples=20)
    off = prepare(wl, _gpt_oss(dram_gb=10.0, dram_policy="write-through", block_size=128, hybrid_kv_manager=False),
                  "round-robin", n_samples=20)
    assert off.kv_bytes_per_token == 2 * on.kv_bytes_per_token
    assert abs(off.dram_blocks - on.dram_blocks / 2) <= 1 and abs(off.hbm_blocks - on.hbm_blocks / 2) <= 1
    assert off.hbm_reuse and not on.hbm_reuse
