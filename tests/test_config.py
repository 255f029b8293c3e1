"""ClusterConfig, GlobalStore, SLO and HardwareSpec: defaults, derived values and loud validation."""

from __future__ import annotations

import math
from dataclasses import replace as dataclasses_replace

import numpy as np
import pytest

from smetric.cluster.config import SLO, ClusterConfig, GlobalStore, HardwareSpec
from smetric.hardware import kernel


def test_defaults_are_the_issue_values():
    c = ClusterConfig("m", "g")
    assert (c.max_num_seqs, c.max_batched_tokens, c.gpu_mem_util) == (256, 4096, 0.9)
    assert c.slo == SLO(1.0, 0.0625, 0.020)
    assert c.mode == "colocated" and c.replay == "open" and c.global_store is None and c.kv_load_overlap


def test_slo_limit_grows_with_prompt():
    assert np.allclose(SLO().ttft_limit([0, 1000, 8000]), [1.0, 1.0625, 1.5])


@pytest.mark.parametrize("kwargs, message", [
    (dict(tp=0), "tp must be a positive integer"),
    (dict(n_instances=2.5), "n_instances must be a positive integer"),
    (dict(mode="split"), "mode must be one of"),
    (dict(mode="disaggregated", n_instances=4, n_prefill=1, n_decode=2), "must equal n_instances"),
    (dict(mode="disaggregated", n_instances=4, n_prefill=0, n_decode=4), "n_prefill must be a positive integer"),
    (dict(n_prefill=1), "only meaningful with mode='disaggregated'"),
    (dict(max_num_seqs=512, max_batched_tokens=256), "must be >= max_num_seqs"),
    (dict(gpu_mem_util=1.5), "gpu_mem_util must be in"),
    (dict(block_size=0), "block_size must be a positive integer"),
    (dict(dram_gb=-1.0), "dram_gb must be a finite number >= 0"),
    (dict(dram_bandwidth_gbs=0.0), "dram_bandwidth_gbs must be a positive"),
    (dict(pd_bandwidth_gbs=-5.0), "pd_bandwidth_gbs must be a positive"),
    (dict(replay="half-open"), "replay must be one of"),
    (dict(kv_load_overlap="yes"), "kv_load_overlap must be a bool"),
    (dict(global_store="provisioned"), "global_store must be a GlobalStore"),
    (dict(slo=(1, 2, 3)), "slo must be an SLO"),
])
def test_bad_cluster_values_fail_with_a_clear_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ClusterConfig("m", "g", **kwargs)


def test_model_and_gpu_names_are_required():
    with pytest.raises(ValueError, match="model must be a name"):
        ClusterConfig("", "h100")
    with pytest.raises(ValueError, match="gpu must be a name"):
        ClusterConfig("llama", " ")


def test_disaggregated_routes_among_prefill_instances():
    c = ClusterConfig("m", "g", n_instances=5, mode="disaggregated", n_prefill=2, n_decode=3)
    assert c.disaggregated and c.n_routable == 2
    assert ClusterConfig("m", "g", n_instances=5).n_routable == 5


@pytest.mark.parametrize("workload_block, wanted, expected", [(16, 256, 256), (512, 256, 512), (100, 256, 300),
                                                              (16, 10, 16), (1, 1, 1)])
def test_engine_block_is_the_smallest_multiple_at_least_the_wanted_size(workload_block, wanted, expected):
    assert ClusterConfig("m", "g", block_size=wanted).engine_block_size(workload_block) == expected


def test_global_store_parse():
    assert GlobalStore.parse("none") is None
    prov = GlobalStore.parse("provisioned", tp=4)
    assert math.isinf(prov.capacity_gb) and prov.bandwidth_gbs == pytest.approx(4 * 23.75)
    custom = GlobalStore.parse("500:12.5")
    assert (custom.capacity_gb, custom.bandwidth_gbs) == (500.0, 12.5)
    for bad in ("500", "a:b", "1:2:3"):
        with pytest.raises(ValueError, match="global-store"):
            GlobalStore.parse(bad)


@pytest.mark.parametrize("kwargs, message", [
    (dict(capacity_gb=0.0, bandwidth_gbs=1.0), "capacity_gb must be a positive"),
    (dict(capacity_gb=1.0, bandwidth_gbs=math.inf), "bandwidth_gbs must be a positive finite"),
    (dict(capacity_gb=1.0, bandwidth_gbs=1.0, latency_s=-1e-3), "latency_s must be a finite number >= 0"),
])
def test_bad_global_store_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GlobalStore(**kwargs)


def test_hardware_spec_from_coefficients():
    coef = kernel.example_coefficients()
    hw = HardwareSpec.example(100_000)
    assert hw.kv_capacity_tokens == 100_000
    assert hw.l_eq == pytest.approx(coef[kernel.C_LIN_PER_TOKEN] / coef[kernel.C_ATTN_PREFILL])
    assert hw.prefill_rate == pytest.approx(2048 / kernel.prefill_time_nb(coef, 2048.0, 0.0))
    assert np.array_equal(hw.coef_array, coef)


def test_hardware_spec_validation():
    with pytest.raises(ValueError, match=f"needs {kernel.N_COEF} entries"):
        HardwareSpec((1.0, 2.0), 1.0, 10, 1.0, 1.0)
    bad = list(kernel.example_coefficients())
    bad[0] = -1.0
    with pytest.raises(ValueError, match="finite and >= 0"):
        HardwareSpec(tuple(bad), 1.0, 10, 1.0, 1.0)
    with pytest.raises(ValueError, match="kv_capacity_tokens"):
        HardwareSpec.example(0)
    with pytest.raises(ValueError, match="zero duration"):
        HardwareSpec((0.0,) * kernel.N_COEF, 1.0, 10, 1.0, 1.0)


