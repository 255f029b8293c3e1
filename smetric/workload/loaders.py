"""Trace readers: Mooncake, Alibaba Bailian, Azure LLM inference CSV, TraceLab rounds, kv-cache-tester -> Workload.

``load_trace("mooncake-conversation")`` (a catalog name) or ``load_trace("some/file.jsonl.gz")``
(a path; the format is detected from the content unless ``format=`` says it) returns a validated
:class:`~smetric.workload.Workload`. ``read_trace`` returns the same plus what was skipped.

How each format maps onto the Workload:

- **mooncake** (jsonl): ``timestamp`` ms -> s, 512-token chained ``hash_ids``; no sessions, so they
  are inferred from the hashes (:mod:`smetric.workload.sessions`); ``gap`` is arrival-to-arrival.
- **bailian** (jsonl): ``timestamp`` s, 16-token ``hash_ids``; the session is the root of the
  ``parent_chat_id`` chain and ``turn`` the depth in it. A request whose parent is not in the file
  (the trace window cut it off) becomes a session root that keeps the file's turn (1-based there,
  0-based here); these are counted in ``LoadedTrace.orphans``. ``gap`` is arrival-to-arrival (the
  format has no completion times, so it includes the parent's service time).
- **azure** (CSV ``TIMESTAMP,ContextTokens,GeneratedTokens``): wall clock with 100 ns precision
  -> s from the first request; no hashes, so every request gets fresh blocks and its own session.
- **tracelab** (jsonl, one LLM round per line): arrival is the last user message / tool result
  that fed the round, the parent is the session's previous round, and ``gap`` runs from the
  parent's last logged event (its completion) to this arrival, clipped at 0. A round shares its
  first ``prefix_tokens // block_size`` blocks with the previous round (at most the previous
  round's full blocks); the rest, and a session's first round, get fresh blocks.
- **kvcache-tester** (a folder, tar archive or file of JSON conversations): see
  :mod:`smetric.workload.kvcache_tester`; arrivals are generated (``requests_per_minute`` or
  ``session_rate``, ``seed``), ``shared_prefix`` shares the tool/system prefix across conversations.

Every prompt carries ``ceil(input_len / block_size)`` block ids; a short hash list is padded with
fresh ids above every id in the file (when those would pass the int64 limit, the file's ids are first
renumbered 0, 1, ... in their order, which keeps every equality). Bad input raises
:class:`TraceFormatError` naming the file, line and field; ``on_error="skip"`` leaves bad lines out
instead, warns with :class:`TraceSkipWarning` and lists them in ``LoadedTrace.skipped``. A truncated
gzip stream, an empty file, a bad CSV header and a TraceLab round that arrives before its session's
previous round are fatal either way.

Input size is bounded (:class:`TraceLimits`): lines are read in pieces of at most ``max_line_bytes``
(a longer line is a bad line, never read whole) and a prompt or reply longer than ``max_tokens`` is a
bad field; both limits can be raised (``limits=``, ``SMETRIC_MAX_LINE_BYTES`` / ``SMETRIC_MAX_TOKENS``,
or the CLI's ``--max-line-bytes`` / ``--max-tokens``). A UTF-8 byte-order mark is ignored; a JSON
key given twice in one object, a timestamp beyond ``MAX_TIME_S``, a date-time outside the years
nanosecond clocks hold and a Bailian ``turn`` that is not its parent's plus one are bad fields.
``output_length`` 0 is kept (the simulator generates one token for such a request) with a
:class:`TraceNoteWarning`.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import os
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .catalog import TRACES, trace_path
from .core import Workload, n_blocks_for
from .errors import TraceFormatError, TraceNoteWarning, TraceSkipWarning
from .kvcache_tester import DEFAULT_SUBAGENTS, is_kvcache_tester, read_conversations
from .sessions import arrival_gaps, chain_sessions, infer_parents

__all__ = ["FORMATS", "NATIVE_BLOCK_SIZE", "MAX_TIME_S", "TraceLimits", "LoadedTrace", "detect_format", "read_trace",
           "load_trace"]

FORMATS = ("mooncake", "bailian", "azure", "tracelab", "kvcache-tester")
NATIVE_BLOCK_SIZE = {"mooncake": 512, "bailian": 16}  # formats that carry hashes
DEFAULT_BLOCK_SIZE = 16  # for formats without hashes (fresh ids only)
AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
TRACELAB_INPUT_EVENTS = ("user_message", "tool_result")
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min
MAX_TIME_S = 1e10  # |timestamp| bound (s, ~317 years): beyond it float64 times lose sub-10-microsecond precision
_NS_YEARS = (1678, 2261)  # whole years a signed 64-bit nanosecond clock holds


@dataclass(frozen=True)
class TraceLimits:
    """Bounds on what a trace file may ask for, so a huge or hostile file fails fast and clearly.

    Attributes:
        max_line_bytes: longest line read (bytes, newline excluded); default 16 MiB.
        max_tokens: longest prompt or reply (tokens); default 10 M, the longest public context window.
    """

    max_line_bytes: int = 16 * 2**20
    max_tokens: int = 10_000_000

    def __post_init__(self) -> None:
        for name in ("max_line_bytes", "max_tokens"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")

    @classmethod
    def from_env(cls, **overrides: int | None) -> "TraceLimits":
        """Defaults, then ``SMETRIC_MAX_LINE_BYTES`` / ``SMETRIC_MAX_TOKENS``, then ``overrides`` that are not None."""
        values = {}
        for name in ("max_line_bytes", "max_tokens"):
            var = f"SMETRIC_{name.upper()}"
            if os.environ.get(var):
                try:
                    values[name] = int(os.environ[var])
                except ValueError:
                    raise ValueError(f"{var} must be an integer, got {os.environ[var]!r}") from None
            if overrides.get(name) is not None:
                values[name] = overrides[name]
        return cls(**values)


@dataclass(frozen=True)
class LoadedTrace:
    """A trace read into a Workload, with what could not be kept.

    Attributes:
        workload: the validated workload.
        path: the file read.
        format: one of :data:`FORMATS`.
        skipped: one :class:`TraceFormatError` per line left out (``on_error="skip"`` only).
        orphans: requests whose parent is not in the file (Bailian), kept as session roots.
    """

    workload: Workload
    path: Path
    format: str
    skipped: tuple[TraceFormatError, ...] = ()
    orphans: int = 0

    @property
    def n_skipped(self) -> int:
        """Number of bad lines left out."""
        return len(self.skipped)


# ---------------------------------------------------------------------------------------- reading
class _BadField(Exception):
    """Raised inside a line parser; turned into a TraceFormatError with the file and line."""

    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


class _Lines:
    """The non-blank lines of a (possibly gzipped) text file, and the bad ones that were skipped."""

    def __init__(self, path: Path, on_error: str, limits: TraceLimits) -> None:
        self.path = path
        self.on_error = on_error
        self.limits = limits
        self.skipped: list[TraceFormatError] = []

    def _raw_lines(self, fh) -> Iterator[bytes | None]:
        """Each line's bytes, read in pieces of at most ``max_line_bytes + 1``; None for a longer line."""
        piece = self.limits.max_line_bytes + 1
        while raw := fh.readline(piece):
            if len(raw) < piece or raw.endswith(b"\n"):
                yield raw
                continue
            yield None  # too long: the caller raises, or it is skipped and the rest read and dropped
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(piece)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        with open(self.path, "rb") as fh:
            gzipped = fh.read(2) == b"\x1f\x8b"
        lineno = 0
        try:
            with (gzip.open(self.path, "rb") if gzipped else open(self.path, "rb")) as fh:
                for lineno, raw in enumerate(self._raw_lines(fh), 1):
                    if raw is None:
                        self.bad(lineno, None, f"longer than max_line_bytes = {self.limits.max_line_bytes:,} bytes "
                                               "(raise it with --max-line-bytes or SMETRIC_MAX_LINE_BYTES)")
                        continue
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        self.bad(lineno, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
                        continue
                    if lineno == 1:
                        text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark
                    if text.strip():
                        yield lineno, text
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise TraceFormatError(
                self.path, lineno + 1, None, f"truncated or corrupt gzip stream ({exc}); the data stops here"
            ) from exc

    def bad(self, line: int, field: str | None, problem: str) -> None:
        """Raise, or record and go on, depending on ``on_error``."""
        err = TraceFormatError(self.path, line, field, problem)
        if self.on_error == "raise":
            raise err
        self.skipped.append(err)

    def check_not_empty(self, n_rows: int) -> None:
        """Fail when nothing was read: an empty file, or every line bad."""
        if n_rows:
            return
        if self.skipped:
            raise TraceFormatError(self.path, self.skipped[-1].line, None,
                                   f"no valid requests: all {len(self.skipped)} lines were bad")
        raise TraceFormatError(self.path, 1, None, "file is empty (no requests)")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    rec = dict(pairs)
    if len(rec) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _BadField(twice, "appears more than once in the object")
    return rec


def _json_object(text: str) -> dict:
    try:
        rec = json.loads(text.strip(), object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise _BadField(None, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(rec, dict):
        raise _BadField(None, f"a line must be a JSON object, got {type(rec).__name__}")
    return rec


def _field(rec: dict, name: str) -> object:
    if name not in rec:
        raise _BadField(name, "missing")
    return rec[name]


def _int(rec: dict, name: str, minimum: int = 0) -> int:
    value = _field(rec, name)
    if type(value) is not int:
        raise _BadField(name, f"must be an integer, got {_short(value)}")
    if value < minimum:
        raise _BadField(name, f"is negative ({value})" if minimum == 0 else f"must be >= {minimum}, got {value}")
    if value > _INT64_MAX:
        raise _BadField(name, f"{value} does not fit in 64 bits")
    return value


def _tokens(rec: dict, name: str, limits: TraceLimits) -> int:
    value = _int(rec, name)
    if value > limits.max_tokens:
        raise _BadField(name, f"{value:,} tokens exceeds max_tokens = {limits.max_tokens:,} "
                              "(raise it with --max-tokens or SMETRIC_MAX_TOKENS)")
    return value


def _number(rec: dict, name: str) -> float:
    value = _field(rec, name)
    if type(value) not in (int, float) or not math.isfinite(value):
        raise _BadField(name, f"must be a finite number, got {_short(value)}")
    return float(value)


def _text(rec: dict, name: str) -> str:
    value = _field(rec, name)
    if not isinstance(value, str):
        raise _BadField(name, f"must be a string, got {_short(value)}")
    return value


def _hash_ids(rec: dict, input_len: int, block_size: int) -> list[int]:
    value = _field(rec, "hash_ids")
    if not isinstance(value, list) or (value and set(map(type, value)) != {int}):
        raise _BadField("hash_ids", f"must be a list of integers, got {_short(value)}")
    if value and (min(value) < _INT64_MIN or max(value) > _INT64_MAX):
        raise _BadField("hash_ids", "an id does not fit in 64 bits")
    allowed = -(-input_len // block_size)
    if len(value) > allowed:
        raise _BadField("hash_ids", f"has {len(value)} ids but input_length {input_len} allows at most "
                                    f"{allowed} blocks of {block_size} tokens")
    return value


def _clock_ns(text: str) -> int:
    """Nanoseconds since the epoch of an ISO-8601 / ``YYYY-MM-DD hh:mm:ss.fffffff`` UTC time."""
    stamp = text[:-1] if text.endswith("Z") else text
    year = stamp[:4]
    if year.isdigit() and not _NS_YEARS[0] <= int(year) <= _NS_YEARS[1]:
        raise ValueError(f"year {year} of {_short(text)} is outside {_NS_YEARS[0]}-{_NS_YEARS[1]}, the years a "
                         "nanosecond clock holds")
    try:
        moment = np.datetime64(stamp, "ns")
    except ValueError:
        moment = np.datetime64("NaT")
    if np.isnat(moment):
        raise ValueError(f"not a date-time: {_short(text)}")
    return int(moment.astype(np.int64))


# ---------------------------------------------------------------------------------------- blocks
def _hashed_blocks(hash_lists: list[list[int]], input_len: np.ndarray,
                   block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR block arrays from per-request hash lists, padding short lists with fresh unique ids."""
    need = n_blocks_for(input_len, block_size)
    have = np.fromiter((len(h) for h in hash_lists), dtype=np.int64, count=len(hash_lists))
    real = np.fromiter(itertools.chain.from_iterable(hash_lists), dtype=np.int64, count=int(have.sum()))
    if len(real) and int(real.max()) + int((need - have).sum()) > _INT64_MAX:  # fresh ids would overflow
        real = np.unique(real, return_inverse=True)[1].astype(np.int64).ravel()
    offsets = np.zeros(len(need) + 1, dtype=np.int64)
    np.cumsum(need, out=offsets[1:])
    ids = np.empty(offsets[-1], dtype=np.int64)
    real_pos = np.repeat(offsets[:-1], have) + np.arange(len(real)) - np.repeat(np.cumsum(have) - have, have)
    ids[real_pos] = real
    pad = np.ones(len(ids), dtype=bool)
    pad[real_pos] = False
    if pad.any():
        ids[pad] = (int(real.max()) + 1 if len(real) else 0) + np.arange(int(pad.sum()))
    return offsets, ids


def _fresh_blocks(input_len: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR block arrays where every block of every prompt is unique."""
    offsets = np.zeros(len(input_len) + 1, dtype=np.int64)
    np.cumsum(n_blocks_for(input_len, block_size), out=offsets[1:])
    return offsets, np.arange(offsets[-1], dtype=np.int64)


# ---------------------------------------------------------------------------------------- formats
@dataclass
class _Parsed:
    """What a format reader hands back before sessions and blocks are settled."""

    arrival: list[float] = field(default_factory=list)
    input_len: list[int] = field(default_factory=list)
    output_len: list[int] = field(default_factory=list)
    hashes: list[list[int]] | None = None
    parent: list[int] | None = None
    root_turn: list[int] | None = None
    gap: list[float] | None = None
    shared_prefix_blocks: list[int] | None = None  # tracelab: blocks shared with the parent
    orphans: int = 0


def _each_record(lines: _Lines, add: Callable[[dict, int], None], decode: Callable[[str], dict] = _json_object,
                 rows: Iterator[tuple[int, str]] | None = None) -> None:
    """``add(decode(text), line)`` for every line (of ``rows`` if given, else of ``lines``); a
    ``_BadField`` from either marks the line bad. ``add`` checks everything before it changes any
    state, so a bad line leaves no trace.
    """
    for lineno, text in lines if rows is None else rows:
        try:
            add(decode(text), lineno)
        except _BadField as bad:
            lines.bad(lineno, bad.field, bad.problem)


_TIME_UNITS = {"ms": 1e-3, "s": 1.0}


def _hashed_request(rec: dict, block_size: int, unit: str, out: _Parsed,
                    limits: TraceLimits) -> tuple[float, int, int, list[int]]:
    """(arrival s, input, output, hash_ids) of a Mooncake/Bailian line, checked against the previous request."""
    time_scale = _TIME_UNITS[unit]
    t = _number(rec, "timestamp") * time_scale
    if abs(t) > MAX_TIME_S:
        raise _BadField("timestamp", f"{rec['timestamp']:g} {unit} is beyond {MAX_TIME_S:g} s (~317 years)")
    inp = _tokens(rec, "input_length", limits)
    outp = _tokens(rec, "output_length", limits)
    hashes = _hash_ids(rec, inp, block_size)
    if out.arrival and t < out.arrival[-1]:
        raise _BadField("timestamp", f"{rec['timestamp']:g} {unit} is before the previous request's "
                                     f"{out.arrival[-1] / time_scale:g} {unit}: the file must be sorted by time")
    return t, inp, outp, hashes


def _append(out: _Parsed, arrival: float, input_len: int, output_len: int, hashes: list[int]) -> None:
    out.arrival.append(arrival)
    out.input_len.append(input_len)
    out.output_len.append(output_len)
    out.hashes.append(hashes)


def _parse_mooncake(lines: _Lines) -> _Parsed:
    out = _Parsed(hashes=[])

    def add(rec: dict, lineno: int) -> None:
        _append(out, *_hashed_request(rec, NATIVE_BLOCK_SIZE["mooncake"], "ms", out, lines.limits))

    _each_record(lines, add)
    return out


def _parse_bailian(lines: _Lines) -> _Parsed:
    out = _Parsed(hashes=[], parent=[], root_turn=[])
    row_of: dict[int, int] = {}  # chat_id -> row
    line_of: dict[int, int] = {}  # chat_id -> line
    awaited: dict[int, int] = {}  # parent_chat_id not seen yet -> first line naming it

    def add(rec: dict, lineno: int) -> None:
        chat = _int(rec, "chat_id")
        parent_chat = _int(rec, "parent_chat_id", minimum=-1)
        _text(rec, "type")
        turn = _int(rec, "turn", minimum=1)
        request = _hashed_request(rec, NATIVE_BLOCK_SIZE["bailian"], "s", out, lines.limits)
        if chat in row_of:
            raise _BadField("chat_id", f"duplicate chat_id {chat} (first on line {line_of[chat]})")
        if chat in awaited:
            raise _BadField("chat_id", f"chat_id {chat} is the parent of line {awaited[chat]}, which comes "
                                       f"earlier: a parent must precede its follow-ups")
        if parent_chat == chat:
            raise _BadField("parent_chat_id", f"request {chat} names itself as its parent")
        parent = row_of.get(parent_chat, -1)
        if parent >= 0 and turn != out.root_turn[parent] + 2:
            raise _BadField("turn", f"is {turn} but its parent {parent_chat} (line {line_of[parent_chat]}) has turn "
                                    f"{out.root_turn[parent] + 1}: a follow-up's turn is its parent's + 1")
        if parent_chat >= 0 and parent < 0:
            awaited.setdefault(parent_chat, lineno)
            out.orphans += 1
        row_of[chat] = len(out.arrival)
        line_of[chat] = lineno
        out.parent.append(parent)
        out.root_turn.append(turn - 1)
        _append(out, *request)

    _each_record(lines, add)
    return out


def _azure_record(text: str) -> dict:
    cells = [c.strip() for c in text.rstrip("\r\n").split(",")]
    if len(cells) != 3:
        raise _BadField(None, f"expected 3 comma-separated fields, got {len(cells)}")
    rec: dict = dict(zip(AZURE_HEADER.split(","), cells))
    try:
        rec["TIMESTAMP"] = _clock_ns(rec["TIMESTAMP"])
    except ValueError as exc:
        raise _BadField("TIMESTAMP", str(exc)) from None
    for name in ("ContextTokens", "GeneratedTokens"):
        try:
            rec[name] = int(rec[name])
        except ValueError:
            raise _BadField(name, f"must be an integer, got {_short(rec[name])}") from None
    return rec


def _azure_columns(texts: list[str], limits: TraceLimits) -> tuple[np.ndarray, list[int], list[int]] | None:
    """(clock ns, input tokens, output tokens) of Azure rows parsed all at once, or None unless every row is
    valid and in time order (then the row-by-row parser, which gives the same columns for valid rows, says what
    is wrong with which line)."""
    try:
        cells = [text.rstrip("\r\n").split(",") for text in texts]
        if any(len(row) != 3 for row in cells):
            return None
        stamps = [row[0].strip() for row in cells]
        stamps = [stamp[:-1] if stamp.endswith("Z") else stamp for stamp in stamps]
        if any(not stamp[:4].isdigit() or not _NS_YEARS[0] <= int(stamp[:4]) <= _NS_YEARS[1] for stamp in stamps):
            return None
        clock = np.array(stamps, dtype="datetime64[ns]")
        inputs = [int(row[1]) for row in cells]
        outputs = [int(row[2]) for row in cells]
    except ValueError:
        return None
    if np.isnat(clock).any() or (len(clock) > 1 and (np.diff(clock) < np.timedelta64(0, "ns")).any()):
        return None
    if not all(0 <= x <= min(limits.max_tokens, _INT64_MAX) for column in (inputs, outputs) for x in column):
        return None
    return clock.astype(np.int64), inputs, outputs


def _parse_azure(lines: _Lines) -> _Parsed:
    out = _Parsed()
    clock: list[int] = []
    rows = iter(lines)
    first = next(rows, None)
    if first is None:
        lines.check_not_empty(0)
    lineno, header = first
    if header.strip() != AZURE_HEADER:
        raise TraceFormatError(lines.path, lineno, "header", f"expected {AZURE_HEADER!r}, got {_short(header.strip())}")
    rows = list(rows)
    bulk = _azure_columns([text for _, text in rows], lines.limits)
    if bulk is not None:
        t, out.input_len, out.output_len = bulk
        out.arrival = list((t - t[0]) / 1e9) if len(t) else []
        return out

    def add(rec: dict, lineno: int) -> None:
        inp, outp = _tokens(rec, "ContextTokens", lines.limits), _tokens(rec, "GeneratedTokens", lines.limits)
        if clock and rec["TIMESTAMP"] < clock[-1]:
            raise _BadField("TIMESTAMP", "is before the previous request's time: the file must be sorted by time")
        clock.append(rec["TIMESTAMP"])
        out.input_len.append(inp)
        out.output_len.append(outp)

    _each_record(lines, add, decode=_azure_record, rows=iter(rows))
    t = np.asarray(clock, dtype=np.int64)
    out.arrival = list((t - t[0]) / 1e9) if len(t) else []
    return out


def _tracelab_times(rec: dict) -> tuple[int, int]:
    """(arrival, completion) of one round in ns: its last input event, its last own event."""
    events = _field(rec, "timing_events")
    if not isinstance(events, list) or not events:
        raise _BadField("timing_events", f"must be a non-empty list of events, got {_short(events)}")
    inputs, own = [], []
    for k, event in enumerate(events):
        kind = event.get("event_type") if isinstance(event, dict) else None
        stamp = event.get("timestamp") if isinstance(event, dict) else None
        if not isinstance(kind, str) or not isinstance(stamp, str):
            raise _BadField("timing_events", f"event {k} needs a string event_type and timestamp, got {_short(event)}")
        try:
            ns = _clock_ns(stamp)
        except ValueError as exc:
            raise _BadField("timing_events", f"event {k}: {exc}") from None
        (inputs if kind in TRACELAB_INPUT_EVENTS else own).append(ns)
    arrival = max(inputs) if inputs else min(own)
    return arrival, max(own) if own else arrival


class _Round(NamedTuple):
    arrival: int  # ns
    completion: int  # ns
    session: str
    index: int
    input_len: int
    prefix: int
    output_len: int
    line: int


def _parse_tracelab(lines: _Lines, block_size: int) -> _Parsed:
    rounds: list[_Round] = []
    line_of: dict[tuple[str, int], int] = {}

    def add(rec: dict, lineno: int) -> None:
        session, index = _text(rec, "session_id"), _int(rec, "round_index")
        inp, outp = _tokens(rec, "input_tokens_total", lines.limits), _tokens(rec, "output_tokens", lines.limits)
        prefix = _int(rec, "prefix_tokens")
        if prefix > inp:
            raise _BadField("prefix_tokens", f"{prefix} exceeds input_tokens_total {inp}")
        arrival, completion = _tracelab_times(rec)
        if (session, index) in line_of:
            raise _BadField("round_index", f"round {index} of session {session!r} already on line "
                                           f"{line_of[session, index]}")
        line_of[session, index] = lineno
        rounds.append(_Round(arrival, completion, session, index, inp, prefix, outp, lineno))

    _each_record(lines, add)
    out = _Parsed(parent=[], gap=[], shared_prefix_blocks=[])
    # The parent is the session's previous round, which must not arrive after its child.
    parent_of: dict[int, _Round] = {}  # line -> previous round of the same session
    by_session = sorted(rounds, key=lambda r: (r.session, r.index))
    for before, after in zip(by_session, by_session[1:]):
        if before.session == after.session:
            if after.arrival < before.arrival:
                raise TraceFormatError(lines.path, after.line, "timing_events",
                                       f"round {after.index} arrives before round {before.index} "
                                       f"(line {before.line}) of the same session")
            parent_of[after.line] = before
    t0 = min((r.arrival for r in rounds), default=0)
    row_of_line: dict[int, int] = {}
    for row, r in enumerate(sorted(rounds, key=lambda r: (r.arrival, r.index, r.line))):
        row_of_line[r.line] = row
        out.arrival.append((r.arrival - t0) / 1e9)
        out.input_len.append(r.input_len)
        out.output_len.append(r.output_len)
        p = parent_of.get(r.line)
        out.parent.append(-1 if p is None else row_of_line[p.line])
        out.gap.append(0.0 if p is None else max(r.arrival - p.completion, 0) / 1e9)
        out.shared_prefix_blocks.append(0 if p is None else min(r.prefix // block_size, p.input_len // block_size))
    return out


def _tracelab_blocks(parsed: _Parsed, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Fresh blocks, then each round's first shared blocks copied from its parent (parents come first)."""
    offsets, ids = _fresh_blocks(np.asarray(parsed.input_len, dtype=np.int64), block_size)
    for row, (parent, shared) in enumerate(zip(parsed.parent, parsed.shared_prefix_blocks)):
        if parent >= 0 and shared:
            ids[offsets[row]:offsets[row] + shared] = ids[offsets[parent]:offsets[parent] + shared]
    return offsets, ids


# ---------------------------------------------------------------------------------------- API
def detect_format(path: str | os.PathLike, limits: TraceLimits | None = None) -> str:
    """The format of a trace file: ``.csv`` (or ``.csv.gz``) is Azure, else its first readable line decides."""
    path = Path(path)
    suffixes = [s for s in path.suffixes if s != ".gz"]
    if suffixes and suffixes[-1] == ".csv":
        return "azure"
    if is_kvcache_tester(path):
        return "kvcache-tester"
    lines = _Lines(path, on_error="skip", limits=limits or TraceLimits.from_env())
    first_line = None
    for lineno, text in lines:
        first_line = first_line or lineno
        if text.strip().startswith("TIMESTAMP,"):
            return "azure"
        try:
            keys = set(_json_object(text))
        except _BadField:
            continue
        if "chat_id" in keys and "parent_chat_id" in keys:
            return "bailian"
        if "session_id" in keys and "round_index" in keys:
            return "tracelab"
        if "hash_ids" in keys and "timestamp" in keys:
            return "mooncake"
        raise TraceFormatError(path, lineno, None, f"cannot tell the trace format from the fields "
                                                   f"{sorted(keys)}; pass format= one of {FORMATS}")
    if first_line is None and not lines.skipped:
        raise TraceFormatError(path, 1, None, "file is empty (no requests)")
    first_bad = f" (line {lines.skipped[0].line}: {lines.skipped[0].problem})" if lines.skipped else ""
    raise TraceFormatError(path, first_line or lines.skipped[0].line, None,
                           f"no line is valid JSON or a known CSV header{first_bad}; "
                           f"cannot detect the format (pass format= one of {FORMATS})")


def read_trace(source: str | os.PathLike, *, format: str | None = None, on_error: str = "raise",
               block_size: int | None = None, infer_sessions: bool | None = None,
               name: str | None = None, limits: TraceLimits | None = None, **replay) -> LoadedTrace:
    """Read a trace (catalog name or path) into a :class:`LoadedTrace`.

    Args:
        source: a name from :data:`smetric.workload.catalog.TRACES` or a file path (gzip or plain).
        format: one of :data:`FORMATS`; detected from the content when omitted.
        on_error: ``"raise"`` (default) or ``"skip"`` (leave bad lines out, warn, list them).
        block_size: tokens per block. Hashed formats use their native size (Mooncake 512,
            Bailian 16) and coarsen to a multiple of it if asked; others default to 16.
        infer_sessions: infer sessions from the hashes (default: only for Mooncake, which has no
            session ids; ``True`` on Bailian ignores its chat ids, e.g. to test the heuristic).
        name: the workload's label (default: the catalog name or the file name).
        limits: bounds on line length and tokens (default :meth:`TraceLimits.from_env`).
        replay: kvcache-tester only: ``requests_per_minute`` or ``session_rate``, ``seed`` (arrivals)
            ``shared_prefix`` and ``subagents`` (see :mod:`smetric.workload.kvcache_tester`).
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    path = trace_path(source)
    limits = limits or TraceLimits.from_env()
    if format is None:
        format = TRACES[source].format if isinstance(source, str) and source in TRACES else detect_format(path, limits)
    if format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r}; known formats: {', '.join(FORMATS)}")
    if name is None:
        name = source if isinstance(source, str) and source in TRACES else path.name.split(".")[0]
    if format == "kvcache-tester" or replay:
        return _read_conversations(path, format, on_error, block_size, infer_sessions, name, replay)
    if infer_sessions is None:
        infer_sessions = format == "mooncake"
    if infer_sessions and format not in NATIVE_BLOCK_SIZE:
        raise ValueError(f"{format} traces carry no block hashes to infer sessions from")
    native = NATIVE_BLOCK_SIZE.get(format)
    size = block_size if block_size is not None else native or DEFAULT_BLOCK_SIZE
    if not isinstance(size, (int, np.integer)) or size <= 0 or (native and size % native):
        need = f"a multiple of {format}'s native {native}" if native else "a positive integer"
        raise ValueError(f"block_size must be {need}, got {block_size!r}")

    lines = _Lines(path, on_error, limits)
    if format == "tracelab":
        parsed = _parse_tracelab(lines, size)
    else:
        parsed = {"mooncake": _parse_mooncake, "bailian": _parse_bailian, "azure": _parse_azure}[format](lines)
    lines.check_not_empty(len(parsed.arrival))

    arrival = np.asarray(parsed.arrival, dtype=np.float64)
    input_len = np.asarray(parsed.input_len, dtype=np.int64)
    if native:
        offsets, ids = _hashed_blocks(parsed.hashes, input_len, native)
    elif format == "tracelab":
        offsets, ids = _tracelab_blocks(parsed, size)
    else:
        offsets, ids = _fresh_blocks(input_len, size)
    if infer_sessions:
        parent, root_turn = infer_parents(offsets, ids), None
    elif parsed.parent is not None:
        parent, root_turn = np.asarray(parsed.parent, dtype=np.int64), parsed.root_turn
    else:
        parent, root_turn = np.full(len(arrival), -1, dtype=np.int64), None
    session, turn = chain_sessions(parent, root_turn)
    gap = arrival_gaps(arrival, parent) if parsed.gap is None or infer_sessions else parsed.gap
    workload = Workload(arrival=arrival, input_len=input_len, output_len=parsed.output_len, session=session,
                        turn=turn, parent=parent, gap=gap, block_offsets=offsets, block_ids=ids,
                        block_size=native or size, name=name)
    if native and size != native:
        workload = workload.coarsen(size)
    orphans = 0 if infer_sessions else parsed.orphans
    if lines.skipped:
        first = lines.skipped[0]
        warnings.warn(TraceSkipWarning(
            f"{path}: skipped {len(lines.skipped)} bad line(s); first: line {first.line}: {first.problem}"
        ), stacklevel=2)
    silent = np.flatnonzero(np.asarray(parsed.output_len) == 0)
    if len(silent):
        warnings.warn(TraceNoteWarning(
            f"{path}: {len(silent)} request(s) have output length 0 (first: row {silent[0]}); the simulator "
            "generates one token for each (its first token), so they count as 1"), stacklevel=2)
    if orphans:
        warnings.warn(TraceSkipWarning(
            f"{path}: {orphans} request(s) name a parent that is not in the file; they start new sessions"
        ), stacklevel=2)
    return LoadedTrace(workload=workload, path=path, format=format, skipped=tuple(lines.skipped), orphans=orphans)


def _read_conversations(path: Path, format: str, on_error: str, block_size: int | None, infer_sessions: bool | None,
                        name: str, replay: dict) -> LoadedTrace:
    if format != "kvcache-tester":
        raise ValueError(f"{format} traces take no replay options, got {sorted(replay)}")
    if infer_sessions:
        raise ValueError("kvcache-tester traces carry their sessions; they are not inferred")
    shared_prefix = replay.pop("shared_prefix", False)
    subagents = replay.pop("subagents", DEFAULT_SUBAGENTS)
    conversations, skipped = read_conversations(path, block_size=block_size, shared_prefix=shared_prefix,
                                                on_error=on_error, name=name, subagents=subagents)
    if skipped:
        warnings.warn(TraceSkipWarning(f"{path}: skipped {len(skipped)} bad session file(s); first: "
                                       f"{skipped[0]}"), stacklevel=3)
    return LoadedTrace(workload=conversations.workload(**replay), path=path, format=format, skipped=skipped)


def load_trace(source: str | os.PathLike, **options) -> Workload:
    """The :class:`Workload` of a trace (catalog name or path); options as in :func:`read_trace`."""
    return read_trace(source, **options).workload
