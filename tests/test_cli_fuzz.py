"""No user error ends in a traceback: the CLI over the malformed-input corpus and over out-of-range values
of every policy and queue parameter exits 1 or 2 with a message naming the file/line/field or the parameter.

The CLI's ``main`` runs in-process (no process per case), so an uncaught exception fails the test.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from smetric.cli import main
from smetric.cluster.queueing import DISCIPLINES, QUEUE_PARAMS
from smetric.policies import available
from smetric.ranges import Range

DATA = Path(__file__).parent / "data"
# corpus files that load (odd but valid input); every other trace file in tests/data is malformed
VALID = {"bailian_orphan.jsonl", "mooncake_bom.jsonl", "mooncake_hash_int64_max.jsonl",
         "mooncake_hash_int64_wrap.jsonl", "mooncake_zero_output.jsonl", "trace.csv.jsonl"}
NOT_TRACES = {"fcfs_before_queue.csv"}  # an engine fixture
MALFORMED = sorted(p.name for p in DATA.iterdir() if p.name not in VALID | NOT_TRACES)
CLUSTER = ["--model", "llama-3-8b", "--gpu", "a100"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "tiny.jsonl"
    rows = [(0, 2000, 20, [0, 1, 2, 3]), (500, 1800, 10, [0, 5, 6, 7])]
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h}) + "\n"
                            for t, n, o, h in rows))
    return str(path)


def _fails_cleanly(capsys, argv: list[str], codes=(1, 2)) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code in codes, (argv, code, err)
    assert "Traceback" not in err and err.startswith(f"smetric {argv[0]}: "), err
    return err


def test_the_corpus_has_malformed_files():
    assert len(MALFORMED) >= 30 and VALID <= {p.name for p in DATA.iterdir()}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_trace_names_file_and_line(name, capsys, trace):
    path = str(DATA / name)
    for argv in (["characterize", path], ["simulate", "--trace", path, "--policy", "smetric", *CLUSTER]):
        err = _fails_cleanly(capsys, argv, codes=(1,))
        assert re.search(re.escape(path) + r", line \d+(, field '\w+')?: ", err), err


@pytest.mark.parametrize("name", sorted(VALID))
def test_odd_but_valid_traces_characterize(name, capsys):
    assert main(["characterize", str(DATA / name), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_requests"] >= 1


def _outside(allowed: Range) -> list[str]:
    """Values just outside ``allowed`` (and ones no range allows)."""
    values = ["nan", "inf", "-inf", "abc", ""]
    if math.isfinite(allowed.lo):
        values.append(repr(allowed.lo if allowed.lo_open else allowed.lo - 1))
    if math.isfinite(allowed.hi):
        values.append(repr(allowed.hi if allowed.hi_open else allowed.hi + 1))
    if allowed.integer:
        values.append(repr(max(allowed.lo, 0) + 0.5))
    return values


POLICY_CASES = [(spec.name, key, value) for spec in available() for key in spec.params
                for value in (["no-such-choice"] if key in spec.choices else _outside(spec.ranges[key]))]


def test_every_policy_parameter_is_fuzzed():
    assert {(s.name, k) for s in available() for k in s.params} == {(p, k) for p, k, _ in POLICY_CASES}


@pytest.mark.parametrize("policy, key, value", POLICY_CASES)
def test_out_of_range_policy_parameter_is_named(policy, key, value, capsys, trace):
    err = _fails_cleanly(capsys, ["simulate", "--trace", trace, "--policy", policy, "--param", f"{key}={value}",
                                  *CLUSTER], codes=(2,))
    assert f"{policy}.{key}" in err


QUEUE_CASES = [(d, key, value) for key, (allowed, users) in QUEUE_PARAMS.items() for d in DISCIPLINES
               for value in (_outside(allowed) if d in users else ["1"])]


@pytest.mark.parametrize("discipline, key, value", QUEUE_CASES)
def test_out_of_range_or_unused_queue_parameter_is_named(discipline, key, value, capsys, trace):
    err = _fails_cleanly(capsys, ["simulate", "--trace", trace, "--policy", "round-robin", "--queue", discipline,
                                  "--queue-param", f"{key}={value}", *CLUSTER], codes=(2,))
    assert f"queue parameter {key}" in err


@pytest.mark.parametrize("flag, value", [("--max-line-bytes", "0"), ("--max-tokens", "-3"), ("--instances", "0"),
                                         ("--load", "-1"), ("--block-size", "7"), ("--seed", "-1"),
                                         ("--global-store", "lots"), ("--dram-gb", "-2")])
def test_out_of_range_simulate_options_fail_cleanly(flag, value, capsys, trace):
    err = _fails_cleanly(capsys, ["simulate", "--trace", trace, "--policy", "smetric", flag, value, *CLUSTER],
                         codes=(2,))
    assert len(err.strip()) > len("smetric simulate: ")
