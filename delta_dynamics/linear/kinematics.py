"""Kinematics of the linear Delta robot, Colombo & Lentini (2020) eqs. (2)-(8).

Every function takes one sample (shape (3,)) or N samples (shape (N, 3)) and returns the
same leading shape, like the rotary robot's. Conventions
(``docs/conventions.md``, "Linear Delta"): z up, base_link on the base plane; rail i at
angle phi_i about z; q_i = height of carriage joint A_i (m, positive up); X = platform centre.

Chain i, with u_i = (cos phi_i, sin phi_i, 0) and c_i = (R - r) u_i:

* carriage joint  A_i = R u_i + q_i e_z;  platform joint  P_i = X + r u_i
* rod vector      d_i = P_i - A_i = X - c_i - q_i e_z,  Gamma_i = |d_i|^2 - l^2 = 0      (eq. 2)
* inverse kinematics (eq. 6, carriages above the platform):
  q_i = z + h_i,  h_i = sqrt(l^2 - (x - c_ix)^2 - (y - c_iy)^2),  so d_iz = z - q_i = -h_i
* velocities: d_i . d_i_dot = 0 with d_i_dot = X_dot - q_dot_i e_z gives
  J_x X_dot = J_q q_dot, J_x = [d_1 d_2 d_3]^T, J_q = diag(d_iz)                     (eq. 3)
  and J = J_q^-1 J_x, q_dot = J X_dot: row i is d_i^T / d_iz                        (eq. 7)
* accelerations: d_i . X_dd - d_iz q_dd_i + |d_i_dot|^2 = 0, i.e.
  X_dd = J_x^-1 (J_q q_dd - v)  (eq. 5, as printed) and
  q_dd = J_q^-1 (J_x X_dd + v)  with v_i = x_dot^2 + y_dot^2 + (z_dot - q_dot_i)^2.
  The printed eq. (8) has "- v": a sign slip (it contradicts eq. 5; the finite differences
  of test/test_linear_kinematics.py confirm "+ v").

Singularities: a rod pair horizontal (d_iz = 0: carriage i cannot move the platform
vertically, J blows up; the edge of the workspace) and the three rod pairs coplanar
(det J_x = 0: the platform gains a freedom; forward kinematics has a double root).

Example::

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> q = inverse_kinematics(m, [0.03, -0.02, 0.05])
    >>> forward_kinematics(m, q).round(12).tolist()
    [0.03, -0.02, 0.05]
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.common import chains, workspace
from delta_dynamics.common.backend import ScalarMath, join3, split3
from delta_dynamics.common.errors import (SingularityError, UnreachableError, check_limits, format_point,
                                          point_at)

#: A rod pair counts as horizontal (singular) when its vertical drop is below this fraction of l.
HORIZONTAL_TOL = 1e-9


def chain_geometry(m, i, x, y, z, xp):
    """Inverse kinematics of chain i (eq. 6) plus what the dynamics reuses.

    Returns ``(q, dx, dy, dz)``: the carriage position q = h - o_i and the rod vector
    d_i = (dx, dy, dz) (dz = z - h < 0, h the carriage joint height), with rail i's own
    geometry (``m.cx``, ``m.cy``, ``m.arm_*``: geometry.per_arm, else the shared values). Raises :class:`UnreachableError` (:func:`_raise_unreachable`) for the
    first sample this rod pair cannot reach, or reaches only lying horizontal.
    """
    dx = x - m.cx[i]
    dy = y - m.cy[i]
    s = m.arm_l2[i] - dx * dx - dy * dy
    ok = s > (HORIZONTAL_TOL * m.arm_l[i]) ** 2
    if xp is ScalarMath:
        if not ok:
            _raise_unreachable(m, x, y, z, 0, i)
        h = math.sqrt(s)
    else:
        bad = xp.first_bad(ok)
        if bad is not None:
            _raise_unreachable(m, x, y, z, bad, i)
        h = np.sqrt(np.maximum(s, 0.0))
    return z + h - m.arm_offset[i], dx, dy, -h


def _raise_unreachable(m, x, y, z, k, i):
    """Raise :class:`UnreachableError` for sample ``k`` of (x, y, z) that rod pair ``i`` cannot
    reach (too far from its rail, or only with the rods horizontal)."""
    pt, where = point_at(x, y, z, k)
    rho = math.hypot(pt[0] - m.cx[i], pt[1] - m.cy[i])
    if rho > m.arm_l[i]:
        why = (f"rod pair {i + 1} (length {m.arm_l[i]:g} m) cannot reach it: its platform joint would be "
               f"{rho:.6g} m from rail {i + 1} horizontally")
    else:
        why = (f"rod pair {i + 1} would be horizontal (a serial singularity: carriage {i + 1} "
               f"cannot move the platform vertically)")
    raise UnreachableError(f"platform position {format_point(pt)} m is unreachable{where}: {why}",
                           index=k, point=pt)


def _chains_ik(m, x, y, z, xp):
    """(q, dx, dy, dz) of each chain (:func:`chain_geometry`)."""
    return [chain_geometry(m, i, x, y, z, xp) for i in range(3)]


def inverse_kinematics(m, X, check_limits: bool = False):
    """Carriage positions q (m) that put the platform centre at X (m), eq. (6) with the
    carriages above the platform: q_i = z + sqrt(l^2 - (x - c_ix)^2 - (y - c_iy)^2).

    Raises :class:`~delta_dynamics.common.errors.UnreachableError` naming the point (and the
    sample index) when a rod pair cannot reach or would be horizontal, or, with
    ``check_limits``, when a carriage leaves the robot file's position limits.

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> inverse_kinematics(m, [0.0, 0.0, 0.05]).round(4).tolist()
    [0.2372, 0.2372, 0.2372]
    """
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        q = chains.inverse_kinematics(m, X)
        if check_limits:
            check_joint_limits(m, q, X)
        return q
    x, y, z, xp, single = split3(X, "platform position")
    qs = [c[0] for c in _chains_ik(m, x, y, z, xp)]
    if check_limits:
        check_joint_limits(m, qs, X)
    return join3(*qs, single)


def check_joint_limits(m, qs, X=None):
    """Raise UnreachableError if a carriage position is outside the robot file's limits.

    ``qs``: three components (floats or arrays), or an array of shape (3,) or (N, 3).
    """
    check_limits(m, qs, X, lambda i, v: f"carriage {i + 1} position {v:.6g} m is outside its limits "
                                        f"[{m.q_lo[i]:g}, {m.q_hi[i]:g}] m")


def passive_origins(m, q):
    """Where each chain's passive link pair (the rods) starts: the carriage joints A_i (m) for
    carriage positions q, shape (3, 3) or (N, 3, 3) [sample, chain, xyz]."""
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        q2 = np.asarray(q, dtype=float)
        out = m.chains.carriages(m.arms, q2.reshape(-1, 3))
        return out.reshape(q2.shape[:-1] + (3, 3))
    q = np.asarray(q, dtype=float)
    c, s = np.asarray(m.cphi), np.asarray(m.sphi)
    return np.stack(np.broadcast_arrays(m.R * c, m.R * s, q), axis=-1)


def platform_joints(m, X):
    """Platform joints P_i = X + r u_i (m): shape (3, 3) or (N, 3, 3) [sample, chain, xyz]."""
    X = np.asarray(X, dtype=float)
    u = np.stack((np.asarray(m.cphi), np.asarray(m.sphi), np.zeros(3)), axis=-1)
    return X[..., None, :] + m.r * u


def tool_point(m, X):
    """The tool point Q (nozzle) for platform centre X: X - tool_offset e_z (m)."""
    X = np.array(X, dtype=float)
    X[..., 2] -= m.tool_offset
    return X


def platform_from_tool(m, Xq):
    """The platform centre for tool point Xq: Xq + tool_offset e_z (m)."""
    X = np.array(Xq, dtype=float)
    X[..., 2] += m.tool_offset
    return X


def forward_kinematics(m, q):
    """Platform centre X (m) for carriage positions q (m): the intersection of three spheres
    (Sec. 3.1), sphere i of radius l about C_i = c_i + q_i e_z, the one below the carriages.

    Raises :class:`~delta_dynamics.common.errors.UnreachableError` if the spheres do not meet
    or meet only above a carriage (the rods would point up), and
    :class:`~delta_dynamics.common.errors.SingularityError` if the centres are collinear.
    """
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        return chains.forward_kinematics(m, q)
    arr = np.asarray(q, dtype=float)
    single = arr.shape == (3,)
    if not single and (arr.ndim != 2 or arr.shape[1] != 3):
        raise ValueError(f"carriage positions must have shape (3,) or (N, 3), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"carriage positions must be finite, got {arr.tolist() if single else 'NaN/inf'}")
    if single:
        return np.array(_fk_one(m, *arr.tolist()))
    X, code = _fk_batch(m, arr)
    bad = np.flatnonzero(code)
    if len(bad):
        k = int(bad[0])
        _raise_fk(m, arr[k], int(code[k]), k, single=False)
    return X


_FK_MESSAGES = {
    1: ("singular: the three rod spheres' centres are collinear", SingularityError),
    2: ("unreachable: the rod pairs cannot meet at one platform position", UnreachableError),
    3: ("unreachable: the rod pairs meet only above a carriage (a rod would point up)", UnreachableError),
}


def _raise_fk(m, q, code, k, single):
    text, cls = _FK_MESSAGES[code]
    raise cls(f"carriage positions {format_point(q)} m are {text}" + ("" if single else f" (sample {k})"),
              index=k, point=[float(v) for v in q])


def _fk_batch(m, q):
    """Forward kinematics of (N, 3) carriage positions: (X, code) with code 0 where it
    worked, else the reason (see ``_FK_MESSAGES``); X is NaN there."""
    n = len(q)
    cx, cy = np.asarray(m.cx), np.asarray(m.cy)
    x1, y1, z1 = cx[0], cy[0], q[:, 0]
    ax, ay, az = cx[1] - x1, cy[1] - y1, q[:, 1] - z1
    bx, by, bz = cx[2] - x1, cy[2] - y1, q[:, 2] - z1
    nx, ny, nz = ay * bz - az * by, az * bx - ax * bz, np.full(n, ax * by - ay * bx)
    aa, bb, ab = ax * ax + ay * ay + az * az, bx * bx + by * by + bz * bz, ax * bx + ay * by + az * bz
    dd = nx * nx + ny * ny + nz * nz
    code = np.zeros(n, dtype=np.int8)
    code[(dd <= 1e-12 * aa * bb) | (dd <= (1e-12 * m.l2) ** 2)] = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = bb * (aa - ab) / (2.0 * dd)
        beta = aa * (bb - ab) / (2.0 * dd)
        ex, ey, ez = alpha * ax + beta * bx, alpha * ay + beta * by, alpha * az + beta * bz
        h = (m.l2 - (ex * ex + ey * ey + ez * ez)) / dd
        code[(code == 0) & ~(h >= 0)] = 2
        t = np.sqrt(np.maximum(h, 0.0)) * np.where(nz > 0, -1.0, 1.0)
        X = np.stack((x1 + ex + t * nx, y1 + ey + t * ny, z1 + ez + t * nz), axis=1)
    below = (X[:, 2:3] < q - HORIZONTAL_TOL * m.l).all(axis=1)
    code[(code == 0) & ~below] = 3
    X[code != 0] = np.nan
    return X, code


def forward_kinematics_one(m, q) -> tuple:
    """:func:`forward_kinematics` of one sample of carriage positions (m) given as three finite Python
    floats, as a tuple (x, y, z) (m), without arrays: the control loop's one-sample paths
    (the same errors)."""
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        return tuple(forward_kinematics(m, q).tolist())
    return _fk_one(m, *q)


def _fk_one(m, q1, q2, q3):
    """:func:`forward_kinematics` of one sample on Python floats (the control loop's path)."""
    x1, y1 = m.cx[0], m.cy[0]
    ax, ay, az = m.cx[1] - x1, m.cy[1] - y1, q2 - q1
    bx, by, bz = m.cx[2] - x1, m.cy[2] - y1, q3 - q1
    nx, ny, nz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    aa, bb, ab = ax * ax + ay * ay + az * az, bx * bx + by * by + bz * bz, ax * bx + ay * by + az * bz
    dd = nx * nx + ny * ny + nz * nz
    if dd <= 1e-12 * aa * bb or dd <= (1e-12 * m.l2) ** 2:
        _raise_fk(m, (q1, q2, q3), 1, 0, True)
    alpha = bb * (aa - ab) / (2.0 * dd)
    beta = aa * (bb - ab) / (2.0 * dd)
    ex, ey, ez = alpha * ax + beta * bx, alpha * ay + beta * by, alpha * az + beta * bz
    h = (m.l2 - (ex * ex + ey * ey + ez * ez)) / dd
    if h < 0:
        _raise_fk(m, (q1, q2, q3), 2, 0, True)
    t = math.sqrt(h) * (-1.0 if nz > 0 else 1.0)
    z = q1 + ez + t * nz
    if not z < min(q1, q2, q3) - HORIZONTAL_TOL * m.l:
        _raise_fk(m, (q1, q2, q3), 3, 0, True)
    return x1 + ex + t * nx, y1 + ey + t * ny, z


def jacobian(m, X):
    """J(X) with q_dot = J X_dot (eq. 7: J = J_q^-1 J_x, row i = d_i^T / d_iz):
    shape (3, 3) or (N, 3, 3).

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> jacobian(m, [0.0, 0.0, 0.1])[:, 2].tolist()          # z moves every carriage alike
    [1.0, 1.0, 1.0]
    """
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        return chains.jacobian(m, X)
    x, y, z, xp, single = split3(X, "platform position")
    rows = [join3(dx / dz, dy / dz, dz / dz, single) for _, dx, dy, dz in _chains_ik(m, x, y, z, xp)]
    return np.stack(rows, axis=-2)


def jacobian_x(m, X):
    """J_x of eq. (3): rows d_i^T = (P_i - A_i)^T, shape (3, 3) or (N, 3, 3)."""
    x, y, z, xp, single = split3(X, "platform position")
    return np.stack([join3(dx, dy, dz, single) for _, dx, dy, dz in _chains_ik(m, x, y, z, xp)], axis=-2)


def jacobian_q(m, X):
    """J_q of eq. (3): diag(d_iz) = diag(z - q_i), shape (3, 3) or (N, 3, 3)."""
    x, y, z, xp, single = split3(X, "platform position")
    dz = join3(*(c[3] for c in _chains_ik(m, x, y, z, xp)), single)
    return dz[..., :, None] * np.eye(3)


def jacobian_derivative(m, X, Xd):
    """J_dot(X, X_dot), so that q_dd = J X_dd + J_dot X_dot; row i is
    d_i_dot^T / d_iz - d_i^T d_iz_dot / d_iz^2 with d_i_dot = X_dot - q_dot_i e_z
    (J_dot X_dot = J_q^-1 v, v_i = |d_i_dot|^2: eq. 8 with its sign corrected)."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, s2 = split3(Xd, "platform velocity")
    if s2 != single:
        raise ValueError("position and velocity must both be single samples or both (N, 3)")
    rows = []
    for _, dx, dy, dz in _chains_ik(m, x, y, z, xp):
        qd = (dx * vx + dy * vy + dz * vz) / dz
        wz = vz - qd                                            # d_iz_dot
        k = wz / (dz * dz)
        rows.append(join3(vx / dz - dx * k, vy / dz - dy * k, wz / dz - dz * k, single))
    return np.stack(rows, axis=-2)


def passive_angles(m, X):
    """Direction of each rod pair as (azimuth, elevation) in rad, shape (3, 2) or (N, 3, 2):
    the rods of pair i are parallel to d_i = l (cos el cos az, cos el sin az, sin el)
    (el < 0: the rods slope down from the carriage to the platform)."""
    x, y, z, xp, single = split3(X, "platform position")
    out = []
    for i, (_, dx, dy, dz) in enumerate(_chains_ik(m, x, y, z, xp)):
        az = np.arctan2(dy, dx)
        el = np.arcsin(np.clip(np.asarray(dz) / m.arm_l[i], -1.0, 1.0))
        out.append(np.stack(np.broadcast_arrays(az, el), axis=-1))
    return np.stack(out, axis=-2)


def singularity_measure(m, X):
    """Inverse condition number of J(X) in [0, 1]: 0 at a singularity, larger is better.

    It falls to zero where a rod pair becomes horizontal (a row of J blows up) and where
    the three rod pairs become coplanar (J_x loses rank).

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> bool(singularity_measure(m, [0, 0, 0.05]) > singularity_measure(m, [0.08, 0, 0.05]))
    True
    """
    return workspace.inverse_condition(jacobian(m, X))


def _reachable(m, qs):
    """Platform positions of the carriage positions ``qs`` (N, 3) whose forward kinematics works."""
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        Xs, code = chains.forward(m.chains, m.arms, qs)
        below = Xs[:, 2] < (np.asarray(qs) + m.arms[:3]).min(axis=1)
        return Xs[(code == 0) & below]
    Xs, code = _fk_batch(m, qs)
    return Xs[code == 0]


def sample_workspace(m, n: int, seed: int | None = 0, min_measure: float = 0.0):
    """``n`` random reachable platform positions (N, 3) with the carriages inside their limits.

    Carriage positions are drawn uniformly inside the position limits and mapped through
    forward kinematics; those whose forward kinematics fails (or whose singularity measure
    is below ``min_measure``) are dropped and redrawn
    (:func:`delta_dynamics.common.workspace.sample_workspace`).
    """
    return workspace.sample_workspace(m, n, seed, min_measure, _reachable, tries=200, batch=(4, 64))


def workspace_centre(m, samples: int = 200):
    """A natural home pose (m): the platform on the z axis, half way up the height range the
    carriage limits allow there.

    On the axis every rod pair spans c_i horizontally and drops h0 = sqrt(l^2 - (R - r)^2),
    so J, and with it the singularity measure, is the same at every height: there is no best
    conditioned height to search for (``samples`` is accepted for the rotary signature and
    unused). The carriages sit at q = z + h0.

    >>> from delta_dynamics.linear.model import LinearModel
    >>> workspace_centre(LinearModel.from_robot("colombo2020")).round(4).tolist()
    [0.0, 0.0, 0.1078]
    """
    h0 = math.sqrt(m.l2 - (m.R - m.r) ** 2)
    lo, hi = max(m.q_lo), min(m.q_hi)
    if not lo <= hi:
        raise UnreachableError("no platform position on the z axis is reachable within the carriage limits")
    return np.array([0.0, 0.0, 0.5 * (lo + hi) - h0])
