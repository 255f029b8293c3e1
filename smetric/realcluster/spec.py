"""A published real-cluster experiment as data: the YAML schema of ``data/validation/*.yaml``, loaded and checked.

One file per experiment, with exactly these top-level keys, and inside ``cluster``, ``workload``, ``load`` and each
router exactly the keys described here (a free-text ``note`` is allowed in each; ``source`` may hold more)::

    name:     unique id
    source:   {repo, path, commit, url, note}               where the measured numbers are published
    cluster:  {model, gpu, tp, instances, kv_tokens, max_num_batched_tokens, max_num_seqs, block_size,
               weight_dtype, kv_dtype, cpu_offload, gpu_memory_utilization, engine}
    workload: {kind, params, seed}
    load:     {arrival, stages, measured_stages}
    routers:  {LABEL: {policy, params}}
    measured: {LABEL: {METRIC: value}}

* ``cluster.kv_tokens``: HBM KV tokens per instance as measured (``null`` = the performance model's estimate);
  ``cpu_offload``: host-DRAM KV tier per instance in GB (``0``/``false`` = none); ``engine``: the serving engine
  and version (``vllm-0.15.1``, ``vllm-v1``, ``sglang-0.4``) or a row name of ``data/perf/serving_stack.json``: it
  selects the family's behaviours of :data:`ENGINE_BEHAVIOURS` and the serving-stack row of that version; fields of
  the row may be replaced where the harness says so (``vllm-0.19.0:api_server_s=0,...``: timestamps taken inside
  the engine see no time outside it). Optional: ``chunked_prefill`` (default true; false = vLLM V0's scheduler
  without chunked prefill: prompts run whole and an iteration with a prompt runs no decodes); ``efficiency``
  (a mapping of :class:`~smetric.hardware.efficiency.Efficiency` fields to values replacing the GPU's calibrated
  ones: what-if studies only, ``data/whatifs/``).
* ``workload.kind``: a generator of :mod:`smetric.workload.harness` (params in the harness's own names);
  ``recorded-requests`` replays a recorded run (``params: {bundle: FOLDER}``, relative to ``data/validation``;
  :mod:`smetric.workload.recorded`) with ``load.arrival: recorded`` and one stage ``[{requests: n}]``.
* ``load.arrival``: ``poisson`` | ``constant`` | ``concurrency``; ``stages``: ``[{rate, duration}]`` (requests/s, s)
  (or ``[{rate, requests}]``: a request count instead of a duration; ``rate: .inf`` = all at the stage start)
  or ``[{concurrency, requests}]`` (optional ``rate``: requests are also paced at that rate); ``sessions`` (closed
  multi-turn sessions, ``workload.kind: multi-turn-sessions`` only) has one stage ``[{sessions: N}]``;
  ``measured_stages``: stage indices the published numbers cover, or ``all``.
  Optional inside ``load``: ``drain`` (stages run one at a time and wait for the previous stage to finish, as
  inference-perf does; default true for rate stages) and ``interval_s`` (the sleep after a drained stage, default
  1 s = inference-perf's ``load.interval``) and ``summary`` (``pooled``, the default: metrics over the measured
  stages' requests together; ``stage-mean``: the mean of the per-stage metrics, as the llm-d reports' summary rows
  are -- their output tok/s and TTFT are the means of their per-QPS rows; ``seed-mean``: the mean of per-run
  metrics over independent cold runs, one per trace seed, as a report of mean +- s.d. over seeds is) and ``seeds``
  (the trace seed of each run, each replacing ``workload.seed``; given exactly when the summary is ``seed-mean``).
  ``summary`` may instead map metrics to ``pooled`` / ``stage-mean`` (``{output_tps: stage-mean, default: pooled}``)
  where a report's summary row mixes the two, as llm-d's do.
* ``routers.LABEL``: ``policy`` and ``params`` in this package's names; optional ``router_info`` (what the router
  knows, and when: the fields of :class:`smetric.cluster.router_info.RouterInfo`); optional ``cluster`` (what this
  arm changes in the cluster, where the arms differ in the engine as well: :data:`ROUTER_CLUSTER_KEYS`, ``cpu_offload``
  as above, ``dram_policy`` and ``hybrid_kv_manager``, :attr:`smetric.cluster.ClusterConfig.dram_policy` and
  :attr:`~smetric.cluster.ClusterConfig.hybrid_kv_manager`).
* ``source.harness``: whose metric definitions the published numbers use (:data:`HARNESSES`).
  ``source.client_output_mean`` (``blis`` only): the output mean the harness divided by, as its client counted
  (re-tokenised) it, where published or derived from the published triple; used only in that harness's ITL
  (:mod:`.metrics`), never by the engine, which generates the nominal lengths.
  ``source.lss_error_pct`` (recorded runs): LLMServingSim's own published signed errors on the same run, kept
  for side-by-side reports.

A spec that is malformed, names an unknown model, GPU, policy, generator or metric, or holds an impossible value
raises :class:`SpecError` naming the file, the key and the reason -- before any simulation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["SpecError", "ExperimentSpec", "read_yaml", "load_spec", "load_specs", "spec_paths", "METRICS", "HARNESSES",
           "ENGINE_BEHAVIOURS", "TOP_LEVEL_KEYS"]

TOP_LEVEL_KEYS = ("name", "source", "cluster", "workload", "load", "routers", "measured")
CLUSTER_KEYS = ("model", "gpu", "tp", "instances", "kv_tokens", "max_num_batched_tokens", "max_num_seqs",
                "block_size", "weight_dtype", "kv_dtype", "cpu_offload", "gpu_memory_utilization", "engine")
#: Optional cluster keys (``chunked_prefill``: false = vLLM V0's scheduler without chunked prefill, whole prompts
#: apart from the decodes; default true. ``efficiency``: fields of the GPU's efficiency table replaced, for
#: what-if studies; no published spec sets it).
OPTIONAL_CLUSTER_KEYS = ("chunked_prefill", "efficiency")
#: Published metrics (units in the name).
METRICS = ("output_tps", "total_tps", "request_tps", "ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s",
           "e2e_mean_s", "e2e_p90_s", "e2e_p99_s", "itl_mean_s", "tpot_mean_s", "hit_ratio", "success_ratio",
           "e2e_p50_s", "tpot_p50_s", "queue_mean_s", "queue_p50_s", "ttft_p95_s")
#: Metric definitions of the harnesses behind the published numbers (see :mod:`.metrics`).
HARNESSES = ("inference-perf", "blis", "kubeai-chat", "sglang-bench-serving", "recorded-engine", "llm-router")
#: Engine families and the engine behaviours they select (vLLM and SGLang allocate KV incrementally and preempt
#: by recomputation when it runs out: vllm/v1/core/sched/scheduler.py; sglang's scheduler retracts decodes;
#: SGLang runs a prefill batch whenever it can form one and decodes only otherwise, mixed batches being off by
#: default: python/sglang/srt/managers/scheduler.py get_next_batch_to_run, server_args enable_mixed_chunk).
ENGINE_BEHAVIOURS = {"vllm": {"kv_allocation": "incremental"},
                     "sglang": {"kv_allocation": "incremental", "prefill_first": True}}
ARRIVALS = ("poisson", "constant", "concurrency", "recorded", "sessions")
SUMMARIES = ("pooled", "stage-mean", "seed-mean")
#: The rules a per-metric ``load.summary`` mapping may give a metric (or its ``default``).
STAGE_SUMMARIES = ("pooled", "stage-mean")
#: The cluster keys a router may override for its own arm.
ROUTER_CLUSTER_KEYS = ("cpu_offload", "dram_policy", "hybrid_kv_manager")
LOAD_KEYS = ("arrival", "stages", "measured_stages", "drain", "interval_s", "summary", "seeds")


class SpecError(ValueError):
    """A validation spec that cannot run: the message names the file, the key and the reason."""


def _fail(path, key: str, reason: str):
    raise SpecError(f"{path}: {key}: {reason}")


def _mapping(path, key: str, value) -> Mapping:
    if not isinstance(value, Mapping):
        _fail(path, key, f"must be a mapping, got {type(value).__name__}")
    return value


def _number(path, key: str, value, *, minimum: float = 0.0, strict: bool = True, allow_inf: bool = False,
            integer: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and integer:
        ok = float(value).is_integer()
    if not ok:
        _fail(path, key, f"must be {'an integer' if integer else 'a number'}, got {value!r}")
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        _fail(path, key, f"must be finite, got {value!r}")
    if value < minimum or (strict and value == minimum):
        _fail(path, key, f"must be {'>' if strict else '>='} {minimum:g}, got {value!r}")
    return value


def _require(path, section: Mapping, prefix: str, keys) -> None:
    missing = [k for k in keys if k not in section]
    if missing:
        _fail(path, f"{prefix}.{missing[0]}", "is missing")


def _known(path, section: Mapping, prefix: str, keys) -> None:
    """Fail on the first key of ``section`` that is neither in ``keys`` nor ``note`` (a misspelt optional key
    would otherwise be ignored silently)."""
    unknown = [k for k in section if k not in keys and k != "note"]
    if unknown:
        _fail(path, f"{prefix}.{unknown[0]}", f"unknown key; known: {', '.join(keys)}, note")


@dataclass(frozen=True)
class ExperimentSpec:
    """A checked experiment spec (the YAML mappings as loaded, plus the file it came from)."""

    name: str
    source: Mapping
    cluster: Mapping
    workload: Mapping
    load: Mapping
    routers: Mapping
    measured: Mapping
    path: str = "<memory>"

    @property
    def harness(self) -> str:
        """Whose metric definitions the measured numbers use (``source.harness``)."""
        return str(self.source.get("harness", "inference-perf"))

    @property
    def client_output_mean(self) -> float | None:
        """The client-counted output mean of the ``blis`` harness's ITL (``source.client_output_mean``), or None."""
        value = self.source.get("client_output_mean")
        return None if value is None else float(value)

    @property
    def drain(self) -> bool:
        """True when stages run one at a time, each after the previous has finished."""
        return bool(self.load.get("drain", self.load["arrival"] not in ("concurrency", "sessions")))

    @property
    def summary(self) -> str:
        """``pooled``: metrics over the measured stages' requests together; ``stage-mean``: the mean of each
        measured stage's metrics (the llm-d reports' summary rows are the mean of their per-QPS rows);
        ``seed-mean``: the mean of per-run metrics over the runs of :meth:`run_seeds`; ``per-metric``: a mapping
        (:meth:`summary_of`)."""
        summary = self.load.get("summary", "pooled")
        return "per-metric" if isinstance(summary, Mapping) else str(summary)

    def summary_of(self, metric: str) -> str:
        """The rule that summarises ``metric`` over the measured stages: the spec's one rule, or with a mapping
        (``load.summary: {output_tps: stage-mean, default: pooled}``) the metric's own, else its ``default``
        (``pooled`` when absent)."""
        summary = self.load.get("summary", "pooled")
        if isinstance(summary, Mapping):
            return str(summary.get(metric, summary.get("default", "pooled")))
        return str(summary)

    def run_seeds(self, quick: bool = False) -> list[int]:
        """The trace seed of each independent run: ``load.seeds`` (quick mode: the first only), else
        ``workload.seed``."""
        seeds = [int(s) for s in self.load.get("seeds", [self.workload["seed"]])]
        return seeds[:1] if quick else seeds

    @property
    def measured_stages(self) -> list[int]:
        """Indices of the stages the published numbers cover."""
        chosen = self.load["measured_stages"]
        return list(range(len(self.load["stages"]))) if chosen == "all" else [int(s) for s in chosen]

    @property
    def baseline(self) -> str:
        """The router the others are compared with: ``source.baseline`` or the last router listed."""
        return str(self.source.get("baseline", list(self.routers)[-1]))

    def engine_behaviour(self) -> dict:
        """ClusterConfig fields the serving engine (``cluster.engine``) selects: its family's KV allocation and the
        serving-stack row of its version (:mod:`smetric.cluster.serving_stack`)."""
        from ..cluster.serving_stack import parse, resolve

        engine = str(self.cluster["engine"])
        family = engine.split("-")[0].lower()
        row = parse(engine) if ":" in engine else resolve(engine)
        return {**ENGINE_BEHAVIOURS.get(family, {}), "engine": row}


