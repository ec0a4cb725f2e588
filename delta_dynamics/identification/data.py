"""Measured joint data in: CSV files and rosbag2 bags, checks, resampling, differentiation.

Sources
-------
* CSV (:func:`read_csv`): a header line, then one sample per line. Required columns
  ``t,q1,q2,q3,tau1,tau2,tau3`` (s, rad, N m at the arm); optional ``qd1,qd2,qd3`` (rad/s)
  and ``qdd1,qdd2,qdd3`` (rad/s^2), used instead of differentiating when present. Column
  order is free, other columns are ignored, lines starting with ``#`` are comments. A linear
  Delta's file has carriage positions (m, m/s, m/s^2) and forces ``f1,f2,f3`` (N) instead
  of ``tau1..3`` (``docs/conventions.md``).
* rosbag2 (:func:`read_bag`): a bag directory (``metadata.yaml``) or a single ``.db3`` /
  ``.mcap`` file, read with ``rosbags`` (no ROS install needed). Messages of type
  ``sensor_msgs/msg/JointState`` on one topic; joints are matched by the robot file's
  ``joint_names`` (order free, extra joints ignored); time is the header stamp (or the bag's
  receive time); effort is the arm torque (the carriage force on a linear Delta), or the
  motor current (then tau = current * torque_constant * gear_ratio from the robot file; for a
  linear Delta gear_ratio is motor rad per metre, so this is the carriage force in N).

Preprocessing (:func:`preprocess`, options :class:`Preprocessing`)
------------------------------------------------------------------
1. Samples whose time is not later than every earlier sample (duplicates, time going
   backwards) are dropped and reported (or rejected with ``strict_time``).
2. A step longer than ``gap_factor`` times the median step splits the data into segments;
   each segment is treated on its own.
3. A segment whose steps jitter by more than ``jitter_tol`` (relative) is resampled onto a
   uniform grid (positions: cubic spline; torques, velocities: linear).
4. Derivatives: ``central`` differences (Kim et al.'s way): q_d(k) = (q(k+1) - q(k-1)) / 2h,
   q_dd(k) = (q(k+1) - 2 q(k) + q(k-1)) / h^2; or ``filter``: the positions are first
   low-passed with a zero-phase Butterworth filter (``scipy.signal.sosfiltfilt``, order
   ``order``, ``cutoff`` Hz), then differentiated as above.
5. Parallel filtering (Gautier 1997; with ``filter`` and ``parallel_filter``): when the
   regressor is built (:func:`.pipeline.build_problem`) its columns *and* the torques pass
   through the same zero-phase filter, so filter(tau) = filter(Y) pi holds exactly for
   constant pi. Filtering only the torques would smear the Coulomb steps that the regressor
   keeps sharp and bias the friction estimates.
6. ``trim`` samples are dropped at both ends of each segment after that (edge effects of the
   filters and of the differences; default 2 fs / cutoff, or 1 for plain central
   differences), then every ``decimate``-th sample is kept. Segments shorter than
   ``min_segment`` samples are dropped.
"""
from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from delta_core.atomic_file import atomic_write_text
from delta_core.paths import why_missing
from delta_core.text_input import TextInputError, data_lines, field_counts_equal, iter_line_blocks
from delta_dynamics.kinds import joint_units
from delta_dynamics.limits import MAX_SAMPLES

from . import IdentificationError
from .bag import open_joint_states, typestore

REQUIRED_COLUMNS = ("t", "q1", "q2", "q3", "tau1", "tau2", "tau3")
#: The effort columns of each kind: torques of a rotary Delta, forces of a linear one.
EFFORT_COLUMNS = {"tau": ("tau1", "tau2", "tau3"), "f": ("f1", "f2", "f3")}
VELOCITY_COLUMNS = ("qd1", "qd2", "qd3")
ACCELERATION_COLUMNS = ("qdd1", "qdd2", "qdd3")
BAG_SUFFIXES = (".db3", ".mcap")
JOINT_STATE = "sensor_msgs/msg/JointState"
#: Joint positions may exceed the robot file's limits by this much (rad) before
#: :func:`check_joint_limits` refuses them (a position controller's overshoot at a limit).
LIMIT_TOLERANCE = 0.01


