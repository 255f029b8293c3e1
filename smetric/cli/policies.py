"""The ``policies`` subcommand: list every routing policy with its parameters, defaults and sources."""

from __future__ import annotations

import argparse
import json
import sys


def register_policies(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric policies``."""
    parser.description = ("List the routing policies (name for --policy), their parameters with defaults "
                          "(set with --param NAME=VALUE), the source each follows and the signals it reads.")
    parser.add_argument("names", nargs="*", metavar="POLICY", help="only these policies (default: all)")
    parser.add_argument("--json", action="store_true", help="one JSON record per (policy, parameter)")


def _format_param(spec, name) -> str:
    default = spec.params[name]
    if name in spec.choices:
        return f"{name}={default} ({'|'.join(spec.choices[name])})"
    return f"{name}={default:g} ({spec.ranges[name].describe()})"


def run_policies(args: argparse.Namespace) -> int:
    """Print the listing; exit 2 on an unknown policy name."""
    from ..policies.registry import available, describe, get

    try:
        specs = [get(n) for n in args.names] if args.names else available()
    except ValueError as exc:
        print(f"smetric policies: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(describe([s.name for s in specs]).to_dict(orient="records"), indent=1))
        return 0
    for spec in specs:
        print(f"{spec.name:15s} {spec.summary}")
        params = "  ".join(_format_param(spec, k) for k in spec.params) or "(none)"
        print(f"{'':15s} params:  {params}")
        print(f"{'':15s} source:  {spec.source}")
        print(f"{'':15s} signals: {spec.signals}")
    return 0
