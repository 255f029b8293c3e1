"""The columnar :class:`Workload`: one row per request, numpy arrays only (numba-friendly).

Block ids are *chained* prefix hashes: equal ids at position ``j`` of two prompts mean the
whole prefix up to and including block ``j`` is equal. Every prompt carries exactly
``ceil(input_len / block_size)`` block ids (loaders pad a short hash list with fresh ids).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is built (start-up of the simulate path)
    import pandas as pd

__all__ = ["Workload", "WorkloadError", "n_blocks_for"]


class WorkloadError(ValueError):
    """A workload whose arrays are inconsistent (the message names the field and the row)."""


def n_blocks_for(input_len: np.ndarray, block_size: int) -> np.ndarray:
    """Number of KV blocks a prompt of ``input_len`` tokens occupies: ``ceil(input_len / block_size)``."""
    return (np.asarray(input_len, dtype=np.int64) + block_size - 1) // block_size


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True, eq=False)
class Workload:
    """A request trace as columnar arrays, sorted by arrival.

    Attributes:
        arrival: arrival time of each request (s), non-decreasing.
        input_len, output_len: prompt and generated tokens.
        session: session id (dense or not; equal ids = same session).
        turn: 0 for the first request of a session, k for the k-th follow-up.
        parent: row of the previous turn of the same session, or -1.
        gap: think/tool time before this turn (s), measured from the parent's completion
            where known (used by closed-loop replay); 0 for first turns.
        block_offsets, block_ids: CSR arrays of the prompt's chained KV block ids;
            request ``i`` owns ``block_ids[block_offsets[i]:block_offsets[i+1]]``.
        block_size: tokens per KV block.
        priority: session priority per request (default 1), for queue disciplines.
        name: a label for tables and plots.
        join_to: row that waits for this row's end before it is released (closed replay), or -1
            (default). A fan-out child (a parallel tool call's or a sub-agent's request) names the
            parent's next turn here: that turn is released when its parent *and* every row that
            joins it have ended, ``gap`` after the last of them. Must be a later row of the same
            session.
    """

    arrival: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    session: np.ndarray
    turn: np.ndarray
    parent: np.ndarray
    gap: np.ndarray
    block_offsets: np.ndarray
    block_ids: np.ndarray
    block_size: int
    priority: np.ndarray = field(default=None)  # type: ignore[assignment]
    name: str = "workload"
    join_to: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        n = len(np.asarray(self.arrival))
        conv = {
            "arrival": np.float64, "input_len": np.int64, "output_len": np.int64,
            "session": np.int64, "turn": np.int64, "parent": np.int64, "gap": np.float64,
            "block_offsets": np.int64, "block_ids": np.int64, "priority": np.float64, "join_to": np.int64,
        }
        if self.priority is None:
            object.__setattr__(self, "priority", np.ones(n))
        if self.join_to is None:
            object.__setattr__(self, "join_to", np.full(n, -1, dtype=np.int64))
        for name, dtype in conv.items():
            arr = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        self._validate()

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        n = len(self.arrival)
        if not isinstance(self.block_size, (int, np.integer)) or self.block_size <= 0:
            raise WorkloadError(f"block_size must be a positive integer, got {self.block_size!r}")
        object.__setattr__(self, "block_size", int(self.block_size))
        for name in ("input_len", "output_len", "session", "turn", "parent", "gap", "priority", "join_to"):
            if len(getattr(self, name)) != n:
                raise WorkloadError(f"{name} has {len(getattr(self, name))} rows, arrival has {n}")
        if n and not np.all(np.isfinite(self.arrival)):
            raise WorkloadError(f"arrival is not finite at row {_first_bad(~np.isfinite(self.arrival))}")
        if n > 1 and np.any(np.diff(self.arrival) < 0):
            raise WorkloadError(f"arrival is not sorted at row {_first_bad(np.diff(self.arrival) < 0) + 1}")
        for name in ("input_len", "output_len", "turn"):
            bad = getattr(self, name) < 0
            if bad.any():
                raise WorkloadError(f"{name} is negative at row {_first_bad(bad)}")
        if np.any(~np.isfinite(self.gap) | (self.gap < 0)):
            raise WorkloadError(f"gap is negative or not finite at row {_first_bad(~(self.gap >= 0))}")
        off = self.block_offsets
        if len(off) != n + 1 or (n + 1 and off[0] != 0) or off[-1] != len(self.block_ids):
            raise WorkloadError(
                f"block_offsets must have {n + 1} entries from 0 to len(block_ids)={len(self.block_ids)}"
            )
        counts = np.diff(off)
        if np.any(counts < 0):
            raise WorkloadError(f"block_offsets decreases at row {_first_bad(counts < 0)}")
        expect = n_blocks_for(self.input_len, self.block_size)
        if np.any(counts != expect):
            i = _first_bad(counts != expect)
            raise WorkloadError(
                f"row {i} has {counts[i]} blocks but input_len {self.input_len[i]} with "
                f"block_size {self.block_size} needs {expect[i]}"
            )
        par = self.parent
        rows = np.arange(n)
        bad = (par < -1) | (par >= rows)
        if bad.any():
            i = _first_bad(bad)
            raise WorkloadError(f"parent of row {i} is {par[i]}: a parent must be -1 or an earlier row")
        child = par >= 0
        if child.any():
            p = par[child]
            bad_turn = self.turn[child] != self.turn[p] + 1
            if bad_turn.any():
                i = rows[child][_first_bad(bad_turn)]
                raise WorkloadError(f"turn of row {i} is {self.turn[i]} but its parent's is {self.turn[par[i]]}")
            bad_sess = self.session[child] != self.session[p]
            if bad_sess.any():
                i = rows[child][_first_bad(bad_sess)]
                raise WorkloadError(f"row {i} is in session {self.session[i]} but its parent is not")
        join = self.join_to
        bad = (join < -1) | ((join >= 0) & (join <= rows)) | (join >= n)
        if bad.any():
            i = _first_bad(bad)
            raise WorkloadError(f"join_to of row {i} is {join[i]}: it must be -1 or a later row")
        joins = join >= 0
        if joins.any():
            bad_sess = self.session[joins] != self.session[join[joins]]
            if bad_sess.any():
                i = rows[joins][_first_bad(bad_sess)]
                raise WorkloadError(f"row {i} joins row {join[i]} of another session")

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def n_blocks(self) -> np.ndarray:
        """Blocks per request."""
        return np.diff(self.block_offsets)

    @property
    def n_sessions(self) -> int:
        """Number of distinct sessions."""
        return len(np.unique(self.session))

    @property
    def duration(self) -> float:
        """Time from the first to the last arrival (s)."""
        return float(self.arrival[-1] - self.arrival[0]) if len(self) else 0.0

    def blocks(self, i: int) -> np.ndarray:
        """Chained block ids of request ``i``'s prompt."""
        return self.block_ids[self.block_offsets[i]:self.block_offsets[i + 1]]

    def history_tokens(self) -> np.ndarray:
        """Tokens the previous turn sent (its prompt plus its reply), 0 for first/orphan turns.

        This is the context a follow-up expects to find cached (SMETRIC's eviction guard).
        """
        par = self.parent
        hist = np.zeros(len(self), dtype=np.int64)
        m = par >= 0
        hist[m] = self.input_len[par[m]] + self.output_len[par[m]]
        return np.minimum(hist, self.input_len)

    # ------------------------------------------------------------------ transforms
    def select(self, rows: np.ndarray) -> "Workload":
        """The sub-workload of the given rows (bool mask or sorted indices); parents and joins outside it become -1."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64)
        if len(rows) > 1 and np.any(np.diff(rows) <= 0):
            raise WorkloadError("select() needs strictly increasing row indices")
        new_index = np.full(len(self), -1, dtype=np.int64)
        new_index[rows] = np.arange(len(rows))
        par = self.parent[rows]
        new_par = np.where(par >= 0, new_index[np.maximum(par, 0)], -1)
        join = self.join_to[rows]
        new_join = np.where(join >= 0, new_index[np.maximum(join, 0)], -1)
        counts = self.n_blocks
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts[rows], out=offsets[1:])
        keep = np.zeros(len(self), dtype=bool)
        keep[rows] = True  # rows increase, so the kept blocks in order are the selection (1 byte per block)
        return replace(
            self,
            arrival=self.arrival[rows], input_len=self.input_len[rows], output_len=self.output_len[rows],
            session=self.session[rows], turn=self.turn[rows], parent=new_par,
            gap=np.where(new_par >= 0, self.gap[rows], 0.0), block_offsets=offsets,
            block_ids=self.block_ids[np.repeat(keep, counts)], priority=self.priority[rows], join_to=new_join,
        )

    def window(self, start: float, end: float) -> "Workload":
        """Requests arriving in ``[start, end)`` (s); sessions cut by the window keep their turn numbers."""
        if end <= start:
            raise WorkloadError(f"window end {end} must be after start {start}")
        return self.select((self.arrival >= start) & (self.arrival < end))

    def head(self, n: int) -> "Workload":
        """The first ``n`` requests."""
        return self.select(np.arange(min(n, len(self))))

    def scale_load(self, factor: float) -> "Workload":
        """Compress time by ``factor`` (> 1 = more load): arrivals and gaps are divided by it."""
        if not factor > 0 or not np.isfinite(factor):
            raise WorkloadError(f"load factor must be a positive finite number, got {factor!r}")
        t0 = self.arrival[0] if len(self) else 0.0
        return replace(self, arrival=t0 + (self.arrival - t0) / factor, gap=self.gap / factor)

    def coarsen(self, block_size: int) -> "Workload":
        """Re-block to a multiple ``k`` of the current block size using the chained-hash property.

        Full coarse blocks take the id of their last fine block (``ids[k-1::k]``); a trailing
        partial coarse block takes the id of the prompt's last fine block.
        """
        if block_size % self.block_size or block_size < self.block_size:
            raise WorkloadError(
                f"coarsen() needs a multiple of the current block size {self.block_size}, got {block_size}"
            )
        k = block_size // self.block_size
        if k == 1:
            return self
        counts = self.n_blocks
        new_counts = n_blocks_for(self.input_len, block_size)
        offsets = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(new_counts, out=offsets[1:])
        # position j of a coarse block -> fine position min(k*j + k - 1, count - 1)
        owner = np.repeat(np.arange(len(self)), new_counts)
        j = np.arange(offsets[-1]) - offsets[owner]
        fine_pos = np.minimum(k * j + k - 1, counts[owner] - 1)
        ids = self.block_ids[self.block_offsets[owner] + fine_pos]
        return replace(self, block_offsets=offsets, block_ids=ids, block_size=block_size)

    def to_frame(self) -> pd.DataFrame:
        """One row per request (no block ids; ``n_blocks`` instead)."""
        import pandas as pd

        return pd.DataFrame({
            "arrival": self.arrival, "input_len": self.input_len, "output_len": self.output_len,
            "session": self.session, "turn": self.turn, "parent": self.parent, "gap": self.gap,
            "priority": self.priority, "join_to": self.join_to, "n_blocks": self.n_blocks,
        })

    def __repr__(self) -> str:
        return (f"Workload({self.name!r}, {len(self)} requests, {self.n_sessions} sessions, "
                f"{self.duration:.0f} s, block_size={self.block_size})")
