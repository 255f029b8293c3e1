"""Workload characterization: prefix reuse (infinite cache, same-session, LRU), reuse distance, session skew.

The reuse rules (the ones the Mooncake FAST'25 trace statistics are usually computed with; they reproduce
the published 37.4 % / 65.1 % prefix reuse of its conversation / synthetic traces):

* requests are processed in arrival order (a :class:`Workload` is already sorted, ties by row);
* a request hits the longest leading run of its chained block ids seen in an earlier request;
  hit tokens are ``min(matched_blocks * block_size, input_len)``;
* the **same-session** variant matches only against earlier requests of the same session;
* **LRU(C)** keeps at most ``C`` blocks; the lookup stops at the first missing block, then every
  block of the request is touched (inserted) in prompt order, evicting the least recently used;
* the **reuse distance** of a request is the time since its deepest matched block was last
  touched (by any request).

:func:`prefix_reuse` gives these per request; :func:`characterize` summarises a workload into one
flat :class:`pandas.Series`; :func:`session_token_lorenz` gives the session-skew curve.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numba import njit, types
from numba.typed import Dict

from ..numba_cache import refresh_module
from .core import Workload

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is built (start-up of the simulate path)
    import pandas as pd

__all__ = ["DEFAULT_LRU_BLOCKS", "characterize", "prefix_reuse", "session_token_lorenz", "session_tokens"]

DEFAULT_LRU_BLOCKS: tuple[int, ...] = (1_000, 4_000, 16_000, 64_000)
REUSE_WINDOW_S = 100.0  # the paper's "~90% of reuses recur within ~100 s"


# ---------------------------------------------------------------------------- numba kernels
@njit(cache=True)
def _infinite_cache_reuse(ids, offsets, session, arrival, n_ids):
    """Per request: blocks matched against any earlier request, against earlier requests of the
    same session, and the time since the deepest globally matched block was last touched."""
    n = len(offsets) - 1
    matched = np.zeros(n, dtype=np.int64)
    session_matched = np.zeros(n, dtype=np.int64)
    distance = np.full(n, np.nan)
    last_touch = np.full(n_ids, -np.inf)
    owner = np.full(n_ids, -1, dtype=np.int64)      # first session that touched the block
    shared = np.zeros(n_ids, dtype=np.bool_)        # touched by more than one session
    seen_by = Dict.empty(key_type=types.int64, value_type=types.boolean)  # session*n_ids+id, shared ids only
    for i in range(n):
        s = session[i]
        t = arrival[i]
        lo, hi = offsets[i], offsets[i + 1]
        g = 0
        while lo + g < hi and last_touch[ids[lo + g]] > -np.inf:
            g += 1
        m = 0
        while lo + m < hi:
            b = ids[lo + m]
            if shared[b]:
                if (s * n_ids + b) not in seen_by:
                    break
            elif owner[b] != s:
                break
            m += 1
        matched[i] = g
        session_matched[i] = m
        if g > 0:
            distance[i] = t - last_touch[ids[lo + g - 1]]
        for j in range(lo, hi):
            b = ids[j]
            last_touch[b] = t
            if owner[b] == -1:
                owner[b] = s
            elif owner[b] != s or shared[b]:
                if not shared[b]:
                    shared[b] = True
                    seen_by[owner[b] * n_ids + b] = True
                seen_by[s * n_ids + b] = True
    return matched, session_matched, distance


@njit(cache=True)
def _lru_reuse(ids, offsets, n_ids, capacity):
    """Per request: leading blocks found in an LRU cache of ``capacity`` blocks (doubly linked list)."""
    n = len(offsets) - 1
    matched = np.zeros(n, dtype=np.int64)
    prev = np.full(n_ids, -1, dtype=np.int64)
    nxt = np.full(n_ids, -1, dtype=np.int64)
    cached = np.zeros(n_ids, dtype=np.bool_)
    head = -1  # least recently used
    tail = -1  # most recently used
    size = 0
    for i in range(n):
        lo, hi = offsets[i], offsets[i + 1]
        m = 0
        while lo + m < hi and cached[ids[lo + m]]:
            m += 1
        matched[i] = m
        for j in range(lo, hi):
            b = ids[j]
            if cached[b]:
                if b == tail:
                    continue
                p, q = prev[b], nxt[b]   # unlink (b is not the tail, so q != -1)
                if p == -1:
                    head = q
                else:
                    nxt[p] = q
                prev[q] = p
            else:
                cached[b] = True
                size += 1
            prev[b] = tail              # append as most recent
            nxt[b] = -1
            if tail == -1:
                head = b
            else:
                nxt[tail] = b
            tail = b
            if size > capacity:         # evict the least recently used
                old = head
                head = nxt[old]
                prev[head] = -1
                cached[old] = False
                nxt[old] = -1
                size -= 1
    return matched


# ---------------------------------------------------------------------------- per-request reuse
def _dense_ids(block_ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Block ids as dense indices ``0..n_ids-1`` (kept as-is when already small and non-negative)."""
    if len(block_ids) == 0:
        return block_ids, 0
    lo, hi = int(block_ids.min()), int(block_ids.max())
    if lo >= 0 and hi < 2 * len(block_ids) + 1024:
        return block_ids, hi + 1
    uniq, inverse = np.unique(block_ids, return_inverse=True)
    return inverse.astype(np.int64), len(uniq)


