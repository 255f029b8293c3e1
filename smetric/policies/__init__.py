"""Routing policies: SMETRIC and the production/research routers it is compared against."""

from .bounds import IdealBound, ideal_bound
from .registry import available, describe, get
from .spec import PolicySpec

__all__ = ["IdealBound", "PolicySpec", "available", "describe", "get", "ideal_bound"]
