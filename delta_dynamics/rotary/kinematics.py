"""Kinematics of the rotary Delta robot: closed-form inverse and forward kinematics, the
Jacobian J (q_dot = J X_dot, Asadi & Heydari 2020 eq. 9) and its derivative (eq. 12),
passive forearm angles, a workspace sampler and a singularity measure.

Every function takes one sample (shape (3,)) or N samples (shape (N, 3)) and returns the
same leading shape. Conventions (``docs/conventions.md``): z up, origin at the base centre,
platform below (z < 0); chain i at angle phi_i about z; q_i = 0 with upper arm i horizontal
and pointing outward, positive moving down.

Chain i, in world coordinates with u_i = (cos phi_i, sin phi_i, 0) and e_z = (0, 0, 1):

* motor axis point  B_i = R u_i;  elbow  C_i = B_i + l (cos q_i u_i - sin q_i e_z)
* platform joint    A_i = X + r u_i
* forearm vector    U_i = A_i - C_i with U_i^T U_i = l_K^2                     (eq. 4)
* T_i = dC_i/dq_i = -l (sin q_i u_i + cos q_i e_z);  dT_i/dq_i = -(C_i - B_i)   (eqs. 6-7)
* U_i^T X_dot = (U_i^T T_i) q_dot_i  =>  J = diag(U_i^T T_i)^-1 [U_1 U_2 U_3]^T   (eqs. 8-9)

Example::

    >>> from delta_dynamics.rotary.model import RotaryModel
    >>> m = RotaryModel.from_robot("nt_robot")
    >>> q = inverse_kinematics(m, [0.05, -0.02, -0.75])
    >>> forward_kinematics(m, q).round(9).tolist()
    [0.05, -0.02, -0.75]
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.common import chains, workspace
from delta_dynamics.common.backend import ScalarMath, join3, split3
from delta_dynamics.common.errors import (SingularityError, UnreachableError, check_limits, format_point,
                                          point_at)


def chain_geometry(m, i, x, y, z, xp):
    """Inverse kinematics of chain i plus the quantities the dynamics reuses.

    Returns ``(q, cq, sq, px, pz, d)``: the joint position q = theta - o_i, the cosine and sine
    of the arm angle theta, the platform joint relative to the motor axis in the chain's
    vertical plane (px outward, pz up) and the scalar d_i = U_i^T T_i = -l (px sin theta +
    pz cos theta) of eq. (8). Arm i's own geometry (``m.arm_*``: geometry.per_arm, else the
    shared values, o_i = 0). Raises :class:`UnreachableError`
    (:func:`_raise_unreachable`) for the first sample this chain cannot reach, or reaches only
    with the arm and the forearm aligned (d = 0, a serial singularity).
    """
    c, s, l = m.cphi[i], m.sphi[i], m.arm_l[i]
    px = c * x + s * y + m.arm_dr[i]
    py = c * y - s * x
    # |A - C|^2 = l_K^2  <=>  px cos q - pz sin q = k  (eq. 4 written in the chain plane)
    k = (px * px + py * py + z * z + m.arm_l2[i] - m.arm_lk2[i]) / (2.0 * l)
    rho = xp.sqrt(px * px + z * z)
    ratio = k / rho
    scalar = xp is ScalarMath
    if scalar:
        if not abs(ratio) <= 1.0:
            _raise_unreachable(m, x, y, z, 0, i)
        q = -xp.atan2(z, px) - xp.acos(ratio)
    else:
        ok = abs(ratio) <= 1.0
        q = -xp.atan2(z, px) - xp.acos(np.clip(ratio, -1.0, 1.0))
    # Keep q in (-pi, pi]: the branch with the elbow outside the forearm's line.
    q = q + 2.0 * math.pi * (q <= -math.pi) - 2.0 * math.pi * (q > math.pi)
    cq, sq = xp.cos(q), xp.sin(q)
    d = -l * (px * sq + z * cq)
    # d = 0: upper arm and forearm aligned (serial singularity, the edge of the workspace)
    if scalar:
        if not abs(d) > 1e-12 * l * m.arm_lk[i]:
            _raise_unreachable(m, x, y, z, 0, i)
    else:
        bad = xp.first_bad(ok & (abs(d) > 1e-12 * l * m.arm_lk[i]))
        if bad is not None:
            _raise_unreachable(m, x, y, z, bad, i)
    return q - m.arm_offset[i], cq, sq, px, z, d


def _raise_unreachable(m, x, y, z, k, i):
    """Raise :class:`UnreachableError` for sample ``k`` of (x, y, z) that chain ``i`` cannot reach."""
    pt, where = point_at(x, y, z, k)
    raise UnreachableError(
        f"platform position {format_point(pt)} m is unreachable{where}: forearm {i + 1} "
        f"(length {m.arm_lk[i]:g} m) cannot connect its elbow to the platform", index=k, point=pt)


def inverse_kinematics(m, X, check_limits: bool = False):
    """Joint angles q (rad) that put the platform centre at X (m).

    Closed form per chain (eq. 4): px cos q - pz sin q = k has the elbow-out solution
    q = -atan2(pz, px) - acos(k / sqrt(px^2 + pz^2)). Raises :class:`UnreachableError`
    naming the point (and sample index) when a forearm cannot reach, or, with
    ``check_limits``, when an angle leaves the robot file's position limits.
    """
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        q = chains.inverse_kinematics(m, X)
        if check_limits:
            check_joint_limits(m, q, X)
        return q
    x, y, z, xp, single = split3(X, "platform position")
    qs = [chain_geometry(m, i, x, y, z, xp)[0] for i in range(3)]
    if check_limits:
        check_joint_limits(m, qs, X)
    return join3(*qs, single)


def check_joint_limits(m, qs, X=None):
    """Raise UnreachableError if any joint angle is outside the robot file's limits.

    ``qs``: three components (floats or arrays), or an array of shape (3,) or (N, 3).
    """
    check_limits(m, qs, X, lambda i, v: f"joint {i + 1} angle {v:.4f} rad is outside its limits "
                                        f"[{m.q_lo[i]:g}, {m.q_hi[i]:g}]")


def passive_origins(m, q):
    """Where each chain's passive link pair (the forearm) starts: the elbow points C_i (m) for
    joint angles q, shape (3, 3) or (N, 3, 3) [sample, chain, xyz]."""
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        q2 = np.asarray(q, dtype=float)
        out = m.chains.elbows(m.arms, q2.reshape(-1, 3))
        return out.reshape(q2.shape[:-1] + (3, 3))
    q = np.asarray(q, dtype=float)
    cq, sq = np.cos(q), np.sin(q)
    rad = m.R + m.l * cq
    c = np.asarray(m.cphi)
    s = np.asarray(m.sphi)
    return np.stack((rad * c, rad * s, -m.l * sq), axis=-1)


def forward_kinematics(m, q):
    """Platform centre X (m) for joint angles q (rad): the intersection of three spheres.

    Sphere i has radius l_K and centre C_i - r u_i; of the two intersections the one with
    the lower z is taken. Raises :class:`SingularityError` if the centres are (nearly)
    collinear and :class:`UnreachableError` if the spheres do not meet.
    """
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        return chains.forward_kinematics(m, q)
    arr = np.asarray(q, dtype=float)
    single = arr.shape == (3,)
    if not single and (arr.ndim != 2 or arr.shape[1] != 3):
        raise ValueError(f"joint angles must have shape (3,) or (N, 3), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"joint angles must be finite, got {arr.tolist() if single else 'NaN/inf'}")
    if single:
        return np.array(_fk_one(m, *arr.tolist()))
    a2 = arr.reshape(-1, 3)
    cen = passive_origins(m, a2)                                   # (N, 3, 3)
    cen[..., 0] -= m.r * np.asarray(m.cphi)
    cen[..., 1] -= m.r * np.asarray(m.sphi)
    c1 = cen[:, 0]
    a = cen[:, 1] - c1
    b = cen[:, 2] - c1
    n = np.cross(a, b)
    aa = np.einsum("ij,ij->i", a, a)
    bb = np.einsum("ij,ij->i", b, b)
    ab = np.einsum("ij,ij->i", a, b)
    dd = np.einsum("ij,ij->i", n, n)
    # collinear or coincident centres (the absolute floor catches a == b == 0)
    singular = (dd <= 1e-12 * aa * bb) | (dd <= (1e-12 * m.lk2) ** 2)
    if singular.any():
        k = int(np.argmax(singular))
        raise SingularityError(f"joint angles {format_point(a2[k])} rad are singular: the three forearm "
                               f"spheres' centres are collinear" + ("" if single else f" (sample {k})"),
                               index=k, point=a2[k].tolist())
    alpha = bb * (aa - ab) / (2.0 * dd)
    beta = aa * (bb - ab) / (2.0 * dd)
    xi0 = alpha[:, None] * a + beta[:, None] * b
    h = (m.lk2 - np.einsum("ij,ij->i", xi0, xi0)) / dd
    if (h < 0).any():
        k = int(np.argmax(h < 0))
        raise UnreachableError(f"joint angles {format_point(a2[k])} rad are unreachable: the forearms "
                               f"cannot meet at one platform position" + ("" if single else f" (sample {k})"),
                               index=k, point=a2[k].tolist())
    t = np.sqrt(h) * np.where(n[:, 2] > 0, -1.0, 1.0)
    X = c1 + xi0 + t[:, None] * n
    return X[0] if single else X


def forward_kinematics_one(m, q) -> tuple:
    """:func:`forward_kinematics` of one sample of joint angles (rad) given as three finite Python
    floats, as a tuple (x, y, z) (m), without arrays: the control loop's one-sample paths
    (the same errors)."""
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        return tuple(forward_kinematics(m, q).tolist())
    return _fk_one(m, *q)


def _fk_one(m, q1, q2, q3):
    """:func:`forward_kinematics` of one sample on Python floats (the control loop's path)."""
    cs = []
    for i, q in enumerate((q1, q2, q3)):
        rad = m.R + m.l * math.cos(q) - m.r
        cs.append((rad * m.cphi[i], rad * m.sphi[i], -m.l * math.sin(q)))
    (x1, y1, z1), (x2, y2, z2), (x3, y3, z3) = cs
    ax, ay, az = x2 - x1, y2 - y1, z2 - z1
    bx, by, bz = x3 - x1, y3 - y1, z3 - z1
    nx, ny, nz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    aa, bb, ab = ax * ax + ay * ay + az * az, bx * bx + by * by + bz * bz, ax * bx + ay * by + az * bz
    dd = nx * nx + ny * ny + nz * nz
    if dd <= 1e-12 * aa * bb or dd <= (1e-12 * m.lk2) ** 2:
        raise SingularityError(f"joint angles {format_point((q1, q2, q3))} rad are singular: the three forearm "
                               f"spheres' centres are collinear", index=0, point=[q1, q2, q3])
    alpha = bb * (aa - ab) / (2.0 * dd)
    beta = aa * (bb - ab) / (2.0 * dd)
    ex, ey, ez = alpha * ax + beta * bx, alpha * ay + beta * by, alpha * az + beta * bz
    h = (m.lk2 - (ex * ex + ey * ey + ez * ez)) / dd
    if h < 0:
        raise UnreachableError(f"joint angles {format_point((q1, q2, q3))} rad are unreachable: the forearms "
                               f"cannot meet at one platform position", index=0, point=[q1, q2, q3])
    t = math.sqrt(h) * (-1.0 if nz > 0 else 1.0)
    return x1 + ex + t * nx, y1 + ey + t * ny, z1 + ez + t * nz


def jacobian(m, X):
    """J(X) with q_dot = J X_dot (Asadi eq. 9): shape (3, 3) or (N, 3, 3)."""
    if m.arms is not None:                       # per-arm geometry (geometry.per_arm)
        return chains.jacobian(m, X)
    x, y, z, xp, single = split3(X, "platform position")
    rows = []
    for i in range(3):
        q, cq, sq, px, pz, d = chain_geometry(m, i, x, y, z, xp)
        ux, uy, uz = _forearm_vector(m, i, x, y, z, cq, sq)
        rows.append(join3(ux / d, uy / d, uz / d, single))
    return np.stack(rows, axis=-2)


def _forearm_vector(m, i, x, y, z, cq, sq):
    """U_i = A_i - C_i in world coordinates (eq. 4), arm i's own geometry."""
    l = m.arm_l[i]
    rad = m.arm_dr[i] - l * cq
    return x + rad * m.cphi[i], y + rad * m.sphi[i], z + l * sq


def jacobian_derivative(m, X, Xd):
    """J_dot(X, X_dot) (Asadi eq. 12): row i is (U_dot_i - (U_dot_i^T T_i + U_i^T T_dot_i) J_i) / (U_i^T T_i)."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, _ = split3(Xd, "platform velocity")
    rows = []
    for i in range(3):
        q, cq, sq, px, pz, d = chain_geometry(m, i, x, y, z, xp)
        ux, uy, uz = _forearm_vector(m, i, x, y, z, cq, sq)
        c, s, l = m.cphi[i], m.sphi[i], m.arm_l[i]
        tx, ty, tz = -l * sq * c, -l * sq * s, -l * cq
        qd = (ux * vx + uy * vy + uz * vz) / d
        wx, wy, wz = vx - tx * qd, vy - ty * qd, vz - tz * qd            # U_dot (eq. 7)
        ut1 = l * l - l * (cq * px - sq * pz)                              # U^T dT/dq
        coef = (wx * tx + wy * ty + wz * tz + ut1 * qd) / d
        rows.append(join3((wx - coef * ux) / d, (wy - coef * uy) / d, (wz - coef * uz) / d, single))
    return np.stack(rows, axis=-2)


def passive_angles(m, X):
    """Elbow angles of each forearm, shape (3, 2) or (N, 3, 2): [chain, (bend, tilt)].

    Both bars of forearm i are parallel to U_i. In the frame of upper arm i (x along the
    arm, y along the motor axis, z completing a right-handed frame) the bar direction is
    R_y(bend) R_z(tilt) x_hat = (cos bend cos tilt, sin tilt, -sin bend cos tilt): ``bend``
    turns about the elbow axis (parallel to the motor axis), ``tilt`` about the axis
    normal to the arm's plane. Zero means the forearm continues the upper arm.
    """
    x, y, z, xp, single = split3(X, "platform position")
    out = []
    for i in range(3):
        q, cq, sq, px, pz, d = chain_geometry(m, i, x, y, z, xp)
        c, s = m.cphi[i], m.sphi[i]
        ux, uy, uz = _forearm_vector(m, i, x, y, z, cq, sq)
        # chain frame: x' = u_i (outward), y' = e_z x u_i (motor axis), z' = e_z
        lk = m.arm_lk[i]
        fx, fy, fz = (c * ux + s * uy) / lk, (c * uy - s * ux) / lk, uz / lk
        # into the arm frame: rotate by -q about y'
        ax, az = cq * fx - sq * fz, sq * fx + cq * fz
        tilt = np.arcsin(np.clip(fy, -1.0, 1.0))
        bend = np.arctan2(-az, ax)
        out.append(np.stack((bend, tilt), axis=-1))
    return np.stack(out, axis=-2)


def singularity_measure(m, X):
    """Inverse condition number of J(X) in [0, 1]: 0 at a singularity, larger is better.

    It falls to zero both where an upper arm and its forearm align (U_i^T T_i -> 0, a row
    of J blows up) and where the forearms become coplanar (J loses rank).
    """
    return workspace.inverse_condition(jacobian(m, X))


def _reachable(m, qs):
    """Platform positions of the joint vectors ``qs`` (N, 3) whose forward kinematics works
    with the platform below the elbows (the branch it picks)."""
    cen = passive_origins(m, qs)
    keep = np.ones(len(qs), bool)
    Xs = np.empty_like(qs)
    for k in range(len(qs)):
        try:
            Xs[k] = forward_kinematics(m, qs[k])
        except UnreachableError:
            keep[k] = False
    Xs = Xs[keep]
    return Xs[Xs[:, 2] < cen[keep][:, :, 2].min(axis=1)]


def sample_workspace(m, n: int, seed: int | None = 0, min_measure: float = 0.0):
    """``n`` random reachable platform positions (N, 3) with joints inside their limits.

    Joint vectors are drawn uniformly inside the position limits and mapped through forward
    kinematics; those whose forward kinematics fails, or whose singularity measure is below
    ``min_measure``, are dropped and redrawn (:func:`delta_dynamics.common.workspace.sample_workspace`).
    """
    return workspace.sample_workspace(m, n, seed, min_measure, _reachable, tries=100, batch=(2, 16))


def workspace_centre(m, samples: int = 200):
    """The platform position on the z axis with the best-conditioned Jacobian whose joint
    angles lie inside the position limits: a natural home pose (m)."""
    best, best_s = None, -1.0
    reach = m.l + m.lk
    for z in np.linspace(-0.05 * reach, -0.999 * reach, samples):
        X = np.array([0.0, 0.0, z])
        try:
            inverse_kinematics(m, X, check_limits=True)
            s = float(singularity_measure(m, X))
        except UnreachableError:
            continue
        if s > best_s:
            best, best_s = X, s
    if best is None:
        raise UnreachableError("no platform position on the z axis is reachable within the joint limits")
    return best
