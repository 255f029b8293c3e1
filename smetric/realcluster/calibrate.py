"""Fit the parameters that have no public source, on the training split only: ``smetric calibrate``.

**What may be fitted** is declared by the tables, never here: the ``fittable`` section of
``data/perf/serving_stack.json`` (fields of :class:`~smetric.cluster.serving_stack.ServingStack`) and of
``data/perf/efficiency.json`` (fields of :class:`~smetric.hardware.efficiency.Efficiency`). Each entry gives the
search range (``low``, ``high``), the grid ``points`` of one search level and why the parameter has no source. Any
other parameter is refused, naming its source where it has one.

**Training data**: specs in the validation schema (:mod:`.spec`), by default every spec of ``data/calibration/``
(BLIS's own training runs). ``data/validation/`` is the test set: a spec that lies there, or whose name or source run
(``source.repo`` and ``source.run``) is a test spec's, is refused. So is a parameter no training spec exercises: an
efficiency field exercises a spec when it changes the spec's instance model (iteration-time coefficients or KV
capacity; the all-reduce latency does only at TP > 1); a serving-stack field exercises every spec.

**A candidate is replayed** by the runner (:func:`.runner.predict`), one spec at a time: serving-stack fields replace
those of the row the spec's ``cluster.engine`` selects (the runner's ``engine`` argument, ``ROW:FIELD=VALUE``);
efficiency fields replace those of the efficiency entry the spec's GPU uses, in a data folder whose tables hold the
candidate and whose every other file is a link to the real data (``SMETRIC_DATA``, :func:`write_data_folder`): the
code path of a committed table.

**Objective**: the mean of |predicted / measured - 1| of the E2E, TTFT and ITL means (:data:`METRICS`) over every
training run and router that publishes them.

**Method** (deterministic, no random draws): a cyclic coordinate grid search, zoomed. From the tables' values, each
parameter in turn takes the best value of its grid (``points`` values over its range, plus its current value; the
smaller value wins a tie) with the others held, and cycles repeat until one moves nothing (at most
:data:`MAX_CYCLES`). Then each grid step shrinks by ``(points - 1) / 2``, the grid spans one old step either side of
the best value, and the cycles repeat: :data:`LEVELS` levels in all. Replays are memoised per spec on the values of
the parameters it exercises.

**Output** (JSON, written once at the end, atomically): the fitted values with their tables and the rows or entries
they apply to, the runs used (names, files, source runs), the objective, its value and every run's errors at the
tables' values (``before``) and at the fit (``after``). No date: the same inputs give the same bytes. A fit is applied
by a data folder that carries its values in both tables (``smetric calibrate --apply FIT DIR``, then
``SMETRIC_DATA=DIR smetric validate ...``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from ..context import ENV, run_context
from .spec import ExperimentSpec, SpecError, load_specs, spec_paths

__all__ = ["METRICS", "MAX_CYCLES", "LEVELS", "CalibrationError", "Fittable", "fittable_parameters",
           "training_specs", "calibrate", "write_data_folder", "register_calibrate", "run_calibrate"]

#: the published means the objective scores (the BLIS harness's E2E, TTFT and ITL)
METRICS = ("e2e_mean_s", "ttft_mean_s", "itl_mean_s")
#: coordinate cycles per search level at most (a cycle that moves nothing ends the level earlier)
MAX_CYCLES = 4
#: search levels: the table's grid, then grids zoomed around the best value
LEVELS = 3
_STACK, _EFFICIENCY = "serving_stack.json", "efficiency.json"
_DATA_ENV = ENV["data_dir"]


class CalibrationError(ValueError):
    """A refused calibration input: one line naming the file or flag and the reason."""


@dataclass(frozen=True)
class Fittable:
    """One parameter a table declares fittable: its name, table (file name under ``data/perf``) and search grid."""

    name: str
    table: str
    low: float
    high: float
    points: int
    note: str


def _table(name: str) -> dict:
    from ..hardware.efficiency import perf_data_dir

    with open(perf_data_dir() / name, encoding="utf-8") as fh:
        return json.load(fh)


def fittable_parameters() -> dict[str, Fittable]:
    """Every parameter the two tables declare fittable (serving-stack ones first), each checked: a field of its
    table's dataclass, ``0 <= low < high``, an odd number of ``points`` >= 3, no row giving it a source and not one
    of the efficiency fields fitted from the measured profiles."""
    from ..cluster.serving_stack import ServingStack
    from ..hardware.calibration import ATTENTION_FIELDS, LINEAR_FIELDS
    from ..hardware.efficiency import Efficiency

    out: dict[str, Fittable] = {}
    for table, known in ((_STACK, ServingStack), (_EFFICIENCY, Efficiency)):
        raw = _table(table)
        for name, entry in raw.get("fittable", {}).items():
            where = f"data/perf/{table}: fittable.{name}"
            if name not in {f.name for f in fields(known)} - {"name", "source"}:
                raise CalibrationError(f"{where}: not a field of {known.__name__}")
            try:
                par = Fittable(name, table, float(entry["low"]), float(entry["high"]), int(entry["points"]),
                               str(entry["note"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise CalibrationError(f"{where}: needs numbers low, high, points and a note ({exc})") from None
            if not (0 <= par.low < par.high and par.points >= 3 and par.points % 2 == 1):
                raise CalibrationError(f"{where}: needs 0 <= low < high and an odd number of points >= 3")
            sourced = [row for row, spec in raw.get("rows", {}).items() if "source" in spec["params"].get(name, {})]
            if sourced:
                raise CalibrationError(f"{where}: declared fittable, but row {sourced[0]} gives it a source")
            if table == _EFFICIENCY and name in LINEAR_FIELDS + ATTENTION_FIELDS:
                raise CalibrationError(f"{where}: declared fittable, but it is fitted from the measured profiles")
            out[name] = par
    return out


# ------------------------------------------------------------------------------------------------ training specs

def _relative(path) -> str:
    """``path`` relative to the checkout (stable across checkouts), else absolute."""
    path = Path(path).resolve()
    root = run_context().root
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _test_index(folder: Path) -> dict:
    """The test specs' names and ``(source.repo, source.run)`` -> their files (read as plain YAML, not checked)."""
    import yaml

    index: dict = {}
    for path in sorted(folder.glob("*.yaml")):
        raw = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        source = raw.get("source") or {}
        index[("name", raw.get("name"))] = path
        if source.get("run") is not None:
            index[("run", source.get("repo"), str(source["run"]))] = path
    return index


