"""Trace loaders, writers and the catalog: formats, malformed input, skip mode, round trips."""

import gzip
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smetric.workload import (
    TRACES,
    TraceFormatError,
    TraceLimits,
    TraceNoteWarning,
    TraceSkipWarning,
    Workload,
    WorkloadError,
    characterize,
    data_dir,
    detect_format,
    load_trace,
    read_trace,
    trace_names,
    trace_path,
    write_bailian,
    write_mooncake,
    write_trace,
)

DATA = Path(__file__).parent / "data"


# ------------------------------------------------------------------------------ malformed input
@pytest.mark.parametrize("file, line, field, problem", [
    ("mooncake_not_json.jsonl", 2, None, "not valid JSON (Expecting ',' delimiter at column 81)"),
    ("mooncake_not_object.jsonl", 2, None, "a line must be a JSON object, got list"),
    ("mooncake_missing_field.jsonl", 2, "output_length", "missing"),
    ("mooncake_mistyped_field.jsonl", 2, "input_length", "must be an integer, got '2100'"),
    ("mooncake_negative_length.jsonl", 3, "output_length", "is negative (-5)"),
    ("mooncake_unsorted.jsonl", 3, "timestamp", "3000 ms is before the previous request's 6000 ms"),
    ("mooncake_hash_ids_too_long.jsonl", 2, "hash_ids", "has 3 ids but input_length 600 allows at most 2 blocks"),
    ("mooncake_bad_hash_ids.jsonl", 2, "hash_ids", "must be a list of integers"),
    ("mooncake_truncated.jsonl.gz", 189, None, "truncated or corrupt gzip stream"),
    ("not_utf8.jsonl", 2, None, "not UTF-8 text"),
    ("empty.jsonl", 1, None, "file is empty"),
    ("blank_lines_only.jsonl", 1, None, "file is empty"),
    ("bailian_duplicate_chat_id.jsonl", 3, "chat_id", "duplicate chat_id 1 (first on line 1)"),
    ("bailian_parent_after_child.jsonl", 3, "chat_id", "chat_id 2 is the parent of line 2, which comes earlier"),
    ("bailian_bad_turn.jsonl", 1, "turn", "must be >= 1, got 0"),
    ("azure_bad_header.csv", 1, "header", "expected 'TIMESTAMP,ContextTokens,GeneratedTokens'"),
    ("azure_bad_timestamp.csv", 3, "TIMESTAMP", "not a date-time: '2023-11-16 18:61:46.0000000'"),
    ("azure_negative.csv", 3, "ContextTokens", "is negative (-10)"),
    ("azure_unsorted.csv", 3, "TIMESTAMP", "is before the previous request's time"),
    ("azure_wrong_columns.csv", 2, None, "expected 3 comma-separated fields, got 2"),
    ("tracelab_prefix_exceeds_input.jsonl", 2, "prefix_tokens", "1300 exceeds input_tokens_total 1200"),
    ("tracelab_no_events.jsonl", 2, "timing_events", "must be a non-empty list of events"),
    ("tracelab_round_before_parent.jsonl", 2, "timing_events", "round 1 arrives before round 0 (line 1)"),
    ("unknown_format.jsonl", 1, None, "cannot tell the trace format from the fields ['tokens', 'ts']"),
    ("mooncake_huge_timestamp.jsonl", 2, "timestamp", "1e+308 ms is beyond 1e+10 s"),
    ("mooncake_huge_input.jsonl", 2, "input_length", "1,000,000,000,000,000 tokens exceeds max_tokens = 10,000,000"),
    ("mooncake_duplicate_key.jsonl", 2, "input_length", "appears more than once in the object"),
    ("bailian_inconsistent_turn.jsonl", 2, "turn", "is 3 but its parent 1 (line 1) has turn 1"),
    ("azure_year_9999.csv", 3, "TIMESTAMP", "year 9999 of '9999-11-16 18:15:47.0000000' is outside 1678-2261"),
])
def test_malformed_file_names_file_line_and_field(file, line, field, problem):
    path = DATA / file
    fmt = "mooncake" if file in ("empty.jsonl", "blank_lines_only.jsonl", "not_utf8.jsonl") else None
    with pytest.raises(TraceFormatError) as info:
        load_trace(path, format=fmt)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field)
    assert problem in err.problem
    where = f"{path}, line {line}" + (f", field '{field}'" if field else "")
    assert str(err).startswith(where + ": ")


