"""Cluster configuration: instances, engine limits, KV tiers, SLO and replay (frozen, validated dataclasses).

Link and store defaults (the KV connector's are sourced in ``data/perf/kv_path.json``):

* host DRAM <-> GPU is PCIe-bound: a measured ~25 GB/s peak on Gen4 x16 (ZaidQureshi/bam issue #54);
* a global KV store (Mooncake Store) is NIC-bound: the Mooncake Transfer Engine measured
  190 GB/s on 8x400 Gbps RoCE, i.e. ~24 GB/s per GPU of an 8-GPU node, and 87 GB/s on 4x200 Gbps
  (kvcache-ai/Mooncake README);
* a P->D transfer over one 400 Gb/s RDMA NIC: 50 GB/s line rate, taken as 50 GB/s (an assumption).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..hardware import kernel
from ..hardware.efficiency import ATTENTION_CALIBRATIONS
from ..hardware.models import MODELS
from ..hardware.perfmodel import DTYPES
from .abandonment import Patience
from .connector import KVConnector
from .queueing import QueueDiscipline
from .router_info import RouterInfo
from .serving_stack import ServingStack

__all__ = ["SLO", "GlobalStore", "HardwareSpec", "ClusterConfig", "GB", "KV_ALLOCATIONS"]

GB = 1e9  # bytes per GB (decimal, as link and memory vendors count)

MODES = ("colocated", "disaggregated")
REPLAYS = ("open", "closed")
KV_ALLOCATIONS = ("reserve", "incremental")
DRAM_POLICIES = ("spill", "write-through")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _positive_int(name: str, value) -> None:
    _require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0,
             f"{name} must be a positive integer, got {value!r}")


def _positive(name: str, value, allow_inf: bool = False) -> None:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and value > 0
    ok = ok and (allow_inf or math.isfinite(value))
    _require(ok, f"{name} must be a positive{'' if allow_inf else ' finite'} number, got {value!r}")


def check_efficiency_overrides(overrides) -> None:
    """``(field, value)`` pairs of :class:`~smetric.hardware.efficiency.Efficiency`'s numeric fields, each value in
    that field's range (checked on the nominal table)."""
    from ..hardware.efficiency import Efficiency

    numeric = [f.name for f in dataclasses.fields(Efficiency) if f.name != "source"]
    ok = isinstance(overrides, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in overrides)
    _require(ok, f"efficiency_overrides must be a tuple of (field, value) pairs, got {overrides!r}")
    for name, value in overrides:
        _require(name in numeric, f"efficiency_overrides: unknown field {name!r}; known: {', '.join(numeric)}")
        _require(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
                 f"efficiency_overrides: {name} must be a finite number, got {value!r}")
    dataclasses.replace(Efficiency(), **dict(overrides))  # each field's own range


