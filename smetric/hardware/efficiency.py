"""Per-GPU efficiency parameters of the performance model, and where the calibrated values live.

An :class:`Efficiency` turns a GPU's peak numbers into achieved ones (fractions of peak FLOP/s and
bandwidth, kernel-launch floors, effective bytes of the element-wise ops). The calibrated values are
fitted by :mod:`smetric.hardware.calibration` and committed as ``data/perf/efficiency.json``; GPUs
without measurements borrow the values of the closest measured GPU (:data:`TRANSFERRED_FROM`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

from ..context import run_context

__all__ = ["Efficiency", "NOMINAL", "TRANSFERRED_FROM", "ATTENTION_CALIBRATIONS", "FA3_FIELDS", "perf_data_dir",
           "efficiency_path", "load_efficiencies", "efficiency_for"]


@dataclass(frozen=True)
class Efficiency:
    """Achieved-vs-peak parameters of one GPU (one serving stack).

    Attributes:
        eta_weights: fraction of memory bandwidth reached streaming weights (linear layers, small batches).
        eta_compute: asymptotic fraction of bf16 peak reached by the linear-layer GEMMs.
        ramp_tokens: GEMM efficiency ramp: at ``n`` tokens it is ``eta_compute * n / (n + ramp_tokens)``.
        roof_sharpness: exponent ``a`` of the smooth roofline ``(mem**a + compute**a)**(1/a)``
            (large = hard ``max``; small = a soft knee).
        layer_floor_s: fixed time per layer of the linear and element-wise kernels (launch/latency floor).
        elem_bytes_hidden: effective bytes moved by element-wise ops (norms, residual adds, rope) per
            token per hidden unit, at the nominal memory bandwidth.
        elem_bytes_ffn: the same per token per (per-GPU) MLP intermediate unit (activation function).
        eta_attn: fraction of bf16 peak reached by prefill attention (causal FLOPs ``4*L*n_h*d*c*(p+c/2)``).
        attn_token_s: attention time per prefill-chunk token per layer besides the ``c*(p+c/2)`` term.
        eta_kv: fraction of memory bandwidth reached reading the KV cache in decode attention.
        decode_mixed_factor: slowdown of decode KV reads in a batch that also runs a prefill chunk.
        attn_floor_s: fixed time per layer of the attention kernels.
        decode_seq_s: extra time per decode sequence per layer in attention (per-sequence setup).
        moe_gemm_eff: fraction of the dense GEMMs' compute rate that the fused MoE expert GEMMs reach (1 = the
            same; fitted only where an MoE block profile exists, an assumption elsewhere).
        eta_link: fraction of the link bandwidth reached by the TP all-reduce (not calibrated: no data).
        allreduce_latency_s: latency of one all-reduce (two per layer at TP > 1; not calibrated).
        iteration_overhead_s: fixed per-iteration CPU time (scheduling, input preparation, sampling).
            The operator profiles do not measure it; 2 ms is a modern CUDA-graph stack.
        source: where the numbers come from (``nominal``, ``fit: ...``, ``transferred from ...``).
    """

    eta_weights: float = 0.8
    eta_compute: float = 0.72
    ramp_tokens: float = 0.0
    roof_sharpness: float = 2.0
    layer_floor_s: float = 25e-6
    elem_bytes_hidden: float = 24.0
    elem_bytes_ffn: float = 24.0
    eta_attn: float = 0.3
    attn_token_s: float = 0.0
    eta_kv: float = 0.7
    decode_mixed_factor: float = 1.0
    attn_floor_s: float = 8e-6
    decode_seq_s: float = 0.2e-6
    moe_gemm_eff: float = 1.0
    eta_link: float = 0.7
    allreduce_latency_s: float = 10e-6
    iteration_overhead_s: float = 2e-3
    source: str = "nominal"

    def __post_init__(self) -> None:
        for name in ("eta_weights", "eta_compute", "eta_attn", "eta_kv", "eta_link", "moe_gemm_eff"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"Efficiency.{name} must be in (0, 1], got {value}")
        if not 1.0 <= self.roof_sharpness <= 64.0:
            raise ValueError(f"Efficiency.roof_sharpness must be in [1, 64], got {self.roof_sharpness}")
        if self.decode_mixed_factor < 1.0:
            raise ValueError(f"Efficiency.decode_mixed_factor must be >= 1, got {self.decode_mixed_factor}")
        for name in ("ramp_tokens", "layer_floor_s", "attn_token_s", "elem_bytes_hidden", "elem_bytes_ffn",
                     "attn_floor_s", "decode_seq_s", "allreduce_latency_s", "iteration_overhead_s"):
            value = getattr(self, name)
            if not value >= 0.0:
                raise ValueError(f"Efficiency.{name} must be >= 0, got {value}")

    def to_dict(self) -> dict:
        """Plain dict (for JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Efficiency":
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown Efficiency fields {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)


NOMINAL = Efficiency()

# GPUs without measurements -> the measured GPU whose efficiencies they borrow (see README of data/perf).
# The H20 has its own entry: its prefill-attention efficiency is fitted, the rest comes from the H100 fit.
TRANSFERRED_FROM: dict[str, str] = {
    "h800": "h100",          # same GH100 die and HBM3 as H100 SXM; only NVLink is narrower (a spec input)
    "h200": "h100",          # same GH100 die, HBM3e: same kernels, more bandwidth (a spec input)
    "l20": "rtx-pro-6000",   # PCIe GDDR part without NVLink, like the RTX PRO 6000 (closest memory system)
    # Assumption (no L4/L40S profile here): the Ada PCIe GDDR6 parts borrow the RTX PRO 6000 fit as the L20 does;
    # their own peak FLOP/s (bf16, FP8) and bandwidth are spec inputs.
    "l4": "rtx-pro-6000",
    "l40s": "rtx-pro-6000",
}


#: Prefill-attention calibrations of the Hopper GPUs: ``fa3`` (default) = ``FA3_FIELDS`` fitted on published
#: FlashAttention-3 benchmarks (``data/perf/hopper_attention.csv``); ``a100-borrowed`` = the A100 FlashAttention-2
#: fit (Vidur) that the Hopper GPUs borrowed before those data were added, kept as a sensitivity setting.
ATTENTION_CALIBRATIONS = ("fa3", "a100-borrowed")
#: The fields the FlashAttention-3 data fit (``smetric.hardware.calibration.HOPPER_FIELDS``).
FA3_FIELDS = ("eta_attn", "attn_token_s")
_A100 = "a100"


def perf_data_dir() -> Path:
    """``perf/`` of the run context's data directory (``<repo>/data/perf`` unless ``$SMETRIC_DATA`` moves it)."""
    return run_context().data_dir / "perf"


def efficiency_path() -> Path:
    """The committed calibration: ``data/perf/efficiency.json``."""
    return perf_data_dir() / "efficiency.json"


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Efficiency]:
    with open(path) as fh:
        raw = json.load(fh)
    return {gpu: Efficiency.from_dict(entry) for gpu, entry in raw["gpus"].items()}


