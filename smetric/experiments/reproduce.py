"""``smetric reproduce``: execute the figure notebooks with papermill and report what ran.

Each ``notebooks/figNN_*.ipynb`` runs in its own kernel into ``build/notebooks/``. ``--quick`` is
the notebooks' ``quick`` parameter (their figures then go to ``build/figures-quick``). Only a
**plain full run** (not quick, no ``-p`` overrides) updates the committed record: it writes its
figures into ``figures/`` and the executed notebook back over ``notebooks/``, with its volatile
metadata stripped (:func:`strip_volatile`), so that the committed notebooks carry the outputs of the
full run and a re-run changes them only where a result changed. A run with overrides writes its
figures into ``build/figures/`` instead, so the record and its figures never disagree, unless
``update_record=True`` (``--update-record``) says to refresh the record with it. A failing notebook
is reported with its cell and error; the others still run.

Before anything runs, every override's name is checked against the parameters the chosen notebooks
declare (:func:`check_parameters`) and a given dask scheduler is reached once (:func:`check_scheduler`).
Kernels talk to papermill over IPC sockets, not TCP (:func:`_kernel_manager_class`).

The sweeps of every notebook run on **one** dask cluster started for the whole run
(:func:`shared_cluster`), not on one cluster per sweep: start-up, worker imports and the workers'
workload caches are paid once instead of about forty times.
"""

from __future__ import annotations

import ast
import difflib
import os
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..context import ENV, run_context

__all__ = ["NotebookRun", "check_parameters", "check_scheduler", "discover", "parse_parameter", "record_runtimes",
           "reproduce", "repo_root", "shared_cluster", "strip_volatile"]


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
    keys = [o.lower() for o in only or []]
    missing = [k for k in keys if not any(b.stem.lower().startswith(k) for b in books)]
    if missing:
        raise ValueError(f"no notebook matches {missing}; available: {[b.stem for b in books]}")
    return [b for b in books if any(b.stem.lower().startswith(k) for k in keys)] if keys else books


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


def check_parameters(books: list[Path], params: Mapping[str, object]) -> None:
    """Raise ``ValueError`` if a name of ``params`` is declared by none of ``books`` (their ``parameters`` cells),
    naming the closest declared names and listing the declared ones."""
    import papermill as pm

    declared: dict[str, None] = {}
    for book in books:
        declared.update(dict.fromkeys(pm.inspect_notebook(str(book))))
    unknown = [name for name in params if name not in declared]
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, list(declared), n=3, cutoff=0.5)
        hints.append(f"{name!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
    whose = books[0].stem if len(books) == 1 else f"the {len(books)} notebooks chosen"
    raise ValueError(f"unknown parameter {', '.join(hints)}: {whose} declare{'s' if len(books) == 1 else ''} "
                     f"{', '.join(declared)} (`papermill --help-notebook NOTEBOOK` explains each)")


def check_scheduler(address: str, timeout: float = 10.0) -> None:
    """Reach the dask scheduler at ``address`` once; ``ValueError`` naming ``--scheduler`` if it is malformed or
    does not answer within ``timeout`` seconds (before any notebook starts, not inside each one)."""
    from distributed import Client
    from distributed.comm.addressing import parse_address, parse_host_port

    where = f"dask scheduler --scheduler / {ENV['scheduler']} {address!r}"
    try:
        protocol, location = parse_address(address, strict=True)
        if protocol in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where} is not an address like tcp://host:8786 ({exc})") from None
    try:
        with Client(address, timeout=timeout):
            pass
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"{where}: no scheduler answered within {timeout:g} s ({type(exc).__name__}: {exc})") \
            from None


def _kernel_manager_class():
    """Papermill's kernel manager on IPC sockets: a local kernel needs no TCP ports, so ipykernel's
    ``Kernel is running over TCP without encryption`` warning (printed by every kernel) has no cause."""
    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

    return IPCKernelManager


def strip_volatile(nb) -> None:
    """Drop what changes from run to run without a result changing: papermill's and Jupyter's timing and
    path metadata, widget state and widget outputs (the sweeps' progress bars), and stderr streams (warnings
    quote machine paths; text progress bars). In place."""
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not _volatile_output(o)]