def test_skip_mode_leaves_out_bad_lines_and_reports_them():
    path = DATA / "mooncake_several_bad.jsonl"
    with pytest.raises(TraceFormatError, match="line 2: not valid JSON"):
        read_trace(path)
    with pytest.warns(TraceSkipWarning, match="skipped 3 bad line"):
        result = read_trace(path, on_error="skip")
    assert result.n_skipped == 3
    assert [e.line for e in result.skipped] == [2, 3, 6]
    assert [e.field for e in result.skipped] == [None, "input_length", "hash_ids"]
    w = result.workload
    assert list(w.input_len) == [1600, 2100, 700]
    assert list(w.arrival) == [0.0, 3.0, 6.0]


def test_skip_mode_still_fails_on_truncation_and_on_nothing_left(tmp_path):
    with pytest.raises(TraceFormatError, match="truncated"):
        read_trace(DATA / "mooncake_truncated.jsonl.gz", on_error="skip")
    bad = tmp_path / "all_bad.jsonl"
    bad.write_text("nope\n[1]\n")
    with pytest.raises(TraceFormatError, match="no valid requests: all 2 lines were bad"):
        read_trace(bad, format="mooncake", on_error="skip")
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip'"):
        read_trace(bad, on_error="ignore")


def test_clean_load_issues_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = read_trace("mooncake-synthetic")
    assert result.n_skipped == 0 and result.orphans == 0


# ------------------------------------------------------------------------------ formats
def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_mooncake_short_hash_lists_are_padded_with_fresh_unique_ids(tmp_path):
    path = _write_jsonl(tmp_path / "t.jsonl", [
        {"timestamp": 0, "input_length": 1600, "output_length": 3, "hash_ids": [0, 1]},
        {"timestamp": 1500, "input_length": 1100, "output_length": 3, "hash_ids": [0, 1, 7]},
        {"timestamp": 1500, "input_length": 0, "output_length": 3, "hash_ids": []},
    ])
    w = load_trace(path)
    assert w.block_size == 512 and list(w.n_blocks) == [4, 3, 0]
    assert list(w.blocks(0)[:2]) == [0, 1] and list(w.blocks(1)) == [0, 1, 7]
    pads = w.blocks(0)[2:]
    assert len(set(pads)) == 2 and pads.min() > 7
    assert list(w.arrival) == [0.0, 1.5, 1.5]


def test_bailian_sessions_follow_parent_chain_and_orphans_are_kept(tmp_path):
    rows = [
        dict(chat_id=10, parent_chat_id=-1, timestamp=0.5, input_length=40, output_length=3, type="text", turn=1,
             hash_ids=[1, 2, 3]),
        dict(chat_id=11, parent_chat_id=-1, timestamp=1.0, input_length=20, output_length=3, type="search", turn=1,
             hash_ids=[4, 5]),
        dict(chat_id=12, parent_chat_id=10, timestamp=4.0, input_length=70, output_length=3, type="text", turn=2,
             hash_ids=[1, 2, 6, 7, 8]),
        dict(chat_id=13, parent_chat_id=12, timestamp=9.5, input_length=90, output_length=3, type="text", turn=3,
             hash_ids=[1, 2, 6, 7, 9]),
    ]
    w = load_trace(_write_jsonl(tmp_path / "b.jsonl", rows))
    assert w.block_size == 16
    assert list(w.parent) == [-1, -1, 0, 2]
    assert list(w.turn) == [0, 0, 1, 2]
    assert w.session[2] == w.session[3] == w.session[0] != w.session[1]
    np.testing.assert_allclose(w.gap, [0, 0, 3.5, 5.5])
    assert w.n_blocks[3] == 6 and w.blocks(3)[5] > 9  # padded with a fresh id

    with pytest.warns(TraceSkipWarning, match="1 request"):
        result = read_trace(DATA / "bailian_orphan.jsonl")
    w = result.workload
    assert result.orphans == 1
    assert list(w.parent) == [-1, -1, 1] and list(w.turn) == [0, 2, 3]
    assert w.n_sessions == 2 and w.gap[1] == 0 and w.gap[2] == 7.5


def test_bailian_can_ignore_chat_ids_and_infer_from_hashes(tmp_path):
    rows = [dict(chat_id=k, parent_chat_id=-1, timestamp=float(k), input_length=16 * (4 + k), output_length=1,
                 type="text", turn=1, hash_ids=list(range(4 + k))) for k in range(3)]
    path = _write_jsonl(tmp_path / "b.jsonl", rows)
    assert list(load_trace(path).parent) == [-1, -1, -1]
    assert list(load_trace(path, infer_sessions=True).parent) == [-1, 0, 1]