@dataclass
class JointData:
    """Raw samples: time (N,), positions, torques (N, 3), optional velocities/accelerations.

    ``unit`` names a sample in messages ("line" for CSV, "message" for bags) and
    ``first`` is the number of sample 0 (CSV: its line number).
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
    lines: np.ndarray | None = None     # CSV: the line number of every sample

    def __len__(self) -> int:
        return len(self.t)

    def where(self, k: int) -> str:
        """Where sample ``k`` came from ("line 12", "message 3"), for messages."""
        if self.lines is not None:
            return f"{self.unit} {int(self.lines[int(k)])}"
        return f"{self.unit} {int(k) + self.first}"


@dataclass
class Prepared:
    """Differentiated samples on uniform grids, segments concatenated, *not yet trimmed*.

    ``segments`` are (start, stop) index ranges; :meth:`keep` gives the indices that
    survive trimming and decimation. ``sos`` is the parallel filter (None: none).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    segments: list
    dt: float
    source: str = ""
    notes: list = field(default_factory=list)
    sos: np.ndarray | None = None
    trim: int = 1
    decimate: int = 1

    def __len__(self) -> int:
        return len(self.t)

    def keep(self) -> np.ndarray:
        """Indices of the samples used after trimming each segment and decimating."""
        return np.concatenate([np.arange(a + self.trim, b - self.trim, self.decimate)
                               for a, b in self.segments])

    def filtered(self, arr) -> np.ndarray:
        """``arr`` (first axis: samples) through the parallel filter, segment by segment."""
        if self.sos is None:
            return arr
        # scipy is heavy (seconds on a loaded machine): loaded by this path only
        from scipy.signal import sosfiltfilt
        out = np.empty_like(arr)
        for a, b in self.segments:
            out[a:b] = sosfiltfilt(self.sos, arr[a:b], axis=0, padlen=min(b - a - 1, 3 * (2 * len(self.sos) + 1)))
        return out


@dataclass
class Preprocessing:
    """Options of :func:`preprocess` (see the module docstring)."""

    derivative: str = "filter"      # 'filter' | 'central'
    cutoff: float = 20.0            # Hz, low-pass cutoff for 'filter'
    order: int = 4                  # Butterworth order (applied forward and backward)
    parallel_filter: bool = True    # filter regressor columns and torques alike (with 'filter')
    resample: str = "auto"          # 'auto' | 'always' | 'never'
    rate: float | None = None       # Hz of the resampling grid (default 1 / median step)
    jitter_tol: float = 0.05        # relative step deviation that makes 'auto' resample
    gap_factor: float = 5.0         # a step > gap_factor * median step splits the data
    trim: int | None = None         # samples cut at each segment end (None: automatic)
    min_segment: int = 50           # shorter segments are dropped
    min_samples: int = 100          # fewer usable samples in all is an error
    min_duration: float = 1.0       # s; less usable time in all is an error
    decimate: int = 1               # keep every n-th sample after filtering
    strict_time: bool = False       # duplicate / backwards timestamps are errors

    def check(self):
        """Refuse options outside their documented ranges (IdentificationError naming one)."""
        def need(ok, text):
            if not ok:
                raise IdentificationError(text)

        need(self.derivative in ("filter", "central"),
             f"derivative must be 'filter' or 'central', got {self.derivative!r}")
        need(self.resample in ("auto", "always", "never"),
             f"resample must be 'auto', 'always' or 'never', got {self.resample!r}")
        need(_finite(self.cutoff) and self.cutoff > 0, f"filter cutoff must be > 0 Hz, got {self.cutoff}")
        need(_int(self.order) and 1 <= self.order <= 10, f"filter order must be 1..10, got {self.order}")
        need(_int(self.decimate) and 1 <= self.decimate <= MAX_DECIMATE,
             f"decimate must be 1..{MAX_DECIMATE}, got {self.decimate}")
        need(_finite(self.gap_factor) and self.gap_factor > 1, f"gap factor must be > 1, got {self.gap_factor}")
        need(self.rate is None or (_finite(self.rate) and 0 < self.rate <= MAX_RESAMPLE_RATE),
             f"resampling rate must be > 0 and <= {MAX_RESAMPLE_RATE:g} Hz, got {self.rate}")
        need(self.trim is None or (_int(self.trim) and 0 <= self.trim <= MAX_SAMPLES),
             f"trim must be 0..{MAX_SAMPLES} samples, got {self.trim}")
        need(_finite(self.jitter_tol) and self.jitter_tol >= 0, f"jitter tolerance must be >= 0, got {self.jitter_tol}")
        need(_int(self.min_segment) and self.min_segment >= 1, f"min_segment must be >= 1, got {self.min_segment}")
        need(_int(self.min_samples) and self.min_samples >= 1, f"min_samples must be >= 1, got {self.min_samples}")
        need(_finite(self.min_duration) and self.min_duration >= 0,
             f"min_duration must be >= 0 s, got {self.min_duration}")


#: Largest --decimate.
MAX_DECIMATE = 1000
#: Highest resampling rate (Hz); the resampled grid is bounded by MAX_SAMPLES as well.
MAX_RESAMPLE_RATE = 1e6