def training_specs(paths: Sequence[str | Path]) -> list[ExperimentSpec]:
    """Load and check the training specs; a test spec (in ``data/validation/``, or with a test spec's name or
    source run) is a :class:`CalibrationError` naming the file."""
    test_folder = (run_context().data_dir / "validation").resolve()
    if not paths:
        raise CalibrationError("no training specs (data/calibration/ holds none and none were given)")
    for path in paths:
        if test_folder in Path(path).resolve().parents:
            raise CalibrationError(f"{path}: is a test spec: data/validation/ is the test set and never chooses a "
                                   "parameter; calibrate on data/calibration/")
    try:
        specs = load_specs(list(paths))
    except SpecError as exc:
        raise CalibrationError(" ".join(str(exc).split())) from None
    index = _test_index(test_folder)
    for spec in specs:
        run = spec.source.get("run")
        hit = index.get(("name", spec.name)) or (index.get(("run", spec.source.get("repo"), str(run)))
                                                 if run is not None else None)
        if hit is not None:
            what = f"name {spec.name!r}" if ("name", spec.name) in index else f"source run {run!r}"
            raise CalibrationError(f"{spec.path}: is a test spec: its {what} is that of {_relative(hit)}; "
                                   "calibrate on training runs only")
    return specs


# ------------------------------------------------------------------------------------------------ scope of a fit

def _efficiency_entry(gpu: str) -> str:
    """The efficiency-table entry a GPU uses (its own, or the one it borrows: ``TRANSFERRED_FROM``)."""
    from ..hardware.efficiency import TRANSFERRED_FROM, load_efficiencies

    table = load_efficiencies()
    if gpu in table:
        return gpu
    if TRANSFERRED_FROM.get(gpu) in table:
        return TRANSFERRED_FROM[gpu]
    raise CalibrationError(f"cluster.gpu: no efficiency entry for {gpu!r}")


def _row(spec: ExperimentSpec) -> str:
    return spec.engine_behaviour()["engine"]


def _instance(spec: ExperimentSpec, efficiency) -> tuple:
    """What an efficiency field can change in a spec's instance: iteration-time coefficients and KV capacity."""
    from ..hardware import PerfModel

    c = spec.cluster
    pm = PerfModel(c["model"], c["gpu"], int(c["tp"]), efficiency=efficiency,
                   max_batched_tokens=int(c["max_num_batched_tokens"]), weight_dtype=c["weight_dtype"],
                   kv_dtype=c["kv_dtype"])
    return tuple(np.asarray(pm.coefficients(), dtype=float)), pm.kv_capacity_tokens(float(c["gpu_memory_utilization"]))


