"""``smetric reproduce``: execute the figure notebooks with papermill and report what ran.

Each ``notebooks/figNN_*.ipynb`` runs in its own kernel into ``build/notebooks/``. ``--quick`` is
the notebooks' ``quick`` parameter (their figures then go to ``build/figures-quick``). A full run
(not quick, no ``-p`` overrides) also writes the executed notebook back over ``notebooks/``, with
its volatile metadata stripped (:func:`strip_volatile`), so that the committed notebooks carry the
outputs of the full run and a re-run changes them only where a result changed. A failing notebook
is reported with its cell and error; the others still run.

The sweeps of every notebook run on **one** dask cluster started for the whole run
(:func:`shared_cluster`), not on one cluster per sweep: start-up, worker imports and the workers'
workload caches are paid once instead of about forty times.
"""

from __future__ import annotations

import ast
import os
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..context import ENV, run_context

__all__ = ["NotebookRun", "discover", "parse_parameter", "reproduce", "repo_root", "shared_cluster", "strip_volatile"]


def repo_root() -> Path:
    """The checkout holding ``notebooks/``: the run context's root (``$SMETRIC_ROOT`` or above the package)."""
    return run_context().root


@dataclass(frozen=True)
class NotebookRun:
    """Outcome of one notebook execution."""

    figure: str
    seconds: float
    ok: bool
    error: str = ""


def discover(root: Path, only: list[str] | None = None) -> list[Path]:
    """Figure notebooks under ``root/notebooks``, optionally only those whose name starts with one of ``only``."""
    books = sorted((root / "notebooks").glob("fig*.ipynb"))
    if only:
        keys = [o.lower() for o in only]
        books = [b for b in books if any(b.stem.lower().startswith(k) for k in keys)]
        missing = [k for k in keys if not any(b.stem.lower().startswith(k) for b in books)]
        if missing:
            raise ValueError(f"no notebook matches {missing}; available: "
                             f"{[b.stem for b in sorted((root / 'notebooks').glob('fig*.ipynb'))]}")
    return books


def parse_parameter(text: str) -> tuple[str, object]:
    """``name=value`` → (name, value) with value read as a Python literal when it is one (else a string)."""
    if "=" not in text:
        raise ValueError(f"parameter {text!r} must look like name=value")
    name, raw = text.split("=", 1)
    name = name.strip()
    if not name.isidentifier():
        raise ValueError(f"parameter name {name!r} is not a valid identifier")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return name, value


def strip_volatile(nb) -> None:
    """Drop what changes from run to run without a result changing: papermill's and Jupyter's timing and
    path metadata, widget state, and stderr streams (warnings quote machine paths). In place."""
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]


def _run_one(path: Path, out_dir: Path, params: dict, quick: bool, write_back: bool) -> NotebookRun:
    import nbformat
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    declared = pm.inspect_notebook(str(path))
    mine = {k: v for k, v in params.items() if k in declared}
    if quick:
        mine["quick"] = True
    out = out_dir / path.name
    start = time.perf_counter()
    try:
        pm.execute_notebook(str(path), str(out), parameters=mine, cwd=str(path.parent),
                            progress_bar=False, kernel_name="python3")
    except PapermillExecutionError as exc:
        return NotebookRun(path.stem, time.perf_counter() - start, False,
                           f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}")
    except Exception as exc:  # a kernel that died, a missing notebook dependency, ...
        return NotebookRun(path.stem, time.perf_counter() - start, False, f"{type(exc).__name__}: {exc}")
    if write_back and not quick and not mine:
        nb = nbformat.read(out, as_version=4)
        strip_volatile(nb)
        nbformat.write(nb, path)
    return NotebookRun(path.stem, time.perf_counter() - start, True)


@contextmanager
def _environ(updates: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` updated for the block (the kernels inherit it), then restored as it was."""
    saved = {k: os.environ.get(k) for k in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def shared_cluster(jobs: int | None, scheduler: str | None) -> Iterator[str | None]:
    """One local dask cluster of ``jobs`` workers (default one per core) for every sweep of the block: its
    address is put in ``SMETRIC_DASK_SCHEDULER`` for the kernels. Nothing is started when the sweeps run
    serially (``jobs == 1``) or on a given ``scheduler``; yields the address used (or ``None``)."""
    if scheduler or jobs == 1:
        yield scheduler
        return
    from .sweep import local_cluster

    with local_cluster(jobs or os.cpu_count() or 1) as cluster, \
            _environ({ENV["scheduler"]: cluster.scheduler_address, ENV["jobs"]: ""}):
        yield cluster.scheduler_address


def reproduce(only: list[str] | None = None, params: dict | None = None, quick: bool = False,
              jobs: int = 1, root: Path | None = None, write_back: bool = True,
              progress: bool = True) -> pd.DataFrame:
    """Execute the figure notebooks; return one row per notebook (figure, seconds, ok, error).

    The notebooks' sweeps share one dask cluster (:func:`shared_cluster`). ``quick`` passes ``quick=True`` to
    every notebook (small sizes, same code paths; figures to
    ``build/figures-quick`` unless ``SMETRIC_FIGURES`` says otherwise); ``params`` are papermill
    parameters, passed to each notebook that declares them; ``jobs`` notebooks run at once. The
    runtime table is also written to ``build/runtimes.csv``, and the figures' claim verdicts are
    joined into ``claims.csv`` beside the figures.
    """
    from tqdm.auto import tqdm

    context = run_context(root=root, quick=quick)
    books = discover(context.root, only)
    if not books:
        raise ValueError(f"no figure notebooks under {context.notebooks_dir}")
    out_dir = context.build_dir / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[NotebookRun] = []
    # the kernels resolve the same checkout and share one sweep cluster; the caller's environment is restored
    with _environ({ENV["root"]: str(context.root)}), shared_cluster(context.jobs, context.scheduler), \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
            tqdm(total=len(books), desc="notebooks", unit="nb", disable=not progress) as bar:
        futures = [pool.submit(_run_one, b, out_dir, params or {}, context.quick, write_back) for b in books]
        for fut in futures:
            run = fut.result()
            runs.append(run)
            bar.set_postfix_str(f"{run.figure} {'ok' if run.ok else 'FAILED'}")
            bar.update()
    if (context.data_dir / "paper_claims.csv").exists():
        from .claims import collect_claims, collect_row_claims

        collect_claims(context.figures())  # claims.csv: the paper's claims with every verdict recorded so far
        collect_row_claims(context.figures())  # claims_second_row.csv: the same rules on the real trace
    table = pd.DataFrame([r.__dict__ for r in runs])
    table.to_csv(context.build_dir / "runtimes.csv", index=False)
    return table
