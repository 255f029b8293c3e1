"""Keep numba's optional extras out of a command-line process that never uses them (start-up time).

On import and at its first compile or cache load, numba imports whatever optional packages it finds:
``coverage`` (to report the lines of jitted code to a running coverage measurement), ``cffi`` (typing of
cffi functions) and ``scipy.linalg`` (the BLAS/LAPACK behind ``np.dot`` and ``np.linalg`` in jitted code).
The engine uses none of them, and on the ``smetric simulate`` path they cost a third of the interpreter's
start-up (SciPy's linear algebra alone ~0.1 s). :func:`hidden` makes them look absent to numba for the span
of one command; a package that is already imported is left alone (under ``coverage run`` or pytest-cov,
``coverage`` is, so coverage reporting is unchanged). It is meant for a process that the command owns
(the CLI), not for library calls: numba remembers that BLAS was missing for the rest of the process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["NUMBA_EXTRAS", "hidden"]

#: numba's optional imports that the engine does not use.
NUMBA_EXTRAS = ("coverage", "cffi", "scipy.linalg")


@contextmanager
def hidden(names: Sequence[str] = NUMBA_EXTRAS) -> Iterator[list[str]]:
    """Within the block, importing one of ``names`` that is not imported yet raises ImportError, as if it were
    not installed; afterwards it can be imported again. Yields the names it hid."""
    if isinstance(names, str):
        raise TypeError(f"names must be a sequence of module names, got the string {names!r}")
    hide = [name for name in names if name not in sys.modules]
    for name in hide:
        sys.modules[name] = None  # the import system's "known missing" marker
    try:
        yield hide
    finally:
        for name in hide:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
