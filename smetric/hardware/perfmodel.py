"""``PerfModel``: the time of one engine iteration of a (model, GPU, TP) instance, and its memory budget.

Physics (per iteration, per TP group; the usual roofline accounting, as in Vidur and LLM-Viewer):

* linear layers on a smooth roofline: stream the layer weights once (MoE: only the experts the
  batch touches) vs ``2 * active_params * n_tokens`` FLOPs at a GEMM efficiency that ramps with the
  token count (the routed experts' share at ``moe_gemm_eff`` of that rate); plus element-wise ops (bytes per
  token) and a per-layer kernel floor;
* causal prefill attention ``4 * L * n_h * d * c * (p + c/2)`` FLOPs per chunk plus a per-token cost;
  decode attention reads each sequence's KV (``context * kv_bytes_per_token / TP``; slower when the
  batch also runs a prefill chunk) plus a per-sequence cost;
* TP all-reduce: two per layer, ring over NVLink (or PCIe), bandwidth + latency;
* LM head: its weights once per iteration, one GEMM row per sampling (decode) sequence;
* a fixed per-iteration CPU overhead.

Precision (``weight_dtype``, ``kv_dtype``; :data:`DTYPES`): ``fp8`` weights store the linear layers'
matrices (attention projections, MLP and experts) in one byte -- embeddings, LM head, norms and the MoE
router stay bf16, as in vLLM's FP8 quantisation -- and run their GEMMs at the GPU's FP8 peak where it has
FP8 tensor cores (W8A8), else at the bf16 peak (weight-only W8A16, vLLM's FP8 Marlin path), at the same
fraction of peak as bf16 (an assumption: no FP8 GEMM profile here). ``fp8`` KV halves the KV bytes per
token: HBM capacity, decode KV reads and transfer bytes (vLLM ``kv_cache_dtype=fp8``); attention compute
stays at the bf16 rate. ``mxfp4`` weights (gpt-oss) store only the routed experts in 4.25 bits (the rest
stays bf16, as its checkpoint's ``modules_to_not_convert``) and run at the bf16 peak (weight-only, no FP4
tensor cores on Hopper); KV cannot be mxfp4. Sources: ``data/perf/README.md``.

Efficiencies come from :mod:`smetric.hardware.efficiency` (calibrated per GPU). The Python methods
evaluate these terms directly; :meth:`PerfModel.coefficients` folds them into the vector consumed by
the numba kernel (:mod:`smetric.hardware.kernel`), which returns the same numbers.

Ranges: contexts longer than the model's ``max_positions`` raise a :class:`ContextRangeWarning`
(the formulas extrapolate linearly/quadratically); TP must divide the query heads and either divide
or be a multiple of the KV heads (KV heads are replicated when TP exceeds them, as in vLLM).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .efficiency import Efficiency, efficiency_for
from .gpus import GPUSpec, get_gpu
from .kernel import (
    C_ALLREDUCE_PER_TOKEN,
    C_ATTN_DECODE,
    C_ATTN_PREFILL,
    C_ATTN_PREFILL_TOKEN,
    C_DECODE_MIXED_FACTOR,
    C_ELEM_PER_TOKEN,
    C_HALF_EFF_TOKENS,
    C_LIN_MEM,
    C_LIN_PER_TOKEN,
    C_MOE_EXPERT_FRAC,
    C_MOE_MEM,
    C_OVERHEAD,
    C_PER_DECODE,
    C_ROOF_SHARPNESS,
    N_COEF,
    prefill_attn_work,
)
from .models import BYTES_BF16, ModelSpec, get_model

__all__ = ["PerfModel", "ContextRangeWarning", "CUDA_CONTEXT_BYTES", "DTYPES"]

# Per-GPU memory outside weights, KV and activations: CUDA context, CUDA graphs, NCCL buffers [mem].
CUDA_CONTEXT_BYTES = 1 * 2**30

# Storage precisions of weights and KV cache -> bytes per element.
# mxfp4: 4-bit values plus one 8-bit scale per 32 (OCP Microscaling Formats v1.0 spec, MXFP4 block size 32):
# 4.25 bits per weight, as gpt-oss's model card counts its MoE weights; a weight-only dtype
DTYPES = {"bf16": 2, "fp8": 1, "mxfp4": 4.25 / 8}


class ContextRangeWarning(UserWarning):
    """A context longer than the model's ``max_positions``: the time is extrapolated."""