def efficiency_overrides(cluster: Mapping) -> tuple[tuple[str, float], ...]:
    """The ``cluster.efficiency`` mapping as :class:`~smetric.cluster.ClusterConfig`'s ``efficiency_overrides``."""
    table = cluster.get("efficiency") or {}
    if not isinstance(table, Mapping):
        raise ValueError(f"must map efficiency fields to numbers, got {table!r}")
    return tuple(sorted((str(k), v) for k, v in table.items()))


def _check_cluster(path, cluster: Mapping) -> None:
    from ..hardware import get_gpu, get_model
    from ..hardware.perfmodel import DTYPES

    _require(path, cluster, "cluster", CLUSTER_KEYS)
    _known(path, cluster, "cluster", CLUSTER_KEYS + OPTIONAL_CLUSTER_KEYS)
    if not isinstance(cluster.get("chunked_prefill", True), bool):
        _fail(path, "cluster.chunked_prefill", f"must be true or false, got {cluster['chunked_prefill']!r}")
    if "efficiency" in cluster:
        from ..cluster.config import check_efficiency_overrides

        try:
            check_efficiency_overrides(efficiency_overrides(cluster))
        except (ValueError, TypeError) as exc:
            _fail(path, "cluster.efficiency", str(exc).removeprefix("efficiency_overrides: "))
    for key, getter in (("model", get_model), ("gpu", get_gpu)):
        try:
            getter(cluster[key])
        except ValueError as exc:
            _fail(path, f"cluster.{key}", str(exc))
    for key in ("tp", "instances", "max_num_batched_tokens", "max_num_seqs", "block_size"):
        _number(path, f"cluster.{key}", cluster[key], integer=True)
    if cluster["kv_tokens"] is not None:
        _number(path, "cluster.kv_tokens", cluster["kv_tokens"], integer=True)
    offload = cluster["cpu_offload"]
    if offload not in (False, None):
        _number(path, "cluster.cpu_offload", offload, strict=False)
    util = _number(path, "cluster.gpu_memory_utilization", cluster["gpu_memory_utilization"])
    if util > 1:
        _fail(path, "cluster.gpu_memory_utilization", f"must be in (0, 1], got {util!r}")
    for key in ("weight_dtype", "kv_dtype"):
        if not isinstance(cluster[key], str) or cluster[key] not in DTYPES:
            _fail(path, f"cluster.{key}", f"must be one of {sorted(DTYPES)}, got {cluster[key]!r}")
    from ..cluster.serving_stack import parse

    try:
        parse(cluster["engine"])
    except ValueError as exc:
        _fail(path, "cluster.engine", str(exc))


