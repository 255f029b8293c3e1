"""Paper claims vs reproduced values: each figure records its verdicts, ``collect_claims`` joins them.

``data/paper_claims.csv`` lists the paper's quantitative claims (id, figure, value, wording).
A figure notebook calls :func:`record_claims` with what it measured; the rows land in
``figures/<figure>_claims.csv``. :func:`collect_claims` joins every such file with the paper's
table into ``figures/claims.csv`` — the table the README shows. The claims are judged on each figure's
main workload; the same rules applied to the real agent trace of a figure's second row
(``<figure name>_second_row_claims.csv``, :mod:`smetric.experiments.workload_rows`) are joined by
:func:`collect_row_claims` into ``figures/claims_second_row.csv``.

A **comparative** claim (:data:`COMPARATIVE`: SMETRIC against baselines, C8, C9, C12-C17) is
recorded with its paired multi-seed interval (``gain_mean, ci_low, ci_high, n_seeds``, from
:func:`smetric.experiments.verdicts.claim_columns`), and its verdict must be the one the stated rules
give that interval (:func:`smetric.experiments.verdicts.row_verdict`): :func:`record_claims` refuses a
hand-written one. The descriptive claims about the workload (C1-C5) and the sticky imbalance (C10)
are judged against the paper's band (reproduced / direction only / not reproduced).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..context import run_context
from ..plotting import figures_dir
from .verdicts import UNDETERMINED, VERDICT_ORDER, PaperValue, parse_paper_value, row_verdict

__all__ = ["VERDICTS", "COMPARATIVE", "INTERVAL_COLUMNS", "paper_claims", "paper_value", "record_claims",
           "collect_claims", "collect_row_claims"]

#: Verdicts a claims row may carry: the interval rules' (comparative claims) and the band rules' (the rest).
VERDICTS = VERDICT_ORDER + (UNDETERMINED, "not reproduced")
#: Claim-id prefixes of the comparative claims: recorded with an interval, verdict computed by the rules.
COMPARATIVE = ("C8_", "C9_", "C12_", "C13_", "C14_", "C15_", "C16_", "C17_")
#: The interval columns of a comparative claim's row.
INTERVAL_COLUMNS = ("gain_mean", "ci_low", "ci_high", "n_seeds")
_COLUMNS = ["claim_id", "reproduced", "verdict", "reason", *INTERVAL_COLUMNS]


def paper_claims() -> pd.DataFrame:
    """The paper's claims (``data/paper_claims.csv``), indexed by ``claim_id``."""
    return pd.read_csv(run_context().data_dir / "paper_claims.csv").set_index("claim_id")


def paper_value(claim_id: str) -> PaperValue:
    """The paper's value of ``claim_id`` as the verdict rules judge it
    (:func:`~smetric.experiments.verdicts.parse_paper_value`)."""
    row = paper_claims().loc[claim_id]
    return parse_paper_value(row["paper_value"], row["unit"])


def record_claims(figure: str, rows: list[dict], outdir: str | Path | None = None) -> pd.DataFrame:
    """Write one figure's verdicts; each row needs ``claim_id``, ``reproduced`` (text), ``verdict``, ``reason``.

    A comparative claim's row also carries :data:`INTERVAL_COLUMNS` and its verdict must equal the
    rules' (:func:`~smetric.experiments.verdicts.row_verdict`). Unknown claim ids, verdicts outside
    :data:`VERDICTS`, a comparative row without its interval and a verdict the rules do not give raise
    ``ValueError``.
    """
    paper = paper_claims()
    table = pd.DataFrame(rows, columns=_COLUMNS)
    bad_ids = sorted(set(table["claim_id"]) - set(paper.index))
    if bad_ids:
        raise ValueError(f"unknown claim ids {bad_ids}; see data/paper_claims.csv")
    bad = sorted(set(table["verdict"]) - set(VERDICTS))
    if bad:
        raise ValueError(f"verdicts must be one of {VERDICTS}, got {bad}")
    for _, row in table.iterrows():
        if not row["claim_id"].startswith(COMPARATIVE):
            continue
        if row[list(INTERVAL_COLUMNS)].isna().any():
            raise ValueError(f"{row['claim_id']} is comparative: record it with {INTERVAL_COLUMNS} "
                             "(smetric.experiments.verdicts.claim_columns)")
        ruled = row_verdict(pd.concat([row, paper.loc[row["claim_id"], ["paper_value", "unit"]]]))
        if row["verdict"] != ruled:
            raise ValueError(f"{row['claim_id']}: verdict {row['verdict']!r}, but the rules give {ruled!r} "
                             "for its interval; a verdict is computed, never written by hand")
    table.insert(0, "figure", figure)
    out = Path(outdir) if outdir is not None else figures_dir()
    table.to_csv(out / f"{figure}_claims.csv", index=False)
    return table


def collect_claims(outdir: str | Path | None = None) -> pd.DataFrame:
    """Join every ``figNN_claims.csv`` with the paper's table into ``claims.csv`` (unchecked claims stay listed)."""
    out = Path(outdir) if outdir is not None else figures_dir()
    parts = [pd.read_csv(p) for p in sorted(out.glob("fig[0-9][0-9]_claims.csv"))]
    measured = (pd.concat(parts, ignore_index=True) if parts
                else pd.DataFrame(columns=["figure", *_COLUMNS]))
    paper = paper_claims().reset_index()[["claim_id", "figure", "paper_value", "unit", "wording"]]
    table = paper.merge(measured.drop(columns="figure"), on="claim_id", how="left")
    table["verdict"] = table["verdict"].fillna("not checked")
    table.to_csv(out / "claims.csv", index=False)
    return table


def collect_row_claims(outdir: str | Path | None = None) -> pd.DataFrame:
    """Join every figure's ``*_second_row_claims.csv`` (the claims' rules on its second workload row) into
    ``claims_second_row.csv``, with the figure and the paper's value; empty when no figure has one."""
    out = Path(outdir) if outdir is not None else figures_dir()
    parts = [pd.read_csv(p).assign(figure=p.name.split("_", 1)[0])
             for p in sorted(out.glob("*_second_row_claims.csv"))]
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    paper = paper_claims()["paper_value"]
    table.insert(0, "figure", table.pop("figure"))
    table.insert(3, "paper_value", table["claim_id"].map(paper))
    table.to_csv(out / "claims_second_row.csv", index=False)
    return table
