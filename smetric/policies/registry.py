"""The policy registry: names, parameters and defaults, sources; building the numeric vectors the engine needs.

Adding a policy = one module with an ``@njit choose(...)`` (see :mod:`smetric.policies.base`),
one ``register(PolicySpec(...))`` line below, and one branch in :mod:`smetric.policies.dispatch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .base import PolicyContext


@dataclass(frozen=True)
class PolicySpec:
    """A routing policy as the registry knows it.

    ``params`` maps each parameter name to its default, in the order of the numeric vector;
    a string-valued parameter lists its allowed values in ``choices`` and is encoded as the
    value's index. ``constants(ctx)`` returns cluster constants appended after the named
    parameters; ``state_size(ctx)`` the length of the policy's float64 state vector.
    """

    name: str
    pid: int
    summary: str
    source: str
    signals: str
    params: dict = field(default_factory=dict)
    choices: dict = field(default_factory=dict)
    constants: Callable[[PolicyContext], list] = lambda ctx: []
    state_size: Callable[[PolicyContext], int] = lambda ctx: 0

    def resolve(self, overrides: dict | None = None) -> dict:
        """Defaults updated with ``overrides``; unknown names and bad values raise ``ValueError``."""
        values = dict(self.params)
        for key, val in (overrides or {}).items():
            key = key.replace("-", "_")
            if key not in values:
                raise ValueError(f"policy {self.name!r} has no parameter {key!r}; it has {sorted(values)}")
            if key in self.choices:
                if str(val) not in self.choices[key]:
                    raise ValueError(f"{self.name}.{key} must be one of {self.choices[key]}, got {val!r}")
                values[key] = str(val)
            else:
                try:
                    values[key] = float(val)
                except (TypeError, ValueError):
                    raise ValueError(f"{self.name}.{key} must be a number, got {val!r}") from None
        return values

    def build(self, ctx: PolicyContext, overrides: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``(params, state)`` vectors for one run."""
        values = self.resolve(overrides)
        vec = [float(self.choices[k].index(v)) if k in self.choices else float(v) for k, v in values.items()]
        vec += [float(c) for c in self.constants(ctx)]
        return np.asarray(vec, dtype=np.float64), np.zeros(int(self.state_size(ctx)), dtype=np.float64)


_REGISTRY: dict[str, PolicySpec] = {}


def register(spec: PolicySpec) -> PolicySpec:
    """Add a policy; names and ids must be unique."""
    if spec.name in _REGISTRY or any(s.pid == spec.pid for s in _REGISTRY.values()):
        raise ValueError(f"policy {spec.name!r} (id {spec.pid}) is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> PolicySpec:
    """The spec of a policy by name (``_`` is accepted for ``-``)."""
    key = name.strip().lower().replace("_", "-")
    if key not in _REGISTRY:
        raise ValueError(f"unknown policy {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[key]


def available() -> list[PolicySpec]:
    """Every registered policy, in id order."""
    return sorted(_REGISTRY.values(), key=lambda s: s.pid)


# ---- the registered policies (one line each)
register(PolicySpec(
    "round-robin", 0, "cycle through instances, ignoring state", "classic load-only baseline",
    "none", state_size=lambda ctx: 1))
register(PolicySpec(
    "least-load", 1, "argmin of a load signal (ties: lowest index)", "classic load-only baseline",
    "in-flight count, queued prefill tokens or running batch size (exact engine state)",
    params={"signal": "in_flight"}, choices={"signal": ("in_flight", "queued_tokens", "batch_size")}))
