"""Plausibility bounds of the robot file's numbers: the range a value can take on a real
Delta robot, from a centimetre-scale laboratory robot to a large palletiser, with a wide
margin either side.

The loader's rules (``> 0``, ``>= 0``, ``com_ratio < 1``, ...) say what the model can
compute with; these bounds catch what it should not be given: a typo (``mass: 2000`` for
2.0), a value in the wrong unit (millimetres for metres), ``1e308``. Both are checked where
:class:`delta_core.robot_file.reader.Reader` reads a number, the rule first, then the bound::

    x.yaml: mass_properties.platform.mass must be <= 1000 kg (plausibility bound for a
    Delta robot platform), got 1e+308

Each kind's schema module has its table (``delta_core.robot_file.rotary.BOUNDS``,
``delta_core.robot_file.linear.BOUNDS``): a field's path (as in the robot file, per-joint
lists by the list's path) -> :class:`Bound`. A field not in its table gets
:data:`DEFAULT_BOUND`; add a row for every new numeric field
(``test/bad_input/test_bad_robot_files.py`` checks that every numeric field of each schema
has one, and ``docs/robot_file.md`` lists them all: regenerate its tables with
:func:`markdown_table`).

Example::

    >>> table = {"mass_properties.platform.mass": Bound(0.0, 1000.0, "kg", "a Delta robot platform")}
    >>> why_implausible("mass_properties.platform.mass", 1e308, table)
    'must be <= 1000 kg (plausibility bound for a Delta robot platform), got 1e+308'
    >>> why_implausible("mass_properties.platform.mass", 2.0, table) is None
    True
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """lo <= value <= hi, in ``unit``; ``why`` completes "plausibility bound for ..."."""

    lo: float
    hi: float
    unit: str
    why: str


#: Applies to a numeric field without a row in its kind's table.
DEFAULT_BOUND = Bound(-1e6, 1e6, "", "any robot-file number (this field has no row in "
                                     "its kind's BOUNDS, delta_core/robot_file/<kind>.py, yet)")


def bound_for(path: str, table: dict) -> Bound:
    """The :class:`Bound` of a field (``path`` with or without a ``[k]`` index) in ``table``
    (a kind's ``BOUNDS``), :data:`DEFAULT_BOUND` for a field without a row."""
    return table.get(path.split("[", 1)[0], DEFAULT_BOUND)


def _fmt(v: float, unit: str) -> str:
    return f"{v:g} {unit}" if unit else f"{v:g}"


def check_bound(bound: Bound, value: float) -> str | None:
    """The rule ``value`` breaks (``"must be <= ..., got ..."``), or None within ``bound``."""
    v = float(value)
    if v > bound.hi:
        return f"must be <= {_fmt(bound.hi, bound.unit)} (plausibility bound for {bound.why}), got {v:g}"
    if v < bound.lo:
        return f"must be >= {_fmt(bound.lo, bound.unit)} (plausibility bound for {bound.why}), got {v:g}"
    if not math.isfinite(v):
        return f"must be finite, got {v}"
    return None


def why_implausible(path: str, value: float, table: dict) -> str | None:
    """The plausibility rule ``value`` breaks for the field ``path`` of ``table``, or None."""
    return check_bound(bound_for(path, table), value)


def markdown_table(table: dict) -> str:
    """A kind's table of bounds as ``docs/robot_file.md`` shows it."""
    rows = ["| field | min | max | unit | plausibility bound for |", "|---|---|---|---|---|"]
    for path, b in table.items():
        rows.append(f"| `{path}` | {b.lo:g} | {b.hi:g} | {b.unit or '–'} | {b.why} |")
    return "\n".join(rows)
