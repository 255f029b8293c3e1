"""The ``simulate`` subcommand: replay a trace on a cluster with a routing policy."""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..cluster.config import KV_ALLOCATIONS, REPLAYS
from ..cluster.queueing import DISCIPLINES
from ..cluster.router_info import ASSIGNMENTS
from ..cluster.serving_stack import ENGINE_ROWS

#: ``--batching``: what one engine iteration runs (ClusterConfig.prefill_first and chunked_prefill).
BATCHINGS = ("mixed", "prefill-first", "whole-prompts")
_INT_KEYS = ("n_requests", "n_completed", "n_unfinished", "n_rejected", "n_sessions", "n_sessions_completed")


def _parse_params(pairs: list[str], flag: str = "--param") -> dict:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} needs KEY=VALUE, got {pair!r}")
        params[key.strip()] = value.strip()
    return params


def register_simulate(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``smetric simulate``."""
    from ..hardware.efficiency import ATTENTION_CALIBRATIONS
    from ..hardware.perfmodel import DTYPES
    from ..workload.loaders import FORMATS
    from .workload import add_limit_arguments

    parser.description = ("Replay a trace on a simulated cluster with a routing policy and print the summary "
                          "(goodput, throughput, hit ratios, imbalance, SLO attainment, TTFT/TPOT percentiles). "
                          "The plain defaults are a bare cluster (no global store, open replay, the ideal connector, "
                          "whole-block hits, one instance); --testbed-defaults 30b runs the model the figures run on.")
    parser.add_argument("--testbed-defaults", metavar="30b|235b",
                        help="start from a paper testbed exactly as the figures run it "
                             "(smetric.testbeds.paper_cluster: 30b = 32 x qwen3-30b-a3b TP1 on h20, "
                             "235b = 8 x qwen3-235b-a22b TP8 on h20; provisioned global store, closed replay, "
                             "lmcache-mooncake connector, reply KV cached, 16-token hits); flags given explicitly "
                             "override it (default: off)")
    parser.add_argument("--trace", required=True, help="a catalog name (e.g. azure-conv) or a trace file")
    parser.add_argument("--format", choices=FORMATS, help="trace format (detected from the content by default)")
    parser.add_argument("--policy", required=True,
                        help="routing policy (required; see `smetric policies`; _ may stand for -)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a policy parameter (repeatable; default: the policy's defaults)")
    parser.add_argument("--instances", type=int,
                        help="instances (default 1; prefill + decode when disaggregated; the testbed's with "
                             "--testbed-defaults)")
    parser.add_argument("--model", help="model name, listed by `smetric perf --help` (required unless "
                                        "--testbed-defaults)")
    parser.add_argument("--gpu", help="GPU name, listed by `smetric perf --help` (required unless --testbed-defaults)")
    parser.add_argument("--tp", type=int,
                        help="tensor-parallel degree (default 1; the testbed's with --testbed-defaults)")
    parser.add_argument("--load", type=float, default=1.0, help="arrival-rate multiplier (default 1)")
    parser.add_argument("--mode", choices=("colocated", "disaggregated"), default="colocated",
                        help="prefill and decode on the same instances, or on separate ones (default colocated)")
    parser.add_argument("--prefill-instances", type=int, default=0,
                        help="prefill instances with --mode disaggregated (default 0)")
    parser.add_argument("--decode-instances", type=int, default=0,
                        help="decode instances with --mode disaggregated (default 0)")
    parser.add_argument("--global-store", metavar="provisioned|none|CAPACITY_GB:BANDWIDTH_GBPS",
                        help="cluster-wide KV store (default none; provisioned with --testbed-defaults)")
    parser.add_argument("--dram-gb", type=float, default=0.0,
                        help="host-DRAM KV tier per instance (GB, 0 = none; default 0)")
    parser.add_argument("--no-load-overlap", action="store_true",
                        help="KV loads delay the admitting iteration instead of overlapping with compute")
    parser.add_argument("--kv-connector", metavar="NAME",
                        help="how instances reach the global store: ideal (default; lmcache-mooncake with "
                             "--testbed-defaults), lmcache-mooncake, lmcache-mooncake-fast or lmcache-mooncake-slow "
                             "(data/perf/kv_path.json)")
    parser.add_argument("--kv-connector-param", action="append", default=[], metavar="KEY=VALUE",
                        help="a KV-connector parameter, e.g. layerwise=true or lookup_s=0.01 (repeatable; default: the "
                             "connector's values)")
    parser.add_argument("--no-cache-replies", action="store_true",
                        help="free a reply's KV at finish instead of caching it after the prompt")
    parser.add_argument("--global-store-replies", action="store_true",
                        help="also write a finished reply's KV to the global store")
    parser.add_argument("--hit-granularity", type=int, metavar="TOKENS",
                        help="count a follow-up's hit on its parent's partial last engine block down to this many "
                             "tokens (e.g. 16 = vLLM's block; default: whole engine blocks; 16 with "
                             "--testbed-defaults)")
    parser.add_argument("--weight-dtype", choices=sorted(DTYPES), default="bf16",
                        help="storage precision of the linear layers' weights (default bf16)")
    parser.add_argument("--kv-dtype", choices=sorted(DTYPES), default="bf16",
                        help="storage precision of the KV cache (default bf16)")
    parser.add_argument("--attention-calibration", choices=ATTENTION_CALIBRATIONS, default="fa3",
                        help="Hopper prefill-attention calibration (default fa3)")
    parser.add_argument("--engine", metavar="ROW[:FIELD=VALUE,...]",
                        help="serving-engine row of data/perf/serving_stack.json (per-iteration CPU time, first-token "
                             "lag, time outside the engine): one of " + ", ".join(ENGINE_ROWS) + ", or FAMILY-VERSION "
                             "(e.g. vllm-0.15.1); fields may be replaced (default: legacy, or the testbed's)")
    parser.add_argument("--max-num-seqs", type=int, default=256,
                        help="most sequences an instance runs at once (default 256, vLLM's)")
    parser.add_argument("--max-batched-tokens", type=int, default=4096,
                        help="token budget of one engine iteration (chunked prefill; default 4096)")
    parser.add_argument("--block-size", type=int,
                        help="engine KV block size (tokens), a multiple of the trace's block size (default: 256 "
                             "rounded up to a multiple of it)")
    parser.add_argument("--replay", choices=REPLAYS,
                        help="open: requests arrive at their trace times; closed: a session's next turn waits for "
                             "its parent's finish plus its gap (default open; closed with --testbed-defaults)")
    parser.add_argument("--kv-allocation", choices=KV_ALLOCATIONS, default="reserve",
                        help="reserve = KV for prompt + output at admission (default); incremental = vLLM's "
                             "block-by-block allocation with recompute preemption (colocated, fcfs, no global store)")
    parser.add_argument("--batching", choices=BATCHINGS, default="mixed",
                        help="what one iteration runs: mixed = decodes and prompt chunks together (vLLM V1; default); "
                             "prefill-first = an iteration with prompt work runs no decodes (SGLang); whole-prompts = "
                             "prefill-first with unchunked prompts (vLLM V0 without chunked prefill); the last two: "
                             "colocated, fcfs, ideal connector")
    parser.add_argument("--queue", choices=DISCIPLINES, default="fcfs",
                        help="order in which an instance admits its waiting requests (default fcfs)")
    parser.add_argument("--queue-param", action="append", default=[], metavar="KEY=VALUE",
                        help="a queue-discipline parameter, e.g. alpha=2, l_max=5 or estimator=linear (oracle, "
                             "session-mean, linear; with prior_output=TOKENS, window=N) (repeatable; default: the "
                             "discipline's values)")
    parser.add_argument("--patience", metavar="KIND:SECONDS[:SIGMA]",
                        help="sessions' patience, e.g. fixed:30 or lognormal:60:1: a request that waits longer "
                             "for admission abandons its session (default: nobody abandons)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the policy's random draws (default 0)")
    parser.add_argument("--router-refresh", type=float, metavar="S",
                        help="seconds between the router's snapshots of engine state (queue, counts, context); "
                             "default 0 = exact")
    parser.add_argument("--kv-refresh", type=float, metavar="S",
                        help="seconds between the router's snapshots of KV utilisation; default 0 = exact")
    parser.add_argument("--kv-event-delay", type=float, metavar="S",
                        help="seconds before a newly cached block is visible to the router's prefix hits "
                             "(KV events; evictions are seen at once); default 0")
    parser.add_argument("--router-replicas", type=int, metavar="K",
                        help="router replicas, each with its own in-flight counters and policy state; default 1")
    parser.add_argument("--replica-assignment", choices=ASSIGNMENTS,
                        help="how requests are spread over router replicas: uniform (seeded draw) or session "
                             "(hash of the session); default uniform")
    parser.add_argument("--as-deployed", action="store_true",
                        help="start from the policy's sourced 'as deployed' information model "
                             "(data/routers/as_deployed.json); the flags above override its fields")
    parser.add_argument("--json", action="store_true",
                        help="print the summary and the mechanism diagnostics (SimResult.diagnostics) as one "
                             "JSON object")
    parser.add_argument("--out", help="directory for requests/instances/timeseries/summary CSVs (checked first; "
                                      "default: none written)")
    add_limit_arguments(parser)
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar (default: on for runs of >= 100,000 requests)")


def _router_info(args: argparse.Namespace):
    """The RouterInfo of the router flags (over the policy's 'as deployed' entry with ``--as-deployed``)."""
    import dataclasses

    from ..cluster.router_info import RouterInfo
    from ..policies import registry

    base = RouterInfo.as_deployed(registry.get(args.policy).name) if args.as_deployed else RouterInfo()
    given = {"refresh_s": args.router_refresh, "kv_refresh_s": args.kv_refresh,
             "kv_event_delay_s": args.kv_event_delay, "router_replicas": args.router_replicas,
             "replica_assignment": args.replica_assignment}
    return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})


