"""CSV files of platform trajectories and joint data, as read and written by ``delta-dynamics``.

Two file kinds, SI units, one header line naming the columns (matched by name, any order;
extra columns are ignored):

* trajectory: ``t,x,y,z,xd,yd,zd,xdd,ydd,zdd`` -- time (s), platform position (m), velocity
  (m/s) and acceleration (m/s^2) in ``base_link`` (``docs/conventions.md``). A file with only
  ``t,x,y,z`` is accepted too: velocity and acceleration then come from a smoothing spline
  (:func:`derivatives_from_positions`).
* joint data: ``t,q1,q2,q3,qd1,qd2,qd3,qdd1,qdd2,qdd3,tau1,tau2,tau3`` -- joint angles (rad),
  velocities (rad/s), accelerations (rad/s^2) and torques at the arm (N m), joints in the
  robot file's order. For a linear Delta the positions are carriage heights (m, m/s, m/s^2)
  and the efforts carriage forces, written as ``f1,f2,f3`` (N).

Blank lines and lines starting with ``#`` are skipped (line numbers still count them). Times
must increase strictly. Every problem raises :class:`CsvError` naming the file, the line
and the column, e.g. ``traj.csv:7: column 'x': not a number: 'abc'``. Numbers are written
with Python's shortest round-trip repr, so reading a written file gives the same floats.
Writes are atomic (temporary file + rename): on any error the target is left untouched.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from math import comb
from pathlib import Path

import numpy as np

from delta_core.atomic_file import atomic_write_text
from delta_dynamics.trajectories import Trajectory

TRAJECTORY_COLUMNS = ("t", "x", "y", "z", "xd", "yd", "zd", "xdd", "ydd", "zdd")
POSITION_COLUMNS = ("t", "x", "y", "z")
JOINT_COLUMNS = ("t", "q1", "q2", "q3", "qd1", "qd2", "qd3", "qdd1", "qdd2", "qdd3",
                 "tau1", "tau2", "tau3")
#: Joint-data columns the forward simulation needs (accelerations are optional there).
JOINT_INPUT_COLUMNS = ("t", "q1", "q2", "q3", "qd1", "qd2", "qd3", "tau1", "tau2", "tau3")

#: Below this estimated noise (m) the spline interpolates the positions exactly.
NOISE_FLOOR = 1e-10
#: Order of the differences the noise estimate uses.
NOISE_DIFF_ORDER = 6


class CsvError(ValueError):
    """A CSV file that cannot be used; the message names file, line and column."""

    def __init__(self, message: str, path: str = "", line: int | None = None,
                 column: str | None = None):
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column


@dataclass(frozen=True)
class CsvTable:
    """Numeric columns of a CSV file: ``columns[name]`` is an (N,) array; ``lines[k]`` is the
    1-based line number of data row k in the file."""

    path: str
    header: tuple
    columns: dict
    lines: np.ndarray
    header_line: int = 1

    def __len__(self) -> int:
        return len(self.lines)

    def stack(self, names) -> np.ndarray:
        """The named columns side by side, shape (N, len(names))."""
        return np.stack([self.columns[n] for n in names], axis=1)

    def where(self, row: int) -> str:
        """``file:LINE (t = ... s)`` for data row ``row`` (0-based), for error messages."""
        line = int(self.lines[row])
        t = self.columns.get("t")
        at = f" (t = {float(t[row]):.6g} s)" if t is not None else ""
        return f"{self.path}:{line}{at}"


# ----------------------------------------------------------------------------- reading

def read_csv(path: str | os.PathLike, required, optional=(), min_rows: int = 1,
             increasing: str | None = "t") -> CsvTable:
    """Read the ``required`` (and, if present, ``optional``) numeric columns of a CSV file.

    Raises :class:`CsvError` for a missing header or column, a duplicate column name, a row
    with the wrong number of fields, an empty, non-numeric or non-finite value, fewer than
    ``min_rows`` data rows or (``increasing``) a column that does not increase strictly;
    OSError if the file cannot be read.
    """
    name = os.fspath(path)
    with open(path, encoding="utf-8-sig", newline="") as f:
        text = f.read()
    header = None
    header_line = 0
    wanted: dict[str, int] = {}
    values: dict[str, list] = {}
    lines: list[int] = []
    width = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        fields = [c.strip() for c in s.split(",")]
        if header is None:
            header = tuple(fields)
            header_line = lineno
            width = len(header)
            for k, col in enumerate(header):
                if not col:
                    raise CsvError(f"{name}:{lineno}: header field {k + 1} is empty "
                                   f"(header: {s})", name, lineno)
                if header.index(col) != k:
                    raise CsvError(f"{name}:{lineno}: column '{col}' appears twice in the header",
                                   name, lineno, col)
            missing = [c for c in required if c not in header]
            if missing:
                raise CsvError(
                    f"{name}:{lineno}: missing column{'s' if len(missing) > 1 else ''} "
                    f"{', '.join(repr(c) for c in missing)} (the header has {', '.join(header)}; "
                    f"needed: {', '.join(required)})", name, lineno, missing[0])
            wanted = {c: header.index(c) for c in (*required, *optional) if c in header}
            values = {c: [] for c in wanted}
            continue
        if len(fields) != width:
            if len(fields) < width:
                col = header[len(fields)]
                raise CsvError(f"{name}:{lineno}: column '{col}' is missing: the row has "
                               f"{len(fields)} fields, the header {width}", name, lineno, col)
            raise CsvError(f"{name}:{lineno}: the row has {len(fields)} fields, the header only "
                           f"{width} (field {width + 1} has no column name)", name, lineno)
        for col, k in wanted.items():
            cell = fields[k]
            try:
                v = float(cell)
            except ValueError:
                why = "empty value" if not cell else f"not a number: {cell!r}"
                raise CsvError(f"{name}:{lineno}: column '{col}': {why}", name, lineno, col) from None
            if not math.isfinite(v):
                raise CsvError(f"{name}:{lineno}: column '{col}': not a finite number: {cell!r}",
                               name, lineno, col)
            values[col].append(v)
        lines.append(lineno)
    if header is None:
        raise CsvError(f"{name}: empty file: expected a header line naming the columns "
                       f"({', '.join(required)})", name)
    if len(lines) < min_rows:
        raise CsvError(f"{name}: {len(lines)} data row{'s' if len(lines) != 1 else ''}, "
                       f"need at least {min_rows}", name)
    columns = {c: np.asarray(v, dtype=float) for c, v in values.items()}
    if increasing is not None and increasing in columns:
        t = columns[increasing]
        bad = np.flatnonzero(np.diff(t) <= 0)
        if len(bad):
            k = int(bad[0]) + 1
            raise CsvError(f"{name}:{lines[k]}: column '{increasing}': {float(t[k])!r} is not after the "
                           f"previous row's {float(t[k - 1])!r} (times must increase strictly)",
                           name, lines[k], increasing)
    return CsvTable(name, header, columns, np.asarray(lines, dtype=int), header_line)


def estimate_noise(x) -> float:
    """RMS noise (same unit as ``x``) of a finely sampled smooth signal, from its sixth
    differences: for white noise of variance s^2 they have variance C(12, 6) s^2 = 924 s^2,
    while a smooth signal's sixth differences are negligible at fine sampling."""
    x = np.asarray(x, dtype=float)
    n = NOISE_DIFF_ORDER
    if len(x) <= n:
        return 0.0
    d = np.diff(x, n=n)
    return float(np.sqrt(np.mean(d * d) / comb(2 * n, n)))


