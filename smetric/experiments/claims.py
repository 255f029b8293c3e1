"""Paper claims vs reproduced values: each figure records its verdicts, ``collect_claims`` joins them, tidy.

``data/paper_claims.csv`` lists the paper's quantitative claims (id, figure, value, wording, and for a
descriptive claim the band that counts as reproduced with its source). A figure notebook calls
:func:`record_claims` with what it measured; the rows land in ``figures/<figure>_claims.csv`` (one row per
claim, a multi-point claim's numbers ``/``-joined). :func:`collect_claims` joins every such file with the
paper's table into the **tidy** ``figures/claims.csv``: one row per claim point (:data:`TIDY_COLUMNS`,
numeric columns numeric; :func:`~smetric.verdicts.point_table`). The README's verdict table, one row
per claim, is generated from it (:func:`summary_table`, :func:`render_readme`, ``python -m smetric.experiments.claims
--readme``), and so are the per-point tables of ``docs/results.md`` (:func:`readme_tables`). The claims are
judged on each figure's main workload; the same rules applied to the real agent trace of a figure's second
row (``<figure name>_second_row_claims.csv``, :mod:`smetric.experiments.workload_rows`) are joined by
:func:`collect_row_claims` into ``figures/claims_second_row.csv`` (tidy alike).

A **comparative** claim (:data:`COMPARATIVE`: SMETRIC against baselines, C8, C9, C12-C18) is recorded with
its paired multi-seed interval per point (``gain_mean, ci_low, ci_high, n_seeds``, ``point``,
``comparator``, from :func:`smetric.verdicts.claim_columns`), and its verdict must be the one the
stated rules give (:func:`smetric.verdicts.row_verdict`): :func:`record_claims` refuses a
hand-written one. The descriptive claims about the workload (C1-C5) and the sticky imbalance (C10) are judged
by :func:`band_verdict` against the band of ``data/paper_claims.csv`` (``band_low``, ``band_high``,
``band_source``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from ..context import run_context
from ..plotting import figures_dir
from ..verdicts import (
    UNDETERMINED,
    VERDICT_ORDER,
    PaperValue,
    combine_verdicts,
    parse_paper_value,
    percent,
    row_points,
    row_verdict,
)
from .figures import csv_frames, figure_id, figure_modules
from .readme_blocks import rewrite_block

__all__ = ["VERDICTS", "COMPARATIVE", "INTERVAL_COLUMNS", "TIDY_COLUMNS", "README_BEGIN", "README_END",
           "paper_claims", "paper_value", "claim_band", "band_verdict", "record_claims", "tidy_claims",
           "collect_claims", "collect_row_claims", "readme_tables", "summary_table", "render_readme",
           "recompute_claims"]

#: Verdicts a claims row may carry: the interval rules' (comparative claims) and the band rules' (the rest).
VERDICTS = VERDICT_ORDER + (UNDETERMINED, "not reproduced")
#: Claim-id prefixes of the comparative claims: recorded with an interval, verdict computed by the rules.
COMPARATIVE = ("C8_", "C9_", "C12_", "C13_", "C14_", "C15_", "C16_", "C17_", "C18_")
#: The interval columns of a comparative claim's row.
INTERVAL_COLUMNS = ("gain_mean", "ci_low", "ci_high", "n_seeds")
_COLUMNS = ["claim_id", "reproduced", "verdict", "reason", "point", "comparator", *INTERVAL_COLUMNS]
#: The columns of the tidy ``claims.csv``, one row per claim point.
TIDY_COLUMNS = ("claim_id", "figure", "point", "comparator", "paper_value", "unit", "rule", "paper_low",
                "paper_high", "gain_mean", "ci_low", "ci_high", "p_value", "p_adjusted", "mde", "paper_detectable",
                "n_seeds", "verdict", "verdict_uncorrected", "claim_verdict", "band_low", "band_high",
                "band_source", "reproduced", "reason", "wording")
#: The marker comments around the generated result tables in the README.
README_BEGIN, README_END = "<!-- claims:begin (generated from figures/claims.csv) -->", "<!-- claims:end -->"


def paper_claims() -> pd.DataFrame:
    """The paper's claims (``data/paper_claims.csv``), indexed by ``claim_id``."""
    return pd.read_csv(run_context().data_dir / "paper_claims.csv").set_index("claim_id")


def paper_value(claim_id: str) -> PaperValue:
    """The paper's value of ``claim_id`` as the verdict rules judge it
    (:func:`~smetric.verdicts.parse_paper_value`)."""
    row = paper_claims().loc[claim_id]
    return parse_paper_value(row["paper_value"], row["unit"])


