"""Burstiness statistics and session-start processes (smetric.workload.arrivals)."""

import json

import numpy as np
import pytest

from smetric.workload.arrivals import (
    POISSON,
    ArrivalProcess,
    burstiness,
    fit_gamma,
    fit_mmpp,
    fitted_arrival,
    fitted_arrivals_path,
    mmpp_dispersion,
    session_starts,
    workload_burstiness,
)
from smetric.workload.synthetic import get_preset, synth_agent_workload, synth_workload, with_overrides


def test_burstiness_of_a_regular_and_a_clustered_stream():
    regular = burstiness(np.arange(0.0, 600.0, 0.5))  # two per second, exactly
    assert regular["iat_cv"] == 0.0 and regular["iod_1s"] == 0.0 and regular["iod_60s"] == 0.0
    assert regular["peak_to_mean_60s"] == 1.0
    # ten arrivals at the start of every 10th second: counts per second 10,0,...,0 -> var/mean = 9
    clustered = burstiness(np.repeat(np.arange(0.0, 600.0, 10.0), 10) + 1e-9)
    assert clustered["iod_1s"] == pytest.approx(9.0)
    assert clustered["iod_10s"] == pytest.approx(0.0)
    short = burstiness(np.array([0.0, 30.0]))
    assert np.isnan(short["iat_cv"]) and np.isnan(short["iod_60s"]) and np.isnan(short["peak_to_mean_60s"])


def test_poisson_starts_are_the_former_draws():
    """The default process consumes the generator exactly as the generator did before processes existed."""
    rate = 0.7
    got = session_starts(np.random.default_rng(5), POISSON, rate, 500, None, 0.0)
    rng = np.random.default_rng(5)
    assert np.array_equal(got, np.cumsum(rng.exponential(1.0 / rate, 500)))
    got = session_starts(np.random.default_rng(5), POISSON, rate, None, 900.0, 300.0)
    rng = np.random.default_rng(5)
    n = rng.poisson(rate * 1200.0)
    assert np.array_equal(got, np.sort(rng.uniform(0.0, 1200.0, n)) - 300.0)


def test_gamma_starts_hit_their_cv():
    """Tolerance: 5 % of the target CV with 40,000 gaps (the estimator's spread is ~1 % at CV 2)."""
    for seed in (0, 1):
        t = session_starts(np.random.default_rng(seed), ArrivalProcess(kind="gamma", cv=2.0), 2.0, 40_000, None, 0.0)
        stats = burstiness(t)
        assert stats["iat_cv"] == pytest.approx(2.0, rel=0.05)
        assert len(t) / t[-1] == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize("rate_cv, switch_s, window", [(0.5, 30.0, "60"), (2.0, 10.0, "10")])
def test_mmpp_starts_hit_their_dispersion(rate_cv, switch_s, window):
    """Index of dispersion within 15 % of the closed form over 20,000 s at 2 starts/s (symmetric and on-off);
    the mean rate within 20 % (the on-off count's sd over the span is ~6 %)."""
    p = ArrivalProcess(kind="mmpp", rate_cv=rate_cv, switch_s=switch_s)
    t = session_starts(np.random.default_rng(0), p, 2.0, None, 20_000.0, 0.0)
    want = float(mmpp_dispersion(2.0, rate_cv, switch_s, float(window)))
    assert burstiness(t)[f"iod_{window}s"] == pytest.approx(want, rel=0.15)
    assert len(t) / 20_000.0 == pytest.approx(2.0, rel=0.2)
    assert t.min() >= 0.0 and t.max() < 20_000.0 and np.all(np.diff(t) >= 0)
    assert len(session_starts(np.random.default_rng(0), p, 2.0, 777, None, 0.0)) == 777


def test_fit_mmpp_recovers_the_process_it_is_fitted_to():
    p = ArrivalProcess(kind="mmpp", rate_cv=0.5, switch_s=30.0)
    stats = burstiness(session_starts(np.random.default_rng(1), p, 2.0, None, 40_000.0, 0.0))
    fit = fit_mmpp(stats, 2.0)
    assert fit.rate_cv == pytest.approx(0.5, rel=0.2) and fit.switch_s == pytest.approx(30.0, rel=0.35)
    assert fit_gamma({"iat_cv": 3.0}) == ArrivalProcess(kind="gamma", cv=3.0)
    with pytest.raises(ValueError, match="Poisson"):
        fit_mmpp({"iod_1s": 1.0, "iod_10s": 0.9, "iod_60s": 1.0}, 2.0)


