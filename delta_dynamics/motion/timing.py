"""Time-optimal timing of a platform path under the joint limits of the dynamic model (TOPP-RA).

:func:`retime_path` finds the fastest s(t) along a :class:`~delta_dynamics.motion.path.Path`,
from rest to rest, that keeps every joint within the robot file's ``limits.velocity``,
``limits.acceleration`` and effort limits (``limits.torque`` of a rotary Delta,
``limits.force`` of a linear one: ``limits.effort`` either way) times ``torque_scale``, with
the efforts of the model (the robot file's explicit model; friction included unless
``friction=False``). The optimisation is TOPP-RA (Pham & Pham 2018, the ``toppra`` package
with its ``seidel`` solver) on the constraints of :mod:`delta_dynamics.motion.constraints`,
evaluated at gridpoints along s with toppra's ``Interpolation`` discretisation (each
interval's constant s_ddot meets the constraints at both of its ends).

Gridpoints (:func:`gridpoints`): :data:`GRID_PER_METRE` per metre of path (at least
:data:`MIN_GRIDPOINTS`), placed so that half of them follow the joint-space curvature |q''(s)|
(denser in corner blends). After each solve the constraints are checked at the middle of
every interval (where the discretisation does not look); where a limit is exceeded by more
than :data:`MID_TOLERANCE` the grid is doubled and the path solved again.

Friction (:mod:`~delta_dynamics.motion.constraints`): it is not of TOPP-RA's form (its
viscous part is linear in s_dot, not in x = s_dot^2), so it enters as linear rows that bound it
for every x the timing can take (secants where it helps, the viscous tangent at a point x0
where it hurts). A first pass on every :data:`COARSE_STEP`-th gridpoint takes x0 at a quarter
of the velocity-limit curve; the next passes, on the whole grid, take x0 at the previous
timing, until another pass would move the tangent by less than :data:`FRICTION_SLACK` of the
effort limit where an effort limit binds (2 passes on the presets); where the secants leave
more than :data:`HELP_SLACK` of the limit of the friction's help uncounted (friction large
against the limits), with :data:`~delta_dynamics.motion.constraints.PIECES_FINE` secants
instead of :data:`~delta_dynamics.motion.constraints.PIECES`. Every pass's timing meets
the true limits (up to the discretisation). ``friction=False``, or a model without friction,
takes one pass.

The result (:class:`Timing`) maps t to (s, s_dot, s_ddot) exactly as TOPP-RA's solution
(constant s_ddot between gridpoints); :func:`delta_dynamics.motion.sampled.sample` turns
timings into a motion sampled every 1 ms with the joint values and efforts of the model and
the report of which limit is active where.

Cost per gridpoint and pass: about 2 µs for the model's coefficients (vectorised) and about
20-30 µs for TOPP-RA's stage-wise linear programs (a Python loop inside ``toppra``, idle
machine; it grows with the constraint rows: 12 without friction, 24 with); a 25/305/25 mm pick
leg has about 210 gridpoints and takes 2 passes (a coarse one and a fine one). Building the
path costs O(number of points) (scipy's spline) and nothing else depends on it.

>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.motion.path import door_path
>>> m = model_for("nt_robot")
>>> tm = retime_path(m, door_path([-0.15, 0, -0.8], [0.15, 0, -0.8]))
>>> 0.15 < tm.duration < 0.25, tm.passes >= 2
(True, True)
"""
from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass, replace

import numpy as np

from delta_dynamics.algorithms import (UnreachableError, check_joint_limits, inverse_dynamics, joint_state,
                                       joint_units, singularity_measure)
from delta_dynamics.motion.constraints import (PIECES, PIECES_FINE, FrictionLaw, effort_rows, friction_bounds,
                                               path_coefficients, tangent_excess)
from delta_dynamics.motion.path import spline_path