def claim_band(claim_id: str) -> tuple[float, float, str]:
    """A descriptive claim's band ``(low, high, source)`` from ``data/paper_claims.csv``; raises when it has none."""
    row = paper_claims().loc[claim_id]
    if pd.isna(row.get("band_low")) or pd.isna(row.get("band_high")):
        raise ValueError(f"{claim_id} has no band in data/paper_claims.csv (band_low, band_high, band_source)")
    return float(row["band_low"]), float(row["band_high"]), str(row["band_source"])


def band_verdict(values, low: float, high: float) -> str:
    """Descriptive band rule over the values that decide a claim (e.g. the public traces of one kind):
    reproduced when every value lies in ``[low, high]``, not reproduced when none does, else inconclusive."""
    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if v.size == 0 or not np.isfinite(v).all() or not low <= high:
        raise ValueError(f"band_verdict needs finite values and low <= high, got {v.tolist()} in [{low}, {high}]")
    inside = (v >= low) & (v <= high)
    return "reproduced" if inside.all() else "not reproduced" if not inside.any() else "inconclusive"


def record_claims(figure: str, rows: list[dict], outdir: str | Path | None = None) -> pd.DataFrame:
    """Write one figure's verdicts; each row needs ``claim_id``, ``reproduced`` (text), ``verdict``, ``reason``.

    A comparative claim's row also carries :data:`INTERVAL_COLUMNS` (and ``point``/``comparator``) and its
    verdict must equal the rules' (:func:`~smetric.verdicts.row_verdict`). Unknown claim ids,
    verdicts outside :data:`VERDICTS`, a comparative row without its interval and a verdict the rules do not
    give raise ``ValueError``.
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
                             "(smetric.verdicts.claim_columns)")
        ruled = row_verdict(pd.concat([row, paper.loc[row["claim_id"], ["paper_value", "unit"]]]))
        if row["verdict"] != ruled:
            raise ValueError(f"{row['claim_id']}: verdict {row['verdict']!r}, but the rules give {ruled!r} "
                             "for its interval; a verdict is computed, never written by hand")
    table.insert(0, "figure", figure)
    out = Path(outdir) if outdir is not None else figures_dir()
    table.to_csv(out / f"{figure}_claims.csv", index=False)
    return table


def tidy_claims(measured: pd.DataFrame) -> pd.DataFrame:
    """Figure-level claim rows (joined with the paper's ``paper_value, unit``) -> one row per claim point:
    comparative rows exploded by :func:`~smetric.verdicts.row_points` (p-values, Holm within the
    claim, minimal detectable effect, corrected and uncorrected verdicts), the others kept as one row.
    ``claim_verdict`` is the claim's verdict (the weakest point's). Other columns are carried along."""
    parts = []
    for _, row in measured.iterrows():
        has = all(c in row and pd.notna(row[c]) and str(row[c]) != "" for c in INTERVAL_COLUMNS)
        if has and str(row["claim_id"]).startswith(COMPARATIVE):
            pts = row_points(row)
            pts = pts.assign(**row.drop(labels=[c for c in pts.columns if c in row.index]).to_dict())
            pts["claim_verdict"] = combine_verdicts(list(pts["verdict"]))
        else:
            pts = pd.DataFrame([row.to_dict()])
            pts["claim_verdict"] = row.get("verdict")
            pts["verdict_uncorrected"] = row.get("verdict")
        parts.append(pts)
    if not parts:
        return pd.DataFrame(columns=list(TIDY_COLUMNS))
    table = pd.concat(parts, ignore_index=True)
    for col in ("gain_mean", "ci_low", "ci_high", "p_value", "p_adjusted", "mde", "paper_low", "paper_high",
                "n_seeds"):
        if col in table.columns:
            table[col] = pd.to_numeric(table[col])
    if "n_seeds" in table.columns:
        table["n_seeds"] = table["n_seeds"].round().astype("Int64")
    front = [c for c in TIDY_COLUMNS if c in table.columns]
    return table[front + [c for c in table.columns if c not in front]]


def collect_claims(outdir: str | Path | None = None) -> pd.DataFrame:
    """Join every ``figNN_claims.csv`` with the paper's table into the tidy ``claims.csv`` (unchecked claims
    stay listed, verdict ``not checked``). Only the paper's claims are joined, with the columns
    :func:`record_claims` writes: a figure's own claims (fig18's scale rules) stay in its file."""
    out = Path(outdir) if outdir is not None else figures_dir()
    frames = (pd.read_csv(p, dtype={"point": str, "comparator": str})
              for p in sorted(out.glob("fig[0-9][0-9]_claims.csv")))
    kept = (frame[frame["claim_id"].isin(paper_claims().index)] for frame in frames)
    parts = [frame[["figure", *_COLUMNS]] for frame in kept if len(frame)]  # fig12's/fig18's own rules stay out
    measured = (pd.concat(parts, ignore_index=True) if parts
                else pd.DataFrame(columns=["figure", *_COLUMNS]))
    paper = paper_claims().reset_index()
    cols = [c for c in ("claim_id", "figure", "paper_value", "unit", "wording", "band_low", "band_high",
                        "band_source") if c in paper.columns]
    table = paper[cols].merge(measured.drop(columns="figure"), on="claim_id", how="left")
    table["verdict"] = table["verdict"].fillna("not checked")
    table = tidy_claims(table)
    table.to_csv(out / "claims.csv", index=False)
    return table


def collect_row_claims(outdir: str | Path | None = None) -> pd.DataFrame:
    """Join every figure's ``*_second_row_claims.csv`` (the claims' rules on its second workload row) into the
    tidy ``claims_second_row.csv``, with the figure and the paper's value; empty when no figure has one."""
    out = Path(outdir) if outdir is not None else figures_dir()
    parts = [pd.read_csv(p, dtype={"point": str, "comparator": str}).assign(figure=p.name.split("_", 1)[0])
             for p in sorted(out.glob("*_second_row_claims.csv"))]
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    paper = paper_claims()
    table.insert(0, "figure", table.pop("figure"))
    table.insert(3, "paper_value", table["claim_id"].map(paper["paper_value"]))
    table.insert(4, "unit", table["claim_id"].map(paper["unit"]))
    table = tidy_claims(table)
    front = ["figure", "workload", "claim_id", "paper_value"]
    table = table[front + [c for c in table.columns if c not in front]]
    table.to_csv(out / "claims_second_row.csv", index=False)
    return table


