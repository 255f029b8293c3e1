"""What a serving engine adds around the GPU work, by engine family and version (``data/perf/serving_stack.json``).

A :class:`ServingStack` row says, for one engine family and version range:

* ``iteration_cpu_s`` -- the CPU time of one iteration (scheduling, input preparation, sampling); ``None`` keeps the
  GPU efficiency table's ``iteration_overhead_s``. In series with the GPU when ``cpu_overlaps_gpu`` is False; with
  async / overlap scheduling only ``overlap_gap_s`` remains between two iterations;
* ``first_token_lag_iterations`` -- with a batch queue (vLLM's async scheduling, SGLang's overlap scheduler) the
  next batch is already scheduled while one runs: a request that reaches a busy instance is not admitted at the
  end of the iteration running then, only at the one after (the engine rule, see ``docs/engine.md``);
* time outside the engine: ``client_to_router_s`` (client and gateway, before the router sees the request),
  ``api_server_s`` (parsing and tokenisation after routing, before the engine can schedule it -- a router reading
  engine queues does not see the request there yet), ``after_last_token_s`` (detokenisation, the response's way
  back; every token reaches the client that much later) and ``stream_per_token_s`` (per output token, added to
  the last token's arrival at the client);
* ``swa_prefix_reuse`` -- whether a hybrid sliding-window model's (gpt-oss, Gemma) HBM prefix cache serves
  cross-request hits. vLLM frees a sliding-window layer's blocks as the window moves and recycles them first, so
  the window's tail a hit needs is gone once the working set outgrows a fraction of the pool: no HBM hits then
  (a KV connector's host copy still serves them).

Every value carries its public source in the table or is labelled an assumption; ranges give ``-fast``/``-slow``
variants of a row. ``legacy`` reproduces the model without any of this, bit for bit. A spec's engine string
(``vllm-0.15.1``, ``sglang-0.4``) resolves to the row whose family and version range hold it (:func:`resolve`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from functools import lru_cache

__all__ = ["ServingStack", "ENGINE_ROWS", "resolve", "parse", "serving_stack_table", "FITTABLE"]

_VARIANTS = ("fast", "slow")


@lru_cache(maxsize=1)
def serving_stack_table() -> dict:
    """The ``serving_stack.json`` table: sources, fittable parameters, rows and aliases."""
    from ..hardware.efficiency import perf_data_dir

    with open(perf_data_dir() / "serving_stack.json", encoding="utf-8") as fh:
        return json.load(fh)


def _row_names() -> tuple[str, ...]:
    table = serving_stack_table()
    names = []
    for row, spec in table["rows"].items():
        names.append(row)
        ranged = any(any(v in p for v in _VARIANTS) for p in spec["params"].values())
        names.extend(f"{row}-{v}" for v in _VARIANTS if ranged)
    return tuple(names) + tuple(table["aliases"])


ENGINE_ROWS = _row_names()
#: parameters without a public source, fitted only on the training split (``smetric calibrate``)
FITTABLE = tuple(serving_stack_table()["fittable"])


@dataclass(frozen=True)
class ServingStack:
    """One engine row's serving-stack costs (seconds); the defaults are the ``legacy`` row.

    Attributes:
        name: row name (a label; the fields below decide the behaviour).
        iteration_cpu_s: CPU time of one iteration; ``None`` = the GPU efficiency table's ``iteration_overhead_s``.
        cpu_overlaps_gpu: the CPU work overlaps the GPU (async / overlap scheduling): only ``overlap_gap_s`` adds.
        overlap_gap_s: what remains between two iterations when the CPU work overlaps.
        first_token_lag_iterations: 0 or 1: a request reaching a busy instance skips the batch formed at the end
            of the iteration running then.
        client_to_router_s: client and gateway time before the router sees a request.
        api_server_s: API-server time after routing, before the engine can schedule the request.
        after_last_token_s: time from the engine's token to the client (detokenisation, response, client).
        stream_per_token_s: per output token, streaming cost added to the last token's arrival at the client.
        swa_prefix_reuse: a hybrid sliding-window model's HBM prefix cache serves cross-request hits (False: it
            serves none; models without sliding-window layers are unaffected).
    """

    name: str = "legacy"
    iteration_cpu_s: float | None = None
    cpu_overlaps_gpu: bool = False
    overlap_gap_s: float = 0.0
    first_token_lag_iterations: int = 0
    client_to_router_s: float = 0.0
    api_server_s: float = 0.0
    after_last_token_s: float = 0.0
    stream_per_token_s: float = 0.0
    swa_prefix_reuse: bool = True

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "name":
                continue
            if f.name in ("cpu_overlaps_gpu", "swa_prefix_reuse"):
                if not isinstance(value, bool):
                    raise ValueError(f"ServingStack.{f.name} must be a bool, got {value!r}")
            elif f.name == "first_token_lag_iterations":
                if value not in (0, 1) or isinstance(value, bool):
                    raise ValueError(f"ServingStack.first_token_lag_iterations must be 0 or 1, got {value!r}")
            elif not (value is None and f.name == "iteration_cpu_s"):
                if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                        and value >= 0):
                    raise ValueError(f"ServingStack.{f.name} must be a finite number >= 0 s, got {value!r}")

    @property
    def iteration_overhead_s(self) -> float | None:
        """What the engine adds to every iteration's GPU time (``None`` = the efficiency table's constant)."""
        if self.cpu_overlaps_gpu:
            return self.overlap_gap_s
        return self.iteration_cpu_s

    @property
    def is_legacy(self) -> bool:
        """True when nothing but the efficiency table's per-iteration constant applies (today's model)."""
        return (self.iteration_cpu_s is None and not self.cpu_overlaps_gpu and self.first_token_lag_iterations == 0
                and self.client_to_router_s == 0 and self.api_server_s == 0 and self.after_last_token_s == 0
                and self.stream_per_token_s == 0 and self.swa_prefix_reuse)

    @classmethod
    def preset(cls, name: str, **overrides) -> "ServingStack":
        """The named row (``ROW``, ``ROW-fast``, ``ROW-slow`` or an alias) with ``overrides`` applied."""
        table = serving_stack_table()
        key = str(name).strip().lower()
        row, variant = key, None
        if key in table["aliases"]:
            row = table["aliases"][key]["row"]
        elif key not in table["rows"]:
            base, _, tail = key.rpartition("-")
            if tail in _VARIANTS and base in table["rows"] and f"{base}-{tail}" in ENGINE_ROWS:
                row, variant = base, tail
            else:
                raise ValueError(f"unknown engine row {name!r}; known: {', '.join(ENGINE_ROWS)}")
        params = {}
        for p, entry in table["rows"][row]["params"].items():
            params[p] = entry.get(variant, entry["value"]) if variant else entry["value"]
        return cls(name=key, **{**params, **overrides})


def parse(text: str) -> ServingStack:
    """``ROW`` or ``ROW:FIELD=VALUE,...`` (the CLI syntax): a row with some fields replaced, e.g.
    ``legacy:first_token_lag_iterations=1`` (a mechanism switched on alone). ValueError naming the bad part."""
    row, _, tail = str(text).partition(":")
    overrides = {}
    names = {f.name: f for f in fields(ServingStack)}
    for item in filter(None, (x.strip() for x in tail.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in names or key == "name":
            raise ValueError(f"engine override {item!r}: expected FIELD=VALUE with FIELD one of "
                             f"{', '.join(n for n in names if n != 'name')}")
        if key in ("cpu_overlaps_gpu", "swa_prefix_reuse"):
            overrides[key] = value.strip().lower() in ("1", "true", "yes")
        elif key == "first_token_lag_iterations":
            overrides[key] = int(value)
        else:
            overrides[key] = None if value.strip().lower() == "none" else float(value)
    stack = ServingStack.preset(resolve(row), **overrides)
    return stack if not overrides else ServingStack(**{**stack.__dict__, "name": str(text)})


def resolve(engine: str) -> str:
    """The row of an engine string: a row name (``vllm-v1-async``, ``legacy``, an alias) or ``FAMILY-VERSION``
    (``vllm-0.15.1``) whose version lies in a row's ``[from, to)`` range. ValueError naming the known rows."""
    key = str(engine).strip().lower()
    table = serving_stack_table()
    if key in ENGINE_ROWS:
        return key
    family, _, version = key.partition("-")
    try:
        v = _version(version)
    except ValueError:
        v = None
    if v is not None:
        for row, spec in table["rows"].items():
            if spec["family"] != family or spec["versions"] is None:
                continue
            lo, hi = spec["versions"]
            if (lo is None or v >= _version(lo)) and (hi is None or v < _version(hi)):
                return row
    raise ValueError(f"unknown engine {engine!r}; known rows: {', '.join(ENGINE_ROWS)} "
                     "(or FAMILY-VERSION within a row's version range, e.g. vllm-0.15.1)")


def _version(text: str) -> tuple[int, ...]:
    parts = text.split(".")
    if not text or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in parts)
