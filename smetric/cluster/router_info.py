"""What the router knows, and when: the information model between the engine and the policy.

The policy's view (columns ``V_*`` of :mod:`smetric.policies.base`) is built from

* engine-state signals (queued prefill tokens/cost/attention, running and waiting counts, context
  tokens) as of the router's last refresh, every ``refresh_s``;
* KV utilisation (``V_KV_USED``) as of its own last refresh, every ``kv_refresh_s``;
* prefix hits (``V_HIT_*``) from KV events: a block is visible ``kv_event_delay_s`` after it entered a
  tier; an eviction is seen at once (an approximation: real KV-event streams delay removals too);
* router-local counters: ``V_IN_FLIGHT`` counts the requests this replica dispatched to the instance and
  has not yet seen leave it;

with ``router_replicas`` replicas, each holding its own counters and its own policy state (router-side
indexes such as llm-d's estimated prefix index or SGLang's radix tree live there). The exact rule both
engines implement is in ``docs/engine.md`` ("Router information"). ``RouterInfo()`` is the exact,
single-router view (every signal read at the arrival itself).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from ..numba_cache import refresh_module

__all__ = ["RouterInfo", "ASSIGNMENTS", "replica_of", "refresh_period", "AS_DEPLOYED_PATH"]

ASSIGNMENTS = ("uniform", "session")
AS_DEPLOYED_PATH = Path(__file__).resolve().parents[2] / "data" / "routers" / "as_deployed.json"


def _nonneg(name: str, value) -> None:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (ok and math.isfinite(value) and value >= 0):
        raise ValueError(f"RouterInfo.{name} must be a finite number >= 0 (seconds), got {value!r}")


@dataclass(frozen=True)
class RouterInfo:
    """The router's information model (all zero and one replica = exact, today's view).

    Attributes:
        refresh_s: interval of the engine-state snapshot (queue, counts, context tokens); 0 = exact.
        kv_refresh_s: interval of the KV-utilisation snapshot (``V_KV_USED``); 0 = exact.
        kv_event_delay_s: delay before a block that entered a tier is visible to the prefix hits; 0 = at once.
        router_replicas: router replicas K >= 1; each sees only its own dispatches and has its own policy state.
        replica_assignment: ``uniform`` (each request to a replica drawn from a dedicated seeded stream)
            or ``session`` (a fixed hash of the session, as sticky gateways do).
    """

    refresh_s: float = 0.0
    kv_refresh_s: float = 0.0
    kv_event_delay_s: float = 0.0
    router_replicas: int = 1
    replica_assignment: str = "uniform"

    def __post_init__(self) -> None:
        for name in ("refresh_s", "kv_refresh_s", "kv_event_delay_s"):
            _nonneg(name, getattr(self, name))
        k = self.router_replicas
        if not (isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1):
            raise ValueError(f"RouterInfo.router_replicas must be an integer >= 1, got {k!r}")
        if self.replica_assignment not in ASSIGNMENTS:
            raise ValueError(f"RouterInfo.replica_assignment must be one of {ASSIGNMENTS}, "
                             f"got {self.replica_assignment!r}")

    @property
    def exact(self) -> bool:
        """True for the exact, single-router view."""
        return self == RouterInfo()

    @classmethod
    def as_deployed(cls, policy: str, path: Path | str | None = None) -> "RouterInfo":
        """The sourced "as deployed" information model of ``policy`` (``data/routers/as_deployed.json``)."""
        file = Path(path) if path is not None else AS_DEPLOYED_PATH
        table = json.loads(file.read_text())["policies"]
        if policy not in table:
            raise ValueError(f"{file}: no 'as deployed' entry for policy {policy!r}; known: {sorted(table)}")
        entry = table[policy]
        try:
            return cls(**{k: entry[k] for k in ("refresh_s", "kv_refresh_s", "kv_event_delay_s",
                                                "router_replicas", "replica_assignment")})
        except KeyError as e:
            raise ValueError(f"{file}: policies.{policy} lacks key {e.args[0]!r}") from None


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """A fixed 64-bit integer hash (splitmix64's finaliser), the same on every platform."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def replica_of(info: RouterInfo, session: np.ndarray, seed: int) -> np.ndarray:
    """Router replica (int64, 0..K-1) of each request: ``session`` = the dense session index per row."""
    n = len(session)
    k = info.router_replicas
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    if info.replica_assignment == "session":
        with np.errstate(over="ignore"):
            return (_splitmix64(np.asarray(session)) % np.uint64(k)).astype(np.int64)
    # a dedicated stream: the policies' draws (``rand``) stay those of the exact model
    return np.random.default_rng([seed, 0x5E1EC7]).integers(0, k, n).astype(np.int64)


@njit(cache=True)
def refresh_period(t, period):
    """(start, next start) of the refresh period ``[k * period, (k + 1) * period)`` holding ``t``."""
    k = math.floor(t / period)
    if k * period > t:
        k -= 1
    elif (k + 1) * period <= t:
        k += 1
    return k * period, (k + 1) * period


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
