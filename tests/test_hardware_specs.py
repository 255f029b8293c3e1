"""GPU and model specs: published sizes, derived quantities, lookups."""

import pytest

from smetric.hardware.gpus import GPUS, GPUSpec, get_gpu, gpu_names
from smetric.hardware.models import MODELS, get_model, model_names

# Published parameter counts (billions): model cards / papers. (total, active)
PUBLISHED = {
    "llama-2-7b": (6.74, None),
    "llama-2-70b": (68.98, None),
    "llama-3-8b": (8.03, None),
    "llama-3-70b": (70.6, None),
    "llama-3.1-8b": (8.03, None),
    "llama-3.1-70b": (70.6, None),
    "codellama-34b": (33.7, None),
    "qwen3-14b": (14.8, None),
    "mixtral-8x7b": (46.7, 12.9),
    "mixtral-8x22b": (141.0, 39.0),
    "llama-4-scout-17b-16e": (109.0, 17.0),  # the model card's total includes the vision encoder
    "mistral-nemo-12b": (12.2, None),
    "yi-34b": (34.4, None),
    "qwen2.5-7b": (7.61, None),
    "qwen2.5-14b": (14.7, None),
    "qwen2.5-32b": (32.5, None),
    "qwen2.5-72b": (72.7, None),
    "qwen3-32b": (32.8, None),
    "qwen3-30b-a3b": (30.5, 3.3),
    "qwen3-coder-30b-a3b": (30.5, 3.3),
    "qwen3-235b-a22b": (235.0, 22.0),
    "opt-13b": (12.9, None),
    "opt-66b": (65.7, None),
    # OpenAI's gpt-oss model card: 116.83B total, 5.13B active, which leaves out the 0.58B input embedding (a
    # lookup, counted in every other row's active size)
    "gpt-oss-120b": (116.83, 5.13 + 0.58),
}


def test_every_model_has_a_published_size():
    assert set(PUBLISHED) == set(MODELS)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_counts_match_published_within_2_percent(name):
    total, active = PUBLISHED[name]
    spec = get_model(name)
    assert spec.total_params / 1e9 == pytest.approx(total, rel=0.02)
    expected_active = total if active is None else active
    assert spec.active_params / 1e9 == pytest.approx(expected_active, rel=0.02)


@pytest.mark.parametrize("name, kib", [("qwen2.5-7b", 56), ("qwen2.5-14b", 192), ("qwen2.5-32b", 256),
                                       ("qwen2.5-72b", 320), ("llama-3-70b", 320), ("llama-3-8b", 128),
                                       ("llama-2-7b", 512), ("opt-13b", 800)])
def test_kv_bytes_per_token(name, kib):
    assert get_model(name).kv_bytes_per_token == kib * 1024


def test_mooncake_check_128k_llama3_70b_kv_is_40_gib():
    assert get_model("llama-3-70b").kv_bytes_per_token * 128 * 1024 == 40 * 2**30


def test_coder_alias_has_the_30b_a3b_shape_and_longer_context():
    a, b = get_model("qwen3-30b-a3b"), get_model("qwen3-coder-30b-a3b")
    assert (a.total_params, a.active_params, a.kv_bytes_per_token) == (
        b.total_params, b.active_params, b.kv_bytes_per_token)
    assert b.max_positions > a.max_positions


def test_l_eq_is_where_attention_flops_equal_linear_flops():
    m = get_model("llama-3-8b")
    linear_flops = 2 * m.active_layer_params
    assert m.attn_flops_per_token_ctx * m.l_eq == pytest.approx(linear_flops)


def test_moe_active_fraction_and_dense_equality():
    moe = get_model("qwen3-235b-a22b")
    assert moe.is_moe and moe.active_params < 0.1 * moe.total_params
    dense = get_model("qwen3-32b")
    assert not dense.is_moe and dense.active_params == dense.total_params


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="llama-3-8b"):
        get_model("llama-9")
    with pytest.raises(ValueError, match="h100"):
        get_gpu("tpu")


def test_lookups_are_case_insensitive_and_pass_specs_through():
    assert get_model("Llama-3-8B") is MODELS["llama-3-8b"]
    assert get_gpu(GPUS["a100"]) is GPUS["a100"]
    assert gpu_names() == ["a100", "h100", "h800", "h20", "h200", "l20", "rtx-pro-6000", "l4", "l40s", "rtx-4090"]
    assert "opt-66b" in model_names()


def test_gpu_specs_from_the_reference_table():
    assert get_gpu("h20").bf16_flops == 148e12 and get_gpu("h20").mem_bw == 4.0e12
    assert get_gpu("h800").nvlink_bw < get_gpu("h100").nvlink_bw
    assert get_gpu("l20").nvlink_bw == 0 and get_gpu("l20").tp_link_bw == get_gpu("l20").host_link_bw
    # ridge points = datasheet peak FLOP/s / HBM bandwidth
    assert get_gpu("a100").ridge_tokens == pytest.approx(153, rel=0.01)
    assert get_gpu("h20").ridge_tokens == pytest.approx(37, rel=0.01)


def test_bad_spec_fails_loudly():
    with pytest.raises(ValueError, match="mem_bw"):
        GPUSpec("x", "x", 1e12, 1e9, 0.0, 0.0, 1e9)
    from smetric.hardware.models import ModelSpec
    with pytest.raises(ValueError, match="kv_heads"):
        ModelSpec("bad", "none", 2, 64, 6, 4, 16, 128, 100, 128)


def test_fp8_peaks_from_the_reference_table():
    # datasheets: FP8 dense = 2x bf16 on Hopper/Ada parts; A100 has no FP8 tensor cores
    assert get_gpu("h20").fp8_flops == 296e12 and get_gpu("h100").fp8_flops == 1979e12
    assert get_gpu("h800").has_fp8 and get_gpu("h200").has_fp8 and get_gpu("l20").has_fp8
    assert not get_gpu("a100").has_fp8
    with pytest.raises(ValueError, match="fp8_flops"):
        GPUSpec("x", "x", 1e12, 1e9, 1e12, 0.0, 1e9, -1.0)