def run_simulate(args: argparse.Namespace) -> int:
    """Check the output, load, simulate, print; exit 1 on an unreadable trace or output, 2 on bad arguments."""
    from ..cluster.simulate import simulate
    from ..outputs import check_output
    from .workload import read_for_cli

    try:
        if args.out:
            check_output(args.out, directory=True)
    except ValueError as exc:
        print(f"smetric simulate: {exc}", file=sys.stderr)
        return 2
    workload, code = read_for_cli("simulate", args)
    if workload is None:
        return code
    try:
        if args.block_size is not None and args.block_size % workload.block_size:
            raise ValueError(f"--block-size {args.block_size} is not a multiple of the trace's "
                             f"{workload.block_size}-token blocks")
        cluster = cluster_from_args(args)
        result = simulate(workload, cluster, args.policy, _parse_params(args.param), load=args.load, seed=args.seed,
                          progress=args.progress)
    except ValueError as exc:
        print(f"smetric simulate: {exc}", file=sys.stderr)
        return 2
    summary = _with_rejections(result.summary(), result)
    if args.out:
        try:
            result.to_csv(args.out)
        except OSError as exc:
            print(f"smetric simulate: cannot write --out {args.out}: {exc}", file=sys.stderr)
            return 1
    if args.json:
        def plain(d: dict) -> dict:
            return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}

        print(json.dumps({"trace": workload.name, "policy": args.policy, "load": args.load,
                          "queue": cluster.queue.name, "estimator": cluster.queue.estimator,
                          "cluster": cluster.describe(), **plain({**summary, **result.diagnostics()}),
                          "kpis": plain(result.kpis())}, indent=1))
    else:
        print(f"# {workload.name} on {cluster.describe()}, policy {args.policy}, queue {cluster.queue.name}, "
              f"load {args.load:g}")
        width = max(map(len, summary))
        for key, value in summary.items():
            shown = f"{value:d}" if key in _INT_KEYS else f"{value:.6g}"
            print(f"{key:>{width}}  {shown}")
    return 0


