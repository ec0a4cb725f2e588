"""Timed motions sampled at uniform times, with the joint values, efforts and the limit report.

:func:`sample` turns a sequence of pieces (:class:`~delta_dynamics.motion.timing.Timing` moves
and :class:`Dwell` rests) into a :class:`Motion`: platform position, velocity and
acceleration, joint positions, velocities, accelerations (q = IK(X), q_dot = J X_dot,
q_ddot = J X_ddot + J_dot X_dot) and the model's efforts, every ``dt`` (1 ms) from 0 to the
first sample at or after the end, where the platform rests at the end point. Each move keeps
its exact time-optimal timing (its start and end need not fall on a sample).

:class:`LimitReport` says which limit is active where: at each sample the ratio of every
joint's |velocity|, |acceleration| and |effort| to its limit; the largest names the limit
(joints within 0.5 % of it are named together), "active" when it is at least
:data:`ACTIVE` (a time-optimal timing touches a limit at nearly every instant; between two
limits, at a switch, none is).

>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.motion.path import door_path
>>> from delta_dynamics.motion.timing import retime_path
>>> m = model_for("nt_robot")
>>> leg = retime_path(m, door_path([-0.15, 0, -0.8], [0.15, 0, -0.8]))
>>> mo = sample([leg, Dwell(leg.path.position(leg.path.length), 0.05)])
>>> mo.header()[:4], float(mo.t[1]), bool(mo.report.max_ratio <= 1.01)
(('t', 'x', 'y', 'z'), 0.001, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import inverse_dynamics, joint_state, joint_units
from delta_dynamics.data_files.joint_data import joint_columns
from delta_dynamics.data_files.trajectory import TRAJECTORY_COLUMNS
from delta_dynamics.limits import MAX_SAMPLES
from delta_dynamics.motion.timing import Limits, Timing

#: A limit is active at a sample where its ratio to the limit is at least this.
ACTIVE = 0.97
#: Joints whose ratios are within this of the largest are named together.
TIE = 0.005
KINDS = ("velocity", "acceleration", "effort")


@dataclass(frozen=True)
class Dwell:
    """The platform at rest at ``point`` (m) for ``duration`` (s)."""

    point: tuple
    duration: float

    def __post_init__(self):
        p = np.asarray(self.point, dtype=float)
        if p.shape != (3,) or not np.isfinite(p).all():
            raise ValueError(f"dwell point must be 3 finite numbers (m), got {self.point!r}")
        if not (math.isfinite(self.duration) and self.duration >= 0):
            raise ValueError(f"dwell duration must be a finite number >= 0 s, got {self.duration!r}")
        object.__setattr__(self, "point", tuple(float(v) for v in p))


@dataclass(frozen=True)
class LimitReport:
    """Which limit is active where (module docstring).

    ``segments``: (t0, t1, label) in time order, consecutive samples with the same label
    merged (labels: ``"<velocity|acceleration|torque|force> <joint>[, <joint>]"``, ``"none"``
    below :data:`ACTIVE`, ``"rest"`` while the platform rests); ``share``: label -> share of
    the moving time; ``max_ratio``: label of each kind and joint -> largest ratio to its limit;
    ``limits``: the limits (velocity, acceleration, effort arrays)."""

    segments: tuple
    share: dict
    max_ratio_by_limit: dict
    limits: object
    units: dict

    @property
    def max_ratio(self) -> float:
        """The largest share of any limit reached anywhere (1 = at the limit)."""
        return max(self.max_ratio_by_limit.values()) if self.max_ratio_by_limit else 0.0

    def merged(self, min_duration: float = 0.0) -> list:
        """The segments with those shorter than ``min_duration`` s given to the segment before
        them (switches between two limits last a sample or two), equal neighbours joined."""
        out = []
        for t0, t1, label in self.segments:
            if out and (t1 - t0 < min_duration or out[-1][2] == label) and label != "rest" and out[-1][2] != "rest":
                out[-1][1] = t1
            else:
                out.append([t0, t1, label])
        joined = []
        for seg in out:
            if joined and joined[-1][2] == seg[2]:
                joined[-1][1] = seg[1]
            else:
                joined.append(seg)
        return [tuple(s) for s in joined]

    def lines(self, min_duration: float = 0.0, max_lines: int | None = None) -> list:
        """The segments (:meth:`merged` with ``min_duration``) as text lines
        ``"   0.000-   0.052 s  torque arm_2_joint"``."""
        out = [f"{t0:8.3f}-{t1:8.3f} s  {label}" for t0, t1, label in self.merged(min_duration)]
        if max_lines is not None and len(out) > max_lines:
            out = out[:max_lines] + [f"... ({len(out) - max_lines} more)"]
        return out

    def summary(self) -> str:
        """One line: the share of the moving time each limit is active."""
        parts = [f"{label} {100 * v:.0f} %" for label, v in sorted(self.share.items(), key=lambda kv: -kv[1])
                 if v >= 0.005]
        return ", ".join(parts)


@dataclass(frozen=True)
class Motion:
    """A motion sampled every ``dt`` s: ``t`` (N,) s; platform ``X``, ``Xd``, ``Xdd`` (N, 3) m,
    m/s, m/s^2 in ``base_link``; joint ``q``, ``qd``, ``qdd`` and ``effort`` (N, 3) in the
    kind's units (:func:`~delta_dynamics.algorithms.joint_units`); ``duration`` (s) the exact
    end of the last piece (the last sample is at or after it); ``report``."""

    t: np.ndarray
    X: np.ndarray
    Xd: np.ndarray
    Xdd: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    effort: np.ndarray
    effort_column: str
    duration: float
    report: LimitReport

    def __len__(self) -> int:
        return len(self.t)

    def header(self) -> tuple:
        """CSV header: ``t,x,y,z,xd,yd,zd,xdd,ydd,zdd,q1..3,qd1..3,qdd1..3,tau1..3`` (``f1..3``
        for a linear Delta)."""
        return TRAJECTORY_COLUMNS + joint_columns(self.effort_column)[1:]

    def table(self) -> np.ndarray:
        """The samples as an (N, 22) array in :meth:`header` order."""
        return np.column_stack((self.t, self.X, self.Xd, self.Xdd, self.q, self.qd, self.qdd, self.effort))


def _duration(piece) -> float:
    return float(piece.duration)


def sample_count(pieces, dt: float = 1e-3) -> int:
    """Number of samples :func:`sample` makes for ``pieces`` at ``dt``."""
    total = sum(_duration(p) for p in pieces)
    return int(math.ceil(total / dt - 1e-9)) + 1


def sample(pieces, dt: float = 1e-3, model=None) -> Motion:
    """The :class:`Motion` of ``pieces`` (moves and :class:`Dwell` rests, in order), sampled
    every ``dt`` s (module docstring). The efforts are those of the first move's model (the
    model its timing keeps within the limits), or of ``model``. Raises ValueError for more
    than :data:`~delta_dynamics.limits.MAX_SAMPLES` samples or no move and no model."""
    pieces = list(pieces)
    moves = [p for p in pieces if isinstance(p, Timing)]
    if model is None:
        if not moves:
            raise ValueError("sample: no move and no model")
        model = moves[0].model
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"sample time must be > 0 s, got {dt}")
    n = sample_count(pieces, dt)
    if n > MAX_SAMPLES:
        raise ValueError(f"{sum(_duration(p) for p in pieces):.6g} s at {dt:g} s gives {n} samples, more than "
                         f"the {MAX_SAMPLES} a command may make (MAX_SAMPLES)")
    t = np.arange(n) * dt
    X = np.empty((n, 3))
    Xd = np.zeros((n, 3))
    Xdd = np.zeros((n, 3))
    moving = np.zeros(n, dtype=bool)
    start = 0.0
    for k, p in enumerate(pieces):
        end = start + _duration(p)
        last = k == len(pieces) - 1
        i0 = int(np.searchsorted(t, start, side="left"))
        i1 = n if last else int(np.searchsorted(t, end, side="left"))
        if i1 > i0:
            if isinstance(p, Timing):
                X[i0:i1], Xd[i0:i1], Xdd[i0:i1] = p.platform(t[i0:i1] - start)
                moving[i0:i1] = t[i0:i1] < end
            else:
                X[i0:i1] = p.point
        start = end
    # the last sample is the end, at rest (also where rounding put it a hair before the end)
    last = pieces[-1] if pieces else None
    if last is not None:
        X[-1] = last.point if isinstance(last, Dwell) else last.path.position(last.path.breakpoints[-1])
        Xd[-1] = Xdd[-1] = 0.0
        moving[-1] = False
    q, qd, qdd = joint_state(model, X, Xd, Xdd)
    effort = inverse_dynamics(model, X, Xd, Xdd)
    units = joint_units(model)
    lim = moves[0].limits if moves else None
    report = limit_report(model, t, qd, qdd, effort, moving, lim, dt)
    return Motion(t, X, Xd, Xdd, q, qd, qdd, effort, units["effort_column"], start, report)


def limit_report(model, t, qd, qdd, effort, moving, lim, dt: float) -> LimitReport:
    """The :class:`LimitReport` of sampled joint values against ``lim``
    (:class:`~delta_dynamics.motion.timing.Limits`; the robot file's limits if None)."""
    units = joint_units(model)
    if lim is None:
        lim = Limits.of(model)
    names = list(model.joint_names)
    kind_names = ("velocity", "acceleration", units["effort_name"])
    R = np.stack((np.abs(qd) / lim.velocity, np.abs(qdd) / lim.acceleration, np.abs(effort) / lim.effort), axis=1)
    max_ratio = {f"{kn} {names[j]}": float(R[:, k, j].max()) if len(R) else 0.0
                 for k, kn in enumerate(kind_names) for j in range(3)}
    flat = R.reshape(len(R), 9)
    best = flat.argmax(axis=1)
    top = flat[np.arange(len(flat)), best]
    kind = best // 3
    tied = R[np.arange(len(R)), kind, :] >= (top - TIE)[:, None]
    code = kind * 8 + (tied * (1, 2, 4)).sum(axis=1)
    code = np.where(moving, np.where(top >= ACTIVE, code, -1), -2)

    def label(c: int) -> str:
        if c == -2:
            return "rest"
        if c == -1:
            return "none"
        k, mask = divmod(c, 8)
        return f"{kind_names[k]} {', '.join(names[j] for j in range(3) if mask >> j & 1)}"

    cut = np.flatnonzero(np.diff(code)) + 1
    starts = np.concatenate(([0], cut)) if len(code) else np.empty(0, dtype=int)
    ends = np.concatenate((cut, [len(code)])) if len(code) else np.empty(0, dtype=int)
    segments = tuple((float(t[a]), float(t[min(b, len(t) - 1)] if b < len(t) else t[-1]), label(int(code[a])))
                     for a, b in zip(starts, ends))
    n_moving = max(int(moving.sum()), 1)
    values, counts = np.unique(code[moving], return_counts=True)
    share = {label(int(c)): float(k) / n_moving for c, k in zip(values, counts)}
    return LimitReport(segments, share, max_ratio, lim, units)