def prefix_reuse(workload: Workload, lru_blocks: Sequence[int] = ()) -> pd.DataFrame:
    """Per-request prefix reuse of ``workload`` (rules in the module docstring).

    Columns: ``hit_tokens`` (infinite cache, any earlier request), ``session_hit_tokens`` (earlier
    requests of the same session), ``matched_blocks``, ``reuse_distance`` (s; NaN without a hit),
    and ``lru_hit_tokens_<C>`` for each capacity ``C`` (in blocks) of ``lru_blocks``.
    """
    import pandas as pd

    caps = [int(c) for c in lru_blocks]
    if any(c <= 0 for c in caps):
        raise ValueError(f"lru_blocks must be positive block counts, got {tuple(lru_blocks)}")
    ids, n_ids = _dense_ids(workload.block_ids)
    offsets = workload.block_offsets
    _, session = np.unique(workload.session, return_inverse=True)
    matched, session_matched, distance = _infinite_cache_reuse(
        ids, offsets, session.astype(np.int64), workload.arrival, n_ids)
    bs, inp = workload.block_size, workload.input_len
    out = {
        "hit_tokens": np.minimum(matched * bs, inp),
        "session_hit_tokens": np.minimum(session_matched * bs, inp),
        "matched_blocks": matched,
        "reuse_distance": distance,
    }
    for cap in caps:
        out[f"lru_hit_tokens_{cap}"] = np.minimum(_lru_reuse(ids, offsets, n_ids, cap) * bs, inp)
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------- sessions
def session_tokens(workload: Workload) -> np.ndarray:
    """Tokens (input + output, summed over its requests) of every session, in session-id order."""
    _, session = np.unique(workload.session, return_inverse=True)
    return np.bincount(session, weights=workload.input_len + workload.output_len).astype(np.int64)


def session_token_lorenz(workload: Workload, n_points: int = 101) -> pd.DataFrame:
    """Share of all tokens carried by the top ``session_share`` of sessions (largest first).

    Returns ``n_points`` rows with columns ``session_share`` (0..1) and ``token_share`` (0..1).
    """
    import pandas as pd

    tokens = np.sort(session_tokens(workload))[::-1]
    cum = np.concatenate([[0.0], np.cumsum(tokens) / max(tokens.sum(), 1)])
    x = np.linspace(0.0, 1.0, n_points)
    return pd.DataFrame({"session_share": x, "token_share": np.interp(x * len(tokens), np.arange(len(cum)), cum)})


def _top_share(tokens: np.ndarray, fraction: float) -> float:
    top = np.sort(tokens)[::-1][: int(np.ceil(fraction * len(tokens)))]
    return float(top.sum() / tokens.sum()) if tokens.sum() else float("nan")


def _ratio(num, den) -> float:
    den = float(np.sum(den))
    return float(np.sum(num)) / den if den else float("nan")


