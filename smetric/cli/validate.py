"""The ``validate`` subcommand: replay published real-cluster experiments and print the model's errors."""

from __future__ import annotations

import argparse
import json
import sys


def register_validate(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric validate``."""
    parser.description = ("Replay published real-cluster experiments (YAML specs, data/validation/) on the model; "
                          "print measured, predicted and relative error per experiment, router and metric.")
    parser.add_argument("specs", nargs="*", metavar="SPEC", help="spec files (YAML, the schema of data/validation/)")
    parser.add_argument("--all", action="store_true", help="every spec of data/validation/ (default when none given)")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON list of {experiment, router, metric, measured, predicted, rel_error}")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="worker processes (default 1; specs of one ladder share a worker)")
    parser.add_argument("--quick", action="store_true",
                        help="every stage scaled to 10 %% of its duration/requests (tests; not comparable with the "
                             "published numbers)")
    parser.add_argument("--engine", metavar="ROW[:FIELD=VALUE,...]",
                        help="replay every spec with this serving-stack row (data/perf/serving_stack.json) instead "
                             "of the one its cluster.engine selects, fields optionally replaced (what-if and "
                             "one-mechanism-at-a-time studies, e.g. legacy:first_token_lag_iterations=1)")
    parser.add_argument("--out", metavar="DIR",
                        help="also write errors.csv (every predicted metric), ratios.csv, rankings.csv, targets.csv")


def run_validate(args: argparse.Namespace) -> int:
    """Check every spec first (exit 2 naming file, key and reason), then replay and print."""
    import pandas as pd

    from ..realcluster import scoring
    from ..realcluster.runner import predict_all
    from ..realcluster.spec import SpecError, load_specs, spec_paths

    if args.jobs < 1:
        print(f"smetric validate: --jobs must be >= 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.engine is not None:
        from ..cluster.serving_stack import parse

        try:
            parse(args.engine)
        except ValueError as exc:
            print(f"smetric validate: --engine: {exc}", file=sys.stderr)
            return 2
    paths = list(args.specs)
    if args.all or not paths:
        paths += [str(p) for p in spec_paths()]
    try:
        specs = load_specs(list(dict.fromkeys(paths)))
    except SpecError as exc:
        print(f"smetric validate: {exc}", file=sys.stderr)
        return 2
    predicted = predict_all(specs, quick=args.quick, jobs=args.jobs, progress=sys.stderr.isatty(),
                            engine=args.engine)
    frame = scoring.error_frame(specs, predicted)
    errors = frame[frame["measured"].notna()][["experiment", "router", "metric", "measured", "predicted", "rel_error"]]
    ratios, rankings, targets = scoring.ratio_table(frame), scoring.ranking_table(frame), scoring.targets(frame)
    if args.out:
        from pathlib import Path

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, df in (("errors", frame), ("ratios", ratios), ("rankings", rankings), ("targets", targets)):
            df.to_csv(out / f"{name}.csv", index=False)
    if args.json:
        print(json.dumps(errors.to_dict(orient="records"), indent=1))
        return 0
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 90):
        print(errors.assign(rel_error=errors["rel_error"].map(lambda x: f"{x:+.1%}")).to_string(
            index=False, float_format=lambda x: f"{x:.4g}"))
        for table in (ratios, rankings, targets):
            if not table.empty:
                print()
                print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    return 0
