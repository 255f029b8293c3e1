"""Declared what-ifs: published experiments replayed with one thing changed, so the numbers behind each explained
miss (``data/validation/misses.csv``) come from code, not from a hand-run study.

A what-if (``data/whatifs/whatifs.yaml``, one entry per question) names the validation specs it replays (patterns
over their names), the serving-stack row that replaces each spec's own (``engine``, as ``smetric validate
--engine``: the engine family's behaviours stay) and the spec values it sets (``set``: dotted paths such as
``workload.params.output_after_tool`` or ``routers.load-scheduling.router_info.refresh_s``); ``routers`` keeps only
some routers (the baseline always stays, for the ratios); ``show`` lists the metrics its table reports. A changed
spec is checked again as a whole (:func:`.spec.check_spec`), so a what-if can only describe a spec that could run.

:func:`run_whatifs` replays them (:func:`.runner.predict_cases`) and returns the tidy error frame of every what-if
(column ``whatif``) and each what-if's validation targets (:func:`.scoring.targets`); ``smetric whatif --write``
keeps both in ``figures/`` and ``docs/validation.md`` renders them (:func:`whatif_lines`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import scoring
from .spec import METRICS, TOP_LEVEL_KEYS, ExperimentSpec, SpecError, check_spec, load_spec, read_yaml, spec_paths

__all__ = ["WhatIf", "WHATIF_KEYS", "ERROR_COLUMNS", "load_whatifs", "whatif_path", "changed_spec", "whatif_cases",
           "run_whatifs", "whatif_lines"]

#: Keys of one what-if (``name``, ``question``, ``specs`` and ``show`` required).
WHATIF_KEYS = ("name", "question", "specs", "engine", "set", "routers", "show", "note")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
#: Columns of :func:`run_whatifs`'s error frame.
ERROR_COLUMNS = ("whatif", "experiment", "router", "baseline", "metric", "measured", "predicted", "rel_error")
#: A what-if's table lists its rows one by one up to this many, else the median |error| of each shown metric.
TABLE_ROWS = 8


@dataclass(frozen=True)
class WhatIf:
    """One declared what-if (see the module docstring)."""

    name: str
    question: str
    specs: tuple[str, ...]
    show: tuple[str, ...]
    engine: str | None = None
    set: Mapping = field(default_factory=dict)
    routers: tuple[str, ...] = ()
    source: str = "<memory>"


def whatif_path() -> Path:
    """``<data>/whatifs/whatifs.yaml``."""
    from ..context import run_context

    return run_context().data_dir / "whatifs" / "whatifs.yaml"


def _strings(path, key: str, value, *, empty: bool = False) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"{path}: {key}: must be a list of strings, got {value!r}")
    if not value and not empty:
        raise SpecError(f"{path}: {key}: must not be empty")
    return tuple(value)


def _check_entry(path, i: int, entry) -> WhatIf:
    where = f"whatifs[{i}]"
    if not isinstance(entry, Mapping):
        raise SpecError(f"{path}: {where}: must be a mapping, got {type(entry).__name__}")
    unknown = [k for k in entry if k not in WHATIF_KEYS]
    if unknown:
        raise SpecError(f"{path}: {where}.{unknown[0]}: unknown key; known: {', '.join(WHATIF_KEYS)}")
    for key in ("name", "question", "specs", "show"):
        if key not in entry:
            raise SpecError(f"{path}: {where}.{key}: is missing")
    name = entry["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise SpecError(f"{path}: {where}.name: must be lower-case letters, digits and '-', got {name!r}")
    where = f"whatifs.{name}"
    if not isinstance(entry["question"], str) or not entry["question"].strip():
        raise SpecError(f"{path}: {where}.question: must be a non-empty string")
    show = _strings(path, f"{where}.show", entry["show"])
    bad = [m for m in show if m not in METRICS]
    if bad:
        raise SpecError(f"{path}: {where}.show: unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")
    engine = entry.get("engine")
    if engine is not None:
        from ..cluster.serving_stack import parse

        try:
            parse(str(engine))
        except ValueError as exc:
            raise SpecError(f"{path}: {where}.engine: {exc}") from None
    changes = entry.get("set") or {}
    if not isinstance(changes, Mapping) or not all(isinstance(k, str) and k for k in changes):
        raise SpecError(f"{path}: {where}.set: must map dotted spec paths to values, got {changes!r}")
    return WhatIf(name=name, question=entry["question"].strip(), specs=_strings(path, f"{where}.specs", entry["specs"]),
                  show=show, engine=None if engine is None else str(engine), set=dict(changes),
                  routers=_strings(path, f"{where}.routers", entry.get("routers", []), empty=True), source=str(path))


def load_whatifs(path=None) -> list[WhatIf]:
    """Read and check the declarations (default :func:`whatif_path`); :class:`.spec.SpecError` names the file, the
    what-if and the key."""
    path = Path(path) if path is not None else whatif_path()
    raw = read_yaml(path, "what-if")
    if not isinstance(raw, Mapping) or set(raw) != {"whatifs"} or not isinstance(raw["whatifs"], list):
        raise SpecError(f"{path}: <document>: must be a mapping with the one key 'whatifs' (a list)")
    whatifs = [_check_entry(path, i, entry) for i, entry in enumerate(raw["whatifs"])]
    names = [w.name for w in whatifs]
    repeated = next((n for n in names if names.count(n) > 1), None)
    if repeated:
        raise SpecError(f"{path}: whatifs.{repeated}: the name is used twice")
    return whatifs


def _set(raw: dict, dotted: str, value, where: str) -> dict:
    """``raw`` with ``dotted`` set to ``value``: every mapping on the path is copied (YAML anchors share mappings
    between routers, and a change must reach only the one named); the parent must exist."""
    keys = dotted.split(".")
    out = dict(raw)
    node = out
    for depth, key in enumerate(keys[:-1]):
        child = node.get(key)
        if not isinstance(child, Mapping):
            raise SpecError(f"{where}: set.{dotted}: {'.'.join(keys[:depth + 1])} is not a mapping of the spec")
        node[key] = dict(child)
        node = node[key]
    node[keys[-1]] = value
    return out


def changed_spec(spec: ExperimentSpec, whatif: WhatIf) -> ExperimentSpec:
    """``spec`` with the what-if's ``set`` values and ``routers`` selection, checked again as a whole."""
    where = f"{spec.path} [what-if {whatif.name}]"
    raw = {key: getattr(spec, key) for key in TOP_LEVEL_KEYS}
    for dotted, value in whatif.set.items():
        raw = _set(raw, dotted, value, where)
    if whatif.routers:
        unknown = [r for r in whatif.routers if r not in spec.routers]
        if unknown:
            raise SpecError(f"{where}: routers: {unknown[0]!r} is not a router of this spec; known: "
                            f"{', '.join(spec.routers)}")
        keep = set(whatif.routers) | {spec.baseline}
        raw["routers"] = {k: v for k, v in raw["routers"].items() if k in keep}
        raw["measured"] = {k: v for k, v in raw["measured"].items() if k in keep}
    return check_spec(raw, where)


