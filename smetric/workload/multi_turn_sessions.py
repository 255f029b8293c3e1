"""Closed-loop multi-turn sessions (``workload.kind: multi-turn-sessions``): N concurrent sessions x T turns.

The shape is zxuhan/llm-router's trace generator (``internal/trace/trace.go`` and its replay client
``internal/trace/replay.go`` @ ``53c750f``), the defaults its published cloud sweep's values:

* **Prompts grow by extension.** Turn 0 sends a shared system prefix (``system_tokens``, the same text in every
  session), for a ``second_prefix_share`` of the sessions a second shared prefix (``second_prefix_tokens``: the
  "code context" message), then the turn's own tokens; every later prompt is the previous prompt plus an
  increment: the reply that enters the history, the user message (``user_tokens_min..max``), for a
  ``tool_share`` of the turns a tool loop (an assistant tool call of ``tool_call_tokens`` and a tool result of
  ``tool_result_tokens_min..max``) and the generation prompt (``generation_prompt_tokens``; the next prompt's
  copy of it opens the reply message, so each prompt is an exact prefix of the next one).
* **The reply in the history.** ``reply_in_history: false`` (the generator's behaviour): a fixed synthetic reply
  of ``synthetic_reply_tokens`` ("ack tN") is appended instead of the model's reply, so the reply's KV is never
  reused; ``true``: the previous turn's generated tokens are appended.
* **Output lengths per turn type** (``output_first`` on turn 0, ``output_after_tool`` on a later tool-loop turn,
  ``output_follow_up`` on the other turns), capped at ``max_tokens``: the model's choice, not the harness's, so
  the spec states them.
* **Send floors, zero think time.** Session ``s`` starts at ``U{0..start_spread_ms}`` ms; turn ``t`` is sent no
  earlier than ``start + floor_step_ms * t + U{0..floor_jitter_ms}`` ms and only after turn ``t - 1``'s response
  arrived (closed replay: each turn's parent is the previous one, gap 0, and its arrival is the floor; a floor
  below the previous turn's is raised to it, which changes nothing since the parent's response comes later).
* **A token table** (``token_table``: a CSV, path absolute or relative to the data directory) replaces the
  random composition with exact per-request counts: columns ``seed, session, turn, code, tool, start_ms,
  min_send_ms, new_tokens, prompt_tokens`` (the run's seed selects the rows; a run of N sessions sends the first
  N sessions). ``data/validation/tables/zxuhan_llm_router_trace_tokens.csv`` is the cloud sweep's (see its
  README). Its prompts already hold the synthetic reply, so ``reply_in_history`` must stay false with a table.

Without a table each session draws from its own stream (``default_rng([seed, session])``), so the first N
sessions of a larger set are the same sessions. Prompt blocks are chained ids interned from token content
(:class:`smetric.workload.harness_base.BlockChains`): the system prefix's full blocks are shared by every session, the
second prefix's by the sessions that carry it, and a turn's prompt keeps every full block of the previous one.

Load: ``{arrival: sessions, stages: [{sessions: N}]}``, one stage (each concurrency point of a sweep is its own
set of cold runs: warm caches must not carry over, so a ladder of stages in one run would not be the experiment).
Not modelled: the benchmark's one warm-up request per worker before the run (``max_tokens`` 1, unique text).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .core import Workload
from .harness_base import BlockChains, HarnessWorkload

__all__ = ["KIND", "PARAMS", "session_workload"]

KIND = "multi-turn-sessions"

# Parameters: default, or None = required. Defaults: zxuhan/llm-router's cloud sweep (data/validation/tables/
# README.md; its generator's constants tokenised with Qwen2.5's template: 3,068-token system message, 389-token
# code context on 40 % of sessions, 58-76-token user turns, 30 % tool loops with a 10-token call and a 55-67-token
# result, 3-token generation prompt, 5-token "ack tN" reply, floors 40 ms x turn + U{0..49}, starts U{0..200}).
PARAMS: dict[str, object] = {
    "token_table": "", "turns": 8, "system_tokens": 3068, "second_prefix_tokens": 389, "second_prefix_share": 0.4,
    "user_tokens_min": 58, "user_tokens_max": 76, "tool_share": 0.3, "tool_call_tokens": 10,
    "tool_result_tokens_min": 55, "tool_result_tokens_max": 67, "generation_prompt_tokens": 3,
    "reply_in_history": False, "synthetic_reply_tokens": 5, "start_spread_ms": 200.0, "floor_step_ms": 40.0,
    "floor_jitter_ms": 49.0, "output_first": None, "output_follow_up": None, "output_after_tool": None,
    "max_tokens": 64,
}
_SHARES = ("second_prefix_share", "tool_share")
_FLOATS = ("start_spread_ms", "floor_step_ms", "floor_jitter_ms") + _SHARES
_POSITIVE = ("turns", "system_tokens", "output_first", "output_follow_up", "output_after_tool", "max_tokens")
#: composition keys a token table replaces (giving one with a table is an error)
_COMPOSITION = ("second_prefix_share", "user_tokens_min", "user_tokens_max", "tool_share", "tool_call_tokens",
                "tool_result_tokens_min", "tool_result_tokens_max", "generation_prompt_tokens",
                "synthetic_reply_tokens", "start_spread_ms", "floor_step_ms", "floor_jitter_ms")
_TABLE_COLUMNS = ("seed", "session", "turn", "code", "tool", "start_ms", "min_send_ms", "new_tokens", "prompt_tokens")


def _params(params: Mapping[str, object]) -> dict[str, object]:
    """``params`` checked against :data:`PARAMS` (ValueError naming the key)."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise ValueError(f"{KIND} params: unknown key {unknown[0]!r} (known: {', '.join(PARAMS)})")
    out: dict[str, object] = {}
    for key, default in PARAMS.items():
        if key not in params and default is None:
            raise ValueError(f"{KIND} params: missing key {key!r}")
        value = params.get(key, default)
        if isinstance(default, bool):
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{KIND} params: {key} must be true or false, got {value!r}")
            out[key] = bool(value)
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise ValueError(f"{KIND} params: {key} must be a path (a string), got {value!r}")
            out[key] = value
        else:
            is_float = key in _FLOATS
            ok = isinstance(value, (int, np.integer, float, np.floating) if is_float else (int, np.integer))
            ok = ok and not isinstance(value, bool) and math.isfinite(float(value))
            ok = ok and value >= 0 and (key not in _POSITIVE or value > 0) and (key not in _SHARES or value <= 1)
            if not ok:
                what = ("a share in [0, 1]" if key in _SHARES else
                        f"a {'positive' if key in _POSITIVE else 'non-negative'} {'number' if is_float else 'integer'}")
                raise ValueError(f"{KIND} params: {key} must be {what}, got {value!r}")
            out[key] = float(value) if is_float else int(value)
    for lo, hi in (("user_tokens_min", "user_tokens_max"), ("tool_result_tokens_min", "tool_result_tokens_max")):
        if out[lo] > out[hi]:
            raise ValueError(f"{KIND} params: {lo} ({out[lo]}) must not exceed {hi} ({out[hi]})")
    if out["token_table"]:
        given = [k for k in _COMPOSITION if k in params]
        if given:
            raise ValueError(f"{KIND} params: {given[0]} is given by the token_table's rows; drop it")
        if out["reply_in_history"]:
            raise ValueError(f"{KIND} params: reply_in_history must be false with a token_table (its prompts hold "
                             "the synthetic reply)")
    return out