# ------------------------------------------------------------------------------------------ README tables
def _bold(v: str) -> str:
    return f"**{v}**" if v == "reproduced" else v


def _paper_text(r: pd.Series) -> str:
    """The paper's value of one point as the rule reads it."""
    lo, hi = r["paper_low"], r["paper_high"]
    if r["rule"] == "positive" or pd.isna(lo):
        return "> 0"
    if r["rule"] == "equivalence":
        return f"within [{100 * lo:+g} %, {100 * hi:+g} %]"
    text = f"{100 * lo:+.3g} %" if lo == hi else f"{100 * lo:+.3g}..{100 * hi:+.3g} %"
    return f"{'>=' if r['rule'] == 'lower bound' else '<='} {text}" if r["rule"].endswith("bound") else text


def _comparative_table(table: pd.DataFrame) -> list[str]:
    """The comparative points of ``table`` (those with an interval) as markdown rows."""
    table = table[table["claim_id"].str.startswith(COMPARATIVE) & table["ci_low"].notna()]
    lines = ["| claim | point | fig | paper | vs | gain % [95 % CI] (n) | p (Holm) | MDE % | paper detectable | "
             "verdict (uncorrected) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        paper = _paper_text(r)
        flag = r.get("paper_detectable")
        detectable = "—" if pd.isna(flag) else "yes" if str(flag) == "True" else "**no**"
        ci = f"{percent(r['gain_mean'])} [{percent(r['ci_low'])}, {percent(r['ci_high'])}] ({int(r['n_seeds'])})"
        corrected = "" if r["verdict"] == r["verdict_uncorrected"] else f" ({r['verdict_uncorrected']})"
        lines.append(f"| {r['claim_id']} | {r['point'] if pd.notna(r['point']) else ''} | {r['figure'][3:]} | "
                     f"{paper} | {r['comparator'] if pd.notna(r['comparator']) else ''} | {ci} | "
                     f"{r['p_adjusted']:.3f} | {100 * r['mde']:.1f} | {detectable} | "
                     f"{_bold(r['verdict'])}{corrected} |")
    return lines


def readme_tables(claims: pd.DataFrame, second_row: pd.DataFrame | None = None) -> str:
    """The README's generated result tables (markdown) from the tidy ``claims.csv`` (and the second-row
    table): the comparative points with their interval, Holm-adjusted p, minimal detectable effect and
    corrected verdict; the descriptive claims with their band and its source."""
    desc = claims[~(claims["claim_id"].str.startswith(COMPARATIVE) & claims["ci_low"].notna())]
    out = ["Comparative claims, one row per point (gain % of SMETRIC, or of the router the claim names, "
           "over the comparator `vs`, paired 95 % t-interval over the seeds; p Holm-adjusted within the claim; "
           "MDE = the gain detectable with 80 % power at two-sided 5 %; paper detectable: the paper's gain is at "
           "least the MDE, — for bounds and conditions, whose rule tests no paper gain):", "",
           *_comparative_table(claims), "",
           "Descriptive claims (band rule; the band and its source in `data/paper_claims.csv`):", "",
           "| claim | fig | paper | band | measured | verdict |", "|---|---|---|---|---|---|"]
    for _, r in desc.iterrows():
        band = "" if pd.isna(r.get("band_low")) else f"[{r['band_low']:g}, {r['band_high']:g}] ({r['band_source']})"
        measured = "" if pd.isna(r.get("reproduced")) else str(r["reproduced"])
        out.append(f"| {r['claim_id']} | {r['figure'][3:]} | {r['paper_value']} | {band} | {measured} | "
                   f"{_bold(r['verdict'])} |")
    if second_row is not None and not second_row.empty:
        labelled = second_row["claim_id"] + " (" + second_row["workload"] + ")"
        out += ["", "The same rules on the real agent trace (second rows, `figures/claims_second_row.csv`; the "
                "workload in the claim column):", "", *_comparative_table(second_row.assign(claim_id=labelled))]
    return "\n".join(out) + "\n"


def _measured_text(points: pd.DataFrame) -> str:
    """What a claim's points measured, in a few words: the gain and interval of one point, the range of the gains
    of several, a descriptive claim's band."""
    first = points.iloc[0]
    if pd.isna(first["ci_low"]):
        return "" if pd.isna(first.get("band_low")) else f"band [{first['band_low']:g}, {first['band_high']:g}]"
    vs = ", ".join(points["comparator"].dropna().astype(str).unique())
    if len(points) == 1:
        return f"{percent(first['gain_mean'])} % [{percent(first['ci_low'])}, {percent(first['ci_high'])}] vs {vs}"
    return (f"{len(points)} points, {percent(points['gain_mean'].min())} … {percent(points['gain_mean'].max())} % "
            f"vs {vs}")


def summary_table(claims: pd.DataFrame) -> str:
    """The README's verdict table (markdown), one row per claim of the tidy ``claims.csv``: the figure, the
    paper's wording and value, what was measured (:func:`_measured_text`) and the claim's verdict (its weakest
    point's)."""
    lines = ["| claim | fig | the paper says | paper | measured (gain % [95 % CI]) | verdict |",
             "|---|---|---|---|---|---|"]
    for claim_id, points in claims.groupby("claim_id", sort=False):
        r = points.iloc[0]
        lines.append(f"| {claim_id} | {r['figure'][3:]} | {str(r['wording']).replace('|', '/')} | {r['paper_value']} "
                     f"| {_measured_text(points)} | {_bold(r['claim_verdict'])} |")
    return "\n".join(lines) + "\n"


def render_readme(readme: str | Path | None = None, figures: str | Path | None = None) -> bool:
    """Rewrite the README's block between :data:`README_BEGIN` and :data:`README_END` with :func:`summary_table`
    of ``figures/claims.csv``; returns True when the file changed."""
    ctx = run_context()
    path = Path(readme) if readme is not None else ctx.root / "README.md"
    out = Path(figures) if figures is not None else figures_dir()
    return rewrite_block(path, README_BEGIN, README_END, summary_table(pd.read_csv(out / "claims.csv")))


def recompute_claims(figures: str | Path | None = None) -> list[str]:
    """Re-derive every figure's claims from its committed CSV (``figures/<name>.csv``, per-seed rows) with the
    current rules, rewrite the figures' claims files (second rows included) and the joined tables; returns the
    names of the figures recomputed. Nothing is simulated."""
    out = Path(figures) if figures is not None else figures_dir()
    done = []
    for name, module in figure_modules().items():
        path = out / f"{name}.csv"
        if not path.exists():
            continue
        df = pd.read_csv(path)
        rows = module.claims(df)
        if not rows:
            continue
        record_claims(figure_id(module), rows, outdir=out)
        for stem, frame in csv_frames(module, df).items():
            if stem != name:  # the derived tables (second-row claims, gains, screening), never the data itself
                frame.to_csv(out / f"{stem}.csv", index=False)
        done.append(name)
    collect_claims(out)
    collect_row_claims(out)
    return done


def main(argv: list[str] | None = None) -> int:
    """``python -m smetric.experiments.claims [--recompute] [--readme]``."""
    ap = argparse.ArgumentParser(prog="python -m smetric.experiments.claims", description=main.__doc__)
    ap.add_argument("--recompute", action="store_true",
                    help="re-derive every figure's claims from its committed CSV, then rewrite claims.csv")
    ap.add_argument("--readme", action="store_true", help="rewrite the README's generated verdict table")
    args = ap.parse_args(argv)
    if args.recompute:
        print("recomputed:", ", ".join(recompute_claims()))
    if args.readme:
        print("README", "rewritten" if render_readme() else "unchanged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
