"""Side by side with peer simulators, whole process against whole process, on the Azure 2023 conversation trace
(19,366 requests) on 40 instances of a 70B model, TP 8, H100, round-robin routing.

Peers, used where installed (``benchmarks/README.md`` says how to install each; nothing is installed here):

* **SplitwiseSim** (Python), a checkout at commit 8f99e7d with its pinned requirements in its own venv:
  ``$SMETRIC_SPLITWISESIM`` (default ``build/peers/splitwise-sim``), run as its ``run.py`` with the baseline
  start state on 40 DGX-H100 servers (one Llama-2-70B TP8 instance each), ``round_robin`` scheduler,
  ``performance_model=db``; the trace converted to its CSV columns.
* **BLIS** (Go, inference-sim/inference-sim, pinned to commit c4950de): the ``simulation_worker`` binary at
  ``$SMETRIC_BLIS`` (default ``build/peers/inference-sim/simulation_worker``, else on PATH),
  ``run --workload traces`` with 40 instances, ``round-robin``; the model is ``meta-llama/llama-3.3-70b-instruct``
  on H100 TP8, the 70B model BLIS ships coefficients for (an assumption: the simulators' speed is compared, not
  their predictions). Prompt token ids are unique per request, so BLIS finds no prefix hits the trace does not
  have (the Azure trace has no content).

The comparison runs ``pairs`` interleaved pairs (peer, this package's ``smetric simulate`` process on the same
trace and cluster), each timed from outside (wall, and the child's user + system CPU); the ratio is taken pair by
pair and its median reported, so machine drift affects both sides of a pair alike. A peer not installed gives one
row saying so, and the run goes on.

Run: ``.venv/bin/python -m benchmarks.peers [--pairs K]``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import Row, print_rows, run_process

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = 40
SPLITWISE_COMMIT = "8f99e7d"
# The last BLIS commit whose ``run --workload traces`` replays a CSV trace request by request with its blackbox
# latency model by default: 3bdc6fe (2026-02-27) averages the CSV's token lengths, 3a825cc makes the roofline
# model (HuggingFace configs) the default, a529ff4 (2026-03-15) removes the CSV trace path.
BLIS_COMMIT = "c4950de"
BLIS_MODEL = "meta-llama/llama-3.3-70b-instruct"
SMETRIC_COMMAND = ["-m", "smetric.cli", "simulate", "--trace", "azure-conv", "--policy", "round-robin",
                   "--instances", str(INSTANCES), "--model", "llama-2-70b", "--gpu", "h100", "--tp", "8", "--json"]
TARGETS = {"SplitwiseSim": ">= 10", "BLIS": ">= 15"}  # whole-process speed-up over each peer
# SplitwiseSim handles an arrival at t = 0 before its instances' start-up events at t = 0 ("No instances
# available"), so its trace starts this far in (1 us; every arrival moves alike).
SPLITWISE_START_S = 1e-6
SPLITWISE_CONFIG = "smetric_basic"  # its configs/config.yaml without the Ray launcher (written next to the trace)


@dataclass(frozen=True)
class Peer:
    """An installed peer: ``name``, how to run it on a trace file (``command`` with ``{trace}`` and ``{out}``
    placeholders), where (``cwd``), and which version (``version``)."""

    name: str
    command: tuple[str, ...]
    cwd: Path
    version: str

    def __post_init__(self):
        if self.name not in TARGETS:
            raise ValueError(f"Peer.name must be one of {sorted(TARGETS)}, got {self.name!r}")
        if not self.command:
            raise ValueError("Peer.command must not be empty")

    def argv(self, trace: Path, out: Path) -> list[str]:
        """The command line for ``trace``, writing its outputs under ``out`` (``{trace_dir}``: the trace's folder)."""
        return [a.format(trace=trace, out=out, trace_dir=trace.parent) for a in self.command]


def _git_head(path: Path) -> str:
    """The short commit of the checkout rooted at ``path``; "unknown commit" for anything else (an exported
    tree inside another repository, this package's own among them, must not report that repository's commit)."""
    top = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != Path(path).resolve():
        return "unknown commit"
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown commit"


def find_splitwise(env=os.environ) -> Peer | str:
    """SplitwiseSim as installed, or the reason it is skipped."""
    home = Path(env.get("SMETRIC_SPLITWISESIM", ROOT / "build/peers/splitwise-sim"))
    python = home / ".venv/bin/python"
    if not (home / "run.py").is_file():
        return f"no SplitwiseSim checkout at {home} (set SMETRIC_SPLITWISESIM)"
    if not python.is_file():
        return f"SplitwiseSim at {home} has no .venv/bin/python (install its requirements.txt there)"
    version = _git_head(home)
    if not version.startswith(SPLITWISE_COMMIT):
        version += f", not the pinned {SPLITWISE_COMMIT}"
    command = (str(python), "run.py", "--config-dir", "{trace_dir}", "--config-name", SPLITWISE_CONFIG,
               "applications.0.scheduler=round_robin", "cluster=half_half",
               "cluster.servers.0.count=0", f"cluster.servers.1.count={INSTANCES}", "start_state=baseline",
               "performance_model=db", "trace.path={trace}", "output_dir={out}", "seed=0")
    return Peer("SplitwiseSim", command, home, version)


def find_blis(env=os.environ) -> Peer | str:
    """BLIS as built, or the reason it is skipped."""
    given = env.get("SMETRIC_BLIS")
    default = ROOT / "build/peers/inference-sim/simulation_worker"
    binary = Path(given) if given else (default if default.is_file() else shutil.which("simulation_worker"))
    if binary is None or not Path(binary).is_file():
        return f"no BLIS binary at {given or default} or on PATH (set SMETRIC_BLIS)"
    binary = Path(binary).resolve()
    command = (str(binary), "run", "--model", BLIS_MODEL, "--hardware", "H100", "--tp", "8",
               "--num-instances", str(INSTANCES), "--routing-policy", "round-robin", "--workload", "traces",
               "--workload-traces-filepath", "{trace}", "--results-path", "{out}/results.json")
    version = _git_head(binary.parent)
    if not version.startswith(BLIS_COMMIT):
        version += f", not the pinned {BLIS_COMMIT}"
    return Peer("BLIS", command, binary.parent, version)


def write_splitwise_trace(workload, path: Path) -> None:
    """``workload`` in SplitwiseSim's trace CSV (one generative-LLM request per row, arrival in s from
    ``SPLITWISE_START_S``)."""
    with open(path, "w") as f:
        f.write("request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size\n")
        t0 = float(workload.arrival[0]) - SPLITWISE_START_S
        for i, (t, n_in, n_out) in enumerate(zip(workload.arrival, workload.input_len, workload.output_len)):
            f.write(f"{i},2,0,{float(t) - t0:.6f},1,{int(n_in)},{int(n_out)}\n")


def write_splitwise_config(home: Path, directory: Path) -> Path:
    """SplitwiseSim's ``configs/config.yaml`` as ``SPLITWISE_CONFIG`` in ``directory``, with the basic launcher
    instead of its Ray one (whose ``hydra.launcher.ray`` block the basic launcher rejects, and which needs a
    Ray cluster); everything else as the checkout has it. Returns the written file."""
    out, skip = [], None
    for line in (home / "configs" / "config.yaml").read_text().splitlines():
        indent = len(line) - len(line.lstrip())
        if skip is not None and (not line.strip() or indent > skip):
            continue
        skip = None
        if line.strip() == "- override hydra/launcher: ray":
            line = line.replace("ray", "basic")
        elif line.strip() == "launcher:":
            skip = indent
            continue
        out.append(line)
    path = directory / f"{SPLITWISE_CONFIG}.yaml"
    path.write_text("\n".join(out) + "\n")
    return path


def write_blis_trace(workload, path: Path) -> None:
    """``workload`` in BLIS's trace CSV: token-id arrays of the request's lengths, ids unique across requests."""
    with open(path, "w") as f:
        f.write("arrival_time,request_id,model,prefill_tokens,decode_tokens\n")
        t0, next_id = float(workload.arrival[0]), 0
        for i, (t, n_in, n_out) in enumerate(zip(workload.arrival, workload.input_len, workload.output_len)):
            prompt = ",".join(map(str, range(next_id, next_id + int(n_in))))
            next_id += int(n_in)
            reply = ",".join(map(str, range(next_id, next_id + int(n_out))))
            next_id += int(n_out)
            f.write(f'{float(t) - t0:.6f},req_{i},llama,"[{prompt}]","[{reply}]"\n')


def compare(peer: Peer, trace: Path, pairs: int) -> list[Row]:
    """``pairs`` interleaved (peer, smetric) runs after one warm-up of each; the rows of the comparison."""
    ours = [sys.executable, *SMETRIC_COMMAND]
    with tempfile.TemporaryDirectory() as out:
        argv = peer.argv(trace, Path(out))
        run_process(ours, ROOT)
        first = run_process(argv, peer.cwd)
        if first.code != 0:
            return [Row(f"vs {peer.name} ({peer.version})",
                        f"FAILED: exit {first.code} of `{' '.join(argv)}` (run it by hand to see why)", math.nan, "")]
        runs = [(run_process(argv, peer.cwd), run_process(ours, ROOT)) for _ in range(pairs)]
    g = f"vs {peer.name} ({peer.version}), azure-conv, {INSTANCES} instances, {pairs} pairs"
    med = statistics.median
    return [Row(g, f"{peer.name} whole process: wall (median)", med(p.wall for p, _ in runs), "s"),
            Row(g, f"{peer.name} whole process: CPU (median)", med(p.cpu for p, _ in runs), "s"),
            Row(g, f"{peer.name} whole process: peak RSS (median)", med(p.rss_mb for p, _ in runs), "MB"),
            Row(g, "smetric simulate whole process: wall (median)", med(o.wall for _, o in runs), "s"),
            Row(g, "speed-up, whole process wall (median of pair ratios)", med(p.wall / o.wall for p, o in runs),
                "x", TARGETS[peer.name]),
            Row(g, "speed-up, whole process CPU (median of pair ratios)", med(p.cpu / o.cpu for p, o in runs), "x")]


def run(pairs: int = 3) -> list[Row]:
    """Compare against every installed peer; a row per missing one."""
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    from smetric.workload.loaders import load_trace

    found = {"SplitwiseSim": find_splitwise(), "BLIS": find_blis()}
    rows: list[Row] = []
    workload = None
    with tempfile.TemporaryDirectory() as tmp:
        for name, peer in found.items():
            if isinstance(peer, str):
                print(f"peers: {name} skipped: {peer}", file=sys.stderr)
                rows.append(Row(f"vs {name}", f"skipped: {peer}", math.nan, ""))
                continue
            workload = workload if workload is not None else load_trace("azure-conv")
            trace = Path(tmp) / f"azure_conv_{name.lower()}.csv"
            if name == "SplitwiseSim":
                write_splitwise_trace(workload, trace)
                write_splitwise_config(peer.cwd, trace.parent)
            else:
                write_blis_trace(workload, trace)
            rows += compare(peer, trace, pairs)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="interleaved (peer, smetric) pairs (default 3)")
    args = parser.parse_args(argv)
    print_rows(run(args.pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