def derivatives_from_positions(t, X, smoothing="auto"):
    """Velocity and acceleration (N, 3) of sampled positions X (N, 3) at times t, and the
    noise level used per axis.

    Each axis is fitted with a quintic smoothing spline (``scipy.interpolate.UnivariateSpline``,
    k = 5; cubic below 6 samples) whose smoothing factor is s = N sigma^2: the spline passes
    within an RMS distance sigma of the samples, and its first and second derivatives are
    returned. ``smoothing`` is sigma in metres, or ``"auto"``: sigma is estimated per axis by
    :func:`estimate_noise` (the rounding of the numbers in the file counts as noise:
    sigma ~ q / sqrt(12) for values rounded to q). Below 1e-10 m the spline interpolates.
    Sampling of 1-5 ms suits the stack's trajectories; on coarser samples the estimate
    mistakes the motion for noise and smooths too much (then pass ``smoothing=0``).
    """
    from scipy.interpolate import UnivariateSpline

    t = np.asarray(t, dtype=float)
    X = np.asarray(X, dtype=float)
    if len(t) < 4:
        raise ValueError(f"need at least 4 samples to fit a spline, got {len(t)}")
    if smoothing != "auto":
        smoothing = float(smoothing)
        if not (smoothing >= 0 and math.isfinite(smoothing)):
            raise ValueError(f"smoothing must be 'auto' or a noise level >= 0 m, got {smoothing}")
    k = 5 if len(t) >= 6 else 3
    Xd = np.empty_like(X)
    Xdd = np.empty_like(X)
    sigmas = []
    for a in range(X.shape[1]):
        sigma = estimate_noise(X[:, a]) if smoothing == "auto" else smoothing
        if sigma < NOISE_FLOOR:
            sigma = 0.0
        with warnings.catch_warnings():
            # FITPACK warns when it cannot meet s exactly; the returned spline is still fine
            warnings.simplefilter("ignore", UserWarning)
            spline = UnivariateSpline(t, X[:, a], k=k, s=len(t) * sigma * sigma)
        Xd[:, a] = spline.derivative(1)(t)
        Xdd[:, a] = spline.derivative(2)(t)
        sigmas.append(sigma)
    return Xd, Xdd, tuple(sigmas)