def _check_workload(path, workload: Mapping) -> None:
    from ..workload.harness import KINDS

    _require(path, workload, "workload", ("kind", "params", "seed"))
    _known(path, workload, "workload", ("kind", "params", "seed"))
    if workload["kind"] not in KINDS:
        _fail(path, "workload.kind", f"unknown generator {workload['kind']!r}; known: {', '.join(KINDS)}")
    _mapping(path, "workload.params", workload["params"])
    if workload["kind"] == "recorded-requests":   # read the bundle now: a bad one fails before any replay
        from ..workload.recorded import bundle_of

        try:
            bundle_of(workload["params"])
        except ValueError as exc:
            _fail(path, "workload.params", str(exc))
    _number(path, "workload.seed", workload["seed"], strict=False, integer=True)


def _check_load(path, load: Mapping) -> None:
    _require(path, load, "load", ("arrival", "stages", "measured_stages"))
    _known(path, load, "load", LOAD_KEYS)
    if not isinstance(load.get("drain", True), bool):
        _fail(path, "load.drain", f"must be true or false, got {load['drain']!r}")
    if load["arrival"] not in ARRIVALS:
        _fail(path, "load.arrival", f"must be one of {ARRIVALS}, got {load['arrival']!r}")
    stages = load["stages"]
    if not isinstance(stages, list) or not stages:
        _fail(path, "load.stages", "must be a non-empty list")
    keys = {"concurrency": ("concurrency", "requests"), "recorded": ("requests",),
            "sessions": ("sessions",)}.get(load["arrival"], ("rate",))
    if load["arrival"] == "sessions" and len(stages) != 1:
        _fail(path, "load.stages", "closed sessions run one stage [{sessions: N}]: each concurrency point is its own "
                                   f"set of cold runs (one spec per point), got {len(stages)} stages")
    if load["arrival"] == "recorded" and len(stages) != 1:
        _fail(path, "load.stages", f"a recorded run is one stage [{{requests: n}}], got {len(stages)} stages")
    for k, stage in enumerate(stages):
        _mapping(path, f"load.stages[{k}]", stage)
        _require(path, stage, f"load.stages[{k}]", keys)
        if load["arrival"] in ("concurrency", "recorded", "sessions"):
            for key in keys:
                _number(path, f"load.stages[{k}].{key}", stage[key], integer=True)
            continue
        _number(path, f"load.stages[{k}].rate", stage["rate"], allow_inf=True)
        if ("duration" in stage) == ("requests" in stage):
            _fail(path, f"load.stages[{k}]", "needs exactly one of duration (s) and requests")
        if "duration" in stage:
            _number(path, f"load.stages[{k}].duration", stage["duration"])
        else:
            _number(path, f"load.stages[{k}].requests", stage["requests"], integer=True)
    chosen = load["measured_stages"]
    if chosen != "all":
        if not isinstance(chosen, list) or not chosen:
            _fail(path, "load.measured_stages", f"must be 'all' or a non-empty list of stage indices, got {chosen!r}")
        for s in chosen:
            if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < len(stages):
                _fail(path, "load.measured_stages",
                      f"stage {s!r} is not an index of load.stages (0..{len(stages) - 1})")
    summary = load.get("summary", "pooled")
    if isinstance(summary, Mapping):
        for metric, rule in summary.items():
            if metric != "default" and metric not in METRICS:
                _fail(path, f"load.summary.{metric}", f"unknown metric; known: default, {', '.join(METRICS)}")
            if rule not in STAGE_SUMMARIES:
                _fail(path, f"load.summary.{metric}", f"must be one of {', '.join(STAGE_SUMMARIES)}, got {rule!r}")
    elif summary not in SUMMARIES:
        _fail(path, "load.summary", f"must be one of {', '.join(SUMMARIES)} or a mapping metric -> rule, "
              f"got {summary!r}")
    if ("seeds" in load) != (load.get("summary") == "seed-mean"):
        _fail(path, "load.seeds", "runs over trace seeds need both load.seeds and load.summary: seed-mean")
    if "seeds" in load:
        seeds = load["seeds"]
        if not isinstance(seeds, list) or not seeds:
            _fail(path, "load.seeds", f"must be a non-empty list of trace seeds, got {seeds!r}")
        for k, seed in enumerate(seeds):
            _number(path, f"load.seeds[{k}]", seed, strict=False, integer=True)
        if len(set(seeds)) != len(seeds):
            _fail(path, "load.seeds", f"must be distinct (each seed is one independent run), got {seeds!r}")
    if "interval_s" in load:
        _number(path, "load.interval_s", load["interval_s"], strict=False)