#: Below this inverse condition number of J a path point is a singularity: refused.
MIN_MEASURE = 1e-3
#: Gridpoints per metre of path, and the bounds on their number.
GRID_PER_METRE = 600.0
MIN_GRIDPOINTS = 150
MAX_GRIDPOINTS = 20_000
#: Share of the gridpoints placed along the joint-space curvature |q''| (the rest uniform in s).
CURVATURE_SHARE = 0.5
MAX_PASSES = 6
#: The first friction pass runs on every COARSE_STEP-th gridpoint.
COARSE_STEP = 4
#: Friction passes stop when another pass would move the viscous tangent by less than this
#: share of the effort limit where an effort limit binds.
FRICTION_SLACK = 2e-3
#: Where the secant rows leave more than this share of the effort limit of the friction's help
#: uncounted where an effort limit binds, the passes go on with PIECES_FINE secants.
HELP_SLACK = 0.01
#: A limit exceeded by more than this share in the middle of a grid interval doubles the grid.
MID_TOLERANCE = 0.005
MAX_REFINEMENTS = 3
#: Upper bound on x = s_dot^2 (m^2/s^2): 100 m/s along the path, beyond any Delta.
X_MAX = 1e4


class RetimeError(ValueError):
    """A path that cannot be timed within the limits; the message says where and why, ``s``
    (m from the path's start, or None) where on the path."""

    def __init__(self, message: str, s: float | None = None):
        super().__init__(message)
        self.s = s


@dataclass(frozen=True)
class Limits:
    """Joint limits a timing keeps, in the kind's units (rad/s, rad/s^2, N m or m/s, m/s^2,
    N): the robot file's limits times ``limit_scale``, the effort limit times ``torque_scale``
    too."""

    velocity: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray
    torque_scale: float = 1.0
    limit_scale: float = 1.0

    @classmethod
    def of(cls, model, torque_scale: float = 1.0, limit_scale: float = 1.0) -> "Limits":
        """The robot file's joint limits of ``model`` times ``limit_scale`` (every limit: a
        margin for a follower that interpolates between samples, e.g. the hardware node's
        plans), the effort limit times ``torque_scale`` too (each in (0, 1]; ValueError
        otherwise)."""
        for name, v in (("torque_scale", torque_scale), ("limit_scale", limit_scale)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 < v <= 1):
                raise ValueError(f"{name} must be in (0, 1], got {v!r}")
        lim = model.robot.limits
        return cls(limit_scale * np.asarray(lim.velocity, dtype=float),
                   limit_scale * np.asarray(lim.acceleration, dtype=float),
                   limit_scale * torque_scale * np.asarray(lim.effort, dtype=float), float(torque_scale),
                   float(limit_scale))


@dataclass(frozen=True)
class Timing:
    """s(t) from rest to rest along ``path``: at gridpoint i the path parameter ``s[i]`` (m,
    from the path's start), speed ``sd[i]`` (m/s) and time ``t[i]`` (s); s_ddot = ``u[i]``
    (m/s^2) is constant up to gridpoint i + 1. ``model`` is the model whose efforts it keeps
    within ``limits`` (without friction if ``friction`` is False); ``passes`` and
    ``refinements`` say how it was found, ``planning_time`` (s) how long that took."""

    path: object
    model: object
    s: np.ndarray
    sd: np.ndarray
    u: np.ndarray
    t: np.ndarray
    limits: Limits
    friction: bool
    passes: int
    refinements: int
    planning_time: float

    @property
    def duration(self) -> float:
        """Time from rest to rest (s)."""
        return float(self.t[-1])

    def state(self, t):
        """(s, s_dot, s_ddot) at times ``t`` ((N,) s): s from the path's start (m), m/s,
        m/s^2. Before 0 the start, after :attr:`duration` the end, at rest."""
        t = np.asarray(t, dtype=float)
        tc = np.clip(t, 0.0, self.t[-1])
        i = np.clip(np.searchsorted(self.t, tc, side="right") - 1, 0, len(self.u) - 1)
        h = tc - self.t[i]
        u = self.u[i]
        s = np.clip(self.s[i] + self.sd[i] * h + 0.5 * u * h * h, 0.0, self.s[-1])
        sd = np.maximum(self.sd[i] + u * h, 0.0)
        inside = (t >= 0.0) & (t < self.t[-1])
        return s, np.where(inside, sd, 0.0), np.where(inside, u, 0.0)

    def platform(self, t):
        """(X, X_dot, X_ddot) at times ``t``: X = X(s), X_dot = X' s_dot,
        X_ddot = X' s_ddot + X'' s_dot^2 (m, m/s, m/s^2; each (N, 3))."""
        s, sd, sdd = self.state(t)
        X, X1, X2 = self.path.evaluate(s + self.path.breakpoints[0])
        return X, X1 * sd[:, None], X1 * sdd[:, None] + X2 * (sd * sd)[:, None]


# ----------------------------------------------------------------------------- grid and checks