def _finite(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


# ----------------------------------------------------------------------------- CSV

def _missing(path) -> IdentificationError:
    return IdentificationError(why_missing(path, "a file"))


def read_csv(path: str | os.PathLike, max_rows: int = MAX_SAMPLES, effort_column: str | None = None) -> JointData:
    """Read a joint-data CSV file (format in the module docstring). ``effort_column``: ``"tau"``
    (torques, a rotary Delta's) or ``"f"`` (forces, a linear Delta's) to require one kind of
    effort columns; None takes whichever the file has.

    The file is read a block of lines at a time and each block parsed by numpy's C parser
    (exact messages from a Python pass over a block numpy refuses), so memory stays near
    twice the parsed arrays; at most ``max_rows`` samples
    (:data:`~delta_dynamics.limits.MAX_SAMPLES`), lines of at most 64 kB, UTF-8 text.
    """
    path = Path(path)
    if not path.exists():
        raise _missing(path)
    if path.is_dir():
        raise IdentificationError(f"{path}: a directory, not a CSV file")
    if effort_column not in (None, "tau", "f"):
        raise IdentificationError(f"effort columns must be 'tau' or 'f', got {effort_column!r}")
    reader = CsvReader(path, max_rows, effort_column)
    try:
        for first, block in iter_line_blocks(path, what="a CSV file"):
            reader.add_block(first, block)
    except TextInputError as e:
        raise IdentificationError(str(e)) from None
    except OSError as e:
        raise IdentificationError(f"{path}: cannot read: {e.strerror or e}") from None
    if reader.header is None:
        raise IdentificationError(f"{path}: empty file (expected a header line "
                                  f"'{','.join(REQUIRED_COLUMNS)}' and samples)")
    if not reader.rows:
        raise IdentificationError(f"{path}: no samples after the header")
    col = {h: j for j, h in enumerate(reader.used)}
    blocks = reader.blocks

    def cols(names):
        if not all(c in col for c in names):
            return None
        idx = [col[c] for c in names]
        return np.concatenate([b[:, idx] for b in blocks])

    qd, qdd = cols(VELOCITY_COLUMNS), cols(ACCELERATION_COLUMNS)
    if qdd is not None and qd is None:
        raise IdentificationError(f"{path}: accelerations qdd1..3 given without velocities qd1..3")
    data = JointData(t=cols(("t",))[:, 0], q=cols(("q1", "q2", "q3")), tau=cols(EFFORT_COLUMNS[reader.effort]),
                     qd=qd, qdd=qdd, source=str(path), unit="line", lines=np.concatenate(reader.lines))
    blocks.clear()
    return data


class CsvReader:
    """:func:`read_csv`'s state: the header, then blocks of parsed rows (used columns only)."""

    def __init__(self, path, max_rows, effort=None):
        self.path, self.max_rows = path, max_rows
        self.limit_name = "MAX_SAMPLES in delta_dynamics/limits.py"
        self.effort = effort            # "tau" or "f" (None: from the header)
        self.header = None
        self.used: list = []            # column names kept, in header order
        self.idx: list = []             # their indices in the header
        self.blocks: list = []
        self.lines: list = []
        self.rows = 0

    def _set_header(self, lineno, s):
        path = self.path
        header = [h.strip().lower() for h in s.split(",")]
        eff = self.effort
        if eff is None:
            eff = "f" if all(c in header for c in EFFORT_COLUMNS["f"]) and "tau1" not in header else "tau"
        self.effort = eff
        required = REQUIRED_COLUMNS[:4] + EFFORT_COLUMNS[eff]
        missing = [c for c in required if c not in header]
        if missing:
            shown = s if len(s) <= 200 else s[:200] + "..."
            other = "f" if eff == "tau" else "tau"
            hint = ""
            if all(c in header for c in EFFORT_COLUMNS[other]):
                hint = (f"; the file has {other}1..3, the efforts of a {'linear' if other == 'f' else 'rotary'} "
                        f"Delta, but the robot is {'rotary' if eff == 'tau' else 'linear'} (is this the right "
                        "robot file?)")
            raise IdentificationError(f"{path}: line {lineno}: header lacks column(s) {', '.join(missing)} "
                                      f"(need {','.join(required)}, optional qd1..3, qdd1..3; "
                                      f"got {shown!r}){hint}")
        if len(set(header)) != len(header):
            raise IdentificationError(f"{path}: line {lineno}: duplicate column names in the header")
        self.header = header
        wanted = set(required + VELOCITY_COLUMNS + ACCELERATION_COLUMNS)
        self.idx = [j for j, h in enumerate(header) if h in wanted]
        self.used = [header[j] for j in self.idx]

    def add_block(self, first, block):
        """Parse one block of lines (the header with the first) into the columns read so far."""
        rows, nums = data_lines(first, block)
        if rows and self.header is None:
            self._set_header(nums[0], rows[0].strip())
            rows, nums = rows[1:], nums[1:]
        if not rows:
            return
        if self.rows + len(rows) > self.max_rows:
            k = self.max_rows - self.rows
            raise IdentificationError(f"{self.path}: line {nums[k]}: more than {self.max_rows} samples (the "
                                      f"limit, {self.limit_name}): split the recording or decimate it")
        ncol = len(self.header)
        arr = None
        if field_counts_equal(rows, ncol):
            try:
                arr = np.loadtxt(rows, delimiter=",", usecols=self.idx, ndmin=2, dtype=float,
                                 comments=None, quotechar=None)
            except ValueError:
                arr = None
        if arr is None or arr.shape != (len(rows), len(self.idx)):
            arr = self._parse_slowly(rows, nums)
        bad = ~np.isfinite(arr)
        if bad.any():
            k, j = np.argwhere(bad)[0]
            raise IdentificationError(f"{self.path}: line {nums[k]}: column {self.used[j]} is {arr[k, j]} "
                                      "(every value must be a finite number)")
        self.blocks.append(arr)
        self.lines.append(np.arange(nums.start, nums.stop) if isinstance(nums, range)
                          else np.asarray(nums, dtype=np.int64))
        self.rows += len(rows)

    def _parse_slowly(self, rows, nums):
        path, ncol = self.path, len(self.header)
        out = np.empty((len(rows), len(self.idx)))
        for r, (s, lineno) in enumerate(zip(rows, nums)):
            fields = s.split(",")
            if len(fields) != ncol:
                raise IdentificationError(f"{path}: line {lineno}: {len(fields)} values, the header has {ncol}")
            for j, k in enumerate(self.idx):
                f = fields[k].strip()
                try:
                    out[r, j] = float(f)
                except ValueError:
                    shown = repr(f) if len(f) <= 40 else f"{f[:40]!r}... ({len(f)} characters)"
                    raise IdentificationError(f"{path}: line {lineno}: column {self.header[k]}: "
                                              f"not a number: {shown}") from None
        return out


def write_csv(path, t, q, tau, qd=None, qdd=None, effort_column: str = "tau") -> Path:
    """Write joint data in the format :func:`read_csv` reads (atomically); ``effort_column="f"``
    names the efforts ``f1,f2,f3`` (a linear Delta's forces)."""
    cols = [np.asarray(t, float)[:, None], np.asarray(q, float), np.asarray(tau, float)]
    head = list(REQUIRED_COLUMNS[:4] + EFFORT_COLUMNS[effort_column])
    if qd is not None:
        cols.append(np.asarray(qd, float))
        head += VELOCITY_COLUMNS
    if qdd is not None:
        cols.append(np.asarray(qdd, float))
        head += ACCELERATION_COLUMNS
    arr = np.hstack(cols)
    body = "\n".join(",".join(f"{v:.12g}" for v in row) for row in arr.tolist())
    return atomic_write_text(path, ",".join(head) + "\n" + body + "\n")


# ----------------------------------------------------------------------------- rosbag2

def is_bag(path) -> bool:
    """True for a rosbag2 directory or a .db3 / .mcap file."""
    p = Path(path)
    return p.suffix in BAG_SUFFIXES or (p.is_dir() and os.path.lexists(p / "metadata.yaml"))


def _typestore():
    return typestore()


def read_bag(path, joint_names, topic: str = "/joint_states", effort: str = "torque",
             torque_factor: float = 1.0, stamp: str = "header", progress=None) -> JointData:
    """Read ``sensor_msgs/msg/JointState`` messages on ``topic`` from a rosbag2 bag.

    ``joint_names``: the robot file's three names (matched by name in each message).
    ``effort``: ``"torque"`` (N m at the arm) or ``"current"`` (A; multiplied by
    ``torque_factor`` = torque_constant * gear_ratio). ``stamp``: ``"header"`` (the message's
    header stamp; the bag's receive time where the stamp is zero) or ``"receive"``.
    Messages are decoded a block at a time (:mod:`.bag`); ``progress(done, total)`` is called
    after each block.
    """

    path = Path(path)
    if not path.exists():
        raise _missing(path)
    check_bag_options(effort, stamp)
    with open_joint_states(path, topic, joint_names) as bag:
        n = bag.count
        if n > MAX_SAMPLES:
            raise IdentificationError(f"{path}: topic {topic} has {n} messages, more than the {MAX_SAMPLES} "
                                      "samples one run may use (MAX_SAMPLES in delta_dynamics/limits.py): "
                                      "split the recording (ros2 bag convert) or record shorter runs")
        parts = []
        k = 0
        for block in bag.blocks(max_messages=MAX_SAMPLES,
                                limit_text=", the most one run may use (MAX_SAMPLES in "
                                           "delta_dynamics/limits.py): split the recording"):
            parts.append(block)
            k += len(block[0])
            if progress is not None:
                progress(k, max(n, k))
    if k == 0:
        raise IdentificationError(f"{path}: topic {topic} has no messages")
    t_ns = bag_times(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), stamp)
    q = np.concatenate([p[2] for p in parts])
    tau = np.concatenate([p[3] for p in parts])
    parts.clear()
    t = (t_ns - t_ns[0]).astype(float) * 1e-9
    if effort == "current":
        tau = tau * float(torque_factor)
    data = JointData(t=t, q=q, tau=tau, source=f"{path} {topic}", unit=f"{topic} message", first=0)
    data.notes.append(bag_note(k, path, topic, effort, torque_factor, stamp))
    return data