def cluster_from_args(args: argparse.Namespace):
    """The :class:`ClusterConfig` that ``smetric simulate``'s arguments describe."""
    from ..cluster.config import ClusterConfig, GlobalStore
    from ..cluster.connector import KVConnector
    from ..cluster.queueing import QueueDiscipline
    from ..cluster.serving_stack import parse as parse_engine

    base = _base_fields(args)
    block = {} if args.block_size is None else {"block_size": args.block_size}
    n = args.instances if args.instances is not None else base["n_instances"]
    if n is None:
        n = args.prefill_instances + args.decode_instances if args.mode == "disaggregated" else 1
    return ClusterConfig(
        model=base["model"], gpu=base["gpu"], tp=base["tp"], n_instances=n, mode=args.mode,
        n_prefill=args.prefill_instances, n_decode=args.decode_instances, max_num_seqs=args.max_num_seqs,
        max_batched_tokens=args.max_batched_tokens, dram_gb=args.dram_gb, **block,
        global_store=GlobalStore.parse(base["global_store"], tp=base["tp"]),
        kv_load_overlap=not args.no_load_overlap, replay=base["replay"],
        queue=QueueDiscipline.parse(args.queue, _parse_params(args.queue_param, "--queue-param")),
        cache_replies=not args.no_cache_replies, global_store_replies=args.global_store_replies,
        hit_granularity=base["hit_granularity"], weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype,
        attention_calibration=args.attention_calibration, kv_allocation=args.kv_allocation,
        prefill_first=args.batching != "mixed", chunked_prefill=args.batching != "whole-prompts",
        router=_router_info(args), patience=args.patience, engine=parse_engine(base["engine"]),
        kv_connector=KVConnector.parse(base["kv_connector"],
                                       _parse_params(args.kv_connector_param, "--kv-connector-param")))


