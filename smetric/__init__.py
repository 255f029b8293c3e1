"""smetric: a reproduction of SMetric (arXiv 2607.08565), balanced session-centric LLM scheduling.

The package models a cluster of GPU inference instances with tiered KV caches
(a numba engine), replays real and synthetic agent workloads through it, and
compares the SMETRIC routing policy with the production routers it is measured against.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """Lazy exports: ``smetric.simulate`` (imports the cluster engine on first use)."""
    if name == "simulate":
        from .cluster import simulate

        return simulate
    raise AttributeError(f"module 'smetric' has no attribute {name!r}")
