"""Short names for the trace files in ``data/traces/``: the shipped ones (byte-identical copies of the upstream
files named in ``data/traces/ATTRIBUTION.md``, and a compact form of the kv-cache-tester Claude Code sessions)
and public traces too large to ship, which resolve once downloaded there (each entry's ``download`` URL;
commands in ``data/traces/README.md``).

The data directory is the run context's (:mod:`smetric.context`: ``<repo>/data`` unless the
environment variable ``SMETRIC_DATA`` points elsewhere). Wherever a trace name is accepted, a path works too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..context import ENV, run_context

__all__ = ["TraceEntry", "TRACES", "data_dir", "trace_entry", "trace_path", "trace_names"]

DATA_ENV = ENV["data_dir"]


@dataclass(frozen=True)
class TraceEntry:
    """One shipped trace: its file under ``data/traces/``, its format and what it is."""

    name: str
    file: str
    format: str
    description: str
    licence: str
    inferred_sessions_file: str | None = None  # the reference session inference shipped with it
    download: str | None = None  # where to fetch a trace that is not shipped

    def __post_init__(self) -> None:
        if not self.file or "/" in self.file:
            raise ValueError(f"trace {self.name!r}: file must be a bare file name, got {self.file!r}")


_BAILIAN = "https://github.com/alibaba-edu/qwen-bailian-usagetraces-anon/raw/refs/heads/main"
_MOONCAKE = "https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/FAST25-release/traces"

TRACES: dict[str, TraceEntry] = {e.name: e for e in (
    TraceEntry("mooncake-conversation", "mooncake_fast25_conversation_trace.jsonl.gz", "mooncake",
               "Kimi chat traffic, 1 h, 12,031 requests, 512-token chained hashes (Mooncake FAST'25)",
               "Apache-2.0", "mooncake_fast25_conversation_trace.inferred_sessions.csv.gz"),
    TraceEntry("mooncake-synthetic", "mooncake_fast25_synthetic_trace.jsonl.gz", "mooncake",
               "ShareGPT/L-Eval/LooGLE conversations with Poisson arrivals, 3,993 requests (Mooncake FAST'25)",
               "Apache-2.0", "mooncake_fast25_synthetic_trace.inferred_sessions.csv.gz"),
    TraceEntry("azure-code", "azure_llm_inference_2023_code.csv.gz", "azure",
               "Azure LLM inference 2023, code: 8,819 arrivals and lengths, no hashes (Splitwise)", "CC-BY-4.0"),
    TraceEntry("azure-conv", "azure_llm_inference_2023_conv.csv.gz", "azure",
               "Azure LLM inference 2023, conversation: 19,366 arrivals and lengths, no hashes (Splitwise)",
               "CC-BY-4.0"),
    TraceEntry("claude-code", "weka_claude_code_512.tar.gz", "kvcache-tester",
               "710 real Claude Code sessions (kv-cache-tester, WEKA), 49,334 calls, 64-token chained hashes "
               "coarsened to 512 tokens (make_claude_code_512.py regenerates it from the original)", "Apache-2.0"),
    TraceEntry("qwen-coder", "qwen_coder_blksz_16.jsonl", "bailian",
               "Qwen-Bailian coder: 2 h of one Qwen coder instance, 43,011 requests, sessions, 16-token hashes "
               "(not shipped: Git LFS, 132 MB)", "Apache-2.0",
               download=f"{_BAILIAN}/qwen_coder_blksz_16.jsonl"),
    TraceEntry("qwen-thinking", "qwen_thinking_blksz_16.jsonl", "bailian",
               "Qwen-Bailian thinking: 2 h, 10,812 requests, sessions, 16-token hashes (not shipped: Git LFS)",
               "Apache-2.0", download=f"{_BAILIAN}/qwen_thinking_blksz_16.jsonl"),
    TraceEntry("mooncake-toolagent", "toolagent_trace.jsonl", "mooncake",
               "Kimi tool&agent traffic, 1 h, 23,608 requests, 512-token chained hashes (Mooncake FAST'25; "
               "not shipped)", "Apache-2.0", download=f"{_MOONCAKE}/toolagent_trace.jsonl"),
    TraceEntry("tracelab-example", "tracelab_example_sanitized_round_trace.jsonl.gz", "tracelab",
               "TraceLab: 2 coding-agent sessions (Claude Code, Codex), 19 LLM rounds", "CC-BY-4.0"),
)}


def data_dir() -> Path:
    """The data directory of the run context: ``$SMETRIC_DATA`` if set, else ``<repo>/data``."""
    return run_context().data_dir


def trace_names() -> list[str]:
    """The short names :func:`trace_path` understands."""
    return sorted(TRACES)


def trace_entry(name: str) -> TraceEntry:
    """The catalog entry of a short name (``KeyError`` listing the known names otherwise)."""
    try:
        return TRACES[name]
    except KeyError:
        raise KeyError(f"unknown trace {name!r}; known traces: {', '.join(trace_names())}") from None


def trace_path(name_or_path: str | os.PathLike) -> Path:
    """The file of a short name (resolved in ``data_dir()/traces``) or an existing path as given (a
    folder too: kv-cache-tester traces are folders of session files)."""
    if not isinstance(name_or_path, str) or name_or_path not in TRACES:
        path = Path(name_or_path)
        if path.is_file() or path.is_dir():
            return path
        raise FileNotFoundError(
            f"{str(name_or_path)!r} is neither an existing file nor a known trace ({', '.join(trace_names())})"
        )
    entry = TRACES[name_or_path]
    path = data_dir() / "traces" / entry.file
    if not path.is_file():
        fetch = f" (download it from {entry.download}, see data/traces/README.md)" if entry.download else ""
        raise FileNotFoundError(
            f"trace {name_or_path!r} should be at {path} but is not{fetch}; set {DATA_ENV} to the directory "
            f"holding traces/ if the data lives elsewhere"
        )
    return path
