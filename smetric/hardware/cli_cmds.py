"""The ``perf`` subcommand: time one iteration of a (model, GPU, TP) instance."""

from __future__ import annotations

import argparse
import json
import sys


def register_perf(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric perf``."""
    from .gpus import gpu_names
    from .models import model_names

    parser.description = "Predicted time of one engine iteration (calibrated PerfModel)."
    parser.add_argument("--model", required=True, help=f"one of: {', '.join(model_names())}")
    parser.add_argument("--gpu", required=True, help=f"one of: {', '.join(gpu_names())}")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (default 1)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--linear", type=int, metavar="N", help="linear layers only, N tokens")
    what.add_argument("--prefill", type=int, metavar="N", help="prefill N new tokens")
    what.add_argument("--decode-batch", type=int, metavar="B", help="decode step of B sequences (needs --context)")
    parser.add_argument("--cached", type=int, default=0, metavar="C", help="with --prefill: tokens already cached")
    parser.add_argument("--context", type=int, metavar="C", help="with --decode-batch: context length of each sequence")
    parser.add_argument("--json", action="store_true", help='print {"seconds": ..., inputs...} as JSON')


def _time(args: argparse.Namespace) -> tuple[float, dict]:
    """Seconds and the inputs that produced them; ValueError on inconsistent flags."""
    from .perfmodel import PerfModel

    if args.cached and args.prefill is None:
        raise ValueError("--cached only applies to --prefill")
    if args.context is not None and args.decode_batch is None:
        raise ValueError("--context only applies to --decode-batch")
    pm = PerfModel(args.model, args.gpu, args.tp)
    inputs = {"model": pm.model.name, "gpu": pm.gpu.name, "tp": pm.tp}
    if args.linear is not None:
        if args.linear < 1:
            raise ValueError(f"--linear needs N >= 1, got {args.linear}")
        return pm.linear_time(args.linear), {**inputs, "linear_tokens": args.linear}
    if args.prefill is not None:
        return pm.prefill_time(args.prefill, args.cached), {**inputs, "prefill_tokens": args.prefill, "cached": args.cached}
    if args.context is None:
        raise ValueError("--decode-batch needs --context")
    if args.decode_batch < 1:
        raise ValueError(f"--decode-batch needs B >= 1, got {args.decode_batch}")
    seconds = pm.decode_time([args.context] * args.decode_batch)
    return seconds, {**inputs, "decode_batch": args.decode_batch, "context": args.context}


def run_perf(args: argparse.Namespace) -> int:
    """Print the predicted seconds (or JSON); exit 2 on bad input."""
    try:
        seconds, inputs = _time(args)
    except ValueError as exc:
        print(f"smetric perf: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"seconds": seconds, **inputs}))
    else:
        described = ", ".join(f"{k}={v}" for k, v in inputs.items())
        print(f"{seconds * 1e3:.3f} ms  ({described})")
    return 0