def load_efficiencies(path: str | Path | None = None) -> dict[str, Efficiency]:
    """Calibrated efficiencies per measured GPU, read from ``efficiency.json``."""
    path = Path(path) if path is not None else efficiency_path()
    if not path.exists():
        raise FileNotFoundError(f"no calibrated efficiencies at {path}; run smetric.hardware.calibration.fit_all()")
    return dict(_load(str(path)))


def efficiency_for(gpu_name: str, path: str | Path | None = None, attention: str = "fa3") -> Efficiency:
    """The calibrated efficiency of ``gpu_name``, transferred from the closest measured GPU if needed.

    ``attention`` (one of :data:`ATTENTION_CALIBRATIONS`) picks the prefill-attention calibration of GPUs
    fitted on FlashAttention-3 data (H100, H20, and H200/H800 through the H100); ``a100-borrowed`` replaces
    their :data:`FA3_FIELDS` by the A100's. Other GPUs have no FA3 fit and are the same under both."""
    if attention not in ATTENTION_CALIBRATIONS:
        raise ValueError(f"attention must be one of {ATTENTION_CALIBRATIONS}, got {attention!r}")
    table = load_efficiencies(path)
    if gpu_name in table:
        eff = table[gpu_name]
    else:
        donor = TRANSFERRED_FROM.get(gpu_name)
        if donor is None or donor not in table:
            raise ValueError(f"no calibrated efficiency for GPU {gpu_name!r} (measured: {sorted(table)})")
        eff = replace(table[donor], source=f"transferred from {donor} ({table[donor].source})")
    if attention == "a100-borrowed" and "FlashAttention-3" in eff.source:
        a100 = table[_A100]
        eff = replace(eff, **{f: getattr(a100, f) for f in FA3_FIELDS},
                      source=f"{eff.source}; {', '.join(FA3_FIELDS)} borrowed from {_A100} (FlashAttention-2)")
    return eff
