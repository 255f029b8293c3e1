"""smetric.experiments"""

from .sweep import PointFailure, SweepError, SweepWarning, grid_points, sweep, sweep_environment

__all__ = ["PointFailure", "SweepError", "SweepWarning", "grid_points", "sweep", "sweep_environment"]
