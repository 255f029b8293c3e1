"""SimResult: per-request, per-instance and time-series tables of one simulation, and its summary metrics.

Definitions used by :meth:`SimResult.summary`:

* **window** -- first arrival to last finish of a completed request (s); every rate divides by it.
* **SLO met** -- completed, TTFT <= ``ttft_base + ttft_per_1k * input/1000`` and TPOT <= ``tpot``
  (TPOT = (finish - first token) / (generated - 1), 0 for one-token replies).
* **goodput TPS** -- input + output tokens of SLO-meeting requests per second of the window;
  **throughput TPS** the same over all completed requests; **output TPS** output tokens only.
* **prefill TPS** -- input tokens of requests whose first token met the TTFT SLO, per second
  from the first arrival to the last first token (the disaggregated-mode figure of merit:
  prefill goodput; a decode backlog draining after the last first token does not dilute it).
* **hit ratio** -- prompt tokens served from a cache tier over prompt tokens, for admitted requests.
* **imbalance** -- max / mean of per-instance work over the routable instances (prefill + decode
  tokens computed when colocated, prefill tokens on the prefill instances when disaggregated);
  ``imbalance_cv`` its coefficient of variation.
* unfinished requests (rejected as too large for HBM, or stalled) count as SLO misses.
* **session completion time** -- a session's first arrival to its last turn's finish, over the
  sessions whose every turn completed (``session_time_*``); **latency** -- a turn's finish minus its
  arrival (``latency_*``, end to end, like ``ttft_*`` over completed turns).
* **queue wait** -- admission minus arrival on the instance's waiting queue (``queue_wait_*`` over
  admitted turns; the max is the starvation figure); **starved sessions** -- the share of sessions
  (with an admitted turn) whose longest-waiting turn waited more than the queue discipline's ``l_max``.
* **busy** -- an instance is busy at a time-series sample when it holds admitted requests (running
  or loading their KV); the samples are evenly spaced from the first arrival to the last finish
  (:mod:`smetric.cluster.sampling`); ``busy_mean`` is the mean over samples and instances, ``busy_cv`` the
  coefficient of variation over time of the cluster's busy fraction (sawtooth utilisation shows
  as a high value).

Mechanism diagnostics, :meth:`SimResult.diagnostics` (kept out of :meth:`SimResult.summary`, whose keys the
figures store wholesale; ``smetric simulate --json`` prints both):

* **imbalance over time** -- the time average of the largest routable instance's waiting requests over the
  time average of their mean across the routable instances (``imbalance_waiting_time_avg``), and the same of
  the running batch (``imbalance_running_time_avg``): a ratio of time averages, so samples where a single
  request waits somewhere (max / mean = N at that instant) weigh by how much waits, not by how often;
* **follow-ups moved** -- the share of follow-ups (a request with a parent, both routed) routed to another
  (prefill) instance than their parent (``followup_moved_share``);
* **local reuse lost** -- a follow-up's *local opportunity* is its parent's prompt + reply, capped at its own
  prompt and rounded down to whole engine blocks: what the parent's instance held for it in an append-only
  session (an upper bound: it ignores compaction and whether the reply KV was kept). The tokens lost are the
  opportunity minus the follow-up's local hits (HBM + DRAM), floored at 0; ``local_reuse_lost_moved_share``
  sums them over moved follow-ups, ``local_reuse_lost_stayed_share`` over those that stayed (eviction), both
  over the total opportunity of the follow-ups (``local_reuse_opportunity_tokens``).

* **queued prefill over time** -- an instance's queued prefill at a time-series sample is the prefill tokens
  (prompt minus cache hits) of the requests routed to it (every request, measured or not) that arrived at or
  before the sample and had not produced their first token (a chunk already computed still counts: an upper
  bound of the work left); ``queued_prefill_max_mean`` is the time average of its maximum over the routable
  instances over the time average of its mean (the ratio-of-time-averages form of the two above);
* **hottest instance's share** -- the largest share of the measured requests' prefill tokens computed on one
  routable instance (``hottest_instance_share``; 1/N when perfectly even, N times it is max/mean).

* **estimator error** -- with a ranked discipline and an estimator other than ``oracle``,
  ``estimator_mae_s`` is the mean absolute difference between the decode estimate the discipline used
  and the true decode time (the oracle's), over the admitted requests (the key exists only then).

:meth:`SimResult.kpis` gathers the session-scheduler blueprint's KPIs (session completion time
percentiles, turn latency and TTFT p50/p90/p99, GPU busy fraction and its CV over time and across instances,
completed sessions per second of the window, abandonment) in one dict, kept out of ``summary()`` so the
figure tables stay as they are (``summary()`` feeds whole rows of several committed figure tables).

* **abandonment** (with ``ClusterConfig.patience``; :mod:`smetric.cluster.abandonment`) -- ``sessions_abandoned``:
  sessions with an abandoned request; ``turns_abandoned``: requests with status ``abandoned`` (the request
  that waited too long and every later turn of its session that was never served); ``abandon_rate``:
  sessions abandoned over sessions. In ``summary()`` only when patience is set (like ``n_preempted``), in
  ``kpis()`` always (0 without patience).
* **busy across instances** -- ``gpu_busy_cv_instances``: the coefficient of variation over the routable
  instances of each one's busy time (seconds iterating, over the whole run like the other instance metrics) --
  the blueprint's load-balance KPI; ``gpu_busy_frac``
  / ``gpu_busy_cv`` are ``busy_mean`` / ``busy_cv`` (over time).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .config import ClusterConfig
from .inputs import EngineInput
from .result_raw import REASON_ABANDONED, REASON_COMPLETED, REASON_NAMES, TS_KV_USED, TS_RUNNING, TS_WAITING, RawRun

if TYPE_CHECKING:  # pandas is imported only when a table is asked for as a DataFrame (start-up time)
    import pandas as pd

__all__ = ["SimResult", "build_result"]

#: The tables of a result, in the order :meth:`SimResult.to_csv` writes them.
TABLES = ("requests", "instances", "timeseries")

# The metrics below work on plain numpy columns (``dict`` of column name -> array) and reproduce pandas'
# reductions bit for bit: a NaN-skipping sum is the sum with the NaNs set to 0 and a mean that sum over the
# count (pandas' nanops), group reductions are exact (min, max, all, sums of integer-valued samples).


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _present(x: np.ndarray) -> np.ndarray:
    """``x`` without its NaNs (pandas' ``dropna``); non-float columns have none."""
    return x[~np.isnan(x)] if x.dtype.kind == "f" else x


def _mean(x: np.ndarray) -> float:
    """pandas' NaN-skipping mean: the sum with NaNs set to 0, over the count of the others; nan when none."""
    if x.dtype.kind == "f":
        missing = np.isnan(x)
        if missing.any():
            x, count = np.where(missing, 0.0, x), len(x) - int(missing.sum())
            return float(x.sum(dtype=np.float64) / count) if count else float("nan")
    return float(x.sum(dtype=np.float64) / len(x)) if len(x) else float("nan")


def _std0(x: np.ndarray) -> float:
    """pandas' population standard deviation (ddof 0) of ``x`` (no NaNs); nan when empty."""
    if not len(x):
        return float("nan")
    avg = x.sum(dtype=np.float64) / len(x)
    return float(np.sqrt(((avg - x) ** 2).sum(dtype=np.float64) / len(x)))


def _select(columns: dict, rows) -> dict:
    """The rows ``rows`` (a boolean mask or positions) of every column."""
    return {name: col[rows] for name, col in columns.items()}


def _span(requests: dict, until: str = "finish") -> float:
    """First arrival to the last ``until`` time (finish or first_token) of ``requests`` (s); nan when none."""
    done = _present(requests[until])
    if not len(done):
        return float("nan")
    return float(done.max() - _present(requests["arrival"]).min())


def _rate(amount: float, window: float) -> float:
    return float(amount) / window if window > 0 else float("nan")


def _queued_prefill(rq: dict, instances: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(instances, samples) prefill tokens queued at each sample ``times[k]``: requests routed to the instance
    with ``arrival <= t < first_token`` (no first token: queued to the end), each counting its ``prefill_tokens``."""
    out = np.zeros((len(instances), len(times) + 1))
    if not len(times):
        return out[:, :0]
    routed = np.isin(rq["instance"], instances)
    row = np.searchsorted(instances, rq["instance"][routed])
    amount = rq["prefill_tokens"][routed].astype(float)
    start = np.searchsorted(times, rq["arrival"][routed].astype(float), side="left")
    first = rq["first_token"][routed].astype(float)
    stop = np.where(np.isnan(first), len(times), np.searchsorted(times, first, side="left"))
    np.add.at(out, (row, start), amount)
    np.add.at(out, (row, stop), -amount)
    return np.cumsum(out, axis=1)[:, :-1]


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct keys, a stable order of the rows that groups them, each group's first position in it)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(keys) else np.zeros(0, np.int64)
    return ordered[starts], order, starts


def _group_reduce(ufunc, values: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``ufunc`` reduced over each group (``_groups``); empty when there are no rows."""
    return ufunc.reduceat(values[order], starts) if len(starts) else values[:0]


def _sessions(rq: dict) -> tuple[dict, np.ndarray]:
    """Per session, in session order (first arrival, last finish, every turn done, worst queue wait; NaN-skipping
    like pandas' groupby), and the completion times of the sessions whose every turn completed."""
    done = rq["status"] == REASON_NAMES[REASON_COMPLETED]
    _, order, starts = _groups(rq["session"])
    sessions = {"first": _group_reduce(np.fmin, rq["arrival"], order, starts),
                "last": _group_reduce(np.fmax, rq["finish"], order, starts),
                "all_done": _group_reduce(np.logical_and, done, order, starts),
                "worst_wait": _group_reduce(np.fmax, rq["admit"] - rq["arrival"], order, starts)}
    complete = sessions["all_done"]
    return sessions, sessions["last"][complete] - sessions["first"][complete]


def _abandonment(rq: dict) -> dict:
    """Abandoned sessions and turns of the requests ``rq`` (see the module docstring)."""
    gone = rq["status"] == REASON_NAMES[REASON_ABANDONED]
    n_sessions = len(np.unique(rq["session"]))
    sessions = len(np.unique(rq["session"][gone]))
    return {"sessions_abandoned": sessions, "turns_abandoned": int(gone.sum()),
            "abandon_rate": sessions / n_sessions if n_sessions else float("nan")}


def _session_metrics(rq: dict, l_max: float) -> dict:
    """Session completion time and starvation figures of the requests ``rq`` (see the module docstring)."""
    sessions, span = _sessions(rq)
    wait = _present(rq["admit"] - rq["arrival"])
    worst = _present(sessions["worst_wait"])
    return {
        "n_sessions": int(len(sessions["first"])),
        "n_sessions_completed": int(len(span)),
        "session_time_mean": float(span.mean()) if len(span) else float("nan"),
        "session_time_p50": _pct(span, 50),
        "session_time_p99": _pct(span, 99),
        "queue_wait_max": float(wait.max()) if len(wait) else float("nan"),
        "queue_wait_p99": _pct(wait, 99),
        "sessions_starved_frac": _mean(worst > l_max) if len(worst) else float("nan"),
    }


def _by_time(ts: dict, col: str) -> tuple[np.ndarray, np.ndarray]:
    """(max, mean) of ``ts[col]`` over the samples of each time, in time order (pandas' groupby("time"))."""
    _, order, starts = _groups(ts["time"])
    values = ts[col].astype(np.float64)
    counts = np.diff(np.r_[starts, len(order)])
    return _group_reduce(np.maximum, ts[col], order, starts), _group_reduce(np.add, values, order, starts) / counts


class SimResult:
    """The outcome of :func:`smetric.simulate`.

    Attributes:
        requests: one row per request (times in s, tokens), row ``i`` being request ``i``.
        instances: one row per instance.
        timeseries: tidy (time, instance, waiting, running, kv_used, kv_used_frac, busy) samples.
        cluster, policy, params, load, seed: what was simulated.
        block_size: the engine KV block size actually used (tokens).
        engine: ``numba`` or ``reference``; wall_time: seconds the engine ran (after compilation).
        global_write_bytes: bytes newly written to the global store.

    The three tables are given as pandas DataFrames or as mappings of column name to numpy array; either way
    ``requests``, ``instances`` and ``timeseries`` are DataFrames (built, and pandas imported, on first use),
    and the metrics are computed on the numpy columns (:meth:`columns`).
    """

    def __init__(self, requests, instances, timeseries, cluster: ClusterConfig, policy: str,
                 params: dict | None = None, load: float = 1.0, seed: int = 0, block_size: int = 0,
                 engine: str = "numba", wall_time: float = 0.0, global_write_bytes: float = 0.0):
        self._tables = {"requests": requests, "instances": instances, "timeseries": timeseries}
        self._columns: dict[str, dict] = {}
        self.cluster = cluster
        self.policy = policy
        self.params = {} if params is None else params
        self.load = load
        self.seed = seed
        self.block_size = block_size
        self.engine = engine
        self.wall_time = wall_time
        self.global_write_bytes = global_write_bytes

    def _frame(self, table: str) -> pd.DataFrame:
        value = self._tables[table]
        if isinstance(value, Mapping):
            import pandas as pd

            value = self._tables[table] = pd.DataFrame(dict(value))
        return value

    @property
    def requests(self) -> pd.DataFrame:
        """One row per request (a DataFrame)."""
        return self._frame("requests")

    @property
    def instances(self) -> pd.DataFrame:
        """One row per instance (a DataFrame)."""
        return self._frame("instances")

    @property
    def timeseries(self) -> pd.DataFrame:
        """The per-instance time-series samples (a DataFrame)."""
        return self._frame("timeseries")

    def columns(self, table: str) -> dict:
        """The columns of ``table`` (requests, instances or timeseries) as numpy arrays, by name (without
        building a DataFrame; do not modify them)."""
        if table not in TABLES:
            raise ValueError(f"table must be one of {TABLES}, got {table!r}")
        if table not in self._columns:
            value = self._tables[table]
            self._columns[table] = (dict(value) if isinstance(value, Mapping)
                                    else {name: value[name].to_numpy() for name in value.columns})
        return self._columns[table]

    # ------------------------------------------------------------------ metrics
    @property
    def window(self) -> float:
        """First arrival to last finish (s); nan when nothing completed."""
        return _span(self.columns("requests"))

    def warmup_end(self, frac: float) -> float:
        """The warm-up cut: the scheduled time ``frac`` of the way through the scheduled arrival span (pass
        it as ``since``). Scheduled, not realised, times: in closed replay a follow-up arrives later when its
        parent finishes late, and a cut on those delayed arrivals would move with the load."""
        scheduled = _present(self.columns("requests")["scheduled"])
        return float(scheduled.min() + frac * (scheduled.max() - scheduled.min()))

    def measured(self, since: float | None = None) -> pd.DataFrame:
        """The requests :meth:`summary` measures: those scheduled at or after ``since`` (all when None)."""
        rq = self.requests
        return rq if since is None else rq[rq["scheduled"] >= since]

    def _measured(self, since: float | None) -> dict:
        """:meth:`measured` as numpy columns."""
        rq = self.columns("requests")
        return rq if since is None else _select(rq, rq["scheduled"] >= since)

    def summary(self, since: float | None = None) -> dict:
        """Headline metrics as a flat dict of floats/ints (see the module docstring).

        ``since`` (s, simulated time, e.g. :meth:`warmup_end`) measures only the requests :meth:`measured`
        returns, those *scheduled* at or after it -- a warm-up cut for runs that start with cold caches;
        rates then divide by the measured requests' first arrival → last finish.
        Instance-level metrics (imbalance, global-store bytes) always cover the whole run.
        """
        rq = self._measured(since)
        inst = self.columns("instances")
        done = rq["status"] == REASON_NAMES[REASON_COMPLETED]
        admitted = ~np.isnan(rq["admit"])
        window = self.window if since is None else _span(rq)
        tokens = rq["input_len"] + rq["output_len"]
        work = inst["work"][inst["role"] != "decode"].astype(float)
        mean_work = work.mean() if len(work) else float("nan")
        prompt = float(rq["input_len"][admitted].sum())

        def ratio(col: str) -> float:
            return float(rq[col][admitted].sum()) / prompt if prompt else float("nan")

        def rate(x: float) -> float:
            return _rate(x, window)

        multi = done & (rq["output_len"] > 1)
        ttft, tpot = rq["ttft"][done], rq["tpot"][multi]
        latency = rq["finish"][done] - rq["arrival"][done]
        _, busy = _by_time(self.columns("timeseries"), "busy")
        busy_mean = _mean(busy)
        return {
            "n_requests": int(len(tokens)),
            "n_completed": int(done.sum()),
            "n_unfinished": int((~done).sum()),
            "window_s": window,
            "goodput_tps": rate(tokens[rq["slo_met"]].sum()),
            "throughput_tps": rate(tokens[done].sum()),
            "prefill_tps": _rate(rq["input_len"][rq["ttft_ok"]].sum(), _span(rq, "first_token")),
            "output_tps": rate(rq["output_len"][done].sum()),
            "hit_ratio": ratio("hit_tokens"),
            "hit_ratio_hbm": ratio("hit_hbm"),
            "hit_ratio_dram": ratio("hit_dram"),
            "hit_ratio_global": ratio("hit_global"),
            "imbalance": float(work.max() / mean_work) if mean_work > 0 else float("nan"),
            "imbalance_cv": float(work.std() / mean_work) if mean_work > 0 else float("nan"),
            "global_read_bps": rate(inst["global_read_bytes"].sum()),
            "global_write_bps": rate(self.global_write_bytes),
            "slo_attainment": _mean(rq["slo_met"]),
            "ttft_mean": _mean(ttft),
            "ttft_p50": _pct(ttft, 50),
            "ttft_p99": _pct(ttft, 99),
            "tpot_mean": _mean(tpot),
            "tpot_p50": _pct(tpot, 50),
            "tpot_p99": _pct(tpot, 99),
            "ttft_p90": _pct(ttft, 90),
            "latency_p50": _pct(latency, 50),
            "latency_p90": _pct(latency, 90),
            "latency_p99": _pct(latency, 99),
            **_session_metrics(rq, self.cluster.queue.l_max),
            "busy_mean": busy_mean,
            "busy_cv": _std0(busy) / busy_mean if busy_mean > 0 else float("nan"),
            # requests preempted at least once; only where preemption exists (reserve runs keep their columns)
            **({"n_preempted": int((rq["preemptions"] > 0).sum())}
               if self.cluster.kv_allocation == "incremental" else {}),
            # only where a ranked discipline used an estimator (oracle runs keep their columns)
            **({"estimator_mae_s": _mean(np.abs(rq["decode_est"][admitted] - rq["decode_true"][admitted]))}
               if "decode_est" in rq else {}),
            # only where sessions can abandon (runs without patience keep their columns)
            **(_abandonment(rq) if self.cluster.patience is not None else {}),
            "wall_time_s": float(self.wall_time),
        }

    def diagnostics(self, since: float | None = None) -> dict:
        """Mechanism diagnostics (see the module docstring) over the requests :meth:`measured` returns and the
        time-series samples at or after ``since``."""
        inst = self.columns("instances")
        ts = self.columns("timeseries")
        keep = np.isin(ts["instance"], inst["instance"][inst["role"] != "decode"])
        if since is not None:
            keep &= ts["time"] >= since
        ts = _select(ts, keep)

        def over_time(col: str) -> float:
            top, mean_at = _by_time(ts, col)
            mean = _mean(mean_at) if len(mean_at) else 0.0
            return _mean(top) / mean if mean > 0 else float("nan")

        rq = self._measured(since)
        full = self.columns("requests")
        child = _select(rq, (rq["parent"] >= 0) & (rq["instance"] >= 0))
        parent = _select(full, child["parent"])
        routed = parent["instance"] >= 0
        child, parent = _select(child, routed), _select(parent, routed)
        moved = child["instance"] != parent["instance"]
        bs = max(self.block_size, 1)
        held = np.minimum(parent["input_len"] + parent["output_len"], child["input_len"])
        opportunity = held // bs * bs
        lost = np.maximum(opportunity - child["hit_hbm"] - child["hit_dram"], 0)
        total = float(opportunity.sum())
        n_child = len(child["parent"])
        routable = np.sort(inst["instance"][inst["role"] != "decode"])
        queued = _queued_prefill(full, routable, np.unique(ts["time"]))
        mean_queued = float(queued.mean()) if queued.size else 0.0
        mine = np.isin(rq["instance"], routable)
        _, order, starts = _groups(rq["instance"][mine])
        prefill = _group_reduce(np.add, rq["prefill_tokens"][mine], order, starts)
        return {
            "imbalance_waiting_time_avg": over_time("waiting"),
            "imbalance_running_time_avg": over_time("running"),
            "n_followups_routed": int(n_child),
            "followup_moved_share": float(moved.mean()) if n_child else float("nan"),
            "local_reuse_opportunity_tokens": int(total),
            "local_reuse_lost_moved_share": float(lost[moved].sum()) / total if total else float("nan"),
            "local_reuse_lost_stayed_share": float(lost[~moved].sum()) / total if total else float("nan"),
            "queued_prefill_max_mean": (float(queued.max(axis=0).mean()) / mean_queued if mean_queued > 0
                                        else float("nan")),
            "hottest_instance_share": (float(prefill.max()) / float(prefill.sum()) if prefill.sum() > 0
                                       else float("nan")),
        }

    def kpis(self, since: float | None = None) -> dict:
        """The session-scheduler blueprint's KPIs (see the module docstring); ``since`` as for :meth:`summary`."""
        s = self.summary(since)
        rq = self._measured(since)
        _, span = _sessions(rq)
        inst = self.columns("instances")
        busy = inst["busy_time"][inst["role"] != "decode"].astype(float)
        keep = ("n_sessions", "n_sessions_completed", "session_time_mean", "session_time_p50", "session_time_p99",
                "latency_p50", "latency_p90", "latency_p99", "ttft_p50", "ttft_p90", "ttft_p99",
                "queue_wait_p99", "queue_wait_max", "sessions_starved_frac", "throughput_tps", "goodput_tps")
        return {
            **{k: s[k] for k in keep},
            "session_time_p90": _pct(span, 90),
            "sessions_per_s": _rate(len(span), s["window_s"]),
            "gpu_busy_frac": s["busy_mean"],
            "gpu_busy_cv": s["busy_cv"],
            "gpu_busy_cv_instances": float(busy.std() / busy.mean()) if busy.mean() > 0 else float("nan"),
            **_abandonment(rq),
            **({"estimator_mae_s": s["estimator_mae_s"]} if "estimator_mae_s" in s else {}),
        }

    def to_csv(self, directory) -> list[Path]:
        """Write requests.csv, instances.csv, timeseries.csv and summary.csv (+ summary.json); return the paths."""
        import pandas as pd

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for name in TABLES:
            path = out / f"{name}.csv"
            self._frame(name).to_csv(path, index=False)
            paths.append(path)
        summary = self.summary()
        meta = {"policy": self.policy, "load": self.load, "seed": self.seed, "engine": self.engine,
                "block_size": self.block_size, "cluster": self.cluster.describe(),
                **{f"param_{k}": v for k, v in self.params.items()}}
        path = out / "summary.csv"
        pd.DataFrame([{**meta, **summary}]).to_csv(path, index=False)
        paths.append(path)
        path = out / "summary.json"
        path.write_text(json.dumps({**meta, **summary}, indent=2, default=str))
        paths.append(path)
        return paths

    def __repr__(self) -> str:
        s = self.summary()
        return (f"SimResult({self.policy}, load {self.load:g}, {s['n_completed']}/{s['n_requests']} done, "
                f"goodput {s['goodput_tps']:.0f} tok/s, SLO {s['slo_attainment']:.1%}, "
                f"hit {s['hit_ratio']:.1%}, imbalance {s['imbalance']:.2f})")


def build_result(raw: RawRun, inp: EngineInput, cluster: ClusterConfig, *, policy: str, params: dict | None,
                 load: float, seed: int, engine: str, wall_time: float) -> SimResult:
    """Assemble the tables of a :class:`SimResult` from an engine's raw arrays.

    Request times are the client's: the engine's arrival at the router less the client's and gateway's time
    before it, tokens ``after_last_token_s`` later than the engine produced them, the last one also
    ``stream_per_token_s`` per output token later (:class:`~smetric.cluster.serving_stack.ServingStack`).
    """
    n_out = inp.n_out
    stack = cluster.engine
    sent, scheduled = raw.arrival - stack.client_to_router_s, inp.arrival - stack.client_to_router_s
    first_token = raw.first_token + stack.after_last_token_s
    finish = raw.finish + (stack.after_last_token_s + stack.stream_per_token_s * n_out)
    if stack.client_to_router_s == 0 and stack.after_last_token_s == 0 and stack.stream_per_token_s == 0:
        sent, scheduled, first_token, finish = raw.arrival, inp.arrival, raw.first_token, raw.finish
    ttft = first_token - sent
    tpot = np.where(n_out > 1, (finish - first_token) / np.maximum(n_out - 1, 1), 0.0)
    tpot = np.where(np.isnan(finish), np.nan, tpot)
    ttft_limit = cluster.slo.ttft_limit(inp.input_len)
    done = raw.reason == REASON_COMPLETED
    ttft_ok = ~np.isnan(ttft) & (ttft <= ttft_limit)
    hits = raw.hit_hbm + raw.hit_dram + raw.hit_global
    requests = {
        "request": np.arange(inp.n), "session": inp.session, "turn": inp.turn, "parent": inp.parent,
        "instance": raw.instance, "decode_instance": raw.decode_instance,
        "scheduled": scheduled, "arrival": sent, "admit": raw.admit, "first_token": first_token,
        "finish": finish,
        "ttft": ttft, "tpot": tpot, "input_len": inp.input_len, "output_len": n_out,
        "hit_hbm": raw.hit_hbm, "hit_dram": raw.hit_dram, "hit_global": raw.hit_global, "hit_tokens": hits,
        "prefill_tokens": raw.prefill_tokens, "preemptions": raw.preemptions, "ttft_slo": ttft_limit,
        "ttft_ok": ttft_ok,
        "tpot_ok": done & (tpot <= cluster.slo.tpot),
        "slo_met": done & ttft_ok & (tpot <= cluster.slo.tpot),
        "status": np.asarray(REASON_NAMES, dtype=object)[raw.reason],
        # the decode estimate the queue discipline used, only when it is not the true one (an estimator)
        **({"decode_est": raw.decode_est, "decode_true": inp.decode_est}
           if cluster.queue.estimator != "oracle" else {}),
    }
    roles = np.asarray(["prefill"] * inp.n_routable + ["decode"] * (inp.n_instances - inp.n_routable)
                       if inp.disaggregated else ["colocated"] * inp.n_instances, dtype=object)
    work = raw.inst_prefill_tokens + (0 if inp.disaggregated else raw.inst_decode_tokens)
    window = float(np.nanmax(finish) - sent.min()) if done.any() else float("nan")
    instances = {
        "instance": np.arange(inp.n_instances), "role": roles, "routed": raw.inst_routed,
        "prefill_tokens": raw.inst_prefill_tokens, "decode_tokens": raw.inst_decode_tokens, "work": work,
        "iterations": raw.inst_iterations, "busy_time": raw.inst_busy, "preemptions": raw.inst_preemptions,
        "utilization": raw.inst_busy / window if window > 0 else np.full(inp.n_instances, np.nan),
        "kv_peak_blocks": raw.inst_kv_peak, "kv_capacity_blocks": np.full(inp.n_instances, inp.hbm_blocks),
        "dram_read_bytes": raw.inst_dram_read, "global_read_bytes": raw.inst_global_read,
        "pd_read_bytes": raw.inst_pd_read,
    }
    n_inst, n_samples, n_fields = raw.timeseries.shape  # no samples when every request was rejected
    ts = raw.timeseries.reshape(n_inst * n_samples, n_fields)
    timeseries = {
        "time": np.tile(inp.arrival[0] + np.arange(n_samples) * raw.sample_dt, n_inst),
        "instance": np.repeat(np.arange(n_inst), n_samples),
        "waiting": ts[:, TS_WAITING], "running": ts[:, TS_RUNNING], "kv_used": ts[:, TS_KV_USED],
        "kv_used_frac": ts[:, TS_KV_USED] / inp.hbm_blocks, "busy": ts[:, TS_RUNNING] > 0,
    }
    return SimResult(requests=requests, instances=instances, timeseries=timeseries, cluster=cluster,
                     policy=policy, params=dict(params or {}), load=load, seed=seed,
                     block_size=inp.block_size, engine=engine, wall_time=wall_time,
                     global_write_bytes=raw.global_write)