def test_explicit_hardware_wins_over_the_perf_model():
    hw = HardwareSpec.example()
    assert ClusterConfig("no-such-model", "no-such-gpu", hardware=hw).hardware_spec() is hw


def test_describe_mentions_shape_and_store():
    c = ClusterConfig("m", "g", n_instances=3, mode="disaggregated", n_prefill=1, n_decode=2,
                      global_store=GlobalStore.provisioned())
    assert "1P+2D" in c.describe() and "global store" in c.describe()


def test_hardware_spec_from_the_perf_model():
    c = ClusterConfig("llama-2-70b", "h100", tp=8, max_batched_tokens=4096)
    hw = c.hardware_spec()
    assert hw.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2  # 2 (K,V) x layers x KV heads x head dim x bf16
    assert hw.kv_capacity_tokens > 500_000 and hw.l_eq > 0 and hw.prefill_rate > 0
    with pytest.raises(ValueError):
        ClusterConfig("no-such-model", "h100").hardware_spec()


def test_precision_and_attention_calibration_reach_the_hardware_spec():
    base = ClusterConfig(model="qwen3-30b-a3b", gpu="h20")
    fp8 = ClusterConfig(model="qwen3-30b-a3b", gpu="h20", weight_dtype="fp8", kv_dtype="fp8")
    a100 = ClusterConfig(model="qwen3-30b-a3b", gpu="h20", attention_calibration="a100-borrowed")
    hw, hw8, hwa = base.hardware_spec(), fp8.hardware_spec(), a100.hardware_spec()
    assert hw8.kv_bytes_per_token == hw.kv_bytes_per_token / 2  # fp8 KV: one byte per element
    assert hw8.kv_capacity_tokens > 2 * hw.kv_capacity_tokens  # half the bytes per token and half the weights
    assert hwa.kv_capacity_tokens == hw.kv_capacity_tokens  # attention calibration changes time only
    # FA3 prefill attention is faster than the A100 FlashAttention-2 fit the H20 borrowed before
    assert hwa.coefficients[kernel.C_ATTN_PREFILL] > hw.coefficients[kernel.C_ATTN_PREFILL]
    assert hwa.prefill_rate < hw.prefill_rate
    # GPUs without a FlashAttention-3 fit are the same under both calibrations
    same = [ClusterConfig(model="llama-3-8b", gpu="a100", attention_calibration=c).hardware_spec() for c in
            ("fa3", "a100-borrowed")]
    assert same[0] == same[1]


@pytest.mark.parametrize("kwargs, message", [
    ({"weight_dtype": "int4"}, "weight_dtype must be one of"),
    ({"kv_dtype": "fp16"}, "kv_dtype must be one of"),
    ({"attention_calibration": "fa2"}, "attention_calibration must be one of"),
    ({"kv_dtype": "fp8", "hardware": HardwareSpec.example()}, "cannot apply to an explicit hardware spec"),
])
def test_bad_precision_or_calibration_fails(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ClusterConfig(model="qwen3-30b-a3b", gpu="h20", **kwargs)


def test_efficiency_overrides_reach_only_the_named_rates():
    """A what-if's efficiency override: a slower expert GEMM slows an MoE model's prefill and leaves a dense model,
    the KV capacity and every other coefficient alone; the calibrated value itself changes nothing."""
    from smetric.hardware.efficiency import efficiency_for

    moe = ClusterConfig(model="qwen3-30b-a3b", gpu="h100")
    slow = dataclasses_replace(moe, efficiency_overrides=(("moe_gemm_eff", 0.5),))
    hw, hws = moe.hardware_spec(), slow.hardware_spec()
    assert hws.prefill_rate < hw.prefill_rate and hws.kv_capacity_tokens == hw.kv_capacity_tokens
    changed = {i for i, (a, b) in enumerate(zip(hw.coefficients, hws.coefficients)) if a != b}
    assert changed == {kernel.C_LIN_PER_TOKEN}
    same = dataclasses_replace(moe, efficiency_overrides=(("moe_gemm_eff", efficiency_for("h100").moe_gemm_eff),))
    assert same.hardware_spec() == hw
    dense = ClusterConfig(model="llama-3-8b", gpu="h100")
    assert dataclasses_replace(dense, efficiency_overrides=(("moe_gemm_eff", 0.5),)).hardware_spec() == \
        dense.hardware_spec()


@pytest.mark.parametrize("overrides, message", [
    ((("eta_speed", 0.5),), "unknown field 'eta_speed'"),
    ((("eta_compute", 1.5),), r"eta_compute must be in \(0, 1\]"),
    ((("eta_compute", float("nan")),), "eta_compute must be a finite number"),
    ((("source", 1.0),), "unknown field 'source'"),
    ({"eta_compute": 0.5}, "must be a tuple of"),
])
def test_bad_efficiency_overrides_fail(overrides, message):
    with pytest.raises(ValueError, match=message):
        ClusterConfig(model="llama-3-8b", gpu="h100", efficiency_overrides=overrides)


def test_efficiency_overrides_need_the_performance_model():
    with pytest.raises(ValueError, match="not to an explicit hardware spec"):
        ClusterConfig(model="llama-3-8b", gpu="h100", hardware=HardwareSpec.example(),
                      efficiency_overrides=(("eta_compute", 0.5),))
