"""``python -m benchmarks`` (``make bench``): the engine benchmarks, one table.

Sections: speed of the reference hour (and the speed-up over the pure-Python reference, compile
time, memory), scaling with instances (32 -> 4,096) and trace length, the engine phase on the Azure trace,
the whole ``smetric simulate`` process on that trace (start-up included), and the side-by-side runs against
SplitwiseSim and BLIS where they are installed (``benchmarks/README.md``; skipped with a message otherwise).
``--quick`` shrinks the scenario (15 min instead of an hour, fewer scaling points) for a smoke run.
The table is also written to ``benchmarks/results.csv`` (date, machine, mode, and per row the measured value, its
target and verdict; ``--out`` elsewhere), which the performance page of the documentation is generated from.
Other benchmarks in this folder (perf-model accuracy, sweep overhead) run on their own.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks import cli_startup, engine_peer, engine_scaling, engine_speed, peers
from benchmarks.common import RESULTS, print_rows, write_rows


def main(argv: list[str] | None = None) -> int:
    """Run every engine benchmark and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller scenario, fewer scaling points")
    parser.add_argument("--out", default=str(RESULTS), help="the CSV record to write (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.quick:
        rows = (engine_speed.run(minutes=15.0, reference_minutes=1.0)
                + engine_scaling.run(instances=(32, 64), lengths=(1, 2), base_minutes=3.0, hour_instances=64,
                                     hour_lengths=(1.0, 2.0), scale_at_32=3.0)
                + engine_peer.run(repeats=1) + cli_startup.run(repeats=2) + peers.run(pairs=1))
    else:
        rows = (engine_speed.run() + engine_scaling.run() + engine_peer.run() + cli_startup.run()
                + peers.run())
    print_rows(rows)
    print(f"written: {write_rows(rows, args.out, mode='quick' if args.quick else 'full')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