def test_azure_keeps_100ns_precision_and_gives_fresh_blocks(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,40,4\n2023-11-16 18:15:46.6805901,17,2\n"
                    "2023-11-16 18:15:48.0000000,0,9\n")
    w = load_trace(path, block_size=8)
    assert w.arrival[0] == 0.0
    assert w.arrival[1] == pytest.approx(1e-7, abs=1e-12)
    assert w.arrival[2] == pytest.approx(1.31941, abs=1e-9)
    assert list(w.n_blocks) == [5, 3, 0]
    assert len(np.unique(w.block_ids)) == len(w.block_ids) == 8
    assert list(w.session) == [0, 1, 2] and np.all(w.parent == -1) and np.all(w.turn == 0)


@pytest.mark.parametrize("trace", ["azure-conv", "azure-code"])
def test_azure_columns_at_once_equal_the_row_by_row_parse(trace, monkeypatch):
    import smetric.workload.loaders as loaders

    fast = load_trace(trace)
    monkeypatch.setattr(loaders, "_azure_columns", lambda texts, limits: None)
    slow = load_trace(trace)
    for name in ("arrival", "input_len", "output_len", "session", "block_offsets", "block_ids"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name


@pytest.mark.parametrize("row", ["2023-11-16 18:15:46.0000000,40", "2023-11-16 18:15:45.0000000,40,4",
                                 "NaT,40,4", "2023-11-16 18:15:47.0000000,-3,4", "2023-11-16 18:15:47.0000000,4,x",
                                 "1500-01-01 00:00:00,4,4"])
def test_azure_columns_leave_every_bad_row_to_the_row_by_row_parser(row):
    from smetric.workload.loaders import TraceLimits, _azure_columns

    good = "2023-11-16 18:15:46.6805900,40,4"
    assert _azure_columns([good, good], TraceLimits()) is not None
    assert _azure_columns([good, row], TraceLimits()) is None


def test_tracelab_rounds_chain_share_prefix_and_gap_from_parent_completion(tmp_path):
    def events(*pairs):
        return [{"event_type": k, "timestamp": f"2026-06-01T05:40:{s:06.3f}Z"} for k, s in pairs]

    rows = [  # session b starts between a's rounds; the file is grouped by session, not sorted by time
        dict(session_id="a", round_index=0, input_tokens_total=100, prefix_tokens=40, output_tokens=5,
             timing_events=events(("user_message", 1.0), ("text", 3.0), ("tool_call", 4.0))),
        dict(session_id="a", round_index=1, input_tokens_total=150, prefix_tokens=99, output_tokens=5,
             timing_events=events(("tool_result", 6.5), ("tool_result", 9.0), ("text", 10.0))),
        dict(session_id="b", round_index=0, input_tokens_total=30, prefix_tokens=0, output_tokens=5,
             timing_events=events(("user_message", 2.0), ("text", 2.5))),
    ]
    w = load_trace(_write_jsonl(tmp_path / "r.jsonl", rows), block_size=16)
    np.testing.assert_allclose(w.arrival, [0.0, 1.0, 8.0])
    assert list(w.parent) == [-1, -1, 0] and list(w.turn) == [0, 0, 1]
    assert w.session[2] == w.session[0] != w.session[1]
    np.testing.assert_allclose(w.gap, [0.0, 0.0, 5.0])  # 9.0 (last tool result) - 4.0 (parent's last event)
    # prefix 99 tokens -> 6 whole blocks, capped by the parent's 100 // 16 = 6 full blocks
    assert list(w.blocks(2)[:6]) == list(w.blocks(0)[:6])
    assert len(set(w.blocks(2)[6:]) | set(w.blocks(0)) | set(w.blocks(1))) == \
        len(w.blocks(2)) - 6 + len(w.blocks(0)) + len(w.blocks(1))


def test_tracelab_example_matches_its_description():
    w = load_trace("tracelab-example")
    assert len(w) == 19 and w.n_sessions == 2
    assert sorted(np.bincount(w.session)) == [9, 10]
    assert np.median(w.input_len) == 32272 and w.input_len.max() == 48305
    assert np.median(w.output_len) == 273
    assert np.all(w.turn == [np.sum(w.session[:i] == w.session[i]) for i in range(len(w))])
    assert np.all(w.gap >= 0) and np.all(w.gap[w.turn == 0] == 0)


@pytest.mark.parametrize("name, rows, span, in_p50, out_max", [
    ("mooncake-conversation", 12031, 3536.999, 6909, 2000),
    ("mooncake-synthetic", 3993, 1022.025, 11587, 893),
    ("azure-code", 8819, 3435.9, 1469, 1899),
    ("azure-conv", 19366, 3501.7, 1020, 1000),
])
def test_shipped_traces_load_with_their_published_statistics(name, rows, span, in_p50, out_max):
    w = load_trace(name)
    assert len(w) == rows and w.name == name
    assert w.duration == pytest.approx(span, abs=0.05)
    assert np.median(w.input_len) == in_p50 and w.output_len.max() == out_max
    assert w.block_size == (512 if name.startswith("mooncake") else 16)


def test_block_size_coarsens_hashed_traces_and_rejects_non_multiples():
    w = load_trace("mooncake-synthetic")
    coarse = load_trace("mooncake-synthetic", block_size=1024)
    assert coarse.block_size == 1024
    np.testing.assert_array_equal(coarse.block_ids, w.coarsen(1024).block_ids)
    np.testing.assert_array_equal(coarse.parent, w.parent)  # sessions inferred at the native size
    with pytest.raises(ValueError, match="multiple of mooncake's native 512"):
        load_trace("mooncake-synthetic", block_size=100)
    with pytest.raises(ValueError, match="azure traces carry no block hashes"):
        load_trace("azure-code", infer_sessions=True)
    with pytest.raises(ValueError, match="unknown trace format 'csv'"):
        load_trace("azure-code", format="csv")


def test_mooncake_without_inference_gives_one_session_per_request():
    w = load_trace("mooncake-synthetic", infer_sessions=False)
    assert w.n_sessions == len(w) and np.all(w.parent == -1) and np.all(w.gap == 0)


# ------------------------------------------------------------------------------ catalog
def test_catalog_names_resolve_inside_the_repository():
    assert trace_names() == sorted(TRACES) and "mooncake-conversation" in trace_names()
    for name in (n for n in trace_names() if TRACES[n].download is None):  # the shipped ones
        path = trace_path(name)
        assert path.is_file() and path.parent == data_dir() / "traces"
        assert detect_format(path) == TRACES[name].format
    assert (data_dir() / "traces" / "ATTRIBUTION.md").is_file()
    assert {p.name for p in (data_dir() / "traces" / "LICENSES").iterdir()} == {"Apache-2.0.txt", "CC-BY-4.0.txt"}


def test_a_path_works_wherever_a_name_does():
    by_name = load_trace("azure-code")
    by_path = load_trace(str(trace_path("azure-code")))
    np.testing.assert_array_equal(by_name.arrival, by_path.arrival)
    assert by_path.name == "azure_llm_inference_2023_code"


def test_smetric_data_overrides_the_data_directory(tmp_path, monkeypatch):
    (tmp_path / "traces").mkdir()
    shutil.copy(trace_path("tracelab-example"), tmp_path / "traces")
    monkeypatch.setenv("SMETRIC_DATA", str(tmp_path))
    assert trace_path("tracelab-example") == tmp_path / "traces" / TRACES["tracelab-example"].file
    assert len(load_trace("tracelab-example")) == 19
    with pytest.raises(FileNotFoundError, match="set SMETRIC_DATA"):
        trace_path("azure-code")


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(FileNotFoundError, match="neither an existing file nor a known trace.*mooncake-conversation"):
        load_trace("mooncake-agentic")


# ------------------------------------------------------------------------------ writers and round trips
@st.composite
def chat_workloads(draw, block_size):
    """Sessions whose turns append to their parent's prompt (all but its last block, plus >= 2 new blocks).

    Every prompt starts with block 0 (a shared system prompt); all other ids are unique, so the
    chain is recoverable from the ids alone.
    """
    n = draw(st.integers(1, 25))
    next_id = 1
    arrival, input_len, output_len, session, turn, parent, blocks = [], [], [], [], [], [], []
    last_of_session: dict[int, int] = {}
    t = 0.0
    for row in range(n):
        t += draw(st.sampled_from([0.0, 0.001, 0.25, 3.0, 61.5]))
        follow = draw(st.booleans()) and last_of_session
        if follow:
            s = draw(st.sampled_from(sorted(last_of_session)))
            p = last_of_session[s]
            n_new = draw(st.integers(2, 5))
            ids = blocks[p][:-1] + list(range(next_id, next_id + n_new))
            parent.append(p)
            turn.append(turn[p] + 1)
        else:
            s = len(set(session))
            ids = [0] + list(range(next_id, next_id + draw(st.integers(3, 6))))
            parent.append(-1)
            turn.append(0)
        next_id = max(ids) + 1
        last_of_session[s] = row
        session.append(s)
        blocks.append(ids)
        arrival.append(t)
        input_len.append((len(ids) - 1) * block_size + draw(st.integers(1, block_size)))
        output_len.append(draw(st.integers(0, 2000)))
    par = np.array(parent)
    gap = np.where(par >= 0, np.array(arrival) - np.array(arrival)[np.maximum(par, 0)], 0.0)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blocks])])
    return Workload(arrival=arrival, input_len=input_len, output_len=output_len, session=session, turn=turn,
                    parent=parent, gap=gap, block_offsets=offsets, block_ids=np.concatenate(blocks),
                    block_size=block_size)


