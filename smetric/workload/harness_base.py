"""What the benchmark-harness generators build on: the :class:`HarnessWorkload` they return and
:class:`BlockChains`, block ids interned from token content (:mod:`smetric.workload.harness`,
:mod:`smetric.workload.multi_turn_sessions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .core import Workload

__all__ = ["BlockChains", "HarnessWorkload"]


@dataclass(frozen=True)
class HarnessWorkload:
    """Requests of one harness run in send order, the load stage of each, and the replay they need.

    Attributes:
        workload: the requests, sorted by arrival (absolute send time, s).
        stage: int64 per request, index of the load stage it was sent in.
        closed: True when the engine must replay closed (parents are a session's previous round or a
            concurrency slot's previous request).
    """

    workload: Workload
    stage: np.ndarray
    closed: bool

    def __post_init__(self) -> None:
        stage = np.ascontiguousarray(self.stage, dtype=np.int64)
        if len(stage) != len(self.workload):
            raise ValueError(f"stage has {len(stage)} rows, workload has {len(self.workload)}")
        if len(stage) and (stage.min() < 0 or np.any(np.diff(stage) < 0)):
            raise ValueError("stage must be non-negative and non-decreasing in send order")
        stage.setflags(write=False)
        object.__setattr__(self, "stage", stage)


class BlockChains:
    """Chained block ids interned from token content.

    A prompt is a list of segments ``(uid, tokens)``: equal uids are equal text. Block ``j``'s id is
    interned from (block ``j-1``'s id, the segment pieces covering its tokens), so two prompts get the
    same id at ``j`` exactly when their first ``min(L, (j+1)*B)`` tokens are the same content.
    """

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._ids: dict[tuple, int] = {}
        self._uids = 0

    def uid(self) -> int:
        """A fresh content id (one random text of the harness)."""
        self._uids += 1
        return self._uids

    def ids(self, segments: Sequence[tuple[int, int]], known: np.ndarray | None = None) -> np.ndarray:
        """Block ids of the prompt ``segments``; ``known``: ids of leading full blocks already computed."""
        B = self.block_size
        seg = [(u, n) for u, n in segments if n > 0]
        ends = np.cumsum([n for _, n in seg], dtype=np.int64)
        total = int(ends[-1]) if len(ends) else 0
        out = np.empty(-(-total // B), dtype=np.int64)
        k = 0 if known is None else len(known)
        out[:k] = known if k else out[:0]
        prev = int(out[k - 1]) if k else 0
        s = 0
        for j in range(k, len(out)):
            lo, hi = j * B, min((j + 1) * B, total)
            pieces = []
            while lo < hi:
                while ends[s] <= lo:
                    s += 1
                start = int(ends[s]) - seg[s][1]
                take = min(hi, int(ends[s])) - lo
                pieces.append((seg[s][0], lo - start, take))
                lo += take
            prev = self._ids.setdefault((prev, tuple(pieces)), len(self._ids) + 1)
            out[j] = prev
        return out
