"""GPU specifications: bf16 dense FLOP/s, memory capacity and bandwidth, NVLink and host-link bandwidth.

Values are the vendors' datasheet figures (NVIDIA A100/H100/H800/H20/H200/L20/L4/L40S/RTX 4090 datasheets and product
pages; H20: 148 TFLOPS bf16, 96 GB, 4.0 TB/s). Memory capacity is the datasheet "GB" figure read as GiB, which is
what the driver reports for the HBM parts to within 1 %; the GDDR6 L4 and L40S report 6-7 % less than that
reading (ECC on), so their capacity is the driver's total (nvidia-smi ``memory.total``). Link bandwidths are
nominal, per direction.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GPUSpec", "GPUS", "get_gpu", "gpu_names"]

_GIB = 2**30
_MIB = 2**20


@dataclass(frozen=True)
class GPUSpec:
    """One GPU model.

    Attributes:
        name: canonical short name (``a100``, ``h100`` ...).
        label: human-readable product name.
        bf16_flops: dense (no sparsity) bf16 tensor-core FLOP/s.
        mem_bytes: device memory capacity (bytes).
        mem_bw: device memory bandwidth (bytes/s).
        nvlink_bw: NVLink bandwidth per direction per GPU (bytes/s); 0 for PCIe-only parts.
        host_link_bw: GPU <-> host link bandwidth per direction (bytes/s), nominal PCIe.
        fp8_flops: dense FP8 tensor-core FLOP/s; 0 for parts without FP8 tensor cores (A100), where FP8
            weights run weight-only (W8A16) at the bf16 peak, as vLLM's FP8 Marlin path does.
    """

    name: str
    label: str
    bf16_flops: float
    mem_bytes: float
    mem_bw: float
    nvlink_bw: float
    host_link_bw: float
    fp8_flops: float = 0.0

    def __post_init__(self) -> None:
        for field_name in ("bf16_flops", "mem_bytes", "mem_bw", "host_link_bw"):
            if not getattr(self, field_name) > 0:
                raise ValueError(f"GPUSpec {self.name!r}: {field_name} must be > 0, got {getattr(self, field_name)}")
        for field_name in ("nvlink_bw", "fp8_flops"):
            if getattr(self, field_name) < 0:
                raise ValueError(f"GPUSpec {self.name!r}: {field_name} must be >= 0, got {getattr(self, field_name)}")

    @property
    def tp_link_bw(self) -> float:
        """Bandwidth used by tensor-parallel all-reduce: NVLink if present, else the PCIe host link."""
        return self.nvlink_bw if self.nvlink_bw > 0 else self.host_link_bw

    @property
    def has_fp8(self) -> bool:
        """True if the GPU has FP8 tensor cores (W8A8 GEMMs at :attr:`fp8_flops`)."""
        return self.fp8_flops > 0

    @property
    def ridge_tokens(self) -> float:
        """FLOP per byte at which a bf16 GEMM turns compute-bound (= tokens per iteration of the knee)."""
        return self.bf16_flops / self.mem_bw


_PCIE4 = 31.5e9
_PCIE5 = 63e9

# FP8 dense peaks: NVIDIA datasheets (H100/H800/H200 1979, H20 296, L20 ~239 TFLOPS; A100 has no
# FP8 tensor cores: vLLM runs FP8 checkpoints there weight-only via FP8 Marlin, vLLM docs "FP8 W8A8").
GPUS: dict[str, GPUSpec] = {g.name: g for g in (
    GPUSpec("a100", "A100-80G SXM", 312e12, 80 * _GIB, 2.039e12, 300e9, _PCIE4),
    GPUSpec("h100", "H100-80G SXM", 989e12, 80 * _GIB, 3.35e12, 450e9, _PCIE5, 1979e12),
    GPUSpec("h800", "H800-80G SXM", 989e12, 80 * _GIB, 3.35e12, 200e9, _PCIE5, 1979e12),
    GPUSpec("h20", "H20-96G", 148e12, 96 * _GIB, 4.0e12, 450e9, _PCIE5, 296e12),
    GPUSpec("h200", "H200-141G SXM", 989e12, 141 * _GIB, 4.8e12, 450e9, _PCIE5, 1979e12),
    GPUSpec("l20", "L20-48G", 119.5e12, 48 * _GIB, 864e9, 0.0, _PCIE4, 239e12),
    # bf16 dense tensor throughput of the RTX PRO 6000 Blackwell Server Edition: ~500 TFLOPS [mem];
    # bandwidth from LLMServingSim's config (1.597 TB/s). Its FP8 peak has no source here: FP8 weights
    # are timed at the bf16 peak (a conservative assumption).
    GPUSpec("rtx-pro-6000", "RTX PRO 6000 Blackwell Server", 503.8e12, 96 * _GIB, 1.597e12, 0.0, _PCIE5),
    # Ada Lovelace PCIe parts, no NVLink, FP8 tensor cores (compute capability 8.9). NVIDIA datasheets quote
    # tensor peaks "with sparsity"; dense is half. L4: bf16 242 / FP8 485 sparse -> 121 / 242.5 dense, 24 GB
    # GDDR6 at 300 GB/s, PCIe Gen4 x16 (64 GB/s bidirectional); nvidia-smi reports 23034 MiB. L40S: bf16
    # 362.05 dense (733 sparse), FP8 733 dense (1,466 sparse), 48 GB GDDR6 at 864 GB/s, PCIe Gen4 x16;
    # nvidia-smi reports 46068 MiB (akash-network/provider-configs PR #99).
    GPUSpec("l4", "L4-24G", 121e12, 23034 * _MIB, 300e9, 0.0, _PCIE4, 242.5e12),
    GPUSpec("l40s", "L40S-48G", 362.05e12, 46068 * _MIB, 864e9, 0.0, _PCIE4, 733e12),
    # GeForce RTX 4090 (AD102, Ada, PCIe Gen4 x16, no NVLink): NVIDIA Ada GPU architecture whitepaper, appendix
    # table: peak BF16 tensor 165.2 TFLOPS with FP32 accumulate (330.4 sparse), FP8 330.3 with FP32 accumulate,
    # 24 GB GDDR6X at 1,008 GB/s. Memory: the driver's total as LLMServingSim's RTX 4090 run recorded it
    # (meta.json ``device_total_memory_bytes`` 25,250,627,584; data/validation/recorded/rtx4090-llama-3.1-8b).
    GPUSpec("rtx-4090", "GeForce RTX 4090-24G", 165.2e12, 25_250_627_584, 1.008e12, 0.0, _PCIE4, 330.3e12),
)}


def gpu_names() -> list[str]:
    """Canonical GPU names, in table order."""
    return list(GPUS)


def get_gpu(name: str | GPUSpec) -> GPUSpec:
    """Look a GPU up by canonical name (case-insensitive); a GPUSpec is returned unchanged."""
    if isinstance(name, GPUSpec):
        return name
    key = str(name).strip().lower()
    if key not in GPUS:
        raise ValueError(f"unknown GPU {name!r}; valid names: {', '.join(GPUS)}")
    return GPUS[key]
