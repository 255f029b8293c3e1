"""Helpers for the engine tests: small agent-like workloads with chained block ids, small clusters."""

from __future__ import annotations

import numpy as np

from smetric.cluster.config import ClusterConfig, GlobalStore, HardwareSpec
from smetric.workload.core import Workload


def chained_ids(tokens: np.ndarray, block_size: int, table: dict) -> list[int]:
    """Chained block ids of a token sequence: block j's id identifies the whole prefix up to block j."""
    ids = []
    prev = -1
    for start in range(0, len(tokens), block_size):
        key = (prev, tuple(tokens[start:start + block_size].tolist()))
        prev = table.setdefault(key, len(table))
        ids.append(prev)
    return ids


def agent_workload(seed: int, n_sessions: int = 4, max_turns: int = 3, system_prompt: int = 64,
                   first_prompt: tuple[int, int] = (20, 600), appended: tuple[int, int] = (10, 300),
                   output: tuple[int, int] = (1, 40), span: float = 3.0, gap: tuple[float, float] = (0.0, 1.0),
                   block_size: int = 16, fanout: int = 0, subagent_turns: int = 1) -> Workload:
    """Sessions whose every turn re-sends the previous prompt, its reply and new text (real reuse).

    All sessions share a ``system_prompt``-token prefix; token values are labels, so equal
    prefixes get equal chained block ids.

    With ``fanout > 0`` every turn that has a next turn spawns 0..``fanout`` concurrent children (drawn from a
    second stream, so the main turns' draws are those of ``fanout=0``): each is a chain of
    1..``subagent_turns`` requests (a parallel tool call, or a sub-agent's turns) whose first re-sends the
    spawning turn's prompt and reply, and whose last joins the next turn (``join_to``); the next turn's
    prompt then also carries every chain's last reply.
    """
    rng = np.random.default_rng(seed)
    fan = np.random.default_rng([seed, 1])
    sys_tokens = np.full(system_prompt, -1, dtype=np.int64)
    rows = []
    label = 0
    for s in range(n_sessions):
        t = float(rng.uniform(0, span))
        context = sys_tokens.copy()
        parent = -1
        n_turns = int(rng.integers(1, max_turns + 1))
        joined: list[int] = []  # rows of the children that the next turn joins
        for k in range(n_turns):
            lo, hi = first_prompt if k == 0 else appended
            new = np.arange(label, label + int(rng.integers(lo, hi + 1)))
            label += len(new)
            prompt = np.concatenate([context, new])
            out = int(rng.integers(output[0], output[1] + 1))
            g = 0.0 if k == 0 else float(rng.uniform(*gap))
            for c in joined:
                rows[c]["join_key"] = len(rows)
                t = max(t, rows[c]["arrival"])
            rows.append(dict(arrival=t, prompt=prompt, out=out, session=s, turn=k, parent_key=parent, gap=g,
                             join_key=-1))
            parent = len(rows) - 1
            reply = np.arange(label, label + out)
            label += out
            context = np.concatenate([prompt, reply])
            joined = []
            if fanout and k < n_turns - 1:
                results = []
                for _ in range(int(fan.integers(0, fanout + 1))):
                    tc, ctx, up = t + float(fan.uniform(0.0, 0.3)), context, parent
                    for j in range(int(fan.integers(1, subagent_turns + 1))):
                        task = np.arange(label, label + int(fan.integers(appended[0], appended[1] + 1)))
                        label += len(task)
                        ctx = np.concatenate([ctx, task])
                        out_c = int(fan.integers(output[0], output[1] + 1))
                        rows.append(dict(arrival=tc, prompt=ctx, out=out_c, session=s, turn=k + 1 + j, parent_key=up,
                                         gap=float(fan.uniform(*gap)), join_key=-1))
                        up = len(rows) - 1
                        res = np.arange(label, label + out_c)
                        label += out_c
                        ctx = np.concatenate([ctx, res])
                        tc += float(fan.uniform(0.05, 0.5))
                    joined.append(up)
                    results.append(res)
                context = np.concatenate([context, *results])
            t += g + float(rng.uniform(0.05, 0.5))
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["arrival"], i))
    new_row = {old: new for new, old in enumerate(order)}
    # keep parents before children: arrivals within a session increase, so the sort preserves that
    table: dict = {}
    ids, offsets = [], [0]
    for old in order:
        blocks = chained_ids(rows[old]["prompt"], block_size, table)
        ids += blocks
        offsets.append(len(ids))
    pick = lambda key: np.array([rows[o][key] for o in order])  # noqa: E731
    return Workload(
        arrival=pick("arrival"), input_len=np.array([len(rows[o]["prompt"]) for o in order]),
        output_len=pick("out"), session=pick("session"), turn=pick("turn"),
        parent=np.array([new_row[rows[o]["parent_key"]] if rows[o]["parent_key"] >= 0 else -1 for o in order]),
        gap=pick("gap"), block_offsets=np.array(offsets), block_ids=np.array(ids, dtype=np.int64),
        block_size=block_size, name=f"agent-{seed}",
        join_to=np.array([new_row[rows[o]["join_key"]] if rows[o]["join_key"] >= 0 else -1 for o in order]))


def unique_workload(arrival: np.ndarray, input_len, output_len, block_size: int = 16) -> Workload:
    """Independent single-turn requests with no shared blocks."""
    arrival = np.asarray(arrival, dtype=float)
    n = len(arrival)
    input_len = np.broadcast_to(np.asarray(input_len, dtype=np.int64), (n,))
    output_len = np.broadcast_to(np.asarray(output_len, dtype=np.int64), (n,))
    nb = -(-input_len // block_size)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nb, out=offsets[1:])
    return Workload(arrival=arrival, input_len=input_len, output_len=output_len, session=np.arange(n),
                    turn=np.zeros(n), parent=np.full(n, -1), gap=np.zeros(n), block_offsets=offsets,
                    block_ids=np.arange(offsets[-1]), block_size=block_size, name="unique")


def small_cluster(kv_tokens: int = 200_000, **kw) -> ClusterConfig:
    """A cluster of the example (uncalibrated 8B/A100-like) hardware; keywords override ClusterConfig."""
    kw.setdefault("n_instances", 1)
    return ClusterConfig("example", "example", hardware=HardwareSpec.example(kv_tokens), **kw)


def store(capacity_gb: float = float("inf"), bandwidth_gbs: float = 20.0, latency_s: float = 1e-3) -> GlobalStore:
    """A global store for tests."""
    return GlobalStore(capacity_gb=capacity_gb, bandwidth_gbs=bandwidth_gbs, latency_s=latency_s)


def router_infos():
    """Hypothesis strategy: router information models with every mechanism possibly on."""
    from hypothesis import strategies as st

    from smetric.cluster.router_info import ASSIGNMENTS, RouterInfo

    interval = st.sampled_from([0.0, 0.01, 0.05, 0.3])
    return st.builds(RouterInfo, refresh_s=interval, kv_refresh_s=interval,
                     kv_event_delay_s=st.sampled_from([0.0, 0.02, 0.2]), router_replicas=st.integers(1, 3),
                     replica_assignment=st.sampled_from(ASSIGNMENTS))
