"""numba form of the performance model: a coefficient vector and ``@njit`` iteration-time functions.

This is the contract between :mod:`smetric.hardware` (which fits and builds the coefficients,
see ``PerfModel.coefficients()``) and the cluster engine (which only calls these functions).

An engine iteration is summarised by four numbers:

* ``n_tokens``      -- tokens run through the linear layers (prefill chunk tokens + one per decode sequence);
* ``prefill_attn``  -- sum over prefill chunks of ``c * (p + c / 2)`` (c new tokens over p already-cached ones);
* ``decode_ctx``    -- sum of the context lengths of the decode sequences (KV read by decode attention);
* ``n_decode``      -- number of decode sequences.

All coefficients are totals over the model's layers for one TP group (seconds unless noted):

    t = overhead + smoothmax(weights, gemm) + (elementwise + all-reduce) * n_tokens
        + attn_prefill * prefill_attn + attn_prefill_token * (n_tokens - n_decode)
        + attn_decode * decode_ctx * (decode_mixed_factor if prefill_attn > 0 else 1) + per_decode * n_decode

with ``weights = lin_mem + moe_mem * (1 - (1 - moe_frac) ** n_tokens)`` (MoE experts touched by the
batch), ``gemm = lin_per_token * (n_tokens + half_eff_tokens)`` and
``smoothmax(a, b) = (a**s + b**s) ** (1/s)`` with ``s = roof_sharpness``.
Prefill attention is modelled as compute-bound; a tiny chunk over a long cached prefix (which is
bound by reading that prefix's KV, or on small GPUs by too few thread blocks) is under-estimated.
``decode_mixed_factor`` is the slowdown of decode attention when the batch also holds a prefill chunk
(one varlen kernel for both instead of a dedicated decode kernel).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module

# Coefficient layout. PerfModel.coefficients() fills it.
C_OVERHEAD = 0        # fixed per-iteration time: CPU overhead, kernel floors, all-reduce latency, LM-head weights
C_LIN_MEM = 1         # time to stream the dense (non-expert) layer weights once
C_LIN_PER_TOKEN = 2   # GEMM time per token at the asymptotic compute efficiency
C_ATTN_PREFILL = 3    # seconds per unit of prefill_attn (token^2)
C_ATTN_DECODE = 4     # seconds per context token read by decode attention
C_PER_DECODE = 5      # per decode-sequence cost (attention setup, LM-head GEMM row)
C_ALLREDUCE_PER_TOKEN = 6  # TP all-reduce seconds per token (0 at TP 1)
C_HALF_EFF_TOKENS = 7  # tokens at which GEMM efficiency reaches half its asymptote (ramp)
C_MOE_EXPERT_FRAC = 8  # MoE: fraction of expert weights one token touches (active/total experts); 0 = dense
C_MOE_MEM = 9          # MoE: time to stream all routed-expert weights once
C_ELEM_PER_TOKEN = 10  # element-wise ops (norms, residual, rope, activation) seconds per token
C_ROOF_SHARPNESS = 11  # exponent of the smooth roofline max (>= 1)
C_ATTN_PREFILL_TOKEN = 12  # attention seconds per prefill-chunk token (per-query work besides the c*(p+c/2) term)
C_DECODE_MIXED_FACTOR = 13  # multiplier of the decode KV-read time in batches that also run a prefill chunk
N_COEF = 14


@njit(cache=True)
def smooth_max(a, b, sharpness):
    """``(a**s + b**s) ** (1/s)`` for ``a, b >= 0`` without overflow; tends to ``max(a, b)`` as ``s`` grows."""
    m = max(a, b)
    if m <= 0.0:
        return 0.0
    return m * ((a / m) ** sharpness + (b / m) ** sharpness) ** (1.0 / sharpness)


@njit(cache=True)
def linear_time_nb(coef, n_tokens):
    """Linear-layer time for ``n_tokens`` tokens: smooth roofline of weight streaming vs GEMM compute."""
    if n_tokens <= 0:
        return 0.0
    mem = coef[C_LIN_MEM]
    if coef[C_MOE_EXPERT_FRAC] > 0.0:
        # expected fraction of experts touched when each of n_tokens tokens picks a fraction f of them
        touched = 1.0 - (1.0 - coef[C_MOE_EXPERT_FRAC]) ** n_tokens
        mem += coef[C_MOE_MEM] * touched
    compute = coef[C_LIN_PER_TOKEN] * (n_tokens + coef[C_HALF_EFF_TOKENS])
    per_token = coef[C_ELEM_PER_TOKEN] + coef[C_ALLREDUCE_PER_TOKEN]
    return smooth_max(mem, compute, coef[C_ROOF_SHARPNESS]) + per_token * n_tokens


@njit(cache=True)
def iteration_time_nb(coef, n_tokens, prefill_attn, decode_ctx, n_decode):
    """Seconds for one engine iteration (see the module docstring for the arguments)."""
    if n_tokens <= 0:
        return 0.0
    decode_read = coef[C_ATTN_DECODE] * decode_ctx
    if prefill_attn > 0.0:
        decode_read *= coef[C_DECODE_MIXED_FACTOR]
    return (coef[C_OVERHEAD] + linear_time_nb(coef, n_tokens)
            + coef[C_ATTN_PREFILL] * prefill_attn + coef[C_ATTN_PREFILL_TOKEN] * (n_tokens - n_decode)
            + decode_read + coef[C_PER_DECODE] * n_decode)


@njit(cache=True)
def prefill_attn_work(new_tokens, cached_tokens):
    """The ``prefill_attn`` term of one chunk: ``c * (p + c / 2)``."""
    return new_tokens * (cached_tokens + 0.5 * new_tokens)


@njit(cache=True)
def prefill_time_nb(coef, new_tokens, cached_tokens):
    """Time of a lone prefill of ``new_tokens`` over ``cached_tokens`` in one iteration."""
    return iteration_time_nb(coef, new_tokens, prefill_attn_work(new_tokens, cached_tokens), 0.0, 0)


def example_coefficients() -> np.ndarray:
    """Rough uncalibrated coefficients (an 8B dense model on one A100) for tests of code that only needs *a* model."""
    c = np.zeros(N_COEF)
    c[C_OVERHEAD] = 2e-3
    c[C_LIN_MEM] = 16e9 / 2.0e12
    c[C_LIN_PER_TOKEN] = 2 * 8e9 / (312e12 * 0.7)
    c[C_ATTN_PREFILL] = 4 * 32 * 4096 / (312e12 * 0.5)
    c[C_ATTN_DECODE] = 131072 / 2.0e12
    c[C_PER_DECODE] = 1e-5
    c[C_HALF_EFF_TOKENS] = 64.0
    c[C_ROOF_SHARPNESS] = 8.0
    c[C_DECODE_MIXED_FACTOR] = 1.0
    return c


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
