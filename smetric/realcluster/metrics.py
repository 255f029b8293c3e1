"""Published metrics computed from simulated requests the way each benchmark harness computes them.

Every harness measures the requests *sent* in the measured stages (bucketed by the stage they were sent in):

* **rates** (``output_tps``, ``total_tps``, ``request_tps``): tokens or requests of the measured requests that
  completed, divided by (last finish - first send) over those requests, the drain included (inference-perf's
  ``reportgen``; KubeAI's and SGLang's benchmark clients divide by the run's duration, the same span); except
  inference-perf's ``request_tps``, which is requests *sent* over the sending span (last send - first send): the
  llm-d reports' req/s tracks the offered QPS (35.6 for a ladder averaging 35 QPS) while their output tok/s
  (8,730 at 1,000 tokens a request) implies 8.7 completions per second;
* **TTFT**: first token - send time; **E2E**: finish - send time; percentiles with numpy's linear interpolation;
* **ITL / TPOT**, which differ:

  - ``inference-perf``: stream chunks arrive in pairs (ITL p50 ~ 0-35 us), so its per-chunk ITL and TPOT are about
    *half* the per-token decode time (BLIS ID 7: TPOT 8.96 ms against (E2E - TTFT)/(out - 1) = 18.1 ms;
    inference-sim/sim-to-real-accuracy-validation's published run summaries). Modelled as 0.5 x the per-request
    mean decode time per token, averaged over requests; a stated property of that harness, not a fitted factor;
  - ``blis`` (the sim-to-real validation's ``itl_mean``): (E2E mean - TTFT mean) / (output mean - 1), a ratio of
    means, whose output mean is the one its *client* counted by re-tokenising the stream (inference-sim/
    sim-to-real-accuracy-validation ``experiment/ground_truth.py``), not the tokens the engine generated (with
    ``ignore_eos`` the nominal length, which the model generates too). Where a spec states that count
    (``source.client_output_mean``: published, or derived from the published triple as
    (E2E mean - TTFT mean) / ITL + 1) it is the denominator; otherwise the simulated output mean is;
  - ``kubeai-chat`` and ``sglang-bench-serving`` (vLLM-style benchmark clients): TPOT = mean over requests of
    (E2E - TTFT) / (output - 1); ITL the same per token;
* ``recorded-engine`` (a recorded run replayed request by request, :mod:`smetric.workload.recorded`): the serving
  engine's own timestamps, with LLMServingSim's ``bench validate`` definitions: TTFT = first token - arrival (the
  engine core's queue time), TPOT = mean over requests of (last - first token) / (output - 1), latency (``e2e``) =
  last token - arrival; percentiles linearly interpolated; plus medians of latency and per-request TPOT and the
  queueing (``queue_*``: first scheduled - arrival). :func:`recorded_request_table` pairs the modelled requests
  with the recorded ones, request by request;
* ``llm-router`` (zxuhan/llm-router's replay client and report, ``internal/trace/replay.go``, ``report.go``,
  ``scripts/bench/aggregate.go``): its "TTFT" is the first byte of a *non-streaming* response, i.e. the end-to-end
  latency, so every ``ttft_*`` is the E2E one here; percentiles are nearest-rank (the ceil(q/100 * n)-th smallest
  over the successful requests) for TTFT and E2E alike; RPS (``request_tps``) = successful / (last completion -
  first send); "KV cached" (``hit_ratio``) = the engines' cached prompt tokens (vLLM usage
  ``prompt_tokens_details.cached_tokens``: HBM prefix hits) over prompt tokens, summed over the successful
  requests. ITL/TPOT are not measured by this client; the engine's per-token time is reported as for the
  vLLM-style clients;
* ``hit_ratio``: prompt tokens served from the local prefix cache (HBM + host DRAM) over prompt tokens
  (SGLang's logged cache hit rate; a model-side number, since no client measures it);
* ``success_ratio``: completed / sent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .spec import METRICS

__all__ = ["harness_metrics", "recorded_request_table", "recorded_request_summary", "REQUEST_QUANTITIES"]

_INFERENCE_PERF_CHUNK = 0.5  # tokens per stream chunk arrive in pairs (validation.md, trap 1)


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else float("nan")


def _nearest_rank(x: np.ndarray, q: float) -> float:
    """The nearest-rank percentile: the ceil(q/100 * n)-th smallest value (at least the smallest)."""
    if not len(x):
        return float("nan")
    return float(np.sort(x)[max(int(np.ceil(q / 100.0 * len(x))), 1) - 1])


def _request_rate(requests: pd.DataFrame, done: pd.DataFrame, span: float, harness: str) -> float:
    if harness == "inference-perf":  # requests *sent* per second of sending (the llm-d reports' req/s follows the
        sent = requests["arrival"]   # offered QPS while their output tok/s implies far fewer completions)
        width = float(sent.max() - sent.min())
        return len(requests) / width if width > 0 else float("nan")
    return len(done) / span


def harness_metrics(requests: pd.DataFrame, harness: str, client_output_mean: float | None = None
                    ) -> dict[str, float]:
    """Every metric of :data:`~.spec.METRICS` over ``requests`` (the measured requests of one run).

    ``client_output_mean``: the ``blis`` harness's client-counted output mean (the denominator of its ITL), when
    the spec states it.

    ``requests`` needs the :class:`~smetric.cluster.result.SimResult` columns ``arrival``, ``first_token``,
    ``finish``, ``input_len``, ``output_len``, ``hit_hbm``, ``hit_dram``, ``status``.
    """
    if client_output_mean is not None and harness != "blis":
        raise ValueError(f"client_output_mean: only the blis harness divides by a client-counted output mean, "
                         f"not {harness!r}")
    done = requests[requests["status"] == "completed"]
    sent = len(requests)
    if done.empty:
        return {m: (0.0 if m == "success_ratio" else float("nan")) for m in METRICS}
    span = float(done["finish"].max() - requests["arrival"].min())
    ttft = (done["first_token"] - done["arrival"]).to_numpy()
    e2e = (done["finish"] - done["arrival"]).to_numpy()
    out = done["output_len"].to_numpy(dtype=float)
    multi = out > 1
    per_token = ((e2e - ttft)[multi] / (out[multi] - 1)) if multi.any() else np.array([np.nan])
    if harness == "blis":
        counted = out.mean() if client_output_mean is None else client_output_mean
        itl = (e2e.mean() - ttft.mean()) / max(counted - 1.0, 1e-12)
    elif harness == "inference-perf":
        itl = _INFERENCE_PERF_CHUNK * float(np.mean(per_token))
    else:
        itl = float(np.mean(per_token))
    prompt = float(requests["input_len"].sum())
    local = float((requests["hit_hbm"].fillna(0) + requests["hit_dram"].fillna(0)).sum())
    pct = _pct
    if harness == "llm-router":   # non-streaming "TTFT" = E2E; nearest-rank; KV cached = HBM hits of the successful
        ttft, pct = e2e, _nearest_rank
        prompt, local = float(done["input_len"].sum()), float(done["hit_hbm"].fillna(0).sum())
    extra = {}
    if harness == "recorded-engine":
        queue = (done["admit"] - done["arrival"]).to_numpy()
        extra = {"e2e_p50_s": _pct(e2e, 50), "tpot_p50_s": _pct(per_token, 50), "queue_mean_s": float(queue.mean()),
                 "queue_p50_s": _pct(queue, 50)}
    return {
        "output_tps": float(out.sum()) / span,
        "total_tps": float(out.sum() + done["input_len"].sum()) / span,
        "request_tps": _request_rate(requests, done, span, harness),
        "ttft_mean_s": float(ttft.mean()),
        "ttft_p50_s": pct(ttft, 50),
        "ttft_p90_s": pct(ttft, 90),
        "ttft_p95_s": pct(ttft, 95),
        "ttft_p99_s": pct(ttft, 99),
        "e2e_mean_s": float(e2e.mean()),
        "e2e_p90_s": pct(e2e, 90),
        "e2e_p99_s": pct(e2e, 99),
        "itl_mean_s": float(itl),
        "tpot_mean_s": float(itl),
        "hit_ratio": local / prompt if prompt else float("nan"),
        "success_ratio": len(done) / sent,
        **extra,
    }


#: Per-request quantities of a recorded run (s), paired by :func:`recorded_request_table`.
REQUEST_QUANTITIES = ("ttft", "tpot", "latency", "queue")


def recorded_request_table(requests: pd.DataFrame, recorded) -> pd.DataFrame:
    """Modelled and recorded TTFT, TPOT, latency and queueing (s) of each request, side by side.

    ``requests``: the simulated requests of a ``recorded-requests`` replay (SimResult columns), whose rows are the
    first rows of ``recorded`` (a :class:`~smetric.workload.recorded.RecordedBundle`, ordered by engine arrival).
    Columns ``request_id``, ``<quantity>_model``, ``<quantity>_recorded`` for each of :data:`REQUEST_QUANTITIES`;
    a request the model did not complete has NaN modelled values.
    """
    n = len(requests)
    if n > len(recorded):
        raise ValueError(f"{n} simulated requests but the recorded run has {len(recorded)}")
    arrival, first = requests["arrival"].to_numpy(), requests["first_token"].to_numpy()
    finish, out = requests["finish"].to_numpy(), requests["output_len"].to_numpy()
    model = {"ttft": first - arrival, "tpot": np.where(out > 1, (finish - first) / np.maximum(out - 1, 1), np.nan),
             "latency": finish - arrival, "queue": requests["admit"].to_numpy() - arrival}
    table = {"request_id": recorded.request_id[:n]}
    for q in REQUEST_QUANTITIES:
        table[f"{q}_model"], table[f"{q}_recorded"] = model[q], getattr(recorded, q)[:n]
    return pd.DataFrame(table)


def recorded_request_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per quantity of :func:`recorded_request_table`: recorded and modelled median and mean with the
    signed relative error of each (LLMServingSim's summary compares the two runs' means and medians); and the
    paired errors: the median over requests of model - recorded (s) and of |model / recorded - 1| (over requests
    with a recorded value > 0: a request never queued has no relative queueing error)."""
    rows = []
    for q in REQUEST_QUANTITIES:
        model, rec = table[f"{q}_model"].to_numpy(), table[f"{q}_recorded"].to_numpy()
        both = ~np.isnan(model) & ~np.isnan(rec)
        model, rec = model[both], rec[both]
        med_m, med_r, mean_m, mean_r = np.median(model), np.median(rec), model.mean(), rec.mean()
        positive = rec > 0
        rows.append({"quantity": q, "n": int(both.sum()), "recorded_median_s": med_r, "model_median_s": med_m,
                     "median_error": med_m / med_r - 1.0 if med_r else np.nan, "recorded_mean_s": mean_r,
                     "model_mean_s": mean_m, "mean_error": mean_m / mean_r - 1.0 if mean_r else np.nan,
                     "paired_median_diff_s": float(np.median(model - rec)),
                     "paired_median_abs_error": float(np.median(np.abs(model[positive] / rec[positive] - 1.0)))
                     if positive.any() else np.nan})
    return pd.DataFrame(rows)