def check_bag_options(effort, stamp):
    """Raise :class:`IdentificationError` unless ``effort`` is ``"torque"`` or ``"current"`` and
    ``stamp`` is ``"header"`` or ``"receive"`` (the bag readers' options)."""
    if effort not in ("torque", "current"):
        raise IdentificationError(f"effort must be 'torque' or 'current', got {effort!r}")
    if stamp not in ("header", "receive"):
        raise IdentificationError(f"stamp must be 'header' or 'receive', got {stamp!r}")


def bag_times(header_ns, receive_ns, stamp: str) -> np.ndarray:
    """The time base of bag messages (ns): the header stamps, the receive time where a stamp
    is zero (``stamp="header"``), or the receive times (``"receive"``)."""
    if stamp == "receive":
        return receive_ns
    return np.where(header_ns != 0, header_ns, receive_ns)


def bag_note(k, path, topic, effort, torque_factor, stamp) -> str:
    """The note saying what was read from a bag: ``k`` messages of ``topic``, the effort's
    meaning (``torque_factor`` N m/A for currents) and the time base."""
    return (f"read {k} JointState messages from {path} topic {topic} "
            f"(effort as {effort}{'' if effort == 'torque' else f' x {torque_factor:g} N m/A'}, "
            f"time from the {'header stamp' if stamp == 'header' else 'bag receive time'})")