def _check_generator_input(path, workload: Mapping, load: Mapping) -> None:
    """The generator's own checks of ``workload.params`` and of the load stages (:mod:`smetric.workload.harness`,
    its parameter registry and checks), run here so that input it would reject fails at load time, before any
    simulation. Generators with a module of their own (recorded runs, sessions) are checked there."""
    from ..workload import harness

    kind, params = workload["kind"], workload["params"]
    if kind == "multi-turn-sessions":  # every run's session set is built now (its token table read)
        from ..workload.multi_turn_sessions import session_workload

        try:
            for seed in load.get("seeds", [workload["seed"]]):
                session_workload(params, {"arrival": load["arrival"], "stages": load["stages"]}, int(seed))
        except ValueError as exc:
            named = re.match(rf"{kind} params: (?:unknown key |missing key )?'?(\w+)", str(exc))
            _fail(path, "load" if str(exc).startswith("load") else
                  "workload.params" + (f".{named.group(1)}" if named else ""), str(exc))
        return
    accepted = harness._PARAMS.get(kind)  # parameter -> default (None: required)
    if accepted is None:
        return
    for key, value in params.items():
        if key not in accepted:
            _fail(path, f"workload.params.{key}",
                  f"unknown parameter of generator {kind}; known: {', '.join(accepted)}")
        if isinstance(value, bool) and not isinstance(accepted[key], bool):  # YAML true would pass as 1
            _fail(path, f"workload.params.{key}", f"must be a number, got {value!r}")
    for key, default in accepted.items():
        if default is None and key not in params:
            _fail(path, f"workload.params.{key}", f"is missing (generator {kind} has no default for it)")
    try:
        checked = harness._params(kind, params)
    except ValueError as exc:  # a wrong type or range: the harness's message names the parameter
        bad = next((k for k in params if str(exc).startswith(f"{kind} params: {k} ")), None)
        _fail(path, "workload.params" + (f".{bad}" if bad else ""), str(exc))
    try:
        harness._stages(kind, {"arrival": load["arrival"], "stages": load["stages"]},
                        bool(checked.get("enable_multi_turn_chat", False)))
    except ValueError as exc:
        _fail(path, "load", str(exc))