def _base_fields(args: argparse.Namespace) -> dict:
    """The cluster fields the testbed flags decide: the flag where given, else ``--testbed-defaults``' value
    (``paper_cluster``, exactly what the figures run), else the bare default."""
    if args.testbed_defaults:
        from ..testbeds import TESTBEDS, paper_cluster  # imported only here: plain runs need no figure code

        if args.testbed_defaults not in TESTBEDS:
            raise ValueError(f"--testbed-defaults must be one of {', '.join(sorted(TESTBEDS))}, "
                             f"got {args.testbed_defaults!r}")
        tb = paper_cluster(args.testbed_defaults)  # its store is provisioned: re-provisioned below for a --tp given
        base = {"model": tb.model, "gpu": tb.gpu, "tp": tb.tp, "n_instances": tb.n_instances,
                "global_store": "provisioned", "replay": tb.replay, "kv_connector": tb.kv_connector.name,
                "hit_granularity": tb.hit_granularity, "engine": tb.engine.name}
    else:
        base = {"model": None, "gpu": None, "tp": 1, "n_instances": None, "global_store": "none", "replay": "open",
                "kv_connector": "ideal", "hit_granularity": None, "engine": "legacy"}
    given = {"model": args.model, "gpu": args.gpu, "tp": args.tp, "global_store": args.global_store,
             "replay": args.replay, "kv_connector": args.kv_connector, "hit_granularity": args.hit_granularity,
             "engine": args.engine}
    base.update({k: v for k, v in given.items() if v is not None})
    for flag in ("model", "gpu"):
        if base[flag] is None:
            raise ValueError(f"--{flag} is required (or --testbed-defaults 30b|235b)")
    return base


def _with_rejections(summary: dict, result) -> dict:
    """``summary`` with ``n_rejected`` after ``n_unfinished``: requests that can never fit one instance's KV,
    rejected at arrival; a warning line names the cause and the largest request against the capacity."""
    from ..cluster.result_raw import REASON_NAMES, REASON_TOO_LARGE

    rq = result.columns("requests")
    too_large = rq["status"] == REASON_NAMES[REASON_TOO_LARGE]
    n_rejected = int(too_large.sum())
    if n_rejected:
        need = rq["input_len"] + rq["output_len"]
        capacity = int(result.columns("instances")["kv_capacity_blocks"].min()) * result.cluster.block_size
        print(f"smetric simulate: warning: {n_rejected} of {len(need)} requests rejected at arrival: prompt + output "
              f"exceeds one instance's HBM KV capacity (largest request {int(need.max()):,} tokens, capacity "
              f"{capacity:,} tokens); use a larger --tp or GPU", file=sys.stderr)
    out = {}
    for key, value in summary.items():
        out[key] = value
        if key == "n_unfinished":
            out["n_rejected"] = n_rejected
    return out
