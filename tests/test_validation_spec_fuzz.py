"""No bad validation spec ends in a traceback: malformed copies of shipped specs fail at load time with one
:class:`SpecError` line naming the file, the key and the reason, and ``smetric validate`` exits 2 on such a spec
before writing anything.

Spec loading only (no replay), so the cases run in milliseconds; one CLI run in a subprocess checks the real exit
code and stderr.
"""

from __future__ import annotations

import copy
import functools
import subprocess
import sys

import pytest
import yaml

from smetric.context import run_context
from smetric.realcluster.spec import SpecError, check_spec, load_spec
from smetric.workload.harness import KINDS

VALIDATION = run_context().data_dir / "validation"
# one spec per generator family the fuzzing walks: inference-perf shared-prefix on a rate ladder, KubeAI's chat
# benchmark on concurrency stages
BASES = ("llmd-73-capacity-qps10.yaml", "kubeai-8xl4-c800.yaml")
SPEC = "spec.yaml"


@functools.cache
def _parsed(name: str) -> dict:
    return yaml.safe_load((VALIDATION / name).read_text())


def _base(name: str = BASES[0]) -> dict:
    """A fresh copy of the shipped spec ``name``."""
    return copy.deepcopy(_parsed(name))


def _rejects(doc, key: str, reason: str) -> None:
    """The one-line SpecError of ``doc`` (checked as file ``spec.yaml``), which must name ``key`` and ``reason``."""
    with pytest.raises(SpecError) as err:
        check_spec(doc, SPEC)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{SPEC}: {key}: "), text
    assert reason in text, text


def test_the_bases_load_and_cover_two_generators():
    kinds = {check_spec(_base(name), name).workload["kind"] for name in BASES}
    assert kinds == {"shared-prefix", "multi-turn-conversations"} and kinds <= set(KINDS)


ROUTER = "random-scheduling"


@pytest.mark.parametrize(("edit", "key", "reason"), [
    # unknown keys at every level
    (lambda d: d.update(bogus=1), "bogus", "unknown top-level key"),
    (lambda d: d["cluster"].update(tensor_parallel=2), "cluster.tensor_parallel", "unknown key; known: model"),
    (lambda d: d["workload"].update(rate=3), "workload.rate", "unknown key; known: kind, params, seed"),
    (lambda d: d["workload"]["params"].update(bogus=1), "workload.params.bogus",
     "unknown parameter of generator shared-prefix; known: num_groups, num_prompts_per_group"),
    (lambda d: d["load"].update(sumary="stage-mean"), "load.sumary", "unknown key"),
    (lambda d: d["load"]["stages"][1].update(burst=2), "load", "unknown key 'burst'"),
    (lambda d: d["routers"][ROUTER].update(weights=[1]), f"routers.{ROUTER}.weights", "unknown key"),
    # missing and empty
    (lambda d: d["workload"]["params"].pop("num_groups"), "workload.params.num_groups", "is missing"),
    (lambda d: d.update(routers={}), "routers", "at least one router"),
    (lambda d: d["load"].update(stages=[]), "load.stages", "non-empty list"),
    (lambda d: d["load"].update(measured_stages=[]), "load.measured_stages", "non-empty list"),
    (lambda d: d.update(measured={}), "measured", "at least one router"),
    # impossible values
    (lambda d: d["load"]["stages"][0].update(rate=-3), "load.stages[0].rate", "must be > 0"),
    (lambda d: d["load"]["stages"][0].update(rate=float("inf")), "load", "stages[0].rate must be a positive"),
    (lambda d: d["cluster"].update(engine="tensorrt-llm"), "cluster.engine", "unknown engine"),
    (lambda d: d["cluster"].update(instances=0), "cluster.instances", "must be > 0"),
    (lambda d: d["workload"]["params"].update(num_groups=0), "workload.params.num_groups", "positive integer"),
    # wrong types
    (lambda d: d.update(name=5), "name", "non-empty string"),
    (lambda d: d["cluster"].update(tp="2"), "cluster.tp", "must be an integer"),
    (lambda d: d["cluster"].update(weight_dtype=["bf16"]), "cluster.weight_dtype", "must be one of"),
    (lambda d: d["workload"].update(params=[1]), "workload.params", "must be a mapping"),
    (lambda d: d["workload"]["params"].update(num_groups="many"), "workload.params.num_groups", "'many'"),
    (lambda d: d["workload"]["params"].update(enable_multi_turn_chat="no"),
     "workload.params.enable_multi_turn_chat", "true or false"),
    (lambda d: d["workload"].update(seed=1.5), "workload.seed", "must be an integer"),
    (lambda d: d["load"].update(stages="fast"), "load.stages", "non-empty list"),
    (lambda d: d["load"]["stages"][0].update(duration="50 s"), "load.stages[0].duration", "must be a number"),
    (lambda d: d["load"].update(drain="yes"), "load.drain", "true or false"),
    (lambda d: d["routers"][ROUTER].update(policy=["random"]), f"routers.{ROUTER}.policy", "policy name"),
    (lambda d: d["routers"][ROUTER].update(params=[1]), f"routers.{ROUTER}.params", "must be a mapping"),
    (lambda d: d["routers"]["precise-scheduling"].update(router_info=[1]), "routers.precise-scheduling.router_info",
     "must be a mapping"),
    (lambda d: d["measured"][ROUTER].update(output_tps="fast"), f"measured.{ROUTER}.output_tps", "a number"),
])
def test_malformed_spec_names_the_key(edit, key, reason):
    doc = _base()
    edit(doc)
    _rejects(doc, key, reason)