def _smooth_max(a, b, sharpness):
    m = np.maximum(a, b)
    safe = np.where(m > 0, m, 1.0)
    return np.where(m > 0, m * ((a / safe) ** sharpness + (b / safe) ** sharpness) ** (1.0 / sharpness), 0.0)


@dataclass(frozen=True)
class PerfModel:
    """Iteration-time and memory model of one instance: ``model`` on ``tp`` GPUs of type ``gpu``.

    Args:
        model: a :class:`ModelSpec` or a model name (see :func:`smetric.hardware.models.model_names`).
        gpu: a :class:`GPUSpec` or a GPU name (see :func:`smetric.hardware.gpus.gpu_names`).
        tp: tensor-parallel degree.
        efficiency: achieved-vs-peak parameters; ``None`` = the calibrated ones for ``gpu``.
        max_batched_tokens: token budget of an iteration; sizes the activation memory reserve.
        weight_dtype: ``bf16`` or ``fp8`` storage (and GEMM precision) of the linear layers' weights.
        kv_dtype: ``bf16`` or ``fp8`` storage of the KV cache.
        attention: prefill-attention calibration of Hopper GPUs when ``efficiency`` is None
            (:data:`~smetric.hardware.efficiency.ATTENTION_CALIBRATIONS`; ``fa3`` = FlashAttention-3 fit).
    """

    model: ModelSpec | str
    gpu: GPUSpec | str
    tp: int = 1
    efficiency: Efficiency | None = None
    max_batched_tokens: int = 8192
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    attention: str = "fa3"
    _terms: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        model, gpu = get_model(self.model), get_gpu(self.gpu)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "gpu", gpu)
        if self.efficiency is None:
            object.__setattr__(self, "efficiency", efficiency_for(gpu.name, attention=self.attention))
        elif self.attention != "fa3":
            raise ValueError(f"attention={self.attention!r} selects a calibration; "
                             "it cannot apply to an explicit efficiency")
        tp = self.tp
        if not isinstance(tp, (int, np.integer)) or tp < 1:
            raise ValueError(f"tp must be a positive integer, got {tp!r}")
        if model.heads % tp:
            raise ValueError(f"tp={tp} does not divide the {model.heads} query heads of {model.name}")
        if model.kv_heads % tp and tp % model.kv_heads:
            raise ValueError(f"tp={tp} neither divides nor is a multiple of the {model.kv_heads} KV heads "
                             f"of {model.name}")
        if self.max_batched_tokens < 1:
            raise ValueError(f"max_batched_tokens must be >= 1, got {self.max_batched_tokens}")
        for name in ("weight_dtype", "kv_dtype"):
            if getattr(self, name) not in DTYPES:
                raise ValueError(f"{name} must be one of {sorted(DTYPES)}, got {getattr(self, name)!r}")
        if self.kv_dtype == "mxfp4":
            raise ValueError("kv_dtype 'mxfp4' is a weight-only format; use bf16 or fp8")
        object.__setattr__(self, "_terms", self._fold_terms())

    # ---------------------------------------------------------------- sizes
    @property
    def kv_bytes_per_token(self) -> int:
        """KV bytes of one token of context for the whole model (all layers, K and V, in ``kv_dtype``)."""
        return self.model.kv_bytes_per_token * DTYPES[self.kv_dtype] // BYTES_BF16

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV bytes one token occupies on each GPU (KV heads split by TP, replicated beyond them)."""
        return self.kv_bytes_per_token * max(1.0 / self.tp, 1.0 / self.model.kv_heads)

    def _layer_weight_bytes(self) -> tuple[float, float]:
        """Bytes of one layer's dense weights (attention, norms, dense MLP or MoE router) and of its routed experts."""
        m, wb = self.model, DTYPES[self.weight_dtype]
        experts = m.expert_params * wb
        if self.weight_dtype == "mxfp4":  # experts only
            wb = BYTES_BF16
        mlp_rest = m.mlp_params - m.expert_params  # the whole MLP of a dense model, the router of an MoE one
        dense = m.attn_params * wb + m.norm_params * BYTES_BF16 + mlp_rest * (BYTES_BF16 if m.is_moe else wb)
        return float(dense), float(experts)

    @property
    def weight_bytes_per_gpu(self) -> float:
        """Weight bytes held by each GPU (``weight_dtype`` linear layers, bf16 rest; split evenly by TP)."""
        dense, experts = self._layer_weight_bytes()
        return (self.model.layers * (dense + experts) + self.model.embedding_params * BYTES_BF16) / self.tp

    @property
    def activation_reserve_bytes(self) -> float:
        """Per-GPU memory kept for activations and runtime buffers.

        Peak activations of one layer for ``max_batched_tokens`` tokens (hidden states in and out,
        Q/K/V, the MLP's gate/up output and its activation, bf16) plus :data:`CUDA_CONTEXT_BYTES`.
        """
        m, tp = self.model, self.tp
        inter = m.ffn if not m.is_moe else m.active_experts * m.expert_ffn
        width = 2 * m.hidden + (m.q_dim + 2 * m.kv_dim) / tp + 3 * inter / tp
        return self.max_batched_tokens * BYTES_BF16 * width + CUDA_CONTEXT_BYTES

    def kv_capacity_tokens(self, mem_util: float = 0.9) -> int:
        """Tokens of KV cache the instance holds: ``(mem * util - weights - activations) / kv_per_token`` per GPU."""
        if not 0.0 < mem_util <= 1.0:
            raise ValueError(f"mem_util must be in (0, 1], got {mem_util}")
        free = self.gpu.mem_bytes * mem_util - self.weight_bytes_per_gpu - self.activation_reserve_bytes
        if free <= 0:
            raise ValueError(
                f"{self.model.name} does not fit on {self.tp} x {self.gpu.name} at mem_util={mem_util}: "
                f"{self.weight_bytes_per_gpu / 2**30:.1f} GiB weights + "
                f"{self.activation_reserve_bytes / 2**30:.1f} GiB activations per GPU "
                f"> {self.gpu.mem_bytes * mem_util / 2**30:.1f} GiB")
        return int(free // self.kv_bytes_per_token_per_gpu)

    @property
    def l_eq(self) -> float:
        """Context length at which a token's attention FLOPs equal its linear FLOPs (see ``ModelSpec.l_eq``)."""
        return self.model.l_eq

    def kv_transfer_time(self, tokens: float, bytes_per_s: float, latency: float = 0.0) -> float:
        """Seconds to move the KV of ``tokens`` tokens over a link of ``bytes_per_s`` with a fixed ``latency``."""
        if tokens < 0 or bytes_per_s <= 0 or latency < 0:
            raise ValueError(f"need tokens >= 0, bytes_per_s > 0, latency >= 0; got {tokens}, {bytes_per_s}, {latency}")
        return latency + tokens * self.kv_bytes_per_token / bytes_per_s

    # ---------------------------------------------------------------- physics
    def _fold_terms(self) -> dict:
        """Per-iteration coefficients of every term (all layers, one TP group)."""
        m, g, e, tp = self.model, self.gpu, self.efficiency, self.tp
        L = m.layers
        dense_bytes, expert_bytes = self._layer_weight_bytes()
        inter = m.ffn if not m.is_moe else m.active_experts * m.expert_ffn
        expert_active = m.active_experts * m.expert_params / m.experts if m.is_moe else 0.0  # per token per layer
        stream = e.eta_weights * g.mem_bw
        peak = e.eta_compute * g.bf16_flops
        gemm_peak = e.eta_compute * g.fp8_flops if self.weight_dtype == "fp8" and g.has_fp8 else peak
        allreduce_bytes = 2 * (tp - 1) / tp * m.hidden * BYTES_BF16  # ring, per token per all-reduce
        return {
            "lin_mem": L * dense_bytes / tp / stream,
            "moe_mem": L * expert_bytes / tp / stream,
            "moe_frac": m.active_experts / m.experts if m.is_moe else 0.0,
            "moe_per_token": 2.0 * expert_active / tp / (gemm_peak * e.moe_gemm_eff),  # one layer's experts
            "lin_per_token": 2.0 * (m.active_layer_params + (1.0 / e.moe_gemm_eff - 1.0) * L * expert_active)
                             / tp / gemm_peak,
            "ramp_tokens": e.ramp_tokens,
            "sharpness": e.roof_sharpness,
            "elem_per_token": L * (e.elem_bytes_hidden * m.hidden + e.elem_bytes_ffn * inter / tp) / g.mem_bw,
            "allreduce_per_token": 2 * L * allreduce_bytes / (e.eta_link * g.tp_link_bw) if tp > 1 else 0.0,
            "layer_floor": L * e.layer_floor_s,
            "allreduce_latency": 2 * L * e.allreduce_latency_s if tp > 1 else 0.0,
            "attn_floor": L * e.attn_floor_s,
            "lm_head_mem": m.lm_head_params * BYTES_BF16 / tp / stream,
            "lm_head_per_seq": 2.0 * m.lm_head_params / tp / peak,
            "attn_prefill": m.attn_flops_per_token_ctx / tp / (e.eta_attn * g.bf16_flops),
            "attn_prefill_token": L * e.attn_token_s,
            "attn_decode": self.kv_bytes_per_token_per_gpu / (e.eta_kv * g.mem_bw),
            "decode_mixed_factor": e.decode_mixed_factor,
            "decode_seq": L * e.decode_seq_s,
            "overhead": e.iteration_overhead_s,
        }

    def breakdown(self, n_tokens, prefill_attn=0.0, decode_ctx=0.0, n_decode=0) -> dict:
        """Seconds of each part of one iteration (numpy-vectorised over the four kernel arguments).

        Keys: ``overhead`` (CPU), ``linear`` (per-layer floors, weights-vs-GEMM roofline, element-wise
        ops: what an operator profile of the non-attention layers measures), ``allreduce`` (TP, with
        latency), ``lm_head``, ``attention`` (floors, prefill FLOPs and per-token cost, decode KV reads
        and per-sequence cost). All zero for ``n_tokens <= 0`` (an empty iteration).
        """
        t = self._terms
        n = np.asarray(n_tokens, dtype=float)
        n_dec = np.asarray(n_decode, dtype=float)
        attn_work = np.asarray(prefill_attn, dtype=float)
        weights = t["lin_mem"] + t["moe_mem"] * (1.0 - (1.0 - t["moe_frac"]) ** n)
        gemm = t["lin_per_token"] * (n + t["ramp_tokens"])
        decode_read = t["attn_decode"] * np.asarray(decode_ctx, dtype=float)
        parts = {
            "overhead": np.full_like(n, t["overhead"]),
            "linear": t["layer_floor"] + _smooth_max(weights, gemm, t["sharpness"]) + t["elem_per_token"] * n,
            "allreduce": t["allreduce_latency"] + t["allreduce_per_token"] * n,
            "lm_head": t["lm_head_mem"] + t["lm_head_per_seq"] * n_dec,
            "attention": (t["attn_floor"] + t["attn_prefill"] * attn_work + t["attn_prefill_token"] * (n - n_dec)
                          + np.where(attn_work > 0, t["decode_mixed_factor"], 1.0) * decode_read
                          + t["decode_seq"] * n_dec),
        }
        return {k: np.where(n > 0, v, 0.0) for k, v in parts.items()}

    def coefficients(self) -> np.ndarray:
        """The float64 coefficient vector of :mod:`smetric.hardware.kernel` for this instance."""
        t = self._terms
        c = np.zeros(N_COEF)
        c[C_OVERHEAD] = t["overhead"] + t["layer_floor"] + t["attn_floor"] + t["allreduce_latency"] + t["lm_head_mem"]
        c[C_LIN_MEM] = t["lin_mem"]
        c[C_LIN_PER_TOKEN] = t["lin_per_token"]
        c[C_ATTN_PREFILL] = t["attn_prefill"]
        c[C_ATTN_DECODE] = t["attn_decode"]
        c[C_PER_DECODE] = t["decode_seq"] + t["lm_head_per_seq"]
        c[C_ALLREDUCE_PER_TOKEN] = t["allreduce_per_token"]
        c[C_HALF_EFF_TOKENS] = t["ramp_tokens"]
        c[C_MOE_EXPERT_FRAC] = t["moe_frac"]
        c[C_MOE_MEM] = t["moe_mem"]
        c[C_ELEM_PER_TOKEN] = t["elem_per_token"]
        c[C_ROOF_SHARPNESS] = t["sharpness"]
        c[C_ATTN_PREFILL_TOKEN] = t["attn_prefill_token"]
        c[C_DECODE_MIXED_FACTOR] = t["decode_mixed_factor"]
        return c

    # ---------------------------------------------------------------- public timing API
    def _check_context(self, context: float) -> None:
        if context > self.model.max_positions:
            warnings.warn(f"context {context:.0f} exceeds {self.model.name}'s max_positions "
                          f"{self.model.max_positions}; the time is extrapolated", ContextRangeWarning, stacklevel=3)

    def iteration_time(self, prefill=(), decode=()) -> float:
        """Seconds of one iteration running prefill chunks ``[(new, cached), ...]`` and decode contexts
        ``[ctx, ...]``."""
        n_tokens, attn = 0.0, 0.0
        for new, cached in prefill:
            if new < 1 or cached < 0:
                raise ValueError(f"prefill chunk needs new >= 1 and cached >= 0, got ({new}, {cached})")
            self._check_context(new + cached)
            n_tokens += new
            attn += prefill_attn_work(float(new), float(cached))
        decode = [float(c) for c in decode]
        for ctx in decode:
            if ctx < 0:
                raise ValueError(f"decode context must be >= 0, got {ctx}")
            self._check_context(ctx)
        n_tokens += len(decode)
        parts = self.breakdown(n_tokens, attn, sum(decode), len(decode))
        return float(sum(parts.values()))

    def prefill_time(self, new: int, cached: int = 0) -> float:
        """Seconds to prefill ``new`` tokens over ``cached`` already-cached ones in one iteration."""
        return self.iteration_time(prefill=[(new, cached)])

    def decode_time(self, contexts) -> float:
        """Seconds of one decode step of sequences with the given context lengths."""
        contexts = list(contexts)
        if not contexts:
            raise ValueError("decode_time needs at least one context")
        return self.iteration_time(decode=contexts)

    def linear_time(self, num_tokens) -> float | np.ndarray:
        """Seconds of the transformer layers' non-attention part for ``num_tokens`` tokens.

        The ``linear`` and ``allreduce`` parts of :meth:`breakdown` (no LM head, attention or CPU overhead).
        """
        parts = self.breakdown(num_tokens)
        out = parts["linear"] + parts["allreduce"]
        return float(out) if np.ndim(out) == 0 else out

    def moe_block_time(self, n_tokens, activated) -> np.ndarray:
        """Seconds of one layer's routed experts for ``n_tokens`` tokens spread over ``activated`` distinct experts
        (an MoE block profile's inputs): the smooth roofline of reading those experts' weights and of their GEMMs
        at ``moe_gemm_eff`` of the dense rate (the terms :meth:`breakdown` folds into its ``linear`` part)."""
        m, t = self.model, self._terms
        if not m.is_moe:
            raise ValueError(f"{m.name} has no routed experts")
        weights = t["moe_mem"] / m.layers * np.asarray(activated, dtype=float) / m.experts
        gemm = t["moe_per_token"] * (np.asarray(n_tokens, dtype=float) + t["ramp_tokens"])
        return _smooth_max(weights, gemm, t["sharpness"])

    def prefill_rate(self, chunk: int = 2048) -> float:
        """Prefill tokens per second of one instance on uncached chunks of ``chunk`` tokens."""
        return chunk / self.prefill_time(chunk, 0)
