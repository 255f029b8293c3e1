"""Recorded request bundles: a serving engine's own per-request timestamps, replayed exactly as recorded.

A bundle is a folder holding one real run, request by request, in the layout of LLMServingSim's ``bench``
(casys-kaist/LLMServingSim ``bench/core/runner.py`` and ``recorder.py`` at ``5daddb21``): vLLM's ``AsyncLLM`` is
driven in-process (no HTTP server, no benchmark client), each request sent at its dataset offset with its prompt
token ids and output length pinned (``min_tokens = max_tokens = output_toks``, ``ignore_eos``), and every
request's ``RequestStateStats`` written out.

``requests.jsonl`` (required), one JSON object per request, in send order:
    ``request_id``; ``input_toks``, ``output_toks`` (>= 1 each); ``arrival_time`` (the front end's wall clock,
    epoch s); ``queued_ts``, ``scheduled_ts``, ``first_token_ts``, ``last_token_ts`` (the engine's monotonic
    clock, s): when the engine core put the request on its waiting queue, first scheduled it, and emitted its
    first and last token, with ``queued <= scheduled <= first <= last``. ``arrival_time`` must not decrease
    down the file (the rows are the front end's send order).
``meta.json`` (required): the run's engine settings as recorded (kept as a mapping, :attr:`RecordedBundle.meta`).
``prefixes.csv`` (optional): ``row,shares_with,shared_blocks``: request ``row`` (0-based, file order) starts
    with the same ``shared_blocks`` full :data:`BLOCK_SIZE`-token blocks as the earlier request
    ``shares_with`` (the earlier one sharing the most). Derived from the run's prompt token ids with
    :func:`shared_prefixes`; without it every prompt has unique blocks.

**Clocks and arrivals.** ``arrival_time`` and the engine timestamps are on different clocks, so the engine's
own ``queued_ts`` is the arrival: the model's requests arrive when the real engine core queued them (times
relative to the first one), and TTFT, latency and queueing are measured from it -- LLMServingSim's
``bench validate`` anchors on ``queued_ts`` for the same reason. What happened before the engine core
(the front end's input processing and IPC, 0-0.37 s late on the bundles here) is left out on both sides.
Rows are ordered by engine arrival (stable): with several engine cores (data parallelism) the queue times
interleave differently from the send order.

**Per request** (s, the definitions of LLMServingSim's ``bench/core/validate.py``): TTFT = first token -
arrival; TPOT = (last token - first token) / (output - 1) for outputs of more than one token; latency = last
token - arrival; queueing = scheduled - arrival.

**Blocks.** Each request is its own session (turn 0, no parent); its prompt's chained block ids repeat the
``shares_with`` request's first ``shared_blocks`` ids and are fresh after them (vLLM caches full blocks only).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .core import Workload, n_blocks_for
from .errors import TraceFormatError

__all__ = ["BLOCK_SIZE", "RecordedBundle", "bundle_of", "bundle_path", "load_bundle", "recorded_workload",
           "shared_prefixes"]

#: Tokens per KV block of the recorded runs and of ``prefixes.csv`` (vLLM's default; LLMServingSim's
#: ``bench/examples/run.sh`` replays them with ``--block-size 16``).
BLOCK_SIZE = 16
_INT_FIELDS = ("input_toks", "output_toks")
_TIME_FIELDS = ("arrival_time", "queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts")
_ENGINE_ORDER = ("queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts")
_PREFIX_FIELDS = ("row", "shares_with", "shared_blocks")


@dataclass(frozen=True, eq=False)
class RecordedBundle:
    """One recorded run, its rows ordered by engine arrival (times in s from the first engine arrival).

    Attributes:
        path: the bundle folder.
        request_id: each request's id as recorded.
        row: each request's row in ``requests.jsonl`` (0-based send order).
        input_len, output_len: prompt and generated tokens.
        arrival, scheduled, first_token, last_token: the engine's timestamps (``queued_ts`` is the arrival).
        sent: the front end's send time (``arrival_time``, from the first send; another clock).
        block_offsets, block_ids: the prompts' chained block ids (CSR, :data:`BLOCK_SIZE` tokens a block).
        meta: ``meta.json`` as recorded.
    """

    path: Path
    request_id: np.ndarray
    row: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    arrival: np.ndarray
    scheduled: np.ndarray
    first_token: np.ndarray
    last_token: np.ndarray
    sent: np.ndarray
    block_offsets: np.ndarray
    block_ids: np.ndarray
    meta: Mapping

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def ttft(self) -> np.ndarray:
        """First token - arrival (s)."""
        return self.first_token - self.arrival

    @property
    def tpot(self) -> np.ndarray:
        """(last token - first token) / (output - 1) (s); NaN for one-token outputs."""
        steps = self.output_len - 1
        return np.where(steps > 0, (self.last_token - self.first_token) / np.maximum(steps, 1), np.nan)

    @property
    def latency(self) -> np.ndarray:
        """Last token - arrival (s)."""
        return self.last_token - self.arrival

    @property
    def queue(self) -> np.ndarray:
        """Scheduled - arrival (s): time on the engine's waiting queue."""
        return self.scheduled - self.arrival

    @cached_property
    def workload(self) -> Workload:
        """The requests as a :class:`Workload`: arrivals as recorded, one session per request."""
        n = len(self)
        return Workload(arrival=self.arrival, input_len=self.input_len, output_len=self.output_len,
                        session=np.arange(n), turn=np.zeros(n), parent=np.full(n, -1), gap=np.zeros(n),
                        block_offsets=self.block_offsets, block_ids=self.block_ids, block_size=BLOCK_SIZE,
                        name=self.path.name)


