"""What the control loop follows, without scipy or ROS: :class:`Setpoint` and :class:`JointPlan`
(built and validated by :mod:`delta_hardware.trajectory_plan`, which the control-loop process
does not need to import), and :class:`TrajectoryRejected`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class TrajectoryRejected(ValueError):
    """A trajectory that must not be executed; the message says why."""


@dataclass(frozen=True)
class Setpoint:
    """A joint setpoint of the three axes: position ``q``, velocity ``qd`` and acceleration ``qdd``
    (rad, rad/s, rad/s^2; m, m/s, m/s^2 for a linear robot's carriages)."""
    q: np.ndarray        # rad (m for a linear robot's carriages)
    qd: np.ndarray       # rad/s (m/s)
    qdd: np.ndarray      # rad/s^2 (m/s^2)

    @staticmethod
    def hold(q) -> "Setpoint":
        """At rest at ``q``: zero velocity and acceleration."""
        z = np.zeros(3)
        return Setpoint(np.asarray(q, dtype=float).copy(), z, z.copy())


class JointPlan:
    """Piecewise polynomial q(t) on [start_time, end_time] (absolute seconds); before the
    start it holds the first knot, after the end the last knot at rest."""

    def __init__(self, start_time: float, times, coeffs):
        self.start_time = float(start_time)
        self.times = np.asarray(times, dtype=float)            # (K,) relative, times[0] = 0
        self.coeffs = np.asarray(coeffs, dtype=float)          # (K-1, 6, 3): c0..c5 per joint
        self.end_time = self.start_time + float(self.times[-1])
        #: the plan starts when the loop takes it ("now": a trajectory without header.stamp); one
        #: that reaches the loop after its start time is shifted to the loop's time then
        self.on_receipt = False

    def sample(self, t: float) -> Setpoint:
        """The setpoint at absolute time ``t`` (s) from its quintic segment; before the start the first knot,
        after the end the last knot at rest."""
        s = t - self.start_time
        if s <= 0.0:
            k, u = 0, 0.0
        elif s >= self.times[-1]:
            k = len(self.times) - 2
            u = self.times[-1] - self.times[k]
            c = self.coeffs[k]
            q = ((((c[5] * u + c[4]) * u + c[3]) * u + c[2]) * u + c[1]) * u + c[0]
            return Setpoint.hold(q)
        else:
            k = int(np.searchsorted(self.times, s, side="right")) - 1
            u = s - self.times[k]
        c = self.coeffs[k]
        q = ((((c[5] * u + c[4]) * u + c[3]) * u + c[2]) * u + c[1]) * u + c[0]
        qd = (((5 * c[5] * u + 4 * c[4]) * u + 3 * c[3]) * u + 2 * c[2]) * u + c[1]
        qdd = ((20 * c[5] * u + 12 * c[4]) * u + 6 * c[3]) * u + 2 * c[2]
        return Setpoint(q, qd, qdd)

    def sample_many(self, ts):
        """(q, q_dot, q_ddot), each (N, 3), at the absolute times ``ts`` (vectorized)."""
        s = np.clip(np.asarray(ts, dtype=float) - self.start_time, 0.0, self.times[-1])
        k = np.clip(np.searchsorted(self.times, s, side="right") - 1, 0, len(self.times) - 2)
        u = (s - self.times[k])[:, None]
        c = self.coeffs[k]                                     # (N, 6, 3)
        q = ((((c[:, 5] * u + c[:, 4]) * u + c[:, 3]) * u + c[:, 2]) * u + c[:, 1]) * u + c[:, 0]
        qd = (((5 * c[:, 5] * u + 4 * c[:, 4]) * u + 3 * c[:, 3]) * u + 2 * c[:, 2]) * u + c[:, 1]
        qdd = ((20 * c[:, 5] * u + 12 * c[:, 4]) * u + 6 * c[:, 3]) * u + 2 * c[:, 2]
        after = (np.asarray(ts, dtype=float) - self.start_time >= self.times[-1])[:, None]
        return q, np.where(after, 0.0, qd), np.where(after, 0.0, qdd)

    def done(self, t: float) -> bool:
        """Whether the absolute time ``t`` (s) has reached the plan's end."""
        return t >= self.end_time

    def delay(self, dt: float) -> None:
        """Shift the whole plan ``dt`` s later (the drives stood still for ``dt``: the plan waits)."""
        self.start_time += dt
        self.end_time += dt
