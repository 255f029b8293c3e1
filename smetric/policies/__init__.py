"""Routing policies: SMETRIC and the production/research routers it is compared against."""

from .registry import available, describe, get
from .spec import PolicySpec

__all__ = ["PolicySpec", "available", "describe", "get"]