def _sessions(load: Mapping[str, object]) -> int:
    """The number of sessions of the one stage of ``load`` (ValueError naming the key)."""
    unknown = sorted(set(load) - {"arrival", "stages", "measured_stages", "interval"})
    if unknown:
        raise ValueError(f"load: unknown key {unknown[0]!r} for {KIND}")
    if load.get("arrival") != "sessions":
        raise ValueError(f"load.arrival must be 'sessions' for {KIND} (closed sessions), got {load.get('arrival')!r}")
    stages = load.get("stages")
    if not isinstance(stages, Sequence) or isinstance(stages, str) or len(stages) != 1:
        raise ValueError(f"load.stages must hold exactly one stage {{sessions: N}} for {KIND}: each concurrency "
                         "point is its own set of cold runs")
    stage = stages[0]
    if not isinstance(stage, Mapping) or set(stage) != {"sessions"}:
        raise ValueError(f"load stages[0] must be {{sessions: N}}, got {stage!r}")
    n = stage["sessions"]
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"load stages[0].sessions must be a positive integer, got {n!r}")
    return int(n)


def _read_table(path: str, seed: int, n_sessions: int, turns: int) -> dict[str, np.ndarray]:
    """The table's rows of ``seed``, sessions ``0..n_sessions-1``, turns ``0..turns-1``, as ``[session, turn]``
    arrays (ValueError naming the file and the missing or inconsistent row)."""
    import pandas as pd

    from .catalog import data_dir

    file = Path(path) if Path(path).is_absolute() else data_dir() / path
    if not file.is_file():
        raise ValueError(f"{KIND} params: token_table {file}: no such file")
    frame = pd.read_csv(file)
    missing = [c for c in _TABLE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{KIND} params: token_table {file}: column {missing[0]!r} is missing (needs "
                         f"{', '.join(_TABLE_COLUMNS)})")
    rows = frame[(frame["seed"] == seed) & (frame["session"] < n_sessions) & (frame["turn"] < turns)]
    keys = pd.MultiIndex.from_arrays([rows["session"], rows["turn"]])
    if keys.has_duplicates:
        s, t = keys[keys.duplicated()][0]
        raise ValueError(f"{KIND} params: token_table {file}: seed {seed} session {s} turn {t} appears more than once")
    want = pd.MultiIndex.from_product([range(n_sessions), range(turns)])
    absent = want.difference(keys)
    if len(absent):
        s, t = absent[0]
        raise ValueError(f"{KIND} params: token_table {file}: no row for seed {seed} session {s} turn {t} (a run of "
                         f"{n_sessions} sessions x {turns} turns needs them all)")
    rows = rows.set_index(["session", "turn"]).loc[want]
    out = {c: rows[c].to_numpy().reshape(n_sessions, turns) for c in _TABLE_COLUMNS[3:]}
    chained = out["prompt_tokens"][:, 1:] - out["prompt_tokens"][:, :-1]
    bad = np.argwhere((chained != out["new_tokens"][:, 1:]) | (out["new_tokens"][:, 1:] < 1))
    if len(bad):
        s, t = bad[0]
        raise ValueError(f"{KIND} params: token_table {file}: seed {seed} session {s} turn {t + 1}: prompt_tokens "
                         "must be the previous prompt plus new_tokens (>= 1)")
    return out


def _draw(p: Mapping[str, object], seed: int, n_sessions: int) -> dict[str, np.ndarray]:
    """A random session set in the table's columns (each session from its own stream)."""
    turns = int(p["turns"])
    out = {c: np.zeros((n_sessions, turns), dtype=np.float64 if c.endswith("_ms") else np.int64)
           for c in _TABLE_COLUMNS[3:7]}
    new = np.zeros((n_sessions, turns), dtype=np.int64)
    for s in range(n_sessions):
        rng = np.random.default_rng([seed, s])
        out["start_ms"][s] = rng.integers(0, int(p["start_spread_ms"]) + 1)
        out["code"][s] = rng.random() < p["second_prefix_share"]
        user = rng.integers(p["user_tokens_min"], p["user_tokens_max"] + 1, turns)
        tool = rng.random(turns) < p["tool_share"]
        result = rng.integers(p["tool_result_tokens_min"], p["tool_result_tokens_max"] + 1, turns)
        jitter = rng.integers(0, int(p["floor_jitter_ms"]) + 1, turns)
        out["tool"][s] = tool
        out["min_send_ms"][s] = out["start_ms"][s] + p["floor_step_ms"] * np.arange(turns) + jitter
        new[s] = user + tool * (p["tool_call_tokens"] + result) + p["generation_prompt_tokens"]
    new[:, 1:] += p["synthetic_reply_tokens"]   # the reply ahead of a later turn (replaced if it enters the history)
    new[:, 0] += p["system_tokens"] + out["code"][:, 0] * p["second_prefix_tokens"]
    out["new_tokens"] = new
    out["prompt_tokens"] = np.cumsum(new, axis=1)
    return out


def _outputs(p: Mapping[str, object], tool: np.ndarray) -> np.ndarray:
    """Output tokens per ``[session, turn]``: first, after a tool result, follow-up; at most ``max_tokens``."""
    out = np.where(tool, p["output_after_tool"], p["output_follow_up"])
    out[:, 0] = p["output_first"]
    return np.minimum(out, p["max_tokens"]).astype(np.int64)


def session_workload(params: Mapping[str, object], load: Mapping[str, object], seed: int, *, block_size: int = 16,
                     stage_starts: Sequence[float] | None = None):
    """The closed-loop session run of ``params`` (see the module docstring) as a
    :class:`~smetric.workload.harness_base.HarnessWorkload` (one stage, closed). ``stage_starts``: ``[t0]`` shifts
    every time by ``t0`` s. Bad input raises ValueError naming the key (or the table's file and row)."""

    if not isinstance(params, Mapping) or not isinstance(load, Mapping):
        raise ValueError("params and load must be mappings")
    p = _params(params)
    n, turns = _sessions(load), int(p["turns"])
    cols = (_read_table(str(p["token_table"]), int(seed), n, turns) if p["token_table"]
            else _draw(p, int(seed), n))
    output = _outputs(p, cols["tool"].astype(bool))
    prompt = cols["prompt_tokens"].astype(np.int64)
    code = cols["code"][:, 0].astype(bool)
    if p["reply_in_history"]:   # the previous turn's generated tokens replace the synthetic reply
        extra = np.zeros_like(prompt)
        extra[:, 1:] = np.cumsum(output[:, :-1] - p["synthetic_reply_tokens"], axis=1)
        prompt = prompt + extra
    own0 = prompt[:, 0] - p["system_tokens"] - code * p["second_prefix_tokens"]
    if np.any(own0 < 1):
        s = int(np.flatnonzero(own0 < 1)[0])
        raise ValueError(f"{KIND}: session {s}'s first prompt ({prompt[s, 0]} tokens) does not exceed its shared "
                         f"prefixes (system_tokens {p['system_tokens']}, second_prefix_tokens "
                         f"{p['second_prefix_tokens'] if code[s] else 0})")
    shift = 0.0 if stage_starts is None else float(np.asarray(stage_starts, dtype=float).reshape(-1)[0])
    floor = np.maximum.accumulate(cols["min_send_ms"].astype(np.float64), axis=1) / 1000.0 + shift

    chains = BlockChains(int(block_size))
    system, second = chains.uid(), chains.uid()
    ids = np.empty((n, turns), dtype=object)
    for s in range(n):
        segments = [(system, p["system_tokens"])] + ([(second, p["second_prefix_tokens"])] if code[s] else [])
        segments.append((chains.uid(), int(own0[s])))
        known = None
        for t in range(turns):
            if t:
                segments.append((chains.uid(), int(prompt[s, t] - prompt[s, t - 1])))
            ids[s, t] = chains.ids(segments, known)
            known = ids[s, t][: prompt[s, t] // block_size]

    session, turn = np.divmod(np.arange(n * turns), turns)
    order = np.lexsort((turn, session, floor.ravel()))   # send order; a turn never sorts before its parent
    row_of = np.empty(n * turns, dtype=np.int64)
    row_of[order] = np.arange(n * turns)
    flat = order   # flat index (session * turns + turn) of each row
    parent = np.where(turn[flat] > 0, row_of[np.maximum(flat - 1, 0)], -1)
    blocks = [ids[session[i], turn[i]] for i in flat]
    offsets = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blocks], out=offsets[1:])
    wl = Workload(arrival=floor.ravel()[flat], input_len=prompt.ravel()[flat], output_len=output.ravel()[flat],
                  session=session[flat], turn=turn[flat], parent=parent, gap=np.zeros(len(flat)),
                  block_offsets=offsets, block_ids=np.concatenate(blocks), block_size=int(block_size), name=KIND)
    return HarnessWorkload(wl, np.zeros(len(flat), dtype=np.int64), closed=True)
