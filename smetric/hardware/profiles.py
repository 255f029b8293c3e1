"""Measured GPU timings (third-party profiles in ``data/perf/profiles``) as tidy DataFrames.

Every loader returns one row per measurement with the columns ``dataset, gpu, model, tp`` plus the
inputs of that measurement and ``measured_s`` (seconds). Times are per transformer layer on one GPU
shard for the operator profiles, and per iteration for DistServe's fitted latency models.

* ``vidur-linear``: Vidur ``mlp.csv`` (A100: Llama-2-7B, Llama-3-8B, Llama-3-70B; H100: Llama-2-7B;
  TP 1-8): sum of the median times of every per-layer op (GEMMs, norms, rope, activation, add).
* ``vidur-attention``: Vidur's legacy A100 FlashAttention grid, a 70B shard at TP 2 (``attn_prefill``
  for one chunk over a cached prefix; ``attn_decode`` for a batch at one context length).
* ``lss-linear`` / ``lss-attention``: LLMServingSim RTX PRO 6000 (vLLM 0.19, Llama-3.1-8B, Qwen3-32B,
  TP 1) and RTX 4090 (vLLM 0.19, Llama-3.1-8B, TP 1): per-layer dense ops (two layernorm calls per layer), and
  the attention of a batch mixing one prefill chunk with ``n_decode`` sequences.
* ``lss-moe``: LLMServingSim's whole-block MoE profile of Qwen3-30B-A3B on the RTX PRO 6000 (vLLM 0.19, TP 1,
  ``moe.csv``): one layer's routed experts for ``n_tokens`` tokens over ``activated`` distinct experts, the
  expert-parallel degree 1 rows (the others time one rank's share of a layer the package does not split).
* ``distserve`` / ``distserve-vllm``: DistServe's A100 latency models for OPT-13B/66B, evaluated on
  a grid inside their fitted range (prefill of one prompt; decode of a batch at one context length).
* ``hopper-attention``: published FlashAttention-3 kernel benchmarks on H100 and H20
  (``data/perf/hopper_attention.csv``, one source per row): ``n_prefill`` equal prompts per kernel call,
  or a decode batch. Their "model" is the benchmark shape (:func:`model_spec`), one layer.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .efficiency import perf_data_dir
from .models import ModelSpec, get_model

__all__ = ["profiles_dir", "vidur_linear", "vidur_attention", "lss_linear", "lss_attention", "lss_moe",
           "distserve_iterations", "all_linear", "all_attention", "hopper_attention", "hopper_attention_path",
           "kernel_shape_name", "model_spec"]

_VIDUR_MODELS = {"Llama-2-7b-hf": "llama-2-7b", "Meta-Llama-3-8B": "llama-3-8b", "Meta-Llama-3-70B": "llama-3-70b"}
_VIDUR_OPS = ("input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
              "mlp_up_proj", "mlp_act", "mlp_down_proj", "add")
_LSS_MODELS = {"meta-llama/Llama-3.1-8B": "llama-3.1-8b", "Qwen/Qwen3-32B": "qwen3-32b",
               "Qwen/Qwen3-30B-A3B-Instruct-2507": "qwen3-30b-a3b"}
_LSS_GPUS = {"RTXPRO6000": "rtx-pro-6000", "RTX4090": "rtx-4090"}  # LLMServingSim's hardware folder -> GPU
# calls per layer of each profiled LLMServingSim op (embedding and final_layernorm run once per model)
_LSS_CALLS = {"qkv_proj": 1, "o_proj": 1, "gate_up_proj": 1, "down_proj": 1, "act_fn": 1,
              "layernorm": 2, "rotary_emb": 1, "qk_norm": 1}
_DISTSERVE_MODELS = {"facebook/opt-13b": "opt-13b", "facebook/opt-66b": "opt-66b"}


def profiles_dir() -> Path:
    """``data/perf/profiles``: the copied measurement files with their upstream licenses."""
    path = perf_data_dir() / "profiles"
    if not path.is_dir():
        raise FileNotFoundError(f"profile data missing: {path}")
    return path


@lru_cache(maxsize=None)
def vidur_linear() -> pd.DataFrame:
    """Vidur per-layer non-attention time vs ``n_tokens`` (A100 and H100, TP 1-8)."""
    frames = []
    for path in sorted((profiles_dir() / "vidur" / "compute").glob("*/*/*/mlp.csv")):
        raw = pd.read_csv(path)
        frames.append(pd.DataFrame({
            "dataset": "vidur-linear",
            "gpu": path.parts[-4],
            "model": _VIDUR_MODELS[path.parts[-2]],
            "tp": raw["num_tensor_parallel_workers"].astype(int),
            "n_tokens": raw["num_tokens"].astype(int),
            "measured_s": sum(raw[f"time_stats.{op}.median"] for op in _VIDUR_OPS) * 1e-3,
        }))
    return pd.concat(frames, ignore_index=True)


def _timing_frame(dataset, gpu, model, tp, chunk, cached, n_decode, decode_ctx, seconds) -> pd.DataFrame:
    chunk = np.asarray(chunk, dtype=float)
    return pd.DataFrame({
        "dataset": dataset, "gpu": gpu, "model": model, "tp": tp,
        "chunk": chunk, "cached": np.asarray(cached, dtype=float),
        "n_decode": np.asarray(n_decode, dtype=float), "decode_ctx": np.asarray(decode_ctx, dtype=float),
        "measured_s": np.asarray(seconds, dtype=float),
    })


@lru_cache(maxsize=None)
def vidur_attention() -> pd.DataFrame:
    """Vidur's legacy A100 attention grid (70B shape at TP 2): prefill chunks and decode batches."""
    raw = pd.read_csv(profiles_dir() / "vidur" / "legacy_a100" / "attention.csv")
    pre, dec = raw[raw["is_prefill"]], raw[~raw["is_prefill"]]
    return pd.concat([
        _timing_frame("vidur-attention", "a100", "llama-3-70b", 2, pre["prefill_chunk_size"], pre["kv_cache_size"],
                         0, 0, pre["time_stats.attn_prefill.median"] * 1e-3),
        _timing_frame("vidur-attention", "a100", "llama-3-70b", 2, 0, 0, dec["batch_size"],
                         dec["batch_size"] * dec["kv_cache_size"], dec["time_stats.attn_decode.median"] * 1e-3),
    ], ignore_index=True)