def _assert_same_sessions(loaded, original):
    """Same partition into sessions (ids may be renumbered)."""
    pairs = set(zip(loaded.session.tolist(), original.session.tolist()))
    assert len(pairs) == loaded.n_sessions == original.n_sessions


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(w=chat_workloads(block_size=16), keep=st.lists(st.booleans(), min_size=25, max_size=25), gz=st.booleans())
def test_bailian_round_trip_keeps_everything_the_format_carries(tmp_path, w, keep, gz):
    rows = np.flatnonzero(keep[:len(w)])
    if len(rows):
        w = w.select(rows)  # a window cut: some follow-ups lose their parent but keep their turn
    path = write_bailian(w, tmp_path / ("w.jsonl.gz" if gz else "w.jsonl"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceSkipWarning)
        back = load_trace(path)
    for name in ("arrival", "input_len", "output_len", "parent", "turn", "block_offsets", "block_ids"):
        np.testing.assert_array_equal(getattr(back, name), getattr(w, name), err_msg=name)
    assert back.block_size == 16
    assert np.all(back.session[w.parent >= 0] == back.session[w.parent[w.parent >= 0]])
    assert back.n_sessions == int(np.sum(w.parent < 0))
    np.testing.assert_allclose(back.gap, w.gap)  # the generator's gaps are arrival-to-arrival


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(w=chat_workloads(block_size=512), gz=st.booleans())
def test_mooncake_round_trip_recovers_appending_chains(tmp_path, w, gz):
    path = write_mooncake(w, tmp_path / ("w.jsonl.gz" if gz else "w.jsonl"))
    back = load_trace(path)
    np.testing.assert_allclose(back.arrival, w.arrival, rtol=0, atol=1e-9)  # written at ns precision
    for name in ("input_len", "output_len", "block_offsets", "block_ids", "parent", "turn"):
        np.testing.assert_array_equal(getattr(back, name), getattr(w, name), err_msg=name)
    _assert_same_sessions(back, w)
    np.testing.assert_allclose(back.gap, w.gap, atol=1e-9)


def test_writing_a_loaded_mooncake_trace_gives_back_the_original_rows(tmp_path):
    path = write_mooncake(load_trace("mooncake-synthetic"), tmp_path / "m.jsonl")
    with gzip.open(trace_path("mooncake-synthetic"), "rt") as fh:
        original = [json.loads(line) for line in fh]
    assert [json.loads(line) for line in path.read_text().splitlines()] == original


def test_mooncake_writer_coarsens_finer_blocks(tmp_path):
    w = load_trace("azure-code", block_size=128).head(20)
    back = load_trace(write_mooncake(w, tmp_path / "m.jsonl"))
    assert back.block_size == 512
    np.testing.assert_array_equal(back.block_ids, w.coarsen(512).block_ids)
    np.testing.assert_array_equal(back.input_len, w.input_len)


def test_writers_are_byte_reproducible_and_check_block_size(tmp_path):
    w = load_trace("mooncake-synthetic").head(200)
    a = write_trace(w, tmp_path / "a.jsonl.gz", "mooncake").read_bytes()
    b = write_trace(w, tmp_path / "b.jsonl.gz", "mooncake").read_bytes()
    assert a == b and gzip.decompress(a).count(b"\n") == 200
    with pytest.raises(WorkloadError, match="Bailian blocks are 16 tokens; this workload has block_size 512"):
        write_bailian(w, tmp_path / "c.jsonl")
    odd = load_trace("azure-code", block_size=24).head(5)
    with pytest.raises(WorkloadError, match="block_size 24 does not divide it"):
        write_mooncake(odd, tmp_path / "d.jsonl")
    with pytest.raises(ValueError, match="cannot write format 'azure'"):
        write_trace(w, tmp_path / "e.csv", "azure")



# ------------------------------------------------------------------------------ limits and odd input
def test_a_line_longer_than_the_limit_fails_without_being_read_whole(tmp_path):
    bomb = tmp_path / "bomb.jsonl.gz"  # 17 MiB of one line, a few KiB compressed
    with gzip.open(bomb, "wb") as fh:
        fh.write(b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]}\n')
        fh.write(b"0" * (17 * 2**20))
    with pytest.raises(TraceFormatError) as info:
        load_trace(bomb, format="mooncake")
    assert info.value.line == 2 and "longer than max_line_bytes = 16,777,216 bytes" in info.value.problem
    with pytest.warns(TraceSkipWarning, match="skipped 1 bad line"):
        assert len(read_trace(bomb, format="mooncake", on_error="skip").workload) == 1