def gridpoints(model, path, n: int | None = None) -> np.ndarray:
    """``n`` + 1 gridpoints on [0, path.length] (default n: :data:`GRID_PER_METRE` per metre,
    within [:data:`MIN_GRIDPOINTS`, :data:`MAX_GRIDPOINTS`]): the share
    :data:`CURVATURE_SHARE` equidistributed along the integral of |q''(s)| (joint-space
    curvature, from 2n + 1 samples), the rest uniform in s. Raises :class:`RetimeError` where
    the path leaves the workspace (from those samples)."""
    if n is None:
        n = int(min(max(math.ceil(GRID_PER_METRE * path.length), MIN_GRIDPOINTS), MAX_GRIDPOINTS))
    f = np.linspace(0.0, path.length, 2 * n + 1)
    X, X1, X2 = path.evaluate(f + path.breakpoints[0])
    try:
        g = np.linalg.norm(joint_state(model, X, X1, X2)[2], axis=1)
    except UnreachableError as e:
        raise _unreachable(path, f, e) from None
    g = np.where(np.isfinite(g), g, 0.0)
    mean = g.mean()
    w = 1.0 + (CURVATURE_SHARE / (1 - CURVATURE_SHARE)) * (g / mean if mean > 0 else 0.0)
    M = np.concatenate(([0.0], np.cumsum(0.5 * (w[1:] + w[:-1]) * np.diff(f))))
    s = np.interp(np.linspace(0.0, M[-1], n + 1), M, f)
    s[0], s[-1] = 0.0, path.length
    knots = path.breakpoints[1:-1] - path.breakpoints[0]
    if 0 < len(knots) <= n // 4:
        # the path's third derivative jumps at its breakpoints: put them on the grid
        s = np.union1d(s, knots)
        gap = np.diff(s) > 1e-9 * path.length
        s = np.concatenate((s[:1], s[1:][gap]))
        s[-1] = path.length
    return s


def _unreachable(path, s, e) -> RetimeError:
    k = int(getattr(e, "index", 0) or 0)
    return RetimeError(f"path at s = {s[k]:.4g} m of {path.length:.4g} m is unreachable: "
                       f"{_strip_sample(str(e))}", float(s[k]))


def _strip_sample(msg: str) -> str:
    return re.sub(r" \(sample \d+\)", "", msg)


def _where(path, coef, k: int) -> str:
    X = coef.X[k]
    return (f"path at s = {coef.s[k]:.4g} m of {path.length:.4g} m, platform "
            f"({X[0]:.4g}, {X[1]:.4g}, {X[2]:.4g}) m")


def check_path(model, path, s, min_measure: float = MIN_MEASURE):
    """The path's :class:`~delta_dynamics.motion.constraints.PathCoefficients` at ``s`` (m
    from the path's start), or :class:`RetimeError` naming where the path is unreachable,
    leaves the joint position limits or meets a singularity (inverse condition number of J
    below ``min_measure``)."""
    try:
        coef = path_coefficients(model, path, s + path.breakpoints[0])
    except UnreachableError as e:
        raise _unreachable(path, s, e) from None
    coef = replace(coef, s=np.asarray(s, dtype=float))
    try:
        check_joint_limits(model, coef.q, coef.X)
    except UnreachableError as e:
        k = int(getattr(e, "index", 0) or 0)
        raise RetimeError(f"path at s = {s[k]:.4g} m of {path.length:.4g} m: {_strip_sample(str(e))}",
                          float(s[k])) from None
    meas = singularity_measure(model, coef.X)
    finite = np.all([np.isfinite(a).all(axis=1) for a in (coef.q1, coef.q2, coef.a, coef.b, coef.c)], axis=0)
    low = ~(meas >= min_measure) | ~finite
    if low.any():
        k = int(np.argmax(low))
        raise RetimeError(f"{_where(path, coef, k)} is at a singularity (inverse condition number of "
                          f"J {meas[k]:.2g} < {min_measure:g}): the joints cannot move the platform "
                          f"along the path there", float(s[k]))
    return coef