def _exercises(par: Fittable, spec: ExperimentSpec) -> bool:
    if par.table == _STACK:
        return True
    from ..hardware.efficiency import efficiency_for

    eff = efficiency_for(spec.cluster["gpu"])
    return _instance(spec, replace(eff, **{par.name: par.low})) != _instance(spec, replace(eff, **{par.name: par.high}))


def _where(par: Fittable, spec: ExperimentSpec) -> str:
    """The row (serving-stack field) or efficiency entry (efficiency field) ``par`` takes ``spec``'s value from."""
    return _row(spec) if par.table == _STACK else _efficiency_entry(spec.cluster["gpu"])


def _table_value(par: Fittable, where: str) -> float:
    from ..cluster.serving_stack import ServingStack
    from ..hardware.efficiency import load_efficiencies

    source = ServingStack.preset(where) if par.table == _STACK else load_efficiencies()[where]
    return float(getattr(source, par.name))


def _refusal(name: str, fittable: dict[str, Fittable], specs: Sequence[ExperimentSpec]) -> str:
    """Why ``--param name`` cannot be fitted: unknown, or with a public source (named), or not declared fittable."""
    from ..cluster.serving_stack import ServingStack, serving_stack_table
    from ..hardware.calibration import ATTENTION_FIELDS, LINEAR_FIELDS
    from ..hardware.efficiency import Efficiency, load_efficiencies

    declared = ", ".join(fittable) or "none"
    if name in {f.name for f in fields(ServingStack)} - {"name"}:
        table = serving_stack_table()
        sources = []
        for row in sorted({_row(s) for s in specs}):
            base = table["aliases"].get(row, {}).get("row", row)
            base = base if base in table["rows"] else base.rsplit("-", 1)[0]
            entry = table["rows"][base]["params"][name]
            if "source" in entry:
                sources.append(f"{row}: {entry['source']}, {table['sources'][entry['source']]}")
        if sources:
            return f"not fittable: it has a public source in data/perf/serving_stack.json ({'; '.join(sources)})"
        return f"not fittable: not declared in data/perf/serving_stack.json's fittable (fittable: {declared})"
    if name in {f.name for f in fields(Efficiency)} - {"source"}:
        if name in LINEAR_FIELDS + ATTENTION_FIELDS:
            entries = sorted({_efficiency_entry(s.cluster["gpu"]) for s in specs})
            fitted = "; ".join(f"{e}: {load_efficiencies()[e].source}" for e in entries)
            return f"not fittable: data/perf/efficiency.json fits it from measured profiles ({fitted})"
        return f"not fittable: not declared in data/perf/efficiency.json's fittable (fittable: {declared})"
    return f"unknown parameter (fittable: {declared})"


def _chosen(names: Sequence[str] | None, specs: Sequence[ExperimentSpec]) -> list[Fittable]:
    """The parameters to fit (default: every declared one), each exercised by some training spec."""
    fittable = fittable_parameters()
    names = list(dict.fromkeys(names)) if names else list(fittable)
    for name in names:
        if name not in fittable:
            raise CalibrationError(f"--param {name}: {_refusal(name, fittable, specs)}")
    chosen = [fittable[n] for n in names]
    for par in chosen:
        if not any(_exercises(par, s) for s in specs):
            raise CalibrationError(f"--param {par.name}: no training spec exercises it (it changes nothing in "
                                   f"{', '.join(s.name for s in specs)}); give training runs that do, or leave it out")
    return chosen


# ------------------------------------------------------------------------------------------------ replays

