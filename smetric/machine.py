"""The machine a measurement ran on, in one line, for the records that keep run times (benchmarks, figures)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

__all__ = ["describe_machine"]


def _cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux), else :func:`platform.processor`, else ``"CPU"``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or "CPU"


def _memory_gb() -> float | None:
    """Physical memory in GB (``sysconf``), or None where the platform does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        return None


def describe_machine() -> str:
    """``"<cores> cores (<CPU model>), <memory> GB RAM"``: the cores this process may use, not the host's."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = _memory_gb()
    ram = f", {memory:.0f} GB RAM" if memory else ""
    return f"{cores} cores ({_cpu_model()}){ram}"
