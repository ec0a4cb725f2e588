"""The collision reaction ``retract``, without ROS: the path the robot just travelled
(:class:`PathRing`, recorded by the control loop while it follows a plan or a stream) and the
slow motion back along it (:class:`Retract`, built once by :func:`plan_retract` when a
collision is detected); ``docs/monitoring.md``.

**Recording** (the loop's one-sample path, only with ``collision_reaction: retract``): the
setpoint's joint position (the commanded path) is kept when a joint moved more than
:data:`STEP` (rad, or m for a carriage) since the last point kept, in a ring of :data:`RING`
points (a dwell adds nothing; the oldest point goes first). A hold (no plan or stream
followed) empties it: a collision while holding has no path to go back along.

**Planning** (once, at the collision): the ring's points from the newest back, their platform
positions X_k by forward kinematics (a chunk at a time, as many as the distance needs) and
the measured platform position X_c. The path back starts at the measured joint position q_c,
goes to the point of the recorded path nearest X_c (its projection on the nearest segment of
the recent path: the setpoint ran ahead of the blocked robot) and from there back along the
recorded path by ``distance`` m of platform arc length, or to the oldest point kept (a
collision right after a motion started retracts what there is). Every point but the first is
clipped into the position limits in force.

**Timing**: the joint path is piecewise linear between its points, parametrised by the
platform arc length s (0 to L); s(t) = L (10 u^3 - 15 u^4 + 6 u^5), u = (t - t0) / T, from rest
to rest, with T the shortest that keeps the platform at most :data:`SPEED` (peak s_dot =
1.875 L / T) and each joint i at most :data:`SHARE` of its velocity and acceleration limits
(|dq_i/ds| <= g_i on the path: g_i 1.875 L / T <= SHARE v_i, g_i 5.774 L / T^2 <= SHARE a_i), at
least :data:`MIN_DURATION`; then :data:`SETTLE` s holding the end before the loop stops.

>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.algorithms import forward_kinematics
>>> m = model_for("nt_robot")
>>> ring = PathRing()
>>> for k in range(200):                       # a joint-space motion, 1 mrad per cycle
...     ring.add(np.array([0.2, 0.2, 0.2]) + 0.001 * k)
>>> lim = m.robot.limits
>>> r = plan_retract(m, ring, ring.points()[0], 0.0, 0.005, [p[0] for p in lim.position],
...                  [p[1] for p in lim.position], lim.velocity, lim.acceleration)
>>> round(r.along * 1e3, 3), r.duration > MIN_DURATION
(5.0, True)
>>> X = forward_kinematics(m, np.array([r.sample(0.0).q, r.sample(r.end).q]))
>>> round(float(np.linalg.norm(X[1] - X[0])) * 1e3, 2)      # a straight path: 5 mm from where it was
5.0
>>> plan_retract(m, PathRing(), [0.2, 0.2, 0.2], 0.0, 0.005, [-1] * 3, [1] * 3, [1] * 3, [1] * 3) is None
True
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.algorithms import forward_kinematics
from delta_hardware.joint_plan import Setpoint

#: rad (m on a linear robot): a setpoint is kept when a joint moved more than this since the last kept
STEP = 1e-5
#: points kept (4096 x 3 floats: the last few seconds of fast motion, or >= 8 mm of a slow one)
RING = 4096
#: m/s: the retract's peak platform speed
SPEED = 0.02
#: of each joint's velocity and acceleration limits, at most, during the retract
SHARE = 0.1
#: s: the shortest retract
MIN_DURATION = 0.1
#: s the end is held (the robot settles on it) before the latched stop
SETTLE = 0.1
#: m: a recorded path shorter than this is no path (the robot was at rest): the loop just stops
MIN_PATH = 1e-5
#: m: the bounds of ``retract_distance``
DISTANCE_MIN, DISTANCE_MAX = 0.0005, 0.05
#: m: the default of ``retract_distance``
DISTANCE_DEFAULT = 0.005
#: the collision reactions (``collision_reaction``)
REACTIONS = ("stop", "retract")


def check_distance(value) -> float:
    """``value`` (m) as a float when it is a number in [:data:`DISTANCE_MIN`, :data:`DISTANCE_MAX`];
    ValueError naming the rule otherwise.

    >>> check_distance(0.005)
    0.005
    >>> check_distance(0.5)
    Traceback (most recent call last):
    ...
    ValueError: retract_distance must be a number in [0.0005, 0.05] m, got 0.5
    """
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not DISTANCE_MIN <= value <= DISTANCE_MAX):
        raise ValueError(f"retract_distance must be a number in [{DISTANCE_MIN:g}, {DISTANCE_MAX:g}] m, got {value!r}")
    return float(value)


def check_reaction(value) -> str:
    """``value`` when it is one of :data:`REACTIONS`; ValueError naming them otherwise.

    >>> check_reaction("retract")
    'retract'
    """
    if value not in REACTIONS:
        raise ValueError(f"collision_reaction must be one of {', '.join(REACTIONS)}, got {value!r}")
    return value


class PathRing:
    """The recent commanded joint path: up to ``size`` points (module docstring). The loop
    thread calls :meth:`add` and :meth:`clear`; :meth:`points` reads it (on a collision)."""

    def __init__(self, size: int = RING, step: float = STEP):
        self.buf = np.zeros((size, 3))
        self.size, self.step = size, float(step)
        self.n = 0                              # points added since the last clear
        self._last = None                       # the last point kept, floats

    def clear(self) -> None:
        """Forget the path (a hold, an activation)."""
        self.n = 0
        self._last = None

    def add(self, q) -> None:
        """The setpoint ``q`` (3 joint positions) of this cycle: kept when a joint moved more than
        ``step`` since the last point kept."""
        a, b, c = q.tolist() if hasattr(q, "tolist") else q
        last, s = self._last, self.step
        if last is not None and abs(a - last[0]) <= s and abs(b - last[1]) <= s and abs(c - last[2]) <= s:
            return
        self._last = (a, b, c)
        row = self.buf[self.n % self.size]
        row[0], row[1], row[2] = a, b, c
        self.n += 1

    def points(self, count: int | None = None) -> np.ndarray:
        """The newest ``count`` points kept (all when None), newest first, shape (k, 3)."""
        k = min(self.n, self.size) if count is None else min(self.n, self.size, int(count))
        idx = (self.n - 1 - np.arange(k)) % self.size
        return self.buf[idx].copy()


class Retract:
    """The motion back along a joint path ``Q`` (K, 3) whose platform arc lengths are ``S`` (K,),
    from rest at ``start`` (s) to rest after ``duration`` s, then held :data:`SETTLE` s (module
    docstring). ``along``: m of the recorded path it goes back (the report's figure)."""

    def __init__(self, Q, S, start: float, duration: float, along: float):
        self.Q, self.S = np.asarray(Q, dtype=float), np.asarray(S, dtype=float)
        self.length = float(self.S[-1])
        self.grad = np.diff(self.Q, axis=0) / np.diff(self.S)[:, None]        # dq/ds per segment
        self.start, self.duration, self.along = float(start), float(duration), float(along)

    @property
    def end(self) -> float:
        """The time (s) the motion reaches the end of the path."""
        return self.start + self.duration

    def done(self, t: float) -> bool:
        """Whether at ``t`` (s) the motion has ended and the end was held :data:`SETTLE` s."""
        return t >= self.end + SETTLE

    def delay(self, dt: float) -> None:
        """Shift the motion ``dt`` s later (the drives stood still)."""
        self.start += dt

    def sample(self, t: float) -> Setpoint:
        """The setpoint at ``t`` (s): q(s(t)), q_dot = dq/ds s_dot, q_ddot = dq/ds s_ddot."""
        u = min(max((t - self.start) / self.duration, 0.0), 1.0)
        L, T = self.length, self.duration
        s = L * u * u * u * (10.0 + u * (-15.0 + 6.0 * u))
        sd = L / T * 30.0 * u * u * (1.0 - u) * (1.0 - u)
        sdd = L / (T * T) * 60.0 * u * (1.0 - u) * (1.0 - 2.0 * u)
        k = min(max(int(np.searchsorted(self.S, s, side="right")) - 1, 0), len(self.S) - 2)
        g = self.grad[k]
        return Setpoint(self.Q[k] + g * (s - self.S[k]), g * sd, g * sdd)


def _arc(X) -> np.ndarray:
    """Cumulative arc length (m) along the points ``X`` (K, 3), 0 at the first."""
    return np.concatenate(([0.0], np.cumsum(np.linalg.norm(np.diff(X, axis=0), axis=1))))


def plan_retract(model, ring: PathRing, q_now, now: float, distance: float, lo, hi, v_max, a_max) -> Retract | None:
    """The motion back along ``ring``'s path by ``distance`` m from the measured joint position
    ``q_now`` at time ``now`` (s), within the position limits ``lo``, ``hi`` and a share of the
    velocity and acceleration limits ``v_max``, ``a_max`` (module docstring); None when the path
    is shorter than :data:`MIN_PATH` (nothing to go back along). Raises what the kinematics raise."""
    q_now = np.asarray(q_now, dtype=float)
    X_now = forward_kinematics(model, q_now[None])[0]
    count = 32
    while True:                                                   # as many of the newest points as needed
        P = ring.points(count)
        if len(P) == 0:
            return None
        X = forward_kinematics(model, P)
        S = _arc(X)
        near = 2.0 * float(np.linalg.norm(X_now - X[0])) + MIN_PATH
        if S[-1] >= near + distance or len(P) >= min(ring.n, ring.size):
            break
        count *= 4
    if S[-1] < MIN_PATH:
        return None
    # the point of the recent path (segments starting within `near` of the newest) nearest the robot
    A, B = X[:-1], X[1:]
    AB = B - A
    w = np.einsum("ij,ij->i", X_now - A, AB) / np.maximum(np.einsum("ij,ij->i", AB, AB), 1e-30)
    w = np.clip(w, 0.0, 1.0)
    dist = np.linalg.norm(A + w[:, None] * AB - X_now, axis=1)
    dist[S[:-1] > near] = np.inf
    j = int(np.argmin(dist))
    s_p = S[j] + w[j] * (S[j + 1] - S[j])
    s_t = min(s_p + distance, S[-1])
    q_p = P[j] + w[j] * (P[j + 1] - P[j])
    inner = (S > s_p) & (S < s_t)
    k = int(np.searchsorted(S, s_t, side="left"))                 # the segment (k - 1, k) holds the target
    k = min(max(k, 1), len(S) - 1)
    f = (s_t - S[k - 1]) / max(S[k] - S[k - 1], 1e-30)
    q_t = P[k - 1] + f * (P[k] - P[k - 1])
    Q = np.vstack((q_now, q_p, P[inner], q_t))
    Q[1:] = np.clip(Q[1:], np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))
    S_path = _arc(forward_kinematics(model, Q))
    keep = np.concatenate(([True], np.diff(S_path) > 1e-9))      # no segment of zero length
    Q, S_path = Q[keep], S_path[keep]
    if len(Q) < 2:
        return None
    L = float(S_path[-1])
    g = np.abs(np.diff(Q, axis=0) / np.diff(S_path)[:, None]).max(axis=0)      # max |dq_i/ds|
    v, a = SHARE * np.asarray(v_max, dtype=float), SHARE * np.asarray(a_max, dtype=float)
    T = max(MIN_DURATION, 1.875 * L / SPEED, float(np.max(1.875 * g * L / v)),
            float(np.max(np.sqrt(5.774 * g * L / a))))
    return Retract(Q, S_path, now, T, s_t - s_p)