def test_limits_can_be_raised_by_parameter_and_environment(monkeypatch):
    path = DATA / "mooncake_huge_input.jsonl"
    with pytest.raises(TraceFormatError, match="max_tokens"):
        load_trace(path)
    small = TraceLimits(max_line_bytes=60)
    with pytest.raises(TraceFormatError, match="longer than max_line_bytes = 60 bytes"):
        load_trace(DATA / "mooncake_unsorted.jsonl", limits=small)
    monkeypatch.setenv("SMETRIC_MAX_TOKENS", "2000000000000000")
    assert TraceLimits.from_env().max_tokens == 2 * 10**15
    monkeypatch.setenv("SMETRIC_MAX_LINE_BYTES", "sixty")
    with pytest.raises(ValueError, match="SMETRIC_MAX_LINE_BYTES must be an integer, got 'sixty'"):
        TraceLimits.from_env()
    with pytest.raises(ValueError, match="max_tokens must be an integer >= 1"):
        TraceLimits(max_tokens=0)


def test_hash_ids_at_the_int64_limit_load_and_pad_without_wrapping():
    w = load_trace(DATA / "mooncake_hash_int64_max.jsonl")  # at the int64 limit: no OverflowError
    assert w.n_blocks[0] == 4 and len(set(w.blocks(0).tolist())) == 4
    w = load_trace(DATA / "mooncake_hash_int64_wrap.jsonl")  # padding must not wrap onto the second prompt's id
    assert not set(w.blocks(0).tolist()) & set(w.blocks(1).tolist())
    assert characterize(w)["reuse_ratio"] == 0.0


