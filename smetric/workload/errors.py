"""Errors and warnings of the trace readers: every problem names the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

__all__ = ["TraceFormatError", "TraceNoteWarning", "TraceSkipWarning"]


class TraceFormatError(ValueError):
    """A trace file that cannot be read as its format says.

    Attributes:
        path: the file.
        line: 1-based line number (the header is line 1 in CSV files).
        field: the offending field, or ``None`` when the problem is the line or the file itself.
        problem: what is wrong, in words.
    """

    def __init__(self, path: str | Path, line: int, field: str | None, problem: str) -> None:
        self.path = str(path)
        self.line = int(line)
        self.field = field
        self.problem = problem
        where = f"{self.path}, line {self.line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):  # keep the structured attributes through pickling (dask workers)
        return (type(self), (self.path, self.line, self.field, self.problem))


class TraceSkipWarning(UserWarning):
    """Issued when ``on_error="skip"`` left bad lines out of a trace (or a link could not be kept)."""


class TraceNoteWarning(UserWarning):
    """Issued when a trace is kept as it is but the simulator treats part of it differently (e.g. 0-token replies)."""
