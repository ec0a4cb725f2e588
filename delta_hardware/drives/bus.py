"""The shape of a drive bus plug-in: what a caller (the hardware node, a tool) needs to know of
a bus before it builds the drives on it, and nothing of the bus itself.

A bus declares its own parameter block (:class:`BusParameter`: name, default, description,
bounds or choices) and builds its :class:`~delta_hardware.drives.interface.DriveSet` from the
values of that block (:meth:`DriveBus.build`). The declaration is light (it imports no bus
library); the drive set class is imported only when a set is built, so a node on the
simulated drives never loads a CAN stack. Registration: one line in
:mod:`delta_hardware.drives` (``BUSES``); the recipe is in ``docs/architecture.md``.

>>> p = BusParameter("bitrate", 1_000_000, "bit/s", lo=10_000, hi=1_000_000, integer=True)
>>> p.check(500_000), p.check(5), p.check(2.5)
(True, False, False)
>>> p.rule
'must be an integer 10000 - 1000000'
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class BusParameter:
    """One parameter of a bus: ``name`` (as the node declares it), ``default``,
    ``description`` (starts with the bus name, e.g. ``"canopen: channel"``), and its rule:
    numbers within [``lo``, ``hi``] (``lo_open``: > ``lo``), ``integer``, or one of
    ``choices`` (a tuple, or a callable giving one: the names of another registry); a
    string parameter without choices takes any string."""

    name: str
    default: object
    description: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    integer: bool = False
    choices: object = None

    def allowed(self) -> tuple | None:
        """The values allowed (``choices``, called first if a callable), or None for a parameter without choices."""
        return tuple(self.choices() if callable(self.choices) else self.choices) if self.choices else None

    @property
    def rule(self) -> str:
        """What a valid value is, as the end of ``"<name> must ..."``."""
        choices = self.allowed()
        if choices is not None:
            return f"must be one of {', '.join(map(str, choices))}"
        if isinstance(self.default, str):
            return "must be a string"
        if self.integer:
            return f"must be an integer {int(self.lo)} - {int(self.hi)}"
        parts = []
        if self.lo is not None:
            parts.append(f"{'>' if self.lo_open else '>='} {self.lo:g}")
        if self.hi is not None:
            parts.append(f"<= {self.hi:g}")
        return "must be a finite number" + (" " + " and ".join(parts) if parts else "")

    def check(self, value) -> bool:
        """Whether ``value`` keeps the rule."""
        choices = self.allowed()
        if choices is not None:
            return value in choices
        if isinstance(self.default, str):
            return isinstance(value, str)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return self.hi is None or value <= self.hi


@dataclass(frozen=True)
class DriveBus:
    """A drive bus: its ``description``, its ``parameters`` (a tuple of
    :class:`BusParameter`) and ``drive_set``, the ``"module:Class"`` of its drive set, whose
    classmethod ``from_parameters(robot, values, rate)`` builds it (``values``: the
    parameter block, name -> value; ``rate``: the control rate in Hz)."""

    description: str
    parameters: tuple
    drive_set: str

    def build(self, robot, values: dict, rate: float):
        """The drive set for the loaded robot file ``robot``; values missing from ``values``
        take their defaults."""
        module, _, name = self.drive_set.partition(":")
        cls = getattr(importlib.import_module(module), name)
        block = {p.name: values.get(p.name, p.default) for p in self.parameters}
        return cls.from_parameters(robot, block, rate)