def write_data_folder(folder: str | Path, rows: dict[str, dict[str, float]] | None = None,
                      efficiency: dict[str, dict[str, float]] | None = None) -> Path:
    """A data folder for ``SMETRIC_DATA``: every file of the run context's data folder linked, except
    ``perf/serving_stack.json`` and ``perf/efficiency.json``, copied with ``rows`` (``{row: {field: value}}``, a
    ``ROW-fast``/``-slow`` variant's own value) and ``efficiency`` (``{entry: {field: value}}``) put in."""
    base, folder = run_context().data_dir.resolve(), Path(folder)
    (folder / "perf").mkdir(parents=True)
    for item in base.iterdir():
        if item.name != "perf":
            (folder / item.name).symlink_to(item)
    for item in (base / "perf").iterdir():
        if item.name not in (_STACK, _EFFICIENCY):
            (folder / "perf" / item.name).symlink_to(item)
    stack, eff = _table(_STACK), _table(_EFFICIENCY)
    for row, values in (rows or {}).items():
        base_row, variant = stack["aliases"].get(row, {}).get("row", row), "value"
        if base_row not in stack["rows"]:
            base_row, variant = base_row.rsplit("-", 1)
        for name, value in values.items():
            stack["rows"][base_row]["params"][name][variant] = value
    for entry, values in (efficiency or {}).items():
        eff["gpus"][entry].update(values)
    for name, table in ((_STACK, stack), (_EFFICIENCY, eff)):
        (folder / "perf" / name).write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    return folder


@contextmanager
def _efficiency_data(efficiency: dict[str, dict[str, float]]):
    """With ``efficiency``, ``SMETRIC_DATA`` pointing at a data folder that carries it (a new folder each time: the
    efficiency table is cached per path), restored after; without, nothing changes."""
    if not efficiency:
        yield
        return
    saved = os.environ.get(_DATA_ENV)
    with tempfile.TemporaryDirectory(prefix="smetric-calibrate-") as tmp:
        os.environ[_DATA_ENV] = str(write_data_folder(Path(tmp) / "data", efficiency=efficiency))
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop(_DATA_ENV, None)
            else:
                os.environ[_DATA_ENV] = saved


def _replay(task: tuple) -> dict:
    """One spec's predictions (``{router: {metric: value}}``) under one candidate: ``(path, quick, engine text,
    efficiency overrides)`` (a worker process's task)."""
    from .runner import predict
    from .spec import load_spec

    path, quick, engine, efficiency = task
    spec = load_spec(path)
    with _efficiency_data(efficiency):
        return predict(spec, quick=quick, engine=engine)


class _Replays:
    """Memoised replays of the training specs under candidate values, run in ``jobs`` worker processes (a context
    manager: the workers live as long as it does)."""

    def __init__(self, specs: Sequence[ExperimentSpec], params: Sequence[Fittable], quick: bool, jobs: int):
        self.specs, self.params, self.quick, self.jobs = list(specs), list(params), quick, jobs
        self.exercised = {s.name: [p for p in params if _exercises(p, s)] for s in specs}
        self.where = {(p.name, s.name): _where(p, s) for p in params for s in specs}
        self.memo: dict = {}
        self.pool = None

    def __enter__(self) -> "_Replays":
        if self.jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(self.jobs)
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def _key(self, spec: ExperimentSpec, values: dict[str, float] | None) -> tuple:
        """``values`` (None = each spec's own table values) restricted to what the spec exercises."""
        return (spec.name, tuple((p.name, values[p.name] if values is not None
                                  else _table_value(p, self.where[p.name, spec.name]))
                                 for p in self.exercised[spec.name]))

    def _task(self, spec: ExperimentSpec, key: tuple) -> tuple:
        values = dict(key[1])
        stack = [f"{p.name}={values[p.name]!r}" for p in self.exercised[spec.name] if p.table == _STACK]
        engine = _row(spec) + (":" + ",".join(stack) if stack else "")
        efficiency: dict[str, dict[str, float]] = {}
        for p in self.exercised[spec.name]:
            if p.table == _EFFICIENCY:
                efficiency.setdefault(self.where[p.name, spec.name], {})[p.name] = values[p.name]
        return (spec.path, self.quick, engine, efficiency)

    def predictions(self, candidates: Sequence[dict[str, float] | None]) -> list[dict[str, dict]]:
        """Each candidate's predictions per spec (``{spec name: {router: {metric: value}}}``); the replays still
        missing run together, in a fixed order."""
        keys = [[self._key(s, c) for s in self.specs] for c in candidates]
        todo = list(dict.fromkeys(k for row in keys for k in row if k not in self.memo))
        by_name = {s.name: s for s in self.specs}
        tasks = [self._task(by_name[k[0]], k) for k in todo]
        results = list(self.pool.map(_replay, tasks)) if self.pool is not None else [_replay(t) for t in tasks]
        self.memo.update(zip(todo, results))
        return [{k[0]: self.memo[k] for k in row} for row in keys]


