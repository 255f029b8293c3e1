"""Generated blocks of the README: the text between a begin and an end marker comment is rewritten from a CSV."""

from __future__ import annotations

from pathlib import Path

__all__ = ["rewrite_block", "read_block"]


def read_block(path: str | Path, begin: str, end: str) -> str:
    """The text between ``begin`` and ``end`` in ``path`` (ValueError naming the markers when absent)."""
    text = Path(path).read_text()
    if begin not in text or end not in text:
        raise ValueError(f"{path} has no generated block ({begin!r} ... {end!r})")
    return text.split(begin, 1)[1].split(end, 1)[0]


def rewrite_block(path: str | Path, begin: str, end: str, block: str) -> bool:
    """Put ``block`` between the markers of ``path``; True when the file changed."""
    path = Path(path)
    text = path.read_text()
    new = text.replace(f"{begin}{read_block(path, begin, end)}{end}", f"{begin}\n{block}{end}", 1)
    if new != text:
        path.write_text(new)
    return new != text
