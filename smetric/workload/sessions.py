"""Sessions: inferring them from chained block hashes, and deriving session/turn/gap from parent links.

Traces like Mooncake carry KV block hashes but no session ids. The rule (ours; it reproduces the
``*.inferred_sessions.csv.gz`` files shipped in ``data/traces/``): request C is a follow-up of an earlier
request P when C's block ids begin with *all of P's block ids except P's last one* (a partial last block
changes its hash once the history grows) and that shared run is at least ``min_shared_blocks`` (3) long, so a
common system prompt alone links nothing. Among the qualifying P, the parent is the one with the deepest
shared run, the most recent on ties. Because ids are chained, "C's prefix equals P's first k blocks" is the
same as "C's block ``k-1`` equals P's block ``k-1``", which turns the search into a vectorised key match.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .core import Workload

__all__ = ["infer_parents", "chain_sessions", "arrival_gaps", "infer_sessions"]


def infer_parents(block_offsets: np.ndarray, block_ids: np.ndarray, min_shared_blocks: int = 3) -> np.ndarray:
    """Parent row of every request under the prefix-chain rule (-1 for roots).

    Rows must be in arrival order (a parent is always an earlier row). ``block_offsets`` and
    ``block_ids`` are the Workload's CSR arrays of chained block ids.
    """
    if min_shared_blocks < 1:
        raise ValueError(f"min_shared_blocks must be at least 1, got {min_shared_blocks}")
    offsets = np.asarray(block_offsets, dtype=np.int64)
    ids = np.asarray(block_ids, dtype=np.int64)
    n = len(offsets) - 1
    counts = np.diff(offsets)
    parent = np.full(n, -1, dtype=np.int64)

    # Candidate parents: a request with k+1 blocks offers the key (depth k, id of its block k-1).
    cand = np.flatnonzero(counts >= min_shared_blocks + 1)
    cand_depth = counts[cand] - 1
    cand_id = ids[offsets[cand] + cand_depth - 1]

    # Queries: request C asks, for every depth k >= min_shared_blocks it can hold, for key (k, C[k-1]).
    q_counts = np.maximum(counts - (min_shared_blocks - 1), 0)
    q_row = np.repeat(np.arange(n, dtype=np.int64), q_counts)
    q_start = np.cumsum(q_counts) - q_counts
    q_depth = np.arange(len(q_row), dtype=np.int64) - np.repeat(q_start, q_counts) + min_shared_blocks
    q_id = ids[offsets[q_row] + q_depth - 1]
    if len(cand) == 0 or len(q_row) == 0:
        return parent

    # Sort candidates and queries together by (depth, id, row); at equal row a query sorts first,
    # so a request never matches itself. The latest candidate before each query in its key group
    # is then a running maximum of candidate positions.
    depth = np.concatenate([cand_depth, q_depth])
    key_id = np.concatenate([cand_id, q_id])
    row = np.concatenate([cand, q_row])
    is_cand = np.concatenate([np.ones(len(cand), bool), np.zeros(len(q_row), bool)])
    order = np.lexsort((is_cand, row, key_id, depth))
    depth, key_id, row, is_cand = depth[order], key_id[order], row[order], is_cand[order]
    last_cand = np.maximum.accumulate(np.where(is_cand, np.arange(len(order)), -1))
    safe = np.maximum(last_cand, 0)
    hit = (~is_cand) & (last_cand >= 0) & (depth[safe] == depth) & (key_id[safe] == key_id)

    # Deepest hit per request: sort hits by (row, depth) and keep each row's last one.
    h_row, h_depth, h_parent = row[hit], depth[hit], row[safe[hit]]
    by = np.lexsort((h_depth, h_row))
    h_row, h_parent = h_row[by], h_parent[by]
    last = np.ones(len(h_row), bool)
    last[:-1] = h_row[1:] != h_row[:-1]
    parent[h_row[last]] = h_parent[last]
    return parent


def chain_sessions(parent: np.ndarray, root_turn: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Session ids (dense, numbered in the order of their roots' rows) and turns from parent links.

    ``parent[i]`` is an earlier row or -1. A root's turn is ``root_turn[i]`` (default 0; a trace
    window can start mid-session), a child's is its parent's plus one.
    """
    parent = np.asarray(parent, dtype=np.int64)
    rows = np.arange(len(parent), dtype=np.int64)
    bad = (parent >= rows) | (parent < -1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"parent of row {i} is {parent[i]}: a parent must be -1 or an earlier row")
    is_root = parent < 0
    # Pointer jumping: roots point at themselves at distance 0 and every round doubles the jump,
    # so log2(longest chain) rounds take every row to its root.
    up = np.where(is_root, rows, parent)
    depth = (~is_root).astype(np.int64)
    while np.any(up[up] != up):
        depth = depth + depth[up]
        up = up[up]
    session = (np.cumsum(is_root) - 1)[up]
    turn = depth + (0 if root_turn is None else np.asarray(root_turn, dtype=np.int64)[up])
    return session, turn


def arrival_gaps(arrival: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Arrival-to-arrival time from each request's parent (s), 0 for roots.

    Used as ``Workload.gap`` by traces that log arrivals only: the parent's completion is unknown,
    so the gap includes the parent's own service time (an upper bound on the think/tool time).
    """
    arrival = np.asarray(arrival, dtype=np.float64)
    parent = np.asarray(parent, dtype=np.int64)
    child = parent >= 0
    gap = np.zeros(len(arrival))
    gap[child] = arrival[child] - arrival[parent[child]]
    return gap


def infer_sessions(workload: Workload, min_shared_blocks: int = 3) -> Workload:
    """The workload with ``parent``, ``session``, ``turn`` and ``gap`` inferred from its block ids.

    Gaps are arrival-to-arrival (see :func:`arrival_gaps`). Block ids are compared as they are, so
    infer at the trace's native block size (the rule's 3-block minimum is in those blocks).
    """
    parent = infer_parents(workload.block_offsets, workload.block_ids, min_shared_blocks)
    session, turn = chain_sessions(parent)
    return replace(workload, parent=parent, session=session, turn=turn, gap=arrival_gaps(workload.arrival, parent))
