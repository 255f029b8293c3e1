"""Workload generators of the published benchmark harnesses that ``smetric validate`` replays.

One function, :func:`harness_workload`, turns a harness's own parameters and a load ladder into a
:class:`HarnessWorkload`: the requests in send order (a :class:`~smetric.workload.core.Workload`), the
load stage each was sent in, and whether it must replay closed. Prompts carry chained block ids built
from their token *content* (see :class:`BlockChains`): equal ids mean the harness really sends the same
tokens up to that block, so a re-sent identical prompt hits on the whole prompt, including its partial
last block, and distinct prompts share only their common history's full blocks.

Kinds (harness source read for each; behaviour that changed between versions is pinned to the
version the published runs used):

``shared-prefix``: inference-perf ``shared_prefix`` (kubernetes-sigs/inference-perf
  ``inference_perf/datagen/shared_prefix_datagen.py`` at ``b6687e7`` (2025-08-25, the llm-d runs) and
  ``f44117a`` (2026-02-05, the BLIS runs); ``synthetic/shared_prefix_datagen.py`` at HEAD ``7de5ef2``).
  ``num_groups`` system prompts of ``system_prompt_len`` tokens, each with ``num_prompts_per_group``
  questions of ``question_len`` tokens: a FIXED set of ``G*P`` prompts in a shuffled order, request ``i``
  of a stage sends prompt ``i mod G*P`` (the data index restarts at 0 every stage: ``get_request(n)`` with
  ``n in range(num_requests)`` at ``b6687e7``, a new ``get_data()`` generator per stage at ``f44117a``).
  Prompt length = system + question (the harness composes at token level since #491; earlier versions
  re-tokenised decoded text, which can drift by a token). ``enable_multi_turn_chat``: user session ``u =
  i mod G*P`` keeps a context (its system prompt, then prompt + reply of its last round) and round ``r``
  sends ``context + question``, i.e. ``system + (r+1)*question + r*output`` tokens; a round waits for the
  session's previous round to finish (``LocalUserSession`` lock), so it replays closed, parent = previous
  round, gap 0. Sessions persist across stages (cleared between stages only since #459, 2026-04).
``prefix-repetition``: vLLM ``prefix_repetition`` (vllm-project/vllm
  ``vllm/benchmarks/datasets/prefix_repetition.py`` at ``237145e``). ``num_prefixes`` prefixes of
  ``prefix_len`` tokens, ``n // num_prefixes`` suffixes of ``suffix_len`` each (``n`` = the stage's
  request count), shuffled; ``output_len`` fixed. The harness sends ``num_prefixes * (n // num_prefixes)``
  requests (the remainder is never sampled). Each stage is one ``vllm bench serve`` run with the same
  seed: stages of equal size send identical datasets; stages of different sizes are modelled as
  independent datasets (in vLLM only the first prefix would coincide).
``generated-shared-prefix``: SGLang ``bench_serving --dataset-name generated-shared-prefix``
  (sgl-project/sglang ``python/sglang/bench_serving.py`` at ``0033168``). ``gsp_num_groups`` system
  prompts of ``gsp_system_prompt_len`` tokens, ``gsp_prompts_per_group`` questions of ``gsp_question_len``
  each (prompt = system + "\\n\\n" + question; the separator token is not counted), ``random.shuffle``-d,
  ``gsp_output_len`` fixed (EOS ignored by default). The whole dataset is sent once (a stage without
  ``requests`` sends ``G*P``); request rate ``inf`` = every request at the stage start. Not modelled: the
  harness's one warm-up request (the first prompt, <= 32 output tokens) sent before the run.
``multi-turn-conversations``: KubeAI's chat benchmark (kubeai-project/kubeai
  ``benchmarks/chat-py/benchmark_serving.py`` at ``a2349bf``, 2025-02-12). Each ShareGPT thread of
  ``>= min_messages`` messages gives prompt/completion pairs ``i = 1, 3, 5, ...``: the prompt is the first
  ``i`` messages as ``User: ...\\n`` / ``Assistant: ...\\n`` lines, the completion message ``i`` (empty past
  the last). The first ``max_conversations`` pairs are kept, shuffled (``--seed``), pruned (prompt < 4 or
  completion < 4 tokens, prompt > 8192) and cycled to the stage's request count. ``max_tokens`` is the
  completion's length and EOS is not ignored, so outputs are drawn (see below).

KubeAI's dataset (``samos123/share-gpt-long-convos``) is not available here, so threads are
SYNTHESIZED (assumptions, labelled in the constants below): ``min_messages + 2*Poisson(2)``
messages; message tokens log-normal (sigma 1.0), assistant messages 2.1x the user's mean (ShareGPT's
first-turn means, 161 input / 338 output tokens, vLLM paper, Kwon et al. SOSP'23, Fig. 11); 3 tokens of
role tag and newline per message and a BOS token per prompt and completion (Llama-3 tokenizer). The
message scale is set so the mean prompt over the kept pairs is ``mean_input_len`` and realised outputs
(log-normal, sigma 1.0, at most ``max_tokens``) average ``mean_output_len``: KubeAI's published means,
832 and 76 tokens (``docs/benchmarks/prefix-aware-load-balancing.md`` at ``a2349bf``: total minus output
tok/s, and output tok/s, over req/s). These are workload descriptions, not results. Each distinct pair
has one output length (temperature 0: a re-sent prompt generates the same reply).

``multi-turn-sessions``: closed-loop agent-style sessions, N concurrent x T turns, each prompt the previous one
  plus a turn increment (:mod:`smetric.workload.multi_turn_sessions`: zxuhan/llm-router's trace generator, or
  an exact per-request token table); with ``load.arrival: sessions`` and one stage ``{sessions: N}``.
``recorded-requests``: a recorded real run replayed exactly as recorded (:mod:`smetric.workload.recorded`:
  the bundle folder ``bundle``, its own arrivals, prompt and output lengths and shared prefixes); with
  ``load.arrival: recorded`` and one stage ``{requests: n}`` (the first ``n`` requests by engine arrival).

Load (``load`` mapping):
``arrival``: ``constant`` | ``poisson`` (rate stages ``{rate, duration}`` or ``{rate, requests}``) or
  ``concurrency`` (stages ``{concurrency, requests, rate}``, ``rate`` optional). A rate stage sends
  ``requests`` if given, else ``int(rate * duration)`` (inference-perf truncates). Timers, per harness:
  inference-perf ``constant``: exponential gaps scaled so they sum to the duration (the last request at
  the stage end); inference-perf ``poisson``: each second draws ``Poisson(rate)`` requests spread over it
  by the constant timer (a second with none is skipped), so a stage can overrun its duration
  (``inference_perf/loadgen/load_timer.py``, unchanged from ``b6687e7`` to HEAD). vLLM, SGLang, KubeAI
  (``get_request`` of benchmark_serving): the first request at the stage start, then exponential gaps;
  rate ``inf``: all at the start. ``constant`` exists only in inference-perf.
``concurrency``: ``c`` slots; request ``k`` of a stage is slot ``k mod c``'s next request, chained to
  ``k - c`` (parent, gap 0, session = slot) so closed replay sends it when that one finishes; with a rate
  it also waits for its Poisson send time (arrival). benchmark_serving's semaphore hands a freed slot to
  the oldest waiting request instead: the same when requests finish in send order. Not with multi-turn
  ``shared-prefix`` (a request has one parent).
``measured_stages``, ``interval``: read by the runner, ignored here.

Stages run one at a time and drain (the runner computes their drained starts and passes them as
``stage_starts``); a stage's requests, prompts and relative times do not depend on ``stage_starts``.
Not modelled: inference-perf's 1 s lead before a stage's timer starts, its per-worker concurrency cap
(``worker_max_concurrency`` 100 per worker) and re-tokenised output lengths.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .core import Workload
from .harness_base import BlockChains, HarnessWorkload

__all__ = ["ARRIVALS", "KINDS", "HarnessWorkload", "harness_workload"]

KINDS = ("shared-prefix", "prefix-repetition", "generated-shared-prefix", "multi-turn-conversations",
         "recorded-requests", "multi-turn-sessions")
ARRIVALS = ("poisson", "constant", "concurrency", "recorded")

# Parameters per kind, in the harness's own names: default, or None = required.
_PARAMS: dict[str, dict[str, object]] = {
    "shared-prefix": {  # inference-perf SharedPrefix (its defaults 10/10/100/50/50 are not assumed)
        "num_groups": None, "num_prompts_per_group": None, "system_prompt_len": None,
        "question_len": None, "output_len": None, "enable_multi_turn_chat": False,
    },
    "prefix-repetition": {  # vLLM PrefixRepetitionRandomDataset.DEFAULT_*
        "prefix_len": 256, "suffix_len": 256, "num_prefixes": 10, "output_len": 128,
    },
    "generated-shared-prefix": {  # SGLang bench_serving argparse defaults
        "gsp_num_groups": 64, "gsp_prompts_per_group": 16, "gsp_system_prompt_len": 2048,
        "gsp_question_len": 128, "gsp_output_len": 256,
    },
    "multi-turn-conversations": {  # KubeAI job.yaml: --max-conversations=800; published means 832/76
        "max_conversations": None, "min_messages": 16, "mean_input_len": 832.0, "mean_output_len": 76.0,
    },
}
_POSITIVE = {"num_groups", "num_prompts_per_group", "num_prefixes", "gsp_num_groups", "gsp_prompts_per_group",
             "max_conversations", "min_messages", "mean_input_len", "mean_output_len"}
_LOAD_KEYS = {"arrival", "stages", "measured_stages", "interval"}
_INFERENCE_PERF = {"shared-prefix"}

# KubeAI thread synthesis: ASSUMPTIONS (the dataset is not available), see the module docstring.
_EXTRA_PAIRS_MEAN = 2.0      # messages per thread = min_messages + 2 * Poisson(this)
_MESSAGE_SIGMA = 1.0         # log-normal sigma of message token lengths
_ASSISTANT_TO_USER = 338.0 / 161.0   # ShareGPT mean output/input tokens (vLLM paper, Fig. 11)
_OUTPUT_SIGMA = 1.0          # log-normal sigma of realised output lengths
_TAG_TOKENS = 3              # "User:" / "Assistant:" (2 tokens, the space merges) + "\n"
_BOS = 1                     # the tokenizer's BOS, counted in prompt_len and in max_tokens
_MAX_PROMPT = 8192           # benchmark_serving.py: prompts longer than this are pruned
_MIN_LEN = 4                 # benchmark_serving.py: prompt or completion shorter than this is pruned


@dataclass(frozen=True)
class _Prompts:
    """Distinct prompts of a dataset: lengths and block ids (CSR)."""

    input_len: np.ndarray
    output_len: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray

    @classmethod
    def of(cls, input_len, output_len, ids: list[np.ndarray]) -> "_Prompts":
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in ids], out=offsets[1:])
        flat = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        return cls(np.asarray(input_len, dtype=np.int64), np.asarray(output_len, dtype=np.int64), offsets, flat)


# ---------------------------------------------------------------------------------------------- checks
def _params(kind: str, params: Mapping[str, object]) -> dict[str, object]:
    spec = _PARAMS[kind]
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise ValueError(f"{kind} params: unknown key {unknown[0]!r} (known: {', '.join(spec)})")
    out: dict[str, object] = {}
    for key, default in spec.items():
        if key not in params and default is None:
            raise ValueError(f"{kind} params: missing key {key!r}")
        value = params.get(key, default)
        if isinstance(default, bool):
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{kind} params: {key} must be true or false, got {value!r}")
            out[key] = bool(value)
            continue
        is_float = isinstance(default, float)
        ok_type = isinstance(value, (int, np.integer, float, np.floating)) if is_float else (
            isinstance(value, (int, np.integer)) and not isinstance(value, bool))
        if not ok_type or not math.isfinite(float(value)) or value < 0 or (key in _POSITIVE and value <= 0):
            what = "a positive" if key in _POSITIVE else "a non-negative"
            raise ValueError(f"{kind} params: {key} must be {what} {'number' if is_float else 'integer'}, "
                             f"got {value!r}")
        out[key] = float(value) if is_float else int(value)
    if kind == "multi-turn-conversations" and out["min_messages"] < 2:
        raise ValueError(f"{kind} params: min_messages must be >= 2, got {out['min_messages']}")
    return out


def _number(stage: Mapping[str, object], key: str, k: int, *, integer: bool, allow_inf: bool = False) -> float:
    """``stage[key]`` checked: a positive integer (``requests`` may be 0) or number (``inf`` if allowed)."""
    value = stage[key]
    types = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    ok = isinstance(value, types) and not isinstance(value, bool)
    if ok:
        low_ok = value > 0 or (key == "requests" and value == 0)
        ok = low_ok and (allow_inf or math.isfinite(float(value)))
    if not ok:
        what = "integer" if integer else "number"
        raise ValueError(f"load stages[{k}].{key} must be a positive {what}{' or inf' if allow_inf else ''}, "
                         f"got {value!r}")
    return float(value)


def _stages(kind: str, load: Mapping[str, object], multi_turn: bool) -> tuple[str, list[dict[str, float]]]:
    unknown = sorted(set(load) - _LOAD_KEYS)
    if unknown:
        raise ValueError(f"load: unknown key {unknown[0]!r} (known: {', '.join(sorted(_LOAD_KEYS))})")
    arrival = load.get("arrival")
    if arrival not in ARRIVALS or arrival == "recorded":
        raise ValueError(f"load.arrival must be one of {', '.join(ARRIVALS)}, got {arrival!r}"
                         + (" ('recorded' only with kind recorded-requests)" if arrival == "recorded" else ""))
    if arrival == "constant" and kind not in _INFERENCE_PERF:
        raise ValueError(f"load.arrival 'constant' is inference-perf's timer; {kind} has poisson or concurrency")
    if arrival == "concurrency" and multi_turn:
        raise ValueError("load.arrival 'concurrency' cannot chain a multi-turn shared-prefix run "
                         "(enable_multi_turn_chat): a request has one parent")
    stages = load.get("stages")
    if not isinstance(stages, Sequence) or isinstance(stages, str) or not stages:
        raise ValueError("load.stages must be a non-empty list")
    keys = {"concurrency", "requests", "rate"} if arrival == "concurrency" else {"rate", "duration", "requests"}
    out = []
    for k, st in enumerate(stages):
        if not isinstance(st, Mapping):
            raise ValueError(f"load stages[{k}] must be a mapping, got {st!r}")
        bad = sorted(set(st) - keys)
        if bad:
            raise ValueError(f"load stages[{k}]: unknown key {bad[0]!r} for arrival {arrival} "
                             f"(known: {', '.join(sorted(keys))})")
        s: dict[str, float] = {}
        if arrival == "concurrency":
            for key in ("concurrency", "requests"):
                if key not in st:
                    raise ValueError(f"load stages[{k}]: missing key {key!r}")
                s[key] = _number(st, key, k, integer=True)
            rate = st.get("rate")
            s["rate"] = math.inf if rate is None else _number(st, "rate", k, integer=False, allow_inf=True)
            s["duration"] = 0.0
        else:
            if "rate" not in st:
                raise ValueError(f"load stages[{k}]: missing key 'rate'")
            s["rate"] = _number(st, "rate", k, integer=False, allow_inf=kind not in _INFERENCE_PERF)
            s["duration"] = _number(st, "duration", k, integer=False) if "duration" in st else 0.0
            if "requests" in st:
                s["requests"] = _number(st, "requests", k, integer=True)
            elif math.isfinite(s["rate"]) and "duration" in st:
                s["requests"] = float(int(s["rate"] * s["duration"]))
            elif kind != "generated-shared-prefix":
                raise ValueError(f"load stages[{k}]: needs 'requests', or a finite 'rate' and a 'duration'")
        out.append(s)
    return arrival, out


# ---------------------------------------------------------------------------------------------- timers
def _offsets(kind: str, arrival: str, rate: float, duration: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Send times of a stage's ``n`` requests, relative to its start (the harness's timer)."""
    if n == 0:
        return np.zeros(0)
    if kind in _INFERENCE_PERF:
        if arrival == "constant":
            return _fit_interval(rng.exponential(1.0 / rate, n), duration)
        parts, t, have = [], 0.0, 0
        while have < n:   # PoissonLoadTimer: Poisson(rate) requests per second, each second a ConstantLoadTimer
            c = int(rng.poisson(rate))
            if c < 1:
                t += 1.0
                continue
            times = t + _fit_interval(rng.exponential(1.0 / c, c), 1.0)
            parts.append(times)
            t, have = float(times[-1]), have + c
        return np.concatenate(parts)[:n]
    if not math.isfinite(rate):
        return np.zeros(n)
    return np.concatenate([[0.0], np.cumsum(rng.exponential(1.0 / rate, n - 1))])