def _check_holding(model, path, coef, lim: Limits) -> None:
    """Refuse a path on which the effort limits cannot hold the platform at rest (friction
    can hold nothing at rest: the model's Coulomb term vanishes with the speed)."""
    over = ~(np.abs(coef.c) <= lim.effort)
    if over.any():
        k, j = (int(v) for v in np.argwhere(over)[0])
        u = joint_units(model)
        scale = (f" ({lim.torque_scale:g} x {lim.effort[j] / lim.torque_scale:.4g})"
                 if lim.torque_scale != 1 else "")
        raise RetimeError(f"{_where(path, coef, k)}: {model.joint_names[j]} needs {abs(coef.c[k, j]):.4g} "
                          f"{u['effort']} to hold the platform against gravity, more than its "
                          f"{u['effort_name']} limit {lim.effort[j]:.4g} {u['effort']}{scale}: the path "
                          f"cannot be followed within the limits", float(coef.s[k]))


# ----------------------------------------------------------------------------- one TOPP-RA pass

def _import_toppra():
    """Import toppra's modules (optional heavy dependency: imported on first use)."""
    import toppra.algorithm  # noqa: F401
    import toppra.constraint  # noqa: F401


class _ToppraPath:
    """The geometric path as toppra sees it (only its interval is used: the constraints
    come precomputed)."""

    dof = 3

    def __init__(self, length: float):
        self.path_interval = np.array([0.0, length])

    def __call__(self, s, order=0):                      # pragma: no cover - never called
        raise NotImplementedError


def _constraint(params, identical: bool):
    # toppra is heavy (it imports matplotlib): loaded on first use
    from toppra.constraint import LinearConstraint

    class Precomputed(LinearConstraint):
        """Constraint parameters computed by the caller, vectorised over the gridpoints."""

        def __init__(self):
            super().__init__()
            self.identical = identical

        def compute_constraint_params(self, path, gridpoints, *args, **kwargs):
            return params

    return Precomputed()


def _solve(s, coef, lim: Limits, law, x0, x_vel, pieces: int = PIECES):
    """One TOPP-RA pass: s_dot at the gridpoints, or None if the path is not controllable."""
    # toppra is heavy (it imports matplotlib): loaded on first use
    import toppra.algorithm as algo
    from toppra.constraint import canlinear_colloc_to_interpolate

    a, b_up, c_up, b_lo, c_lo = effort_rows(coef, law, x0, x_vel, pieces)
    n, k = len(s), b_up.shape[2]
    flat = (n, 3 * k)
    A = np.hstack((coef.q1, np.repeat(a, k, axis=1), np.repeat(a, k, axis=1)))
    B = np.hstack((coef.q2, b_up.reshape(flat), b_lo.reshape(flat)))
    C = np.hstack((np.zeros((n, 3)), c_up.reshape(flat), c_lo.reshape(flat)))
    # F v <= g with v = (q_ddot, effort upper rows, effort lower rows)
    m = 3 + 6 * k
    F = np.zeros((6 + 6 * k, m))
    F[:3, :3], F[3:6, :3] = np.eye(3), -np.eye(3)
    F[6:6 + 3 * k, 3:3 + 3 * k] = np.eye(3 * k)
    F[6 + 3 * k:, 3 + 3 * k:] = -np.eye(3 * k)
    e = np.repeat(lim.effort, k)
    g = np.concatenate((lim.acceleration, lim.acceleration, e, e))
    params = canlinear_colloc_to_interpolate(A, B, C, F, g, None, None, s, identical=True)[:5]
    xb = np.zeros((n, 2))
    xb[:, 1] = x_vel
    cons = [_constraint(tuple(params) + (None, None), True),
            _constraint((None,) * 6 + (xb,), False)]
    logging.getLogger("toppra").setLevel(logging.CRITICAL)
    inst = algo.TOPPRA(cons, _ToppraPath(float(s[-1])), gridpoints=s, solver_wrapper="seidel")
    _, sd, _ = inst.compute_parameterization(0.0, 0.0)
    if sd is None or not np.isfinite(sd).all():
        return None
    return sd


def _times(s, sd):
    mean = sd[:-1] + sd[1:]
    if not (mean > 0).all():
        return None
    return np.concatenate(([0.0], np.cumsum(2.0 * np.diff(s) / mean)))


def _subsample(coef, step: int):
    """The coefficients at every ``step``-th gridpoint (and the last)."""
    idx = np.unique(np.append(np.arange(0, len(coef.s), step), len(coef.s) - 1))
    return replace(coef, **{f: getattr(coef, f)[idx] for f in
                            ("s", "X", "X1", "X2", "q", "q1", "q2", "a", "b", "c")}), idx


