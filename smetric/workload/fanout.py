"""Fan-out within a session: sub-agents (and parallel tool calls) as concurrent children of a turn.

A fan-out child is a request that a turn spawns and that the session's next main turn waits for
(:attr:`Workload.join_to`): a branch of one or more chained calls whose first call's parent is the
spawning turn and whose last call joins the next turn. Closed replay releases that turn once the
spawning turn and every joining branch have ended, ``gap`` after the last.

Three things live here:

- :func:`measure_fanout`: the fan-out statistics of real conversations (the kv-cache-tester Claude Code
  trace, read with ``subagents="attached"``), written to ``data/presets/fanout.json``;
- :func:`workload_fanout`: the fan-out a :class:`Workload` carries (``smetric characterize``);
- :class:`FanOut`, :func:`fitted_fanout` and :func:`add_fanout`: the synthetic generator's fan-out
  (``SessionWorkloadConfig.fanout``; ``None``, the default, adds no fan-out and draws no extra random numbers).

Parallel tool calls are not in the Claude Code trace: each record is one API call, and a response with
several ``tool_use`` blocks is one call whose tool results come back together in the next prompt (the
records carry ``output_types``, not a count of tool calls), so only sub-agents are measured. A
parallel-tool-call fan-out is :class:`FanOut` with ``prefix_share=1`` (the children continue the
parent's transcript), an assumption.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

import numpy as np

from .core import Workload

__all__ = ["FanOut", "add_fanout", "fanout_branches", "fitted_fanout", "measure_fanout", "workload_fanout",
           "SAME_SPAWN_S"]

#: Sub-agents of one spawning call that start within this many seconds of the first count as spawned together.
SAME_SPAWN_S = 1.0


# ---------------------------------------------------------------------------------------- workloads
def fanout_branches(workload: Workload) -> tuple[np.ndarray, np.ndarray]:
    """The fan-out branches of ``workload``: per row, the row its branch joins (-1 off every branch), and
    per row the first row of its branch (-1 off every branch). A branch runs back from a row with a
    ``join_to`` along ``parent`` to the first row whose parent is the joined row's parent (the spawner)."""
    n = len(workload)
    joins = np.full(n, -1, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    for last in np.flatnonzero(workload.join_to >= 0):
        target = workload.join_to[last]
        spawner = workload.parent[target]
        rows = [last]
        while workload.parent[rows[-1]] >= 0 and workload.parent[rows[-1]] != spawner:
            rows.append(workload.parent[rows[-1]])
        joins[rows] = target
        first[rows] = rows[-1]
    return joins, first


def workload_fanout(workload: Workload) -> dict[str, float]:
    """Fan-out statistics of a workload with ``join_to`` rows (empty without any).

    ``fanout_spawning_turns`` (turns whose next turn waits for children), ``fanout_children_mean`` /
    ``_max`` (branches per spawning turn), ``fanout_branch_calls_mean`` (calls per branch),
    ``fanout_request_share`` (share of requests on a branch), ``fanout_max_concurrent`` (the most branches of
    one spawning turn whose arrival spans, first to last call, overlap: requests of one session in flight
    at once beside the waiting main chain) and ``fanout_sessions_share`` (sessions with a spawning turn).
    """
    joins, first = fanout_branches(workload)
    if not (joins >= 0).any():
        return {}
    on = joins >= 0
    heads = np.flatnonzero(on & (first == np.arange(len(workload))))
    targets, per_target = np.unique(joins[heads], return_counts=True)
    span_end = np.full(len(workload), -np.inf)
    np.maximum.at(span_end, first[on], workload.arrival[on])
    by_target = heads[np.argsort(joins[heads], kind="stable")]
    concurrent = 0
    for group in np.split(by_target, np.cumsum(per_target)[:-1]):
        start, stop = workload.arrival[group], span_end[group]
        concurrent = max(concurrent, int(max(np.sum((start <= stop[g]) & (stop >= start[g]))
                                             for g in range(len(group)))))
    return {
        "fanout_spawning_turns": float(len(targets)),
        "fanout_children_mean": float(per_target.mean()),
        "fanout_children_max": float(per_target.max()),
        "fanout_branch_calls_mean": float(on.sum() / len(heads)),
        "fanout_request_share": float(on.mean()),
        "fanout_max_concurrent": float(concurrent),
        "fanout_sessions_share": float(len(np.unique(workload.session[targets])) / workload.n_sessions),
    }


# ---------------------------------------------------------------------------------------- the trace
def _lognormal_fit(values: np.ndarray) -> dict[str, float]:
    """Median and sigma of a log-normal by the moments of ``log(values)`` (positive values only)."""
    logs = np.log(values[values > 0])
    return {"median": float(np.exp(logs.mean())), "sigma": float(logs.std())}


def _summary(values: np.ndarray) -> dict[str, float]:
    return {"n": int(len(values)), "mean": float(np.mean(values)), "p50": float(np.percentile(values, 50)),
            "p90": float(np.percentile(values, 90)), "max": float(np.max(values))}


def _common_blocks(ids: np.ndarray, offsets: np.ndarray, a: int, b: int) -> int:
    x, y = ids[offsets[a]:offsets[a + 1]], ids[offsets[b]:offsets[b + 1]]
    m = min(len(x), len(y))
    differ = np.flatnonzero(x[:m] != y[:m])
    return int(differ[0]) if len(differ) else m


def measure_fanout(conversations) -> dict:
    """Fan-out statistics of kv-cache-tester conversations read with ``subagents="attached"``.

    Per conversation (sub-agents, share with any), per call (share of the conversations' own calls that
    spawn ``k`` sub-agents), per sub-agent (calls, prompt and reply lengths, appended tokens and gaps between
    its calls, the delay from the spawning call's end to its first call, the prefix it shares with the
    spawning call's prompt + reply and with its siblings, from the chained block ids), concurrency (sub-agents
    of one spawning call started within :data:`SAME_SPAWN_S`, and overlapping in time) and the wait it
    adds to the next call (last sub-agent end minus the spawning call's end).
    """
    c = conversations
    if c.subagents != "attached":
        raise ValueError(f"measure_fanout needs conversations read with subagents='attached', got {c.subagents!r}")
    n = len(c.t)
    rows = np.arange(n)
    chain_first = np.ones(n, dtype=bool)
    chain_first[1:] = c.chain[1:] != c.chain[:-1]
    chain_last = np.append(chain_first[1:], True)
    sub = c.family > 0
    heads, lasts = rows[chain_first & sub], rows[chain_last & sub]
    spawner = c.parent_call[heads]
    end = c.t + np.nan_to_num(c.api_time)
    per_conversation = np.bincount(c.conversation[heads], minlength=c.n_conversations)
    own = ~sub
    spawned = np.bincount(spawner[spawner >= 0], minlength=n)[own]
    k_max = int(spawned.max(initial=0))
    calls = lasts - heads + 1
    inner = sub & ~chain_first
    append = c.input_len[inner] - c.input_len[rows[inner] - 1] - c.output_len[rows[inner] - 1]
    share = np.array([_common_blocks(c.block_ids, c.block_offsets, h, p) * c.block_size
                      / (c.input_len[p] + c.output_len[p]) for h, p in zip(heads, spawner) if p >= 0])
    together, overlap, sibling, wait = [], [], [], []
    for p in np.unique(spawner[spawner >= 0]):
        group = np.flatnonzero(spawner == p)
        start, stop = c.t[heads[group]], end[lasts[group]]
        together.append(int(np.sum(start - start.min() <= SAME_SPAWN_S)))
        overlap.append(max(int(np.sum((start <= stop[g]) & (stop >= start[g]))) for g in range(len(group))))
        sibling += [_common_blocks(c.block_ids, c.block_offsets, heads[g], heads[group[0]]) * c.block_size
                    / c.input_len[heads[g]] for g in group[1:]]
        joined = c.join_call[lasts[group]]
        if (joined >= 0).any():
            wait.append(float(stop[joined >= 0].max() - end[p]))
    return {
        "conversations": int(c.n_conversations),
        "conversation_calls": int(own.sum()),
        "subagents": int(len(heads)),
        "subagent_calls": int(sub.sum()),
        "joined_subagents": int((c.join_call[lasts] >= 0).sum()),
        "subagents_per_conversation": {"mean": float(per_conversation.mean()), "max": int(per_conversation.max()),
                                       "share_with_any": float(np.mean(per_conversation > 0))},
        "spawning_calls": int((spawned > 0).sum()),
        "spawn_prob": float(np.mean(spawned > 0)),
        "children_per_call": {str(k): float(np.mean(spawned == k)) for k in range(k_max + 1)},
        "children_per_spawning_call": {str(k): float(np.mean(spawned[spawned > 0] == k)) for k in range(1, k_max + 1)},
        "calls_per_subagent": {**_summary(calls), **_lognormal_fit(calls.astype(float))},
        "subagent_first_prompt": {**_summary(c.input_len[heads]), **_lognormal_fit(c.input_len[heads].astype(float))},
        "subagent_prompt": _summary(c.input_len[sub]),
        "subagent_append": {**_summary(np.maximum(append, 0)), **_lognormal_fit(append.astype(float))},
        "subagent_output": {**_summary(c.output_len[sub]), **_lognormal_fit(c.output_len[sub].astype(float))},
        "subagent_gap_s": {**_summary(c.gap[inner]), **_lognormal_fit(c.gap[inner])},
        "subagent_start_delay_s": _summary(c.gap[heads[spawner >= 0]]),
        "prefix_share_with_spawner": _summary(share),
        "prefix_share_with_siblings": _summary(np.asarray(sibling)),
        "spawned_together": _summary(np.asarray(together, dtype=float)),
        "concurrent_subagents": _summary(np.asarray(overlap, dtype=float)),
        "next_call_wait_s": _summary(np.asarray(wait)),
        "parallel_tool_calls": None,
    }


# ---------------------------------------------------------------------------------------- the generator
@dataclass(frozen=True)
class FanOut:
    """Fan-out of the synthetic generator: which turns spawn children, how many, and what the children are.

    Token counts and gaps are log-normal (median, sigma). A turn that is not its session's last spawns
    children with probability ``spawn_prob``; their number is ``k`` with probability ``children_probs[k-1]``.
    Each child is a branch of ``child_turns`` chained calls: the first prompt is the first ``prefix_share`` of
    the parent's prompt + reply (its block ids) followed by ``child_prompt`` tokens of its own, whose first
    ``sibling_share`` it shares with the spawn's first child (sub-agents of one spawn start from the same
    system prompt and task); each later call appends the previous reply and ``child_append`` tokens.
    The first call arrives ``child_start_s`` after the parent's estimated end, later ones ``child_gap`` after
    the previous call's; the session's next turn waits for the last branch to end (estimated as the generator
    estimates a turn's service) before its own gap, and the session's later turns move by that wait.
    """

    spawn_prob: float
    children_probs: tuple[float, ...]
    child_turns_median: float
    child_turns_sigma: float
    max_child_turns: int
    child_prompt_median: float
    child_prompt_sigma: float
    child_append_median: float
    child_append_sigma: float
    child_output_median: float
    child_output_sigma: float
    prefix_share: float
    child_gap_median: float
    child_gap_sigma: float
    child_start_s: float
    sibling_share: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "children_probs":
                p = np.asarray(v, dtype=float)
                if p.ndim != 1 or not len(p) or np.any(~np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1) > 1e-9:
                    raise ValueError(f"FanOut.children_probs must be probabilities summing to 1, got {v!r}")
                continue
            if f.name in ("spawn_prob", "prefix_share", "sibling_share"):
                ok = 0 <= v <= 1
            elif f.name.endswith("_sigma") or f.name == "child_start_s":
                ok = v >= 0
            else:
                ok = v > 0
            if not (ok and np.isfinite(v)):
                raise ValueError(f"FanOut.{f.name} is out of range: {v!r}")
        if int(self.max_child_turns) != self.max_child_turns:
            raise ValueError(f"FanOut.max_child_turns must be an integer, got {self.max_child_turns!r}")

    @property
    def mean_children(self) -> float:
        """Mean number of children of a spawning turn."""
        return float(np.dot(np.arange(1, len(self.children_probs) + 1), self.children_probs))


def fitted_fanout(name: str = "claude-code") -> FanOut:
    """The measured fan-out of ``data/presets/fanout.json`` (``"claude-code"``: the sub-agents of the real
    Claude Code conversations; see ``data/presets/README.md``)."""
    from .catalog import data_dir

    with open(data_dir() / "presets" / "fanout.json") as fh:
        doc = json.load(fh)
    if name not in doc["traces"]:
        raise KeyError(f"no fitted fan-out {name!r}; known: {', '.join(doc['traces'])}")
    m = doc["traces"][name]["measured"]
    probs = m["children_per_spawning_call"]
    return FanOut(
        spawn_prob=m["spawn_prob"], children_probs=tuple(probs[str(k)] for k in range(1, len(probs) + 1)),
        child_turns_median=m["calls_per_subagent"]["median"], child_turns_sigma=m["calls_per_subagent"]["sigma"],
        max_child_turns=int(m["calls_per_subagent"]["max"]),
        child_prompt_median=m["subagent_first_prompt"]["median"],
        child_prompt_sigma=m["subagent_first_prompt"]["sigma"],
        child_append_median=m["subagent_append"]["median"], child_append_sigma=m["subagent_append"]["sigma"],
        child_output_median=m["subagent_output"]["median"], child_output_sigma=m["subagent_output"]["sigma"],
        prefix_share=m["prefix_share_with_spawner"]["mean"],
        child_gap_median=m["subagent_gap_s"]["median"], child_gap_sigma=m["subagent_gap_s"]["sigma"],
        child_start_s=m["subagent_start_delay_s"]["p50"], sibling_share=m["prefix_share_with_siblings"]["mean"],
    )


def _tokens(rng: np.random.Generator, median: float, sigma: float, size: int, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.rint(rng.lognormal(np.log(median), sigma, size)), lo, hi).astype(np.int64)


def add_fanout(fanout: FanOut, rng: np.random.Generator, main: dict, *, max_context: int, max_output: int,
               prefill_tps: float, tpot: float, block_size: int) -> dict:
    """Append fan-out branches to the generator's rows (before windowing; see :class:`FanOut`).

    ``main`` holds the session-ordered main rows (``session``, ``turn``, ``arrival``, ``input_len``,
    ``output``, ``gap``, ``epoch``, ``parent``, ``row_sf``: system blocks per row) and the per-epoch
    ``epoch_tokens`` and ``epoch_sf``. Returns the same keys over main rows then branch rows, with the
    later main turns of a session delayed by the waits, plus ``join`` and the shared block regions of every
    row (``fork_blocks``/``fork_epoch``: the parent's transcript; ``sib_blocks``/``sib_epoch``: the spawn's
    first child). Draws only from ``rng``.
    """
    f, bs = fanout, block_size
    session, turn, arrival = main["session"], main["turn"], main["arrival"]
    n = len(arrival)
    last = np.append(session[1:] != session[:-1], True)
    spawners = np.flatnonzero((rng.random(n) < f.spawn_prob) & ~last)
    k = rng.choice(len(f.children_probs), size=len(spawners), p=np.asarray(f.children_probs)) + 1
    parent_of = np.repeat(spawners, k)
    first_sibling = np.repeat(np.cumsum(k) - k, k)
    nb = len(parent_of)
    calls = _tokens(rng, f.child_turns_median, f.child_turns_sigma, nb, 1, f.max_child_turns)
    m = int(calls.sum())
    own = _tokens(rng, f.child_prompt_median, f.child_prompt_sigma, nb, 1, max_context)
    append = _tokens(rng, f.child_append_median, f.child_append_sigma, m, 0, max_context)
    output = _tokens(rng, f.child_output_median, f.child_output_sigma, m, 1, max_output)
    gap = rng.lognormal(np.log(f.child_gap_median), f.child_gap_sigma, m)

    inp, out, epoch = main["input_len"], main["output"], main["epoch"]
    service = np.zeros(n)
    service[~last] = arrival[1:][~last[:-1]] - arrival[:-1][~last[:-1]] - main["gap"][1:][~last[:-1]]
    shared = np.minimum(np.floor(f.prefix_share * (inp[parent_of] + out[parent_of])).astype(np.int64),
                        main["epoch_tokens"][epoch[parent_of]])
    fork = shared // bs
    sf = np.minimum(main["row_sf"][parent_of], fork)
    sib = (shared + np.minimum(np.floor(f.sibling_share * own[first_sibling]).astype(np.int64), own)) // bs
    branch = np.repeat(np.arange(nb), calls)
    step = np.arange(m) - np.repeat(np.cumsum(calls) - calls, calls)
    length = np.empty(m, dtype=np.int64)
    rel = np.empty(m)       # arrival after the spawner's arrival
    end = np.empty(nb)      # estimated end of each branch, after the spawner's arrival
    starts = np.cumsum(calls) - calls
    for b in range(nb):
        lo, hi = int(starts[b]), int(starts[b] + calls[b])
        t, size = service[parent_of[b]] + f.child_start_s, min(shared[b] + own[b], max_context)
        uncached = size - shared[b]
        for r in range(lo, hi):
            if r > lo:
                size = min(size + output[r - 1] + append[r], max_context)
                uncached = output[r - 1] + append[r]
                t += gap[r]
            length[r], rel[r] = size, t
            t += uncached / prefill_tps + output[r] * tpot
        end[b] = t
    delay = np.zeros(n)
    np.maximum.at(delay, parent_of, end - service[parent_of])
    delay = np.maximum(delay, 0.0)
    waited = np.cumsum(delay) - delay   # waits of the earlier turns, then less those of earlier sessions
    session_first = np.flatnonzero(np.concatenate([[True], session[1:] != session[:-1]]))
    waited -= np.repeat(waited[session_first], np.diff(np.append(session_first, n)))
    main_arrival = arrival + waited
    rows = n + np.arange(m)
    is_first = step == 0
    n_epochs = len(main["epoch_tokens"])
    branch_tokens = np.zeros(nb, dtype=np.int64)
    np.maximum.at(branch_tokens, branch, length)
    zeros = np.zeros(n, dtype=np.int64)
    return {
        "session": np.concatenate([session, session[parent_of[branch]]]),
        "turn": np.concatenate([turn, turn[parent_of[branch]] + 1 + step]),
        "arrival": np.concatenate([main_arrival, main_arrival[parent_of[branch]] + rel]),
        "input_len": np.concatenate([inp, length]),
        "output": np.concatenate([out, output]),
        "gap": np.concatenate([main["gap"], np.where(is_first, f.child_start_s, gap)]),
        "epoch": np.concatenate([epoch, n_epochs + branch]),
        "parent": np.concatenate([main["parent"], np.where(is_first, parent_of[branch], rows - 1)]),
        "join": np.concatenate([np.full(n, -1, dtype=np.int64),
                                np.where(step == calls[branch] - 1, parent_of[branch] + 1, -1)]),
        "row_sf": np.concatenate([main["row_sf"], sf[branch]]),
        "fork_blocks": np.concatenate([zeros, fork[branch]]),
        "fork_epoch": np.concatenate([zeros, epoch[parent_of[branch]]]),
        "sib_blocks": np.concatenate([zeros, sib[branch]]),
        "sib_epoch": np.concatenate([zeros, n_epochs + first_sibling[branch]]),
        "epoch_tokens": np.concatenate([main["epoch_tokens"], branch_tokens]),
        "epoch_sf": np.concatenate([main["epoch_sf"], sf]),
    }
