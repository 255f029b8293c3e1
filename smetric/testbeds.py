"""The paper's experimental setups, shared by every figure: clusters, the agent workload, sizes, one sweep point.

Testbeds (the paper's Evaluation section, arXiv 2607.08565):

* ``30b``: 32 instances of Qwen3-Coder-30B-A3B (the model shape of ``qwen3-30b-a3b``), TP 1 on
  H20 96 GB — the LMetric group's testbed GPU; the SMetric paper does not state GPU or TP.
* ``235b``: 8 instances of Qwen3-235B-A22B. Our choice: TP 8 on H20 (one 8-GPU node per
  instance; 470 GB of bf16 weights leave ~230 GB of KV per instance). The paper does not say.

Both are colocated with a provisioned global KV store reached through the ``lmcache-mooncake``
KV connector (vLLM v1 + LMCache + Mooncake store, the paper's stack; parameters and sources in
``data/perf/kv_path.json``), reply KV kept in the local prefix cache (vLLM v1 and SGLang do), hits
counted at vLLM's 16-token block, the serving stack of the ``paper-testbed`` engine row (LMetric's artifact ran
a patched vLLM-v1 of unstated version; ``data/perf/serving_stack.json`` reads it as synchronous V1 and fig14 shows
async scheduling as the other reading), and agent sessions replayed **closed**: a follow-up turn arrives
at ``max(its scheduled time, its parent's finish + its think gap)``, because an agent acts only on a
complete response (:data:`TESTBED_DEFAULTS`; every figure can override them).

Workloads (:data:`WORKLOADS`): ``bailian-coder`` (the default: public BAILIAN coder lengths with the
paper's agent reuse structure, the preset closest to the paper's traffic), the real Claude Code
sessions of kv-cache-tester (``claude-code``), and the other presets of
:data:`smetric.workload.synthetic.PRESETS` (``long-context``, lengths from a third-party report on a
private trace, is a sensitivity row).

**Offered load** (every figure): requests per minute per instance, set by how many sessions
start per unit time (:func:`offered_point`); the tool/think gaps between turns stay as generated,
so the calibrated reuse-in-time (paper Finding 4: ~90 % of reuses within ~100 s) holds at every
load. Compressing a fixed trace's timeline instead (``simulate(load=x)``) would also stretch or
shrink those gaps and change the workload along with the load. In closed replay the offered load
is the same number: the rate of the schedule the sessions were generated with (sessions start
open, at that rate; each turn's scheduled time is its session's start plus the generated gaps).
A follow-up is only delayed past its scheduled time when its parent finishes late, so the served
rate falls below the offered one exactly when the cluster cannot keep up -- which is what the
load axis is meant to show.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from .cluster.config import ClusterConfig, GlobalStore
from .workload.core import Workload

__all__ = ["TESTBEDS", "TESTBED_DEFAULTS", "REFERENCE_RPM", "WORKLOADS", "DEFAULT_WORKLOAD", "TRACE_WORKLOADS",
           "paper_cluster", "agent_workload", "trace_workload", "trace_conversations", "trace_file", "run_point",
           "offered_point", "BASELINES", "PROVISIONED", "WARMUP_MINUTES", "clear_workload_cache"]

#: ``paper_cluster``'s default store: the testbed's provisioned global store (``GlobalStore.provisioned``).
PROVISIONED = "provisioned"

# name -> (model, gpu, tp, instances)
TESTBEDS = {
    "30b": ("qwen3-30b-a3b", "h20", 1, 32),
    "235b": ("qwen3-235b-a22b", "h20", 8, 8),
}

#: What every testbed runs with unless a figure overrides it (ClusterConfig fields; see the module docstring).
TESTBED_DEFAULTS = {"replay": "closed", "kv_connector": "lmcache-mooncake", "cache_replies": True,
                    "hit_granularity": 16, "engine": "paper-testbed"}

#: Real agent-session traces usable as a figure's workload (catalog names; arrivals generated at the offered rate).
TRACE_WORKLOADS = ("claude-code",)
#: Synthetic presets usable as a figure's workload (``smetric.workload.synthetic.PRESETS``).
PRESET_WORKLOADS = ("bailian-coder", "toolagent", "tracelab", "long-context", "chat")
WORKLOADS = PRESET_WORKLOADS + TRACE_WORKLOADS
#: The workload of the paper figures: the preset closest to the paper's BAILIAN coding-agent traffic.
DEFAULT_WORKLOAD = "bailian-coder"
#: Warm-up (minutes of session starts before the window) of a synthetic workload: 6 hours let the sessions' long
#: tail reach steady state, so the window runs at the offered rate (30 minutes left bailian-coder 23 % short).
WARMUP_MINUTES = 360.0
#: Warm-up (minutes of conversation starts before the window) of a trace workload: its conversations run
#: for hours to days, so the window reaches the offered rate only after a day of starts. Its heavy tail
#: still makes one seed's 10-minute window vary by about +-25 % around the offered rate (claude-code at
#: 2 requests/min/instance, 8 seeds: 1.31-2.32, mean 1.94); comparisons are paired per seed.
TRACE_WARMUP_MINUTES = 1440.0

# The routers SMETRIC is compared against in the evaluation figures (registry names).
BASELINES = ("lmetric", "bailian", "dynamo", "sglang", "llm-d", "vllm-prefix", "vllm-session",
             "aibrix", "preble", "mooncake", "least-load", "round-robin", "session-sticky",
             "cache-affinity")


def paper_cluster(testbed: str = "30b", *, n_instances: int | None = None,
                  global_store: GlobalStore | None | str = PROVISIONED, **overrides) -> ClusterConfig:
    """The cluster of a paper testbed with :data:`TESTBED_DEFAULTS`, updated by ``overrides`` (ClusterConfig
    fields, including ``model``, ``gpu`` or ``tp``: e.g. the testbed on another GPU); ``global_store`` is a
    :class:`GlobalStore`, ``None`` (no store) or :data:`PROVISIONED`
    (``GlobalStore.provisioned`` for the testbed's TP, the default)."""
    if testbed not in TESTBEDS:
        raise ValueError(f"testbed must be one of {sorted(TESTBEDS)}, got {testbed!r}")
    model, gpu, tp, n = TESTBEDS[testbed]
    if isinstance(global_store, str):
        if global_store != PROVISIONED:
            raise TypeError(f"global_store must be a GlobalStore, None or {PROVISIONED!r}, got {global_store!r}")
        global_store = GlobalStore.provisioned(tp)
    elif global_store is not None and not isinstance(global_store, GlobalStore):
        raise TypeError(f"global_store must be a GlobalStore, None or {PROVISIONED!r}, got {global_store!r}")
    return ClusterConfig(**{"model": model, "gpu": gpu, "tp": tp, "n_instances": n_instances or n,
                            "global_store": global_store, **TESTBED_DEFAULTS, **overrides})


#: Offered loads at or below this many requests/min/instance are thinned from one workload
#: generated at this rate (the top of the paper's 43-48 requests/min/instance, Finding 6).
REFERENCE_RPM = 48.0


@lru_cache(maxsize=4)
def _generated(n_instances: int, minutes: float, seed: int, rpm_per_instance: float, warmup_minutes: float,
               preset: str, overrides: tuple) -> Workload:
    rate = rpm_per_instance * n_instances
    if preset in TRACE_WORKLOADS:
        options = dict(overrides)
        subagents = options.pop("subagents", FIGURE_SUBAGENTS)
        if set(options) - {"arrival"}:
            raise ValueError(f"the {preset} trace takes only the subagents and arrival options, got {options}")
        return trace_conversations(preset, subagents).workload(
            requests_per_minute=rate, seed=seed, duration=60.0 * minutes,
            warmup=60.0 * max(warmup_minutes, TRACE_WARMUP_MINUTES), **options)
    from .workload.synthetic import synth_agent_workload

    return synth_agent_workload(duration=60.0 * minutes, warmup=60.0 * warmup_minutes, seed=seed, preset=preset,
                                requests_per_minute=rate, **dict(overrides))


def clear_workload_cache() -> None:
    """Drop the generated workloads :func:`agent_workload` keeps to thin other loads from (memory: ~3 KB per
    request at 16-token blocks, e.g. ~9 GB for an hour on 1,024 instances)."""
    _generated.cache_clear()


#: How the figures map a real trace's sub-agents (``smetric.workload.kvcache_tester``): ``"attached"`` (the
#: loader's default: each sub-agent's calls stay in its conversation's session and the conversation's next call
#: joins its last one, ``Workload.join_to``, which closed replay waits for) or ``"separate"`` (each a session of
#: its own).
FIGURE_SUBAGENTS = "attached"


def load_figure_trace(name: str, **options) -> Workload:
    """``load_trace(name, **options)`` with the figures' sub-agent mapping (:data:`FIGURE_SUBAGENTS`) for a
    kv-cache-tester trace."""
    from .workload.catalog import TRACES
    from .workload.loaders import load_trace

    if name in TRACES and TRACES[name].format == "kvcache-tester":
        options.setdefault("subagents", FIGURE_SUBAGENTS)
    return load_trace(name, **options)


@lru_cache(maxsize=2)
def trace_conversations(name: str, subagents: str = FIGURE_SUBAGENTS):
    """The parsed conversations of a trace workload of :data:`TRACE_WORKLOADS` (read once per process per
    ``subagents`` mapping: ``"separate"``, the figures' :data:`FIGURE_SUBAGENTS`, or ``"attached"``; see
    :mod:`..workload.kvcache_tester`)."""
    from .workload.catalog import trace_path
    from .workload.kvcache_tester import read_conversations

    return read_conversations(trace_path(name), name=name, subagents=subagents)[0]


@lru_cache(maxsize=16)
def agent_workload(n_instances: int, minutes: float, seed: int = 0, rpm_per_instance: float = 45.0,
                   warmup_minutes: float = WARMUP_MINUTES, preset: str = DEFAULT_WORKLOAD,
                   reference_rpm: float = REFERENCE_RPM,
                   **overrides) -> Workload:
    """Agent sessions of ``preset`` (one of :data:`WORKLOADS`: a synthetic preset, or a real trace whose
    conversations start at the offered rate) arriving at ``rpm_per_instance × n_instances`` requests per minute.

    The window ``[0, minutes)`` is cut from sessions that started up to ``warmup_minutes`` before
    it, so follow-ups in the window belong to sessions already under way (as in a real trace); the
    default of 6 hours lets the sessions' long tail reach steady state, so the window's request rate
    is the offered one (within ~2 %; 30 minutes left bailian-coder 23 % and long-context 19 % short).
    Loads up to ``reference_rpm`` (default :data:`REFERENCE_RPM`; a figure passes the top of its load
    grid) are **thinned** from one workload generated at that rate: each session is kept when its own
    seeded uniform is below ``rpm / reference_rpm``. Thinning a
    Poisson stream of independent sessions gives a Poisson stream at the lower rate, and a lower
    load is then a subset of a higher one (common random numbers), so curves over load are smooth
    and not redrawn at every rate. Higher loads are generated directly. Cached per argument set.
    """
    if not rpm_per_instance > 0:
        raise ValueError(f"rpm_per_instance must be > 0, got {rpm_per_instance!r}")
    if isinstance(n_instances, bool) or not isinstance(n_instances, (int, np.integer)) or n_instances < 1:
        raise ValueError(f"n_instances must be a positive integer, got {n_instances!r}")
    if preset not in WORKLOADS:
        raise ValueError(f"workload must be one of {WORKLOADS}, got {preset!r} (a trace file: trace_workload)")
    key = tuple(sorted(overrides.items()))
    if rpm_per_instance > reference_rpm:
        return _generated(n_instances, minutes, seed, rpm_per_instance, warmup_minutes, preset, key)
    full = _generated(n_instances, minutes, seed, float(reference_rpm), warmup_minutes, preset, key)
    sessions, index = np.unique(full.session, return_inverse=True)
    keep_session = np.random.default_rng([seed, 0x7417]).random(len(sessions)) < rpm_per_instance / reference_rpm
    return full.select(keep_session[index])


@lru_cache(maxsize=2)
def trace_file(trace: str) -> Workload:
    """A timestamped trace file or catalog name, loaded once per process (``loaders.load_trace``)."""
    from .workload.loaders import load_trace

    return load_trace(trace)


def trace_workload(trace: str, n_instances: int, minutes: float, rpm_per_instance: float) -> Workload:
    """The first ``minutes`` of a timestamped trace file (a path, or a catalog name such as ``qwen-coder``;
    any format :func:`~smetric.workload.loaders.load_trace` reads) replayed at ``rpm_per_instance``.

    The trace's own timeline is compressed or stretched (arrivals and gaps divided by one factor) so
    that its first ``minutes`` of requests arrive at the offered rate: the standard way to replay a
    production trace at a chosen load (LMetric's artifact replays the BAILIAN coder trace at 2.4x).
    """
    if not rpm_per_instance > 0:
        raise ValueError(f"rpm_per_instance must be > 0, got {rpm_per_instance!r}")
    full = trace_file(str(trace))
    t0 = float(full.arrival[0])
    native = full.window(t0, t0 + 60.0 * minutes)
    factor = rpm_per_instance / (len(native) / minutes / n_instances)  # offered / native rate (> 1 compresses)
    span = 60.0 * minutes * factor
    if full.arrival[-1] - t0 < span * (1 - 1e-9):
        raise ValueError(f"{trace}: {full.arrival[-1] - t0:.0f} s of trace cannot fill {minutes} min at "
                         f"{rpm_per_instance} requests/min/instance on {n_instances} instances")
    scaled = full.window(t0, t0 + span).scale_load(factor)
    return replace(scaled, arrival=scaled.arrival - t0)


def run_point(workload: Workload, cluster: ClusterConfig, policy: str, load: float = 1.0, seed: int = 0,
              params: dict | None = None, warmup_frac: float = 0.0, diagnostics: bool = False,
              **param_overrides) -> dict:
    """One simulation → its summary dict (a module-level function, so sweeps can ship it to workers).

    ``params`` and any ``param_*`` keywords (``param_hit_ratio=0.7`` → ``hit_ratio``) are policy
    parameters. ``warmup_frac`` of the (load-scaled) scheduled arrival span is simulated but not measured.
    ``diagnostics`` adds the measured window's mechanism diagnostics (``SimResult.diagnostics``).
    The engine's wall time is left out, so a sweep's results depend only on its inputs.
    """
    from .cluster.simulate import simulate

    merged = dict(params or {})
    for key, val in param_overrides.items():
        if not key.startswith("param_"):
            raise TypeError(f"run_point() got an unexpected keyword {key!r}")
        merged[key[len("param_"):]] = val
    if not 0.0 <= warmup_frac < 1.0:
        raise ValueError(f"warmup_frac must be in [0, 1), got {warmup_frac!r}")
    result = simulate(workload, cluster, policy, merged or None, load=load, seed=seed, progress=False)
    since = result.warmup_end(warmup_frac) if warmup_frac else None
    summary = result.summary(since=since)
    summary.pop("wall_time_s")  # a timing, not a result: figure CSVs stay byte-identical across runs
    return {**summary, **result.diagnostics(since)} if diagnostics else summary


def offered_point(rpm_per_instance: float, policy: str, *, testbed: str = "30b", n_instances: int | None = None,
                  minutes: float = 10.0, seed: int = 0, warmup_frac: float = 0.25,
                  global_store: GlobalStore | None | str = PROVISIONED, params: dict | None = None,
                  cluster_overrides: dict | None = None, workload_overrides: dict | None = None,
                  trace: str | None = None, diagnostics: bool = False) -> dict:
    """Summary of ``policy`` at an offered load of ``rpm_per_instance`` requests/min/instance (a sweep point).

    The workload is generated at that rate (cached per worker process) and replayed as is
    (``load=1``); ``seed`` picks the workload and seeds the policy's random draws. With ``trace`` (a
    timestamped trace file or catalog name) the workload is that trace at the offered rate
    (:func:`trace_workload`; the same for every seed) instead of generated sessions. ``diagnostics``: see
    :func:`run_point`.
    """
    cluster = paper_cluster(testbed, n_instances=n_instances, global_store=global_store,
                            **(cluster_overrides or {}))
    if trace is not None:
        workload = trace_workload(trace, cluster.n_instances, minutes, float(rpm_per_instance))
    else:
        workload = agent_workload(cluster.n_instances, minutes, seed, rpm_per_instance=float(rpm_per_instance),
                                  **(workload_overrides or {}))
    return run_point(workload, cluster, policy, load=1.0, seed=seed, params=params, warmup_frac=warmup_frac,
                     diagnostics=diagnostics)
