"""The synthetic session generator: calibration bands, prompt structure, timing, determinism, validation."""

import numpy as np
import pandas as pd
import pytest

from smetric.workload.characterize import characterize, prefix_reuse
from smetric.workload.synthetic import (
    AGENT,
    AGENT_TARGETS,
    BAILIAN_CODER,
    CHAT_TARGETS,
    PRESETS,
    SessionWorkloadConfig,
    expected_turns,
    get_preset,
    session_rate,
    synth_agent_workload,
    synth_chat_workload,
    synth_workload,
    with_overrides,
)


@pytest.fixture(scope="module")
def agent():
    return synth_agent_workload(3000, seed=0)


@pytest.fixture(scope="module")
def small16():
    return synth_agent_workload(150, seed=3, block_size=16)


def _assert_in_bands(stats: pd.Series, targets: dict) -> None:
    bad = {k: (round(stats[k], 4), lo, hi) for k, (lo, hi, _) in targets.items() if not lo <= stats[k] <= hi}
    assert not bad, f"outside the calibration bands (value, low, high): {bad}"


# ------------------------------------------------------------------ calibration
def test_agent_meets_every_calibration_band(agent):
    _assert_in_bands(characterize(agent, lru_blocks=()), AGENT_TARGETS)


def test_chat_preset_reuse_band():
    _assert_in_bands(characterize(synth_chat_workload(5000, seed=0), lru_blocks=()), CHAT_TARGETS)


@pytest.mark.parametrize("name", ["bailian-coder", "toolagent"])
def test_named_preset_meets_its_calibration_bands(name):
    _assert_in_bands(characterize(synth_agent_workload(2000, seed=0, preset=name), lru_blocks=()),
                     PRESETS[name].targets)


def test_tracelab_preset_meets_its_bands_and_long_context_share():
    w = synth_agent_workload(300, seed=0, preset="tracelab")
    _assert_in_bands(characterize(w, lru_blocks=()), PRESETS["tracelab"].targets)
    assert np.mean(w.input_len >= 100_000) == pytest.approx(0.61, abs=0.05)  # TraceLab: 61 % of rounds >= 100k


def test_bailian_coder_shape_beyond_the_bands():
    w = synth_agent_workload(2000, seed=0, preset="bailian-coder")
    assert w.block_size == 16 and w.input_len.max() <= BAILIAN_CODER.max_context < 25_777  # public max 25,777
    s = characterize(w, lru_blocks=())
    # the documented consequences of keeping the paper's reuse structure (not targets, but they must hold)
    assert s["follow_up_share"] > 0.8 and s["turn_interval_p50"] < 117.7


def test_presets_are_named_and_the_default_is_long_context():
    assert set(PRESETS) == {"bailian-coder", "toolagent", "tracelab", "long-context", "chat"}
    assert get_preset("long-context").config is AGENT and get_preset("chat").targets is CHAT_TARGETS
    for preset in PRESETS.values():
        assert all(lo <= hi and source for lo, hi, source in preset.targets.values())
    default, named = synth_agent_workload(50, seed=1), synth_agent_workload(50, seed=1, preset="long-context")
    np.testing.assert_array_equal(default.input_len, named.input_len)
    with pytest.raises(KeyError, match="known presets: bailian-coder"):
        synth_agent_workload(10, preset="agent")


# ------------------------------------------------------------------ structure
def test_workload_fields(agent):
    assert agent.block_size == 512 and np.all(agent.priority == 1)
    assert agent.n_sessions == 3000
    first = agent.turn == 0
    assert np.all(agent.parent[first] == -1) and np.all(agent.gap[first] == 0)
    assert np.all(agent.input_len >= 1) and np.all(agent.output_len >= 1)


def test_followups_extend_parent_prompt_and_reply(small16):
    w = small16
    bs = w.block_size
    children = np.flatnonzero(w.parent >= 0)
    assert len(children) > 100
    compacted = 0
    for i in children:
        p = w.parent[i]
        shared = w.input_len[p] // bs  # the parent's full blocks
        if w.input_len[i] >= w.input_len[p] + w.output_len[p]:
            assert np.array_equal(w.blocks(i)[:shared], w.blocks(p)[:shared]), f"row {i} does not extend row {p}"
        else:  # a compaction: a new prefix after the shared system prompt
            compacted += 1
            n = min(w.n_blocks[i], w.n_blocks[p])
            common = np.argmin(np.append(w.blocks(i)[:n] == w.blocks(p)[:n], False))
            assert common * bs <= 2 * AGENT.system_prompt_median
    assert compacted < len(children) / 20


