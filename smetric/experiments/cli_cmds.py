"""The ``reproduce`` subcommand."""

from __future__ import annotations

import argparse
import os
import sys


def register_reproduce(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric reproduce``."""
    parser.description = "Execute the figure notebooks with papermill and write figures/."
    parser.add_argument("--quick", action="store_true",
                        help="every notebook's quick preset (small sizes, same code paths); "
                             "figures go to build/figures-quick")
    parser.add_argument("--only", nargs="+", metavar="FIG", help="figure prefixes, e.g. fig06 fig07")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                        help="papermill parameter for every notebook that declares it (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once (default 1)")
    parser.add_argument("--sweep-jobs", type=int, metavar="N",
                        help="worker processes per sweep inside the notebooks (1 = serial, no dask; "
                             "default one per core)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the sweeps on an existing dask cluster (tcp://host:port)")


def run_reproduce(args: argparse.Namespace) -> int:
    """Run the notebooks, print the runtime table, exit 1 if any failed."""
    from .reproduce import parse_parameter, reproduce

    try:
        params = dict(parse_parameter(p) for p in args.param)
    except ValueError as exc:
        print(f"smetric reproduce: {exc}", file=sys.stderr)
        return 2
    from .sweep import sweep_environment

    try:
        os.environ.update(sweep_environment(jobs=args.sweep_jobs, scheduler=args.scheduler))
    except ValueError as exc:
        print(f"smetric reproduce: {exc}", file=sys.stderr)
        return 2
    try:
        table = reproduce(only=args.only, params=params, quick=args.quick, jobs=args.jobs)
    except ValueError as exc:
        print(f"smetric reproduce: {exc}", file=sys.stderr)
        return 2
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    failed = table[~table["ok"]]
    for _, row in failed.iterrows():
        print(f"FAILED {row['figure']}: {row['error']}", file=sys.stderr)
    return 1 if len(failed) else 0
