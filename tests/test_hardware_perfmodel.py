"""PerfModel: Python/numba agreement, monotonicity, memory budget, validation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.hardware.efficiency import Efficiency
from smetric.hardware.gpus import get_gpu
from smetric.hardware.kernel import (
    C_ATTN_DECODE,
    C_ATTN_PREFILL,
    C_LIN_MEM,
    C_LIN_PER_TOKEN,
    iteration_time_nb,
    prefill_attn_work,
    prefill_time_nb,
)
from smetric.hardware.perfmodel import ContextRangeWarning, PerfModel

CONFIGS = [("llama-3-8b", "a100", 1), ("llama-3-70b", "h100", 4), ("qwen3-235b-a22b", "h20", 8),
           ("qwen3-coder-30b-a3b", "h800", 2), ("qwen2.5-7b", "l20", 1), ("opt-66b", "a100", 8),
           ("qwen3-32b", "rtx-pro-6000", 1), ("qwen2.5-72b", "h200", 8)]
MODELS = {cfg: PerfModel(*cfg) for cfg in CONFIGS}

chunks = st.lists(st.tuples(st.integers(1, 4096), st.integers(0, 16384)), max_size=4)
contexts = st.lists(st.integers(0, 16384), max_size=64)


@pytest.mark.filterwarnings("ignore::smetric.hardware.perfmodel.ContextRangeWarning")
@settings(max_examples=60, deadline=None)
@given(cfg=st.sampled_from(CONFIGS), prefill=chunks, decode=contexts)
def test_python_and_numba_agree(cfg, prefill, decode):
    pm = MODELS[cfg]
    n_tokens = sum(c for c, _ in prefill) + len(decode)
    attn = sum(prefill_attn_work(float(c), float(p)) for c, p in prefill)
    numba = iteration_time_nb(pm.coefficients(), float(n_tokens), attn, float(sum(decode)), float(len(decode)))
    if n_tokens == 0:
        assert numba == 0.0
    else:
        assert pm.iteration_time(prefill=prefill, decode=decode) == pytest.approx(numba, rel=1e-12)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_prefill_time_matches_kernel(cfg):
    pm = MODELS[cfg]
    assert pm.prefill_time(1000, 1000) == pytest.approx(prefill_time_nb(pm.coefficients(), 1000.0, 1000.0), rel=1e-12)


@pytest.mark.filterwarnings("ignore::smetric.hardware.perfmodel.ContextRangeWarning")
@settings(max_examples=40, deadline=None)
@given(cfg=st.sampled_from(CONFIGS), n=st.integers(1, 32768), extra=st.integers(1, 4096),
       ctx=st.integers(0, 32768), more_ctx=st.integers(1, 4096))
def test_more_tokens_or_context_never_costs_less(cfg, n, extra, ctx, more_ctx):
    pm = MODELS[cfg]
    assert pm.linear_time(n + extra) >= pm.linear_time(n)
    assert pm.prefill_time(n, ctx + more_ctx) >= pm.prefill_time(n, ctx)
    assert pm.prefill_time(n + extra, ctx) >= pm.prefill_time(n, ctx)
    assert pm.decode_time([ctx + more_ctx]) >= pm.decode_time([ctx])
    assert pm.decode_time([ctx, ctx]) >= pm.decode_time([ctx])


def test_breakdown_sums_to_iteration_time_and_vectorises():
    pm = MODELS[("llama-3-8b", "a100", 1)]
    parts = pm.breakdown(np.array([0.0, 64.0, 2048.0]), np.array([0.0, 0.0, 2048 * 1024.0]),
                         np.array([0.0, 64 * 1000.0, 0.0]), np.array([0, 64, 0]))
    total = sum(parts.values())
    assert total[0] == 0.0
    assert total[1] == pytest.approx(pm.decode_time([1000] * 64))
    assert total[2] == pytest.approx(pm.prefill_time(2048))


def test_moe_reads_more_expert_weights_as_the_batch_grows():
    pm = MODELS[("qwen3-235b-a22b", "h20", 8)]
    one, many = pm.breakdown(1.0)["linear"], pm.breakdown(64.0)["linear"]
    assert many > 3 * one  # 8 of 128 experts at n=1, nearly all by n=64: memory-bound and growing


def test_tp_speeds_up_and_adds_allreduce():
    t1, t8 = PerfModel("llama-3-70b", "h100", 1), PerfModel("llama-3-70b", "h100", 8)
    # compute splits 8 ways, the all-reduce (4096 tokens x 8192 x 2 B, 160 times over NVLink) does not
    assert t8.prefill_time(4096) < t1.prefill_time(4096) / 3
    assert t8.breakdown(512.0)["allreduce"] > 0 and t1.breakdown(512.0)["allreduce"] == 0


def test_slower_link_makes_tp_allreduce_slower():
    h100, h800 = PerfModel("llama-3-70b", "h100", 8), PerfModel("llama-3-70b", "h800", 8)
    assert h800.breakdown(4096.0)["allreduce"] > h100.breakdown(4096.0)["allreduce"]


def test_kv_capacity_is_the_memory_left_over():
    pm = PerfModel("llama-3-8b", "a100", 1)
    cap = pm.kv_capacity_tokens(0.9)
    free = pm.gpu.mem_bytes * 0.9 - pm.model.weight_bytes - pm.activation_reserve_bytes
    assert cap == int(free // pm.model.kv_bytes_per_token)
    assert pm.kv_capacity_tokens(0.95) > cap
    # KV heads split across TP: twice the GPUs, more than twice the tokens (weights are split too)
    assert PerfModel("llama-3-8b", "a100", 2).kv_capacity_tokens(0.9) > 2 * cap


def test_kv_heads_are_replicated_beyond_their_count():
    pm = PerfModel("qwen3-235b-a22b", "h20", 8)  # 4 KV heads on 8 GPUs
    assert pm.kv_bytes_per_token_per_gpu == pm.kv_bytes_per_token / 4


def test_model_that_does_not_fit_fails_loudly():
    with pytest.raises(ValueError, match="does not fit"):
        PerfModel("llama-3-70b", "a100", 1).kv_capacity_tokens()


def test_kv_transfer_time():
    pm = PerfModel("qwen2.5-72b", "h800", 8)
    assert pm.kv_transfer_time(8192, 50e9, 1e-3) == pytest.approx(1e-3 + 8192 * 327680 / 50e9)
    with pytest.raises(ValueError):
        pm.kv_transfer_time(10, 0.0)


def test_invalid_configurations_fail_loudly():
    with pytest.raises(ValueError, match="query heads"):
        PerfModel("llama-3-8b", "a100", 3)
    with pytest.raises(ValueError, match="KV heads"):
        PerfModel("qwen2.5-7b", "a100", 14)  # divides the 28 query heads, not the 4 KV heads
    with pytest.raises(ValueError, match="tp"):
        PerfModel("llama-3-8b", "a100", 0)
    with pytest.raises(ValueError, match="unknown GPU"):
        PerfModel("llama-3-8b", "v100", 1)
    pm = MODELS[("llama-3-8b", "a100", 1)]
    with pytest.raises(ValueError, match="prefill chunk"):
        pm.iteration_time(prefill=[(0, 5)])
    with pytest.raises(ValueError, match="decode context"):
        pm.decode_time([-1])
    with pytest.raises(ValueError, match="mem_util"):
        pm.kv_capacity_tokens(1.5)


def test_context_beyond_max_positions_warns():
    pm = MODELS[("llama-3-8b", "a100", 1)]
    with pytest.warns(ContextRangeWarning, match="max_positions"):
        pm.prefill_time(1024, 8192)


def test_efficiency_validation():
    with pytest.raises(ValueError, match="eta_compute"):
        Efficiency(eta_compute=1.5)
    with pytest.raises(ValueError, match="unknown Efficiency fields"):
        Efficiency.from_dict({"eta_magic": 1.0})


def test_l_eq_and_prefill_rate_are_sane():
    pm = MODELS[("llama-3-8b", "a100", 1)]
    assert pm.l_eq == pm.model.l_eq
    # tokens/s below the compute roofline, above a tenth of it
    roof = pm.gpu.bf16_flops / (2 * pm.model.active_layer_params)
    assert roof / 10 < pm.prefill_rate() < roof


# ---------------------------------------------------------------- FP8 weights and KV cache
def test_fp8_weights_halve_the_linear_layer_bytes_and_keep_the_rest_bf16():
    m = PerfModel("qwen3-30b-a3b", "h20").model
    fp8 = PerfModel("qwen3-30b-a3b", "h20", weight_dtype="fp8")
    router = m.mlp_params - m.expert_params
    bf16_rest = m.layers * (m.norm_params + router) + m.embedding_params
    assert fp8.weight_bytes_per_gpu == (m.weight_bytes - 2 * bf16_rest) / 2 + 2 * bf16_rest
    dense = PerfModel("llama-3-8b", "h100", 2, weight_dtype="fp8")
    assert dense.weight_bytes_per_gpu == pytest.approx(
        (dense.model.weight_bytes / 2 + dense.model.layers * dense.model.norm_params
         + dense.model.embedding_params) / 2)
    # more HBM left for KV, and the weight-streaming (bs=1 decode) step is faster
    assert fp8.kv_capacity_tokens() > PerfModel("qwen3-30b-a3b", "h20").kv_capacity_tokens()
    assert fp8.decode_time([1000]) < PerfModel("qwen3-30b-a3b", "h20").decode_time([1000])


def test_fp8_gemms_use_the_fp8_peak_only_where_the_gpu_has_fp8_tensor_cores():
    for gpu in ("h20", "h100", "a100"):  # A100: weight-only W8A16 at the bf16 peak
        g = get_gpu(gpu)
        ratio = g.bf16_flops / g.fp8_flops if g.has_fp8 else 1.0
        bf16 = PerfModel("llama-3-8b", gpu).coefficients()
        fp8 = PerfModel("llama-3-8b", gpu, weight_dtype="fp8").coefficients()
        assert fp8[C_LIN_PER_TOKEN] == pytest.approx(ratio * bf16[C_LIN_PER_TOKEN])
        assert fp8[C_LIN_MEM] < 0.6 * bf16[C_LIN_MEM]
        assert fp8[C_ATTN_PREFILL] == bf16[C_ATTN_PREFILL] and fp8[C_ATTN_DECODE] == bf16[C_ATTN_DECODE]
    assert get_gpu("h20").fp8_flops == 2 * get_gpu("h20").bf16_flops and not get_gpu("a100").has_fp8


def test_fp8_kv_halves_kv_bytes_capacity_reads_and_transfers():
    bf16, fp8 = PerfModel("qwen3-30b-a3b", "h20"), PerfModel("qwen3-30b-a3b", "h20", kv_dtype="fp8")
    assert fp8.kv_bytes_per_token * 2 == bf16.kv_bytes_per_token == bf16.model.kv_bytes_per_token
    free = bf16.gpu.mem_bytes * 0.9 - bf16.weight_bytes_per_gpu - bf16.activation_reserve_bytes
    assert fp8.kv_capacity_tokens() == int(free // fp8.kv_bytes_per_token_per_gpu)
    assert fp8.coefficients()[C_ATTN_DECODE] == pytest.approx(bf16.coefficients()[C_ATTN_DECODE] / 2)
    assert fp8.kv_transfer_time(4096, 25e9) == pytest.approx(bf16.kv_transfer_time(4096, 25e9) / 2)
    assert fp8.prefill_time(2048) == bf16.prefill_time(2048)  # attention compute stays bf16


def test_unknown_dtype_fails_loudly():
    with pytest.raises(ValueError, match="weight_dtype must be one of"):
        PerfModel("llama-3-8b", "h100", weight_dtype="int4")
    with pytest.raises(ValueError, match="kv_dtype must be one of"):
        PerfModel("llama-3-8b", "h100", kv_dtype="fp16")