def _check_routers(path, routers: Mapping) -> None:
    from ..policies import registry

    if not routers:
        _fail(path, "routers", "must name at least one router")
    for label, router in routers.items():
        key = f"routers.{label}"
        _mapping(path, key, router)
        _require(path, router, key, ("policy",))
        _known(path, router, key, ("policy", "params", "router_info", "cluster"))
        if not isinstance(router["policy"], str):
            _fail(path, f"{key}.policy", f"must be a policy name, got {router['policy']!r}")
        _mapping(path, f"{key}.params", router.get("params") or {})
        try:
            registry.get(router["policy"]).resolve(dict(router.get("params") or {}))
        except (ValueError, TypeError) as exc:
            _fail(path, f"{key}.params" if "unknown policy" not in str(exc) else f"{key}.policy", str(exc))
        if "router_info" in router:
            from ..cluster.router_info import RouterInfo

            info = _mapping(path, f"{key}.router_info", router["router_info"])
            try:
                RouterInfo(**info)
            except (TypeError, ValueError) as exc:
                _fail(path, f"{key}.router_info", str(exc))
        if "cluster" in router:
            from ..cluster.config import DRAM_POLICIES

            own = _mapping(path, f"{key}.cluster", router["cluster"])
            _known(path, own, f"{key}.cluster", ROUTER_CLUSTER_KEYS)
            if own.get("cpu_offload") not in (False, None):
                _number(path, f"{key}.cluster.cpu_offload", own["cpu_offload"], strict=False)
            if "dram_policy" in own and own["dram_policy"] not in DRAM_POLICIES:
                _fail(path, f"{key}.cluster.dram_policy", f"must be one of {DRAM_POLICIES}, got {own['dram_policy']!r}")
            if not isinstance(own.get("hybrid_kv_manager", True), bool):
                _fail(path, f"{key}.cluster.hybrid_kv_manager",
                      f"must be true or false, got {own['hybrid_kv_manager']!r}")


