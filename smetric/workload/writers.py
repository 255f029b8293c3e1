"""Write a Workload as a Mooncake or Alibaba Bailian trace (jsonl, gzip when the name ends in ``.gz``).

What each format keeps (so what a round trip through :func:`smetric.workload.load_trace` gives back):

- **bailian**: arrivals (s), lengths, 16-token block ids, and the parent chain (``chat_id`` = row,
  ``parent_chat_id`` = parent row, ``turn`` 1-based). Sessions come back as parent-chain roots
  (renumbered), gaps as arrival-to-arrival; ``priority`` is not kept.
- **mooncake**: arrivals (ms), lengths and 512-token block ids (finer blocks are coarsened).
  Sessions are not kept; the loader infers them from the block ids.

Gzip output is byte-reproducible (no file name or time stamp in the header).
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from .core import Workload, WorkloadError
from .loaders import NATIVE_BLOCK_SIZE

__all__ = ["WRITERS", "write_trace", "write_mooncake", "write_bailian"]


def _write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw:
        if path.name.endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                    io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as fh:
                fh.writelines(lines)
        else:
            with io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as fh:
                fh.writelines(lines)
    return path


def _block_lists(workload: Workload) -> list[list[int]]:
    ids = workload.block_ids.tolist()
    off = workload.block_offsets.tolist()
    return [ids[a:b] for a, b in zip(off[:-1], off[1:])]


def write_mooncake(workload: Workload, path: str | os.PathLike) -> Path:
    """Write Mooncake jsonl: ``timestamp`` (ms), ``input_length``, ``output_length``, ``hash_ids`` (512 tokens).

    A workload with a smaller block size that divides 512 is coarsened first. Timestamps are
    rounded to the nanosecond (1e-6 ms) and written as integers when every one is a whole number
    of milliseconds (as in the published traces).
    """
    size = NATIVE_BLOCK_SIZE["mooncake"]
    if workload.block_size != size:
        if size % workload.block_size:
            raise WorkloadError(f"Mooncake blocks are {size} tokens; block_size {workload.block_size} "
                                f"does not divide it")
        workload = workload.coarsen(size)
    ms = np.round(workload.arrival * 1000.0, 6)
    stamps = ms.astype(np.int64).tolist() if np.all(ms == np.round(ms)) else ms.tolist()
    rows = zip(stamps, workload.input_len.tolist(), workload.output_len.tolist(), _block_lists(workload))
    return _write_lines(Path(path), (
        json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": h}) + "\n"
        for t, i, o, h in rows
    ))


def write_bailian(workload: Workload, path: str | os.PathLike, request_type: str = "text") -> Path:
    """Write Bailian jsonl: ``chat_id`` (row), ``parent_chat_id``, ``timestamp`` (s), lengths, ``type``,
    1-based ``turn`` and 16-token ``hash_ids``. Every request gets ``type = request_type``."""
    size = NATIVE_BLOCK_SIZE["bailian"]
    if workload.block_size != size:
        raise WorkloadError(f"Bailian blocks are {size} tokens; this workload has block_size "
                            f"{workload.block_size} (generate it at {size} and coarsen later)")
    if not isinstance(request_type, str) or not request_type:
        raise ValueError(f"request_type must be a non-empty string, got {request_type!r}")
    rows = zip(range(len(workload)), workload.parent.tolist(), workload.arrival.tolist(),
               workload.input_len.tolist(), workload.output_len.tolist(), workload.turn.tolist(),
               _block_lists(workload))
    return _write_lines(Path(path), (
        json.dumps({"chat_id": c, "parent_chat_id": p, "timestamp": t, "input_length": i, "output_length": o,
                    "type": request_type, "turn": k + 1, "hash_ids": h}) + "\n"
        for c, p, t, i, o, k, h in rows
    ))


WRITERS: dict[str, Callable[[Workload, str | os.PathLike], Path]] = {
    "mooncake": write_mooncake,
    "bailian": write_bailian,
}


def write_trace(workload: Workload, path: str | os.PathLike, format: str) -> Path:
    """Write ``workload`` to ``path`` in one of the formats of :data:`WRITERS`."""
    try:
        writer = WRITERS[format]
    except KeyError:
        raise ValueError(f"cannot write format {format!r}; writable formats: {', '.join(WRITERS)}") from None
    return writer(workload, path)
