"""The ``smetric`` command line: reproduce, simulate, policies, characterize, synth, perf.

Each subcommand lives in its domain's ``cli_cmds`` module and is registered in ``_COMMANDS``.
"""

from __future__ import annotations

import argparse
import sys

from .cluster import cli_cmds as _cluster_cli
from .experiments import cli_cmds as _experiments_cli
from .hardware import cli_cmds as _hardware_cli
from .policies import cli_cmds as _policies_cli
from .workload import cli_cmds as _workload_cli


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="smetric", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (register, _run) in _COMMANDS.items():
        register(sub.add_parser(name))
    return parser


# name -> (function adding arguments to its subparser, function(args) -> exit code)
_COMMANDS: dict = {}
_COMMANDS["reproduce"] = (_experiments_cli.register_reproduce, _experiments_cli.run_reproduce)
_COMMANDS["characterize"] = (_workload_cli.register_characterize, _workload_cli.run_characterize)
_COMMANDS["synth"] = (_workload_cli.register_synth, _workload_cli.run_synth)
_COMMANDS["perf"] = (_hardware_cli.register_perf, _hardware_cli.run_perf)
_COMMANDS["policies"] = (_policies_cli.register_policies, _policies_cli.run_policies)
_COMMANDS["simulate"] = (_cluster_cli.register_simulate, _cluster_cli.run_simulate)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``smetric`` console script."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(_COMMANDS[args.command][1](args) or 0)
    except BrokenPipeError:  # output piped into `head` and friends: stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