def _non_negative(name: str, value) -> None:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    _require(ok and math.isfinite(value) and value >= 0, f"{name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True)
class SLO:
    """Per-request service-level objective: TTFT <= ttft_base + ttft_per_1k * prompt/1000 and TPOT <= tpot.

    Defaults are the paper's (S1 p10): b = 1 s, a = 62.5 ms per 1K prompt tokens, TPOT <= 20 ms.
    """

    ttft_base: float = 1.0
    ttft_per_1k: float = 0.0625
    tpot: float = 0.020

    def __post_init__(self) -> None:
        _positive("SLO.ttft_base", self.ttft_base)
        _non_negative("SLO.ttft_per_1k", self.ttft_per_1k)
        _positive("SLO.tpot", self.tpot)

    def ttft_limit(self, input_len) -> np.ndarray:
        """TTFT limit (s) for prompts of ``input_len`` tokens."""
        return self.ttft_base + self.ttft_per_1k * np.asarray(input_len, dtype=np.float64) / 1000.0


@dataclass(frozen=True)
class GlobalStore:
    """A cluster-wide KV store (Mooncake Store / LMCache style): one LRU, one link per instance.

    Attributes:
        capacity_gb: bytes it can hold (GB); ``math.inf`` = unlimited.
        bandwidth_gbs: read bandwidth of each instance's link to the store (GB/s); one instance's
            loads are serialised on its link.
        latency_s: fixed latency added to every load (s).
    """

    capacity_gb: float
    bandwidth_gbs: float
    latency_s: float = 0.5e-3

    def __post_init__(self) -> None:
        _positive("GlobalStore.capacity_gb", self.capacity_gb, allow_inf=True)
        _positive("GlobalStore.bandwidth_gbs", self.bandwidth_gbs)
        _non_negative("GlobalStore.latency_s", self.latency_s)

    @classmethod
    def provisioned(cls, tp: int = 1) -> "GlobalStore":
        """A store that holds the whole working set, read at ~24 GB/s per GPU of the instance.

        24 GB/s per GPU is the Mooncake Transfer Engine's measured 190 GB/s on 8x400 Gbps RoCE
        shared by the 8 GPUs of a node (kvcache-ai/Mooncake README); an instance of ``tp`` GPUs owns
        ``tp`` of those NIC shares. The latency (0.5 ms) covers the store's metadata lookup.
        """
        _positive_int("tp", tp)
        return cls(capacity_gb=math.inf, bandwidth_gbs=23.75 * tp, latency_s=0.5e-3)

    @classmethod
    def parse(cls, text: str, tp: int = 1) -> "GlobalStore | None":
        """``provisioned`` | ``none`` | ``CAPACITY_GB:BANDWIDTH_GBPS`` (the CLI syntax)."""
        key = text.strip().lower()
        if key == "none":
            return None
        if key == "provisioned":
            return cls.provisioned(tp)
        parts = key.split(":")
        if len(parts) != 2:
            raise ValueError(f"--global-store must be provisioned, none or CAPACITY_GB:BANDWIDTH_GBPS, got {text!r}")
        try:
            capacity, bandwidth = float(parts[0]), float(parts[1])
        except ValueError:
            raise ValueError(f"--global-store CAPACITY_GB:BANDWIDTH_GBPS needs two numbers, got {text!r}") from None
        return cls(capacity_gb=capacity, bandwidth_gbs=bandwidth)


@dataclass(frozen=True)
class HardwareSpec:
    """What the engine needs from the performance model of one instance.

    Attributes:
        coefficients: the numba coefficient vector (see :mod:`smetric.hardware.kernel`).
        kv_bytes_per_token: KV bytes of one token (whole model, all TP shards).
        kv_capacity_tokens: HBM KV capacity of one instance (tokens).
        l_eq: context length at which prefill attention per token equals the linear cost per token.
        prefill_rate: prefill tokens per second of one instance (no cache, mid-size chunks).
    """

    coefficients: tuple
    kv_bytes_per_token: float
    kv_capacity_tokens: int
    l_eq: float
    prefill_rate: float

    def __post_init__(self) -> None:
        coef = tuple(float(c) for c in self.coefficients)
        object.__setattr__(self, "coefficients", coef)
        _require(len(coef) == kernel.N_COEF,
                 f"HardwareSpec.coefficients needs {kernel.N_COEF} entries, got {len(coef)}")
        _require(all(math.isfinite(c) and c >= 0 for c in coef),
                 f"HardwareSpec.coefficients must be finite and >= 0, got {coef}")
        _require(kernel.iteration_time_nb(np.asarray(coef), 1.0, 0.0, 1.0, 1.0) > 0,
                 "HardwareSpec.coefficients give a one-token iteration zero duration; every iteration must take time")
        _positive("HardwareSpec.kv_bytes_per_token", self.kv_bytes_per_token)
        _positive_int("HardwareSpec.kv_capacity_tokens", self.kv_capacity_tokens)
        _positive("HardwareSpec.l_eq", self.l_eq)
        _positive("HardwareSpec.prefill_rate", self.prefill_rate)

    @property
    def coef_array(self) -> np.ndarray:
        """The coefficients as the float64 array the numba kernels take."""
        return np.asarray(self.coefficients, dtype=np.float64)

    @classmethod
    def from_coefficients(cls, coefficients, kv_bytes_per_token: float, kv_capacity_tokens: int) -> "HardwareSpec":
        """A spec from a coefficient vector alone: ``l_eq`` = linear / attention cost per token,
        ``prefill_rate`` = 2048 tokens over the time of a lone 2048-token prefill."""
        coef = np.asarray(coefficients, dtype=np.float64)
        attn = coef[kernel.C_ATTN_PREFILL]
        l_eq = coef[kernel.C_LIN_PER_TOKEN] / attn if attn > 0 else 1e12
        rate = 2048.0 / kernel.prefill_time_nb(coef, 2048.0, 0.0)
        return cls(tuple(coef), float(kv_bytes_per_token), int(kv_capacity_tokens), float(l_eq), float(rate))

    @classmethod
    def example(cls, kv_capacity_tokens: int = 200_000) -> "HardwareSpec":
        """The uncalibrated example model of :func:`smetric.hardware.kernel.example_coefficients` (tests)."""
        return cls.from_coefficients(kernel.example_coefficients(), 131072.0, kv_capacity_tokens)

    @classmethod
    def from_perfmodel(cls, model: str, gpu: str, tp: int, gpu_mem_util: float, max_batched_tokens: int, *,
                       weight_dtype: str = "bf16", kv_dtype: str = "bf16", attention: str = "fa3",
                       iteration_overhead_s: float | None = None,
                       efficiency_overrides: tuple[tuple[str, float], ...] = ()) -> "HardwareSpec":
        """The spec of ``model`` on ``tp`` x ``gpu`` from :class:`smetric.hardware.PerfModel`
        (``max_batched_tokens`` sizes its activation reserve; the precisions and the Hopper attention
        calibration are PerfModel's ``weight_dtype``, ``kv_dtype`` and ``attention``). The KV capacity is a real
        engine's where ``data/perf/kv_capacity.json`` has this setting, else PerfModel's estimate.
        ``iteration_overhead_s`` replaces the efficiency table's per-iteration CPU time (None = keep it);
        ``efficiency_overrides`` replaces fields of the GPU's efficiency table (``(field, value)`` pairs)."""
        from ..hardware import PerfModel, get_gpu  # the performance model lives in its own package
        from ..hardware.efficiency import efficiency_for
        from ..hardware.measured_kv import measured_kv_tokens

        eff = dataclasses.replace(efficiency_for(get_gpu(gpu).name, attention=attention), **dict(efficiency_overrides))
        pm = PerfModel(model, gpu, tp, efficiency=eff, max_batched_tokens=max_batched_tokens,
                       weight_dtype=weight_dtype, kv_dtype=kv_dtype)
        kv_tokens = measured_kv_tokens(model, gpu, tp, gpu_mem_util, kv_dtype) or pm.kv_capacity_tokens(gpu_mem_util)
        coef = np.asarray(pm.coefficients(), dtype=np.float64)
        rate = float(pm.prefill_rate())
        if iteration_overhead_s is not None:
            coef[kernel.C_OVERHEAD] += iteration_overhead_s - pm.efficiency.iteration_overhead_s
            rate = 2048.0 / kernel.prefill_time_nb(coef, 2048.0, 0.0)
        return cls(tuple(coef), float(pm.kv_bytes_per_token), int(kv_tokens), float(pm.l_eq), rate)


@dataclass(frozen=True)
class ClusterConfig:
    """A cluster of identical inference instances.

    Attributes:
        model, gpu, tp: the served model, the GPU type and tensor-parallel degree of one instance.
        n_instances: instances in the cluster (prefill + decode when disaggregated).
        mode: ``colocated`` (every instance prefills and decodes) or ``disaggregated``
            (``n_prefill`` prefill instances hand the KV over to ``n_decode`` decode instances).
        max_num_seqs: running sequences per instance (vLLM default 256).
        max_batched_tokens: token budget of one iteration (decode tokens first, then prefill chunks).
        gpu_mem_util: fraction of HBM the engine may use (weights + KV).
        block_size: engine KV block (tokens); the workload is coarsened to the smallest multiple
            of its own block size that is >= this. 256 keeps cache bookkeeping at ~100 blocks for a
            25k-token agent prompt while a prefix hit loses < 256 tokens to rounding.
        dram_gb, dram_bandwidth_gbs: per-instance host-DRAM KV tier (0 GB = none) and its PCIe
            bandwidth (25 GB/s ~ PCIe Gen4 x16 achieved).
        dram_policy: what enters the DRAM tier. ``"spill"``: blocks evicted from HBM (an LMCache-style
            local CPU backend fed by evictions); ``"write-through"``: every prompt block as its prefill
            completes, and nothing at eviction (vLLM's ``OffloadingConnector``, which stores computed
            blocks to CPU and loads them back on a GPU miss). See the engine's "Eviction order".
        global_store: the cluster-wide KV store, or None.
        kv_load_overlap: True = a request loading KV waits while the instance keeps iterating on
            others; False = the load time is added to the iteration that admits the request.
        pd_bandwidth_gbs: P->D KV transfer bandwidth into each decode instance (GB/s; one 400 Gb/s NIC).
        slo: the per-request SLO used by the metrics.
        replay: ``open`` (arrival = trace time / load factor) or ``closed`` (a session's next turn
            arrives no earlier than its previous turn's finish plus the recorded gap).
        hardware: an explicit :class:`HardwareSpec` (tests, custom hardware); None = from the
            performance model of ``model`` on ``tp`` x ``gpu``.
        queue: the order in which an instance admits its waiting requests: a
            :class:`~smetric.cluster.queueing.QueueDiscipline` or a discipline name
            (``fcfs``, ``smetric-score``, ``mlfq``) with default parameters.
        cache_replies: a finished request's reply KV joins its instance's HBM prefix cache, chained
            after its prompt under the block ids its follow-up's prompt uses (vLLM v1 and SGLang cache
            generated tokens); False = the reply's blocks are freed at finish (the engine's original rule).
        global_store_replies: the reply's blocks are also written to the global store at finish
            (LMCache's ``save_decode_cache``; off by default, as LMCache documents it).
        hit_granularity: None = prefix hits count whole engine blocks (the original rule); ``g`` tokens =
            a follow-up also hits its parent's cached partial last engine block (prompt, or prompt + reply
            with ``cache_replies``) down to ``g``-token granularity (16 = vLLM's block size).
        kv_connector: how instances reach the global store: a
            :class:`~smetric.cluster.connector.KVConnector` or a preset name (``ideal`` = the original
            link model; ``lmcache-mooncake`` and its ``-fast``/``-slow`` bounds). With an ``lmcache``
            connector (and a global store) every KV load blocks the batch and ``kv_load_overlap`` is unused.
        weight_dtype, kv_dtype: storage precision (``bf16`` or ``fp8``, :data:`smetric.hardware.perfmodel.DTYPES`)
            of the linear layers' weights and of the KV cache, passed to the performance model.
        attention_calibration: prefill-attention calibration of Hopper GPUs (``fa3`` = fitted on FlashAttention-3
            benchmarks, the default; ``a100-borrowed`` = the A100 FlashAttention-2 fit they borrowed before;
            :data:`smetric.hardware.efficiency.ATTENTION_CALIBRATIONS`).
        kv_allocation: how an instance allocates a request's HBM KV blocks (:data:`KV_ALLOCATIONS`):
            ``reserve`` = prompt and output are reserved at admission (the engine's original rule);
            ``incremental`` = vLLM's rule (v0.6+, V1): blocks for the tokens scheduled now, one more whenever
            a running sequence crosses a block boundary, and recompute preemption of the most recently
            admitted running request when a block cannot be had (see ``docs/engine.md``). Colocated mode,
            the ``fcfs`` queue and no global store only.
        prefill_first: False (the default) = an iteration runs the decodes and prompt chunks together, the decodes
            first in the token budget (vLLM V1, vLLM V0 with chunked prefill); True = an iteration that has prompt
            work runs no decodes and the prompts get the whole budget; the running sequences wait for it (SGLang's
            scheduler runs a prefill batch whenever it can form one, ``get_next_batch_to_run``, mixed batches being
            off by default; vLLM V0 without chunked prefill, ``vllm/core/scheduler.py`` ``_schedule_default``).
            Colocated mode, the ``fcfs`` queue and the ideal KV connector only.
        chunked_prefill: True (the default) = a prompt takes what is left of the budget and goes on in the next
            iteration; False = prompts are scheduled whole (vLLM V0's default without chunked prefill): a prompt
            that does not fit what is left of the budget waits, and so does every one behind it; a prompt longer
            than the whole budget (which vLLM V0 rejects) runs alone, chunked. Needs ``prefill_first``.
        router: what the router knows, and when (:class:`~smetric.cluster.router_info.RouterInfo`:
            refresh intervals, KV-event delay, router replicas); the default is the exact view.
        engine: the serving engine's own costs (:class:`~smetric.cluster.serving_stack.ServingStack` or a row name
            of ``data/perf/serving_stack.json``: per-iteration CPU time and whether it overlaps the GPU, the
            first-token lag of async scheduling, time outside the engine); ``legacy`` (the default) = none of it but
            the efficiency table's per-iteration constant. Its iteration time applies to the performance model's
            spec, not to an explicit ``hardware`` spec (whose coefficients are the whole iteration).
        kv_capacity_tokens: HBM KV tokens per instance as a real engine reported them (vLLM's log); None = the
            hardware spec's (measured table or the performance model's estimate). Counted with the hybrid KV
            manager on: where ``hybrid_kv_manager`` is off, the same bytes hold fewer tokens.
        efficiency_overrides: ``(field, value)`` pairs replacing fields of the GPU's efficiency table
            (:class:`~smetric.hardware.efficiency.Efficiency`) in the performance model's spec: what-if studies
            (e.g. a slower GEMM rate), never a default.
        hybrid_kv_manager: vLLM's hybrid KV cache manager (HMA), on (the default): a sliding-window model's window
            layers keep only their window, the KV pool and every transfer count the full-attention layers only.
            False: vLLM turned it off whenever a KV connector was configured (``--kv-transfer-config``, before
            connectors supported it, vLLM #41830): every layer is stored as full attention, so a token's KV counts
            all layers (the same HBM and DRAM bytes hold fewer tokens, transfers move more) and HBM's cached
            blocks serve prefix hits. No effect on models without sliding-window layers.
        patience: sessions' patience (:class:`~smetric.cluster.abandonment.Patience` or its text form,
            e.g. ``lognormal:60:1``): a request that waited longer for admission abandons its session (see
            ``docs/engine.md``, "Abandonment"); None (the default) = nobody abandons.
    """

    model: str
    gpu: str
    tp: int = 1
    n_instances: int = 1
    mode: str = "colocated"
    n_prefill: int = 0
    n_decode: int = 0
    max_num_seqs: int = 256
    max_batched_tokens: int = 4096
    gpu_mem_util: float = 0.9
    block_size: int = 256
    dram_gb: float = 0.0
    dram_bandwidth_gbs: float = 25.0
    dram_policy: str = "spill"
    global_store: GlobalStore | None = None
    kv_load_overlap: bool = True
    pd_bandwidth_gbs: float = 50.0
    slo: SLO = field(default_factory=SLO)
    replay: str = "open"
    hardware: HardwareSpec | None = None
    queue: QueueDiscipline = field(default_factory=QueueDiscipline)
    cache_replies: bool = True
    global_store_replies: bool = False
    hit_granularity: int | None = None
    kv_connector: KVConnector = field(default_factory=KVConnector)
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    attention_calibration: str = "fa3"
    kv_allocation: str = "reserve"
    prefill_first: bool = False
    chunked_prefill: bool = True
    router: RouterInfo = RouterInfo()
    patience: Patience | None = None
    engine: ServingStack = ServingStack()
    kv_capacity_tokens: int | None = None
    efficiency_overrides: tuple[tuple[str, float], ...] = ()
    hybrid_kv_manager: bool = True

    def __post_init__(self) -> None:
        _require(isinstance(self.model, str) and self.model.strip() != "", f"model must be a name, got {self.model!r}")
        _require(isinstance(self.gpu, str) and self.gpu.strip() != "", f"gpu must be a name, got {self.gpu!r}")
        _positive_int("tp", self.tp)
        _positive_int("n_instances", self.n_instances)
        _require(self.mode in MODES, f"mode must be one of {MODES}, got {self.mode!r}")
        if self.mode == "disaggregated":
            _positive_int("n_prefill", self.n_prefill)
            _positive_int("n_decode", self.n_decode)
            _require(self.n_prefill + self.n_decode == self.n_instances,
                     f"disaggregated: n_prefill ({self.n_prefill}) + n_decode ({self.n_decode}) "
                     f"must equal n_instances ({self.n_instances})")
        else:
            _require(self.n_prefill == 0 and self.n_decode == 0,
                     "n_prefill / n_decode are only meaningful with mode='disaggregated'")
        _positive_int("max_num_seqs", self.max_num_seqs)
        _positive_int("max_batched_tokens", self.max_batched_tokens)
        _require(self.max_batched_tokens >= self.max_num_seqs,
                 f"max_batched_tokens ({self.max_batched_tokens}) must be >= max_num_seqs ({self.max_num_seqs}) "
                 "so that every running sequence can decode in each iteration")
        _require(isinstance(self.gpu_mem_util, (int, float)) and 0 < self.gpu_mem_util <= 1,
                 f"gpu_mem_util must be in (0, 1], got {self.gpu_mem_util!r}")
        _positive_int("block_size", self.block_size)
        _non_negative("dram_gb", self.dram_gb)
        _positive("dram_bandwidth_gbs", self.dram_bandwidth_gbs)
        _require(self.dram_policy in DRAM_POLICIES,
                 f"dram_policy must be one of {DRAM_POLICIES}, got {self.dram_policy!r}")
        _require(self.global_store is None or isinstance(self.global_store, GlobalStore),
                 f"global_store must be a GlobalStore or None, got {self.global_store!r}")
        _require(isinstance(self.kv_load_overlap, bool),
                 f"kv_load_overlap must be a bool, got {self.kv_load_overlap!r}")
        _positive("pd_bandwidth_gbs", self.pd_bandwidth_gbs, allow_inf=True)
        _require(isinstance(self.slo, SLO), f"slo must be an SLO, got {self.slo!r}")
        _require(self.replay in REPLAYS, f"replay must be one of {REPLAYS}, got {self.replay!r}")
        _require(self.hardware is None or isinstance(self.hardware, HardwareSpec),
                 f"hardware must be a HardwareSpec or None, got {self.hardware!r}")
        if isinstance(self.queue, str):
            object.__setattr__(self, "queue", QueueDiscipline(self.queue))
        _require(isinstance(self.queue, QueueDiscipline),
                 f"queue must be a QueueDiscipline or a discipline name, got {self.queue!r}")
        _require(isinstance(self.cache_replies, bool), f"cache_replies must be a bool, got {self.cache_replies!r}")
        _require(isinstance(self.hybrid_kv_manager, bool),
                 f"hybrid_kv_manager must be a bool, got {self.hybrid_kv_manager!r}")
        _require(isinstance(self.global_store_replies, bool),
                 f"global_store_replies must be a bool, got {self.global_store_replies!r}")
        if self.hit_granularity is not None:
            _positive_int("hit_granularity", self.hit_granularity)
        if isinstance(self.kv_connector, str):
            object.__setattr__(self, "kv_connector", KVConnector.preset(self.kv_connector))
        _require(isinstance(self.kv_connector, KVConnector),
                 f"kv_connector must be a KVConnector or a preset name, got {self.kv_connector!r}")
        for name in ("weight_dtype", "kv_dtype"):
            _require(getattr(self, name) in DTYPES,
                     f"{name} must be one of {sorted(DTYPES)}, got {getattr(self, name)!r}")
        _require(self.attention_calibration in ATTENTION_CALIBRATIONS,
                 f"attention_calibration must be one of {ATTENTION_CALIBRATIONS}, got {self.attention_calibration!r}")
        _require(isinstance(self.router, RouterInfo), f"router must be a RouterInfo, got {self.router!r}")
        if isinstance(self.patience, str):
            object.__setattr__(self, "patience", Patience.parse(self.patience))
        _require(self.patience is None or isinstance(self.patience, Patience),
                 f"patience must be a Patience, its text form or None, got {self.patience!r}")
        if isinstance(self.engine, str):
            object.__setattr__(self, "engine", ServingStack.preset(self.engine))
        _require(isinstance(self.engine, ServingStack),
                 f"engine must be a ServingStack or an engine row name, got {self.engine!r}")
        if self.kv_capacity_tokens is not None:
            _positive_int("kv_capacity_tokens", self.kv_capacity_tokens)
        if self.hardware is not None:
            _require((self.weight_dtype, self.kv_dtype, self.attention_calibration) == ("bf16", "bf16", "fa3"),
                     "weight_dtype, kv_dtype and attention_calibration select the performance model; "
                     "they cannot apply to an explicit hardware spec")
        check_efficiency_overrides(self.efficiency_overrides)
        _require(not (self.efficiency_overrides and self.hardware is not None),
                 "efficiency_overrides apply to the performance model's spec, not to an explicit hardware spec")
        for name in ("prefill_first", "chunked_prefill"):
            value = getattr(self, name)
            _require(isinstance(value, bool), f"{name} must be True or False, got {value!r}")
        _require(self.chunked_prefill or self.prefill_first,
                 "chunked_prefill=False needs prefill_first=True (vLLM V0 runs whole prompts apart from the decodes)")
        if self.prefill_first:
            _require(not self.disaggregated, "prefill_first=True is implemented for mode='colocated' only")
            _require(self.queue.name == "fcfs",
                     f"prefill_first=True is implemented for the fcfs queue only, got {self.queue.name!r}")
            _require(self.kv_connector.ideal, "prefill_first=True is implemented with the ideal KV connector only")
        _require(self.kv_allocation in KV_ALLOCATIONS,
                 f"kv_allocation must be one of {KV_ALLOCATIONS}, got {self.kv_allocation!r}")
        if self.kv_allocation == "incremental":
            _require(not self.disaggregated, "kv_allocation='incremental' is implemented for mode='colocated' only")
            _require(self.global_store is None, "kv_allocation='incremental' is implemented without a global store "
                     "only (a store's changes would make the FCFS head's fit change inside a decode-only run)")
            _require(self.queue.name == "fcfs",
                     f"kv_allocation='incremental' is implemented for the fcfs queue only, got {self.queue.name!r}")

    # ------------------------------------------------------------------ derived
    @property
    def hbm_prefix_reuse(self) -> bool:
        """HBM's cached blocks serve prefix hits: False for a hybrid sliding-window model (e.g. gpt-oss) on an
        engine row without ``swa_prefix_reuse`` (:class:`~smetric.cluster.serving_stack.ServingStack`) with the hybrid
        KV manager on. A model outside the model table (an explicit ``hardware`` spec) counts as full attention."""
        return self.engine.swa_prefix_reuse or not self.hybrid_kv_manager or self._sliding_window_model is None

    @property
    def kv_layer_factor(self) -> float:
        """How many times a token's KV grows when every layer is stored in full (the hybrid manager off on a
        sliding-window model: all layers over the full-attention ones); 1 otherwise."""
        model = self._sliding_window_model
        return 1.0 if self.hybrid_kv_manager or model is None else model.layers / model.full_attention_layers

    @property
    def _sliding_window_model(self):
        """The model table's entry of ``model`` if it has sliding-window layers, else None."""
        model = MODELS.get(self.model.strip().lower())
        return model if model is not None and model.sliding_layers > 0 else None

    @property
    def disaggregated(self) -> bool:
        """True in prefill/decode-disaggregated mode."""
        return self.mode == "disaggregated"

    @property
    def n_routable(self) -> int:
        """Instances the routing policy chooses among (the prefill instances when disaggregated)."""
        return self.n_prefill if self.disaggregated else self.n_instances

    def hardware_spec(self) -> HardwareSpec:
        """The explicit ``hardware`` or the performance model's spec of this model/GPU/TP (its KV pool
        ``kv_capacity_tokens`` if given), in tokens of every layer where the hybrid manager is off."""
        spec = self.hardware
        if spec is None:
            spec = HardwareSpec.from_perfmodel(self.model, self.gpu, self.tp, self.gpu_mem_util,
                                               self.max_batched_tokens, weight_dtype=self.weight_dtype,
                                               kv_dtype=self.kv_dtype, attention=self.attention_calibration,
                                               iteration_overhead_s=self.engine.iteration_overhead_s,
                                               efficiency_overrides=self.efficiency_overrides)
        if self.kv_capacity_tokens is not None:
            spec = dataclasses.replace(spec, kv_capacity_tokens=self.kv_capacity_tokens)
        factor = self.kv_layer_factor
        if factor != 1.0:  # the same bytes hold fewer tokens of every layer's KV
            spec = dataclasses.replace(spec, kv_bytes_per_token=spec.kv_bytes_per_token * factor,
                                       kv_capacity_tokens=int(spec.kv_capacity_tokens / factor))
        return spec

    def engine_block_size(self, workload_block_size: int) -> int:
        """Smallest multiple of the workload's block size that is >= ``block_size``."""
        k = max(1, -(-self.block_size // workload_block_size))
        return k * workload_block_size

    def describe(self) -> str:
        """One line for logs and plot titles."""
        shape = (f"{self.n_prefill}P+{self.n_decode}D" if self.disaggregated else f"{self.n_instances}x")
        store = "no global store" if self.global_store is None else (
            f"global store {self.global_store.capacity_gb:g} GB @ {self.global_store.bandwidth_gbs:g} GB/s")
        if self.global_store is not None and not self.kv_connector.ideal:
            store += f" via {self.kv_connector.name}"
        tail = "" if self.patience is None else f", {self.patience.describe()}"
        return f"{shape} {self.model} TP{self.tp} on {self.gpu}, {store}, {self.replay} replay{tail}"
