"""Workloads: the columnar Workload, trace loaders, sessions, the synthetic generator and its presets,
characterization, the published benchmark harnesses' generators."""

from .catalog import TRACES, data_dir, trace_names, trace_path
from .characterize import characterize, prefix_reuse, session_token_lorenz
from .core import Workload, WorkloadError, n_blocks_for
from .errors import TraceFormatError, TraceNoteWarning, TraceSkipWarning
from .harness import HarnessWorkload, harness_workload
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

_SYNTHETIC = ("AGENT", "CHAT", "PRESETS", "SessionWorkloadConfig", "get_preset", "synth_agent_workload",
              "synth_chat_workload", "synth_workload")


def __getattr__(name: str):
    """Lazy exports of the synthetic generator (it imports scipy, which reading a trace does not need)."""
    if name in _SYNTHETIC:
        from . import synthetic

        return getattr(synthetic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
