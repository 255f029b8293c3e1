"""``Range``: the allowed values of a numeric parameter, declared once next to its default and checked
with a message that names the parameter (policy parameters, queue-discipline parameters)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Range", "AT_LEAST_0", "POSITIVE", "FRACTION", "at_least", "integer"]


@dataclass(frozen=True)
class Range:
    """Finite numbers from ``lo`` to ``hi`` (each bound closed unless ``*_open``); ``integer``: whole numbers only."""

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False

    def __post_init__(self) -> None:
        if not self.lo <= self.hi:
            raise ValueError(f"a range needs lo <= hi, got {self.lo} and {self.hi}")

    def describe(self) -> str:
        """The allowed values in words, e.g. ``a number in [0, 1]`` or ``an integer >= 1``."""
        kind = "an integer" if self.integer else "a number"
        if math.isinf(self.lo) and math.isinf(self.hi):
            return f"a finite {kind.split()[1]}"
        if math.isinf(self.hi):
            return f"{kind} {'>' if self.lo_open else '>='} {self.lo:g}"
        if math.isinf(self.lo):
            return f"{kind} {'<' if self.hi_open else '<='} {self.hi:g}"
        return f"{kind} in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"

    def contains(self, value: float) -> bool:
        """Whether ``value`` (a float) is allowed."""
        if not math.isfinite(value) or (self.integer and value != int(value)):
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def check(self, name: str, value: object) -> float:
        """``value`` as a float (strings are parsed); ``ValueError`` naming ``name`` when it is not allowed."""
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"{name} must be finite ({self.describe()}), got {value!r}")
        if not self.contains(number):
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}")
        return number


AT_LEAST_0 = Range(0.0)
POSITIVE = Range(0.0, lo_open=True)
FRACTION = Range(0.0, 1.0)


def at_least(lo: float) -> Range:
    """Numbers >= ``lo``."""
    return Range(float(lo))


def integer(lo: float) -> Range:
    """Whole numbers >= ``lo``."""
    return Range(float(lo), integer=True)