def test_a_concurrency_spec_checks_its_generator_too():
    doc = _base(BASES[1])
    doc["workload"]["params"]["mean_input_len"] = -832.0
    _rejects(doc, "workload.params.mean_input_len", "positive number")
    doc = _base(BASES[1])
    doc["workload"]["params"]["mean_output_len"] = True
    _rejects(doc, "workload.params.mean_output_len", "must be a number, got True")
    doc = _base(BASES[1])
    doc["load"]["stages"][0]["duration"] = 30
    _rejects(doc, "load", "unknown key 'duration' for arrival concurrency")


def _leaves(node, path=""):
    """(dotted path, container, key) of every scalar under ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for k, value in items:
        sub = f"{path}[{k}]" if isinstance(node, list) else (f"{path}.{k}" if path else str(k))
        if isinstance(value, (dict, list)):
            yield from _leaves(value, sub)
        else:
            yield sub, node, k


NUMERIC_LEAVES = [(name, p) for name in BASES for p, parent, k in _leaves(_base(name)) if not p.startswith("source")
                  and isinstance(parent[k], (int, float)) and not isinstance(parent[k], bool)]
ALL_LEAVES = [(name, p) for name in BASES for p, _, _ in _leaves(_base(name)) if not p.startswith("source")]


def _set(doc: dict, dotted: str, value) -> None:
    for name, parent, k in _leaves(doc):
        if name == dotted:
            parent[k] = value
            return
    raise KeyError(dotted)


def test_the_walk_covers_every_section():
    sections = {p.split(".")[0] for _, p in NUMERIC_LEAVES}
    assert sections == {"cluster", "workload", "load", "routers", "measured"}
    assert len(NUMERIC_LEAVES) >= 60


@pytest.mark.parametrize(("base", "leaf"), NUMERIC_LEAVES)
def test_every_number_rejects_text(base, leaf):
    doc = _base(base)
    _set(doc, leaf, "x")
    with pytest.raises(SpecError) as err:
        check_spec(doc, SPEC)
    text = str(err.value)
    name = leaf.rsplit(".", 1)[-1].split("[")[0]
    assert "\n" not in text and text.startswith(f"{SPEC}: ") and name in text, (leaf, text)


@pytest.mark.parametrize("value", [None, [1], {"a": 1}, True, -1])
def test_any_wrong_value_is_accepted_or_a_spec_error(value):
    """Every scalar of both bases replaced by a value of another type: the spec loads or fails with one SpecError
    line -- never another exception."""
    for base, leaf in ALL_LEAVES:
        doc = _base(base)
        _set(doc, leaf, copy.deepcopy(value))
        try:
            check_spec(doc, SPEC)
        except SpecError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(f"{SPEC}: "), (leaf, str(exc))


def test_cli_prints_one_line_and_writes_nothing(tmp_path):
    doc = _base()
    doc["workload"]["params"]["bogus"] = 1
    path = tmp_path / SPEC
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-c", "import sys; from smetric.cli import main; sys.exit(main())",
                          "validate", str(path), "--quick", "--out", str(out)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"smetric validate: {path}: workload.params.bogus: unknown parameter of generator "
                                 "shared-prefix; known: num_groups, ")
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stdout == "" and not out.exists()
    with pytest.raises(SpecError, match="workload.params.bogus"):  # the same line from the file loader
        load_spec(path)
