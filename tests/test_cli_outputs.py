"""Outputs are checked before the work, user errors exit 1/2 without a traceback, and each subcommand
imports only what it needs."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import smetric
from smetric.cli import main

DATA = Path(__file__).parent / "data"
SIM = ["simulate", "--trace", str(DATA / "trace.csv.jsonl"), "--policy", "smetric", "--model", "llama-3-8b",
       "--gpu", "a100"]


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if the simulation starts: the output must be rejected first."""
    def refuse(*args, **kwargs):
        raise AssertionError("the simulation ran before the output was checked")
    monkeypatch.setattr(importlib.import_module("smetric.cluster.simulate"), "simulate", refuse)


def test_simulate_out_existing_file_fails_before_the_run(tmp_path, capsys, no_simulation):
    (tmp_path / "results").write_text("not a directory")
    assert main(SIM + ["--out", str(tmp_path / "results")]) == 2
    assert "is an existing file; it needs a directory" in capsys.readouterr().err
    assert main(SIM + ["--out", str(tmp_path / "results" / "below")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_simulate_out_unwritable_fails_before_the_run(tmp_path, capsys, no_simulation):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert main(SIM + ["--out", str(locked / "run")]) == 2
    assert "is not writable" in capsys.readouterr().err


def test_simulate_out_directory_is_written(tmp_path, capsys):
    assert main(SIM + ["--out", str(tmp_path / "new" / "run")]) == 0
    assert (tmp_path / "new" / "run" / "requests.csv").is_file()


def test_synth_out_directory_fails_before_generating(tmp_path, capsys):
    assert main(["synth", "--out", str(tmp_path), "--format", "mooncake", "--sessions", "5"]) == 2
    assert f"--out {tmp_path} is a directory; it needs a file name" in capsys.readouterr().err


def test_block_size_that_is_not_a_multiple_is_an_error_not_a_substitution(capsys):
    assert main(SIM + ["--block-size", "7"]) == 2
    assert "--block-size 7 is not a multiple of the trace's 512-token blocks" in capsys.readouterr().err
    assert main(["characterize", str(DATA / "trace.csv.jsonl"), "--block-size", "7"]) == 2
    assert "block_size must be a multiple of mooncake's native 512, got 7" in capsys.readouterr().err


def test_input_bounds_can_be_set_on_the_command_line(capsys, monkeypatch):
    path = str(DATA / "trace.csv.jsonl")
    assert main(["characterize", path, "--max-line-bytes", "60"]) == 1
    assert "longer than max_line_bytes = 60 bytes" in capsys.readouterr().err
    assert main(["characterize", path, "--max-tokens", "1000"]) == 1
    assert "field 'input_length': 1,600 tokens exceeds max_tokens = 1,000" in capsys.readouterr().err
    monkeypatch.setenv("SMETRIC_MAX_TOKENS", "1000")
    assert main(["characterize", path]) == 1
    assert main(["characterize", path, "--max-tokens", "2000", "--json"]) == 0  # the flag wins over the variable
    assert json.loads(capsys.readouterr().out)["n_requests"] == 2


def test_simulate_help_points_to_a_real_listing(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = capsys.readouterr().out
    assert "perf --list" not in text and "`smetric perf --help`" in text
    with pytest.raises(SystemExit):
        main(["perf", "--help"])
    assert "llama-2-70b" in capsys.readouterr().out


def test_each_subcommand_imports_only_what_it_needs(tmp_path):
    probe = ("import sys; from smetric.cli import main; main(sys.argv[1:]); "
             "print(' '.join(sorted(m for m in sys.modules if m.startswith(('smetric', 'scipy', 'matplotlib')))), "
             "file=sys.stderr)")
    env = {**os.environ, "PYTHONPATH": str(Path(smetric.__file__).parents[1])}

    def modules(*argv):
        out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, check=True)
        return set(out.stderr.split())

    simulate = modules(*SIM, "--json")
    assert "smetric.cluster.engine" in simulate
    assert not simulate & {"smetric.workload.synthetic", "smetric.experiments", "smetric.policies.bounds",
                           "scipy.special", "matplotlib"}
    policies = modules("policies", "smetric")
    assert not policies & {"smetric.cluster", "smetric.workload", "smetric.experiments", "scipy.special"}
