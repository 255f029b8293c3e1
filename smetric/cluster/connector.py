"""KV connectors: how an instance reaches the global KV store (named presets from ``data/perf/kv_path.json``).

``ideal`` is the engine's original link model: each instance has its own link to the store
(:attr:`GlobalStore.bandwidth_gbs`, one load at a time, :attr:`GlobalStore.latency_s` per load),
loads overlap with compute or not as :attr:`ClusterConfig.kv_load_overlap` says, writes are free.

``lmcache`` presets model vLLM v1 + LMCache + a Mooncake store (the rules are in the engine
page of the documentation, ``docs/engine.md``): a scheduler-side lookup per admitted request; loads
(store and host-DRAM hits alike) that the instance's whole batch waits for (or, ``layerwise``,
that run alongside the iteration's compute); a store read that crosses the node's NIC pool (shared
equally by the node's concurrent transfers, each also capped by the client's throughput and by an
equal share of the store's aggregate bandwidth) and then the GPU's PCIe link; store writes that
cost the GPU->host copy inside the iteration and NIC time afterwards. Every number of a preset
carries its source in ``kv_path.json``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache

__all__ = ["KVConnector", "CONNECTORS", "connector_sources"]

_MODELS = ("ideal", "lmcache")
_INF_FIELDS = ("load_gbs", "store_gbs", "store_total_gbs")


@lru_cache(maxsize=1)
def _table() -> dict:
    from ..hardware.efficiency import perf_data_dir

    with open(perf_data_dir() / "kv_path.json", encoding="utf-8") as fh:
        return json.load(fh)


def connector_sources() -> dict:
    """The ``kv_path.json`` table: sources and, per preset, each parameter's value, source and note."""
    return _table()


def _preset_names() -> tuple[str, ...]:
    return ("ideal",) + tuple(_table()["presets"])


CONNECTORS = ("ideal", "lmcache-mooncake", "lmcache-mooncake-fast", "lmcache-mooncake-slow")


@dataclass(frozen=True)
class KVConnector:
    """A KV connector model and its parameters (seconds, GB/s; ``math.inf`` = unlimited).

    Attributes:
        name: preset name (a label; the parameters below decide the behaviour).
        model: ``ideal`` (the original link model; the other fields are unused) or ``lmcache``.
        layerwise: loads pipelined layer by layer with the iteration's compute (the iteration ends at
            the later of compute and load) instead of blocking it (the iteration starts after the load).
        lookup_s: scheduler-side store lookup per admitted request; it delays the instance's iteration.
        load_latency_s: fixed latency added to every store read.
        load_gbs, store_gbs: one client's read / write throughput cap per transfer.
        nic_gbs_per_gpu: NIC bandwidth of a node per GPU; a node's pool is ``nic_gbs_per_gpu *
            max(gpus_per_node, tp)`` shared equally by the concurrent transfers of its instances.
        gpus_per_node: GPUs per node (instances ``i`` with equal ``i // (gpus_per_node // tp)`` share a node).
        pcie_gbs: host<->GPU bandwidth per GPU (an instance has ``tp`` of them): the second hop of a
            store read (serialised with host-DRAM loads on the instance's PCIe link) and the GPU->host copy
            of what is stored.
        store_total_gbs: the store's aggregate bandwidth, shared equally by all concurrent transfers.
    """

    name: str = "ideal"
    model: str = "ideal"
    layerwise: bool = False
    lookup_s: float = 0.0
    load_latency_s: float = 0.0
    load_gbs: float = math.inf
    store_gbs: float = math.inf
    nic_gbs_per_gpu: float = math.inf
    gpus_per_node: int = 8
    pcie_gbs: float = math.inf
    store_total_gbs: float = math.inf

    def __post_init__(self) -> None:
        if self.model not in _MODELS:
            raise ValueError(f"KVConnector.model must be one of {_MODELS}, got {self.model!r}")
        if not isinstance(self.layerwise, bool):
            raise ValueError(f"KVConnector.layerwise must be a bool, got {self.layerwise!r}")
        for name in ("lookup_s", "load_latency_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and value >= 0):
                raise ValueError(f"KVConnector.{name} must be a finite number >= 0 s, got {value!r}")
        for name in ("load_gbs", "store_gbs", "nic_gbs_per_gpu", "pcie_gbs", "store_total_gbs"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
                raise ValueError(f"KVConnector.{name} must be a number > 0 GB/s (inf = unlimited), got {value!r}")
        if not (isinstance(self.gpus_per_node, int) and not isinstance(self.gpus_per_node, bool)
                and self.gpus_per_node > 0):
            raise ValueError(f"KVConnector.gpus_per_node must be a positive integer, got {self.gpus_per_node!r}")

    @property
    def ideal(self) -> bool:
        """True for the original link model."""
        return self.model == "ideal"

    @classmethod
    def preset(cls, name: str, **overrides) -> "KVConnector":
        """The named preset (``ideal`` or a preset of ``kv_path.json``) with ``overrides`` applied."""
        key = str(name).strip().lower().replace("_", "-")
        if key == "ideal":
            base = cls()
        elif key in _table()["presets"]:
            params = {k: v["value"] for k, v in _table()["presets"][key]["params"].items()}
            for k in _INF_FIELDS + ("nic_gbs_per_gpu", "pcie_gbs"):
                if params.get(k) is None:
                    params[k] = math.inf
            base = cls(name=key, model="lmcache", **params)
        else:
            raise ValueError(f"unknown KV connector {name!r}; known: {', '.join(_preset_names())}")
        return replace(base, **overrides) if overrides else base

    @classmethod
    def parse(cls, name: str, params: dict | None = None) -> "KVConnector":
        """``name`` with ``params`` (field -> value, values may be strings; the CLI syntax) overriding it."""
        known = {f.name for f in fields(cls)} - {"name", "model"}
        values = {}
        for key, value in (params or {}).items():
            if key not in known:
                raise ValueError(f"unknown KV-connector parameter {key!r}; known: {sorted(known)}")
            if key == "layerwise":
                text = str(value).strip().lower()
                if text not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(f"KV-connector parameter layerwise must be true or false, got {value!r}")
                values[key] = text in ("true", "1", "yes")
            elif key == "gpus_per_node":
                try:
                    values[key] = int(value)
                except ValueError:
                    raise ValueError(
                        f"KV-connector parameter gpus_per_node must be an integer, got {value!r}") from None
            else:
                try:
                    values[key] = float(value)
                except ValueError:
                    raise ValueError(f"KV-connector parameter {key} must be a number, got {value!r}") from None
        connector = cls.preset(name)
        if values and connector.ideal:
            raise ValueError("the ideal connector has no parameters (its link is the GlobalStore's)")
        return replace(connector, **values) if values else connector

    def describe(self) -> str:
        """One line for logs."""
        if self.ideal:
            return "ideal connector"
        d = asdict(self)
        shown = ", ".join(f"{k}={d[k]:g}" if isinstance(d[k], float) else f"{k}={d[k]}"
                          for k in ("layerwise", "lookup_s", "load_gbs", "store_gbs", "nic_gbs_per_gpu", "pcie_gbs"))
        return f"{self.name} connector ({shown})"
