"""KubeAI ``PrefixHash``: consistent hashing with bounded loads (CHWBL) over the prompt's first characters.

kubeai-project/kubeai ``internal/loadbalancer/balance_chwbl.go`` and ``group.go`` at ``a2349bfe`` (2025-02-12, the
commit of the 8 x L4 benchmark):

* the key is the first ``prefixCharLength`` = 100 characters of the completion prompt (``apiutils/request.go``),
  hashed with xxhash; each endpoint owns ``replication`` points on a ring of hashes of ``name + replica``;
* from the key's first point clockwise, the first endpoint whose in-flight load passes ``loadOK`` is taken:
  ``load + 1 <= (total + 1) / n * meanLoadFactor`` at that commit (``load_check=load_plus_one``; PR #528,
  ``ab1d8955``, 2025-05-22, dropped the ``+ 1`` on the endpoint's load: ``load_check=load``); every endpoint
  passes when nothing is in flight; when none passes, the key's first endpoint is taken;
* load = requests the proxy has in flight per endpoint (its own counters: ``V_IN_FLIGHT``, exact).

``replication`` defaults to 100, the value ``newEndpointGroup`` hard-codes at ``a2349bfe`` (the CRD field's
default of 20 is only read from ``379018b6``, 2025-02-26, on). The ring is deterministic: point ``v`` of instance
``i`` at ``hash52(i * replication + v)`` (:mod:`smetric.policies.ring`), not xxhash of pod names, so which instance
owns a key differs from a real cluster's while the distribution and the bound are the same.

Key model: prompts are chained block ids, not text. ``prefix_chars / chars_per_token`` tokens (100 / 4 = 25;
4 characters per token is an assumption, the usual English BPE ratio) are covered by the first
``ceil(25 / block_size)`` blocks; the key is the chained id of the last of them (16-token blocks: the second
block, so two prompts share a key when their first 32 tokens match), or of the prompt's last block when the
prompt is shorter. A prompt without blocks (zero tokens) gets a key of its own.
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from ..ranges import Range, at_least
from .base import R_INDEX, V_IN_FLIGHT
from .hashing import hash52
from .ring import build_ring, first_point, point_owner, ring_size
from .spec import PolicySpec

PID = 17
MAX_REPLICATION = 256
_RING_SALT = 0xC4B1
_KEY_SALT = -17
_EMPTY_SALT = -18

SPEC = PolicySpec(
    "chwbl", PID,
    "consistent hash of the prompt's first 100 characters; the first endpoint clockwise under the load bound",
    "kubeai-project/kubeai internal/loadbalancer/balance_chwbl.go, group.go @ a2349bfe (PrefixHash)",
    "in-flight requests per endpoint (the proxy's own counters, exact); no cache or engine signal",
    params={"prefix_chars": 100.0, "chars_per_token": 4.0, "replication": 100.0, "mean_load_factor": 1.25,
            "load_check": "load_plus_one"},
    choices={"load_check": ("load_plus_one", "load")},
    ranges={"prefix_chars": Range(1.0), "chars_per_token": Range(0.0, lo_open=True),
            "replication": Range(1.0, MAX_REPLICATION, integer=True), "mean_load_factor": at_least(1)},
    context=("block_size",),
    state_size=lambda ctx: 1 + ring_size(ctx.n_instances, MAX_REPLICATION))

_CHARS, _CPT, _REPLICATION, _FACTOR, _CHECK, _B = SPEC.slots(
    "prefix_chars", "chars_per_token", "replication", "mean_load_factor", "load_check", "block_size")
_PLUS_ONE = SPEC.code("load_check", "load_plus_one")


@njit(cache=True)
def prefix_key(blocks, req, params):
    """Hash of the prompt's first ``prefix_chars`` characters, as the chained id of the block that covers them."""
    nb = blocks.shape[0]
    if nb == 0:
        return hash52(int(req[R_INDEX]), _EMPTY_SALT)
    tokens = params[_CHARS] / params[_CPT]
    k = max(int(-(-tokens // params[_B])) - 1, 0)
    return hash52(blocks[min(k, nb - 1)], _KEY_SALT)


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The first endpoint clockwise of the key whose load passes the bound; the key's owner if none does."""
    n = view.shape[0]
    replication = int(params[_REPLICATION])
    m = replication * n
    if state[0] == 0.0:
        build_ring(state, 1, n, replication, _RING_SALT)
        state[0] = 1.0
    start = first_point(state, 1, m, prefix_key(blocks, req, params))
    total = 0.0
    for i in range(n):
        total += view[i, V_IN_FLIGHT]
    if total == 0.0:
        return point_owner(state, 1, m, start)
    threshold = (total + 1.0) / n * params[_FACTOR]
    own = 1.0 if params[_CHECK] == _PLUS_ONE else 0.0
    k = start
    for _ in range(m):
        i = point_owner(state, 1, m, k)
        if view[i, V_IN_FLIGHT] + own <= threshold:
            return i
        k = k + 1 if k + 1 < m else 0
    return point_owner(state, 1, m, start)


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
