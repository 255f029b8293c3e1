"""Keep numba's on-disk cache of functions that inline other modules' ``@njit`` code fresh.

numba's ``cache=True`` stamps a cached function with the modification time of *its own* source
file only. ``dispatch.route`` inlines every policy module, so after a policy is edited the cached
``route`` -- and every cached engine function that calls it -- would silently keep the old code.
:func:`refresh_module` stores a digest of the sources a module's compiled functions depend on
next to their cache and flushes those caches when the digest changes. ``dispatch`` calls it for
itself; an engine module whose cached loop calls ``route`` should end with
``refresh_module(sys.modules[__name__], policy_sources())``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

_PACKAGE_DIR = Path(__file__).resolve().parent


def policy_sources() -> list[Path]:
    """Every Python module of :mod:`smetric.policies` (what ``route`` is compiled from)."""
    return sorted(_PACKAGE_DIR.glob("*.py"))


def digest(paths: list[Path]) -> str:
    """SHA-1 over the names and contents of ``paths`` (in the given order)."""
    h = hashlib.sha1()
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cached_dispatchers(module: ModuleType) -> list:
    """The ``@njit(cache=True)`` functions defined in ``module``."""
    return [obj for obj in vars(module).values()
            if getattr(obj, "_cache", None) is not None and getattr(obj, "py_func", None) is not None
            and obj.py_func.__module__ == module.__name__ and getattr(obj._cache, "cache_path", None)]


def refresh_module(module: ModuleType, paths: list[Path]) -> bool:
    """Flush the on-disk cache of every cached ``@njit`` function of ``module`` if ``paths`` changed since
    the last check; True if it flushed."""
    dispatchers = _cached_dispatchers(module)
    if not dispatchers:  # caching disabled (e.g. NUMBA_DISABLE_JIT): nothing can be stale
        return False
    stamp = Path(dispatchers[0]._cache.cache_path) / f"{module.__name__}.sources"
    current = digest(paths)
    try:
        if stamp.read_text() == current:
            return False
    except OSError:
        pass
    for dispatcher in dispatchers:
        dispatcher._cache.flush()
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current)
    except OSError:
        pass  # read-only cache location: recompiling every time is still correct
    return True