def _volatile_output(output) -> bool:
    """A stderr stream or a widget (a progress bar): timings, not results."""
    if output.output_type == "stream":
        return output.name == "stderr"
    return "application/vnd.jupyter.widget-view+json" in output.get("data", {})


def _run_one(path: Path, out_dir: Path, params: dict, quick: bool, write_back: bool) -> NotebookRun:
    """Execute one notebook with the parameters it declares; write it back over ``path`` if ``write_back``."""
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
                            progress_bar=False, kernel_name="python3", kernel_manager_class=_kernel_manager_class())
    except PapermillExecutionError as exc:
        return NotebookRun(path.stem, time.perf_counter() - start, False,
                           f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}")
    except Exception as exc:  # a kernel that died, a missing notebook dependency, ...
        return NotebookRun(path.stem, time.perf_counter() - start, False, f"{type(exc).__name__}: {exc}")
    if write_back:
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
              progress: bool = True, update_record: bool = False) -> pd.DataFrame:
    """Execute the figure notebooks as the module docstring says; return one row per notebook (figure, seconds, ok,
    error).

    ``quick`` passes ``quick=True`` to every notebook; ``params`` are papermill parameters, passed to each notebook
    that declares them; ``jobs`` notebooks run at once; ``update_record`` lets a full run with ``params`` refresh the
    record; ``write_back=False`` never writes notebooks back (``SMETRIC_FIGURES`` overrides every figures folder).
    The runtimes go to ``build/runtimes.csv`` (a record run also keeps them in ``figures/runtimes.csv``:
    :func:`record_runtimes`), the claim verdicts into ``claims.csv`` beside the figures; ``python -m
    smetric.docs_pages`` then rewrites the README's and ``docs/``'s generated blocks (``make figures`` runs both).
    """
    from tqdm.auto import tqdm

    start = time.perf_counter()
    params = dict(params or {})
    context = run_context(root=root, quick=quick)
    if update_record and context.quick:
        raise ValueError("--update-record refreshes figures/ and notebooks/ with a full run; quick runs never do")
    books = discover(context.root, only)
    if not books:
        raise ValueError(f"no figure notebooks under {context.notebooks_dir}")
    check_parameters(books, params)
    if context.scheduler:
        check_scheduler(context.scheduler)
    record = not context.quick and (update_record or not params)
    if not record and not context.quick and not os.environ.get(ENV["figures_dir"]):
        context = run_context(root=context.root, figures_dir=context.build_dir / "figures")
    out_dir = context.build_dir / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[NotebookRun] = []
    # the kernels resolve the same checkout and figures directory and share one sweep cluster; the caller's
    # environment is restored
    kernel_env = {ENV["root"]: str(context.root), ENV["figures_dir"]: str(context.figures_dir)}
    with _environ(kernel_env), shared_cluster(context.jobs, context.scheduler), \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
            tqdm(total=len(books), desc="notebooks", unit="nb", disable=not progress) as bar:
        futures = [pool.submit(_run_one, b, out_dir, params, context.quick, write_back and record) for b in books]
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
    if record:
        record_runtimes(table, time.perf_counter() - start if only is None else None, context.figures())
    return table


def record_runtimes(table: pd.DataFrame, total_s: float | None, figures: Path) -> Path:
    """Keep each notebook's seconds of this run (``table``: figure, seconds, ok) in ``figures/runtimes.csv``, one row
    per (machine, notebook), replacing this machine's earlier rows for those notebooks; ``total_s`` (a run of every
    notebook) is kept as the notebook ``(all)``. The README's run-time line and the performance page are generated
    from this file."""
    import datetime

    from ..machine import describe_machine

    path = Path(figures) / "runtimes.csv"
    machine, today = describe_machine(), datetime.date.today().isoformat()
    rows = [{"date": today, "machine": machine, "notebook": r.figure, "seconds": round(r.seconds, 1)}
            for r in table.itertuples() if r.ok]
    if total_s is not None:
        rows.append({"date": today, "machine": machine, "notebook": "(all)", "seconds": round(total_s, 1)})
    new = pd.DataFrame(rows, columns=["date", "machine", "notebook", "seconds"])
    if path.exists():
        old = pd.read_csv(path)
        keep = ~((old["machine"] == machine) & old["notebook"].isin(new["notebook"]))
        new = pd.concat([old[keep], new], ignore_index=True)
    new.to_csv(path, index=False)
    return path
