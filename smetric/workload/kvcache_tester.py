"""kv-cache-tester session files (real Claude Code conversations) -> Workload.

The format (``callanjfox/kv-cache-tester``, ``docs/trace_replay_tester.md``): one JSON object per
conversation with ``block_size`` (64), ``hash_id_scope`` (``"local"``: ids are numbered per
conversation; ``"global"``: one numbering for all files), ``tool_tokens`` and ``system_tokens`` (the
tool-definition and system-prompt prefix) and ``requests[]``. A request has ``t`` (s from the
conversation's start), ``type`` (``"s"`` streaming, ``"n"`` non-streaming, or ``"subagent"`` with its
own nested ``requests[]`` whose ``t`` is relative to the spawn), ``in``/``out`` tokens, ``hash_ids``
(the prompt's full 64-token blocks; chained: an id fixes its position and whole prefix),
optionally ``think_time`` (client delay before the call, s) and ``api_time`` (server time, s).

A trace is a folder of such files, a ``.tar``/``.tar.gz`` of them, or one file. How it maps onto
the :class:`~smetric.workload.Workload`:

- **sessions**: each conversation's own calls form one session (parent = its previous call). Sub-agents
  (``subagents=``):

  - ``"attached"`` (default): a sub-agent's calls stay in its conversation's session, as fan-out children.
    Its first call's parent is the *spawning call* (the conversation's last call before the sub-agent
    entry), its calls chain (turn = the spawning call's turn + 1, + 2, ...), and its last call names the
    conversation's next call in ``Workload.join_to``: closed replay releases that call once the spawning
    call and every sub-agent joining it have ended, ``gap`` after the last. Sub-agents listed one after
    another belong to the same spawning call and run concurrently. Timing from the trace, corrected: a
    sub-agent entry's ``t`` is when its result came back, so it **started** ``duration_ms`` earlier (on the
    Claude Code trace that start lies 0.1-1.0 s, median 0.5 s, after the spawning call's end, and every
    completed sub-agent ends before the conversation's next call; placed at ``t`` itself, as ``"separate"``
    does, 50 of the 63 sub-agents would still run when that call arrives). So a sub-agent's calls arrive at
    start + spawn ``t`` - ``duration_ms`` + their own ``t``; its first call's gap is the time from the
    spawning call's end (``t + api_time``), and the joined call's gap is counted from the last end among
    the spawning call and its joiners (at most the recorded gap, at least 0). A sub-agent with ``status``
    ``"async_launched"`` (started in the background; the conversation goes on without it), one after the
    conversation's last call, or one whose next call arrives before its last call joins nothing. Nested
    sub-agents (none in the Claude Code trace) attach to the chain that spawned them the same way.
  - ``"separate"``: each sub-agent is a session of its own, as kv-cache-tester replays it as a separate
    user, its calls placed at start + spawn ``t`` + their own ``t`` (the mapping before fan-out, kept bit
    for bit).

  Either way a sub-agent's block ids live in the parent conversation's id space, so prefix reuse between
  them is counted. On the Claude Code trace: 710 conversations, 63 sub-agents (676 calls, in 17
  conversations; none nested), 57 of them joined (4 async, 2 after the last call); 710 sessions attached,
  773 separate.
- **block ids**: local ids are offset per conversation (equal ids in different conversations mean
  nothing); the trailing partial block gets a fresh id. The ids are checked to be chained.
- **arrivals**: the data has no absolute time. Conversations start as a Poisson process at an
  offered rate (seeded ``numpy.random.Generator``): each once in a random order, or, over a time
  window, drawn with replacement (:meth:`Conversations.workload`); a call arrives at its
  conversation's start plus its recorded ``t`` (a sub-agent's as above).
- **gap** (think time, from the parent's completion, used by closed replay): ``think_time``, capped at
  ``t - t_prev``; where it is absent, ``t - t_prev - api_time_prev`` (clipped at 0), or ``t - t_prev``
  without ``api_time``. The cap matters: ``think_time`` counts from the last call that *completed* with
  an ``api_time``, so after a call without one (4,274 of the 49,334 calls of the Claude Code trace) it
  can exceed the time since that call's start (4,099 times, by up to 6,688 s), which closed replay would
  turn into hours of delay after the parent's finish.
- **shared prefix** (``shared_prefix=True``, off by default): the first ``(tool_tokens +
  system_tokens) // block_size`` blocks of every call are taken as common to all conversations
  (one canonical prefix for the conversations, one per sub-agent type), as a deployment serving
  every user the same Claude Code tool definitions and system prompt would see. An assumption and
  an upper bound: in the data the prefix lengths differ across conversations (Claude Code versions,
  MCP tool sets, CLAUDE.md files), so true cross-conversation sharing is smaller.

Bad input raises :class:`TraceFormatError` naming the file (``archive:member`` inside a tar), the
line and the field as a JSON path (``requests[12].in``); ``on_error="skip"`` leaves bad files out.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from .arrivals import POISSON, ArrivalProcess, session_starts
from .core import Workload, n_blocks_for
from .errors import TraceFormatError

__all__ = ["FORMAT", "DEFAULT_REQUESTS_PER_MINUTE", "DEFAULT_SUBAGENTS", "SUBAGENT_MODES", "Conversations",
           "is_kvcache_tester", "read_conversations"]

FORMAT = "kvcache-tester"
#: Default offered load: 45 requests/min/instance (the paper's 43-48, Finding 6) on 32 instances,
#: the same default as the synthetic generator.
DEFAULT_REQUESTS_PER_MINUTE = 45.0 * 32
SCOPES = ("local", "global")
#: How sub-agents map onto sessions (module docstring): attached to their conversation, or sessions of their own.
SUBAGENT_MODES = ("attached", "separate")
DEFAULT_SUBAGENTS = "attached"
_HASHES = re.compile(rb'"hash_ids"\s*:\s*\[')
_SLOT = "\x00hash_ids"  # placeholder key for a cut-out hash list (a NUL never appears in a real key)
_SLOT_JSON = json.dumps(_SLOT).encode()


# ---------------------------------------------------------------------------------------- members
def _members(path: Path) -> Iterator[tuple[str, bytes]]:
    """(display name, bytes) of every session file: a folder's ``*.json``, a tar's members, or the file."""
    if path.is_dir():
        for member in sorted(path.glob("*.json")):
            yield str(member), member.read_bytes()
        return
    if tarfile.is_tarfile(path):
        try:
            with tarfile.open(path, "r:*") as archive:
                for info in archive:
                    if info.isfile() and info.name.endswith(".json") and not Path(info.name).name.startswith("."):
                        yield f"{path}:{info.name}", archive.extractfile(info).read()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise TraceFormatError(path, 1, None, f"truncated or corrupt archive ({exc})") from exc
        return
    yield str(path), path.read_bytes()


def is_kvcache_tester(path: str | os.PathLike) -> bool:
    """True for a folder or tar archive (the format's containers) or a JSON file whose object starts
    with the format's top-level keys."""
    path = Path(path)
    if path.is_dir() or (path.is_file() and tarfile.is_tarfile(path)):
        return True
    if not path.is_file():
        return False
    with open(path, "rb") as fh:
        head = fh.read(4096)
    return head.lstrip().startswith(b"{") and b'"requests"' in head and b'"block_size"' in head


# ---------------------------------------------------------------------------------------- hash lists
@njit(cache=True)
def _parse_int_lists(buf, starts, ends):
    """Integers of every span ``buf[starts[k]:ends[k]]`` (comma-separated, optional spaces and minus).

    Returns (values, counts per span, first bad span or -1, byte offset of the problem).
    """
    total = 0
    for k in range(len(starts)):
        digits = False
        for p in range(starts[k], ends[k]):
            c = buf[p]
            if c == 44:  # ','
                total += 1
            elif 48 <= c <= 57:
                digits = True
        if digits:
            total += 1
    values = np.empty(total, dtype=np.int64)
    counts = np.zeros(len(starts), dtype=np.int64)
    n = 0
    for k in range(len(starts)):
        state = 0  # 0: before a number, 1: in digits, 2: after a number (spaces), 3: after a minus
        value = 0
        sign = 1
        for p in range(starts[k], ends[k]):
            c = buf[p]
            if 48 <= c <= 57:
                if state == 2 or value > 922337203685477579:
                    return values, counts, k, p
                value = value * 10 + (c - 48)
                state = 1
            elif c == 45 and state == 0:  # '-'
                sign = -1
                state = 3
            elif c == 44 and (state == 1 or state == 2):  # ','
                values[n] = sign * value
                n += 1
                counts[k] += 1
                value = 0
                sign = 1
                state = 0
            elif c == 32 or c == 10 or c == 13 or c == 9:
                if state == 1:
                    state = 2
                elif state == 3:
                    return values, counts, k, p
            else:
                return values, counts, k, p
        if state == 1 or state == 2:
            values[n] = sign * value
            n += 1
            counts[k] += 1
        elif state == 3 or counts[k] > 0:  # a trailing comma or minus
            return values, counts, k, ends[k]
    return values[:n], counts, -1, 0


@njit(cache=True)
def _fill_blocks(values, start, have, offsets, n_ids, prefix, family, width):
    """CSR block ids of every call: its trace ids (``values[start:start+have]``, dense, below ``n_ids``),
    the first ``prefix`` of them replaced by the canonical ids of the call's ``family`` when ``width``
    > 0, then a fresh id per block beyond them. Also checks the trace ids are chained (an id keeps its
    position and predecessor); returns (ids, call, position) of the first violation or (ids, -1, -1)."""
    ids = np.empty(offsets[-1], dtype=np.int64)
    pos = np.full(n_ids, -1, dtype=np.int64)
    pred = np.full(n_ids, -2, dtype=np.int64)
    canonical = n_ids
    fresh = n_ids + (np.max(family) + 1) * width if width > 0 and len(family) else n_ids
    for i in range(len(start)):
        prev = -1
        out = offsets[i]
        for j in range(have[i]):
            b = values[start[i] + j]
            if pos[b] == -1:
                pos[b] = j
                pred[b] = prev
            elif pos[b] != j or pred[b] != prev:
                return ids, i, j
            prev = b
            ids[out + j] = canonical + family[i] * width + j if j < prefix[i] else b
        for j in range(have[i], offsets[i + 1] - out):
            ids[out + j] = fresh
            fresh += 1
    return ids, -1, -1


@njit(cache=True)
def _gather(block_ids, old_offsets, calls, new_offsets, shift):
    """Block ids of ``calls`` (CSR), row ``r``'s shifted by ``shift[r]``."""
    out = np.empty(new_offsets[-1], dtype=np.int64)
    for r in range(len(calls)):
        lo = old_offsets[calls[r]]
        for j in range(new_offsets[r + 1] - new_offsets[r]):
            out[new_offsets[r] + j] = block_ids[lo + j] + shift[r]
    return out


# ---------------------------------------------------------------------------------------- parsing
class _Bad(Exception):
    def __init__(self, field: str | None, problem: str, line: int = 1) -> None:
        super().__init__(problem)
        self.field, self.problem, self.line = field, problem, line


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _get(rec: dict, key: str, where: str, kind: str, *, minimum: float | None = 0, optional: bool = False):
    if key not in rec:
        if optional:
            return None
        raise _Bad(where + key, "missing")
    value = rec[key]
    if kind == "int":
        ok = type(value) is int
    elif kind == "number":
        ok = type(value) in (int, float) and math.isfinite(value)
    else:
        ok = isinstance(value, str)
    if not ok:
        need = {"int": "an integer", "number": "a finite number", "str": "a string"}[kind]
        raise _Bad(where + key, f"must be {need}, got {_short(value)}")
    if minimum is not None and kind != "str" and value < minimum:
        raise _Bad(where + key, f"is negative ({value})" if minimum == 0 else f"must be >= {minimum}, got {value}")
    return value


@dataclass
class _Calls:
    """Per-call columns gathered over all files (each chain's calls contiguous and in order)."""

    conversation: list[int]
    chain: list[int]
    t: list[float]
    input_len: list[int]
    output_len: list[int]
    gap: list[float]
    prefix_blocks: list[int]   # tool + system blocks of the call's chain
    family: list[int]          # 0 = a conversation, k > 0 = sub-agent type k
    slot: list[int]            # index of the call's hash list in its file's spans
    t_start: list[float]       # t with sub-agents placed at their start (entry ``t`` - ``duration_ms``)
    api: list[float]           # api_time (NaN where absent)
    spawned_by: list[tuple[int, int]]  # first call of a sub-agent: (chain, position) of the spawning call
    joins: list[tuple[int, int]]       # last call of a waited-for sub-agent: (chain, position) of the next call


def _cut_hash_lists(blob: bytes) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The document with every ``"hash_ids": [...]`` replaced by a numbered placeholder object (same
    line count), and the byte spans of the list contents."""
    pieces, starts, ends = [], [], []
    last = 0
    for match in _HASHES.finditer(blob):
        if match.start() < last:
            continue
        end = blob.find(b"]", match.end())
        if end < 0:
            break  # leave it: the JSON parser reports the unterminated list
        starts.append(match.end())
        ends.append(end)
        pieces += [blob[last:match.start()], b'"hash_ids": {%s: %d}' % (_SLOT_JSON, len(starts) - 1),
                   b"\n" * blob.count(b"\n", match.end(), end)]
        last = end + 1
    pieces.append(blob[last:])
    return b"".join(pieces), np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)


def _parse_file(blob: bytes, calls: _Calls, conversation: int, first_chain: int, families: dict[str, int]
                ) -> tuple[dict, np.ndarray, np.ndarray, int]:
    """Parse one session file into ``calls`` (only when the whole file is good); returns its top-level
    object, its hash values and per-slot counts, and the number of chains it holds."""
    skeleton, starts, ends = _cut_hash_lists(blob)
    try:
        doc = json.loads(skeleton)
    except UnicodeDecodeError as exc:
        raise _Bad(None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _Bad(None, f"not valid JSON ({exc.msg} at column {exc.colno})", exc.lineno) from None
    if not isinstance(doc, dict):
        raise _Bad(None, f"a session file must hold a JSON object, got {type(doc).__name__}")
    block_size = _get(doc, "block_size", "", "int", minimum=1)
    scope = _get(doc, "hash_id_scope", "", "str", optional=True) or "local"
    if scope not in SCOPES:
        raise _Bad("hash_id_scope", f"must be one of {SCOPES}, got {_short(scope)}")
    buf = np.frombuffer(blob, dtype=np.uint8)
    values, counts, bad, at = _parse_int_lists(buf, starts, ends)
    if bad >= 0:
        raise _Bad("hash_ids", f"not a list of 64-bit integers (at byte {at})", blob.count(b"\n", 0, at) + 1)

    def line_of(slot: int | None) -> int:
        return 1 if slot is None else blob.count(b"\n", 0, int(starts[slot])) + 1

    local = _Calls(*([] for _ in range(len(_Calls.__dataclass_fields__))))
    used: set[int] = set()
    n_chains = 0

    def walk(requests: object, where: str, spawn: float, start: float, prefix: int, family: int,
             spawned_by: tuple[int, int], joins: tuple[int, int]) -> None:
        nonlocal n_chains
        if not isinstance(requests, list) or not requests:
            raise _Bad(where.rstrip(".") or "requests", f"must be a non-empty list of requests, got {_short(requests)}")
        chain = first_chain + n_chains
        n_chains += 1
        rows = []  # this chain's calls, added after any sub-agent's so that every chain is contiguous
        prev_t = prev_api = None
        for k, rec in enumerate(requests):
            here = f"{where}[{k}]."
            if not isinstance(rec, dict):
                raise _Bad(here.rstrip("."), f"a request must be a JSON object, got {_short(rec)}")
            slot_obj = rec.get("hash_ids")
            slot = slot_obj.get(_SLOT) if isinstance(slot_obj, dict) and len(slot_obj) == 1 else None
            try:
                kind = _get(rec, "type", here, "str")
                t = _get(rec, "t", here, "number")
                if kind == "subagent":
                    sub_prefix = (_get(rec, "tool_tokens", here, "int", optional=True) or 0) + \
                                 (_get(rec, "system_tokens", here, "int", optional=True) or 0)
                    sub_type = _get(rec, "subagent_type", here, "str", optional=True) or "subagent"
                    sub_family = families.setdefault(sub_type, len(families) + 1)
                    ran = 0.0 if rec.get("duration_ms") is None else _get(rec, "duration_ms", here, "number")
                    waited = _get(rec, "status", here, "str", optional=True) != "async_launched"
                    walk(rec.get("requests"), here + "requests", spawn + t, start + t - ran / 1000.0,
                         sub_prefix // block_size, sub_family, (chain, len(rows) - 1) if rows else spawned_by,
                         (chain, len(rows)) if waited else (-1, -1))
                    continue
                inp = _get(rec, "in", here, "int")
                out = _get(rec, "out", here, "int")
                think = _get(rec, "think_time", here, "number", optional=True)
                api = _get(rec, "api_time", here, "number", optional=True)
                if type(slot) is not int or not 0 <= slot < len(starts) or slot in used:
                    raise _Bad(here + "hash_ids", f"must be a list of integers, got {_short(rec.get('hash_ids'))}")
                used.add(slot)
                allowed = -(-inp // block_size)
                if counts[slot] > allowed:
                    raise _Bad(here + "hash_ids", f"has {counts[slot]} ids but in={inp} allows at most {allowed} "
                                                  f"blocks of {block_size} tokens")
                if prev_t is not None and t < prev_t:
                    raise _Bad(here + "t", f"{t:g} s is before the previous call's {prev_t:g} s of the same "
                                           f"{'sub-agent' if family else 'conversation'}")
            except _Bad as exc:
                exc.line = line_of(slot if type(slot) is int and 0 <= slot < len(starts) else None)
                raise
            if prev_t is None:
                gap = 0.0
            elif think is not None:
                gap = min(float(think), t - prev_t)
            elif prev_api is not None:
                gap = max(t - prev_t - prev_api, 0.0)
            else:
                gap = t - prev_t
            rows.append((conversation, chain, spawn + t, inp, out, gap, prefix, family, slot, start + t,
                         math.nan if api is None else float(api), spawned_by if not rows else (-1, -1), (-1, -1)))
            prev_t, prev_api = t, api
        if not rows:
            raise _Bad(where, "holds only sub-agents: a conversation or sub-agent needs calls of its own")
        rows[-1] = rows[-1][:-1] + (joins,)
        for column, values in zip(local.__dict__.values(), zip(*rows)):
            column.extend(values)

    prefix = _get(doc, "tool_tokens", "", "int") + _get(doc, "system_tokens", "", "int")
    if "requests" not in doc:
        raise _Bad("requests", "missing")
    walk(doc["requests"], "requests", 0.0, 0.0, prefix // block_size, 0, (-1, -1), (-1, -1))
    for column, more in zip(calls.__dict__.values(), local.__dict__.values()):
        column.extend(more)
    return doc, values, counts, n_chains


# ---------------------------------------------------------------------------------------- the trace
@dataclass(frozen=True, eq=False)
class Conversations:
    """Parsed kv-cache-tester conversations, without absolute time (one row per call).

    Calls are grouped by chain (a conversation's own calls, or one sub-agent's), each chain in order
    (a sub-agent's chain before the calls of the chain that spawned it). ``t`` is the call's time from its
    conversation's start. Block ids are the Workload's chained ids (full blocks from the trace, a fresh id
    for a partial tail). The fields after ``name`` (filled by :func:`read_conversations`) give each call's
    place in its session under the ``subagents`` mapping.
    """

    conversation: np.ndarray
    chain: np.ndarray
    t: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    gap: np.ndarray
    block_offsets: np.ndarray
    block_ids: np.ndarray
    block_size: int
    names: tuple[str, ...]
    name: str = "kvcache-tester"
    family: np.ndarray = None         # 0: a conversation's own call; k > 0: a call of a sub-agent of type k
    api_time: np.ndarray = None       # the call's recorded server time (s; NaN where absent)
    parent_call: np.ndarray = None    # the call's parent call (index into these rows) or -1
    join_call: np.ndarray = None      # the call that waits for this one (a sub-agent's last call) or -1
    call_turn: np.ndarray = None      # the call's turn in its session
    session_chain: np.ndarray = None  # the chain whose number the call's session takes
    subagents: str = DEFAULT_SUBAGENTS

    @property
    def n_conversations(self) -> int:
        """Number of conversations (files)."""
        return len(self.names)

    @property
    def calls_per_conversation(self) -> float:
        """Mean calls per conversation, sub-agent calls included."""
        return len(self.t) / self.n_conversations

    def workload(self, *, requests_per_minute: float | None = None, session_rate: float | None = None,
                 seed: int = 0, duration: float | None = None, warmup: float = 0.0,
                 arrival: ArrivalProcess = POISSON) -> Workload:
        """The calls in time: conversations start as a Poisson process (seeded), or by ``arrival``.

        At most one of ``requests_per_minute`` (long-run request rate; conversations per second =
        rate / 60 / :attr:`calls_per_conversation`) and ``session_rate`` (conversations per second);
        neither means :data:`DEFAULT_REQUESTS_PER_MINUTE`. Without ``duration`` every conversation
        starts once, in a seeded random order; conversations last up to days, so such a trace never
        reaches the rate in steady state (the rate only sets how densely they overlap). With
        ``duration`` (s), conversations start over ``[-warmup, duration)``, each drawn uniformly with
        replacement (a copy gets block ids and a session of its own: another user with the same
        history), and the calls arriving in ``[0, duration)`` are kept (cut conversations keep their
        turn numbers): with a warmup of several hours the window runs close to the rate. ``arrival`` (with
        ``duration`` only) is the conversation-start process (:func:`~smetric.workload.arrivals.session_starts`;
        the default Poisson draws what this method drew before it took the argument).
        """
        if requests_per_minute is not None and session_rate is not None:
            raise ValueError("give at most one of requests_per_minute and session_rate")
        if session_rate is None:
            rpm = DEFAULT_REQUESTS_PER_MINUTE if requests_per_minute is None else requests_per_minute
            if not (rpm > 0 and math.isfinite(rpm)):
                raise ValueError(f"requests_per_minute must be a positive number, got {requests_per_minute!r}")
            session_rate = rpm / 60.0 / self.calls_per_conversation
        if not (session_rate > 0 and math.isfinite(session_rate)):
            raise ValueError(f"session_rate must be a positive number, got {session_rate!r}")
        rng = np.random.default_rng(seed)
        if duration is None:
            if arrival != POISSON:
                raise ValueError(f"arrival {arrival!r} needs a duration (the starts of a window)")
            which = rng.permutation(self.n_conversations)
            start = np.cumsum(rng.exponential(1.0 / session_rate, self.n_conversations))
            return self._placed(which, start)
        if not (duration > 0 and math.isfinite(duration)) or not (warmup >= 0 and math.isfinite(warmup)):
            raise ValueError(f"duration must be > 0 and warmup >= 0 (s), got duration={duration!r}, warmup={warmup!r}")
        start = session_starts(rng, arrival, session_rate, None, duration, warmup)
        return self._placed(rng.integers(0, self.n_conversations, len(start)), start, begin=0.0, end=duration)

    def _placed(self, which: np.ndarray, start: np.ndarray, begin: float = -np.inf, end: float = np.inf) -> Workload:
        """Copy ``k`` of the conversations is conversation ``which[k]`` starting at ``start[k]``; only the calls
        arriving in ``[begin, end)`` are kept (as ``Workload.window`` would, without building the rest: a
        call whose predecessor arrived before ``begin`` has no parent; cut sessions keep their turn numbers)."""
        by_conversation = np.argsort(which, kind="stable")  # the k-th copy of a conversation: ids, sessions of its own
        group_start = np.searchsorted(which[by_conversation], which[by_conversation])
        repeat = np.empty(len(which), dtype=np.int64)
        repeat[by_conversation] = np.arange(len(which)) - group_start
        n_calls = np.bincount(self.conversation, minlength=self.n_conversations)
        first_call = np.concatenate([[0], np.cumsum(n_calls)[:-1]])
        counts = n_calls[which]
        copy = np.repeat(np.arange(len(which)), counts)
        call = np.repeat(first_call[which] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) \
            + np.arange(int(counts.sum()))
        arrival = start[copy] + self.t[call]
        keep = (arrival >= begin) & (arrival < end)
        # a copy's calls are contiguous, in the order of the rows: a call ``d`` rows away is ``d`` places away
        placed = np.arange(len(call))
        parent_at = np.where(self.parent_call[call] >= 0, placed - call + self.parent_call[call], -1)
        join_at = np.where(self.join_call[call] >= 0, placed - call + self.join_call[call], -1)
        kept_rank = np.cumsum(keep) - 1
        cut = keep & (parent_at >= 0) & ~keep[np.maximum(parent_at, 0)]  # its parent arrived before ``begin``
        joined = keep & (join_at >= 0) & keep[np.maximum(join_at, 0)]
        copy, call, arrival, cut = copy[keep], call[keep], arrival[keep], cut[keep]
        parent_at, join_at, joined = parent_at[keep], join_at[keep], joined[keep]
        n = len(call)
        order = np.lexsort((np.arange(n), arrival))
        row = np.empty(n, dtype=np.int64)
        row[order] = np.arange(n)
        parent = np.where((parent_at < 0) | cut, -1, row[kept_rank[np.maximum(parent_at, 0)]])
        join_to = np.where(joined, row[kept_rank[np.maximum(join_at, 0)]], -1)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.diff(self.block_offsets)[call[order]], out=offsets[1:])
        id_span = int(self.block_ids.max(initial=-1)) + 1
        n_chains = int(self.chain.max(initial=-1)) + 1
        call, copy = call[order], copy[order]
        return Workload(arrival=arrival[order], input_len=self.input_len[call], output_len=self.output_len[call],
                        session=self.session_chain[call] + n_chains * repeat[copy], turn=self.call_turn[call],
                        parent=parent[order], gap=np.where(cut[order], 0.0, self.gap[call]), block_offsets=offsets,
                        block_ids=_gather(self.block_ids, self.block_offsets, call, offsets, id_span * repeat[copy]),
                        block_size=self.block_size, name=self.name, join_to=join_to[order])


def read_conversations(source: str | os.PathLike, *, block_size: int | None = None, shared_prefix: bool = False,
                       on_error: str = "raise", name: str | None = None,
                       subagents: str = DEFAULT_SUBAGENTS) -> tuple[Conversations, tuple]:
    """Parse a folder, tar archive or file of kv-cache-tester sessions.

    Returns the :class:`Conversations` and the :class:`TraceFormatError` of every file left out
    (``on_error="skip"``). ``block_size`` coarsens to a multiple of the files' block size.
    ``subagents``: ``"attached"`` (default: a sub-agent's calls stay in its conversation's session, its last
    call joined by the conversation's next call) or ``"separate"`` (a session of its own, the loader's
    mapping before fan-out); see the module docstring.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if subagents not in SUBAGENT_MODES:
        raise ValueError(f"subagents must be one of {SUBAGENT_MODES}, got {subagents!r}")
    path = Path(source)
    calls = _Calls(*([] for _ in range(len(_Calls.__dataclass_fields__))))
    families: dict[str, int] = {}
    names: list[str] = []
    hash_values: list[np.ndarray] = []   # per file, by slot
    hash_counts: list[np.ndarray] = []
    skipped: list[TraceFormatError] = []
    sizes, scopes = set(), set()
    n_chains = 0
    for member, blob in _members(path):
        try:
            doc, values, counts, chains = _parse_file(blob, calls, len(names), n_chains, families)
        except _Bad as bad:
            err = TraceFormatError(member, bad.line, bad.field, bad.problem)
            if on_error == "raise":
                raise err from None
            skipped.append(err)
            continue
        sizes.add(doc["block_size"])
        scopes.add(doc.get("hash_id_scope", "local"))
        if len(sizes) > 1 or len(scopes) > 1:
            what = "block_size" if len(sizes) > 1 else "hash_id_scope"
            seen = sorted(map(str, sizes if what == "block_size" else scopes))
            raise TraceFormatError(member, 1, what, f"differs from the files before it ({', '.join(seen)}): one trace "
                                                    "needs one block size and one id scope")
        names.append(member)
        hash_values.append(values)
        hash_counts.append(counts)
        n_chains += chains
    if not names:
        raise TraceFormatError(skipped[-1].path if skipped else path, skipped[-1].line if skipped else 1, None,
                               f"no valid session files: all {len(skipped)} were bad" if skipped
                               else "no session files (*.json) found")
    native = sizes.pop()
    conversations = _assemble(calls, hash_values, hash_counts, native, scopes.pop() == "global", shared_prefix,
                              names, name or path.name.split(".")[0], subagents)
    if block_size is not None and block_size != native:
        conversations = _coarsened(conversations, block_size)
    return conversations, tuple(skipped)


def _structure(calls: _Calls, subagents: str) -> dict[str, np.ndarray]:
    """Per call: time, gap, parent call, joined call, turn and session chain of either sub-agent mapping
    (module docstring)."""
    chain = np.asarray(calls.chain, dtype=np.int64)
    n = len(chain)
    rows = np.arange(n)
    chain_first = np.ones(n, dtype=bool)
    chain_first[1:] = chain[1:] != chain[:-1]
    first_row = np.zeros(int(chain.max(initial=-1)) + 1, dtype=np.int64)
    first_row[chain[::-1]] = rows[::-1]
    parent = np.where(chain_first, -1, rows - 1)
    if subagents == "separate":
        return {"t": np.asarray(calls.t, dtype=np.float64), "gap": np.asarray(calls.gap, dtype=np.float64),
                "parent_call": parent, "join_call": np.full(n, -1, dtype=np.int64),
                "call_turn": rows - first_row[chain], "session_chain": chain}
    t = np.asarray(calls.t_start, dtype=np.float64)
    gap = np.asarray(calls.gap, dtype=np.float64).copy()
    end = t + np.nan_to_num(np.asarray(calls.api, dtype=np.float64))
    chain_len = np.bincount(chain, minlength=len(first_row))
    join = np.full(n, -1, dtype=np.int64)
    for r in np.flatnonzero(chain_first):
        sc, sp = calls.spawned_by[r]
        if sc >= 0:
            parent[r] = first_row[sc] + sp
            gap[r] = max(t[r] - end[parent[r]], 0.0)
    last = np.flatnonzero(np.append(chain_first[1:], True))
    for r in last:
        jc, jp = calls.joins[r]
        if jc >= 0 and jp < chain_len[jc] and t[first_row[jc] + jp] >= t[r]:
            join[r] = first_row[jc] + jp
    for target in np.unique(join[join >= 0]):  # the next call waits for the spawner and every joiner, then gap
        waited = max(end[parent[target]], end[join == target].max())
        gap[target] = max(min(gap[target], t[target] - waited), 0.0)
    turn = rows - first_row[chain]
    for c in range(len(first_row)):  # an enclosing chain has a lower number than its sub-agents
        r = first_row[c]
        if parent[r] >= 0:
            turn[r:r + chain_len[c]] += turn[parent[r]] + 1
    conv = np.asarray(calls.conversation, dtype=np.int64)
    root = np.full(int(conv.max(initial=-1)) + 1, np.iinfo(np.int64).max)
    np.minimum.at(root, conv, chain)
    return {"t": t, "gap": gap, "parent_call": parent, "join_call": join, "call_turn": turn,
            "session_chain": root[conv]}


def _assemble(calls: _Calls, hash_values, hash_counts, block_size: int, global_scope: bool, shared_prefix: bool,
              names: list[str], name: str, subagents: str) -> Conversations:
    conv = np.asarray(calls.conversation, dtype=np.int64)
    slot = np.asarray(calls.slot, dtype=np.int64)
    input_len = np.asarray(calls.input_len, dtype=np.int64)
    if global_scope:  # one numbering for every file
        values = np.concatenate(hash_values)
        n_ids = _dense(values, out=values, base=0)
    else:  # each file's ids on a range of their own
        values, n_ids, at = np.empty(sum(len(v) for v in hash_values), dtype=np.int64), 0, 0
        for file_values in hash_values:
            n = _dense(file_values, out=values[at:at + len(file_values)], base=n_ids)
            at += len(file_values)
            n_ids += n
    # where each call's ids start in ``values``: its file's first value + its slot's place in the file
    file_first = np.concatenate([[0], np.cumsum([len(v) for v in hash_values])])
    slot_first = [np.concatenate([[0], np.cumsum(c)]) for c in hash_counts]
    start = np.array([file_first[f] + slot_first[f][k] for f, k in zip(conv.tolist(), slot.tolist())], dtype=np.int64)
    have = np.array([hash_counts[f][k] for f, k in zip(conv.tolist(), slot.tolist())], dtype=np.int64)
    offsets = np.zeros(len(conv) + 1, dtype=np.int64)
    np.cumsum(n_blocks_for(input_len, block_size), out=offsets[1:])
    prefix = np.asarray(calls.prefix_blocks, dtype=np.int64) if shared_prefix else np.zeros(len(conv), np.int64)
    ids, bad_call, bad_pos = _fill_blocks(values, start, have, offsets, n_ids, prefix,
                                          np.asarray(calls.family, dtype=np.int64), int(prefix.max(initial=0)))
    if bad_call >= 0:
        raise TraceFormatError(names[conv[bad_call]], 1, "hash_ids",
                               f"ids are not chained prefix hashes: id {values[start[bad_call] + bad_pos]} at "
                               f"position {bad_pos} of the call at t={calls.t[bad_call]:g} s also appears at "
                               f"another position or after another id")
    mapped = _structure(calls, subagents)
    return Conversations(conversation=conv, chain=np.asarray(calls.chain, dtype=np.int64), t=mapped["t"],
                         input_len=input_len, output_len=np.asarray(calls.output_len, dtype=np.int64),
                         gap=mapped["gap"], block_offsets=offsets, block_ids=ids, block_size=block_size,
                         names=tuple(names), name=name, family=np.asarray(calls.family, dtype=np.int64),
                         api_time=np.asarray(calls.api, dtype=np.float64), parent_call=mapped["parent_call"],
                         join_call=mapped["join_call"], call_turn=mapped["call_turn"],
                         session_chain=mapped["session_chain"], subagents=subagents)


def _dense(values: np.ndarray, out: np.ndarray, base: int) -> int:
    """Write ``base`` + the ids as ``0..n-1`` (shifted when already compact, else ranked) into ``out``; returns n."""
    if len(values) == 0:
        return 0
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < 2 * len(values) + 1024:
        np.subtract(values, lo - base, out=out)
        return hi - lo + 1
    uniq, inverse = np.unique(values, return_inverse=True)
    out[:] = inverse + base
    return len(uniq)


def _coarsened(c: Conversations, block_size: int) -> Conversations:
    """Re-block to a multiple of the native block size (chained ids: the id of each coarse block's last fine block)."""
    workload = Workload(arrival=np.zeros(len(c.t)), input_len=c.input_len, output_len=c.output_len,
                        session=np.arange(len(c.t)), turn=np.zeros(len(c.t), dtype=np.int64),
                        parent=np.full(len(c.t), -1), gap=np.zeros(len(c.t)), block_offsets=c.block_offsets,
                        block_ids=c.block_ids, block_size=c.block_size).coarsen(block_size)
    return replace(c, block_offsets=workload.block_offsets, block_ids=workload.block_ids, block_size=block_size)


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
