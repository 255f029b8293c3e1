"""Keep numba's on-disk cache of functions that inline other modules' ``@njit`` code fresh.

numba's ``cache=True`` stamps a cached function with the modification time of *its own* source
file only (numba docs, "Cache limitations": edits to functions in other files are not noticed). A
cached kernel that calls ``@njit`` code of other modules, or freezes their module-level constants,
would silently keep running the old code after those modules are edited. :func:`refresh_module`
stores a digest of the sources a module's compiled functions depend on next to their cache and
flushes those caches when the digest changes; :func:`module_sources` enumerates those sources: the
module's own file and, transitively, every module of the same top-level package that it imports
(at module level or inside functions). A module with cached kernels ends with
``refresh_module(sys.modules[__name__], module_sources(sys.modules[__name__]))``.
"""

from __future__ import annotations

import hashlib
import re
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

# ``from X import NAMES`` (NAMES possibly parenthesised over several lines) or ``import X``, anywhere in a file
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)|import[ \t]+([\w.]+))",
                     re.MULTILINE)


@lru_cache(maxsize=None)
def _module_file(root: Path, name: str) -> Path | None:
    """The source file of module ``name`` (dotted, starting with the package) under ``root``, if any (memoised: every
    name imported from a module is tried as a submodule too, by each module's guard at import)."""
    base = root.joinpath(*name.split(".")[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_sources(module: ModuleType) -> list[Path]:
    """``module``'s file and every file of its top-level package it imports, transitively (sorted).

    Read from the import statements of the sources (a textual scan, not an import), so constants imported
    by name (``from .x import N_COLS``) count as well as functions and modules.
    """
    package = module.__name__.split(".")[0]
    root = Path(sys.modules[package].__file__).resolve().parent
    found: dict[str, Path] = {}
    todo = [module.__name__]
    while todo:
        name = todo.pop()
        path = None if name in found else _module_file(root, name)
        if path is None:
            continue
        found[name] = path
        parent = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for source, names, plain in _imports(path, path.stat().st_mtime_ns):
            if plain:
                if plain.split(".")[0] == package:
                    todo.append(plain)
                continue
            stripped = source.lstrip(".")
            if len(stripped) < len(source):  # relative: one dot = the module's own package
                up = parent.split(".")[: len(parent.split(".")) - (len(source) - len(stripped)) + 1]
                source = ".".join(up + ([stripped] if stripped else []))
            if source.split(".")[0] != package:
                continue
            todo.append(source)
            todo.extend(f"{source}.{n.split(' as ')[0].strip()}" for n in re.split(r"[,()\n]+", names)
                        if n.split(" as ")[0].strip().isidentifier())
    return sorted(found.values())


@lru_cache(maxsize=None)
def _imports(path: Path, stamp: int) -> tuple:
    """The import statements of ``path`` as ``_IMPORT`` matches (memoised per file version)."""
    return tuple(_IMPORT.findall(path.read_text(encoding="utf-8")))


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


def refresh_module(module: ModuleType, paths: list[Path] | None = None) -> bool:
    """Flush the on-disk cache of every cached ``@njit`` function of ``module`` if ``paths`` (default:
    :func:`module_sources`) changed since the last check; True if it flushed."""
    dispatchers = _cached_dispatchers(module)
    if not dispatchers:  # caching disabled (e.g. NUMBA_DISABLE_JIT): nothing can be stale
        return False
    paths = module_sources(module) if paths is None else paths
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
