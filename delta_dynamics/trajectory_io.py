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
must increase strictly. A file may have at most :data:`~delta_dynamics.limits.MAX_SAMPLES`
data rows (1000 s at 1 kHz) and lines of at most 64 kB; it is read in blocks, so memory stays
near twice the parsed arrays. Every problem raises :class:`CsvError` naming the file, the line
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

from delta_core.atomic_file import atomic_write_chunks
from delta_core.paths import open_regular
from delta_core.text_input import TextInputError, data_lines, field_counts_equal, iter_line_blocks
from delta_dynamics.limits import MAX_SAMPLES
from delta_dynamics.common.trajectory import Trajectory

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
             increasing: str | None = "t", max_rows: int = MAX_SAMPLES) -> CsvTable:
    """Read the ``required`` (and, if present, ``optional``) numeric columns of a CSV file.

    Raises :class:`CsvError` for a missing header or column, a duplicate column name, a row
    with the wrong number of fields, an empty, non-numeric or non-finite value, fewer than
    ``min_rows`` or more than ``max_rows`` data rows, (``increasing``) a column that does not
    increase strictly, a line longer than 64 kB or text that is not UTF-8; OSError if the
    file cannot be read.

    The file is read a block of lines at a time (:func:`delta_core.text_input.iter_line_blocks`)
    and each block parsed by numpy's C parser into arrays (the exact per-cell messages come
    from a second, Python pass over a block that numpy refuses), so memory stays near twice
    the parsed arrays whatever the file's size.
    """
    name = os.fspath(path)
    state = _CsvState(name, tuple(required), tuple(optional))
    try:
        for first, block in iter_line_blocks(path, what="a CSV file"):
            state.add_block(first, block, max_rows)
    except TextInputError as e:
        raise CsvError(str(e), name, e.line) from None
    if state.header is None:
        raise CsvError(f"{name}: empty file: expected a header line naming the columns "
                       f"({', '.join(required)})", name)
    n = state.rows
    if n < min_rows:
        raise CsvError(f"{name}: {n} data row{'s' if n != 1 else ''}, "
                       f"need at least {min_rows}", name)
    columns = {c: (np.concatenate([b[:, j] for b in state.blocks]) if state.blocks else np.empty(0))
               for j, c in enumerate(state.wanted)}
    lines = np.concatenate(state.lines) if state.lines else np.empty(0, dtype=np.int64)
    state.blocks.clear()
    if increasing is not None and increasing in columns:
        t = columns[increasing]
        bad = np.flatnonzero(np.diff(t) <= 0)
        if len(bad):
            k = int(bad[0]) + 1
            raise CsvError(f"{name}:{lines[k]}: column '{increasing}': {float(t[k])!r} is not after the "
                           f"previous row's {float(t[k - 1])!r} (times must increase strictly)",
                           name, int(lines[k]), increasing)
    return CsvTable(name, state.header, columns, lines, state.header_line)


class _CsvState:
    """What :func:`read_csv` has read so far: the header, then blocks of parsed rows."""

    def __init__(self, name, required, optional):
        self.name, self.required, self.optional = name, required, optional
        self.header = None
        self.header_line = 0
        self.width = 0
        self.wanted: dict[str, int] = {}
        self.blocks: list = []          # (n, len(wanted)) float arrays
        self.lines: list = []           # (n,) line numbers
        self.rows = 0

    def _set_header(self, lineno, s):
        name = self.name
        fields = [c.strip() for c in s.split(",")]
        header = tuple(fields)
        for k, col in enumerate(header):
            if not col:
                raise CsvError(f"{name}:{lineno}: header field {k + 1} is empty "
                               f"(header: {s})", name, lineno)
            if header.index(col) != k:
                raise CsvError(f"{name}:{lineno}: column '{col}' appears twice in the header",
                               name, lineno, col)
        missing = [c for c in self.required if c not in header]
        if missing:
            raise CsvError(
                f"{name}:{lineno}: missing column{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(c) for c in missing)} (the header has {', '.join(header)}; "
                f"needed: {', '.join(self.required)})", name, lineno, missing[0])
        self.header, self.header_line, self.width = header, lineno, len(header)
        self.wanted = {c: header.index(c) for c in (*self.required, *self.optional) if c in header}

    def add_block(self, first, block, max_rows):
        """Parse one block of lines (the header with the first), at most ``max_rows`` data rows in all."""
        rows, nums = data_lines(first, block)
        if rows and self.header is None:
            self._set_header(nums[0], rows[0].strip())
            rows, nums = rows[1:], nums[1:]
        if not rows:
            return
        if self.rows + len(rows) > max_rows:
            k = max_rows - self.rows
            raise CsvError(f"{self.name}:{nums[k]}: more than {max_rows} data rows (the limit, "
                           "MAX_SAMPLES in delta_dynamics/limits.py): split the file or decimate it",
                           self.name, nums[k])
        cols = list(self.wanted.values())
        arr = None
        if field_counts_equal(rows, self.width):
            try:
                arr = np.loadtxt(rows, delimiter=",", usecols=cols, dtype=float, ndmin=2,
                                 comments=None, quotechar=None)
            except ValueError:
                arr = None
            if arr is not None and not np.isfinite(arr).all():
                arr = None                  # the Python pass names the first one
        if arr is None or arr.shape != (len(rows), len(cols)):
            arr = self._parse_slowly(rows, nums)
        self.blocks.append(arr)
        self.lines.append(np.arange(nums.start, nums.stop) if isinstance(nums, range)
                          else np.asarray(nums, dtype=np.int64))
        self.rows += len(rows)

    def _parse_slowly(self, rows, nums):
        """The rows one value at a time: the first problem raises CsvError naming it."""
        name, width, header = self.name, self.width, self.header
        out = np.empty((len(rows), len(self.wanted)))
        for r, (s, lineno) in enumerate(zip(rows, nums)):
            fields = [c.strip() for c in s.split(",")]
            if len(fields) != width:
                if len(fields) < width:
                    col = header[len(fields)]
                    raise CsvError(f"{name}:{lineno}: column '{col}' is missing: the row has "
                                   f"{len(fields)} fields, the header {width}", name, lineno, col)
                raise CsvError(f"{name}:{lineno}: the row has {len(fields)} fields, the header only "
                               f"{width} (field {width + 1} has no column name)", name, lineno)
            for j, (col, k) in enumerate(self.wanted.items()):
                cell = fields[k]
                try:
                    v = float(cell)
                except ValueError:
                    why = "empty value" if not cell else f"not a number: {_quote(cell)}"
                    raise CsvError(f"{name}:{lineno}: column '{col}': {why}", name, lineno, col) from None
                if not math.isfinite(v):
                    raise CsvError(f"{name}:{lineno}: column '{col}': not a finite number: {cell!r}",
                                   name, lineno, col)
                out[r, j] = v
        return out


