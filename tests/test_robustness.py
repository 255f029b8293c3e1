"""Robustness map machinery: variants, claim specs judged on fake per-seed results, the plot, setup choice, the
variant setup on the engine."""

from functools import partial

import numpy as np
import pandas as pd
import pytest

from smetric.experiments.robustness import (
    AXES,
    MAP_COLUMNS,
    ClaimSpec,
    Variant,
    one_at_a_time,
    plot_robustness,
    variant_setup,
)
from smetric.experiments.setup_choice import choose_setup
from smetric.testbeds import offered_point
from smetric.verdicts import parse_paper_value

# SMETRIC's true relative gain over baseline A per (gpu, store): clear win, clear loss, nothing.
_TRUE_GAIN = {("h200", "provisioned"): 0.10, ("h20", "provisioned"): -0.06, ("h200", "50:1"): 0.0,
              ("h20", "50:1"): 0.30}
_LOADS = (4.0, 8.0, 12.0)


def fake_compute(variant, seeds):
    """Goodput over three loads, peaking at 8; a shared per-seed workload factor; SMETRIC = A x (1 + gain)
    with 1 % noise (none at all where the true gain is 0: a zero-variance cell)."""
    gain = _TRUE_GAIN[(variant.gpu, variant.store)]
    rows = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 17])
        w = rng.lognormal(0.0, 0.3)
        for load in _LOADS:
            shape = 1.0 - abs(load - 8.0) / 16.0
            noise = rng.normal(0.0, 0.01) if gain else 0.0
            for policy, level in (("smetric", (1 + gain) * (1 + noise)), ("A", 1.0), ("B", 0.8), ("ideal", 3.0)):
                rows.append({"seed": seed, "policy": policy, "rpm_per_instance": load,
                             "goodput_tps": 1e4 * w * shape * level})
    return pd.DataFrame(rows)


def fake_points(variant, seeds):
    """C12-style: per paper point (6x, 8x, 9x, past saturation) one row per policy and seed."""
    rows = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 3])
        for point, gain in zip(("6x", "8x", "9x", "past saturation"), (0.0, 0.04, 0.13, -0.2)):
            for policy, level in (("smetric", 1 + gain + rng.normal(0, 0.005)), ("A", 1.0)):
                rows.append({"seed": seed, "policy": policy, "point": point, "goodput_tps": 1e4 * level})
    return pd.DataFrame(rows)


def _variants():
    return [Variant(name=f"gpu={g}, store={st}", gpu=g, store=st) for g in ("h20", "h200")
            for st in ("provisioned", "50:1")]


def _map(specs, variants, seeds):
    """Each ``(spec, compute)`` judged on every variant's per-seed results: one row per claim, point and variant."""
    return pd.DataFrame([{"claim_id": spec.claim_id, "point": cell.pop("point"), "variant": v.name, **v.axes(),
                          **cell} for spec, compute in specs for v in variants
                         for cell in spec.cells(compute(v, tuple(seeds)))])


def test_variants():
    v = Variant()
    assert v.axes() == {"workload": "bailian-coder", "kv_connector": "lmcache-mooncake", "gpu": "h20",
                        "attention": "fa3", "store": "provisioned", "replay": "closed", "router": "exact",
                        "arrival": "poisson", "engine": "paper-testbed"}
    oat = one_at_a_time(gpu=["h20", "h200", "h800"], store=["none"])
    assert [x.name for x in oat] == ["default", "gpu=h200", "gpu=h800", "store=none"]
    assert oat[3].gpu == "h20" and oat[3].store == "none"
    with pytest.raises(ValueError, match="unknown axes"):
        one_at_a_time(tp=["1"])
    with pytest.raises(ValueError, match="non-empty list"):
        one_at_a_time(gpu="h20")
    with pytest.raises(ValueError, match="non-empty string"):
        Variant(gpu="")


