"""Paper claims vs reproduced values: each figure records its verdicts, ``collect_claims`` joins them.

``data/paper_claims.csv`` lists the paper's quantitative claims (id, figure, value, wording).
A figure notebook calls :func:`record_claims` with what it measured; the rows land in
``figures/<figure>_claims.csv``. :func:`collect_claims` joins every such file with the paper's
table into ``figures/claims.csv`` — the table the README shows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..context import run_context
from ..plotting import figures_dir

__all__ = ["VERDICTS", "paper_claims", "record_claims", "collect_claims"]

VERDICTS = ("reproduced", "direction only", "not reproduced")


def paper_claims() -> pd.DataFrame:
    """The paper's claims (``data/paper_claims.csv``), indexed by ``claim_id``."""
    return pd.read_csv(run_context().data_dir / "paper_claims.csv").set_index("claim_id")


def record_claims(figure: str, rows: list[dict], outdir: str | Path | None = None) -> pd.DataFrame:
    """Write one figure's verdicts; each row needs ``claim_id``, ``reproduced`` (text), ``verdict``, ``reason``.

    Unknown claim ids and verdicts outside :data:`VERDICTS` raise ``ValueError``.
    """
    known = paper_claims().index
    table = pd.DataFrame(rows, columns=["claim_id", "reproduced", "verdict", "reason"])
    bad_ids = sorted(set(table["claim_id"]) - set(known))
    if bad_ids:
        raise ValueError(f"unknown claim ids {bad_ids}; see data/paper_claims.csv")
    bad = sorted(set(table["verdict"]) - set(VERDICTS))
    if bad:
        raise ValueError(f"verdicts must be one of {VERDICTS}, got {bad}")
    table.insert(0, "figure", figure)
    out = Path(outdir) if outdir is not None else figures_dir()
    table.to_csv(out / f"{figure}_claims.csv", index=False)
    return table


def collect_claims(outdir: str | Path | None = None) -> pd.DataFrame:
    """Join every ``*_claims.csv`` with the paper's table into ``claims.csv`` (claims not yet checked stay listed)."""
    out = Path(outdir) if outdir is not None else figures_dir()
    parts = [pd.read_csv(p) for p in sorted(out.glob("*_claims.csv"))]
    measured = (pd.concat(parts, ignore_index=True) if parts
                else pd.DataFrame(columns=["figure", "claim_id", "reproduced", "verdict", "reason"]))
    paper = paper_claims().reset_index()[["claim_id", "figure", "paper_value", "unit", "wording"]]
    table = paper.merge(measured.drop(columns="figure"), on="claim_id", how="left")
    table["verdict"] = table["verdict"].fillna("not checked")
    table.to_csv(out / "claims.csv", index=False)
    return table
