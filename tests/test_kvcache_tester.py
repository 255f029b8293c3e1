"""The kv-cache-tester loader (real Claude Code sessions): mapping, containers, bad input, the shipped compact form."""

import copy
import importlib.util
import io
import json
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from smetric.workload import (
    TraceFormatError,
    TraceSkipWarning,
    data_dir,
    detect_format,
    load_trace,
    read_trace,
)
from smetric.workload.characterize import characterize, prefix_reuse
from smetric.workload.kvcache_tester import read_conversations

ORIGINAL = Path(__file__).resolve().parents[2] / "shared" / "traces" / "weka_claude_code_traces.tar.gz"
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_claude_code_512.py"

# Conversation A: 3 own calls and a sub-agent of 2 calls spawned at t = 6 s; B: 2 calls. Both use local ids 1, 2, 3.
CONV_A = {
    "id": "a", "block_size": 64, "hash_id_scope": "local", "tool_tokens": 100, "system_tokens": 60,
    "requests": [
        {"t": 0.0, "type": "n", "in": 200, "out": 10, "hash_ids": [1, 2, 3], "think_time": 0.0, "api_time": 2.0},
        {"t": 5.0, "type": "s", "in": 300, "out": 20, "hash_ids": [1, 2, 3, 4], "think_time": 3.0, "api_time": 1.0},
        {"t": 6.0, "type": "subagent", "subagent_type": "Explore", "tool_tokens": 64, "system_tokens": 0,
         "requests": [{"t": 0.0, "type": "n", "in": 130, "out": 5, "hash_ids": [50, 51]},
                      {"t": 4.0, "type": "n", "in": 200, "out": 5, "hash_ids": [50, 51, 52], "think_time": 1.0}]},
        {"t": 20.0, "type": "n", "in": 400, "out": 30, "hash_ids": [1, 2, 3, 4, 5, 6], "api_time": 1.0},
    ],
}
CONV_B = {
    "id": "b", "block_size": 64, "hash_id_scope": "local", "tool_tokens": 130, "system_tokens": 0,
    "requests": [{"t": 0.0, "type": "n", "in": 128, "out": 1, "hash_ids": [1, 2]},
                 {"t": 10.0, "type": "n", "in": 192, "out": 1, "hash_ids": [1, 2, 3]}],
}


