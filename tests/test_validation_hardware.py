"""The GPUs and models the published real-cluster benchmarks run on: L4, L40S and four models."""

import json

import pytest

from smetric.cli import main
from smetric.hardware import PerfModel, get_gpu, get_model
from smetric.hardware.efficiency import efficiency_for
from smetric.hardware.models import ModelSpec

MIB = 2**20


@pytest.mark.parametrize("name, bf16_sparse, fp8_sparse, mem_mib, bw", [
    ("l4", 242e12, 485e12, 23034, 300e9),        # NVIDIA L4 datasheet; nvidia-smi memory.total
    ("l40s", 724.1e12, 1466e12, 46068, 864e9),   # NVIDIA L40S datasheet (362.05 dense bf16); nvidia-smi
])
def test_ada_pcie_parts_use_dense_peaks_and_driver_memory(name, bf16_sparse, fp8_sparse, mem_mib, bw):
    gpu = get_gpu(name)
    assert gpu.bf16_flops == pytest.approx(bf16_sparse / 2, rel=0.002)
    assert gpu.fp8_flops == pytest.approx(fp8_sparse / 2, rel=0.002) and gpu.has_fp8
    assert gpu.mem_bytes == mem_mib * MIB and gpu.mem_bw == bw
    assert gpu.nvlink_bw == 0 and gpu.tp_link_bw == gpu.host_link_bw == get_gpu("l20").host_link_bw


@pytest.mark.parametrize("name", ["l4", "l40s"])
def test_ada_pcie_parts_borrow_the_rtx_pro_6000_calibration(name):
    eff, donor = efficiency_for(name), efficiency_for("rtx-pro-6000")
    assert eff.source.startswith("transferred from rtx-pro-6000")
    assert (eff.eta_compute, eff.eta_weights, eff.eta_kv) == (donor.eta_compute, donor.eta_weights, donor.eta_kv)


def test_fp8_on_l4_halves_weight_streaming_and_runs_gemms_at_the_fp8_peak():
    bf16 = PerfModel("llama-3.1-8b", "l4", 1)
    fp8 = PerfModel("llama-3.1-8b", "l4", 1, weight_dtype="fp8", kv_dtype="fp8")
    # decode of one sequence is weight-bound: 8B fp8 weights (~8 GB incl. bf16 embeddings) over 300 GB/s
    assert fp8.decode_time([512]) > 7e9 / 300e9
    assert fp8.decode_time([512]) < 0.7 * bf16.decode_time([512])
    # a long prefill is compute-bound: the FP8 peak is twice the bf16 one
    assert fp8.linear_time(8192) < 0.6 * bf16.linear_time(8192)
    # KubeAI's L4 setup (fp8 weights and KV, gpu-memory-utilization 0.95) has room for a KV cache
    assert fp8.kv_capacity_tokens(0.95) > 50_000


# HF config.json of each model; published sizes (billions, total / active) from the model cards
NEW_MODELS = {
    "llama-3.1-70b": ((80, 8192, 64, 8, 128, 28672, 128256), 70.6, 70.6),
    "qwen3-14b": ((40, 5120, 40, 8, 128, 17408, 151936), 14.8, 14.8),
    "codellama-34b": ((48, 8192, 64, 8, 128, 22016, 32000), 33.7, 33.7),
    "mixtral-8x7b": ((32, 4096, 32, 8, 128, 0, 32000), 46.7, 12.9),
}


@pytest.mark.parametrize("name", sorted(NEW_MODELS))
def test_new_models_have_their_config_shapes_and_published_sizes(name):
    shape, total, active = NEW_MODELS[name]
    m = get_model(name)
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab) == shape
    assert m.total_params / 1e9 == pytest.approx(total, rel=0.01)
    assert m.active_params / 1e9 == pytest.approx(active, rel=0.01)


def test_mixtral_routes_two_of_eight_experts():
    m = get_model("mixtral-8x7b")
    assert (m.experts, m.active_experts, m.expert_ffn, m.shared_experts) == (8, 2, 14336, 0)


@pytest.mark.parametrize("name, shape", [
    ("llama-3.1-8b", (32, 4096, 32, 8, 14336)), ("llama-2-70b", (80, 8192, 64, 8, 28672)),
    ("qwen3-32b", (64, 5120, 64, 8, 25600))])
def test_existing_benchmark_models_have_the_right_shapes(name, shape):
    m = get_model(name)
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn) == shape


def test_shared_experts_are_active_for_every_token():
    base = dict(name="x", hf_name="x", layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=0, vocab=100,
                max_positions=128, experts=8, active_experts=2, expert_ffn=32)
    plain, shared = ModelSpec(**base), ModelSpec(**base, shared_experts=1)
    one_expert = 3 * 64 * 32
    assert shared.active_params - plain.active_params == 2 * one_expert
    assert shared.total_params - plain.total_params == 2 * one_expert
    with pytest.raises(ValueError, match="expert fields"):
        ModelSpec(**dict(base, ffn=64, experts=0, active_experts=0, expert_ffn=0), shared_experts=1)


@pytest.mark.parametrize("model, tp", [("llama-3.1-70b", 8), ("qwen3-14b", 2), ("codellama-34b", 4),
                                       ("mixtral-8x7b", 4), ("llama-3.1-8b", 1)])
def test_perf_cli_times_the_new_entries_on_l4(model, tp, capsys):
    assert main(["perf", "--model", model, "--gpu", "l4", "--tp", str(tp), "--prefill", "2048", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu"] == "l4" and out["model"] == model and 0 < out["seconds"] < 10