def _fit_interval(gaps: np.ndarray, span: float) -> np.ndarray:
    """inference-perf ConstantLoadTimer: gaps scaled to sum to ``span``; the i-th request after i gaps."""
    return np.cumsum(gaps * (span / gaps.sum()))


# ---------------------------------------------------------------------------------------------- datasets
def _group_prompts(chains: BlockChains, n_groups: int, per_group: int, system_len: int, question_len: int,
                   order: np.ndarray) -> list[list[tuple[int, int]]]:
    """Segments of ``n_groups`` system prompts x ``per_group`` distinct questions, listed in ``order``."""
    systems = [chains.uid() for _ in range(n_groups)]
    segs = [[(systems[g], system_len), (chains.uid(), question_len)] for g in range(n_groups) for _ in range(per_group)]
    return [segs[i] for i in order]


def _fixed_set(chains: BlockChains, segments: list[list[tuple[int, int]]], output_len: int) -> _Prompts:
    """A fixed set of prompts (re-sent verbatim) with one output length."""
    n = len(segments)
    return _Prompts.of([sum(t for _, t in sg) for sg in segments], np.full(n, output_len),
                       [chains.ids(sg) for sg in segments])


def _scale_to_mean(shape: np.ndarray, target: float, fn, what: str) -> float:
    """The scale ``s`` (bisection) at which ``mean(fn(s * shape)) == target``; fn is non-decreasing in s."""
    lo, hi = 0.0, 1.0
    while fn(hi * shape).mean() < target:
        hi *= 2.0
        if hi > 1e9:
            raise ValueError(f"multi-turn-conversations params: {what} {target} cannot be reached")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fn(mid * shape).mean() < target else (lo, mid)
    return hi


