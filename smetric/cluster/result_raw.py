"""The raw output of one engine run: plain arrays, identical in layout for both engines."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RawRun", "REASON_COMPLETED", "REASON_TOO_LARGE", "REASON_STALLED", "REASON_ABANDONED", "REASON_NAMES",
           "TS_WAITING", "TS_RUNNING", "TS_KV_USED", "N_TS"]

REASON_COMPLETED = 0  # finished normally
REASON_TOO_LARGE = 1  # prompt + output can never fit one instance's HBM: rejected at arrival
REASON_STALLED = 2    # still queued or running when no event was left (an engine bug if it ever happens)
REASON_ABANDONED = 3  # its session ran out of patience (smetric.cluster.abandonment): left unserved
REASON_NAMES = ("completed", "exceeds_kv_capacity", "stalled", "abandoned")

TS_WAITING = 0  # time-series columns: requests waiting for admission,
TS_RUNNING = 1  # requests admitted (running batch, incl. KV loads),
TS_KV_USED = 2  # HBM KV blocks pinned or reserved
N_TS = 3


@dataclass(eq=False)
class RawRun:
    """Per-request, per-instance and time-series arrays of one run (times in s, tokens, bytes)."""

    instance: np.ndarray         # int64: routed (prefill) instance, -1 if rejected
    decode_instance: np.ndarray  # int64: instance that decoded it (= instance when colocated), -1 if none
    arrival: np.ndarray          # float64: effective arrival (load-scaled; closed replay: released)
    admit: np.ndarray            # float64: admission to the (prefill) instance's running batch (nan if never)
    first_token: np.ndarray      # float64 (nan if never)
    finish: np.ndarray           # float64 (nan if unfinished)
    hit_hbm: np.ndarray          # int64 prompt tokens found in HBM at admission
    hit_dram: np.ndarray         # int64 ... in host DRAM (continuing the HBM hit)
    hit_global: np.ndarray       # int64 ... in the global store (continuing the local hit)
    prefill_tokens: np.ndarray   # int64 prompt tokens computed
    reason: np.ndarray           # int64 REASON_*
    inst_prefill_tokens: np.ndarray  # int64 per instance
    inst_decode_tokens: np.ndarray   # int64 per instance
    inst_iterations: np.ndarray      # int64 per instance
    inst_busy: np.ndarray            # float64 seconds spent iterating (incl. non-overlapped loads)
    inst_routed: np.ndarray          # int64 requests routed (or handed over) to it
    inst_kv_peak: np.ndarray         # int64 max HBM blocks in use (cached + reserved)
    inst_dram_read: np.ndarray       # float64 bytes loaded from host DRAM
    inst_global_read: np.ndarray     # float64 bytes loaded from the global store
    inst_pd_read: np.ndarray         # float64 bytes received over the P->D link
    global_write: float              # bytes newly written to the global store
    end_time: float                  # time of the last event
    timeseries: np.ndarray           # [n_instances, k, N_TS] state at t0 + j * sample_dt up to the last event
    sample_dt: float                 # final spacing (s; see smetric.cluster.sampling)
    preemptions: np.ndarray          # int64 per request: times it was preempted (kv_allocation='incremental')
    inst_preemptions: np.ndarray     # int64 per instance: preemptions it made
    decode_est: np.ndarray | None = None  # float64 per request: the decode estimate the queue discipline used
