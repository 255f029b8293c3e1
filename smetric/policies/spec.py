"""``PolicySpec``: what the registry knows about a policy (parameters, defaults, sources, signals).

Every numeric parameter declares its allowed values in ``ranges`` (a :class:`~smetric.ranges.Range`);
:meth:`PolicySpec.resolve` rejects a value outside it with a message naming ``policy.parameter``.

A policy's numeric ``params`` vector is laid out as: its named parameters in declaration order
(string choices encoded as the index of the value), then the :class:`~smetric.policies.base.PolicyContext`
fields named in ``context``, then whatever ``constants(ctx)`` returns. Policy modules read the
vector through module-level slot numbers obtained from :meth:`PolicySpec.slot`, so the layout is
declared once, next to the ``@njit`` function that reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np

from ..ranges import Range
from .base import PolicyContext

_CONTEXT_FIELDS = tuple(f.name for f in fields(PolicyContext))


@dataclass(frozen=True)
class PolicySpec:
    """A routing policy as the registry knows it.

    ``params`` maps each parameter name to its default, in the order of the numeric vector;
    a string-valued parameter lists its allowed values in ``choices`` and is encoded as the
    value's index; every other parameter declares its allowed values in ``ranges``. ``context``
    names :class:`PolicyContext` fields appended after the named parameters; ``constants(ctx)``
    returns further cluster constants appended after those;
    ``state_size(ctx)`` is the length of the policy's float64 state vector.
    ``signals`` says which view columns the policy reads and how fresh a real router's copy is.
    """

    name: str
    pid: int
    summary: str
    source: str
    signals: str
    params: dict = field(default_factory=dict)
    choices: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    constants: Callable[[PolicyContext], list] = lambda ctx: []
    state_size: Callable[[PolicyContext], int] = lambda ctx: 0
    context: tuple = ()

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.lower() or "_" in self.name or " " in self.name:
            raise ValueError(f"policy name {self.name!r} must be lower-case with '-' separators")
        if self.pid < 0:
            raise ValueError(f"policy {self.name!r}: pid must be >= 0, got {self.pid}")
        for key, allowed in self.choices.items():
            if key not in self.params:
                raise ValueError(f"policy {self.name!r}: choices given for unknown parameter {key!r}")
            if self.params[key] not in allowed:
                raise ValueError(f"policy {self.name!r}: default {self.params[key]!r} of {key!r} is not in {allowed}")
        for key, val in self.params.items():
            if key in self.choices:
                continue
            if not isinstance(val, (int, float)):
                raise ValueError(f"policy {self.name!r}: parameter {key!r} needs a number or choices, got {val!r}")
            if not isinstance(self.ranges.get(key), Range):
                raise ValueError(f"policy {self.name!r}: numeric parameter {key!r} needs a Range in ranges")
            if not self.ranges[key].contains(float(val)):
                raise ValueError(f"policy {self.name!r}: default {val!r} of {key!r} is not "
                                 f"{self.ranges[key].describe()}")
        for key in self.ranges:
            if key not in self.params or key in self.choices:
                raise ValueError(f"policy {self.name!r}: range given for {key!r}, which is not a numeric parameter")
        for name in self.context:
            if name not in _CONTEXT_FIELDS:
                raise ValueError(f"policy {self.name!r}: context field {name!r} is not one of {_CONTEXT_FIELDS}")

    def slot(self, name: str) -> int:
        """Position of a named parameter or context field in the ``params`` vector."""
        names = list(self.params) + list(self.context)
        if name not in names:
            raise ValueError(f"policy {self.name!r} has no parameter or context field {name!r}")
        return names.index(name)

    def slots(self, *names: str) -> tuple[int, ...]:
        """:meth:`slot` of each name, for unpacking into a policy module's constants."""
        return tuple(self.slot(n) for n in names)

    def code(self, param: str, value: str) -> float:
        """Numeric code of a string choice (what the ``@njit`` function compares against)."""
        return float(self.choices[param].index(value))

    def resolve(self, overrides: dict | None = None) -> dict:
        """Defaults updated with ``overrides``; unknown names and bad values raise ``ValueError``."""
        values = dict(self.params)
        for key, val in (overrides or {}).items():
            key = key.replace("-", "_")
            if key not in values:
                raise ValueError(f"policy {self.name!r} has no parameter {key!r}; it has {sorted(values)}")
            if key in self.choices:
                if str(val) not in self.choices[key]:
                    raise ValueError(f"{self.name}.{key} must be one of {self.choices[key]}, got {val!r}")
                values[key] = str(val)
            else:
                values[key] = self.ranges[key].check(f"{self.name}.{key}", val)
        return values

    def build(self, ctx: PolicyContext, overrides: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``(params, state)`` vectors for one run."""
        values = self.resolve(overrides)
        vec = [self.code(k, v) if k in self.choices else float(v) for k, v in values.items()]
        vec += [float(getattr(ctx, name)) for name in self.context]
        vec += [float(c) for c in self.constants(ctx)]
        return np.asarray(vec, dtype=np.float64), np.zeros(int(self.state_size(ctx)), dtype=np.float64)

    def describe(self) -> list[dict]:
        """One row per parameter (name, default, choices or range) for listings; one row if it has none."""
        head = {"policy": self.name, "summary": self.summary, "source": self.source, "signals": self.signals}
        if not self.params:
            return [dict(head, param="", default="", choices="", range="")]
        return [dict(head, param=k, default=v, choices="|".join(self.choices.get(k, ())),
                     range=self.ranges[k].describe() if k in self.ranges else "")
                for k, v in self.params.items()]
