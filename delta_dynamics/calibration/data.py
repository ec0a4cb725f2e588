"""Calibration measurements: what they are, how they are read and written.

Two kinds, one CSV file each (a header line naming the columns in any order; extra columns
ignored; blank lines and ``#`` comments skipped; SI units):

* ``positions``: ``q1,q2,q3,x,y,z`` -- the joint positions the stack reported (rad; m for the
  carriages of a linear Delta; with the robot file's joint offsets applied, as in
  ``/joint_states``) and the tool point measured by an external device (laser tracker,
  camera, a touch probe on a fixture) in ``base_link``, m.
* ``heights``: ``q1,q2,q3,z`` -- the joint positions at which a probe triggered and the known
  height of the touched surface in ``base_link`` (m; 0 on a linear Delta's bed), as
  Klipper's probe data.

Reading goes through :func:`delta_dynamics.data_files.csv_io.read_csv` (blocks of lines, lines of
at most 64 kB, UTF-8), refuses anything but a regular file before opening it, and allows at
most :data:`MAX_POSES` rows. Every problem is a :class:`~delta_dynamics.data_files.csv_io.CsvError`
of one line naming the file and line, e.g. ``m.csv:7: column 'x': not a number: 'abc'``.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "m.csv")
>>> _ = open(path, "w").write("q1,q2,q3,z\\n0.1,0.2,0.3,0\\n")
>>> m = read_measurements(path)
>>> m.kind, m.q.tolist(), m.values.tolist()
('heights', [[0.1, 0.2, 0.3]], [[0.0]])
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from delta_core.paths import PathError, check_output_file, check_readable_file
from delta_dynamics.data_files.csv_io import CsvError, read_csv, write_csv

#: The measurement kinds and their columns.
KINDS = {"positions": ("q1", "q2", "q3", "x", "y", "z"), "heights": ("q1", "q2", "q3", "z")}
#: Most poses a measurement file may hold (a calibration needs tens to hundreds).
MAX_POSES = 100_000


@dataclass(frozen=True)
class Measurements:
    """Measured poses: ``q`` (N, 3) joint positions as reported, ``values`` (N, 3) measured
    tool points (``positions``) or (N, 1) surface heights (``heights``); ``lines``: the line
    of each pose in ``source`` (0 for poses made in memory)."""

    kind: str
    q: np.ndarray
    values: np.ndarray
    lines: np.ndarray
    source: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"measurement kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        width = 3 if self.kind == "positions" else 1
        q = np.asarray(self.q, dtype=float).reshape(-1, 3)
        v = np.asarray(self.values, dtype=float).reshape(-1, width)
        if len(q) != len(v):
            raise ValueError(f"{len(q)} joint-position rows but {len(v)} measured rows")
        lines = np.zeros(len(q), int) if self.lines is None else np.asarray(self.lines, int)
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "lines", lines)

    def __len__(self) -> int:
        return len(self.q)

    @property
    def width(self) -> int:
        """Residuals per pose: 3 (positions) or 1 (heights)."""
        return self.values.shape[1]

    def where(self, k: int) -> str:
        """``file:LINE`` of pose ``k`` (``pose k+1`` for poses made in memory)."""
        line = int(self.lines[k])
        return f"{self.source}:{line}" if self.source and line else f"pose {k + 1}"

    def subset(self, index) -> "Measurements":
        """The poses ``index`` (a boolean mask or indices)."""
        return Measurements(self.kind, self.q[index], self.values[index], self.lines[index], self.source)


def read_measurements(path, kind: str | None = None) -> Measurements:
    """Read a ``positions`` or ``heights`` file (``kind=None``: ``positions`` if the header
    names ``x`` and ``y``, else ``heights``)."""
    try:
        check_readable_file(path, "a measurement file")
    except PathError as e:
        raise CsvError(str(e), os.fspath(path)) from None
    if kind is not None and kind not in KINDS:
        raise ValueError(f"measurement kind must be one of {', '.join(KINDS)}, got {kind!r}")
    table = read_csv(path, KINDS["heights"], optional=("x", "y"), increasing=None, max_rows=MAX_POSES)
    has = [c in table.columns for c in ("x", "y")]
    if has[0] != has[1]:
        missing = "y" if has[0] else "x"
        raise CsvError(f"{table.path}:{table.header_line}: column {missing!r} missing: positions need "
                       f"q1,q2,q3,x,y,z, heights q1,q2,q3,z", table.path, table.header_line)
    found = "positions" if has[0] else "heights"
    if kind is not None and kind != found:
        raise CsvError(f"{table.path}:{table.header_line}: {kind} need columns {','.join(KINDS[kind])}, "
                       f"the header names {','.join(table.header)}", table.path, table.header_line)
    return Measurements(found, table.stack(("q1", "q2", "q3")), table.stack(KINDS[found][3:]),
                        np.asarray(table.lines), table.path)


def write_measurements(path, m: Measurements):
    """Write ``m`` as a CSV file of its kind (atomically)."""
    check_output_file(path, "a measurement file")
    return write_csv(path, KINDS[m.kind], np.column_stack((m.q, m.values)))
