"""Joint data: the one record of joint-space samples, and its CSV files.

Columns ``t,q1,q2,q3,qd1,qd2,qd3,qdd1,qdd2,qdd3,tau1,tau2,tau3`` -- time (s), joint angles
(rad), velocities (rad/s), accelerations (rad/s^2) and torques at the arm (N m), joints in the
robot file's order; read and written by :mod:`.csv_io` (any column order and case, extra columns
ignored, every problem a :class:`~.csv_io.CsvError` naming file, line and column). For a
linear Delta the positions are carriage heights (m, m/s, m/s^2) and the efforts carriage
forces, written as ``f1,f2,f3`` (N) (``docs/conventions.md``).

Which columns a reader needs is its caller's: ``delta-dynamics forward`` and ``simulate``
need the velocities (``velocities=True``); identification needs only ``t``, the positions
and the efforts, and uses velocities and accelerations when the file has them (accelerations
without velocities are refused). Times must increase strictly where velocities are required;
identification sorts out duplicate or backward times itself
(:mod:`delta_dynamics.identification.preprocess`). Bags: :mod:`.bag`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from delta_dynamics.limits import MAX_SAMPLES

from .csv_io import LIMIT_NAME, CsvError, CsvReader, CsvTable, write_csv

JOINT_COLUMNS = ("t", "q1", "q2", "q3", "qd1", "qd2", "qd3", "qdd1", "qdd2", "qdd3",
                 "tau1", "tau2", "tau3")
POSITION_COLUMNS = ("q1", "q2", "q3")
VELOCITY_COLUMNS = ("qd1", "qd2", "qd3")
ACCELERATION_COLUMNS = ("qdd1", "qdd2", "qdd3")
#: The effort columns of each kind: torques of a rotary Delta, forces of a linear one.
EFFORT_COLUMNS = {"tau": ("tau1", "tau2", "tau3"), "f": ("f1", "f2", "f3")}
_KIND = {"tau": ("torques", "rotary"), "f": ("forces", "linear")}


@dataclass
class JointData:
    """Joint-space samples: time (N,), positions and efforts (N, 3), optional velocities and
    accelerations (None: not given).

    ``source`` names the data in messages; ``unit`` names a sample ("line" for CSV,
    "<topic> message" for bags) and ``first`` is the number of sample 0; ``lines`` (CSV) the
    line number of every sample; ``notes`` what reading did. ``effort`` names the effort
    columns: ``tau`` (torques) or ``f`` (forces); ``table`` (CSV) the file's header, time
    column and line numbers.
    """

    t: np.ndarray
    q: np.ndarray
    tau: np.ndarray
    qd: np.ndarray | None = None
    qdd: np.ndarray | None = None
    source: str = ""
    unit: str = "sample"
    first: int = 0
    notes: list = field(default_factory=list)
    lines: np.ndarray | None = None
    effort: str = "tau"
    table: CsvTable | None = None

    def __len__(self) -> int:
        return len(self.t)

    def where(self, k: int) -> str:
        """Where sample ``k`` came from ("line 12", "message 3"), for messages."""
        if self.lines is not None:
            return f"{self.unit} {int(self.lines[int(k)])}"
        return f"{self.unit} {int(k) + self.first}"


def check_effort_column(effort) -> None:
    """Refuse an effort column name other than ``"tau"``, ``"f"`` or None (ValueError)."""
    if effort not in (None, "tau", "f"):
        raise ValueError(f"effort columns must be 'tau' (torques) or 'f' (forces), got {effort!r}")


def _check_kind(effort) -> None:
    if effort not in ("tau", "f"):
        raise ValueError(f"effort columns must be 'tau' (torques) or 'f' (forces), got {effort!r}")


class JointCsvReader(CsvReader):
    """:class:`~.csv_io.CsvReader` of a joint-data file: the columns come from the header.

    ``effort``: ``"tau"`` or ``"f"`` to require those effort columns (a missing one is named,
    with a hint when the file has the other kind's), None for whichever the file has; after
    the header, the kind read. ``velocities``: require ``qd1..3`` (else they and the
    accelerations are optional, and accelerations without velocities are refused).
    """

    def __init__(self, path, effort: str | None = None, velocities: bool = False,
                 max_rows: int = MAX_SAMPLES, limit_name: str = LIMIT_NAME):
        check_effort_column(effort)
        super().__init__(path, ("t", *POSITION_COLUMNS, *EFFORT_COLUMNS[effort or "tau"]), (), max_rows, limit_name)
        self.effort, self.velocities = effort, velocities

    def set_header(self, lineno, s):
        """The header: pick the effort columns, then check it as :class:`~.csv_io.CsvReader` does.
        Column names are matched in lower case (``T,Q1,...`` is read as ``t,q1,...``)."""
        s = s.lower()
        cols = {c.strip() for c in s.split(",")}
        have = "f" if set(EFFORT_COLUMNS["f"]) <= cols and "tau1" not in cols else "tau"
        eff = self.effort or have
        names = EFFORT_COLUMNS[eff]
        if self.velocities:
            self.required = ("t", *POSITION_COLUMNS, *VELOCITY_COLUMNS, *names)
            self.optional = ACCELERATION_COLUMNS
        else:
            self.required = ("t", *POSITION_COLUMNS, *names)
            self.optional = VELOCITY_COLUMNS + ACCELERATION_COLUMNS
        try:
            super().set_header(lineno, s)
        except CsvError as e:
            if have != eff and e.column in names:
                raise CsvError(f"{e}; the file holds {_KIND[have][0]} {have}1..3, a {_KIND[have][1]} Delta's, "
                               f"but the robot is a {_KIND[eff][1]} Delta (is this the right robot file?)",
                               e.path, e.line, e.column) from None
            raise
        self.effort = eff
        if not self.velocities and self.has(ACCELERATION_COLUMNS) and not self.has(VELOCITY_COLUMNS):
            raise CsvError(f"{self.name}:{lineno}: accelerations qdd1..3 given without velocities qd1..3",
                           self.name, lineno, "qd1")

    def has(self, names) -> bool:
        """True if the header has all of ``names`` (after :meth:`set_header`)."""
        return all(c in self.wanted for c in names)

    def joint_data(self, min_rows: int = 1, increasing: str | None = None) -> JointData:
        """The rows read so far as :class:`JointData` (see :meth:`~.csv_io.CsvReader.table`)."""
        table = self.table(min_rows, increasing)
        c = table.columns
        qd = table.stack(VELOCITY_COLUMNS) if self.has(VELOCITY_COLUMNS) else None
        qdd = table.stack(ACCELERATION_COLUMNS) if qd is not None and self.has(ACCELERATION_COLUMNS) else None
        q, tau = table.stack(POSITION_COLUMNS), table.stack(EFFORT_COLUMNS[self.effort])
        t = c["t"]
        c.clear()                   # the table keeps the times and line numbers only
        c["t"] = t
        return JointData(t=t, q=q, tau=tau, qd=qd, qdd=qdd, source=self.name, unit="line", lines=table.lines,
                         effort=self.effort, table=table)


def read_joint_csv(path: str | os.PathLike, effort: str | None = None, velocities: bool = False,
                   min_rows: int = 1, increasing: str | None = None, max_rows: int = MAX_SAMPLES) -> JointData:
    """Read a joint-data CSV (columns ``t``, ``q1..3``, ``tau1..3`` or ``f1..3``; ``qd1..3``
    required with ``velocities``, else optional; ``qdd1..3`` optional). ``effort``: ``"tau"``
    or ``"f"`` to require those effort columns, None for whichever the file has.
    ``increasing``: a column that must increase strictly (``"t"``), or None.
    Raises :class:`~.csv_io.CsvError` (file, line, column) or OSError."""
    reader = JointCsvReader(path, effort, velocities, max_rows)
    reader.read()
    return reader.joint_data(min_rows, increasing)


def joint_columns(effort: str = "tau") -> tuple:
    """The joint-data header with the efforts named ``<effort>1..3`` (``tau`` or ``f``)."""
    _check_kind(effort)
    return JOINT_COLUMNS[:10] + EFFORT_COLUMNS[effort]


def write_joint_data(path: str | os.PathLike, t, q, tau, *, qd=None, qdd=None, effort: str = "tau") -> Path:
    """Write joint data as ``t,q1..3[,qd1..3][,qdd1..3],tau1..3`` (atomically, shortest
    round-trip decimals); ``effort="f"`` names the last three columns ``f1,f2,f3`` (the
    carriage forces of a linear Delta, N)."""
    _check_kind(effort)
    head = ["t", *POSITION_COLUMNS]
    cols = [np.asarray(t, float)[:, None], np.asarray(q, float)]
    for names, arr in ((VELOCITY_COLUMNS, qd), (ACCELERATION_COLUMNS, qdd)):
        if arr is not None:
            head += names
            cols.append(np.asarray(arr, float))
    head += EFFORT_COLUMNS[effort]
    cols.append(np.asarray(tau, float))
    return write_csv(path, head, np.hstack(cols))
