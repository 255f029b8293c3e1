"""Workloads: the columnar Workload, trace loaders, sessions, the synthetic agent generator, characterization."""

from .core import Workload, WorkloadError, n_blocks_for

__all__ = ["Workload", "WorkloadError", "n_blocks_for"]