def _lss_tables(name: str):
    """``(gpu, model, path)`` of every LLMServingSim TP-1 profile table ``name`` present."""
    for hardware, gpu in _LSS_GPUS.items():
        for hf_name, model in _LSS_MODELS.items():
            path = profiles_dir() / "llmservingsim" / hardware / hf_name / "bf16" / "tp1" / name
            if path.is_file():
                yield gpu, model, path


@lru_cache(maxsize=None)
def lss_linear() -> pd.DataFrame:
    """LLMServingSim per-layer non-attention time vs ``n_tokens`` (TP 1; RTX PRO 6000 and RTX 4090)."""
    frames = []
    for gpu, model, path in _lss_tables("dense.csv"):
        raw = pd.read_csv(path)
        raw = raw[raw["layer"].isin(list(_LSS_CALLS))]
        per_layer = (raw["time_us"] * raw["layer"].map(_LSS_CALLS)).groupby(raw["tokens"]).sum()
        frames.append(pd.DataFrame({"dataset": "lss-linear", "gpu": gpu, "model": model, "tp": 1,
                                    "n_tokens": per_layer.index.astype(int), "measured_s": per_layer.values * 1e-6}))
    return pd.concat(frames, ignore_index=True)


@lru_cache(maxsize=None)
def lss_moe() -> pd.DataFrame:
    """LLMServingSim whole-block MoE time vs ``n_tokens`` and ``activated`` experts (TP 1, expert parallelism 1)."""
    frames = []
    for gpu, model, path in _lss_tables("moe.csv"):
        raw = pd.read_csv(path)
        raw = raw[raw["ep"] == 1]
        frames.append(pd.DataFrame({"dataset": "lss-moe", "gpu": gpu, "model": model, "tp": 1,
                                    "n_tokens": raw["tokens"].to_numpy(int),
                                    "activated": raw["activated_experts"].to_numpy(int),
                                    "measured_s": raw["time_us"].to_numpy(float) * 1e-6}))
    return pd.concat(frames, ignore_index=True)


