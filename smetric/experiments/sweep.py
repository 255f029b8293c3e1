"""Parameter sweeps: evaluate a point function over a grid, serially or on a Dask cluster.

:func:`sweep` calls ``fn(**point, **shared)`` for every point of a grid and returns one tidy
DataFrame: the point's parameters as columns followed by ``fn``'s outputs, rows in grid order.
The same grid gives the same DataFrame, bit for bit, whatever runs it: the serial loop
(``jobs=1``), a ``LocalCluster`` with one single-threaded worker process per core, or an existing
Dask cluster reached by address. Determinism therefore rests on ``fn``: it must draw its
randomness from the point's own parameters (e.g. a ``seed`` column), never from global state.

Where the work runs (first match wins):

1. ``client=`` — an existing :class:`distributed.Client`;
2. ``scheduler="tcp://host:port"`` — connect to that scheduler for this sweep;
3. ``jobs=`` — ``1`` runs serially in this process without Dask, ``n > 1`` starts a local
   cluster of ``n`` worker processes (one thread each) for this sweep;
4. the run context (:mod:`smetric.context`): ``SMETRIC_DASK_SCHEDULER`` (an address), then
   ``SMETRIC_JOBS`` (a count), then 1 in quick mode;
5. one worker per core (``os.cpu_count()``).

A local cluster never gets more workers than there are points; with one worker the sweep runs
serially. Worker processes share numba's on-disk cache (``cache=True``), so a kernel compiled
once is loaded, not recompiled, by the others. Large inputs (workloads, profiles) go in ``shared``:
scattered to the workers once per sweep, not re-sent with every point. The progress bar
(``tqdm.auto``: a widget in JupyterLab, text on stderr in a terminal) is off in quick mode
(``SMETRIC_QUICK=1``: CI, nbval), where it would only clutter the recorded outputs.

A point whose ``fn`` raises does not stop the sweep (``on_error="collect"``): it has no rows, and its
:class:`PointFailure` (parameters, traceback) is listed in ``df.attrs["failures"]`` and announced by a
:class:`SweepWarning`; ``on_error="raise"`` stops at the first failure with a :class:`SweepError`.
"""

from __future__ import annotations

import itertools
import os
import sys
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..context import ENV, run_context
from ..numba_cache import refresh_module

__all__ = [
    "PointFailure",
    "SweepError",
    "SweepWarning",
    "grid_points",
    "local_cluster",
    "sweep",
    "sweep_environment",
]

SCHEDULER_ENV = ENV["scheduler"]
JOBS_ENV = ENV["jobs"]
_ON_ERROR = ("collect", "raise")


@dataclass(frozen=True)
class PointFailure:
    """A grid point that produced no rows: its position in the grid, parameters, error and traceback.

    The error is what ``fn`` raised, a malformed output, or the Dask error of a point whose
    worker process died (``KilledWorker``, after Dask's retries).
    """

    index: int
    params: dict
    error: str
    traceback: str

    def __str__(self) -> str:
        return f"point {self.index} {self.params!r} failed with {self.error}\n{self.traceback}"