def test_block_ids_are_chained_and_partial_tails_fresh(small16):
    w = small16
    pos = np.arange(len(w.block_ids)) - np.repeat(w.block_offsets[:-1], w.n_blocks)
    prev = np.where(pos > 0, np.roll(w.block_ids, 1), -1)
    frame = pd.DataFrame({"id": w.block_ids, "pos": pos, "prev": prev})
    per_id = frame.groupby("id").nunique()
    assert per_id["pos"].max() == 1 and per_id["prev"].max() == 1  # an id fixes its position and whole prefix
    partial = w.input_len % w.block_size != 0
    tails = w.block_ids[w.block_offsets[1:][partial] - 1]
    ids, counts = np.unique(w.block_ids, return_counts=True)
    assert np.all(counts[np.searchsorted(ids, tails)] == 1)  # a partial last block appears nowhere else


def test_system_prompts_are_shared_across_sessions(agent):
    first_blocks = agent.block_ids[agent.block_offsets[:-1][agent.turn == 0]]
    counts = np.unique(first_blocks, return_counts=True)[1]
    assert 1 < len(counts) <= AGENT.n_system_prompts and counts.max() > 0.2 * counts.sum()


def test_same_sessions_at_any_block_size(small16):
    coarse = synth_agent_workload(150, seed=3)
    for field in ("arrival", "input_len", "output_len", "session", "turn", "parent", "gap"):
        assert np.array_equal(getattr(coarse, field), getattr(small16, field)), field
    # chained ids coarsen exactly: the hits of the 16-token trace coarsened to 512 are the 512-token hits
    assert np.array_equal(prefix_reuse(small16.coarsen(512))["hit_tokens"], prefix_reuse(coarse)["hit_tokens"])


def test_compaction_bounds_the_context():
    w = synth_agent_workload(300, seed=1, max_context=30_000, compact_tokens=5_000)
    assert w.input_len.max() <= 30_000
    child = w.parent >= 0
    shrunk = w.input_len[child] < w.input_len[w.parent[child]]
    assert shrunk.sum() > 10


# ------------------------------------------------------------------ timing and rate
def test_followups_wait_for_parent_service_plus_gap(agent):
    child = agent.parent >= 0
    p = agent.parent[child]
    service = agent.output_len[p] * AGENT.est_tpot_s  # the decode part of the estimate alone
    assert np.all(agent.arrival[child] - agent.arrival[p] >= agent.gap[child] + service - 1e-9)
    assert np.all(agent.gap[child] > 0)
    assert np.median(agent.gap[child]) == pytest.approx(AGENT.gap_median, rel=0.3)


def test_expected_turns_matches_draws():
    w = synth_agent_workload(20000, seed=2)
    assert len(w) / w.n_sessions == pytest.approx(expected_turns(AGENT), rel=0.05)
    assert session_rate(AGENT) == pytest.approx(AGENT.requests_per_minute / 60 / expected_turns(AGENT))


def test_duration_window_reaches_target_rate():
    w = synth_agent_workload(duration=1800, warmup=4 * 3600, requests_per_minute=300.0, seed=0)
    assert w.arrival.min() >= 0 and w.arrival.max() < 1800
    assert 60 * len(w) / 1800 == pytest.approx(300.0, rel=0.15)
    assert (w.turn[w.parent < 0] > 0).any()  # sessions already running when the window opens


def test_session_rate_sets_session_starts():
    w = synth_agent_workload(2000, seed=0, session_rate=0.5)
    starts = np.sort(w.arrival[w.turn == 0])
    assert np.mean(np.diff(starts)) == pytest.approx(2.0, rel=0.1)


# ------------------------------------------------------------------ determinism and validation
def test_same_seed_same_workload_different_seed_differs():
    a, b, c = (synth_chat_workload(300, seed=s) for s in (7, 7, 8))
    for field in ("arrival", "input_len", "output_len", "session", "parent", "gap", "block_offsets", "block_ids"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert not np.array_equal(a.input_len[:50], c.input_len[:50])


@pytest.mark.parametrize("overrides, match", [
    ({"turns_median": 0.0}, "turns_median"),
    ({"append_sigma": -1.0}, "append_sigma"),
    ({"long_gap_prob": 1.5}, "long_gap_prob"),
    ({"block_size": 16.5}, "block_size"),
    ({"compact_tokens": 300_000}, "compact_tokens"),
    ({"session_rate": 1.0, "requests_per_minute": 10.0}, "exactly one"),
])
def test_bad_config_names_the_field(overrides, match):
    with pytest.raises(ValueError, match=match):
        with_overrides(AGENT, **overrides)


def test_bad_sizes_fail_loudly():
    with pytest.raises(ValueError, match="n_sessions"):
        synth_workload(AGENT, 0)
    with pytest.raises(ValueError, match="exactly one"):
        synth_workload(AGENT, 10, duration=60.0)
    with pytest.raises(ValueError, match="duration"):
        synth_workload(AGENT, None, duration=-1.0)
    # the other arm of "exactly one": a session rate alone is accepted and is what sets the rate
    config = SessionWorkloadConfig(session_rate=1.0, requests_per_minute=None)
    assert session_rate(config) == 1.0
    assert session_rate(with_overrides(config, session_rate=None, requests_per_minute=60.0)) == pytest.approx(
        1.0 / expected_turns(config))
