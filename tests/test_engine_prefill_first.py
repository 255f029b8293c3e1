"""Prefill-first iterations (``prefill_first=True``: SGLang; with ``chunked_prefill=False``: vLLM V0 without
chunked prefill, whole prompts).

Both engines agree on random cases (either KV allocation, tight and ample HBM, serving stacks with and without
the first-token lag); hand-built cases check that an iteration which schedules a prompt runs no decodes, that a
whole prompt which does not fit the remaining budget waits for the next iteration instead of being chunked, that
a chunked prompt stalls the decodes for each of its chunks, and that a prompt longer than the whole budget runs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from engine_support import small_cluster, unique_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import assert_engines_agree
from test_engine_preemption import cases as tight_cases

from smetric.cluster.config import ClusterConfig
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference
from smetric.cluster.result_raw import REASON_COMPLETED
from smetric.hardware.kernel import iteration_time_nb, prefill_attn_work


@st.composite
def cases(draw):
    """The preemption tests' tight-HBM cases with prefill-first iterations, whole or chunked prompts, either KV
    allocation and serving stacks with and without the first-token lag."""
    wl, cluster, policy, load, seed = draw(tight_cases())
    cluster = dataclasses.replace(
        cluster, kv_allocation=draw(st.sampled_from(["reserve", "incremental"])), prefill_first=True,
        chunked_prefill=draw(st.booleans()), engine=draw(st.sampled_from(["legacy", "vllm-v0", "sglang-overlap"])))
    return wl, cluster, policy, load, seed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_engine_matches_reference_with_prefill_first_iterations(case):
    a, b = assert_engines_agree(case)
    assert np.array_equal(a.preemptions, b.preemptions)


def test_a_waiting_prompt_is_retried_after_the_decodes_grow():
    """Prefill-first with incremental KV: the decodes take their blocks after the admission pass, evicting a cached
    block of the waiting head's prefix to DRAM; with part of its prefix to load, the head now fits, and both
    engines admit it at the next iteration (a case the random search found: request 8 at 7.945 s)."""
    from pathlib import Path

    from smetric.workload import Workload

    raw = np.load(Path(__file__).parent / "data" / "prefill_first_regrown.npz")
    wl = Workload(**{k: raw[k] for k in raw.files}, block_size=16, name="regrown")
    cluster = small_cluster(kv_tokens=5000, block_size=64, max_num_seqs=8, max_batched_tokens=256, dram_gb=0.03,
                            kv_allocation="incremental", prefill_first=True, chunked_prefill=False)
    a, b = assert_engines_agree((wl, cluster, "round-robin", 2.0, 2))
    assert a.preemptions[8] == 1 and a.admit[8] == pytest.approx(7.9454, abs=1e-4)


def _run(engine, arrival, input_len, output_len, whole: bool, budget: int = 512, first: bool = True):
    wl = unique_workload(arrival, input_len, output_len)
    cluster = small_cluster(block_size=16, max_batched_tokens=budget, max_num_seqs=8, chunked_prefill=not whole,
                            prefill_first=first, kv_allocation="incremental")
    inp = prepare(wl, cluster, "round-robin", n_samples=50)
    return inp, engine(inp)


@pytest.mark.parametrize("engine", [run_engine, run_reference])
def test_a_prompt_stalls_the_running_decodes(engine):
    """A decodes alone; B's prompt arrives mid-way: its iteration runs B's prefill only, so A finishes exactly one
    prefill iteration later than with chunked prefill's mixed iteration (A's tokens are the same)."""
    arrival, lens, outs = [0.0, 0.05], [100, 300], [40, 5]
    inp, pf = _run(engine, arrival, lens, outs, whole=True)
    _, mixed = _run(engine, arrival, lens, outs, whole=False, first=False)
    assert (pf.reason == REASON_COMPLETED).all()
    coef = inp.coef
    b_alone = iteration_time_nb(coef, 300.0, prefill_attn_work(300.0, 0.0), 0.0, 0)
    # B's first token comes from a prefill-only iteration that starts at an iteration end of A's decodes
    assert pf.first_token[1] > arrival[1]
    start = pf.first_token[1] - b_alone
    assert start >= arrival[1] - 1e-12
    # A generated the same tokens but waited one prefill iteration: it ends later than in the mixed run
    assert pf.finish[0] > mixed.finish[0]
    assert pf.inst_iterations[0] == mixed.inst_iterations[0] + 1  # B's decodes overlap A's in both runs


@pytest.mark.parametrize("engine", [run_engine, run_reference])
def test_prompts_run_whole_and_wait_for_the_budget(engine):
    """Two 300-token prompts arrive together with a 512-token budget: with chunked prefill the second is split
    (212 tokens now, 88 next); without it the second waits and runs whole in the next iteration."""
    inp, pf = _run(engine, [0.0, 0.0], 300, 3, whole=True)
    coef = inp.coef
    one = iteration_time_nb(coef, 300.0, prefill_attn_work(300.0, 0.0), 0.0, 0)
    assert pf.first_token[0] == pytest.approx(one, rel=1e-9)
    assert pf.first_token[1] == pytest.approx(2 * one, rel=1e-9)  # A's decode waits for B's prompt
    assert pf.prefill_tokens.tolist() == [300, 300]


@pytest.mark.parametrize("engine", [run_engine, run_reference])
def test_a_prompt_longer_than_the_budget_runs_alone(engine):
    """A 1,500-token prompt with a 512-token budget (vLLM V0 would reject it) runs alone, in three chunks."""
    inp, pf = _run(engine, [0.0], 1500, 2, whole=True)
    assert (pf.reason == REASON_COMPLETED).all()
    assert pf.inst_iterations[0] == 4  # 512 + 512 + 476, then one decode


@pytest.mark.parametrize("engine", [run_engine, run_reference])
def test_a_chunked_prompt_stalls_the_decodes_for_each_chunk(engine):
    """SGLang's rule: A decodes; B's 1,200-token prompt arrives and runs in three chunks of the 512-token budget
    (512, 512, 176), each a prefill-only iteration; A's decodes resume after the last."""
    arrival, lens, outs = [0.0, 0.05], [100, 1200], [60, 3]
    inp, pf = _run(engine, arrival, lens, outs, whole=False)
    _, mixed = _run(engine, arrival, lens, outs, whole=False, first=False)
    coef = inp.coef
    chunks = [(512, 0), (512, 512), (176, 1024)]
    b_prefill = sum(iteration_time_nb(coef, float(c), prefill_attn_work(float(c), float(p)), 0.0, 0)
                    for c, p in chunks)
    starts = pf.first_token[1] - b_prefill
    assert starts >= arrival[1] - 1e-12  # B's chunks ran back to back, no decode iteration between them
    assert pf.inst_iterations[0] == mixed.inst_iterations[0] + 3  # mixed: B's chunks ride in A's decode iterations
    assert pf.first_token[1] < mixed.first_token[1]  # B's chunks take the whole budget, with no decode in them
    assert pf.finish[0] > mixed.finish[0]


def test_rejects_what_is_not_implemented():
    with pytest.raises(ValueError, match="prefill_first=True"):
        ClusterConfig("example", "example", n_instances=2, mode="disaggregated", n_prefill=1, n_decode=1,
                      prefill_first=True)
    with pytest.raises(ValueError, match="needs prefill_first=True"):
        ClusterConfig("example", "example", chunked_prefill=False)
    with pytest.raises(ValueError, match="chunked_prefill must be True or False"):
        ClusterConfig("example", "example", chunked_prefill="no")