@dataclass(frozen=True)
class TrajectoryFile:
    """A trajectory read from CSV: the samples, where each row came from, and whether the
    velocities and accelerations were derived (then ``smoothing`` holds sigma per axis)."""

    trajectory: Trajectory
    table: CsvTable
    derived: bool
    smoothing: tuple | None = None


def read_trajectory(path: str | os.PathLike, smoothing="auto") -> TrajectoryFile:
    """Read a trajectory CSV: all ten columns, or only ``t,x,y,z`` (derivatives from
    :func:`derivatives_from_positions` with ``smoothing``). At least 4 rows."""
    name = os.fspath(path)
    table = read_csv(path, POSITION_COLUMNS, optional=TRAJECTORY_COLUMNS[4:], min_rows=4)
    have = [c for c in TRAJECTORY_COLUMNS[4:] if c in table.columns]
    X = table.stack(("x", "y", "z"))
    t = table.columns["t"]
    if len(have) == 6:
        traj = Trajectory(t, X, table.stack(("xd", "yd", "zd")), table.stack(("xdd", "ydd", "zdd")))
        return TrajectoryFile(traj, table, derived=False)
    if have:
        missing = [c for c in TRAJECTORY_COLUMNS[4:] if c not in table.columns]
        raise CsvError(f"{name}:{table.header_line}: missing column{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(repr(c) for c in missing)}: give all of "
                       f"{','.join(TRAJECTORY_COLUMNS)} or only t,x,y,z (derivatives are then "
                       f"computed)", name, table.header_line, missing[0])
    Xd, Xdd, sig = derivatives_from_positions(t, X, smoothing)
    return TrajectoryFile(Trajectory(t, X, Xd, Xdd), table, derived=True, smoothing=sig)


@dataclass(frozen=True)
class JointData:
    """Joint-space samples (see the module docstring); ``qdd`` is None if the file had none.
    ``effort`` names the effort columns the file had: ``tau`` (torques) or ``f`` (forces)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray | None
    tau: np.ndarray
    table: CsvTable | None = None
    effort: str = "tau"


def _effort_header(path) -> str:
    """``tau`` or ``f``: the effort columns a joint-data file's header names (``tau`` if neither)."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        for raw in f:
            s = raw.strip()
            if s and not s.startswith("#"):
                cols = {c.strip() for c in s.split(",")}
                return "f" if {"f1", "f2", "f3"} <= cols and "tau1" not in cols else "tau"
    return "tau"


