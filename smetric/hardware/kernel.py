"""numba form of the performance model: a coefficient vector and ``@njit`` iteration-time functions.

This is the contract between :mod:`smetric.hardware` (which fits and builds the coefficients,
see ``PerfModel.coefficients()``) and the cluster engine (which only calls these functions).

An engine iteration is summarised by four numbers:

* ``n_tokens``      -- tokens run through the linear layers (prefill chunk tokens + one per decode sequence);
* ``prefill_attn``  -- sum over prefill chunks of ``c * (p + c / 2)`` (c new tokens over p already-cached ones);
* ``decode_ctx``    -- sum of the context lengths of the decode sequences (KV read by decode attention);
* ``n_decode``      -- number of decode sequences.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Coefficient layout (seconds unless noted). PerfModel.coefficients() fills it.
C_OVERHEAD = 0        # fixed per-iteration overhead (scheduling, launch, sampling)
C_LIN_MEM = 1         # time to stream the (dense) weights once: memory floor of the linear layers
C_LIN_PER_TOKEN = 2   # compute time per token through the linear layers at full efficiency
C_ATTN_PREFILL = 3    # seconds per unit of prefill_attn (token^2)
C_ATTN_DECODE = 4     # seconds per context token read by decode attention
C_PER_DECODE = 5      # per decode-sequence cost (sampling, bookkeeping)
C_ALLREDUCE_PER_TOKEN = 6  # TP all-reduce seconds per token (0 at TP 1)
C_HALF_EFF_TOKENS = 7  # tokens at which linear compute efficiency reaches half its peak (ramp)
C_MOE_EXPERT_FRAC = 8  # MoE: fraction of expert weights touched per token (active/total experts); 0 = dense
C_MOE_MEM = 9          # MoE: time to stream all expert weights once
N_COEF = 10


@njit(cache=True)
def linear_time_nb(coef, n_tokens):
    """Linear-layer time for ``n_tokens`` tokens: roofline of weight streaming vs compute."""
    if n_tokens <= 0:
        return 0.0
    # compute efficiency n / (n + n_half): time = per_token * n / eff = per_token * (n + n_half)
    compute = coef[C_LIN_PER_TOKEN] * (n_tokens + coef[C_HALF_EFF_TOKENS])
    mem = coef[C_LIN_MEM]
    if coef[C_MOE_EXPERT_FRAC] > 0.0:
        # expected fraction of experts touched by n_tokens tokens, each picking a fraction f
        touched = 1.0 - (1.0 - coef[C_MOE_EXPERT_FRAC]) ** n_tokens
        mem += coef[C_MOE_MEM] * touched
    return max(compute, mem) + coef[C_ALLREDUCE_PER_TOKEN] * n_tokens


@njit(cache=True)
def iteration_time_nb(coef, n_tokens, prefill_attn, decode_ctx, n_decode):
    """Seconds for one engine iteration (see the module docstring for the arguments)."""
    if n_tokens <= 0:
        return 0.0
    return (coef[C_OVERHEAD] + linear_time_nb(coef, n_tokens)
            + coef[C_ATTN_PREFILL] * prefill_attn + coef[C_ATTN_DECODE] * decode_ctx
            + coef[C_PER_DECODE] * n_decode)


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
    return c
