"""The numba cluster engine: iteration-level simulation of N instances with tiered KV caches.

The rules it implements, which the pure-Python :mod:`smetric.cluster.reference` implements too, are the
"Semantics" section of the engine page of the documentation (``docs/engine.md``). The modules, from the bottom up:

* :mod:`.layout`: states, column indices, and the ``EngineData`` (``d``) and ``EngineState`` (``st``) tuples;
* :mod:`.structures`: the event tree, heaps, intrusive lists, a fast-forwarded run's iteration ends;
* :mod:`.transfers`: the KV connector's transfer pool;
* :mod:`.tiers`: HBM, DRAM and the global store, prefix hits;
* :mod:`.routing_index`: an arrival decided from block holders and min-trees instead of the full view;
* :mod:`.requests`: queued-prefill aggregates, samples, releases, abandonment;
* :mod:`.admission`: admission, incremental allocation and preemption;
* :mod:`.batch`: batch formation;
* :mod:`.iteration`: an iteration's end;
* :mod:`.router_view`: the router's view and its information model;
* :mod:`.loop`: arrivals and the event loop;
* :mod:`.driver`: state construction, :func:`run_engine`, compilation.

Every kernel is compiled with ``_nrt=False`` except :mod:`.loop`'s ``_run`` and ``_arrive``: the engine allocates
nothing (all state is preallocated in Python), and without the runtime's reference counting the row views and
slices taken in the hot loops cost nothing (with it, atomic increfs/decrefs took most of the run time). numba
compiles the policies, the performance-model kernel, the cache structures and the estimators into the kernels and
freezes other modules' constants, but stamps a cached kernel with its own file only; so every kernel module ends
with :func:`smetric.numba_cache.refresh_module`, which flushes its cache when any module it imports (transitively)
changed.
"""

from .driver import compile_engine, ensure_compiled, run_engine, state_bytes

__all__ = ["run_engine", "compile_engine", "ensure_compiled", "state_bytes"]