def write_bag(path, t, q, effort, joint_names, topic: str = "/joint_states",
              storage: str = "sqlite3", velocity=None, extra_joints: int = 0, t0_ns: int = 1_700_000_000_000_000_000):
    """Write a rosbag2 bag of JointState messages (for tests and synthetic data sets).

    ``storage``: ``"sqlite3"`` or ``"mcap"``. ``extra_joints`` adds that many unrelated joints
    in front of the robot's (to check matching by name). Stamps: ``t0_ns`` + t.
    """
    # rosbags: loaded for bags only
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = _typestore()
    JointState = store.types[JOINT_STATE]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    names = [f"extra_joint_{i}" for i in range(extra_joints)] + list(joint_names)
    with Writer(path, version=9, storage_plugin=plugin) as w:
        conn = w.add_connection(topic, JOINT_STATE, typestore=store)
        for k in range(len(t)):
            ns = int(t0_ns + round(float(t[k]) * 1e9))
            pad = np.zeros(extra_joints)
            pos = np.concatenate((pad, q[k]))
            eff = np.concatenate((pad, effort[k])) if effort is not None else np.zeros(0)
            vel = np.concatenate((pad, velocity[k])) if velocity is not None else np.zeros(0)
            msg = JointState(header=Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000),
                                           frame_id=""),
                             name=names, position=pos, velocity=vel, effort=eff)
            w.write(conn, ns, store.serialize_cdr(msg, JOINT_STATE))
    return Path(path)


def read_joint_data(path, robot=None, topic: str = "/joint_states", effort: str = "torque",
                    stamp: str = "header") -> JointData:
    """A CSV file or a bag, by its name (bags need ``robot`` for joint names and motor data)."""
    p = Path(path)
    if not p.exists():
        raise _missing(p)
    if is_bag(p):
        if robot is None:
            raise IdentificationError(f"{p}: reading a bag needs the robot file (joint names)")
        m = robot.mass.motor
        return read_bag(p, robot.joint_names, topic=topic, effort=effort,
                        torque_factor=m.torque_constant * m.gear_ratio, stamp=stamp)
    if p.is_dir():
        raise IdentificationError(f"{p}: a directory without metadata.yaml (not a rosbag2 bag)")
    if effort != "torque":
        raise IdentificationError(f"{p}: CSV files hold torques (tau1..3) or forces (f1..3); "
                                  "--effort current applies to bags")
    col = None
    if robot is not None:
        col = joint_units(robot)["effort_column"]
    return read_csv(p, effort_column=col)


# ----------------------------------------------------------------------------- preprocessing

