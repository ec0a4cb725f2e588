"""Joint-space trajectory plans: validation and interpolation, without ROS.

A plan is piecewise polynomial in joint space through knots (t_k, q_k, q_dot_k, q_ddot_k):
quintic Hermite segments when the points give velocities and accelerations, cubic Hermite
when they give velocities, and a C2 cubic spline (clamped: the current velocity at the
start, rest at the end) when they give positions only. The first knot is always the
setpoint the loop is following when the plan takes over, so a new plan replaces the
running one without a jump in position or velocity.

Points may name the arm joints or the platform's Cartesian chain (``platform_x/y/z``, or a
Cartesian trajectory); Cartesian points go through inverse kinematics (q = IK(X),
q_dot = J X_dot, q_ddot = J X_ddot + J_dot X_dot).

Validation rejects (:class:`TrajectoryRejected`, with the reason) anything that is not
finite, times that do not increase, unknown or missing joint names, unreachable points,
and motions that leave the position limits or exceed the velocity, acceleration or effort
(torque or force) limits of the robot file anywhere along the interpolated path.

Plans work for either kind of Delta (:mod:`delta_dynamics.algorithms`): arm angles in rad
on a rotary robot, carriage positions in m on a linear one.
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.algorithms import (UnreachableError, cartesian_state, forward_kinematics,
                                       inverse_dynamics, inverse_kinematics, joint_state, joint_units)
from delta_dynamics.common.polynomials import hermite5
from delta_hardware.joint_plan import JointPlan, Setpoint, TrajectoryRejected  # noqa: F401 - re-exported

PLATFORM_JOINTS = ("platform_x", "platform_y", "platform_z")


# ----------------------------------------------------------------------------- construction

def _hermite3(T, p0, v0, p1, v1):
    d = p1 - p0
    z = np.zeros_like(p0)
    return np.stack((p0, v0, (3 * d - (2 * v0 + v1) * T) / T ** 2, (-2 * d + (v0 + v1) * T) / T ** 3, z, z))


def _coefficients(times, q, qd, qdd):
    """Hermite segment coefficients (K-1, 6, 3): quintic with accelerations, cubic without
    (all segments at once: time linear in the points)."""
    T = np.diff(times)[:, None]
    if qdd is not None:
        c = hermite5(T, q[:-1], qd[:-1], qdd[:-1], q[1:], qd[1:], qdd[1:])
    else:
        c = _hermite3(T, q[:-1], qd[:-1], q[1:], qd[1:])
    return np.moveaxis(c, 0, 1)


def _from_scipy(cs):
    c = cs.c                                                  # (4, K-1, 3), highest power first
    out = np.zeros((c.shape[1], 6, c.shape[2]))
    for p in range(4):
        out[:, p, :] = c[3 - p]
    return out


def build_plan(model, now: float, current: Setpoint, start_time: float, times, positions,
               velocities=None, accelerations=None, check: bool = True, limits=None, abort=None) -> JointPlan:
    """A validated plan from joint-space points (times relative to ``start_time``).

    ``times`` must increase strictly and be > 0 (the current setpoint is the knot at 0).
    A point at time 0 must equal the current position (within 1e-6 rad or m) and is dropped.
    Points whose absolute time has already passed (``start_time`` in the past) are dropped;
    the plan then starts now from the current setpoint.
    """
    times = np.asarray(times, dtype=float).reshape(-1)
    q = np.asarray(positions, dtype=float).reshape(len(times), 3)
    qd = None if velocities is None else np.asarray(velocities, dtype=float).reshape(len(times), 3)
    qdd = None if accelerations is None else np.asarray(accelerations, dtype=float).reshape(len(times), 3)
    if len(times) == 0:
        raise TrajectoryRejected("trajectory has no points")
    for name, a in (("time_from_start", times), ("positions", q), ("velocities", qd), ("accelerations", qdd)):
        if a is not None and not np.isfinite(a).all():
            k = int(np.argmin(np.isfinite(a.reshape(len(times), -1)).all(axis=1)))
            raise TrajectoryRejected(f"point {k}: {name} must be finite numbers, got {a[k].tolist()}")
    if (np.diff(times) <= 0).any():
        k = int(np.argmax(np.diff(times) <= 0)) + 1
        raise TrajectoryRejected(f"point {k}: time_from_start must increase, got {times[k - 1]:.6g} s then {times[k]:.6g} s")
    if times[0] < 0:
        raise TrajectoryRejected(f"point 0: time_from_start must be >= 0, got {times[0]:.6g} s")
    if times[0] == 0:
        if np.abs(q[0] - current.q).max() > 1e-6:
            u = joint_units(model)["position"]
            raise TrajectoryRejected(
                f"point 0 at time 0 is at {np.round(q[0], 6).tolist()} {u} but the robot's setpoint is "
                f"{np.round(current.q, 6).tolist()} {u}: a jump; give it a time > 0")
        times, q = times[1:], q[1:]
        qd = None if qd is None else qd[1:]
        qdd = None if qdd is None else qdd[1:]
        if len(times) == 0:
            return JointPlan(now, [0.0, 1e-9], hermite5(1e-9, current.q, 0 * current.q, 0 * current.q,
                                                         current.q, 0 * current.q, 0 * current.q)[None])
    if start_time < now:                    # the header's start time is in the past
        passed = start_time + times <= now
        if passed.all():
            raise TrajectoryRejected(f"trajectory ended {now - start_time - times[-1]:.3f} s ago (header stamp in the past)")
        keep = ~passed
        shift = now - start_time
        times, q = times[keep] - shift, q[keep]
        qd = None if qd is None else qd[keep]
        qdd = None if qdd is None else qdd[keep]
        start_time = now
    t_all = np.concatenate(([0.0], times))
    q_all = np.vstack((current.q, q))
    if qd is not None and qdd is not None:
        coeffs = _coefficients(t_all, q_all, np.vstack((current.qd, qd)), np.vstack((current.qdd, qdd)))
    elif qd is not None:
        coeffs = _coefficients(t_all, q_all, np.vstack((current.qd, qd)), None)
    elif len(t_all) == 2:                   # one segment: the cubic from the current velocity to rest
        coeffs = _coefficients(t_all, q_all, np.vstack((current.qd, np.zeros(3))), None)
    else:
        # positions only: scipy's clamped cubic spline, imported on first use (about 0.7 s of CPU,
        # once, on the thread that checks the trajectory): a node that is never sent such a
        # trajectory (MoveIt's carry velocities) does not pay for it at every start.
        from scipy.interpolate import CubicSpline
        cs = CubicSpline(t_all, q_all, axis=0, bc_type=((1, current.qd), (1, np.zeros(3))))
        coeffs = _from_scipy(cs)
    plan = JointPlan(start_time, t_all, coeffs)
    if check:
        validate_plan(model, plan, limits=limits, abort=abort)
    return plan


def validate_plan(model, plan: JointPlan, step: float = 2e-3, limits=None, chunk: int = 20000, abort=None) -> None:
    """Reject a plan that leaves the limits anywhere along its path (sampled every ``step``
    s and at every knot, ``chunk`` samples at a time: memory stays bounded however long the
    plan is). ``limits`` (lo, hi, velocity) overrides the robot file's position and velocity
    limits (e.g. the slow way back into the limits after a joint left them). ``abort()``, asked
    before each chunk, ends the check with TrajectoryRejected(its answer) when it answers."""
    lim = model.robot.limits
    n = max(int(math.ceil((plan.end_time - plan.start_time) / step)), 1)
    knots = plan.start_time + plan.times
    names = model.joint_names
    if limits is None:
        lo = np.array([p[0] for p in lim.position])
        hi = np.array([p[1] for p in lim.position])
        v_max = np.array(lim.velocity)
    else:
        lo, hi, v_max = (np.asarray(a, dtype=float) for a in limits)
    a_max = np.array(lim.acceleration)
    tl = np.array(lim.effort)
    units = joint_units(model)
    for first in range(0, n + 1, chunk):
        why = abort() if abort is not None else ""
        if why:                                  # e.g. a stop came while a long plan was checked
            raise TrajectoryRejected(why)
        ts = plan.start_time + (plan.end_time - plan.start_time) * np.arange(first, min(first + chunk, n + 1)) / n
        k0, k1 = np.searchsorted(knots, ts[0], side="left"), np.searchsorted(knots, ts[-1], side="right")
        ts = np.unique(np.concatenate((ts, knots[k0:k1])))           # every knot exactly too
        _check_samples(model, plan, ts, names, lo, hi, v_max, a_max, tl, units)


def _check_samples(model, plan, ts, names, lo, hi, v_max, a_max, tl, units):
    q, qd, qdd = plan.sample_many(ts)
    for what, val, bound in (("velocity", qd, v_max), ("acceleration", qdd, a_max)):
        over = np.abs(val) > bound * (1 + 1e-9)
        if over.any():
            k, i = np.argwhere(over)[0]
            raise TrajectoryRejected(
                f"too fast: {names[i]} {what} {val[k, i]:.4g} exceeds its limit {bound[i]:g} "
                f"at t = {ts[k] - plan.start_time:.3f} s")
    out = (q < lo - 1e-9) | (q > hi + 1e-9)
    if out.any():
        k, i = np.argwhere(out)[0]
        raise TrajectoryRejected(f"{names[i]} position {q[k, i]:.4f} {units['position']} leaves its limits "
                                 f"[{lo[i]:g}, {hi[i]:g}] at t = {ts[k] - plan.start_time:.3f} s")
    try:
        X = forward_kinematics(model, q)
    except UnreachableError as e:
        raise TrajectoryRejected(f"unreachable at t = {ts[e.index] - plan.start_time:.3f} s: {e}") from None
    try:
        _, Xd, Xdd = cartesian_state(model, q, qd, qdd)
        tau = inverse_dynamics(model, X, Xd, Xdd)
    except UnreachableError as e:
        raise TrajectoryRejected(f"unreachable (singular) at t = {ts[e.index] - plan.start_time:.3f} s: {e}") from None
    over = ~(np.abs(tau) <= tl)                                       # NaN counts as over
    if over.any():
        k, i = np.argwhere(over)[0]
        e, u = units["effort_name"], units["effort"]
        raise TrajectoryRejected(f"too fast: {names[i]} needs {tau[k, i]:.4g} {u}, more than its {e} "
                                 f"limit {tl[i]:g} {u}, at t = {ts[k] - plan.start_time:.3f} s")


def match_joint_names(model, names) -> tuple[str, list[int]]:
    """('joint' | 'platform', column order) for a message's joint names, or reject."""
    names = list(names)
    if len(set(names)) != len(names):
        raise TrajectoryRejected(f"joint names repeat: {names}")
    arms = list(model.joint_names)
    if set(names) == set(arms):
        return "joint", [names.index(j) for j in arms]
    if set(names) == set(PLATFORM_JOINTS):
        return "platform", [names.index(j) for j in PLATFORM_JOINTS]
    unknown = [n for n in names if n not in arms and n not in PLATFORM_JOINTS]
    if unknown:
        raise TrajectoryRejected(f"unknown joint names {unknown}: expected {arms} or {list(PLATFORM_JOINTS)}")
    raise TrajectoryRejected(f"joint names {names} must be all of {arms} or all of {list(PLATFORM_JOINTS)}")


def cartesian_to_joint(model, X, Xd=None, Xdd=None):
    """Platform points (K, 3) (+ velocities, accelerations) -> joint points, or reject."""
    X = np.asarray(X, dtype=float).reshape(-1, 3)
    for name, a in (("position", X), ("velocity", Xd), ("acceleration", Xdd)):
        if a is not None and not np.isfinite(np.asarray(a, dtype=float)).all():
            k = int(np.argmin(np.isfinite(np.asarray(a, float).reshape(-1, 3)).all(axis=1)))
            raise TrajectoryRejected(f"point {k}: platform {name} must be finite numbers")
    try:
        q = inverse_kinematics(model, X, check_limits=True)
    except UnreachableError as e:
        raise TrajectoryRejected(f"point {e.index}: {e}") from None
    if Xd is None:
        return q, None, None
    Xd = np.asarray(Xd, dtype=float).reshape(-1, 3)
    if Xdd is None:
        return q, joint_state(model, X, Xd)[1], None
    Xdd = np.asarray(Xdd, dtype=float).reshape(-1, 3)
    _, qd, qdd = joint_state(model, X, Xd, Xdd)
    return q, qd, qdd