class SweepError(RuntimeError):
    """Raised by ``sweep(..., on_error="raise")`` at the first failed point; ``.failure`` holds it."""

    def __init__(self, failure: PointFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure


class SweepWarning(UserWarning):
    """Some points of a sweep failed; the result lists them in ``df.attrs["failures"]``."""


@dataclass(frozen=True)
class _Outcome:
    """What one point produced: its rows (parameters + ``fn``'s outputs), or its failure."""

    value: Any = None
    failure: PointFailure | None = None


def grid_points(grid: Mapping[str, Sequence] | Sequence[Mapping[str, Any]]) -> list[dict]:
    """The points of ``grid``: a list of dicts as given, or the cartesian product of a dict of lists.

    The product varies the last key fastest, so ``{"policy": [a, b], "load": [1, 2]}`` gives
    ``(a, 1), (a, 2), (b, 1), (b, 2)``. Every point must have the same parameter names.
    """
    if isinstance(grid, Mapping):
        for name, values in grid.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
                raise TypeError(f"grid[{name!r}] must be a list of values, got {type(values).__name__} {values!r}")
        points = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        points = []
        for i, point in enumerate(grid):
            if not isinstance(point, Mapping):
                raise TypeError(f"grid point {i} must be a dict of parameters, got {type(point).__name__}")
            points.append(dict(point))
    else:
        raise TypeError(f"grid must be a dict of lists or a list of dicts, got {type(grid).__name__}")
    names = list(points[0]) if points else []
    bad = [k for k in names if not isinstance(k, str)]
    if bad:
        raise TypeError(f"grid point 0 has non-string parameter names {bad}")
    for i, point in enumerate(points):
        if list(point) != names:
            raise ValueError(f"grid point {i} has parameters {list(point)}, point 0 has {names}")
    return points


def _run_point(fn: Callable, index: int, params: dict, shared: dict) -> _Outcome:
    """Call ``fn`` on one point and shape its rows; any exception becomes a :class:`PointFailure`.

    Runs on the worker, so a point whose output is malformed fails like one that raised.
    """
    try:
        return _Outcome(value=_point_frame(params, fn(**params, **shared)))
    except Exception as exc:  # noqa: BLE001 -- every failure is reported with its point
        return _Outcome(failure=PointFailure(index, params, _describe(exc), traceback.format_exc()))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _point_frame(params: dict, value: Any) -> pd.DataFrame:
    """One point's rows: its parameters broadcast in front of ``fn``'s dict (one row) or DataFrame."""
    if isinstance(value, Mapping):
        out = pd.DataFrame([dict(value)])
    elif isinstance(value, pd.DataFrame):
        out = value.reset_index(drop=True)
    else:
        raise TypeError(f"fn must return a dict or a pandas DataFrame, got {type(value).__name__}")
    clash = [c for c in out.columns if c in params]
    if clash:
        raise ValueError(f"fn's outputs {clash} repeat grid parameters of the same name")
    for pos, (name, val) in enumerate(params.items()):
        out.insert(pos, name, [val] * len(out))
    return out


def _assemble(points: list[dict], outcomes: list[_Outcome]) -> pd.DataFrame:
    """The tidy result in grid order, with failures in ``attrs["failures"]``."""
    frames = [o.value for o in outcomes if o.failure is None]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(points[0]) if points else [])
    failures = tuple(o.failure for o in outcomes if o.failure is not None)
    df.attrs["failures"] = failures
    if failures:
        warnings.warn(
            SweepWarning(
                f"{len(failures)} of {len(points)} sweep points failed (see df.attrs['failures']); "
                f"first: point {failures[0].index} {failures[0].params!r}: {failures[0].error}"
            ),
            stacklevel=3,
        )
    return df


def _resolve_target(jobs: int | None, client: Any, scheduler: str | None) -> tuple[str, Any]:
    """Where to run: ``("client", Client)``, ``("scheduler", address)`` or ``("local", n_workers)``."""
    if client is not None:
        if jobs is not None or scheduler is not None:
            raise ValueError("pass only one of client=, scheduler= and jobs=")
        return "client", client
    if scheduler is not None:
        if jobs is not None:
            raise ValueError("pass only one of scheduler= and jobs=: jobs sizes a local cluster")
        return "scheduler", scheduler
    if jobs is None:  # the run context: SMETRIC_DASK_SCHEDULER, SMETRIC_JOBS, 1 in quick mode
        context = run_context()
        if context.scheduler:
            return "scheduler", context.scheduler
        jobs = context.jobs
    if jobs is None:
        jobs = os.cpu_count() or 1
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    return "local", int(jobs)


