"""The ``whatif`` subcommand: replay the declared what-ifs (``data/whatifs/whatifs.yaml``) and print or keep them."""

from __future__ import annotations

import argparse
import sys

#: Where ``--write`` keeps the what-ifs' error frame and targets (the record ``docs/validation.md`` renders).
OUTPUTS = ("whatifs.csv", "whatifs_targets.csv")


def register_whatif(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric whatif``."""
    parser.description = ("Replay published experiments with one thing changed, as declared in "
                          "data/whatifs/whatifs.yaml (the evidence behind data/validation/misses.csv); print each "
                          "what-if's targets and shown metrics.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="what-ifs to run (default: all)")
    parser.add_argument("--file", metavar="YAML", help="the declarations (default data/whatifs/whatifs.yaml)")
    parser.add_argument("--list", action="store_true", help="list the declared what-ifs and their questions")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    parser.add_argument("--quick", action="store_true",
                        help="every stage scaled to 10 %% (tests; not comparable with the published numbers)")
    parser.add_argument("--write", action="store_true",
                        help="keep the full-size results in figures/whatifs.csv and figures/whatifs_targets.csv "
                             "(needs every what-if, no --quick)")


def run_whatif(args: argparse.Namespace) -> int:
    """Check the declarations and the changed specs first (exit 2 with a one-line reason), then replay."""
    from ..context import run_context
    from ..realcluster.spec import SpecError
    from ..realcluster.whatifs import load_whatifs, run_whatifs, whatif_cases, whatif_lines

    if args.jobs < 1:
        print(f"smetric whatif: --jobs must be >= 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.write and (args.names or args.quick or args.file):
        print("smetric whatif: --write keeps the full record: every declared what-if, without --quick or --file",
              file=sys.stderr)
        return 2
    try:
        whatifs = load_whatifs(args.file)
        known = {w.name for w in whatifs}
        unknown = [n for n in args.names if n not in known]
        if unknown:
            raise SpecError(f"unknown what-if {unknown[0]!r}; see smetric whatif --list")
        chosen = [w for w in whatifs if not args.names or w.name in args.names]
        if args.list:
            for w in chosen:
                print(f"{w.name}: {w.question}")
            return 0
        whatif_cases(chosen)  # every changed spec checked before anything runs
    except SpecError as exc:
        print(f"smetric whatif: {exc}", file=sys.stderr)
        return 2
    errors, targets = run_whatifs(chosen, quick=args.quick, jobs=args.jobs, progress=sys.stderr.isatty())
    if args.write:
        folder = run_context().root / "figures"  # the committed record, whatever SMETRIC_QUICK says
        for name, frame in zip(OUTPUTS, (errors, targets)):
            frame.to_csv(folder / name, index=False)
    print(whatif_lines(chosen, errors, targets), end="")
    return 0
