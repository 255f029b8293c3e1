"""Context growth and compaction: compaction as an explicit event, measured on real traces, and named
context variants of the synthetic presets.

A **compaction** is a follow-up whose prompt shrinks sharply against what its parent sent (prompt +
reply: the context it expected to extend) while its session goes on: ``input_len < SHRINK × (parent
input + output)`` and the row has a child of its own. The agent replaced its history by a summary; the
prefix it keeps from the parent (the system prompt and tools) stays cached. Its **threshold** is the
context before it (parent input + output), its **summary** the prompt after it beyond the kept prefix
(the chained block ids it shares with the parent). The first call of a fan-out branch (a sub-agent starts
from its own, shorter prompt) is not a compaction: rows whose parent spawned several children are left
out unless the others join them.

The synthetic generator compacts at ``max_context`` to ``compact_tokens`` (after the system prompt);
:data:`CONTEXT_VARIANTS` names settings of the two for ``with_overrides(config, **CONTEXT_VARIANTS[name])``:

- ``capped-14k``: ``bailian-coder``'s own (14,000, 800). An **assumption**: 14,000 is about the public
  Qwen-Bailian coder trace's p99 prompt (14,406), not a measured compaction.
- ``claude-measured``: threshold and summary measured on the Claude Code trace (``data/presets/compaction.json``:
  the medians of the compactions found there).
"""

from __future__ import annotations

import json

import numpy as np

from .core import Workload

__all__ = ["CONTEXT_VARIANTS", "SHRINK", "compaction_rows", "load_compaction", "measure_compaction",
           "workload_compactions"]

#: A follow-up is a compaction when its prompt is below this share of its parent's prompt + reply.
SHRINK = 0.5

#: Named (max_context, compact_tokens) settings of the synthetic generator (module docstring); the measured
#: one from ``data/presets/compaction.json`` (``tests/test_fanout_workload.py`` holds them equal).
CONTEXT_VARIANTS: dict[str, dict[str, int]] = {
    "capped-14k": {"max_context": 14_000, "compact_tokens": 800},
    "claude-measured": {"max_context": 152_150, "compact_tokens": 20_781},
}


def _kept_blocks(workload: Workload, rows: np.ndarray) -> np.ndarray:
    """Leading block ids each row shares with its parent."""
    out = np.zeros(len(rows), dtype=np.int64)
    for k, r in enumerate(rows):
        a, b = workload.blocks(r), workload.blocks(workload.parent[r])
        m = min(len(a), len(b))
        differ = np.flatnonzero(a[:m] != b[:m])
        out[k] = differ[0] if len(differ) else m
    return out


def compaction_rows(workload: Workload, shrink: float = SHRINK) -> np.ndarray:
    """Boolean mask of the rows that are compactions (module docstring)."""
    if not 0 < shrink < 1:
        raise ValueError(f"shrink must be in (0, 1), got {shrink!r}")
    n = len(workload)
    par = workload.parent
    child = par >= 0
    p = np.maximum(par, 0)
    children = np.bincount(par[child], minlength=n)
    joined = np.bincount(workload.join_to[workload.join_to >= 0], minlength=n) > 0
    goes_on = children > 0
    branch = child & (children[p] > 1) & ~joined
    context = workload.input_len[p] + workload.output_len[p]
    return child & goes_on & ~branch & (workload.input_len < shrink * context)


def workload_compactions(workload: Workload, shrink: float = SHRINK) -> dict[str, float]:
    """Compaction statistics of a workload: ``compactions`` (count), ``compaction_rate`` (per session),
    ``compaction_sessions_share`` (sessions with one), ``compaction_context_p50`` (the context before it,
    tokens) and ``compaction_summary_p50`` (the prompt after it beyond the kept prefix; NaN without any)."""
    rows = np.flatnonzero(compaction_rows(workload, shrink))
    par = workload.parent[rows]
    summary = workload.input_len[rows] - np.minimum(_kept_blocks(workload, rows) * workload.block_size,
                                                    workload.input_len[rows])
    nan = float("nan")
    return {
        "compactions": float(len(rows)),
        "compaction_rate": float(len(rows) / workload.n_sessions),
        "compaction_sessions_share": float(len(np.unique(workload.session[rows])) / workload.n_sessions),
        "compaction_context_p50": float(np.median(workload.input_len[par] + workload.output_len[par])) if len(rows)
        else nan,
        "compaction_summary_p50": float(np.median(summary)) if len(rows) else nan,
    }


def _summary(values: np.ndarray) -> dict[str, float]:
    return {"n": int(len(values)), "p10": float(np.percentile(values, 10)), "p50": float(np.percentile(values, 50)),
            "p90": float(np.percentile(values, 90)), "max": float(np.max(values))}


def measure_compaction(conversations, shrink: float = SHRINK) -> dict:
    """Compactions of kv-cache-tester conversations (their own calls and their sub-agents'): count, rate per
    conversation, share of conversations with one, the context before (threshold), the prompt after, the
    prefix kept and the summary (prompt after beyond the kept prefix), and the count at other shrink shares."""
    w = conversations.workload(seed=0)
    rows = np.flatnonzero(compaction_rows(w, shrink))
    par = w.parent[rows]
    kept = np.minimum(_kept_blocks(w, rows) * w.block_size, w.input_len[rows])
    return {
        "shrink": shrink,
        "conversations": int(conversations.n_conversations),
        "calls": int(len(w)),
        "compactions": int(len(rows)),
        "per_conversation": float(len(rows) / conversations.n_conversations),
        "conversations_with_any": float(len(np.unique(w.session[rows])) / conversations.n_conversations),
        "per_call": float(len(rows) / len(w)),
        "context_before": _summary(w.input_len[par] + w.output_len[par]),
        "prompt_after": _summary(w.input_len[rows]),
        "kept_prefix": _summary(kept),
        "summary": _summary(w.input_len[rows] - kept),
        "count_at_shrink": {str(s): int(compaction_rows(w, s).sum()) for s in (0.3, 0.5, 0.7)},
        "prompt_p99_all_calls": float(np.percentile(w.input_len, 99)),
        "prompt_max_all_calls": float(np.max(w.input_len)),
    }


def load_compaction(name: str = "claude-code") -> dict:
    """The measured compaction of ``data/presets/compaction.json`` for ``name``."""
    from .catalog import data_dir

    with open(data_dir() / "presets" / "compaction.json") as fh:
        doc = json.load(fh)
    if name not in doc["traces"]:
        raise KeyError(f"no measured compaction {name!r}; known: {', '.join(doc['traces'])}")
    return doc["traces"][name]["measured"]
