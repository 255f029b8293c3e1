"""Keep numba's on-disk cache of functions that inline other modules' ``@njit`` code fresh.

numba's ``cache=True`` stamps a cached function with the modification time of *its own* source
file only. ``dispatch.route`` inlines every policy module, so after a policy is edited the cached
``route`` would silently keep the old code. :func:`refresh_if_changed` stores a digest of the
sources a dispatcher depends on next to its cache and flushes the cache when the digest changes.
Engines whose cached loops call ``route`` should do the same with :func:`policy_sources`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def policy_sources() -> list[Path]:
    """Every Python module of :mod:`smetric.policies` (what ``route`` is compiled from)."""
    return sorted(_PACKAGE_DIR.glob("*.py"))


def digest(paths: list[Path]) -> str:
    """SHA-1 over the contents of ``paths`` (in the given order)."""
    h = hashlib.sha1()
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def refresh_if_changed(dispatcher, paths: list[Path]) -> bool:
    """Flush ``dispatcher``'s on-disk cache if ``paths`` changed since it was last checked; True if flushed."""
    cache = getattr(dispatcher, "_cache", None)
    cache_path = getattr(cache, "cache_path", None)
    if cache_path is None:  # caching disabled (e.g. NUMBA_DISABLE_JIT): nothing can be stale
        return False
    stamp = Path(cache_path) / f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__name__}.sources"
    current = digest(paths)
    try:
        if stamp.read_text() == current:
            return False
    except OSError:
        pass
    cache.flush()
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current)
    except OSError:
        pass  # read-only cache location: recompiling every time is still correct
    return True
