"""The ideal bound: the TPS a cluster could reach on a workload if no policy ever had to trade reuse for balance.

Assumptions (each makes the bound looser, never tighter):

* every instance is busy all the time and work splits perfectly over them (perfect balance);
* every reusable prompt token hits: the longest prefix of the prompt seen in any earlier request
  (``smetric.workload.prefix_reuse``'s infinite-cache rule), or at least the tokens the previous
  turn of the session sent (its prompt and reply), whichever is longer; the *intra-session* bound
  credits only earlier requests of the same session (and the history);
* batches are infinitely large: the per-iteration overhead and weight streaming are amortised to
  nothing, so linear layers cost their GEMM time at asymptotic efficiency (plus element-wise and
  all-reduce time) per token, attention its FLOP/KV-read time, and decode attention runs at its
  dedicated-kernel rate (never slowed by sharing a batch with a prefill chunk);
* the first output token comes from the prefill iteration; each further one is a decode step.

``tps = (input + output tokens) / (GPU-seconds of work / n_instances)``: the same token count as the
simulator's goodput TPS, so ``goodput / tps`` is the fraction of the headroom a policy reaches.
``offered_tps`` is the workload's own token rate (tokens / duration): at a given load no policy can
exceed ``min(tps, offered_tps)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..hardware.kernel import (
    C_ALLREDUCE_PER_TOKEN,
    C_ATTN_DECODE,
    C_ATTN_PREFILL,
    C_ATTN_PREFILL_TOKEN,
    C_ELEM_PER_TOKEN,
    C_LIN_PER_TOKEN,
    C_PER_DECODE,
    N_COEF,
)
from ..workload.characterize import prefix_reuse
from ..workload.core import Workload

__all__ = ["IdealBound", "ideal_bound", "work_seconds"]


@dataclass(frozen=True)
class IdealBound:
    """Upper bounds on cluster TPS for one workload and cluster size (see the module docstring)."""

    tps: float                     # all reuse (cross- and intra-session) hits
    tps_intra_session: float       # only intra-session reuse hits
    tps_no_reuse: float            # nothing hits
    offered_tps: float             # tokens / workload duration (inf for a zero-length trace)
    reuse_ratio: float             # reusable prompt tokens / prompt tokens
    intra_session_reuse_ratio: float
    n_instances: int

    def to_dict(self) -> dict:
        """The fields as a flat dict (one row of a results table)."""
        return asdict(self)


def _coefficients(perf) -> np.ndarray:
    coef = perf.coefficients() if hasattr(perf, "coefficients") else np.asarray(perf, dtype=np.float64)
    if coef.shape != (N_COEF,):
        raise ValueError(f"perf must be a PerfModel or a coefficient vector of length {N_COEF}, got shape {coef.shape}")
    if not np.all(np.isfinite(coef)) or np.any(coef < 0):
        raise ValueError("perf coefficients must be finite and non-negative")
    return coef


def work_seconds(workload: Workload, hit_tokens: np.ndarray, perf) -> float:
    """GPU-seconds of work for ``workload`` with ``hit_tokens`` cached per request, under the ideal-batching
    assumptions of the module docstring. ``perf``: a ``PerfModel`` or its coefficient vector."""
    coef = _coefficients(perf)
    hit = np.asarray(hit_tokens, dtype=np.float64)
    prompt = workload.input_len.astype(np.float64)
    if hit.shape != prompt.shape or np.any(hit < 0) or np.any(hit > prompt):
        raise ValueError("hit_tokens must have one value per request, between 0 and the request's input_len")
    new = prompt - hit
    steps = np.maximum(workload.output_len.astype(np.float64) - 1.0, 0.0)
    per_token = coef[C_LIN_PER_TOKEN] + coef[C_ELEM_PER_TOKEN] + coef[C_ALLREDUCE_PER_TOKEN]
    prefill = (per_token + coef[C_ATTN_PREFILL_TOKEN]) * new + coef[C_ATTN_PREFILL] * new * (hit + 0.5 * new)
    # decode step k (1..o-1) reads a context of L + k tokens
    decode_ctx = steps * prompt + steps * (steps + 1.0) / 2.0
    decode = ((per_token + coef[C_PER_DECODE]) * steps
              + coef[C_ATTN_DECODE] * decode_ctx)
    return float(prefill.sum() + decode.sum())


def ideal_bound(workload: Workload, perf, n_instances: int) -> IdealBound:
    """TPS bounds of ``workload`` on ``n_instances`` instances whose iteration time is ``perf``
    (a ``smetric.hardware.PerfModel`` or its coefficient vector)."""
    if not isinstance(n_instances, (int, np.integer)) or n_instances < 1:
        raise ValueError(f"n_instances must be a positive integer, got {n_instances!r}")
    if len(workload) == 0:
        raise ValueError("ideal_bound needs a workload with at least one request")
    reuse = prefix_reuse(workload)
    history = workload.history_tokens()
    prompt = workload.input_len
    hits = np.minimum(np.maximum(reuse["hit_tokens"].to_numpy(), history), prompt)
    intra = np.minimum(np.maximum(reuse["session_hit_tokens"].to_numpy(), history), prompt)
    tokens = float(prompt.sum() + workload.output_len.sum())

    def tps(hit):
        work = work_seconds(workload, hit, perf)
        return np.inf if work == 0 else tokens * n_instances / work

    duration = workload.duration
    return IdealBound(
        tps=tps(hits), tps_intra_session=tps(intra), tps_no_reuse=tps(np.zeros(len(workload))),
        offered_tps=tokens / duration if duration > 0 else np.inf,
        reuse_ratio=float(hits.sum() / max(prompt.sum(), 1)),
        intra_session_reuse_ratio=float(intra.sum() / max(prompt.sum(), 1)),
        n_instances=int(n_instances))
