"""Shared plotting helpers: one house style, and saving every figure with the CSV behind it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .context import run_context

__all__ = ["figures_dir", "legend_below", "save_figure", "set_style"]


def figures_dir() -> Path:
    """Where figures go: the run context's figures folder (``<repo>/figures``; see :mod:`smetric.context`)."""
    return run_context().figures()


def set_style() -> None:
    """The seaborn style used by every figure."""
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)


def legend_below(fig, ax, bottom: float) -> None:
    """Move ``ax``'s legend to one row under the whole figure, leaving ``bottom`` (figure fraction) for it."""
    handles, labels = ax.get_legend_handles_labels()
    ax.get_legend().remove()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, bottom, 1, 1))


def save_figure(fig, data: pd.DataFrame, stem: str, outdir: str | Path | None = None) -> list[Path]:
    """Save ``fig`` as ``<stem>.png`` and ``<stem>.pdf`` and ``data`` as ``<stem>.csv``; return the paths."""
    out = Path(outdir) if outdir is not None else figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.pdf", out / f"{stem}.csv"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None})  # reproducible bytes
    data.to_csv(paths[2], index=False)
    return paths
