"""Output paths checked before any work, so a bad ``--out`` fails at once instead of after a long run."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_output"]


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output(path: str | os.PathLike, *, directory: bool, flag: str = "--out") -> Path:
    """``path`` if a directory (``directory=True``) or a file can be written there; else ``ValueError`` saying why.

    Missing parents are fine (the writers create them) as long as the nearest existing one is a
    writable directory. An existing directory may be written into; an existing file is overwritten
    only when a file is asked for.
    """
    out = Path(path)
    if out.exists():
        if directory and not out.is_dir():
            raise ValueError(f"{flag} {out} is an existing file; it needs a directory")
        if not directory and out.is_dir():
            raise ValueError(f"{flag} {out} is a directory; it needs a file name")
        if not os.access(out, os.W_OK):
            raise ValueError(f"{flag} {out} is not writable")
        return out
    base = _nearest_existing(out.parent if out.parent != Path("") else Path("."))
    if not base.is_dir():
        raise ValueError(f"{flag} {out}: {base} is a file, not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {out}: cannot create it, {base} is not writable")
    return out