def test_map_on_a_fake_compute():
    spec = ClaimSpec("C13_peak_30b")  # paper +0.09: band [0.045, 0.135]
    table = _map([(spec, fake_compute)], _variants(), seeds=range(8))
    assert list(table.columns) == ["claim_id", "point", "variant", *AXES, "best_baseline", "gain_mean", "ci_low",
                                   "ci_high", "n_seeds", "verdict", "peaks_at_edge"]
    assert set(MAP_COLUMNS) <= set(table.columns)
    cell = table.set_index(["gpu", "store"])
    assert cell.loc[("h200", "provisioned"), "verdict"] == "reproduced"
    assert cell.loc[("h20", "provisioned"), "verdict"] == "contradicted"
    assert cell.loc[("h20", "50:1"), "verdict"] == "direction only"
    zero = cell.loc[("h200", "50:1")]
    assert (zero["gain_mean"], zero["ci_low"], zero["ci_high"], zero["verdict"]) == (0.0, 0.0, 0.0,
                                                                                    "smaller than claimed")
    assert (table["n_seeds"] == 8).all() and (table["best_baseline"] == "A").all()  # "ideal" is not a baseline
    assert (table["peaks_at_edge"] == 0).all()  # every curve peaks at 8, inside the grid
    for (gpu, store), g in _TRUE_GAIN.items():
        r = cell.loc[(gpu, store)]
        assert r["ci_low"] - 1e-3 <= g <= r["ci_high"] + 1e-3
    pd.testing.assert_frame_equal(table, _map([(spec, fake_compute)], _variants(), seeds=range(8)))


def test_map_per_paper_point():
    spec = ClaimSpec("C12_gain_vs_load", statistic="points", points=("6x", "8x", "9x", "past saturation"))
    table = _map([(spec, fake_points)], [Variant()], seeds=range(6))
    assert table["point"].tolist() == ["6x", "8x", "9x", "past saturation"]
    # 6x is the equivalence "within 1 %" (TOST): a gain near 0 with a tight interval reproduces it
    assert table["verdict"].tolist() == ["reproduced", "reproduced", "reproduced", "contradicted"]
    assert table["peaks_at_edge"].isna().all()


def _rising(variant, seeds):
    """SMETRIC's goodput still rising at the top load on every seed."""
    frame = fake_compute(variant, seeds)
    top = (frame["policy"] == "smetric") & (frame["rpm_per_instance"] == 12.0)
    frame.loc[top, "goodput_tps"] *= 10
    return frame


def _falling(variant, seeds):
    """The best baseline's goodput highest at the lowest load on every seed."""
    frame = fake_compute(variant, seeds)
    low = (frame["policy"] == "A") & (frame["rpm_per_instance"] == 4.0)
    frame.loc[low, "goodput_tps"] *= 10
    return frame


def test_map_flags_peaks_at_the_grid_edge():
    table = _map([(ClaimSpec("C13_peak_30b"), _rising), (ClaimSpec("C13_peak_235b"), _falling)],
                 [Variant(gpu="h200")], seeds=range(3))
    assert table["peaks_at_edge"].tolist() == [3, 3]


def test_map_with_a_bound_claim():
    spec = ClaimSpec("C9_load_only_provisioned", ours="A", baselines=("smetric", "B"))
    table = _map([(spec, fake_compute)], [Variant(gpu="h200", store="provisioned"),
                                          Variant(name="big loss", gpu="h20", store="50:1")], seeds=range(4))
    # A vs SMETRIC: 1/1.1 - 1 = -9 % (below the -7 % bound); 1/1.3 - 1 = -23 %
    assert table["verdict"].tolist() == ["contradicted", "contradicted"]
    assert (table["best_baseline"] == "smetric").all()


@pytest.mark.parametrize("kwargs, message", [
    (dict(claim_id="C12_gain_vs_load"), "4 point"),
    (dict(claim_id="C13_peak_30b", statistic="points", points=("a", "b")), "1 point"),
    (dict(claim_id="C13_peak_30b", statistic="mean"), "statistic"),
    (dict(claim_id="C13_peak_30b", points=("a",)), "statistic='points'"),
    (dict(claim_id="C17_robustness"), "no per-cell rule"),
    (dict(claim_id="C13_peak_30b", peak="max"), "peak must be"),
    (dict(claim_id="C99"), "unknown claim"),
])
def test_claim_spec_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ClaimSpec(**kwargs)