def bundle_path(name: str | Path) -> Path:
    """A bundle folder: an absolute path as given, else relative to ``<data>/validation``."""
    path = Path(name)
    if path.is_absolute():
        return path
    from ..context import run_context

    return run_context().data_dir / "validation" / path


def _number(path: Path, line: int, field: str, value, *, integer: bool) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and integer:
        ok = float(value).is_integer() and value >= 1
    if not ok:
        what = "an integer >= 1" if integer else "a finite number"
        raise TraceFormatError(path, line, field, f"must be {what}, got {value!r}")
    return float(value)


def _read_requests(path: Path) -> dict[str, np.ndarray]:
    cols: dict[str, list] = {key: [] for key in ("request_id", *_INT_FIELDS, *_TIME_FIELDS)}
    with path.open() as fh:
        for line, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                raise TraceFormatError(path, line, None, f"not valid JSON ({exc.msg})") from None
            if not isinstance(row, Mapping):
                raise TraceFormatError(path, line, None, f"must be a JSON object, got {type(row).__name__}")
            for field in cols:
                if field not in row:
                    raise TraceFormatError(path, line, field, "is missing")
            values = {f: _number(path, line, f, row[f], integer=f in _INT_FIELDS)
                      for f in (*_INT_FIELDS, *_TIME_FIELDS)}
            for early, late in zip(_ENGINE_ORDER, _ENGINE_ORDER[1:]):
                if values[late] < values[early]:
                    raise TraceFormatError(path, line, late, f"{values[late]!r} is before {early} {values[early]!r}")
            if cols["arrival_time"] and values["arrival_time"] < cols["arrival_time"][-1]:
                raise TraceFormatError(path, line, "arrival_time", f"{values['arrival_time']!r} is before the previous "
                                       f"row's {cols['arrival_time'][-1]!r}: rows must be in send order")
            cols["request_id"].append(str(row["request_id"]))
            for field, value in values.items():
                cols[field].append(value)
    if not cols["request_id"]:
        raise TraceFormatError(path, 1, None, "holds no requests")
    return {key: np.asarray(value) for key, value in cols.items()}