def _check_measured(path, measured: Mapping, routers: Mapping) -> None:
    if not measured:
        _fail(path, "measured", "must hold at least one router's numbers")
    for label, values in measured.items():
        if label not in routers:
            _fail(path, f"measured.{label}", f"is not a router of this spec (routers: {', '.join(routers)})")
        _mapping(path, f"measured.{label}", values)
        for metric, value in values.items():
            if metric not in METRICS:
                _fail(path, f"measured.{label}.{metric}", f"unknown metric; known: {', '.join(METRICS)}")
            _number(path, f"measured.{label}.{metric}", value, strict=False)
            if metric in ("hit_ratio", "success_ratio") and value > 1:
                _fail(path, f"measured.{label}.{metric}", f"a ratio must be <= 1, got {value!r}")


def check_spec(raw, path="<memory>") -> ExperimentSpec:
    """An :class:`ExperimentSpec` from a loaded YAML document, or :class:`SpecError`."""
    raw = _mapping(path, "<document>", raw)
    unknown = [k for k in raw if k not in TOP_LEVEL_KEYS]
    if unknown:
        _fail(path, str(unknown[0]), f"unknown top-level key; the schema has exactly {', '.join(TOP_LEVEL_KEYS)}")
    _require(path, raw, "<document>", TOP_LEVEL_KEYS)
    if not isinstance(raw["name"], str) or not raw["name"].strip():
        _fail(path, "name", f"must be a non-empty string, got {raw['name']!r}")
    for key in TOP_LEVEL_KEYS[1:]:
        _mapping(path, key, raw[key])
    _require(path, raw["source"], "source", ("repo", "path", "commit", "url", "note"))
    harness = raw["source"].get("harness", "inference-perf")
    if harness not in HARNESSES:
        _fail(path, "source.harness", f"must be one of {', '.join(HARNESSES)}, got {harness!r}")
    if "client_output_mean" in raw["source"]:
        if harness != "blis":
            _fail(path, "source.client_output_mean", f"only the blis harness divides by a client-counted output "
                  f"mean; this spec's harness is {harness!r}")
        _number(path, "source.client_output_mean", raw["source"]["client_output_mean"], minimum=1.0)
    _check_cluster(path, raw["cluster"])
    _check_workload(path, raw["workload"])
    _check_load(path, raw["load"])
    if (raw["workload"]["kind"] == "multi-turn-sessions") != (raw["load"]["arrival"] == "sessions"):
        _fail(path, "load.arrival", "'sessions' goes with workload.kind multi-turn-sessions, and only with it")
    if (raw["workload"]["kind"] == "recorded-requests") != (raw["load"]["arrival"] == "recorded"):
        _fail(path, "load.arrival", "'recorded' goes with workload.kind recorded-requests, and only with it")
    _check_generator_input(path, raw["workload"], raw["load"])
    _check_routers(path, raw["routers"])
    _check_measured(path, raw["measured"], raw["routers"])
    if "baseline" in raw["source"] and raw["source"]["baseline"] not in raw["routers"]:
        _fail(path, "source.baseline", f"{raw['source']['baseline']!r} is not a router of this spec")
    return ExperimentSpec(path=str(path), **{k: raw[k] for k in TOP_LEVEL_KEYS})


def read_yaml(path, what: str = "spec"):
    """The loaded YAML document of ``path``, or :class:`SpecError` in one line (no such ``what`` file, not YAML)."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: no such {what} file")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: <document>: not valid YAML ({' '.join(str(exc).split())})") from None


def load_spec(path) -> ExperimentSpec:
    """Read and check one YAML spec file."""
    return check_spec(read_yaml(path), path)


def spec_paths(data_dir=None) -> list[Path]:
    """Every spec file of ``<data>/validation`` (sorted)."""
    from ..context import run_context

    folder = Path(data_dir) if data_dir is not None else run_context().data_dir / "validation"
    return sorted(folder.glob("*.yaml"))


def load_specs(paths) -> list[ExperimentSpec]:
    """Load and check every spec before anything runs; names must be unique."""
    specs = [load_spec(p) for p in paths]
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise SpecError(f"{spec.path}: name: {spec.name!r} is already used by {seen[spec.name]}")
        seen[spec.name] = spec.path
    return specs