def _quote(cell: str, limit: int = 40) -> str:
    """``repr`` of a cell, cut to ``limit`` characters (a binary file's line is long)."""
    return repr(cell) if len(cell) <= limit else f"{cell[:limit]!r}... ({len(cell)} characters)"


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
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
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
        with warnings.catch_warnings(), np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            # FITPACK warns when it cannot meet s exactly; the returned spline is still fine.
            # Overflow (time steps of 1e-300 s) gives non-finite values that read_trajectory names
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
    bad = ~(np.isfinite(Xd).all(axis=1) & np.isfinite(Xdd).all(axis=1))
    if bad.any():
        k = int(np.argmax(bad))
        raise CsvError(f"{table.where(k)}: the velocity and acceleration derived from the positions are "
                       f"not finite (time steps down to {float(np.diff(t).min()):.3g} s are too short)",
                       name, int(table.lines[k]))
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
    """``tau`` or ``f``: the effort columns a joint-data file's header names (``tau`` if neither,
    or if the header cannot be read: :func:`read_csv` then says why)."""
    try:
        with open_regular(path, "a CSV file") as f:      # a FIFO or a device: no blocking open
            for _ in range(100_000):
                raw = f.readline(65536)
                if not raw:
                    break
                s = raw.decode("utf-8", "replace").lstrip("\ufeff").strip()
                if s and not s.startswith("#"):
                    cols = {c.strip() for c in s.split(",")}
                    return "f" if {"f1", "f2", "f3"} <= cols and "tau1" not in cols else "tau"
    except OSError:
        pass
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

def iter_csv(header, data, rows: int = 8192):
    """CSV text in pieces of ``rows`` rows: the header line, then the rows of ``data``
    (N, len(header)) as shortest round-trip decimals. Checks shape and finiteness first."""
    data = np.asarray(data, dtype=float)
    if data.ndim != 2 or data.shape[1] != len(header):
        raise ValueError(f"data must have shape (N, {len(header)}), got {data.shape}")
    finite = np.isfinite(data).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise ValueError(f"refusing to write non-finite values (row {row + 1}: {data[row].tolist()})")
    yield ",".join(header) + "\n"
    for a in range(0, len(data), rows):
        block = (data[a:a + rows] + 0.0).tolist()           # + 0.0: no "-0.0"
        yield "".join(",".join(map(repr, row)) + "\n" for row in block)


def format_csv(header, data) -> str:
    """CSV text: one header line, then the rows of ``data`` (N, len(header)) as shortest
    round-trip decimals."""
    return "".join(iter_csv(header, data))


def write_csv(path: str | os.PathLike, header, data) -> Path:
    """Write ``data`` under ``header`` atomically, a few thousand rows at a time (memory: one
    piece of text, not the whole file; see :func:`iter_csv`)."""
    pieces = iter_csv(header, data)
    next_piece = next(pieces)          # shape and finiteness checked before the file is touched
    return atomic_write_chunks(path, _chain(next_piece, pieces))


def _chain(first, rest):
    yield first
    yield from rest


def write_trajectory(path: str | os.PathLike, traj: Trajectory) -> Path:
    """Write a :class:`~delta_dynamics.motion.trajectories.Trajectory` as ``t,x,y,z,xd,...,zdd``."""
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
