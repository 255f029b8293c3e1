"""smetric.experiments"""

from .sweep import PointFailure, SweepError, SweepWarning, grid_points, local_cluster, sweep, sweep_environment

__all__ = ["PointFailure", "SweepError", "SweepWarning", "grid_points", "local_cluster", "sweep", "sweep_environment"]
