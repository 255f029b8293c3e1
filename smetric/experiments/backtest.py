"""Quick-mode back-test: every figure's quick-preset CSVs and claim verdicts against committed expected files.

``tests/expected/quick/`` holds, per figure, the CSVs its quick preset writes (``<name>.csv`` and any
extra tables) and its claim rows (``figNN_claims.csv``). ``make test`` recomputes them
(``tests/test_figs_backtest.py``) and fails on any difference beyond :data:`RTOL` / :data:`ATOL`, so
a change that silently moves a number fails. After an intended change, refresh them and commit the
diff with the change::

    python -m smetric.experiments.backtest --write            # every figure
    python -m smetric.experiments.backtest --write fig06 fig07  # some
    python -m smetric.experiments.backtest                    # compare only, print the differences
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from ..context import run_context
from .figures import csv_frames, figure_id, figure_module, figure_modules, figure_name

__all__ = ["RTOL", "ATOL", "expected_dir", "quick_outputs", "compare", "check", "write_expected", "main"]

# Same inputs, same numbers (the pinned environment): the tolerance only absorbs float formatting and
# BLAS/platform round-off; any model change moves a number by far more.
RTOL = 1e-9
ATOL = 1e-12


def expected_dir() -> Path:
    """``<repo>/tests/expected/quick``."""
    return run_context().root / "tests" / "expected" / "quick"


def quick_outputs(module: ModuleType) -> dict[str, pd.DataFrame]:
    """The frames the figure's quick preset writes: its CSVs and (when it has claims) ``figNN_claims``."""
    df = module.compute(module.Params.quick(), jobs=1)
    out = dict(csv_frames(module, df))
    rows = module.claims(df)
    if rows:
        out[f"{figure_id(module)}_claims"] = pd.DataFrame(rows, columns=["claim_id", "reproduced", "verdict", "reason"])
    return out


def _as_written(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as read back from its CSV (the form the expected files are compared in)."""
    return pd.read_csv(io.StringIO(frame.to_csv(index=False)))


def compare(expected: pd.DataFrame, actual: pd.DataFrame, rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """Differences between two frames as written to CSV: columns, rows, numbers beyond the tolerance, text."""
    expected, actual = _as_written(expected), _as_written(actual)
    if list(expected.columns) != list(actual.columns):
        return [f"columns differ: expected {list(expected.columns)}, got {list(actual.columns)}"]
    if len(expected) != len(actual):
        return [f"{len(actual)} rows, expected {len(expected)}"]
    problems = []
    for col in expected.columns:
        e, a = expected[col], actual[col]
        if pd.api.types.is_numeric_dtype(e) and pd.api.types.is_numeric_dtype(a):
            ok = np.isclose(a.to_numpy(float), e.to_numpy(float), rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = (e.fillna("<NA>").astype(str) == a.fillna("<NA>").astype(str)).to_numpy()
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            problems.append(f"column {col!r}: {int((~ok).sum())} of {len(ok)} rows differ; first, row {i}: "
                            f"expected {e.iloc[i]!r}, got {a.iloc[i]!r}")
    return problems


def check(module: ModuleType, directory: Path | None = None) -> list[str]:
    """Recompute the figure's quick outputs and list every difference from the expected files."""
    directory = directory or expected_dir()
    outputs = quick_outputs(module)
    expected_files = {p.stem for p in directory.glob(f"{figure_id(module)}_*.csv")}
    problems = [f"{stem}.csv is expected but the figure no longer writes it"
                for stem in sorted(expected_files - set(outputs))]
    for stem, frame in outputs.items():
        path = directory / f"{stem}.csv"
        if not path.exists():
            problems.append(f"{path} is missing: run python -m smetric.experiments.backtest --write {stem[:5]}")
            continue
        problems += [f"{stem}.csv: {p}" for p in compare(pd.read_csv(path), frame)]
    return problems


def write_expected(module: ModuleType, directory: Path | None = None) -> list[Path]:
    """Recompute the figure's quick outputs and write them as the expected files (stale ones removed)."""
    directory = directory or expected_dir()
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(f"{figure_id(module)}_*.csv"):
        stale.unlink()
    frames = {directory / f"{stem}.csv": frame for stem, frame in quick_outputs(module).items()}
    for path, frame in frames.items():
        frame.to_csv(path, index=False)
    return list(frames)


def main(argv: list[str] | None = None) -> int:
    """Compare (default) or ``--write`` the expected quick-mode outputs of the figures named (default: all)."""
    parser = argparse.ArgumentParser(prog="python -m smetric.experiments.backtest", description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", metavar="FIG", help="figure prefixes, e.g. fig06 (default: all)")
    parser.add_argument("--write", action="store_true", help="refresh tests/expected/quick instead of comparing")
    args = parser.parse_args(argv)
    modules = [figure_module(f) for f in args.figures] if args.figures else list(figure_modules().values())
    failed = 0
    for module in modules:
        if args.write:
            for path in write_expected(module):
                print(f"wrote {path}")
            continue
        problems = check(module)
        failed += bool(problems)
        print(f"{figure_name(module)}: {'ok' if not problems else 'DIFFERS'}")
        for p in problems:
            print(f"  {p}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
