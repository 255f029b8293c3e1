"""Public traces too large to ship (Qwen-Bailian coder/thinking, Mooncake tool&agent): once downloaded into
``$SMETRIC_DATA/traces`` (or given as a path) they load by name. Tested on small files written in their formats."""

import numpy as np
import pytest

from smetric.workload import (
    TRACES,
    load_trace,
    trace_path,
    write_bailian,
    write_mooncake,
)
from smetric.workload.characterize import characterize
from smetric.workload.synthetic import synth_agent_workload

DOWNLOADED = ("qwen-coder", "qwen-thinking", "mooncake-toolagent")


def test_downloadable_entries_name_their_source_and_format():
    for name in DOWNLOADED:
        entry = TRACES[name]
        assert entry.download.startswith("https://") and entry.download.endswith(entry.file)
        assert entry.format == ("mooncake" if name.startswith("mooncake") else "bailian")


@pytest.mark.parametrize("name", DOWNLOADED)
def test_missing_download_says_where_to_get_it(tmp_path, monkeypatch, name):
    monkeypatch.setenv("SMETRIC_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"download it from {TRACES[name].download}"):
        trace_path(name)


def test_bailian_coder_file_loads_by_name_through_smetric_data(tmp_path, monkeypatch):
    sessions = synth_agent_workload(200, seed=2, preset="bailian-coder")
    (tmp_path / "traces").mkdir()
    write_bailian(sessions, tmp_path / "traces" / TRACES["qwen-coder"].file)
    monkeypatch.setenv("SMETRIC_DATA", str(tmp_path))
    by_name = load_trace("qwen-coder")
    by_path = load_trace(tmp_path / "traces" / "qwen_coder_blksz_16.jsonl")
    assert by_name.name == "qwen-coder" and by_name.block_size == 16 and len(by_name) == len(sessions)
    np.testing.assert_array_equal(by_name.parent, sessions.parent)
    np.testing.assert_array_equal(by_name.block_ids, by_path.block_ids)
    s, expected = characterize(by_name, lru_blocks=()), characterize(sessions, lru_blocks=())
    for key in ("reuse_ratio", "follow_up_share", "input_mean", "output_p50", "turns_mean"):
        assert s[key] == pytest.approx(expected[key]), key


def test_thinking_type_and_mooncake_toolagent_files_load(tmp_path, monkeypatch):
    (tmp_path / "traces").mkdir()
    chat = synth_agent_workload(100, seed=1, preset="chat")
    write_bailian(chat, tmp_path / "traces" / TRACES["qwen-thinking"].file, request_type="thinking")
    tool = synth_agent_workload(300, seed=1, preset="toolagent")
    write_mooncake(tool, tmp_path / "traces" / TRACES["mooncake-toolagent"].file)
    monkeypatch.setenv("SMETRIC_DATA", str(tmp_path))
    assert len(load_trace("qwen-thinking")) == len(chat)
    loaded = load_trace("mooncake-toolagent")
    assert loaded.block_size == 512 and len(loaded) == len(tool)
    np.testing.assert_array_equal(loaded.input_len, tool.input_len)
    assert characterize(loaded, lru_blocks=())["reuse_ratio"] == pytest.approx(
        characterize(tool, lru_blocks=())["reuse_ratio"], abs=1e-12)