def _check_finite(data: JointData):
    for name, arr in (("t", data.t), ("q", data.q), ("tau", data.tau), ("qd", data.qd), ("qdd", data.qdd)):
        if arr is None:
            continue
        a = np.asarray(arr, dtype=float)
        bad = ~np.isfinite(a)
        if bad.any():
            k = int(np.argwhere(bad)[0][0])
            col = "" if a.ndim == 1 else f"{name}{int(np.argwhere(bad)[0][1]) + 1}"
            raise IdentificationError(f"{data.source}: {data.where(k)}: {col or name} is "
                                      f"{a.reshape(len(a), -1)[k].tolist()} (NaN or infinite samples cannot be used)")


def _check_efforts(data: JointData):
    """Refuse a joint whose effort never changes: no torque signal was recorded (all zero, a
    disconnected channel, a wrong column), and a fit would make that joint's parameters
    whatever explains a constant."""
    tau = np.asarray(data.tau, dtype=float)
    for j in range(3):
        col = tau[:, j]
        if np.ptp(col) <= 1e-12 * max(1.0, float(np.abs(col).max())):
            why = "all zero" if not col.any() else f"constant at {col[0]:.6g}"
            raise IdentificationError(
                f"{data.source}: the effort of joint {j + 1} (tau{j + 1}) is {why} over all {len(col)} "
                f"samples ({data.where(0)} to {data.where(len(col) - 1)}): no torque was recorded. "
                "Check the effort column or topic, and --effort torque|current")


def check_joint_limits(data: JointData, robot, tolerance: float = LIMIT_TOLERANCE) -> None:
    """Refuse samples outside the robot file's joint position limits (beyond ``tolerance`` rad,
    or m on a linear Delta):
    the data belong to another robot, or are in degrees, or the limits are wrong. Names the
    first such sample and counts them."""
    q = np.asarray(data.q, dtype=float)
    lo = np.array([p[0] for p in robot.limits.position]) - tolerance
    hi = np.array([p[1] for p in robot.limits.position]) + tolerance
    out = (q < lo) | (q > hi)
    if out.any():
        k, j = (int(v) for v in np.argwhere(out)[0])
        lim = robot.limits.position[j]
        u = joint_units(robot)
        unit, what = u["position"], ("radians" if u["position"] == "rad" else "metres")
        raise IdentificationError(
            f"{data.source}: {data.where(k)}: q{j + 1} = {q[k, j]:.6g} {unit} is outside {u['joint']} {j + 1}'s "
            f"limits [{lim[0]:g}, {lim[1]:g}] {unit} of robot {robot.name} ({int(out.any(axis=1).sum())} of "
            f"{len(q)} samples outside, tolerance {tolerance:g} {unit}): is this the right robot file, "
            f"and are the positions in {what}?")


def _second_difference(x, h):
    """(q_d, q_dd) by central differences on a uniform grid; the two end samples are copies."""
    qd = np.empty_like(x)
    qdd = np.empty_like(x)
    qd[1:-1] = (x[2:] - x[:-2]) / (2.0 * h)
    qdd[1:-1] = (x[2:] - 2.0 * x[1:-1] + x[:-2]) / (h * h)
    qd[0], qd[-1] = qd[1], qd[-2]
    qdd[0], qdd[-1] = qdd[1], qdd[-2]
    return qd, qdd


def _central(x, h):
    d = np.empty_like(x)
    d[1:-1] = (x[2:] - x[:-2]) / (2.0 * h)
    d[0], d[-1] = d[1], d[-2]
    return d


@dataclass
class SegmentPlan:
    """One segment of :class:`TimePlan`: kept samples [a, b), resampled onto ``grid`` points or not."""

    a: int
    b: int
    resample: bool
    grid: int            # samples of the segment after resampling (b - a if not resampled)


@dataclass
class TimePlan:
    """What :func:`preprocess` does to a time base, decided from the times alone (steps 1-3 and
    the filter of the module docstring), so that the in-memory and the streamed paths
    (:mod:`.stream`) preprocess the same samples the same way."""

    idx: np.ndarray | None        # raw indices of the samples in time order (None: all)
    t: np.ndarray                 # their times
    h: float                      # s, step of the (resampling) grid
    segments: list                # SegmentPlan of every segment kept
    sos: np.ndarray | None        # the low-pass ('filter') or None ('central')
    trim: int
    decimate: int
    parallel: bool                # regressor and torques through ``sos`` too
    notes: list
    usable: int                   # samples left after trimming and decimation

    def kept(self, seg: SegmentPlan) -> range:
        """Indices (within the segment's grid) of the samples used after trim and decimation."""
        return range(self.trim, seg.grid - self.trim, self.decimate)


