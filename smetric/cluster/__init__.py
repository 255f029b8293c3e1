"""The cluster model: configuration, the numba engine, its pure-Python reference, and results.

``simulate(workload, cluster, policy)`` replays a workload on a :class:`ClusterConfig` and returns
a :class:`SimResult`. The engine's exact rules are in ``docs/engine.md``.
"""

from .config import SLO, ClusterConfig, GlobalStore, HardwareSpec
from .connector import KVConnector
from .result import SimResult
from .simulate import simulate

__all__ = ["SLO", "ClusterConfig", "GlobalStore", "HardwareSpec", "KVConnector", "SimResult", "simulate"]