def _conversations(chains: BlockChains, p: Mapping[str, object], rng: np.random.Generator) -> _Prompts:
    """KubeAI's prompt/completion pairs from synthesized threads, kept, shuffled and pruned as the harness does."""
    keep = int(p["max_conversations"])
    threads, pairs = [], 0
    while pairs < keep:   # enough threads for the first max_conversations pairs
        m = int(p["min_messages"]) + 2 * int(rng.poisson(_EXTRA_PAIRS_MEAN))
        threads.append(m)
        pairs += (m + 1) // 2
    mu = -0.5 * _MESSAGE_SIGMA ** 2
    shape = [rng.lognormal(mu, _MESSAGE_SIGMA, m) * np.where(np.arange(m) % 2, _ASSISTANT_TO_USER, 1.0)
             for m in threads]
    # pair (thread t, i): prompt = messages[:i] (i odd), completion = message i, or empty past the last
    pair_t = np.concatenate([np.full((m + 1) // 2, t) for t, m in enumerate(threads)])[:keep]
    pair_i = np.concatenate([np.arange(1, m + 1, 2) for m in threads])[:keep]
    flat = np.concatenate(shape)
    start = np.concatenate([[0], np.cumsum(threads)[:-1]])

    def tokens(scaled):
        return np.maximum(1, np.rint(scaled)).astype(np.int64)

    def prompt_lens(scaled_flat):
        cum = np.concatenate([[0], np.cumsum(tokens(scaled_flat) + _TAG_TOKENS)])
        return _BOS + cum[start[pair_t] + pair_i] - cum[start[pair_t]]

    scale = _scale_to_mean(flat, float(p["mean_input_len"]), prompt_lens, "mean_input_len")
    msg = tokens(scale * flat)
    prompt = prompt_lens(scale * flat)
    last = pair_i >= np.asarray(threads)[pair_t]
    max_tokens = np.where(last, _BOS, _BOS + msg[np.minimum(start[pair_t] + pair_i, len(msg) - 1)])
    order = rng.permutation(keep)
    kept = order[(prompt[order] >= _MIN_LEN) & (max_tokens[order] >= _MIN_LEN) & (prompt[order] <= _MAX_PROMPT)]
    if not len(kept):
        raise ValueError("multi-turn-conversations: every pair was pruned (prompt < 4, completion < 4 or "
                         "prompt > 8192 tokens)")
    out_shape = rng.lognormal(-0.5 * _OUTPUT_SIGMA ** 2, _OUTPUT_SIGMA, len(kept))
    cap = max_tokens[kept]

    def outputs(scaled):
        return np.minimum(cap, np.maximum(1, np.rint(scaled))).astype(np.int64)

    out_scale = _scale_to_mean(out_shape, float(p["mean_output_len"]), outputs, "mean_output_len")
    uid = [chains.uid() for _ in range(len(msg))]
    bos = chains.uid()
    ids = []
    for r in kept:
        t, i = pair_t[r], pair_i[r]
        segs = [(bos, _BOS)] + [(uid[start[t] + j], int(msg[start[t] + j]) + _TAG_TOKENS) for j in range(i)]
        ids.append(chains.ids(segs))
    return _Prompts.of(prompt[kept], outputs(out_scale * out_shape), ids)


# ---------------------------------------------------------------------------------------------- assembly
def harness_workload(kind: str, params: Mapping[str, object], load: Mapping[str, object], seed: int, *,
                     block_size: int = 16, stage_starts: Sequence[float] | None = None) -> HarnessWorkload:
    """The requests a harness sends for ``params`` (its own names) under ``load`` (see the module docstring).

    ``load = {"arrival": "poisson"|"constant"|"concurrency", "stages": [{"rate", "duration"}, ...] or
    [{"concurrency", "requests", "rate"|None}, ...]}``. ``stage_starts``: absolute start of each stage
    (default: back to back, stage k at the sum of the previous durations, or at the previous stage's last
    send if its timer overran). Same seed, same workload; ``stage_starts`` only shifts a stage's times.
    Bad input raises ValueError naming the key.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(block_size, (int, np.integer)) or isinstance(block_size, bool) or block_size <= 0:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    if not isinstance(params, Mapping) or not isinstance(load, Mapping):
        raise ValueError("params and load must be mappings")
    if kind == "recorded-requests":
        from .recorded import BLOCK_SIZE, recorded_workload

        if block_size != BLOCK_SIZE:
            raise ValueError(f"block_size must be {BLOCK_SIZE} for recorded-requests (the bundles' blocks), "
                             f"got {block_size}")
        wl = recorded_workload(params, load)
        return HarnessWorkload(wl, np.zeros(len(wl), dtype=np.int64), closed=False)
    if kind == "multi-turn-sessions":
        from .multi_turn_sessions import session_workload

        return session_workload(params, load, seed, block_size=int(block_size), stage_starts=stage_starts)
    p = _params(kind, params)
    multi_turn = bool(p.get("enable_multi_turn_chat", False))
    arrival, stages = _stages(kind, load, multi_turn)
    chains = BlockChains(int(block_size))
    rng = np.random.default_rng([seed, 0])

    datasets: list[_Prompts] = []   # the stage's dataset: request k of a stage sends its prompt k mod size
    if kind == "shared-prefix":
        n_prompts = p["num_groups"] * p["num_prompts_per_group"]
        segments = _group_prompts(chains, p["num_groups"], p["num_prompts_per_group"], p["system_prompt_len"],
                                  p["question_len"], rng.permutation(n_prompts))
        sent = [int(s["requests"]) for s in stages]
        if multi_turn:
            times = _times(kind, arrival, stages, sent, seed)
            return _multi_turn(chains, segments, p["output_len"], times, _starts(stages, times, stage_starts))
        datasets = [_fixed_set(chains, segments, p["output_len"])] * len(stages)
    elif kind == "generated-shared-prefix":
        n_prompts = p["gsp_num_groups"] * p["gsp_prompts_per_group"]
        segments = _group_prompts(chains, p["gsp_num_groups"], p["gsp_prompts_per_group"],
                                  p["gsp_system_prompt_len"], p["gsp_question_len"], rng.permutation(n_prompts))
        sent = [int(s.get("requests", n_prompts)) for s in stages]
        datasets = [_fixed_set(chains, segments, p["gsp_output_len"])] * len(stages)
    elif kind == "prefix-repetition":
        n_pre, sent, by_size = p["num_prefixes"], [], {}
        for k, s in enumerate(stages):
            per = int(s["requests"]) // n_pre
            if not per:
                raise ValueError(f"load stages[{k}].requests: prefix-repetition needs at least num_prefixes "
                                 f"({n_pre}) requests, got {int(s['requests'])}")
            if per not in by_size:   # same seed and size: vLLM regenerates the identical dataset
                order = np.random.default_rng([seed, 0, per]).permutation(per * n_pre)
                by_size[per] = _fixed_set(chains, _group_prompts(chains, n_pre, per, p["prefix_len"],
                                                                 p["suffix_len"], order), p["output_len"])
            datasets.append(by_size[per])
            sent.append(per * n_pre)
    else:
        sent = [int(s["requests"]) for s in stages]
        datasets = [_conversations(chains, p, rng)] * len(stages)
    times = _times(kind, arrival, stages, sent, seed)
    return _assemble(kind, arrival, stages, datasets, times, _starts(stages, times, stage_starts), block_size)


def _times(kind: str, arrival: str, stages: list[dict[str, float]], sent: list[int], seed: int) -> list[np.ndarray]:
    """Each stage's send times relative to its start; stage k draws from its own stream."""
    return [_offsets(kind, arrival, s["rate"], s["duration"], n, np.random.default_rng([seed, 1, k]))
            for k, (s, n) in enumerate(zip(stages, sent))]


def _starts(stages: list[dict[str, float]], times: list[np.ndarray], stage_starts) -> np.ndarray:
    """Absolute stage starts: given (checked: no stage starts before the previous one's last send) or back to back."""
    last = np.array([t[-1] if len(t) else 0.0 for t in times])
    if stage_starts is None:
        starts = np.zeros(len(stages))
        for k in range(1, len(stages)):
            starts[k] = starts[k - 1] + max(stages[k - 1]["duration"], last[k - 1])
        return starts
    starts = np.asarray(stage_starts, dtype=np.float64)
    if starts.shape != (len(stages),) or not np.all(np.isfinite(starts)):
        raise ValueError(f"stage_starts must hold {len(stages)} finite times, got {list(stage_starts)!r}")
    for k in range(1, len(stages)):
        if starts[k] < starts[k - 1] + last[k - 1]:
            raise ValueError(f"stage_starts[{k}] = {starts[k]} is before stage {k - 1}'s last send at "
                             f"{starts[k - 1] + last[k - 1]}: stages run one at a time")
    return starts


def _assemble(kind: str, arrival: str, stages: list[dict[str, float]], datasets: list[_Prompts],
              times: list[np.ndarray], starts: np.ndarray, block_size: int) -> HarnessWorkload:
    """Rate stages: one session per request. Concurrency stages: each slot's requests chained (closed)."""
    unique = list({id(d): d for d in datasets}.values())
    id_base = dict(zip((id(d) for d in unique), np.cumsum([0] + [len(d.ids) for d in unique[:-1]])))
    cols: dict[str, list[np.ndarray]] = {key: [] for key in
                                         ("arrival", "input_len", "output_len", "session", "turn", "parent",
                                          "stage", "src", "count")}
    row = slot_base = 0
    for k, (data, t, s) in enumerate(zip(datasets, times, stages)):
        n = len(t)
        which = np.arange(n) % len(data.input_len)
        local = np.arange(n)
        if arrival == "concurrency":
            c = int(s["concurrency"])
            session, turn, parent = slot_base + local % c, local // c, np.where(local >= c, row + local - c, -1)
            slot_base += c
        else:
            session, turn, parent = row + local, np.zeros(n, dtype=np.int64), np.full(n, -1)
        for key, value in (("arrival", starts[k] + t), ("input_len", data.input_len[which]),
                           ("output_len", data.output_len[which]), ("session", session), ("turn", turn),
                           ("parent", parent), ("stage", np.full(n, k)),
                           ("src", id_base[id(data)] + data.offsets[which]),
                           ("count", np.diff(data.offsets)[which])):
            cols[key].append(np.asarray(value))
        row += n
    col = {key: np.concatenate(v) for key, v in cols.items()}
    count = col["count"].astype(np.int64)
    offsets = np.zeros(len(count) + 1, dtype=np.int64)
    np.cumsum(count, out=offsets[1:])
    gather = np.repeat(col["src"].astype(np.int64) - offsets[:-1], count) + np.arange(offsets[-1])
    all_ids = np.concatenate([d.ids for d in unique])
    wl = Workload(arrival=col["arrival"], input_len=col["input_len"], output_len=col["output_len"],
                  session=col["session"], turn=col["turn"], parent=col["parent"], gap=np.zeros(len(count)),
                  block_offsets=offsets, block_ids=all_ids[gather], block_size=int(block_size), name=kind)
    return HarnessWorkload(wl, col["stage"], closed=arrival == "concurrency")


def _multi_turn(chains: BlockChains, segments: list[list[tuple[int, int]]], output_len: int,
                times: list[np.ndarray], starts: np.ndarray) -> HarnessWorkload:
    """inference-perf multi-turn: request k of a stage is user ``k mod G*P``'s next round (closed, gap 0)."""
    n_users = len(segments)
    context = [list(sg[:-1]) for sg in segments]   # a user's context starts as its system prompt
    question = [sg[-1] for sg in segments]
    known: list[np.ndarray | None] = [None] * n_users
    last = np.full(n_users, -1)
    rounds = np.zeros(n_users, dtype=np.int64)
    rows: dict[str, list] = {key: [] for key in ("arrival", "input_len", "parent", "turn", "session", "stage")}
    ids = []
    for k, t in enumerate(times):
        for j, send in enumerate(t):
            u = j % n_users
            prompt = context[u] + [question[u]]
            blocks = chains.ids(prompt, known[u])
            length = sum(n for _, n in prompt)
            for key, value in (("arrival", starts[k] + send), ("input_len", length), ("parent", last[u]),
                               ("turn", rounds[u]), ("session", u), ("stage", k)):
                rows[key].append(value)
            ids.append(blocks)
            context[u] = prompt + [(chains.uid(), output_len)]   # context = prompt + " " + reply (ignore_eos)
            known[u] = blocks[: length // chains.block_size]
            last[u], rounds[u] = len(ids) - 1, rounds[u] + 1
    n = len(ids)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(b) for b in ids], out=offsets[1:])
    wl = Workload(arrival=np.asarray(rows["arrival"], dtype=np.float64),
                  input_len=np.asarray(rows["input_len"], dtype=np.int64), output_len=np.full(n, output_len),
                  session=np.asarray(rows["session"], dtype=np.int64), turn=np.asarray(rows["turn"], dtype=np.int64),
                  parent=np.asarray(rows["parent"], dtype=np.int64), gap=np.zeros(n), block_offsets=offsets,
                  block_ids=np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64),
                  block_size=chains.block_size, name="shared-prefix-multi-turn")
    return HarnessWorkload(wl, np.asarray(rows["stage"], dtype=np.int64), closed=True)