def whatif_cases(whatifs: Sequence[WhatIf]) -> list[tuple[WhatIf, ExperimentSpec]]:
    """``(what-if, changed spec)`` for every what-if and every validation spec its patterns match (each pattern
    must match at least one spec name)."""
    specs = [load_spec(p) for p in spec_paths()]
    cases = []
    for whatif in whatifs:
        for pattern in whatif.specs:
            if not any(fnmatch.fnmatchcase(s.name, pattern) for s in specs):
                raise SpecError(f"{whatif.source}: whatifs.{whatif.name}.specs: {pattern!r} matches no "
                                f"validation spec")
        chosen = [s for s in specs if any(fnmatch.fnmatchcase(s.name, p) for p in whatif.specs)]
        cases += [(whatif, changed_spec(s, whatif)) for s in chosen]
    return cases


def run_whatifs(whatifs: Sequence[WhatIf], *, quick: bool = False, jobs: int = 1, progress: bool = False
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay every what-if: its errors (:data:`ERROR_COLUMNS` of :func:`.scoring.error_frame`) and its targets
    (:func:`.scoring.targets` per what-if, only those with published numbers to score)."""
    from .runner import predict_cases

    cases = whatif_cases(whatifs)
    predicted = predict_cases([(spec, whatif.engine) for whatif, spec in cases], quick=quick, jobs=jobs,
                              progress=progress)
    frames, goals = [], []
    for whatif in whatifs:
        mine = [(spec, p) for (w, spec), p in zip(cases, predicted) if w is whatif]
        frame = scoring.error_frame([s for s, _ in mine], {s.name: p for s, p in mine})
        frames.append(frame.assign(whatif=whatif.name))
        scored = scoring.targets(frame)
        goals.append(scored[scored["verdict"] != "n/a"].assign(whatif=whatif.name))
    errors, targets = pd.concat(frames, ignore_index=True), pd.concat(goals, ignore_index=True)
    return errors[list(ERROR_COLUMNS)], targets[["whatif", "target", "value", "verdict", "detail"]]


def _value(v: float, fmt: str = "") -> str:
    """A table cell: ``n/a`` for NaN, thousands without decimals, else four significant digits (or ``fmt``)."""
    if v != v:
        return "n/a"
    if fmt:
        return format(v, fmt)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def whatif_lines(whatifs: Sequence[WhatIf], errors: pd.DataFrame, targets: pd.DataFrame) -> str:
    """Markdown for each what-if: its question and changes, its scored targets, then its shown metrics (each row
    up to :data:`TABLE_ROWS` rows, else the median |error| of each metric)."""
    out = []
    for w in whatifs:
        changes = [f"engine row `{w.engine}`"] if w.engine else []
        changes += [f"`{k}` = `{v}`" for k, v in w.set.items()]
        if w.routers:
            changes.append("routers " + ", ".join(f"`{r}`" for r in w.routers) + " (and the baseline)")
        out.append(f"**`{w.name}`**: {w.question} Specs {', '.join(f'`{s}`' for s in w.specs)}; "
                   + ("; ".join(changes) if changes else "as specified") + ".")
        mine = targets[targets["whatif"] == w.name]
        if len(mine):
            out.append("Targets: " + "; ".join(f"{r.target} {r.value:.3g} ({r.verdict}: {r.detail})"
                                               for r in mine.itertuples()) + ".")
        rows = errors[(errors["whatif"] == w.name) & errors["metric"].isin(w.show)]
        wide = rows.pivot_table(index=["experiment", "router"], columns="metric", values=["predicted", "measured"],
                                aggfunc="first", sort=False)
        if len(wide) <= TABLE_ROWS:
            out += ["", "| experiment | router | " + " | ".join(f"{m} model (measured)" for m in w.show) + " |",
                    "|---|---|" + "---:|" * len(w.show)]
            for (exp, router), r in wide.iterrows():
                cells = [f"{_value(r.get(('predicted', m), np.nan))} ({_value(r.get(('measured', m), np.nan))})"
                         for m in w.show]
                out.append(f"| {exp} | {router} | " + " | ".join(cells) + " |")
        else:
            med = rows.groupby("metric")["rel_error"].apply(lambda s: s.abs().median())
            out.append("Median |error| over " + f"{len(wide)} experiment-router rows: "
                       + "; ".join(f"{m} {_value(med.get(m, np.nan), '.1%')}" for m in w.show) + ".")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
