"""Workloads: the columnar Workload, trace loaders, sessions, the synthetic generator and its presets,
characterization, the published benchmark harnesses' generators."""

from .catalog import TRACES, data_dir, trace_names, trace_path
from .characterize import characterize, prefix_reuse, session_token_lorenz
from .core import Workload, WorkloadError, n_blocks_for
from .errors import TraceFormatError, TraceNoteWarning, TraceSkipWarning
from .kvcache_tester import Conversations, read_conversations
from .loaders import FORMATS, LoadedTrace, TraceLimits, detect_format, load_trace, read_trace
from .sessions import infer_sessions
from .turns import turn_of
from .writers import write_bailian, write_mooncake, write_trace

__all__ = ["Workload", "WorkloadError", "n_blocks_for",
           "TRACES", "data_dir", "trace_names", "trace_path",
           "TraceFormatError", "TraceNoteWarning", "TraceSkipWarning",
           "FORMATS", "LoadedTrace", "TraceLimits", "detect_format", "load_trace", "read_trace", "infer_sessions",
           "turn_of", "write_bailian", "write_mooncake", "write_trace",
           "HarnessWorkload", "harness_workload",
           "Conversations", "read_conversations",
           "AGENT", "CHAT", "PRESETS", "SessionWorkloadConfig", "get_preset", "synth_agent_workload",
           "synth_chat_workload", "synth_workload",
           "characterize", "prefix_reuse", "session_token_lorenz"]

# Lazy exports, module -> names (none named like its module, whose import would rebind the package attribute):
# the synthetic generator imports scipy and the harness generators build their own tables, neither of which
# reading or simulating a trace needs.
_LAZY = {
    "synthetic": ("AGENT", "CHAT", "PRESETS", "SessionWorkloadConfig", "get_preset", "synth_agent_workload",
                  "synth_chat_workload", "synth_workload"),
    "harness": ("HarnessWorkload", "harness_workload"),
}


def __getattr__(name: str):
    """The lazy exports (``_LAZY``), imported on first use."""
    import importlib

    for module, names in _LAZY.items():
        if name in names:
            return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