def _write(folder: Path, docs: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in docs.items():
        (folder / name).write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
    return folder


def _tar(path: Path, docs: dict) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, doc in docs.items():
            data = json.dumps(doc).encode()
            info = tarfile.TarInfo(f"sessions/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def folder(tmp_path):
    return _write(tmp_path / "sessions", {"a.json": CONV_A, "b.json": CONV_B})


# ------------------------------------------------------------------------------ mapping
def test_calls_sessions_gaps_and_arrivals(folder):
    conv, _ = read_conversations(folder, subagents="separate")
    assert len(conv.t) == 7 and conv.n_conversations == 2 and conv.calls_per_conversation == 3.5
    w = conv.workload(session_rate=0.01, seed=3)
    assert len(w) == 7 and w.n_sessions == 3  # A's own calls, A's sub-agent, B
    frame = w.to_frame()
    sizes = sorted(frame.groupby("session").size())
    assert sizes == [2, 2, 3]
    a_main = frame[frame.input_len.isin([200, 300, 400]) & (frame.output_len >= 10)].sort_values("arrival")
    start = a_main.arrival.iloc[0]
    np.testing.assert_allclose(a_main.arrival - start, [0.0, 5.0, 20.0])
    np.testing.assert_allclose(a_main.gap, [0.0, 3.0, 14.0])  # think_time; else t - t_prev - api_time_prev
    assert list(a_main.turn) == [0, 1, 2]
    sub = frame[frame.output_len == 5].sort_values("arrival")
    np.testing.assert_allclose(sub.arrival - start, [6.0, 10.0])  # spawn time + the sub-agent's own t
    np.testing.assert_allclose(sub.gap, [0.0, 1.0])
    b = frame[frame.output_len == 1].sort_values("arrival")
    np.testing.assert_allclose(b.gap, [0.0, 10.0])  # neither think_time nor api_time: arrival to arrival
    assert np.all(w.parent[w.turn > 0] >= 0) and np.all(w.parent[w.turn == 0] == -1)


def test_attached_subagents_stay_in_their_conversation_and_join_its_next_call(folder):
    """Conversation A's sub-agent (2 calls, spawned after A's second call) becomes part of A's session: its first
    call's parent is the spawning call, its calls chain, its last call joins A's next call, whose gap is counted
    from the later end (the sub-agent's last call at 10 s, not the spawner's at 6 s)."""
    conv, _ = read_conversations(folder)
    assert conv.subagents == "attached"
    w = conv.workload(session_rate=0.01, seed=3)
    assert len(w) == 7 and w.n_sessions == 2
    rows = {(int(i), int(o)): r for r, (i, o) in enumerate(zip(w.input_len, w.output_len))}
    spawner, sub0, sub1, nxt = rows[300, 20], rows[130, 5], rows[200, 5], rows[400, 30]
    assert len({w.session[r] for r in (rows[200, 10], spawner, sub0, sub1, nxt)}) == 1
    assert w.parent[sub0] == spawner and w.parent[sub1] == sub0 and w.parent[nxt] == spawner
    assert [w.turn[r] for r in (spawner, sub0, sub1, nxt)] == [1, 2, 3, 2]
    assert w.join_to[sub1] == nxt and (w.join_to >= 0).sum() == 1
    start = w.arrival[rows[200, 10]]
    np.testing.assert_allclose(w.arrival[[sub0, sub1]] - start, [6.0, 10.0])  # no duration_ms: placed at t
    np.testing.assert_allclose(w.gap[[sub0, sub1, nxt]], [0.0, 1.0, 10.0])  # 6 - (5 + 1); think; 20 - 10
    separate = read_conversations(folder, subagents="separate")[0].workload(session_rate=0.01, seed=3)
    np.testing.assert_array_equal(np.sort(separate.input_len), np.sort(w.input_len))
    assert (separate.join_to == -1).all()
    with pytest.raises(ValueError, match="subagents"):
        read_conversations(folder, subagents="nested")


def test_attached_subagents_start_duration_before_their_entry_and_async_ones_join_nothing(tmp_path):
    """A sub-agent entry's ``t`` is when its result came back: attached, its calls start ``duration_ms`` earlier.
    An ``async_launched`` sub-agent runs beside the conversation, which does not wait for it."""
    sub = {"type": "subagent", "subagent_type": "Explore", "requests": [
        {"t": 0.0, "type": "n", "in": 64, "out": 2, "hash_ids": [70], "api_time": 2.0},
        {"t": 5.0, "type": "n", "in": 128, "out": 2, "hash_ids": [70, 71], "api_time": 3.0}]}
    doc = {"id": "d", "block_size": 64, "hash_id_scope": "local", "tool_tokens": 0, "system_tokens": 0,
           "requests": [{"t": 0.0, "type": "n", "in": 64, "out": 1, "hash_ids": [1], "api_time": 1.5},
                        dict(sub, t=12.0, duration_ms=10_000, status="completed"),
                        dict(sub, t=1.6, duration_ms=None, status="async_launched"),
                        {"t": 13.0, "type": "n", "in": 128, "out": 1, "hash_ids": [1, 2], "think_time": 11.5}]}
    folder = _write(tmp_path / "d", {"d.json": doc})
    w = read_conversations(folder)[0].workload(session_rate=0.01, seed=0)
    assert w.n_sessions == 1 and len(w) == 6
    t0 = w.arrival[0]
    subs = np.flatnonzero(w.output_len == 2)
    np.testing.assert_allclose(np.sort(w.arrival[subs] - t0), [1.6, 2.0, 6.6, 7.0])  # 12 - 10 s; async at 1.6
    nxt = int(np.flatnonzero((w.input_len == 128) & (w.output_len == 1))[0])
    joiners = np.flatnonzero(w.join_to == nxt)
    assert len(joiners) == 1 and w.arrival[joiners[0]] - t0 == pytest.approx(7.0)  # the completed one only
    assert w.gap[nxt] == pytest.approx(13.0 - (7.0 + 3.0))
    separate = read_conversations(folder, subagents="separate")[0].workload(session_rate=0.01, seed=0)
    np.testing.assert_allclose(np.sort(separate.arrival[separate.output_len == 2] - separate.arrival.min()),
                               [1.6, 6.6, 12.0, 17.0])  # today's placement: at the entry's t


def test_a_think_time_counted_from_an_earlier_completion_is_capped(tmp_path):
    """After a call without ``api_time`` the recorded think time counts from an earlier completion and can
    exceed the time since the previous call: the gap is capped at that time (t - t_prev)."""
    calls = [{"t": 0.0, "type": "s", "in": 128, "out": 4, "hash_ids": [1, 2], "api_time": 3.0},
             {"t": 8.0, "type": "s", "in": 192, "out": 4, "hash_ids": [1, 2, 3], "think_time": 5.0},
             {"t": 10.0, "type": "s", "in": 256, "out": 4, "hash_ids": [1, 2, 3, 4], "think_time": 7.0,
              "api_time": 1.0},
             {"t": 30.0, "type": "s", "in": 320, "out": 4, "hash_ids": [1, 2, 3, 4, 5], "think_time": 19.0}]
    doc = {"id": "c", "block_size": 64, "hash_id_scope": "local", "tool_tokens": 0, "system_tokens": 0,
           "requests": calls}
    w = read_conversations(_write(tmp_path / "s", {"c.json": doc}))[0].workload(seed=0)
    order = np.argsort(w.arrival)
    np.testing.assert_allclose(w.gap[order], [0.0, 5.0, 2.0, 19.0])  # 7 s from t=3 s, capped at 10 - 8


def test_block_ids_are_chained_offset_per_conversation_with_fresh_tails(folder):
    w = read_conversations(folder)[0].workload(seed=0)
    rows = {(int(i), int(o)): r for r, (i, o) in enumerate(zip(w.input_len, w.output_len))}
    a0, a1, a3 = w.blocks(rows[200, 10]), w.blocks(rows[300, 20]), w.blocks(rows[400, 30])
    b0, b1 = w.blocks(rows[128, 1]), w.blocks(rows[192, 1])
    assert len(a0) == 4 and len(a1) == 5 and len(b0) == 2 and len(b1) == 3  # ceil(in / 64)
    np.testing.assert_array_equal(a1[:3], a0[:3])
    np.testing.assert_array_equal(a3[:4], a1[:4])
    assert a0[3] not in a1 and a1[4] not in a3  # a partial tail is fresh
    assert not set(b1) & set(a3)  # the same local ids in another conversation are other blocks
    np.testing.assert_array_equal(b1[:2], b0)
    hits = prefix_reuse(w)["hit_tokens"].to_numpy()
    assert hits[rows[300, 20]] == 192 and hits[rows[192, 1]] == 128 and hits[rows[128, 1]] == 0


def test_shared_prefix_option_shares_the_tool_and_system_blocks(folder):
    plain = read_conversations(folder, subagents="separate")[0].workload(seed=0)
    shared = read_conversations(folder, shared_prefix=True, subagents="separate")[0].workload(seed=0)
    np.testing.assert_array_equal(plain.input_len, shared.input_len)
    first = shared.block_offsets[:-1]
    main_firsts = (shared.turn == 0) & (shared.output_len != 5)  # A's and B's first calls
    heads = [tuple(shared.block_ids[first[r]:first[r] + 2]) for r in np.flatnonzero(main_firsts)]
    assert heads[0] == heads[1]  # (100 + 60) // 64 = 2 and 130 // 64 = 2 blocks, common to A and B
    sub = shared.blocks(np.flatnonzero((shared.output_len == 5) & (shared.turn == 0))[0])
    assert sub[0] not in heads[0]  # a sub-agent type has its own canonical prefix
    assert characterize(shared, lru_blocks=())["reuse_ratio"] > characterize(plain, lru_blocks=())["reuse_ratio"]


def test_rate_and_seed_set_the_conversation_starts(tmp_path):
    docs = {f"c{k:03d}.json": dict(CONV_B, id=str(k)) for k in range(400)}
    conv, _ = read_conversations(_write(tmp_path / "many", docs))
    w = conv.workload(requests_per_minute=60.0, seed=1)  # 1 request/s = 0.5 conversations/s
    starts = np.sort(w.arrival[(w.turn == 0)])
    assert np.mean(np.diff(starts)) == pytest.approx(2.0, rel=0.15)
    again, other = conv.workload(requests_per_minute=60.0, seed=1), conv.workload(requests_per_minute=60.0, seed=2)
    np.testing.assert_array_equal(w.arrival, again.arrival)
    assert not np.array_equal(w.arrival, other.arrival)
    with pytest.raises(ValueError, match="at most one"):
        conv.workload(requests_per_minute=60.0, session_rate=1.0)
    with pytest.raises(ValueError, match="requests_per_minute"):
        conv.workload(requests_per_minute=-1.0)


def test_window_mode_redraws_conversations_as_new_users(tmp_path):
    docs = {f"c{k:02d}.json": dict(CONV_B, id=str(k)) for k in range(20)}
    conv, _ = read_conversations(_write(tmp_path / "few", docs))
    w = conv.workload(requests_per_minute=12.0, duration=3600.0, warmup=600.0, seed=4)  # 0.1 conversations/s
    assert w.arrival.min() >= 0 and w.arrival.max() < 3600
    assert 60 * len(w) / 3600 == pytest.approx(12.0, rel=0.15)
    assert w.n_sessions > 20  # the 20 conversations recur as new sessions
    firsts = w.block_ids[w.block_offsets[:-1][w.turn == 0]]
    assert len(np.unique(firsts)) == (w.turn == 0).sum()  # and never share blocks with another copy
    assert (w.turn[w.parent < 0] > 0).any() or (w.turn == 0).all()
    again = conv.workload(requests_per_minute=12.0, duration=3600.0, warmup=600.0, seed=4)
    np.testing.assert_array_equal(w.block_ids, again.block_ids)
    with pytest.raises(ValueError, match="duration"):
        conv.workload(duration=-1.0)


def test_folder_tar_and_file_read_alike(folder, tmp_path):
    archive = _tar(tmp_path / "sessions.tar.gz", {"a.json": CONV_A, "b.json": CONV_B})
    assert detect_format(folder) == detect_format(archive) == detect_format(folder / "a.json") == "kvcache-tester"
    by_folder, by_tar = load_trace(folder, seed=5), load_trace(archive, seed=5)
    for field in ("arrival", "input_len", "session", "parent", "gap", "block_offsets", "block_ids"):
        np.testing.assert_array_equal(getattr(by_folder, field), getattr(by_tar, field), err_msg=field)
    assert len(load_trace(folder / "a.json")) == 5
    coarse = load_trace(folder, block_size=128, seed=5)
    np.testing.assert_array_equal(coarse.block_ids, by_folder.coarsen(128).block_ids)
    with pytest.raises(ValueError, match="take no replay options"):
        load_trace("azure-code", seed=1)


# ------------------------------------------------------------------------------ bad input
def _broken(edit):
    doc = copy.deepcopy(CONV_A)
    edit(doc)
    return doc


@pytest.mark.parametrize("doc, field, problem", [
    (_broken(lambda d: d["requests"][1].pop("in")), "requests[1].in", "missing"),
    (_broken(lambda d: d["requests"][0].update(out=-3)), "requests[0].out", "is negative (-3)"),
    (_broken(lambda d: d["requests"][0].update(**{"in": 100})), "requests[0].hash_ids", "in=100 allows at most 2"),
    (_broken(lambda d: d["requests"][0].update(hash_ids=[1, "x"])), "hash_ids", "not a list of 64-bit integers"),
    (_broken(lambda d: d["requests"][0].update(hash_ids=[1, 2 ** 70])), "hash_ids", "not a list of 64-bit integers"),
    (_broken(lambda d: d["requests"][0].update(hash_ids="1,2")), "requests[0].hash_ids", "must be a list"),
    (_broken(lambda d: d["requests"][1].update(t=-1.0)), "requests[1].t", "is negative"),
    (_broken(lambda d: d["requests"][3].update(t=4.0)), "requests[3].t", "before the previous call's 5 s"),
    (_broken(lambda d: d["requests"][2]["requests"][0].pop("out")), "requests[2].requests[0].out", "missing"),
    (_broken(lambda d: d["requests"][2].update(requests=[])), "requests[2].requests", "non-empty list"),
    (_broken(lambda d: d.pop("block_size")), "block_size", "missing"),
    (_broken(lambda d: d.update(hash_id_scope="galactic")), "hash_id_scope", "must be one of"),
    (_broken(lambda d: d["requests"][1].update(hash_ids=[2, 1, 3, 4])), "hash_ids", "not chained"),
    ('{"id": "a", "requests": [', None, "not valid JSON"),
    ("[1, 2]", None, "must hold a JSON object, got list"),
])
def test_bad_session_file_names_file_line_and_field(tmp_path, doc, field, problem):
    path = _write(tmp_path / "bad", {"a.json": doc})
    with pytest.raises(TraceFormatError) as info:
        load_trace(path, format="kvcache-tester")
    err = info.value
    assert err.path.endswith("a.json") and err.line == 1 and err.field == field
    assert problem in err.problem


def test_mixed_block_sizes_and_empty_folders_fail(tmp_path):
    path = _write(tmp_path / "mixed", {"a.json": CONV_A, "b.json": dict(CONV_B, block_size=16)})
    with pytest.raises(TraceFormatError, match="differs from the files before it"):
        read_conversations(path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceFormatError, match="no session files"):
        read_conversations(tmp_path / "empty")


def test_skip_mode_leaves_out_bad_files(tmp_path):
    path = _write(tmp_path / "some", {"a.json": CONV_A, "b.json": CONV_B, "c.json": "{not json"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = read_trace(path, on_error="skip")
    assert len(loaded.workload) == 7 and loaded.n_skipped == 1 and loaded.skipped[0].path.endswith("c.json")
    assert any(issubclass(c.category, TraceSkipWarning) for c in caught)


# ------------------------------------------------------------------------------ the real trace
def test_claude_code_compact_form_has_the_published_statistics():
    s = characterize(load_trace("claude-code", subagents="separate"), lru_blocks=())
    assert s["n_requests"] == 49334 and s["n_sessions"] == 710 + 63 and s["block_size"] == 512
    assert 0.95 <= s["reuse_ratio"] <= 0.98  # 0.963 at 64-token blocks (the kv-cache-tester statistics)
    assert s["input_mean"] == pytest.approx(122_379, abs=1) and s["input_p50"] == 103_659
    assert s["output_mean"] == pytest.approx(440.06, abs=0.01) and s["output_p50"] == 216
    assert (s["turns_p50"], s["turns_p90"], s["turns_max"]) == (39, 150, 514)
    attached = characterize(load_trace("claude-code"), lru_blocks=())  # the default: sub-agents in their sessions
    assert attached["n_sessions"] == 710 and attached["reuse_ratio"] == s["reuse_ratio"]
    assert (attached["turns_p50"], attached["turns_max"]) == (45.5, 561)


def _script():
    spec = importlib.util.spec_from_file_location("make_claude_code_512", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compact_script_keeps_every_eighth_id_and_the_reuse(tmp_path):
    long_a = copy.deepcopy(CONV_A)
    long_a["requests"][3].update(**{"in": 1100, "hash_ids": list(range(1, 18))})
    original = _tar(tmp_path / "orig.tar.gz", {"a.json": long_a, "b.json": CONV_B})
    compact = tmp_path / "compact.tar.gz"
    _script().main(original, compact)
    coarse, fine = load_trace(compact, seed=0), load_trace(original, seed=0, block_size=512)
    assert coarse.block_size == 512
    np.testing.assert_array_equal(coarse.block_offsets, fine.block_offsets)
    np.testing.assert_array_equal(prefix_reuse(coarse)["hit_tokens"], prefix_reuse(fine)["hit_tokens"])
    with tarfile.open(compact) as archive:
        doc = json.loads(archive.extractfile("weka_claude_code_512/a.json").read())
    assert doc["requests"][3]["hash_ids"] == [8, 16] and "kv-cache-tester" in doc["derived_from"]


@pytest.mark.skipif(not ORIGINAL.is_file(),
                    reason="the original archive (kv-cache-tester traces) is not beside this checkout")
def test_original_archive_matches_the_shipped_compact_form():
    original = load_trace(ORIGINAL, format="kvcache-tester")
    assert len(original) == 49334 and original.block_size == 64
    assert 0.95 <= characterize(original, lru_blocks=())["reuse_ratio"] <= 0.98
    coarse = original.coarsen(512)
    shipped = load_trace("claude-code")
    np.testing.assert_array_equal(coarse.block_offsets, shipped.block_offsets)
    np.testing.assert_array_equal(prefix_reuse(coarse)["hit_tokens"], prefix_reuse(shipped)["hit_tokens"])


def test_claude_code_counts_attached_and_separate():
    """The shipped trace: 63 sub-agents (676 calls) in 17 of 710 conversations; attached they stay in the 710
    conversations' sessions and 57 join a next call (4 run async, 2 follow the conversation's last call)."""
    path = data_dir() / "traces" / "weka_claude_code_512.tar.gz"
    attached = read_conversations(path)[0]
    separate = read_conversations(path, subagents="separate")[0]
    assert (attached.family > 0).sum() == 676 and len(np.unique(attached.chain[attached.family > 0])) == 63
    a, s = attached.workload(seed=0), separate.workload(seed=0)
    assert len(a) == len(s) == 49334 and a.n_sessions == 710 and s.n_sessions == 773
    assert (a.join_to >= 0).sum() == 57 and (s.join_to == -1).all()
    assert len(np.unique(a.session[a.join_to >= 0])) == 16
    np.testing.assert_array_equal(np.sort(a.input_len), np.sort(s.input_len))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_window_is_placed_without_building_the_calls_outside_it(seed):
    """Placing only the calls inside [begin, end) equals placing everything and cutting the window (a day of
    warm-up for a 10-minute window would otherwise build every call of the day)."""
    conversations = read_conversations(data_dir() / "traces" / "weka_claude_code_512.tar.gz")[0]
    rng = np.random.default_rng(seed)
    start = np.sort(rng.uniform(0.0, 86_400.0 + 600.0, 200)) - 86_400.0
    which = rng.integers(0, conversations.n_conversations, 200)
    full = conversations._placed(which, start, end=600.0).window(0.0, 600.0)
    cut = conversations._placed(which, start, begin=0.0, end=600.0)
    assert len(cut) > 0 and (cut.parent == -1).any() and (cut.parent >= 0).any()
    for name in ("arrival", "input_len", "output_len", "session", "turn", "parent", "gap", "block_offsets",
                 "block_ids", "join_to"):
        assert np.array_equal(getattr(full, name), getattr(cut, name)), name