def sweep(
    grid: Mapping[str, Sequence] | Sequence[Mapping[str, Any]],
    fn: Callable[..., Mapping[str, Any] | pd.DataFrame],
    *,
    shared: Mapping[str, Any] | None = None,
    jobs: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
    progress: bool | None = None,
    on_error: str = "collect",
) -> pd.DataFrame:
    """Evaluate ``fn(**point, **shared)`` over ``grid`` and return one tidy DataFrame in grid order.

    Args:
        grid: a dict of lists (cartesian product, last key fastest) or a list of parameter dicts.
        fn: returns a dict (one row) or a DataFrame (several rows) per point. For worker
            processes it should be a module-level function (closures work through cloudpickle).
        shared: large objects passed to every call as keyword arguments; scattered once.
        jobs: ``1`` = serial, no Dask; ``n`` = local cluster of ``n`` worker processes;
            ``None`` = ``SMETRIC_DASK_SCHEDULER`` / ``SMETRIC_JOBS`` / one worker per core.
        client: an existing ``distributed.Client`` to run on.
        scheduler: address of an existing Dask scheduler, e.g. ``"tcp://10.0.0.5:8786"``.
        progress: show a progress bar of points done / total with an ETA; ``None`` (default): on
            unless the run context is in quick mode.
        on_error: ``"collect"`` failed points into ``df.attrs["failures"]`` (and warn), or
            ``"raise"`` a :class:`SweepError` at the first failure.

    Returns:
        The grid parameters as the first columns, then ``fn``'s outputs; failed points have no rows.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if on_error not in _ON_ERROR:
        raise ValueError(f"on_error must be one of {_ON_ERROR}, got {on_error!r}")
    points = grid_points(grid)
    shared = dict(shared or {})
    if points:
        clash = sorted(set(shared) & set(points[0]))
        if clash:
            raise ValueError(f"shared names {clash} are also grid parameters")
    kind, target = _resolve_target(jobs, client, scheduler)
    if progress is None:
        progress = not run_context().quick
    if not points or (kind == "local" and min(target, len(points)) <= 1):
        serial = ((i, _run_point(fn, i, params, shared)) for i, params in enumerate(points))
        return _assemble(points, _collect(serial, len(points), progress, on_error))
    return _assemble(points, _run_dask(points, fn, shared, kind, target, progress, on_error))


def _progress_bar(n: int, progress: bool):
    """A bar of ``n`` points: notebook-aware (``tqdm.auto``), plain text where a notebook lacks ipywidgets."""
    from tqdm import tqdm
    from tqdm.auto import tqdm as auto_tqdm

    if not progress:
        return tqdm(total=n, disable=True)
    try:
        return auto_tqdm(total=n, desc="sweep", unit="pt")
    except ImportError:  # tqdm.notebook without ipywidgets
        return tqdm(total=n, desc="sweep", unit="pt")


def _collect(results: Iterator[tuple[int, _Outcome]], n: int, progress: bool, on_error: str) -> list[_Outcome]:
    """The ``n`` outcomes in grid order from ``(index, outcome)`` pairs as they complete, under a progress bar;
    ``on_error="raise"`` raises :class:`SweepError` at the first failure (the rest are then not awaited)."""
    outcomes: list[_Outcome | None] = [None] * n
    with _progress_bar(n, progress) as bar:
        for i, outcome in results:
            if outcome.failure is not None and on_error == "raise":
                raise SweepError(outcome.failure)
            outcomes[i] = outcome
            bar.update()
    return outcomes  # type: ignore[return-value]


def local_cluster(n_workers: int):
    """A :class:`distributed.LocalCluster` as sweeps use it: ``n_workers`` single-threaded processes.

    Start one yourself to reuse across several sweeps (``sweep(..., client=Client(cluster))``)
    and pay the start-up (about a second) once.
    """
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",  # any free local port: never clashes with another cluster's 8787
        env={"NUMBA_NUM_THREADS": "1"},
    )


def _connect(kind: str, target: Any, stack: ExitStack) -> Any:
    """A client for the target; clients and clusters started here are closed by ``stack``."""
    from distributed import Client

    if kind == "client":
        return target
    if kind == "scheduler":
        return stack.enter_context(Client(target))
    return stack.enter_context(Client(stack.enter_context(local_cluster(target))))


def _run_dask(
    points: list[dict], fn: Callable, shared: dict, kind: str, target: Any, progress: bool, on_error: str
) -> list[_Outcome]:
    from distributed import as_completed

    if kind == "local":
        target = min(target, len(points))
    with ExitStack() as stack:
        client = _connect(kind, target, stack)
        names = list(shared)
        scattered = client.scatter([shared[k] for k in names], broadcast=True, hash=False) if names else []
        shared_futures = dict(zip(names, scattered))
        tag = uuid.uuid4().hex[:8]
        futures = {
            client.submit(_run_point, fn, i, params, shared_futures, key=f"sweep-{tag}-{i}"): i
            for i, params in enumerate(points)
        }

        def completed() -> Iterator[tuple[int, _Outcome]]:
            # not with_results=True: it lost results under load here (cf. dask/distributed#7331)
            for future in as_completed(futures):
                i = futures.pop(future)  # dropping the last reference frees the result on the worker
                if future.status != "error":
                    yield i, future.result()
                else:  # the task never returned, e.g. its worker died
                    tb = "".join(traceback.format_tb(future.traceback()))
                    yield i, _Outcome(failure=PointFailure(i, points[i], _describe(future.exception()), tb))

        try:
            return _collect(completed(), len(points), progress, on_error)
        finally:  # on an early exit, stop the points still pending; always free the shared data
            client.cancel(list(futures) + scattered)


def sweep_environment(jobs: int | None = None, scheduler: str | None = None) -> dict[str, str]:
    """The environment variables that make later sweeps (e.g. in papermill kernels) use ``jobs`` / ``scheduler``.

    For ``smetric reproduce``'s sweep options: put these in ``os.environ`` before the notebooks
    start; their kernels inherit them and :func:`sweep` reads them. The option not chosen is set
    to ``""`` (unset), so an explicit choice overrides whatever the shell exported.
    """
    if jobs is not None:
        _resolve_target(jobs, None, scheduler)  # raises unless jobs is a positive integer and scheduler unset
        return {JOBS_ENV: str(int(jobs)), SCHEDULER_ENV: ""}
    if scheduler is not None:
        return {JOBS_ENV: "", SCHEDULER_ENV: str(scheduler)}
    return {}


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