def test_claim_spec_takes_an_explicit_paper_value():
    spec = ClaimSpec("my_claim", paper=parse_paper_value("-0.36", "relative"))
    table = _map([(spec, fake_compute)], [Variant(gpu="h20")], seeds=range(4))
    assert table["verdict"].tolist() == ["smaller than claimed"]  # -6 %: the paper's sign, short of [-54 %, -18 %]


def test_a_spec_rejects_points_it_does_not_name():
    with pytest.raises(ValueError, match="not in"):
        ClaimSpec("C12_gain_vs_load", statistic="points", points=("a", "b", "c", "d")).cells(
            fake_points(Variant(), (0, 1)))


def test_plot(tmp_path):
    table = _map([(ClaimSpec("C13_peak_30b"), fake_compute)], _variants(), seeds=range(4))
    fig = plot_robustness(table)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 4 and "+0.0%\n[+0.0, +0.0]" in texts
    r = table.iloc[0]
    assert f"{100 * r.gain_mean:+.1f}%\n[{100 * r.ci_low:+.1f}, {100 * r.ci_high:+.1f}]" in texts
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["h20, store provisioned", "h20, store 50:1", "h200, store provisioned", "h200, store 50:1"]
    legend = "\n".join(t.get_text() for t in fig.texts)  # the short names spelled out under the map
    assert "h200, store 50:1: gpu=h200, store=50:1" in legend
    fig.savefig(tmp_path / "map.png")
    assert (tmp_path / "map.png").stat().st_size > 0


# ------------------------------------------------------------------------------------------ setup choice
def _split_frame(smetric_factor):
    """Three splits; the best baseline peaks highest at 24P+8D; SMETRIC's values scaled by ``smetric_factor``."""
    rows = []
    for split, scale in (("20P+12D", 0.9), ("24P+8D", 1.0), ("28P+4D", 0.7)):
        for seed in range(5):
            rng = np.random.default_rng([seed, 9])
            for load in (4.0, 8.0):
                for policy, level in (("A", 1.0), ("B", 0.95), ("smetric", smetric_factor(split, seed))):
                    rows.append({"split": split, "seed": seed, "policy": policy, "rpm_per_instance": load,
                                 "prefill_tps": 1e4 * scale * level * (load / 8.0) * (1 + rng.normal(0, 0.01))})
    return pd.DataFrame(rows)


def test_choose_setup_ignores_smetric():
    base = choose_setup(_split_frame(lambda split, seed: 1.05))
    assert base.chosen == "24P+8D"
    assert base.table["chosen"].tolist() == [False, True, False]
    assert "before" in base.rule
    for factor in (lambda split, seed: 3.0 if split == "28P+4D" else 0.5,
                   lambda split, seed: float(np.random.default_rng([seed, len(split)]).uniform(0.1, 5.0))):
        assert choose_setup(_split_frame(factor)).chosen == "24P+8D"
    t = base.table.set_index("split")
    assert t["gain_mean"].to_numpy() == pytest.approx(0.05, abs=0.01)
    assert (t["n_seeds"] == 5).all() and (t["best_baseline"] == "A").all()
    # choosing by another metric: 28P+4D has the highest baseline goodput, gains stay in prefill TPS
    frame = _split_frame(lambda split, seed: 1.05)
    frame["goodput_tps"] = frame["prefill_tps"] * frame["split"].map({"20P+12D": 1.0, "24P+8D": 1.0, "28P+4D": 2.0})
    by_goodput = choose_setup(frame, choose_by="goodput_tps")
    assert by_goodput.chosen == "28P+4D" and "goodput_tps" in by_goodput.rule
    pd.testing.assert_frame_equal(by_goodput.table.drop(columns=["baseline_peak", "chosen"]),
                                  base.table.drop(columns=["baseline_peak", "chosen"]))
    with_paper = choose_setup(_split_frame(lambda split, seed: 1.05), paper=parse_paper_value("+0.09", "relative"))
    assert (with_paper.table["verdict"] == "reproduced").all()