def _tangent_cost(coef, law, lim: Limits, x0, sd) -> float:
    """What another pass could gain: the largest excess of the viscous tangent at x0 over the
    viscous friction at the timing ``sd``, as a share of the effort limit, at the gridpoints
    where an effort limit binds (within 1 %) on the side friction hurts."""
    x = sd * sd
    ds = np.diff(coef.s)
    u = np.append(np.diff(x) / (2 * ds), (x[-1] - x[-2]) / (2 * ds[-1]))
    rigid = coef.a * u[:, None] + coef.b * x[:, None] + coef.c
    hurting = np.sign(coef.q1) * rigid >= 0.99 * lim.effort - 2 * (law.coulomb + law.static)
    excess = tangent_excess(law, coef.q1, x0, x) / lim.effort
    return float(np.max(np.where(hurting, excess, 0.0)))


def _help_gap(coef, law, lim: Limits, x_vel, sd, pieces: int) -> float:
    """The friction help the secant rows leave uncounted, as a share of the effort limit, at
    the gridpoints where an effort limit binds on the side friction helps (within 1 %)."""
    x = sd * sd
    ds = np.diff(coef.s)
    u = np.append(np.diff(x) / (2 * ds), (x[-1] - x[-2]) / (2 * ds[-1]))
    rigid = coef.a * u[:, None] + coef.b * x[:, None] + coef.c
    helping = -np.sign(coef.q1) * rigid >= 0.99 * lim.effort - 2 * (law.coulomb + law.static)
    _, _, lo0, lo1 = friction_bounds(law, coef.q1, x_vel, x_vel, pieces)
    counted = np.min(lo0 + lo1 * x[:, None, None], axis=2)
    cmin = np.minimum(law.coulomb, law.static)
    true = FrictionLaw(law.viscous, cmin, cmin, law.v_stribeck, law.eps).magnitude(coef.q1 * np.sqrt(x)[:, None])
    return float(np.max(np.where(helping, (true - counted) / lim.effort, 0.0)))


def _solve_with_friction(path, s, coef, lim, law, x_vel, max_passes):
    """TOPP-RA passes (module docstring): without friction one pass; with friction a first
    pass on every :data:`COARSE_STEP`-th gridpoint with the viscous tangent at a quarter of the
    velocity-limit curve, then passes on the whole grid with the tangent at the previous
    timing, until another pass would move the tangent by less than :data:`FRICTION_SLACK` of
    the effort limit where an effort limit binds. Returns (s_dot, t, passes)."""
    if law is None:
        sd = _solve(s, coef, lim, None, None, x_vel)
        if sd is None:
            raise RetimeError(_infeasible(path, lim))
        return sd, _checked_times(path, coef, s, sd), 1
    cc, idx = _subsample(coef, COARSE_STEP)
    xv = x_vel[idx]
    sd = _solve(cc.s, cc, lim, law, np.maximum(0.25 * xv, 1e-12), xv)
    if sd is None:
        raise RetimeError(_infeasible(path, lim))
    _checked_times(path, cc, cc.s, sd)
    x = np.interp(s, cc.s, sd * sd)
    best, passes, pieces = None, 1, PIECES
    while passes < max_passes:
        passes += 1
        x0 = np.maximum(x, 1e-6 * x_vel)
        sd = _solve(s, coef, lim, law, x0, x_vel, pieces)
        if sd is None:                 # not in exact arithmetic: a tangent bound keeps a feasible path feasible
            if best is not None:
                break
            raise RetimeError(_infeasible(path, lim))
        t = _checked_times(path, coef, s, sd)
        if best is None or t[-1] <= best[1][-1]:
            best = (sd, t)
        x = sd * sd
        tangent_ok = _tangent_cost(coef, law, lim, x0, sd) <= FRICTION_SLACK
        if pieces < PIECES_FINE and _help_gap(coef, law, lim, x_vel, sd, pieces) > HELP_SLACK:
            pieces = PIECES_FINE          # friction large against the limits: count its help closer
        elif tangent_ok:
            break
    return best[0], best[1], passes


def _checked_times(path, coef, s, sd):
    t = _times(s, sd)
    if t is None:
        k = int(np.argmax(~((sd[:-1] + sd[1:]) > 0)))
        raise RetimeError(f"{_where(path, coef, k)}: the limits allow no speed along the path "
                          f"there (the platform would have to stop)", float(coef.s[k]))
    return t


