"""A figure's workload rows: its main workload, and the real agent trace run beside it on the same code path.

Every main figure runs the real Claude Code sessions of kv-cache-tester (``claude-code``) beside the preset
closest to the paper's traffic (``bailian-coder``). A figure does it with one parameter, ``second_row`` (a
dict of its own parameters: at least ``workload``, and the loads that bracket that workload's peak -- a
~122k-token agent trace peaks near 5-6 requests/min/instance on the 30B testbed, not near 50), and three calls:

* :func:`compute_rows` runs the figure's experiment on the main parameters and again on them with
  ``second_row`` applied, and labels every row of the result with its ``workload``;
* :func:`on_main` wraps a claims (or overview) function so that it reads the main workload only:
  the paper's claims are judged on the main workload;
* :func:`row_claims` applies the same claims function, the same rules, to every other row: a table
  of what the claims would say on the real trace, saved next to the figure (``tables``).

Tables are computed per workload (:func:`per_workload`); plots draw one row of panels per workload
(:func:`row_grid`, :func:`row_title`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace

import pandas as pd

from .figure import FigureParams

__all__ = ["REAL_TRACE", "row_label", "second_params", "compute_rows", "workload_frames", "per_workload",
           "row_grid", "row_title", "main_rows", "on_main", "row_claims"]

#: The real agent-session trace shown beside the main workload (``testbeds.TRACE_WORKLOADS``).
REAL_TRACE = "claude-code"


def row_label(p: FigureParams) -> str:
    """A parameter set's workload label: its ``trace`` (a file or catalog name) if set, else its ``workload``."""
    trace = getattr(p, "trace", None)
    return str(trace) if trace is not None else str(p.workload)


def second_params(p: FigureParams) -> FigureParams | None:
    """``p`` with its ``second_row`` overrides applied (``None`` when the dict is empty).

    The second row runs a workload, never the main row's ``trace`` (unless it sets one itself).
    Unknown names, ``second_row`` itself, and a row without ``workload`` raise ``ValueError``.
    """
    overrides = dict(p.second_row or {})
    if not overrides:
        return None
    known = {f.name for f in fields(p)} - {"second_row"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"second_row sets unknown parameter(s) {unknown}; known: {sorted(known)}")
    if "workload" not in overrides:
        raise ValueError(f"second_row must name its workload, got {overrides!r}")
    if "trace" in known:
        overrides.setdefault("trace", None)
    return replace(p, second_row={}, **overrides)


def compute_rows(p: FigureParams, run: Callable[[FigureParams], pd.DataFrame]) -> pd.DataFrame:
    """``run(p)``, then ``run`` on the second row's parameters if ``p.second_row`` is set; one frame with a
    ``workload`` column (inserted first where ``run`` does not write one), the main workload's rows first."""
    rows = [p] + [q for q in [second_params(p)] if q is not None]
    labels = [row_label(q) for q in rows]
    if len(set(labels)) != len(labels):
        raise ValueError(f"the second row repeats the main workload {labels[0]!r}")
    return pd.concat([_labelled(run(q), label) for q, label in zip(rows, labels)], ignore_index=True)


def _labelled(frame: pd.DataFrame, workload: str) -> pd.DataFrame:
    """``frame`` with a ``workload`` column set to ``workload`` (inserted first where it has none)."""
    if "workload" in frame.columns:
        return frame.assign(workload=workload)
    frame.insert(0, "workload", workload)
    return frame


def workload_frames(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """``(workload, its rows)`` per workload of a :func:`compute_rows` frame, main workload first (one
    unlabelled row, ``("", df)``, for a frame without a ``workload`` column)."""
    if "workload" not in df.columns:
        return [("", df)]
    return [(w, df[df["workload"] == w]) for w in dict.fromkeys(df["workload"])]


def per_workload(df: pd.DataFrame, table: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
    """``table`` of each workload's rows, concatenated under a leading ``workload`` column (main first); a frame
    without a ``workload`` column is one table, unlabelled."""
    if "workload" not in df.columns:
        return table(df)
    return pd.concat([_labelled(table(sub), workload) for workload, sub in workload_frames(df)], ignore_index=True)


def row_title(workload: str, text: str = "") -> str:
    """A panel title of a workload's row: ``"<workload>: <text>"`` (just ``text`` for an unlabelled frame)."""
    return f"{workload}: {text}" if workload else text


def row_grid(df: pd.DataFrame, ncols: int, *, width: float, height: float, **subplots):
    """A figure with one row of ``ncols`` panels (``width`` x ``height`` inches) per workload of ``df``:
    ``(fig, [(workload, its rows, its axes), ...])``, main workload first."""
    import matplotlib.pyplot as plt

    frames = workload_frames(df)
    fig, axes = plt.subplots(len(frames), ncols, figsize=(width, height * len(frames)), squeeze=False, **subplots)
    return fig, [(w, frame, axes[i]) for i, (w, frame) in enumerate(frames)]


def main_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The main workload's rows of a :func:`compute_rows` frame."""
    return workload_frames(df)[0][1]


def on_main(fn: Callable[[pd.DataFrame], object]) -> Callable[[pd.DataFrame], object]:
    """``fn`` applied to the main workload's rows only (the paper's claims are judged on the main workload)."""

    def wrapped(df: pd.DataFrame):
        return fn(main_rows(df))

    wrapped.__name__ = getattr(fn, "__name__", "on_main")
    wrapped.__doc__ = f"On the main workload's rows: {fn.__doc__ or ''}".strip()
    return wrapped


def row_claims(df: pd.DataFrame, claims: Callable[[pd.DataFrame], list[dict]]) -> pd.DataFrame:
    """The rows of ``claims`` (same function, same rules) on every workload but the main one:
    ``workload, claim_id, verdict``, the interval columns and ``point, comparator`` (empty where the claim has
    none), ``reproduced, reason``.
    Not recorded in ``claims.csv``: the paper's claims are judged on the main workload."""
    out = [{"workload": workload, **row} for workload, frame in workload_frames(df)[1:] for row in claims(frame)]
    return pd.DataFrame(out, columns=["workload", "claim_id", "verdict", "gain_mean", "ci_low", "ci_high", "n_seeds",
                                      "point", "comparator", "reproduced", "reason"])