def plan_time(t, opts: Preprocessing, where, src: str, notes: list, max_samples: int = MAX_SAMPLES) -> TimePlan:
    """Steps 1-3 of the module docstring and the filter design, on the times ``t`` (s) alone.

    ``where(k)`` names raw sample k in messages; ``max_samples`` bounds a resampled grid.
    """
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.signal import butter

    t = np.asarray(t, dtype=float)
    n = len(t)
    # 1. time base: keep a sample only if it is later than every earlier one
    keep = np.ones(n, bool)
    keep[1:] = t[1:] > np.maximum.accumulate(t)[:-1]
    idx = None
    if not keep.all():
        dt = np.diff(t)
        dup = np.flatnonzero(dt == 0) + 1
        back = np.flatnonzero(dt < 0) + 1
        parts = []
        if len(dup):
            parts.append(f"{len(dup)} duplicate timestamp(s) (first at {where(dup[0])}, t = {t[dup[0]]:.9g} s)")
        if len(back):
            parts.append(f"{len(back)} timestamp(s) going backwards (first at {where(back[0])}, "
                         f"t = {t[back[0]]:.9g} s after {t[back[0] - 1]:.9g} s)")
        msg = f"{src}: " + " and ".join(parts)
        if opts.strict_time:
            raise IdentificationError(msg)
        notes.append(f"{msg}: {int((~keep).sum())} sample(s) not in time order dropped")
        idx = np.flatnonzero(keep)
        t = t[idx]
    del keep
    if len(t) < opts.min_samples:
        raise IdentificationError(f"{src}: too few samples in time order: {len(t)} (need at least {opts.min_samples})")
    steps = np.diff(t)
    med = float(np.median(steps))
    h = 1.0 / opts.rate if opts.rate else med
    # 2. gaps
    cuts = np.flatnonzero(steps > opts.gap_factor * med) + 1
    bounds = [0, *cuts.tolist(), len(t)]
    if len(cuts):
        g = cuts[0]
        notes.append(f"{len(cuts)} gap(s) in the time stamps (first {steps[g - 1]:.4g} s at "
                     f"{where(idx[g] if idx is not None else g)}, median step {med:.4g} s): data split into "
                     f"{len(cuts) + 1} segments")
    if opts.derivative == "filter":
        fs = 1.0 / h
        if opts.cutoff >= 0.5 * fs:
            raise IdentificationError(f"{src}: filter cutoff {opts.cutoff:g} Hz is not below the Nyquist "
                                      f"frequency {0.5 * fs:g} Hz of the {fs:g} Hz data")
        sos = butter(opts.order, opts.cutoff, fs=fs, output="sos")
        trim = opts.trim if opts.trim is not None else max(2, int(math.ceil(2.0 * fs / opts.cutoff)))
    else:
        sos = None
        trim = opts.trim if opts.trim is not None else 1
    need = max(opts.min_segment, 2 * trim + 3)
    segments, dropped, resampled, start, covered = [], 0, 0, 0, 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b - a < need:
            dropped += 1
            continue
        ts = t[a:b]
        jitter = float(np.max(np.abs(steps[a:b - 1] - h)) / h)
        if opts.resample == "always" or (opts.resample == "auto" and jitter > opts.jitter_tol):
            grid = math.floor((ts[-1] - ts[0]) / h + 1e-9) + 1
            if grid + start > max_samples:
                raise IdentificationError(
                    f"{src}: resampling {ts[-1] - ts[0]:.6g} s at {1.0 / h:.6g} Hz gives more than "
                    f"{max_samples} samples (MAX_SAMPLES in delta_dynamics/limits.py): "
                    "lower --rate or --resample never")
            segments.append(SegmentPlan(a, b, True, grid))
            covered += float((ts[0] + h * (grid - 1)) - ts[0])
            resampled += 1
        else:
            segments.append(SegmentPlan(a, b, False, b - a))
            covered += float(ts[-1] - ts[0])
        start += segments[-1].grid
    if resampled:
        notes.append(f"{resampled} segment(s) resampled to a uniform {1.0 / h:.6g} Hz grid "
                     f"(time steps jittered by more than {100 * opts.jitter_tol:g} %)")
    if dropped:
        notes.append(f"{dropped} segment(s) shorter than {need} samples dropped")
    usable = sum(len(range(trim, s.grid - trim, opts.decimate)) for s in segments)
    if usable < opts.min_samples:
        raise IdentificationError(f"{src}: too few usable samples after preprocessing: {usable} "
                                  f"(need at least {opts.min_samples}; {len(t)} samples in "
                                  f"{len(bounds) - 1} segment(s), {trim} trimmed at each segment end)")
    if covered < opts.min_duration:
        raise IdentificationError(f"{src}: too short: the usable data cover {covered:.4g} s (need at least "
                                  f"{opts.min_duration:g} s of motion: record a longer run, e.g. a few "
                                  "periods of 'delta-identify excite')")
    parallel = sos is not None and opts.parallel_filter
    if opts.derivative == "filter":
        notes.append(f"velocities and accelerations: zero-phase Butterworth low-pass (order {opts.order}, "
                     f"{opts.cutoff:g} Hz) and central differences"
                     + ("; regressor and torques through the same filter (parallel filtering)" if parallel else ""))
    else:
        notes.append("velocities and accelerations: central differences (no filtering)")
    return TimePlan(idx=idx, t=t, h=h, segments=segments, sos=sos, trim=trim, decimate=opts.decimate,
                    parallel=parallel, notes=notes, usable=usable)