def _errors(specs: Sequence[ExperimentSpec], predicted: dict[str, dict]) -> dict[str, dict[str, float]]:
    """``{run: {metric: relative error}}`` of every training run (``run`` = spec name, ``/router`` where a spec has
    several) and published metric of :data:`METRICS`."""
    out = {}
    for spec in specs:
        for router, measured in spec.measured.items():
            label = spec.name if len(spec.measured) == 1 else f"{spec.name}/{router}"
            out[label] = {m: float(predicted[spec.name][router][m] / measured[m] - 1.0)
                          for m in METRICS if m in measured}
    return out


def _objective(errors: dict[str, dict[str, float]]) -> float:
    values = [abs(v) for run in errors.values() for v in run.values()]
    if not values:
        raise CalibrationError(f"the training specs publish none of {', '.join(METRICS)}: nothing to fit")
    return float(np.mean(values))


# ------------------------------------------------------------------------------------------------ search

def _tidy(value: float) -> float:
    """A grid value without float noise (12 significant digits)."""
    return float(f"{value:.12g}")


def _grid(par: Fittable, centre: float, step: float, level: int) -> list[float]:
    """The level's grid: the table's range (level 0) or ``points`` values ``step`` apart centred on ``centre``,
    within the range, plus ``centre`` itself; sorted."""
    half = (par.points - 1) // 2
    if level == 0:
        raw = [par.low + i * step for i in range(par.points)]
    else:
        raw = [centre + i * step for i in range(-half, half + 1)]
    return sorted({_tidy(min(max(v, par.low), par.high)) for v in raw} | {centre})


