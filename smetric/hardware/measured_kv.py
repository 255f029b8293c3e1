"""KV capacities measured by real engines (``data/perf/kv_capacity.json``), preferred to the model's estimate."""

from __future__ import annotations

import json
from functools import lru_cache

__all__ = ["measured_kv_tokens"]


@lru_cache(maxsize=1)
def _entries() -> tuple[dict, ...]:
    from ..context import run_context

    path = run_context().data_dir / "perf" / "kv_capacity.json"
    return tuple(json.loads(path.read_text())["measured"]) if path.is_file() else ()


def measured_kv_tokens(model: str, gpu: str, tp: int, gpu_mem_util: float, kv_dtype: str = "bf16") -> int | None:
    """HBM KV tokens per instance a real engine reported for exactly this setting, or None (use the estimate)."""
    for e in _entries():
        if (e["model"], e["gpu"], int(e["tp"]), float(e["gpu_mem_util"]), e["kv_dtype"]) == (
                model.lower(), gpu.lower(), int(tp), float(gpu_mem_util), kv_dtype):
            return int(e["tokens"])
    return None