def test_diurnal_profile_shapes_the_rate():
    """Rate x (1 + a cos(2 pi (t - peak) / P)): the quarter-periods around the peak carry (P/4 + a P/(2 pi)) / P."""
    p = ArrivalProcess(diurnal_amplitude=0.5, diurnal_period_s=3600.0, diurnal_peak_s=900.0)
    t = session_starts(np.random.default_rng(2), p, 2.0, None, 36_000.0, 3600.0)
    assert t.min() >= -3600.0 and t.max() < 36_000.0
    kept = t[t >= 0]
    share = np.bincount(((kept % 3600.0) // 900.0).astype(int), minlength=4) / len(kept)
    peak = 0.25 + 0.5 / (2 * np.pi)
    assert share == pytest.approx([peak, peak, 0.5 - peak, 0.5 - peak], abs=0.01)
    assert len(kept) / 36_000.0 == pytest.approx(2.0, rel=0.03)


def test_arrival_process_validation_names_the_field():
    with pytest.raises(ValueError, match="kind"):
        ArrivalProcess(kind="hawkes")
    with pytest.raises(ValueError, match="cv applies to kind 'gamma'"):
        ArrivalProcess(cv=2.0)
    with pytest.raises(ValueError, match="rate_cv must be > 0"):
        ArrivalProcess(kind="mmpp")
    with pytest.raises(ValueError, match="diurnal_amplitude"):
        ArrivalProcess(diurnal_amplitude=1.0)
    with pytest.raises(ValueError, match="SessionWorkloadConfig.arrival"):
        with_overrides(get_preset("chat").config, arrival="gamma")


def test_bursty_workload_is_deterministic_and_bursty():
    """A bailian-coder workload with the Azure-code MMPP starts: same seed -> same workload; its session starts
    are over-dispersed at 60 s where the Poisson default's are not."""
    mmpp = fitted_arrival("azure-code", "mmpp")
    a = synth_agent_workload(seed=4, preset="bailian-coder", duration=1800.0, warmup=600.0, arrival=mmpp)
    b = synth_agent_workload(seed=4, preset="bailian-coder", duration=1800.0, warmup=600.0, arrival=mmpp)
    for col in ("arrival", "input_len", "session", "block_ids"):
        assert np.array_equal(getattr(a, col), getattr(b, col))
    plain = synth_agent_workload(seed=4, preset="bailian-coder", duration=1800.0, warmup=600.0)
    assert workload_burstiness(a)["session_start_iod_60s"] > 10.0
    assert workload_burstiness(plain)["session_start_iod_60s"] < 2.0


def test_workload_burstiness_of_a_small_workload():
    wl = synth_workload(with_overrides(get_preset("chat").config, session_rate=1.0), 200, seed=0)
    stats = workload_burstiness(wl)
    assert {"arrival_iat_cv", "session_start_iod_10s", "session_gap_cv"} <= set(stats)
    assert stats["session_start_iat_cv"] == burstiness(wl.arrival[wl.turn == 0])["iat_cv"]


def test_fitted_table_is_sourced_and_loads():
    table = json.loads(fitted_arrivals_path().read_text())
    assert table["method"] and table["fits"]
    for trace, entry in table["fits"].items():
        assert entry["source"]
        for kind in entry["processes"]:
            assert fitted_arrival(trace, kind).kind == kind
    with pytest.raises(ValueError, match="no fitted arrivals"):
        fitted_arrival("nope", "mmpp")


def test_azure_code_fit_is_reproduced_from_the_shipped_trace():
    """The table's numbers come from the trace by the stated method (4 significant digits)."""
    from smetric.workload import load_trace

    entry = json.loads(fitted_arrivals_path().read_text())["fits"]["azure-code"]
    wl = load_trace("azure-code")
    starts = np.sort(wl.arrival[wl.turn == 0])
    rate = (len(starts) - 1) / (starts[-1] - starts[0])
    stats = {k.removeprefix("session_start_"): v for k, v in workload_burstiness(wl).items()
             if k.startswith("session_start_")}
    assert rate == pytest.approx(entry["session_rate_per_s"], rel=1e-3)
    assert fit_gamma(stats).cv == pytest.approx(entry["processes"]["gamma"]["cv"], rel=1e-3)
    mmpp = fit_mmpp(stats, rate)
    assert mmpp.rate_cv == pytest.approx(entry["processes"]["mmpp"]["rate_cv"], rel=1e-3)
    assert mmpp.switch_s == pytest.approx(entry["processes"]["mmpp"]["switch_s"], rel=1e-3)


def test_characterize_json_prints_the_burstiness(capsys):
    from smetric.cli import main

    assert main(["characterize", "azure-conv", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arrival_iod_60s"] == pytest.approx(16.13, rel=1e-3)  # data/presets/README.md
    assert out["session_start_iat_cv"] == out["arrival_iat_cv"] and out["session_gap_cv"] is None


def test_a_preset_with_gamma_starts_hits_the_cv():
    """bailian-coder, 1 h after a 1 h warm-up (~8,000 starts): the starts' inter-arrival CV within 10 % of 2."""
    wl = synth_agent_workload(seed=1, preset="bailian-coder", duration=3600.0, warmup=3600.0,
                              arrival=ArrivalProcess(kind="gamma", cv=2.0))
    assert workload_burstiness(wl)["session_start_iat_cv"] == pytest.approx(2.0, rel=0.1)