def _search(params: Sequence[Fittable], start: dict[str, float],
            objective: Callable[[list[dict[str, float]]], list[float]],
            progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """The cyclic coordinate grid search of the module docstring, from ``start``; ``progress`` gets a line after
    each level."""
    x = dict(start)
    steps = {p.name: (p.high - p.low) / (p.points - 1) for p in params}
    for level in range(LEVELS):
        if level:
            steps = {p.name: steps[p.name] / ((p.points - 1) // 2) for p in params}
        for _ in range(MAX_CYCLES):
            moved = False
            for p in params:
                grid = _grid(p, x[p.name], steps[p.name], level)
                scores = objective([{**x, p.name: v} for v in grid])
                best = grid[int(np.argmin(scores))]  # the first minimum: the smaller value wins a tie
                moved |= best != x[p.name]
                x[p.name] = best
            if not moved:
                break
        if progress is not None:
            values = ", ".join(f"{k} = {v!r}" for k, v in x.items())
            progress(f"level {level + 1}/{LEVELS}: {values}, objective {objective([x])[0]:.6f}")
    return x


def calibrate(paths: Sequence[str | Path], names: Sequence[str] | None = None, *, quick: bool = False,
              jobs: int = 1, progress: Callable[[str], None] | None = None) -> dict:
    """Fit ``names`` (default: every declared fittable parameter) on the training specs at ``paths``; the fit
    record (see the module docstring). Refused inputs raise :class:`CalibrationError`; ``progress`` gets a line
    after each search level."""
    specs = training_specs(paths)
    params = _chosen(names, specs)
    with _Replays(specs, params, quick, jobs) as replays:
        scope = {p.name: sorted({replays.where[p.name, s.name] for s in specs if p in replays.exercised[s.name]})
                 for p in params}

        def objective(candidates):
            return [_objective(_errors(specs, pred)) for pred in replays.predictions(candidates)]

        start = {p.name: _tidy(min(max(_table_value(p, scope[p.name][0]), p.low), p.high)) for p in params}
        fitted = _search(params, start, objective, progress)
        before, after = (_errors(specs, pred) for pred in replays.predictions([None, fitted]))
    rounded = {k: {r: {m: round(v, 6) for m, v in run.items()} for r, run in e.items()}
               for k, e in (("before", before), ("after", after))}
    stack_rows = {row: {p.name: fitted[p.name]} for p in params if p.table == _STACK for row in scope[p.name]}
    return {
        "protocol": "smetric calibrate (smetric.realcluster.calibrate): parameters the tables declare "
                    "fittable, fitted on training runs only (never data/validation/)",
        "objective": f"mean |predicted / measured - 1| of {', '.join(METRICS)} over every training run and router "
                     "that publishes them",
        "method": f"cyclic coordinate grid search from the tables' values, {LEVELS} levels (each step "
                  f"(points - 1) / 2 times finer, centred on the best), at most {MAX_CYCLES} cycles a level; "
                  "the smaller value wins a tie",
        "quick": quick,
        "parameters": {p.name: {"table": f"data/perf/{p.table}", "applies_to": scope[p.name],
                                "before": {w: _table_value(p, w) for w in scope[p.name]}, "fitted": fitted[p.name],
                                "range": [p.low, p.high], "points": p.points} for p in params},
        "runs": [{"name": s.name, "file": _relative(s.path), "source_repo": s.source.get("repo"),
                  "source_run": s.source.get("run")} for s in specs],
        "fit_error": {"before": round(_objective(before), 6), "after": round(_objective(after), 6)},
        "errors": rounded,
        "replays": len(replays.memo),
        "apply": {
            "data_folder": "smetric calibrate --apply FIT DIR, then SMETRIC_DATA=DIR smetric validate ...",
            "engine": [f"{row}:{','.join(f'{k}={v!r}' for k, v in values.items())}"
                       for row, values in stack_rows.items()],
            "efficiency": {e: {p.name: fitted[p.name] for p in params if p.table == _EFFICIENCY and e in scope[p.name]}
                           for e in sorted({e for p in params if p.table == _EFFICIENCY for e in scope[p.name]})},
        },
    }


# ------------------------------------------------------------------------------------------------ command line

def register_calibrate(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric calibrate``."""
    parser.description = ("Fit the parameters that data/perf/serving_stack.json and data/perf/efficiency.json "
                          "declare fittable (no public source) on training runs only (data/calibration/), and "
                          "write the fit: values, runs, objective, error before and after.")
    parser.add_argument("specs", nargs="*", metavar="SPEC",
                        help="training specs (default: every spec of data/calibration/); a test spec is refused")
    parser.add_argument("--param", action="append", metavar="NAME",
                        help="a parameter to fit (repeatable; default: every one the tables declare fittable)")
    parser.add_argument("--out", metavar="FILE", help="the fit's JSON (default data/calibration/fit.json)")
    parser.add_argument("--quick", action="store_true",
                        help="every stage scaled to 10 %% of its duration/requests (tests; not a real fit)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    parser.add_argument("--apply", nargs=2, metavar=("FIT", "DIR"),
                        help="instead of fitting: write DIR, a data folder carrying FIT's values in both tables "
                             "(every other file linked), for SMETRIC_DATA=DIR smetric validate ...")


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _apply(fit_path: str, folder: str) -> Path:
    """``--apply FIT DIR``: the data folder of :func:`write_data_folder` with the fit's values."""
    try:
        fit = json.loads(Path(fit_path).read_text(encoding="utf-8"))
        params = fit["parameters"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CalibrationError(f"--apply {fit_path}: not a fit file of smetric calibrate ({exc})") from None
    if Path(folder).exists():
        raise CalibrationError(f"--apply {folder}: already exists; give a new folder")
    rows: dict[str, dict[str, float]] = {}
    efficiency: dict[str, dict[str, float]] = {}
    for name, par in params.items():
        target = rows if par["table"] == f"data/perf/{_STACK}" else efficiency
        for where in par["applies_to"]:
            target.setdefault(where, {})[name] = par["fitted"]
    return write_data_folder(folder, rows=rows, efficiency=efficiency)


def run_calibrate(args: argparse.Namespace) -> int:
    """Check every input first (one line naming the file or flag and the reason, exit 2), then fit and write."""
    try:
        if args.apply:
            folder = _apply(*args.apply)
            print(f"wrote {folder}: SMETRIC_DATA={folder} smetric validate ... replays with the fit's values")
            return 0
        if args.jobs < 1:
            raise CalibrationError(f"--jobs must be >= 1, got {args.jobs}")
        out = Path(args.out) if args.out else run_context().data_dir / "calibration" / "fit.json"
        if not out.parent.is_dir():
            raise CalibrationError(f"--out {out}: folder {out.parent} does not exist")
        paths = list(args.specs) or [str(p) for p in spec_paths(run_context().data_dir / "calibration")]
        fit = calibrate(paths, args.param, quick=args.quick, jobs=args.jobs,
                        progress=lambda line: print(line, file=sys.stderr, flush=True))
    except CalibrationError as exc:
        print(f"smetric calibrate: {exc}", file=sys.stderr)
        return 2
    _write_atomically(out, json.dumps(fit, indent=1) + "\n")
    values = ", ".join(f"{k} = {v['fitted']!r}" for k, v in fit["parameters"].items())
    print(f"{values}; fit error {fit['fit_error']['before']:.4f} -> {fit['fit_error']['after']:.4f} "
          f"({len(fit['runs'])} runs, {fit['replays']} replays); wrote {out}")
    return 0