def _read_prefixes(path: Path, input_len: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``shares_with`` (-1 = none) and ``shared_blocks`` per file row, checked against the prompts' full blocks."""
    n = len(input_len)
    shares, blocks = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64)
    if not path.is_file():
        return shares, blocks
    full = input_len.astype(np.int64) // BLOCK_SIZE
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [f for f in _PREFIX_FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise TraceFormatError(path, 1, missing[0], "is missing from the header")
        for line, rec in enumerate(reader, start=2):
            try:
                row, other, k = (int(rec[f]) for f in _PREFIX_FIELDS)
            except (TypeError, ValueError):
                bad = next(f for f in _PREFIX_FIELDS if not str(rec[f]).strip().lstrip("-").isdigit())
                raise TraceFormatError(path, line, bad, f"must be an integer, got {rec[bad]!r}") from None
            if not 0 <= row < n:
                raise TraceFormatError(path, line, "row", f"{row} is not a request row (0..{n - 1})")
            if not 0 <= other < row:
                raise TraceFormatError(path, line, "shares_with", f"{other} is not an earlier row than {row}")
            if not 0 < k <= min(full[row], full[other]):
                raise TraceFormatError(path, line, "shared_blocks", f"{k} is not in 1..{min(full[row], full[other])} "
                                       f"(the full {BLOCK_SIZE}-token blocks of rows {row} and {other})")
            shares[row], blocks[row] = other, k
    return shares, blocks


def _chained_ids(input_len: np.ndarray, shares: np.ndarray, blocks: np.ndarray) -> list[np.ndarray]:
    """Each file row's block ids: the shared request's first ids, then fresh ones."""
    counts = n_blocks_for(input_len, BLOCK_SIZE)
    ids, fresh = [], 0
    for i, count in enumerate(counts):
        k = int(blocks[i])
        own = np.arange(fresh, fresh + count - k, dtype=np.int64)
        fresh += count - k
        ids.append(np.concatenate([ids[shares[i]][:k], own]) if k else own)
    return ids


def load_bundle(folder: str | Path) -> RecordedBundle:
    """Read and check a bundle (see the module docstring); a bad file raises a one-line
    :class:`~smetric.workload.errors.TraceFormatError` naming the file, the line and the field."""
    folder = bundle_path(folder)
    requests, meta_path = folder / "requests.jsonl", folder / "meta.json"
    for path in (requests, meta_path):
        if not path.is_file():
            raise TraceFormatError(path, 1, None, "no such file (a recorded bundle needs requests.jsonl and meta.json)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise TraceFormatError(meta_path, exc.lineno, None, f"not valid JSON ({exc.msg})") from None
    if not isinstance(meta, Mapping):
        raise TraceFormatError(meta_path, 1, None, f"must be a JSON object, got {type(meta).__name__}")
    col = _read_requests(requests)
    input_len = col["input_toks"].astype(np.int64)
    ids = _chained_ids(input_len, *_read_prefixes(folder / "prefixes.csv", input_len))
    order = np.argsort(col["queued_ts"], kind="stable")
    t0 = col["queued_ts"][order[0]]
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum([len(ids[i]) for i in order], out=offsets[1:])
    return RecordedBundle(
        path=folder, request_id=col["request_id"][order], row=order, input_len=input_len[order],
        output_len=col["output_toks"][order].astype(np.int64), arrival=col["queued_ts"][order] - t0,
        scheduled=col["scheduled_ts"][order] - t0, first_token=col["first_token_ts"][order] - t0,
        last_token=col["last_token_ts"][order] - t0, sent=col["arrival_time"][order] - col["arrival_time"][0],
        block_offsets=offsets, block_ids=np.concatenate([ids[i] for i in order]), meta=meta)


def bundle_of(params: Mapping[str, object]) -> RecordedBundle:
    """The bundle ``recorded-requests`` params name: ``{"bundle": FOLDER}``, exactly that key (ValueError if not)."""
    if not isinstance(params, Mapping) or set(params) != {"bundle"}:
        keys = sorted(params) if isinstance(params, Mapping) else params
        raise ValueError(f"recorded-requests params: exactly one key, 'bundle' (a bundle folder), got {keys!r}")
    return load_bundle(str(params["bundle"]))


def recorded_workload(params: Mapping[str, object], load: Mapping[str, object]) -> Workload:
    """The harness entry of ``recorded-requests``: the first ``stages[0].requests`` requests of the bundle
    ``params["bundle"]`` (by engine arrival), arriving as recorded. ``load = {"arrival": "recorded",
    "stages": [{"requests": n}]}``; bad input raises ValueError naming the key."""
    bundle = bundle_of(params)
    if load.get("arrival") != "recorded":
        raise ValueError(f"load.arrival must be 'recorded' for recorded-requests, got {load.get('arrival')!r}")
    stages = load.get("stages")
    if not isinstance(stages, Sequence) or len(stages) != 1 or not isinstance(stages[0], Mapping) \
            or set(stages[0]) != {"requests"}:
        raise ValueError(f"load.stages must be one stage [{{requests: n}}] for a recorded run, got {stages!r}")
    n = stages[0]["requests"]
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= len(bundle):
        raise ValueError(f"load stages[0].requests must be an integer in 1..{len(bundle)} (the bundle's "
                         f"requests), got {n!r}")
    return bundle.workload.head(int(n))


def shared_prefixes(token_ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(shares_with, shared_blocks)`` per prompt: the earlier prompt whose leading full :data:`BLOCK_SIZE`-token
    blocks match the most of this one's, and how many (``-1, 0`` when none match) -- the content of
    ``prefixes.csv``, derived from the prompts' token ids (chained: a block matches when every token up to
    its end does, as vLLM's prefix cache hashes it)."""
    first_seen: dict[tuple, int] = {}   # (block id of the prefix so far, the block's tokens) -> (id, first prompt)
    owner: list[int] = []
    shares = np.full(len(token_ids), -1, dtype=np.int64)
    blocks = np.zeros(len(token_ids), dtype=np.int64)
    for i, ids in enumerate(token_ids):
        prev, matching = -1, True
        for j in range(len(ids) // BLOCK_SIZE):
            key = (prev, tuple(ids[j * BLOCK_SIZE:(j + 1) * BLOCK_SIZE]))
            if key not in first_seen:
                first_seen[key] = len(owner)
                owner.append(i)
                matching = False
            elif matching:
                shares[i], blocks[i] = owner[first_seen[key]], j + 1
            prev = first_seen[key]
    return shares, blocks
