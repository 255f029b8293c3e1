"""The run context: where the repository, its data and the figures are, and how a run is sized.

Resolved in one place, here, and read by everything that needs a path or a run setting (the
trace catalog, the performance-model data, the figure layer, ``smetric reproduce``, sweeps).
Each setting is, first match wins: an explicit argument of :func:`run_context`, an environment
variable, a default.

=============  ==========================  =====================================================
setting        environment variable        default
=============  ==========================  =====================================================
root           ``SMETRIC_ROOT``            the checkout holding this package (``smetric/..``)
data_dir       ``SMETRIC_DATA``            ``<root>/data``
quick          ``SMETRIC_QUICK=1``         off (a notebook's ``quick`` parameter also turns it on)
figures_dir    ``SMETRIC_FIGURES``         ``<root>/figures``, or ``<root>/build/figures-quick`` when quick
jobs           ``SMETRIC_JOBS``            1 when quick, else one sweep worker per core
scheduler      ``SMETRIC_DASK_SCHEDULER``  none (sweeps start a local cluster)
=============  ==========================  =====================================================

Quick mode shrinks every figure to its ``quick`` preset (same code paths) and never writes over
the committed full-run ``figures/``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunContext", "run_context", "ENV"]

#: setting -> the environment variable that sets it
ENV = {"root": "SMETRIC_ROOT", "data_dir": "SMETRIC_DATA", "quick": "SMETRIC_QUICK",
       "figures_dir": "SMETRIC_FIGURES", "jobs": "SMETRIC_JOBS", "scheduler": "SMETRIC_DASK_SCHEDULER"}


@dataclass(frozen=True)
class RunContext:
    """Paths and run settings of one run (see the module docstring for how each is resolved)."""

    root: Path
    data_dir: Path
    figures_dir: Path
    quick: bool
    jobs: int | None
    scheduler: str | None

    def __post_init__(self) -> None:
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1):
            raise ValueError(f"jobs must be a positive integer or None, got {self.jobs!r}")
        if self.jobs is not None and self.scheduler:
            raise ValueError("give only one of jobs and scheduler: jobs sizes a local cluster")

    @property
    def notebooks_dir(self) -> Path:
        """``<root>/notebooks``: the figure notebooks and their text twins."""
        return self.root / "notebooks"

    @property
    def build_dir(self) -> Path:
        """``<root>/build``: executed notebooks, quick-mode figures, runtimes (never committed)."""
        return self.root / "build"

    def figures(self) -> Path:
        """:attr:`figures_dir`, created if missing."""
        self.figures_dir.mkdir(parents=True, exist_ok=True)
        return self.figures_dir


def _env_jobs() -> int | None:
    raw = os.environ.get(ENV["jobs"], "")
    if raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{ENV['jobs']} must be a positive integer, got {raw!r}") from None


def run_context(*, root: str | Path | None = None, quick: bool | None = None, jobs: int | None = None,
                scheduler: str | None = None, figures_dir: str | Path | None = None) -> RunContext:
    """The run context from the arguments given, then the environment, then the defaults.

    ``quick=False`` still honours ``SMETRIC_QUICK=1`` (so ``make test`` runs notebooks whose
    ``quick`` parameter is ``False`` in quick mode); ``quick=True`` always turns it on.
    """
    root_path = Path(root or os.environ.get(ENV["root"]) or Path(__file__).resolve().parents[1]).resolve()
    data = Path(os.environ[ENV["data_dir"]]) if os.environ.get(ENV["data_dir"]) else root_path / "data"
    is_quick = bool(quick) or os.environ.get(ENV["quick"]) == "1"
    if figures_dir is not None:
        figures = Path(figures_dir)
    elif os.environ.get(ENV["figures_dir"]):
        figures = Path(os.environ[ENV["figures_dir"]])
    else:
        figures = root_path / ("build/figures-quick" if is_quick else "figures")
    if scheduler is None and jobs is None:
        scheduler = os.environ.get(ENV["scheduler"]) or None
    if jobs is None and scheduler is None:
        jobs = _env_jobs()
        if jobs is None and is_quick:
            jobs = 1
    return RunContext(root=root_path, data_dir=data, figures_dir=figures.resolve(), quick=is_quick, jobs=jobs,
                      scheduler=scheduler)
