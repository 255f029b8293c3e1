"""One module per figure, named like its notebook (``fig05_load_metric`` -> ``notebooks/fig05_load_metric.ipynb``),
and the registry that finds them.

Each declares ``Params`` (full-run defaults, a ``quick()`` preset), ``compute``, ``plot`` and ``claims``;
see :mod:`smetric.experiments.figure` for the contract and ``README.md`` for how to add a figure.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["figure_modules", "figure_module", "figure_name", "figure_id", "csv_frames"]


def figure_modules() -> dict[str, ModuleType]:
    """Every figure module, by name (``fig00_perf_model`` ...), in figure order."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("fig"))
    return {name: importlib.import_module(f"{__name__}.{name}") for name in names}


def figure_module(name: str) -> ModuleType:
    """The figure module whose name starts with ``name`` (``fig05`` or ``fig05_load_metric``)."""
    matches = [m for n, m in figure_modules().items() if n.startswith(name)]
    if len(matches) != 1:
        raise ValueError(f"{name!r} matches {len(matches)} figures; known: {sorted(figure_modules())}")
    return matches[0]


def figure_name(module: ModuleType) -> str:
    """``fig05_load_metric``: the module's (and its notebook's, and its files') name."""
    return module.__name__.rsplit(".", 1)[-1]


def figure_id(module: ModuleType) -> str:
    """``fig05``: the id its claims are recorded under."""
    return figure_name(module).split("_", 1)[0]


def csv_frames(module: ModuleType, df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every CSV the figure writes: ``<name>.csv`` = ``df`` plus the module's ``tables(df)``."""
    out = {figure_name(module): df}
    if hasattr(module, "tables"):
        out.update(module.tables(df))
    return out
