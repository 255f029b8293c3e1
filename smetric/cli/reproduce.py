"""The ``reproduce`` subcommand."""

from __future__ import annotations

import argparse
import os
import sys


def register_reproduce(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric reproduce``."""
    parser.description = ("Execute the figure notebooks with papermill. A plain full run refreshes the committed "
                          "record (figures/ and notebooks/); a run with -p overrides writes build/figures/ and "
                          "build/notebooks/ only, unless --update-record.")
    parser.add_argument("--quick", action="store_true",
                        help="every notebook's quick preset (small sizes, same code paths); "
                             "figures go to build/figures-quick")
    parser.add_argument("--only", nargs="+", metavar="FIG", help="figure prefixes, e.g. fig06 fig07 (default: all)")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                        help="papermill parameter for every notebook that declares it (repeatable); a name no "
                             "chosen notebook declares is an error. With -p the figures go to build/figures/")
    parser.add_argument("--update-record", action="store_true",
                        help="also write a run with -p overrides into figures/ and notebooks/ (the committed "
                             "record; a plain full run always does)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once (default 1)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--sweep-jobs", type=int, metavar="N",
                        help="worker processes per sweep inside the notebooks (1 = serial, no dask; "
                             "default one per core)")
    target.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the sweeps on an existing dask cluster (tcp://host:port), reached once "
                             "before any notebook runs")


def run_reproduce(args: argparse.Namespace) -> int:
    """Check the arguments, run the notebooks, print the runtime table; exit 1 if any failed, 2 on bad arguments."""
    from ..experiments.reproduce import parse_parameter, reproduce

    def fail(message: str) -> int:
        print(f"smetric reproduce: {message}", file=sys.stderr)
        return 2

    for flag, value in (("--jobs", args.jobs), ("--sweep-jobs", args.sweep_jobs)):
        if value is not None and value < 1:
            return fail(f"{flag} must be a positive integer, got {value}")
    try:
        params = dict(parse_parameter(p) for p in args.param)
    except ValueError as exc:
        return fail(f"-p: {exc}")
    from ..experiments.sweep import sweep_environment

    os.environ.update(sweep_environment(jobs=args.sweep_jobs, scheduler=args.scheduler))
    try:
        table = reproduce(only=args.only, params=params, quick=args.quick, jobs=args.jobs,
                          update_record=args.update_record)
    except ValueError as exc:
        return fail(str(exc))
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    failed = table[~table["ok"]]
    for _, row in failed.iterrows():
        print(f"FAILED {row['figure']}: {row['error']}", file=sys.stderr)
    return 1 if len(failed) else 0