@lru_cache(maxsize=None)
def lss_attention() -> pd.DataFrame:
    """LLMServingSim attention grid: one prefill chunk plus ``n_decode`` sequences (TP 1; RTX PRO 6000 and
    RTX 4090)."""
    frames = []
    for gpu, model, path in _lss_tables("attention.csv"):
        raw = pd.read_csv(path)
        raw = raw[(raw["prefill_chunk"] > 0) | (raw["n_decode"] > 0)]
        frames.append(_timing_frame("lss-attention", gpu, model, 1, raw["prefill_chunk"],
                                       raw["kv_prefill"], raw["n_decode"], raw["n_decode"] * raw["kv_decode"],
                                       raw["time_us"] * 1e-6))
    return pd.concat(frames, ignore_index=True)


@lru_cache(maxsize=None)
def distserve_iterations() -> pd.DataFrame:
    """DistServe's fitted A100 iteration latencies (OPT-13B/66B, both engines) on a grid inside their range.

    Prefill: one prompt of 64..2048 tokens. Decode: batches of 1..256 sequences at one context length
    of 128..2048 tokens (the small/large-batch model switched at the profile's threshold), keeping the
    batches whose KV fits DistServe's ``max_num_tokens`` for that (model, TP) without pipelining.
    """
    capacity = pd.read_csv(profiles_dir() / "distserve" / "max_num_tokens.csv")
    capacity = capacity[capacity["pp"] == 1].set_index(["model", "tp"])["max_num_tokens"]
    frames = []
    for engine, dataset in (("distserve", "distserve"), ("vllm", "distserve-vllm")):
        with open(profiles_dir() / "distserve" / f"profiler-a100-80g.{engine}.json") as fh:
            table = json.load(fh)
        for hf_name, per_tp in table.items():
            if hf_name not in _DISTSERVE_MODELS:
                continue
            for tp, fit in per_tp.items():
                lengths = 2.0 ** np.arange(6, 12)
                a, b, c = fit["prefill"]
                frames.append(_timing_frame(dataset, "a100", _DISTSERVE_MODELS[hf_name], int(tp), lengths, 0, 0, 0,
                                               (a + b * lengths + c * lengths**2) * 1e-3))
                bs, ctx = (g.ravel() for g in np.meshgrid(2.0 ** np.arange(0, 9), 2.0 ** np.arange(7, 12)))
                fits = bs * ctx <= capacity[(hf_name, int(tp))]
                bs, ctx = bs[fits], ctx[fits]
                small = bs < fit["decoding_large_small_bs_threshold"]
                coef = np.where(small[:, None], fit["decoding_smallbs"], fit["decoding_largebs"])
                ms = coef[:, 0] + coef[:, 1] * bs * ctx + coef[:, 2] * bs
                frames.append(_timing_frame(dataset, "a100", _DISTSERVE_MODELS[hf_name], int(tp), 0, 0, bs,
                                               bs * ctx, ms * 1e-3))
    out = pd.concat(frames, ignore_index=True)
    out["n_tokens"] = out["chunk"] + out["n_decode"]
    return out


def all_linear() -> pd.DataFrame:
    """Every linear-layer profile (Vidur and LLMServingSim)."""
    return pd.concat([vidur_linear(), lss_linear()], ignore_index=True)