def segment_samples(plan: TimePlan, seg: SegmentPlan, ts, qs, taus, qds=None, qdds=None, lo: int = 0,
                    hi: int | None = None):
    """Steps 3-4 of the module docstring on (part of) one segment: (t, q, qd, qdd, tau) on the
    segment's grid points [lo, hi) (default: all).

    ``ts, qs, taus, qds, qdds``: the segment's kept samples (all, or a window of them around
    the grid points asked for). The in-memory path passes whole segments; the streamed one windows that reach
    far enough beyond [lo, hi) for the filter's and the spline's end effects to die out.
    At a window edge that is not a segment end the results are those of the whole segment
    to rounding; at a segment end they are the same computation.
    """
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.interpolate import CubicSpline
    from scipy.signal import sosfiltfilt

    n_seg = seg.b - seg.a
    hi = seg.grid if hi is None else hi
    h = plan.h
    if seg.resample:
        t0 = plan.t[seg.a]
        tn = t0 + h * np.arange(lo, hi)
        qs = CubicSpline(ts, qs, axis=0)(tn)
        taus = np.column_stack([np.interp(tn, ts, taus[:, j]) for j in range(3)])
        if qds is not None:
            qds = np.column_stack([np.interp(tn, ts, qds[:, j]) for j in range(3)])
        if qdds is not None:
            qdds = np.column_stack([np.interp(tn, ts, qdds[:, j]) for j in range(3)])
        ts = tn
        hs = ((t0 + h * (seg.grid - 1)) - t0) / (seg.grid - 1)        # as the grid's ends give it
    else:
        hs = (plan.t[seg.b - 1] - plan.t[seg.a]) / (n_seg - 1)
    if plan.sos is not None:
        padlen = min(seg.grid - 1, 3 * (2 * len(plan.sos) + 1))
        qs_f = sosfiltfilt(plan.sos, qs, axis=0, padlen=padlen)
        if qds is not None:
            qds = sosfiltfilt(plan.sos, qds, axis=0, padlen=padlen)
        if qdds is not None:
            qdds = sosfiltfilt(plan.sos, qdds, axis=0, padlen=padlen)
    else:
        qs_f = qs
    if qds is None:
        qds, qdds = _second_difference(qs_f, hs)
    elif qdds is None:
        qdds = _central(qds, hs)
    return ts, qs_f, qds, qdds, taus


def preprocess(data: JointData, opts: Preprocessing | None = None) -> Prepared:
    """Checked, segmented, resampled, differentiated (and filtered) samples; see the module docstring."""
    opts = opts or Preprocessing()
    opts.check()
    src = data.source
    notes = list(data.notes)
    n = len(data.t)
    if data.q.shape != (n, 3) or data.tau.shape != (n, 3):
        raise IdentificationError(f"{src}: positions and torques must be (N, 3) like the time (N = {n})")
    _check_finite(data)
    if n < opts.min_samples:
        raise IdentificationError(f"{src}: too few samples: {n} (need at least {opts.min_samples})")
    _check_efforts(data)
    plan = plan_time(data.t, opts, data.where, src, notes)
    idx = plan.idx
    pick = (lambda a: a) if idx is None else (lambda a: a[idx])
    q, tau = pick(data.q), pick(data.tau)
    qd_in = pick(data.qd) if data.qd is not None else None
    qdd_in = pick(data.qdd) if data.qdd is not None else None
    out = {k: [] for k in ("t", "q", "qd", "qdd", "tau")}
    segments, start = [], 0
    for seg in plan.segments:
        a, b = seg.a, seg.b
        arrs = segment_samples(plan, seg, plan.t[a:b], q[a:b], tau[a:b],
                               qd_in[a:b] if qd_in is not None else None,
                               qdd_in[a:b] if qdd_in is not None else None)
        for key, arr in zip(("t", "q", "qd", "qdd", "tau"), arrs):
            out[key].append(arr)
        segments.append((start, start + seg.grid))
        start += seg.grid
    cat = {k: np.concatenate(v) for k, v in out.items()}
    return Prepared(t=cat["t"], q=cat["q"], qd=cat["qd"], qdd=cat["qdd"], tau=cat["tau"],
                    segments=segments, dt=plan.h, source=src, notes=notes,
                    sos=plan.sos if plan.parallel else None, trim=plan.trim, decimate=opts.decimate)
