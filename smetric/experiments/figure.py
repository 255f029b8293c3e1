"""The figure layer: what every figure module declares, and the one way figures are computed, saved and checked.

A figure is one module ``smetric/experiments/figures/figNN_name.py``, named like its notebook
``notebooks/figNN_name.ipynb``. It declares:

* ``Params`` -- a frozen dataclass (subclass of :class:`FigureParams`) whose field defaults are the
  **full** run and whose ``quick()`` classmethod returns the **quick** preset (small sizes, same code
  paths: CI, nbval, the back-test). Fields are declared with :func:`param` so they carry a one-line
  help text (papermill ``--help-notebook`` shows it);
* ``compute(params, *, jobs=None) -> DataFrame`` -- the figure's data, the CSV behind it;
* ``plot(df) -> matplotlib Figure``;
* ``claims(df) -> list[dict]`` -- verdict rows for :func:`~smetric.experiments.claims.record_claims`
  (empty when the paper makes no claim about the figure);
* optionally ``findings(df) -> str`` (measured facts printed with the claims), ``overview(df)`` (a table
  shown after computing) and ``tables(df) -> dict[str, DataFrame]`` (extra CSVs derived from ``df``,
  saved as ``<name>.csv`` next to the figure).

The notebook, ``smetric reproduce`` (through the notebook) and the tests read only this declaration.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from ..context import RunContext, run_context
from .figures import csv_frames, figure_id, figure_name

__all__ = ["FigureParams", "param", "check_module", "save", "report", "REQUIRED"]

#: What every figure module must define.
REQUIRED = ("Params", "compute", "plot", "claims")


def param(default: Any, doc: str) -> Any:
    """A :class:`FigureParams` field: its full-run ``default`` and a one-line help text.

    Lists and dicts are stored as given (use tuples for sequences: a frozen dataclass default must
    not be mutable; dict defaults are copied per instance).
    """
    if "=" in doc or "\n" in doc:
        raise ValueError(f"a parameter's help is one line without '=' (papermill cannot parse it): {doc!r}")
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata={"doc": doc})
    if isinstance(default, list):
        raise TypeError("use a tuple, not a list, as a parameter default")
    return field(default=default, metadata={"doc": doc})


def _frozen(value: Any) -> Any:
    """Lists (e.g. from papermill or JSON) become tuples, recursively inside dict values."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value


def _literal(name: str, annotation: str, value: Any) -> Any:
    """A text override of a non-text field is read as a Python literal: ``papermill -p seeds "[0, 1]"``
    passes the string ``"[0, 1]"``."""
    if not isinstance(value, str) or annotation.startswith("str"):
        return value
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise ValueError(f"parameter {name} ({annotation}) needs a literal value, got {value!r}") from None


@dataclass(frozen=True)
class FigureParams:
    """Base of every figure's parameters: field defaults = the full run, :meth:`quick` = the quick preset."""

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _frozen(getattr(self, f.name)))

    @classmethod
    def full(cls) -> FigureParams:
        """The full run (``make figures``): the field defaults."""
        return cls()

    @classmethod
    def quick(cls) -> FigureParams:
        """The quick preset (small sizes, same code paths); figures override it."""
        return cls()

    @classmethod
    def preset(cls, quick: bool = False, **overrides: Any) -> FigureParams:
        """The quick or full preset with ``overrides`` applied; an override of ``None`` keeps the preset's value.

        Unknown names raise ``ValueError`` listing the known ones.
        """
        types = {f.name: str(f.type) for f in fields(cls)}
        unknown = sorted(set(overrides) - set(types))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown} for {cls.__module__}; known: {sorted(types)}")
        base = cls.quick() if quick else cls.full()
        chosen = {k: _literal(k, types[k], v) for k, v in overrides.items() if v is not None}
        return replace(base, **chosen) if chosen else base

    @classmethod
    def docs(cls) -> dict[str, str]:
        """Field name -> its help text."""
        return {f.name: f.metadata.get("doc", "") for f in fields(cls)}

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (tuples stay tuples)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def save(module: ModuleType, fig, df: pd.DataFrame, context: RunContext | None = None) -> list[Path]:
    """Save the figure (PNG, PDF) and all its CSVs into the context's figures folder; return the paths."""
    from ..plotting import save_figure

    out = (context or run_context()).figures()
    frames = csv_frames(module, df)
    name = figure_name(module)
    paths = save_figure(fig, frames.pop(name), name, outdir=out)
    for stem, frame in frames.items():
        frame.to_csv(out / f"{stem}.csv", index=False)
        paths.append(out / f"{stem}.csv")
    return paths


def report(module: ModuleType, df: pd.DataFrame, context: RunContext | None = None) -> pd.DataFrame:
    """Record the figure's claims and print each beside the paper's; return them (empty without a claim).

    The claims land in ``<figures>/figNN_claims.csv`` (joined into ``claims.csv`` by ``smetric reproduce``).
    """
    from .claims import paper_claims, record_claims

    rows = module.claims(df)
    if not rows:
        return pd.DataFrame(columns=["figure", "claim_id", "reproduced", "verdict", "reason"])
    out = (context or run_context()).figures()
    side = record_claims(figure_id(module), rows, outdir=out).join(paper_claims()[["paper_value", "wording"]],
                                                                    on="claim_id")
    for _, r in side.iterrows():
        print(f"{r['claim_id']}  [{r['verdict']}]\n  paper:      {r['paper_value']}  ({r['wording']})\n"
              f"  reproduced: {r['reproduced']}\n  why:        {r['reason']}\n")
    return side


def check_module(module: ModuleType) -> None:
    """Raise ``TypeError`` when a figure module lacks part of the declaration."""
    missing = [name for name in REQUIRED if not hasattr(module, name)]
    if missing:
        raise TypeError(f"{module.__name__} does not define {missing}")
    if not (dataclasses.is_dataclass(module.Params) and issubclass(module.Params, FigureParams)):
        raise TypeError(f"{module.__name__}.Params must be a FigureParams dataclass")
