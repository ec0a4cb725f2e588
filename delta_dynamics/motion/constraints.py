"""The joint limits along a path as TOPP-RA's linear constraints in (s_ddot, s_dot^2).

Along a path X(s) timed by s(t) (s_dot >= 0), with X' = dX/ds, X'' = d^2X/ds^2:

    X_dot = X' s_dot,   X_ddot = X' s_ddot + X'' s_dot^2
    q_dot = q' s_dot,   q_ddot = q' s_ddot + q'' s_dot^2          q' = J X',  q'' = J X'' + J_dot(X, X') X'

and the rigid-body efforts of the explicit model (Asadi eq. 39; Colombo eq. 14),
tau = J^-T (M X_ddot + C(X, X_dot) X_dot + G), are, since C(X, X_dot) X_dot is quadratic in X_dot,

    tau_rigid = a(s) s_ddot + b(s) s_dot^2 + c(s)
    c = ID(X, 0, 0),   a = ID(X, 0, X') - c,   b = ID(X, X', X'') - c

with ID the model's inverse dynamics without friction (:func:`path_coefficients`; three
vectorised calls, checked against finite differences in the tests). With u = s_ddot and
x = s_dot^2 (TOPP-RA's variables), joint velocity is a bound on x, joint acceleration and
the rigid efforts are linear in (u, x).

Friction is not. The explicit model's joint friction is
f(q_dot) = c_v q_dot + (c_c + (c_s - c_c) exp(-(q_dot/v_s)^2)) tanh(q_dot/eps): with
s_dot >= 0 its sign is that of q' (the direction of motion along the path) and its magnitude
is a function of x alone, |f| = F(x) = c_v |q'| sqrt(x) + ... . Where friction helps (the
effort brakes the motion) the constraint rigid - F(x) >= -limit (for q' > 0) is convex in
(u, x) because F's viscous and Coulomb part is concave; where it hurts, rigid + F(x) <= limit
is not. Both are replaced by linear rows that imply them for every x the timing can take,
0 <= x <= x_vel (the velocity-limit curve, which the timing keeps anyway), so every timing
that meets the rows meets the true limits (:func:`friction_bounds`, :func:`effort_rows`):

* helping side: the concave magnitude G(x) = c_v |q'| sqrt(x) + min(c_c, c_s) tanh(|q'|
  sqrt(x) / eps) is above its piecewise-linear interpolant on the nodes x_vel * (0, 1/16,
  1/4, 1), which is the minimum of its :data:`PIECES` secant lines: one row per secant
  (above a quarter of the velocity-limit speed the help is counted to within 6 % of itself;
  below, in proportion to x: the cost of few rows, which TOPP-RA pays for per gridpoint);
* hurting side: the viscous part by the tangent of sqrt(x) at a point x0,
  sqrt(x) <= (x + x0) / (2 sqrt(x0)) for every x (exact at x0, too high by
  (sqrt(x) - sqrt(x0))^2 / (2 sqrt(x0)) elsewhere), the Coulomb part by its full value, the
  Stribeck excess (c_s - c_c) exp(-(|q'| sqrt(x) / v_s)^2) (convex in x) by its
  piecewise-linear interpolant on the same nodes, the maximum of its secants: one row per
  secant.

:mod:`delta_dynamics.motion.timing` takes x0 from a first, coarse timing and repeats with x0
from the last timing while the tangent's excess where a row binds is above a tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import UnreachableError, inverse_dynamics, joint_state


@dataclass(frozen=True)
class PathCoefficients:
    """Joint and effort coefficients at the gridpoints s (each (N, 3) unless noted):
    platform X, X', X''; joint q, q', q''; efforts a, b, c (rigid body, no friction)."""

    s: np.ndarray          # (N,) m
    X: np.ndarray
    X1: np.ndarray
    X2: np.ndarray
    q: np.ndarray
    q1: np.ndarray
    q2: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray


def path_coefficients(model, path, s) -> PathCoefficients:
    """:class:`PathCoefficients` of ``path`` at the path parameters ``s`` ((N,), m).

    Cost per gridpoint: one path evaluation (X, X', X''), one :func:`joint_state` and three
    samples of :func:`inverse_dynamics` (one vectorised call; about 2 µs per point on
    nt_robot). Raises :class:`~delta_dynamics.algorithms.UnreachableError` (``index`` = the
    gridpoint) where the path leaves the workspace or meets a singularity.
    """
    s = np.asarray(s, dtype=float)
    n = len(s)
    X, X1, X2 = path.evaluate(s)
    q, q1, q2 = joint_state(model, X, X1, X2)
    zero = np.zeros_like(X)
    try:
        tau = inverse_dynamics(model, np.concatenate((X, X, X)), np.concatenate((zero, zero, X1)),
                               np.concatenate((zero, X1, X2)), friction=False)
    except UnreachableError as e:           # name the gridpoint, not the stacked sample
        e.index = int(getattr(e, "index", 0) or 0) % n
        raise
    c = tau[:n]
    a = tau[n:2 * n] - c
    b = tau[2 * n:] - c
    return PathCoefficients(s, X, X1, X2, q, q1, q2, a, b, c)


@dataclass(frozen=True)
class FrictionLaw:
    """The joint friction law of a model (per joint, the kind's effort units):
    f(v) = viscous v + (coulomb + (static - coulomb) exp(-(v/v_stribeck)^2)) tanh(v/eps)."""

    viscous: np.ndarray
    coulomb: np.ndarray
    static: np.ndarray
    v_stribeck: float
    eps: float

    @classmethod
    def of(cls, model) -> "FrictionLaw":
        """The friction law of ``model``'s parameters (static = Coulomb where there is none)."""
        p = model.params
        coulomb = np.asarray(p.coulomb, dtype=float)
        static = getattr(p, "static", None)
        static = coulomb.copy() if static is None else np.asarray(static, dtype=float)
        return cls(np.asarray(p.viscous, dtype=float), coulomb, static,
                   float(p.stribeck_velocity or 1.0), float(p.smoothing_velocity or 0.0))

    @property
    def zero(self) -> bool:
        """True when the law has no friction at all."""
        return not (np.any(self.viscous) or np.any(self.coulomb) or np.any(self.static))

    def magnitude(self, v) -> np.ndarray:
        """|f| at joint speeds |v| >= 0 (same shape as v, (..., 3))."""
        v = np.abs(v)
        sg = np.tanh(v / self.eps) if self.eps > 0 else (v > 0).astype(float)
        return self.viscous * v + (self.coulomb + (self.static - self.coulomb) *
                                   np.exp(-(v / self.v_stribeck) ** 2)) * sg


#: Secant pieces of the piecewise-linear friction bounds (rows per joint and side).
PIECES = 3
#: ... and where those leave more than a little of the help uncounted (large friction against
#: the effort limits), this many.
PIECES_FINE = 7


def _nodes(x_vel, pieces: int = PIECES):
    """(N, pieces + 1) nodes in x: x_vel * (0, 4^-(pieces-1), ..., 1/4, 1)."""
    frac = np.concatenate(([0.0], 4.0 ** -np.arange(pieces - 1, -1, -1)))
    return np.asarray(x_vel, dtype=float)[:, None] * frac


def _secants(f_nodes, x_nodes):
    """Slopes and intercepts (N, 3, PIECES) of the secants through consecutive nodes of a
    function with values f_nodes (N, 3, PIECES + 1) at x_nodes (N, PIECES + 1)."""
    dx = np.diff(x_nodes, axis=1)[:, None, :]
    slope = np.diff(f_nodes, axis=2) / np.where(dx > 0, dx, 1.0)
    return slope, f_nodes[..., :-1] - slope * x_nodes[:, None, :-1]


def friction_bounds(law: FrictionLaw, q1, x0, x_vel, pieces: int = PIECES):
    """Rows in x = s_dot^2 that bound the friction magnitude F(x) = |f(q' s_dot)| per gridpoint
    and joint for 0 <= x <= x_vel (module docstring): (up0, up1, lo0, lo1), each (N, 3, pieces),
    with

        min_k (lo0_k + lo1_k x)  <=  F(x)  <=  max_k (up0_k + up1_k x).

    ``q1`` (N, 3): q' at the gridpoints; ``x0`` (N,) > 0: the tangent point of the viscous
    bound; ``x_vel`` (N,) > 0: the largest x the timing may take there.
    """
    k = np.abs(q1)[:, :, None]                                        # joint speed per unit s_dot
    xn = _nodes(x_vel, pieces)                                        # (N, P + 1)
    vn = k * np.sqrt(xn)[:, None, :]                                  # joint speeds at the nodes
    moving = k > 0
    # above: viscous tangent at x0, Coulomb in full, Stribeck excess by its secants
    r0 = np.sqrt(np.asarray(x0, dtype=float))[:, None, None]
    excess = np.maximum(law.static - law.coulomb, 0.0)[None, :, None]
    s_up, i_up = _secants(excess * np.exp(-(vn / law.v_stribeck) ** 2), xn)
    up1 = law.viscous[None, :, None] * k / (2 * r0) + s_up
    up0 = law.viscous[None, :, None] * k * r0 / 2 + law.coulomb[None, :, None] + i_up
    # below: the secants of the concave viscous + min(c_c, c_s) tanh(.) magnitude
    cmin = np.minimum(law.coulomb, law.static)
    low = FrictionLaw(law.viscous, cmin, cmin, law.v_stribeck, law.eps)
    lo1, lo0 = _secants(_magnitude_nodes(low, vn), xn)
    zero = np.zeros_like(up0)
    return (np.where(moving, up0, zero), np.where(moving, up1, zero),
            np.where(moving, lo0, zero), np.where(moving, lo1, zero))


def _magnitude_nodes(law: FrictionLaw, vn):
    """F at joint speeds vn (N, 3, P + 1), per joint's coefficients."""
    c = {name: getattr(law, name)[None, :, None] for name in ("viscous", "coulomb", "static")}
    sg = np.tanh(vn / law.eps) if law.eps > 0 else (vn > 0).astype(float)
    return c["viscous"] * vn + (c["coulomb"] + (c["static"] - c["coulomb"]) *
                                np.exp(-(vn / law.v_stribeck) ** 2)) * sg


def tangent_excess(law: FrictionLaw, q1, x0, x) -> np.ndarray:
    """How much the viscous tangent at x0 overstates the viscous friction at x, per gridpoint
    and joint: c_v |q'| (sqrt(x) - sqrt(x0))^2 / (2 sqrt(x0))."""
    r0 = np.sqrt(np.asarray(x0, dtype=float))[:, None]
    r = np.sqrt(np.asarray(x, dtype=float))[:, None]
    return law.viscous * np.abs(q1) * (r - r0) ** 2 / (2 * r0)


def effort_rows(coef: PathCoefficients, law: FrictionLaw | None, x0, x_vel, pieces: int = PIECES):
    """(a, b_up, c_up, b_lo, c_lo): a (N, 3), the others (N, 3, pieces) (without friction
    (N, 3, 1)): for every (u, x) with 0 <= x <= x_vel that meets
    a u + b_up[..., k] x + c_up[..., k] <= limit and a u + b_lo[..., k] x + c_lo[..., k] >= -limit
    for every k, the effort (friction bounded by :func:`friction_bounds`; ``law`` None: no
    friction) is within the limits."""
    a, b, c = coef.a, coef.b[..., None], coef.c[..., None]
    if law is None or law.zero:
        return a, b, c, b, c
    up0, up1, lo0, lo1 = friction_bounds(law, coef.q1, x0, x_vel, pieces)
    sg = np.sign(coef.q1)[..., None]
    pos, neg = sg > 0, sg < 0
    # forward (q' > 0): tau = rigid + F, F between min_k lo and max_k up: the upper rows take
    # each up line, the lower rows each lo line; backward: tau = rigid - F, mirrored
    b_up = b + np.where(pos, up1, np.where(neg, -lo1, 0.0))
    c_up = c + np.where(pos, up0, np.where(neg, -lo0, 0.0))
    b_lo = b + np.where(pos, lo1, np.where(neg, -up1, 0.0))
    c_lo = c + np.where(pos, lo0, np.where(neg, -up0, 0.0))
    return a, b_up, c_up, b_lo, c_lo
