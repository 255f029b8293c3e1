"""Routing policies: SMETRIC and the production/research routers it is compared against."""

from .registry import available, describe, get
from .spec import PolicySpec

__all__ = ["IdealBound", "PolicySpec", "available", "describe", "get", "ideal_bound"]


def __getattr__(name: str):
    """Lazy exports of the ideal bound (it imports the workload characterization, which routing does not need)."""
    if name in ("IdealBound", "ideal_bound"):
        from . import bounds

        return getattr(bounds, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