def test_choose_setup_errors():
    with pytest.raises(ValueError, match="no column"):
        choose_setup(_split_frame(lambda s, k: 1.0), choose_by="goodput_tps")
    with pytest.raises(ValueError, match="no column"):
        choose_setup(_split_frame(lambda s, k: 1.0), setup="pd")
    with pytest.raises(ValueError, match="no baseline"):
        choose_setup(_split_frame(lambda s, k: 1.0), baselines=["C"])


# ------------------------------------------------------------------------------------------ engine setup
def _goodput(variant, policy="least-load", rpm=40.0, seed=0, **kw):
    """``policy``'s goodput on ``variant`` at ``rpm`` (a workload generated at that rate)."""
    setup = variant_setup(variant, policy, reference_rpm=rpm, **kw)
    return offered_point(rpm, policy, seed=seed, **setup)["goodput_tps"]


def test_variant_setup_validates():
    fn = partial(_goodput, rpm=4.0, n_instances=2, minutes=1.0)
    with pytest.raises(ValueError, match="unknown KV connector|kv_connector"):
        fn(Variant(kv_connector="lmcache"))
    with pytest.raises(FileNotFoundError, match="neither an existing file nor a known trace"):
        fn(Variant(workload="agent"))  # not a preset: read as a trace file or catalog name
    with pytest.raises(ValueError, match="attention_calibration must be one of"):
        fn(Variant(attention="fa2"))
    with pytest.raises(ValueError, match="replay must be one of"):
        fn(Variant(replay="half-open"))
    with pytest.raises(ValueError, match="testbed must be one of"):
        fn(Variant(), testbed="7b")


def test_variant_setup_applies_every_axis():
    # near the knee (at low load the store and the replay do not bind, and nothing would change)
    fn = partial(_goodput, n_instances=8, minutes=3.0)
    base = fn(Variant())
    moved = {axis: fn(Variant(name=axis, **{axis: value}))
             for axis, value in [("workload", "toolagent"), ("kv_connector", "ideal"), ("attention", "a100-borrowed"),
                                 ("gpu", "h200"), ("store", "20:2"), ("replay", "open")]}
    assert base > 0 and base == fn(Variant())
    changed = sorted(axis for axis, value in moved.items() if value != base)
    assert changed == sorted(moved), f"axes without effect: {sorted(set(moved) - set(changed))}"


def test_variant_setup_applies_the_router_and_arrival_axes():
    """``router=as-deployed`` moves a policy with a sourced refresh (llm-d, 50 ms) and leaves one whose preset is
    exact (least-load reads its own in-flight counter); a fitted MMPP start process changes the workload."""
    from smetric.experiments.robustness import arrival_process, router_info

    def fn(variant):
        return pd.Series({p: _goodput(variant, p, n_instances=4, minutes=1.0) for p in ("least-load", "llm-d")})

    base = fn(Variant())
    deployed = fn(Variant(name="r", router="as-deployed"))
    bursty = fn(Variant(name="a", arrival="azure-code:mmpp"))
    assert deployed["least-load"] == base["least-load"] and deployed["llm-d"] != base["llm-d"]
    assert (bursty != base).all()
    assert router_info("exact", "llm-d").exact and router_info("as-deployed", "llm-d").refresh_s == 0.05
    assert arrival_process("azure-code:gamma").kind == "gamma" and arrival_process("poisson").kind == "poisson"
    with pytest.raises(ValueError, match="router must be one of"):
        router_info("stale", "llm-d")
    with pytest.raises(ValueError, match="TRACE:KIND"):
        arrival_process("mmpp")
    with pytest.raises(ValueError, match="needs a generated workload"):
        variant_setup(Variant(name="t", workload="qwen-coder", arrival="azure-code:mmpp"), "llm-d", reference_rpm=40.0)
