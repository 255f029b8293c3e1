"""``python -m benchmarks`` (``make bench``): the engine benchmarks, one table.

Sections: speed of the reference hour (and the speed-up over the pure-Python reference, compile
time, memory), scaling with instances and trace length, the peer comparison on the Azure trace, and the
whole ``smetric simulate`` process on that trace (start-up included).
``--quick`` shrinks the scenario (15 min instead of an hour, fewer scaling points) for a smoke run.
Other benchmarks in this folder (perf-model accuracy, sweep overhead) run on their own.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks import cli_startup, engine_peer, engine_scaling, engine_speed
from benchmarks.common import print_rows


def main(argv: list[str] | None = None) -> int:
    """Run every engine benchmark and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller scenario, fewer scaling points")
    args = parser.parse_args(argv)
    if args.quick:
        rows = (engine_speed.run(minutes=15.0, reference_minutes=1.0)
                + engine_scaling.run(instances=(8, 32), lengths=(1, 2), base_minutes=3.0)
                + engine_peer.run(repeats=1) + cli_startup.run(repeats=2))
    else:
        rows = engine_speed.run() + engine_scaling.run() + engine_peer.run() + cli_startup.run()
    print_rows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
