"""The ``characterize`` and ``synth`` subcommands."""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..workload.characterize import DEFAULT_LRU_BLOCKS
from ..workload.loaders import FORMATS, NATIVE_BLOCK_SIZE
from ..workload.writers import WRITERS

_COUNT_KEYS = ("n_requests", "n_sessions", "block_size")  # printed as JSON integers (NaN -> null)


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-line-bytes`` and ``--max-tokens``: raise the trace readers' input bounds (see ``TraceLimits``)."""
    parser.add_argument("--max-line-bytes", type=int, metavar="N",
                        help="longest trace line read (default 16 MiB, or SMETRIC_MAX_LINE_BYTES)")
    parser.add_argument("--max-tokens", type=int, metavar="N",
                        help="longest prompt or reply accepted (default 10,000,000, or SMETRIC_MAX_TOKENS)")


def read_for_cli(command: str, args: argparse.Namespace, **options):
    """``(workload, 0)``, or ``(None, exit code)`` after printing why: 1 unreadable trace, 2 bad arguments."""
    from ..workload.errors import TraceFormatError
    from ..workload.loaders import TraceLimits, load_trace

    try:
        limits = TraceLimits.from_env(max_line_bytes=args.max_line_bytes, max_tokens=args.max_tokens)
        return load_trace(args.trace, format=args.format, limits=limits, **options), 0
    except (TraceFormatError, OSError) as exc:
        print(f"smetric {command}: {exc}", file=sys.stderr)
        return None, 1
    except ValueError as exc:
        print(f"smetric {command}: {exc}", file=sys.stderr)
        return None, 2


def register_characterize(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric characterize``."""
    parser.description = ("Reuse, locality and session statistics of a trace: prefix reuse with an infinite "
                          "cache and with LRU caches, intra-session share, first-turn reuse, reuse distance, "
                          "session skew, turns and lengths; burstiness of the arrivals and session starts "
                          "(inter-arrival CV, index of dispersion at 1/10/60 s, peak-to-mean per minute); fan-out "
                          "(children per spawning turn, concurrent requests per session) where the trace has joined "
                          "children; compactions (prompts that shrink below half their parent's context).")
    parser.add_argument("trace", help="a catalog name (e.g. mooncake-conversation) or a trace file")
    parser.add_argument("--format", choices=FORMATS, help="trace format (detected from the content by default)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--lru-blocks", type=int, nargs="*", default=list(DEFAULT_LRU_BLOCKS), metavar="C",
                        help="LRU capacities in blocks (default: %(default)s)")
    parser.add_argument("--block-size", type=int, help="re-block to this multiple of the trace's block size")
    parser.add_argument("--shared-prefix", action="store_true",
                        help="kvcache-tester only: treat the tool/system prefix as common to all conversations "
                             "(an assumption, off by default)")
    parser.add_argument("--subagents", choices=("attached", "separate"),
                        help="kvcache-tester only: keep sub-agents in their conversation's session as fan-out "
                             "children (attached, the default) or as sessions of their own (separate)")
    add_limit_arguments(parser)


def run_characterize(args: argparse.Namespace) -> int:
    """Load the trace, print its statistics; exit 1 on an unreadable trace, 2 on bad arguments."""
    import pandas as pd

    from ..workload.arrivals import workload_burstiness
    from ..workload.characterize import characterize
    from ..workload.context import workload_compactions
    from ..workload.fanout import workload_fanout

    replay = {"shared_prefix": True} if args.shared_prefix else {}
    if args.subagents:
        replay["subagents"] = args.subagents
    workload, code = read_for_cli("characterize", args, block_size=args.block_size, **replay)
    if workload is None:
        return code
    try:
        stats = characterize(workload, lru_blocks=args.lru_blocks)
        more = {**workload_burstiness(workload), **workload_fanout(workload), **workload_compactions(workload)}
        stats = pd.concat([stats, pd.Series(more, dtype=float)]).rename(stats.name)
    except ValueError as exc:
        print(f"smetric characterize: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = {k: None if math.isnan(v) else int(v) if k in _COUNT_KEYS else float(v) for k, v in stats.items()}
        print(json.dumps({"trace": workload.name, **out}, indent=1))
    else:
        print(f"# {workload.name}")
        print(stats.to_string(float_format=lambda x: f"{x:.4g}"))
    return 0


def register_synth(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric synth``."""
    from ..testbeds import DEFAULT_WORKLOAD, WARMUP_MINUTES
    from ..workload.synthetic import PRESETS

    parser.description = ("Generate synthetic sessions of a named preset (agent or chat) and write them as a Mooncake "
                          "or Bailian trace. Without --block-size the format's native block size is used. With "
                          "--duration, sessions start 6 h before the window by default, as in the figures, so the "
                          "window holds the requested rate.")
    parser.add_argument("--out", required=True, help="output file (.jsonl, or .jsonl.gz for gzip)")
    parser.add_argument("--format", required=True, choices=sorted(WRITERS), help="trace format to write")
    parser.add_argument("--preset", choices=list(PRESETS), default=DEFAULT_WORKLOAD,
                        help="session model (default: %(default)s, the figures' workload; sources in "
                             "smetric.workload.synthetic)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--sessions", type=int, help="number of complete sessions (default 2000)")
    size.add_argument("--duration", type=float, help="a time window (s) of steady session arrivals instead")
    parser.add_argument("--warmup", type=float, default=60.0 * WARMUP_MINUTES,
                        help="with --duration: sessions also start this long before the window (s; default "
                             "%(default)g = 6 h, the figures' warm-up: a shorter one leaves the window short of "
                             "the requested rate; 0 = sessions start in the window)")
    rate = parser.add_mutually_exclusive_group()
    rate.add_argument("--requests-per-minute", type=float,
                      help="target request rate (the paper: 43-48 per minute per instance)")
    rate.add_argument("--session-rate", type=float, help="session arrival rate (per s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--block-size", type=int, help="block size to generate at (default: the format's)")


def run_synth(args: argparse.Namespace) -> int:
    """Check the output, generate, write, print a one-line summary; exit 2 on bad parameters, 1 on a failed write."""
    from ..outputs import check_output
    from ..workload.synthetic import get_preset, synth_workload, with_overrides
    from ..workload.writers import write_trace

    overrides = {"block_size": args.block_size or NATIVE_BLOCK_SIZE[args.format]}
    if args.requests_per_minute is not None:
        overrides["requests_per_minute"] = args.requests_per_minute
    if args.session_rate is not None:
        overrides["session_rate"] = args.session_rate
    n_sessions = None if args.duration is not None else 2000 if args.sessions is None else args.sessions
    try:
        check_output(args.out, directory=False)
        config = with_overrides(get_preset(args.preset).config, **overrides)
        workload = synth_workload(config, n_sessions, args.seed, duration=args.duration, warmup=args.warmup)
    except ValueError as exc:
        print(f"smetric synth: {exc}", file=sys.stderr)
        return 2
    try:
        path = write_trace(workload, args.out, args.format)
    except ValueError as exc:
        print(f"smetric synth: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"smetric synth: cannot write --out {args.out}: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(workload)} requests in {workload.n_sessions} sessions over {workload.duration:.0f} s "
          f"({args.preset}, seed {args.seed}, block size {workload.block_size}) to {path} as {args.format}")
    return 0