def all_attention() -> pd.DataFrame:
    """Every attention grid (Vidur legacy A100 and LLMServingSim RTX PRO 6000)."""
    return pd.concat([vidur_attention(), lss_attention()], ignore_index=True)


def kernel_shape_name(heads: int, kv_heads: int, head_dim: int) -> str:
    """Name of an attention-kernel benchmark shape (``attn-h16-kv16-d128``), resolved by :func:`model_spec`."""
    return f"attn-h{int(heads)}-kv{int(kv_heads)}-d{int(head_dim)}"


def model_spec(name: str) -> ModelSpec:
    """A served model by name, or the one-layer attention shape of a kernel benchmark (:func:`kernel_shape_name`).

    Only the attention terms of a kernel shape are meaningful (its MLP and vocabulary are placeholders).
    """
    if not name.startswith("attn-"):
        return get_model(name)
    match = re.fullmatch(r"attn-h(\d+)-kv(\d+)-d(\d+)", name)
    if match is None:
        raise ValueError(f"kernel shape names look like attn-h16-kv16-d128, got {name!r}")
    heads, kv_heads, head_dim = (int(x) for x in match.groups())
    return ModelSpec(name, "attention kernel benchmark shape", 1, heads * head_dim, heads, kv_heads, head_dim,
                     1, 1, 1 << 20)


def hopper_attention_path() -> Path:
    """``data/perf/hopper_attention.csv``: the Hopper attention measurements with their sources."""
    return perf_data_dir() / "hopper_attention.csv"


@lru_cache(maxsize=None)
def hopper_attention() -> pd.DataFrame:
    """Published FlashAttention-3 forward benchmarks on H100 and H20 (``use`` = ``fit`` or ``check``).

    Prefill rows time ``batch`` prompts of ``seqlen`` tokens in one call: causal as a chunk over no
    cached prefix (``c^2/2`` work), non-causal as a chunk over half its length cached (``c^2`` work,
    the FLOP count of a full square). The time is the reported one, else the FLOPs of that
    convention (``4 * batch * seqlen^2 * heads * head_dim``, halved when causal) over the reported TFLOPS.
    Decode rows are ``batch`` sequences reading ``seqlen`` tokens of KV each.
    """
    raw = pd.read_csv(hopper_attention_path())
    bad = set(raw["phase"]) - {"prefill", "decode"} | set(raw["use"]) - {"fit", "check"}
    if bad or raw["source_repo"].isna().any() or raw["source_ref"].isna().any():
        raise ValueError(f"{hopper_attention_path()}: every row needs phase, use and a source (bad: {sorted(bad)})")
    prefill = (raw["phase"] == "prefill").to_numpy()
    causal = raw["causal"].astype(bool).to_numpy()
    batch, seqlen = raw["batch"].to_numpy(float), raw["seqlen"].to_numpy(float)
    flops = 4.0 * batch * seqlen**2 * raw["heads"].to_numpy(float) * raw["head_dim"].to_numpy(float)
    flops = np.where(causal, flops / 2, flops)
    seconds = np.where(raw["reported_ms"].notna(), raw["reported_ms"] * 1e-3, flops / (raw["reported_tflops"] * 1e12))
    frame = _timing_frame("hopper-attention", raw["gpu"], [kernel_shape_name(*row) for row in
                                                         raw[["heads", "kv_heads", "head_dim"]].to_numpy()], 1,
                          np.where(prefill, seqlen, 0.0), np.where(prefill & ~causal, seqlen / 2, 0.0),
                          np.where(prefill, 0.0, batch), np.where(prefill, 0.0, batch * seqlen), seconds)
    frame["n_prefill"] = np.where(prefill, batch, 0.0)
    frame["use"] = raw["use"].to_numpy()
    if not np.isfinite(frame["measured_s"]).all() or (frame["measured_s"] <= 0).any():
        raise ValueError(f"{hopper_attention_path()}: every row needs reported_ms or reported_tflops > 0")
    return frame