def _mid_excess(model, path, s, sd, u, lim: Limits, law) -> float:
    """Largest share by which a limit is exceeded in the middle of the grid intervals, where
    the discretisation does not look (x = s_dot^2 is linear in s on an interval)."""
    sm = 0.5 * (s[:-1] + s[1:])
    X, X1, X2 = path.evaluate(sm + path.breakpoints[0])
    x = 0.5 * (sd[:-1] ** 2 + sd[1:] ** 2)
    Xd = X1 * np.sqrt(x)[:, None]
    Xdd = X1 * u[:, None] + X2 * x[:, None]
    try:
        _, qd, qdd = joint_state(model, X, Xd, Xdd)
        tau = inverse_dynamics(model, X, Xd, Xdd, friction=law is not None)
    except UnreachableError as e:
        raise _unreachable(path, sm, e) from None
    r = max(float(np.max(np.abs(qd) / lim.velocity)), float(np.max(np.abs(qdd) / lim.acceleration)),
            float(np.max(np.abs(tau) / lim.effort)))
    return r - 1.0 if np.isfinite(r) else math.inf


def retime_path(model, path, *, friction: bool = True, torque_scale: float = 1.0, limit_scale: float = 1.0,
                gridpoints_count: int | None = None, min_measure: float = MIN_MEASURE,
                max_passes: int = MAX_PASSES) -> Timing:
    """The time-optimal rest-to-rest :class:`Timing` of ``path`` for ``model`` (module
    docstring).

    ``friction``: include the model's joint friction in the efforts (bounded as described);
    ``torque_scale`` in (0, 1]: the share of the effort limits the timing may use;
    ``limit_scale`` in (0, 1]: the share of every limit (velocity, acceleration, effort);
    ``gridpoints_count``: number of grid intervals (default from the path length).
    Raises :class:`RetimeError` (why, and where on the path) for a path through an unreachable
    point, outside the joint position limits or through a singularity, a path the effort
    limits cannot hold at rest, or one TOPP-RA finds not controllable within the limits.
    """
    _import_toppra()                     # ~1 s the first time (it imports matplotlib): not planning
    t_start = time.perf_counter()
    if not friction:
        model = model.without_friction()
    lim = Limits.of(model, torque_scale, limit_scale)
    if gridpoints_count is not None and not 10 <= int(gridpoints_count) <= MAX_GRIDPOINTS:
        raise ValueError(f"gridpoints_count must be in [10, {MAX_GRIDPOINTS}], got {gridpoints_count}")
    law = FrictionLaw.of(model)
    law = None if law.zero else law
    n = gridpoints_count
    for refinements in range(MAX_REFINEMENTS + 1):
        s = gridpoints(model, path, n)
        n = len(s) - 1
        coef = check_path(model, path, s, min_measure)
        _check_holding(model, path, coef, lim)
        with np.errstate(divide="ignore"):
            x_vel = np.min((lim.velocity / np.abs(coef.q1)) ** 2, axis=1)
        x_vel = np.minimum(x_vel, X_MAX)
        sd, t, passes = _solve_with_friction(path, s, coef, lim, law, x_vel, max_passes)
        u = np.diff(sd * sd) / (2.0 * np.diff(s))
        if _mid_excess(model, path, s, sd, u, lim, law) <= MID_TOLERANCE or 2 * n > MAX_GRIDPOINTS:
            break
        n = 2 * n
    return Timing(path, model, s, sd, u, t, lim, law is not None, passes, refinements,
                  time.perf_counter() - t_start)


def retime(model, points, **options) -> Timing:
    """:func:`retime_path` of the path through ``points`` ((N, 3) platform positions, m, in
    path order): scipy's ``CubicSpline`` over the cumulative chord length
    (:func:`~delta_dynamics.motion.path.spline_path`). Options as :func:`retime_path`."""
    return retime_path(model, spline_path(points), **options)


def _infeasible(path, lim) -> str:
    return (f"path of {path.length:.4g} m cannot be timed within the limits (velocity "
            f"{_fmt(lim.velocity)}, acceleration {_fmt(lim.acceleration)}, effort {_fmt(lim.effort)}): "
            f"TOPP-RA finds no rest-to-rest timing (the path is not controllable)")


def _fmt(v) -> str:
    return "[" + ", ".join(f"{float(x):.4g}" for x in v) + "]"