def test_a_byte_order_mark_is_ignored():
    bom, plain = load_trace(DATA / "mooncake_bom.jsonl"), load_trace(DATA / "mooncake_unsorted.jsonl", on_error="skip")
    np.testing.assert_array_equal(bom.input_len, [1600, 700])
    np.testing.assert_array_equal(bom.block_ids, plain.block_ids[:len(bom.block_ids)])


def test_zero_output_length_is_kept_with_a_note():
    with pytest.warns(TraceNoteWarning, match="1 request.s. have output length 0 .first: row 0.; the simulator "
                                              "generates one token"):
        w = load_trace(DATA / "mooncake_zero_output.jsonl")
    assert list(w.output_len) == [0, 5]


def test_the_format_comes_from_the_last_extension_or_the_content():
    assert detect_format(DATA / "trace.csv.jsonl") == "mooncake"  # was forced to azure by '.csv'
    assert detect_format(DATA / "azure_unsorted.csv") == "azure"
    assert len(load_trace(DATA / "trace.csv.jsonl")) == 2


def test_token_bound_applies_to_every_format(tmp_path):
    azure = tmp_path / "a.csv"
    azure.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,1000000000000,4\n")
    with pytest.raises(TraceFormatError, match="line 2, field 'ContextTokens': 1,000,000,000,000 tokens exceeds"):
        load_trace(azure)
    tracelab = tmp_path / "t.jsonl"
    tracelab.write_text(json.dumps({"session_id": "s", "round_index": 0, "input_tokens_total": 10, "prefix_tokens": 0,
                                    "output_tokens": 10**12, "timing_events": [
                                        {"event_type": "user_message", "timestamp": "2025-01-01T00:00:00Z"}]}) + "\n")
    with pytest.raises(TraceFormatError, match="field 'output_tokens': 1,000,000,000,000 tokens exceeds"):
        load_trace(tracelab)
