"""Routing policies: SMETRIC and the production/research routers it is compared against."""

from .registry import PolicySpec, available, get

__all__ = ["PolicySpec", "available", "get"]
