"""Timed motions as joint-space knots for a piecewise-quintic follower (the hardware node's plans).

A time-optimal timing has a constant path acceleration s_ddot between its gridpoints and jumps
at them (bang-bang), so the joint accelerations jump there too. Samples taken at uniform times
straddle the jumps, and a quintic (or cubic) interpolation between them overshoots the
acceleration limit by up to 20 % (nt_robot's 25/305/25 mm cycle at 1 ms). :func:`joint_knots`
puts the knots at the gridpoints instead, with the acceleration on each side of every knot:
between two knots the motion q(s(t)) is smooth, and the quintic with q, q_dot and the one-sided
q_ddot at both ends (:func:`~delta_dynamics.common.polynomials.hermite5`) follows it to
O(h^6) over intervals h of about 1 ms. A :class:`~delta_dynamics.motion.sampled.Dwell` is one
segment at rest.

q = IK(X), q_dot = J X_dot, q_ddot = J X_ddot + J_dot X_dot with X = X(s), X_dot = X' s_dot,
X_ddot = X' s_ddot + X'' s_dot^2.

>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.motion.path import door_path
>>> from delta_dynamics.motion.timing import retime_path
>>> m = model_for("nt_robot")
>>> leg = retime_path(m, door_path([-0.15, 0, -0.8], [0.15, 0, -0.8]))
>>> k = joint_knots([leg, Dwell(tuple(leg.path.position(leg.path.breakpoints[-1])), 0.05)])
>>> bool(abs(k.t[-1] - leg.duration - 0.05) < 1e-12), len(k.t) == len(leg.t) + 1
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import joint_state
from delta_dynamics.common.polynomials import hermite5
from delta_dynamics.motion.sampled import Dwell
from delta_dynamics.motion.timing import Timing


@dataclass(frozen=True)
class Knots:
    """Joint knots of a timed motion: times ``t`` (K,) s from its start; ``q``, ``qd`` (K, 3);
    ``qdd_in`` (K, 3) the acceleration arriving at each knot (from the left; 0 at the first),
    ``qdd_out`` (K, 3) the one leaving it (to the right; 0 at the last); the kind's units."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd_in: np.ndarray
    qdd_out: np.ndarray

    @property
    def duration(self) -> float:
        """The motion's duration (s)."""
        return float(self.t[-1])

    def coefficients(self) -> np.ndarray:
        """(K-1, 6, 3) quintic coefficients per segment (c0..c5, lowest power first, in
        u = t - t_k): q, q_dot and the one-sided q_ddot at both ends."""
        T = np.diff(self.t)[:, None]
        c = hermite5(T, self.q[:-1], self.qd[:-1], self.qdd_out[:-1], self.q[1:], self.qd[1:], self.qdd_in[1:])
        return np.moveaxis(c, 0, 1)


def _move_knots(model, tm: Timing):
    s = tm.s + tm.path.breakpoints[0]
    X, X1, X2 = tm.path.evaluate(s)
    sd = tm.sd.copy()
    sd[0] = sd[-1] = 0.0
    Xd = X1 * sd[:, None]
    u_in = np.concatenate(([0.0], tm.u))
    u_out = np.concatenate((tm.u, [0.0]))
    q, qd, a_in = joint_state(model, X, Xd, X1 * u_in[:, None] + X2 * (sd * sd)[:, None])
    _, _, a_out = joint_state(model, X, Xd, X1 * u_out[:, None] + X2 * (sd * sd)[:, None])
    a_in[0] = 0.0
    a_out[-1] = 0.0
    return tm.t - tm.t[0], q, qd, a_in, a_out


def joint_knots(pieces, model=None) -> Knots:
    """The :class:`Knots` of ``pieces`` (:class:`~delta_dynamics.motion.timing.Timing` moves
    and :class:`~delta_dynamics.motion.sampled.Dwell` rests, in order, each starting where the
    one before ends; module docstring), for ``model`` (default: the first move's). Consecutive
    pieces share their knot. ValueError for no move and no model, or a rest of no length
    only."""
    pieces = list(pieces)
    if model is None:
        moves = [p for p in pieces if isinstance(p, Timing)]
        if not moves:
            raise ValueError("joint_knots: no move and no model")
        model = moves[0].model
    t, q, qd, a_in, a_out = [], [], [], [], []
    start = 0.0
    for p in pieces:
        if isinstance(p, Dwell):
            if p.duration <= 0:
                continue
            qp, _, _ = joint_state(model, np.asarray(p.point, dtype=float)[None], np.zeros((1, 3)), np.zeros((1, 3)))
            z = np.zeros((2, 3))
            parts = (np.array([0.0, p.duration]), np.vstack((qp, qp)), z, z, z)
        else:
            parts = _move_knots(model, p)
        first = 1 if t else 0                   # the knot shared with the piece before
        if t:
            a_out[-1] = np.vstack((a_out[-1][:-1], parts[4][:1]))     # leaving it: this piece's
        t.append(start + parts[0][first:])
        q.append(parts[1][first:])
        qd.append(parts[2][first:])
        a_in.append(parts[3][first:])
        a_out.append(parts[4][first:])
        start += float(parts[0][-1])
    if not t:
        raise ValueError("joint_knots: nothing to follow (no move, rests of no length)")
    return Knots(np.concatenate(t), np.vstack(q), np.vstack(qd), np.vstack(a_in), np.vstack(a_out))