def _percentiles(prefix: str, values: np.ndarray, qs=(50, 90, 99)) -> dict[str, float]:
    out = {f"{prefix}_mean": float(np.mean(values)) if len(values) else float("nan")}
    for q in qs:
        out[f"{prefix}_p{q}"] = float(np.percentile(values, q)) if len(values) else float("nan")
    return out


# ---------------------------------------------------------------------------- summary
def characterize(
    workload: Workload,
    lru_blocks: Sequence[int] = DEFAULT_LRU_BLOCKS,
    min_match_blocks: int = 2,
    reuse: pd.DataFrame | None = None,
) -> pd.Series:
    """Summary statistics of ``workload`` as one flat Series (index = statistic, name = workload name).

    Reuse ratios are token-weighted (hit tokens over input tokens). ``intra_session_reuse_share`` is
    same-session reuse over global reuse; ``first_turn_reuse_ratio`` is the reuse of turn-0 requests.
    Reuse-distance statistics cover requests matching at least ``min_match_blocks`` blocks
    (``reuse_within_100s`` is the fraction of them within 100 s). ``top25_session_token_share`` is
    the share of input + output tokens carried by the largest 25% of sessions. ``turns_*`` are
    requests per session; ``follow_up_share`` is the share of requests that are not a session's
    first turn (Bailian's follow-up share: requests with a parent). ``input_*``/``output_*`` are
    prompt and reply lengths (tokens). Pass a precomputed
    :func:`prefix_reuse` frame (with the same ``lru_blocks``) as ``reuse`` to avoid recomputing it.
    """
    import pandas as pd

    if min_match_blocks < 1:
        raise ValueError(f"min_match_blocks must be >= 1, got {min_match_blocks}")
    if len(workload) == 0:
        raise ValueError("cannot characterize an empty workload")
    if reuse is None:
        reuse = prefix_reuse(workload, lru_blocks)
    missing = [f"lru_hit_tokens_{int(c)}" for c in lru_blocks if f"lru_hit_tokens_{int(c)}" not in reuse]
    if len(reuse) != len(workload) or missing:
        raise ValueError(f"the reuse frame does not belong to this workload or lacks {missing}: "
                         f"compute it with prefix_reuse(workload, lru_blocks)")
    inp, out, turn = workload.input_len, workload.output_len, workload.turn
    hit, session_hit = reuse["hit_tokens"].to_numpy(), reuse["session_hit_tokens"].to_numpy()
    first = turn == 0
    stats: dict[str, float] = {
        "n_requests": len(workload),
        "n_sessions": workload.n_sessions,
        "duration_s": workload.duration,
        "requests_per_minute": 60.0 * len(workload) / workload.duration if workload.duration else float("nan"),
        "block_size": workload.block_size,
        "reuse_ratio": _ratio(hit, inp),
        "session_reuse_ratio": _ratio(session_hit, inp),
        "intra_session_reuse_share": _ratio(session_hit, hit),
        "first_turn_reuse_ratio": _ratio(hit[first], inp[first]),
        "followup_reuse_ratio": _ratio(hit[~first], inp[~first]),
    }
    for cap in lru_blocks:
        stats[f"lru_reuse_ratio_{int(cap)}"] = _ratio(reuse[f"lru_hit_tokens_{int(cap)}"].to_numpy(), inp)
    dist = reuse["reuse_distance"].to_numpy()[reuse["matched_blocks"].to_numpy() >= min_match_blocks]
    stats.update(_percentiles("reuse_distance", dist))
    stats["reuse_within_100s"] = float(np.mean(dist <= REUSE_WINDOW_S)) if len(dist) else float("nan")
    tokens = session_tokens(workload)
    stats["top25_session_token_share"] = _top_share(tokens, 0.25)
    _, turns = np.unique(workload.session, return_counts=True)
    stats.update(_percentiles("turns", turns))
    stats["turns_max"] = float(turns.max())
    stats["multi_turn_session_share"] = float(np.mean(turns > 1))
    stats["follow_up_share"] = float(np.mean(turn > 0))
    child = workload.parent >= 0
    stats.update(_percentiles("turn_interval", workload.arrival[child] - workload.arrival[workload.parent[child]]))
    stats.update(_percentiles("input", inp))
    stats.update(_percentiles("output", out))
    return pd.Series(stats, name=workload.name, dtype=float)


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