def read_joint_data(path: str | os.PathLike, min_rows: int = 2, effort: str | None = None) -> JointData:
    """Read a joint-data CSV (columns ``t``, ``q1..3``, ``qd1..3``, ``tau1..3`` or ``f1..3``;
    ``qdd1..3`` optional). ``effort``: ``"tau"`` or ``"f"`` to require those effort columns
    (a missing one is named, with a hint when the file has the other kind's), None for
    whichever the file has."""
    if effort not in (None, "tau", "f"):
        raise ValueError(f"effort columns must be 'tau' (torques) or 'f' (forces), got {effort!r}")
    have = _effort_header(path)
    col = effort or have
    names = tuple(f"{col}{i}" for i in (1, 2, 3))
    try:
        table = read_csv(path, JOINT_INPUT_COLUMNS[:7] + names, optional=("qdd1", "qdd2", "qdd3"),
                         min_rows=min_rows)
    except CsvError as e:
        if effort is not None and have != effort and e.column in names:
            kind = {"tau": ("torques", "rotary"), "f": ("forces", "linear")}
            raise CsvError(f"{e}; the file holds {kind[have][0]} {have}1..3, a {kind[have][1]} Delta's, "
                           f"but the robot is a {kind[effort][1]} Delta (is this the right robot file?)",
                           e.path, e.line, e.column) from None
        raise
    have_qdd = all(c in table.columns for c in ("qdd1", "qdd2", "qdd3"))
    return JointData(table.columns["t"], table.stack(("q1", "q2", "q3")),
                     table.stack(("qd1", "qd2", "qd3")),
                     table.stack(("qdd1", "qdd2", "qdd3")) if have_qdd else None,
                     table.stack(names), table, col)


# ----------------------------------------------------------------------------- writing

def format_csv(header, data) -> str:
    """CSV text: one header line, then the rows of ``data`` (N, len(header)) as shortest
    round-trip decimals."""
    data = np.asarray(data, dtype=float)
    if data.ndim != 2 or data.shape[1] != len(header):
        raise ValueError(f"data must have shape (N, {len(header)}), got {data.shape}")
    if not np.isfinite(data).all():
        row = int(np.argmin(np.isfinite(data).all(axis=1)))
        raise ValueError(f"refusing to write non-finite values (row {row + 1}: {data[row].tolist()})")
    out = [",".join(header)]
    out.extend(",".join(map(repr, row)) for row in (data + 0.0).tolist())   # + 0.0: no "-0.0"
    out.append("")
    return "\n".join(out)


def write_csv(path: str | os.PathLike, header, data) -> Path:
    """Write ``data`` under ``header`` atomically (see :func:`format_csv`)."""
    return atomic_write_text(path, format_csv(header, data))


def write_trajectory(path: str | os.PathLike, traj: Trajectory) -> Path:
    """Write a :class:`~delta_dynamics.trajectories.Trajectory` as ``t,x,y,z,xd,...,zdd``."""
    data = np.column_stack((traj.t, traj.X, traj.Xd, traj.Xdd))
    return write_csv(path, TRAJECTORY_COLUMNS, data)


def write_joint_data(path: str | os.PathLike, t, q, qd, qdd, tau, effort: str = "tau") -> Path:
    """Write joint data as ``t,q1..3,qd1..3,qdd1..3,tau1..3``; ``effort="f"`` names the last
    three columns ``f1,f2,f3`` (the carriage forces of a linear Delta, N)."""
    data = np.column_stack((t, q, qd, qdd, tau))
    return write_csv(path, joint_columns(effort), data)


def joint_columns(effort: str = "tau") -> tuple:
    """The joint-data header with the efforts named ``<effort>1..3`` (``tau`` or ``f``)."""
    if effort not in ("tau", "f"):
        raise ValueError(f"effort columns must be 'tau' (torques) or 'f' (forces), got {effort!r}")
    return JOINT_COLUMNS[:10] + tuple(f"{effort}{i}" for i in (1, 2, 3))
