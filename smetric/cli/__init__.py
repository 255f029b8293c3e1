"""The ``smetric`` command line: reproduce, simulate, validate, whatif, calibrate, policies, characterize, synth, perf.

Each subcommand has a module of this package (``register_<name>`` adds its arguments, ``run_<name>`` runs it;
``characterize`` and ``synth`` share :mod:`smetric.cli.workload`, ``calibrate`` lives with the fit in
:mod:`smetric.realcluster.calibrate`) and is listed in ``_COMMANDS``. Only the chosen subcommand's
module is imported, so ``smetric simulate`` loads the engine but not the figure or synthetic-workload code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..optional_imports import NUMBA_EXTRAS, hidden

# name -> (module holding register_<name> and run_<name>, one-line help)
_COMMANDS = {
    "reproduce": ("smetric.cli.reproduce",
                  "execute the figure notebooks (a plain full run refreshes figures/ and notebooks/)"),
    "characterize": ("smetric.cli.workload", "reuse, locality and session statistics of a trace"),
    "synth": ("smetric.cli.workload", "generate synthetic agent or chat sessions as a trace file"),
    "perf": ("smetric.cli.perf", "predicted time of one engine iteration"),
    "policies": ("smetric.cli.policies", "list the routing policies and their parameters"),
    "simulate": ("smetric.cli.simulate", "replay a trace on a simulated cluster with a routing policy"),
    "validate": ("smetric.cli.validate", "replay published real-cluster runs, score the errors"),
    "whatif": ("smetric.cli.whatif", "replay published runs with one thing changed (data/whatifs/whatifs.yaml)"),
    "calibrate": ("smetric.realcluster.calibrate",
                  "fit the parameters without a public source on the training runs (data/calibration/)"),
}

# Commands that run without numba's optional extras (coverage, cffi, SciPy's BLAS: smetric.optional_imports),
# for their start-up time; their code imports none of them.
_LEAN = ("simulate",)


def _command(name: str, what: str):
    """``register_<name>`` or ``run_<name>`` of a subcommand (imports its module)."""
    return getattr(importlib.import_module(_COMMANDS[name][0]), f"{what}_{name}")


def _build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser, with the arguments of the subcommand named in ``argv`` (the others are listed only)."""
    parser = argparse.ArgumentParser(prog="smetric", description=__doc__.splitlines()[0].replace("``", ""))
    sub = parser.add_subparsers(dest="command", required=True)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (_, summary) in _COMMANDS.items():
        subparser = sub.add_parser(name, help=summary)
        if name == chosen:
            _command(name, "register")(subparser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``smetric`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    with hidden(NUMBA_EXTRAS if chosen in _LEAN else ()):
        args = _build_parser(argv).parse_args(argv)
        try:
            return int(_command(args.command, "run")(args) or 0)
        except BrokenPipeError:  # output piped into `head` and friends: stop quietly
            sys.stderr.close()
            return 0

