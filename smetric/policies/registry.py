"""The policy registry: names, parameters and defaults, sources; building the numeric vectors the engine needs.

Adding a policy = one module with an ``@njit choose(...)`` and its :class:`PolicySpec` (see
:mod:`smetric.policies.base` and :mod:`smetric.policies.spec`), one ``register(...)`` line below,
and one branch in :mod:`smetric.policies.dispatch`.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from . import (
    affinity,
    aibrix,
    bailian,
    chwbl,
    dynamo,
    llm_router_prefix,
    llmd,
    lmetric,
    load_only,
    mooncake,
    preble,
    sglang,
    smetric_policy,
    vllm_router,
)
from .spec import PolicySpec

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is built (start-up of the simulate path)
    import pandas as pd

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
        close = difflib.get_close_matches(key, list(_REGISTRY), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"unknown policy {name!r}{hint}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[key]


def available() -> list[PolicySpec]:
    """Every registered policy, in id order."""
    return sorted(_REGISTRY.values(), key=lambda s: s.pid)


def describe(names: list[str] | None = None) -> pd.DataFrame:
    """One row per (policy, parameter): default, allowed values, summary, source and signals."""
    import pandas as pd

    specs = [get(n) for n in names] if names else available()
    return pd.DataFrame([row for spec in specs for row in spec.describe()])


# ---- the registered policies (one line each)
register(load_only.ROUND_ROBIN)
register(load_only.LEAST_LOAD)
register(load_only.POWER_OF_TWO)
register(smetric_policy.SPEC)
register(lmetric.SPEC)
register(bailian.SPEC)
register(dynamo.SPEC)
register(sglang.SPEC)
register(llmd.SPEC)
register(vllm_router.PREFIX)
register(vllm_router.SESSION)
register(aibrix.SPEC)
register(preble.SPEC)
register(mooncake.SPEC)
register(affinity.SESSION_STICKY)
register(affinity.CACHE_AFFINITY)
register(load_only.RANDOM)
register(chwbl.SPEC)
register(llm_router_prefix.SPEC)
