"""The ``perf`` subcommand: time one iteration of a (model, GPU, TP) instance, or size its KV cache."""

from __future__ import annotations

import argparse
import json
import sys


def register_perf(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric perf``."""
    from ..hardware.gpus import gpu_names
    from ..hardware.models import model_names
    from ..hardware.perfmodel import DTYPES

    parser.description = "Predicted time of one engine iteration (calibrated PerfModel)."
    parser.add_argument("--model", required=True, help=f"one of: {', '.join(model_names())}")
    parser.add_argument("--gpu", required=True, help=f"one of: {', '.join(gpu_names())}")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (default 1)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--linear", type=int, metavar="N", help="linear layers only, N tokens")
    what.add_argument("--prefill", type=int, metavar="N", help="prefill N new tokens")
    what.add_argument("--decode-batch", type=int, metavar="B", help="decode step of B sequences (needs --context)")
    what.add_argument("--kv-capacity", action="store_true", help="KV-cache capacity of one instance (tokens)")
    parser.add_argument("--cached", type=int, default=0, metavar="C", help="with --prefill: tokens already cached")
    parser.add_argument("--context", type=int, metavar="C", help="with --decode-batch: context length of each sequence")
    parser.add_argument("--weight-dtype", choices=sorted(DTYPES), default="bf16",
                        help="linear-layer weight precision (fp8: half the bytes, FP8 peak where the GPU has one)")
    parser.add_argument("--kv-dtype", choices=sorted(DTYPES), default="bf16",
                        help="KV-cache precision (fp8: half the bytes)")
    parser.add_argument("--mem-util", type=float, default=0.9,
                        help="with --kv-capacity: fraction of HBM used (default 0.9)")
    parser.add_argument("--max-batched-tokens", type=int, default=8192,
                        help="with --kv-capacity: token budget sizing the activation reserve (default 8192)")
    parser.add_argument("--json", action="store_true", help='print {"seconds": ..., inputs...} as JSON')


def _evaluate(args: argparse.Namespace) -> tuple[str, float, dict]:
    """``("seconds", s, inputs)`` or ``("kv_capacity_tokens", n, inputs)``; ValueError on inconsistent flags."""
    from ..hardware.perfmodel import PerfModel

    if args.cached and args.prefill is None:
        raise ValueError("--cached only applies to --prefill")
    if args.context is not None and args.decode_batch is None:
        raise ValueError("--context only applies to --decode-batch")
    if not args.kv_capacity and (args.mem_util != 0.9 or args.max_batched_tokens != 8192):
        raise ValueError("--mem-util and --max-batched-tokens only apply to --kv-capacity")
    pm = PerfModel(args.model, args.gpu, args.tp, max_batched_tokens=args.max_batched_tokens,
                   weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype)
    inputs = {"model": pm.model.name, "gpu": pm.gpu.name, "tp": pm.tp,
              "weight_dtype": pm.weight_dtype, "kv_dtype": pm.kv_dtype}
    if args.kv_capacity:
        return "kv_capacity_tokens", pm.kv_capacity_tokens(args.mem_util), {
            **inputs, "mem_util": args.mem_util, "max_batched_tokens": pm.max_batched_tokens}
    if args.linear is not None:
        if args.linear < 1:
            raise ValueError(f"--linear needs N >= 1, got {args.linear}")
        return "seconds", pm.linear_time(args.linear), {**inputs, "linear_tokens": args.linear}
    if args.prefill is not None:
        return "seconds", pm.prefill_time(args.prefill, args.cached), {
            **inputs, "prefill_tokens": args.prefill, "cached": args.cached}
    if args.context is None:
        raise ValueError("--decode-batch needs --context")
    if args.decode_batch < 1:
        raise ValueError(f"--decode-batch needs B >= 1, got {args.decode_batch}")
    seconds = pm.decode_time([args.context] * args.decode_batch)
    return "seconds", seconds, {**inputs, "decode_batch": args.decode_batch, "context": args.context}


def run_perf(args: argparse.Namespace) -> int:
    """Print the predicted seconds or KV capacity (or JSON); exit 2 on bad input."""
    try:
        key, value, inputs = _evaluate(args)
    except ValueError as exc:
        print(f"smetric perf: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({key: value, **inputs}))
        return 0
    described = ", ".join(f"{k}={v}" for k, v in inputs.items())
    print(f"{value} tokens  ({described})" if key == "kv_capacity_tokens" else f"{value * 1e3:.3f} ms  ({described})")
    return 0
