"""The explicit dynamic model of Asadi & Heydari (2020), eqs. (9)-(43).

Equation of motion in the platform coordinates X (eq. 39)::

    M(X, q) X_dd + C(X, q, X_d, q_d) X_d + G(X, q) - F_P = J(X, q)^T (tau - tau_fric)

with the three-point-mass forearm of eq. (22) (see :mod:`delta_dynamics.rotary.model`). Writing
the virtual work of eq. (37) with the auxiliary Jacobians of eqs. (19)-(21) in world
coordinates (J_Ci = T_i J_i, J_Li = r_L T_i J_i, J_Ki = (1 - r_K) T_i J_i + r_K I):

* M = (m_x + 3 m_K r_K^2) I + sum_i [(I_i + m_K (1-r_K)^2 l^2) J_i^T J_i
  + m_K r_K (1-r_K) (J_i^T T_i^T + T_i J_i)]                                      (eq. 40)
* C = sum_i [(I_i + m_K (1-r_K)^2 l^2) J_i^T J_dot_i
  + m_K r_K (1-r_K) (T_i J_dot_i + q_dot_i T'_i J_i)]                               (eq. 41)
* G = (m_x + 3 m_K r_K) g e_z - sum_i g cos q_i (h_i + m_K (1-r_K) l) J_i^T         (eq. 42)

where I_i (``arm_inertia``) includes the reflected rotor inertia I_mo and m_C l^2, h_i
(``arm_moment``) = m_L r_L l + m_C l, m_x includes the platform, the payload and 3 m_A, and
T'_i = dT_i/dq_i. The printed eqs. (9) and (40) have typos (the third row of eq. 9 repeats
U_2; eq. 40 writes m_B for m_A); the model here is checked against the power balance and
Lagrange's equations of its own energy (``test/test_dynamics.py``), not against the print.

Inverse dynamics is evaluated without forming M: with w_i the columns of J^-1 (computed
from cross products of the forearm vectors, w_i = d_i (U_j x U_k) / det[U_1 U_2 U_3]),

    tau_i = I_i q_dd_i - h_i g cos q_i + m_K (1-r_K) [(1-r_K) l^2 q_dd_i + r_K T_i . X_dd - g l cos q_i]
            + w_i . F_cart + tau_fric,i,
    F_cart = m_x (X_dd + g e_z) + m_K r_K sum_j (a_Kj + g e_z) - F_P,

which is J^-T of eq. (39). With per-arm geometry (``geometry.per_arm``) every chain term above
takes arm i's own values: l -> l_i (upper arm), the forearm length and R - r of chain i in U_i,
and the arm angle theta_i = q_i + o_i in place of q_i (o_i the joint offset); the symmetric robot
has l_i = l, o_i = 0 and gives the same floats as without per_arm
(``test/test_per_arm_dynamics.py`` checks the per-arm model against Lagrange's equations).

Every function takes one sample (shape (3,)) or N samples
(shape (N, 3)); the single-sample path runs on Python floats (a few microseconds).
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.common.backend import ScalarMath, join3, split3
from delta_dynamics.common.errors import UnreachableError
from delta_dynamics.common.friction import friction_columns, friction_efforts, joint_friction
from delta_dynamics.common.joint import inverse_dynamics_joint, regressor_joint  # noqa: F401  (the kind's interface)
from delta_dynamics.common.solve import (CHUNK, chunked, components, congruence_sym3, platform_force, solve_sym3,
                                         split_state, sym3_matrix)
from delta_dynamics.rotary.kinematics import (chain_geometry, forward_kinematics, forward_kinematics_one, jacobian,
                                              jacobian_derivative)


# ----------------------------------------------------------------------------- core

def chains(m, x, y, z, vx, vy, vz, xp, geometry=None):
    """Per-chain kinematics shared by every dynamics function and the semi-implicit step
    (Asadi steps 1-4).

    Returns a list of three tuples
    ``(q, cq, sq, d, ux, uy, uz, tx, ty, tz, qd, qdd_v)`` where q is the joint position,
    cq, sq the cosine and sine of the arm angle theta = q + o_i, U = A - C, T = dC/dq,
    d = U.T, qd = U.X_dot / d (eq. 8) and qdd_v = (|U_dot|^2 - U.T' qd^2) / d is the
    velocity part of q_dd = U.X_dd / d + qdd_v (eqs. 10-11). ``geometry``: the three
    :func:`~delta_dynamics.rotary.kinematics.chain_geometry` results at (x, y, z) when the
    caller has them (the same position at another velocity).
    """
    out = []
    for i in range(3):
        q, cq, sq, px, pz, d = chain_geometry(m, i, x, y, z, xp) if geometry is None else geometry[i]
        c, s, l = m.cphi[i], m.sphi[i], m.arm_l[i]
        rad = m.arm_dr[i] - l * cq
        ux, uy, uz = x + rad * c, y + rad * s, z + l * sq
        tx, ty, tz = -l * sq * c, -l * sq * s, -l * cq
        qd = (ux * vx + uy * vy + uz * vz) / d
        wx, wy, wz = vx - tx * qd, vy - ty * qd, vz - tz * qd
        ut1 = l * l - l * (cq * px - sq * pz)
        qdd_v = (wx * wx + wy * wy + wz * wz - ut1 * qd * qd) / d
        out.append((q, cq, sq, d, ux, uy, uz, tx, ty, tz, qd, qdd_v))
    return out


def inverse_jacobian(ch, xp):
    """Columns w_i of J^-1 (so X_dot = sum_i w_i q_dot_i and J^-T F = (w_i . F)_i) from the
    chain data of :func:`chains`; UnreachableError at a parallel singularity."""
    (_, _, _, d1, ax, ay, az, *_), (_, _, _, d2, bx, by, bz, *_), (_, _, _, d3, cx, cy, cz, *_) = ch
    # cross products of the forearm vectors
    bcx, bcy, bcz = by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx
    cax, cay, caz = cy * az - cz * ay, cz * ax - cx * az, cx * ay - cy * ax
    abx, aby, abz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    det = ax * bcx + ay * bcy + az * bcz
    ok = abs(det) > 1e-12 * _forearm_scale(ch)
    bad = xp.first_bad(ok)
    if bad is not None:
        raise UnreachableError(f"platform position is at a parallel singularity: the three forearms "
                               f"are coplanar{'' if xp is ScalarMath else f' (sample {bad})'}", index=bad)
    k1, k2, k3 = d1 / det, d2 / det, d3 / det
    return ((k1 * bcx, k1 * bcy, k1 * bcz), (k2 * cax, k2 * cay, k2 * caz), (k3 * abx, k3 * aby, k3 * abz))


def _forearm_scale(ch):
    """|U|^3 scale for the singularity test (forearm length cubed, from chain 1's vector)."""
    _, _, _, _, ux, uy, uz, *_ = ch[0]
    return (ux * ux + uy * uy + uz * uz) ** 1.5


def joint_torques(m, ch, w, ax, ay, az, fp, with_friction, xp, basis=False):
    """tau from the chain data (:func:`chains`), the columns of J^-1 (:func:`inverse_jacobian`)
    and the platform acceleration (see the module docstring); ``fp``: the external platform
    force as :func:`~delta_dynamics.common.solve.platform_force` gives it, or None.

    Returns ``(tau, qdd)`` as lists over the joints; with ``basis`` it returns the
    regressor pieces ``(y_x, y_k, qdd)`` instead: the torque per unit m_x and per unit m_k.
    """
    rk, g = m.r_k, m.g
    a1 = 1.0 - rk
    qdd = []
    skx = sky = skz = 0.0          # sum_j (T_j q_dd_j + T'_j q_dot_j^2), T'_j = -l_j cq u_j + l_j sq e_z
    for i, (q, cq, sq, d, ux, uy, uz, tx, ty, tz, qd, qdd_v) in enumerate(ch):
        qa = (ux * ax + uy * ay + uz * az) / d + qdd_v
        qdd.append(qa)
        qd2 = qd * qd
        l = m.arm_l[i]
        skx = skx + tx * qa - l * cq * m.cphi[i] * qd2
        sky = sky + ty * qa - l * cq * m.sphi[i] * qd2
        skz = skz + tz * qa + l * sq * qd2
    # Cartesian force per unit m_x (platform) and per unit m_k (forearm COM points)
    fxx, fxy, fxz = ax, ay, az + g
    fkx = rk * (a1 * skx + 3.0 * rk * ax)
    fky = rk * (a1 * sky + 3.0 * rk * ay)
    fkz = rk * (a1 * skz + 3.0 * rk * az + 3.0 * g)
    yx, yk, tau = [], [], []
    for i, (q, cq, sq, d, ux, uy, uz, tx, ty, tz, qd, qdd_v) in enumerate(ch):
        wx, wy, wz = w[i]
        y_x = wx * fxx + wy * fxy + wz * fxz
        y_k = (a1 * (a1 * m.arm_l2[i] * qdd[i] + rk * (tx * ax + ty * ay + tz * az) - g * m.arm_l[i] * cq)
               + wx * fkx + wy * fky + wz * fkz)
        if basis:
            yx.append(y_x)
            yk.append(y_k)
            continue
        t = m.m_x * y_x + m.m_k * y_k + m.inertia[i] * qdd[i] - m.moment[i] * g * cq
        if fp is not None:
            t = t - (wx * fp[0] + wy * fp[1] + wz * fp[2])
        if with_friction:
            t = t + joint_friction(m, i, qd, xp)
        tau.append(t)
    if basis:
        return yx, yk, qdd
    return tau, qdd


# ----------------------------------------------------------------------------- public API

def inverse_dynamics(m, X, Xd, Xdd, F_P=None, friction: bool = True):
    """Actuator torques tau (N m) that move the platform along (X, X_dot, X_ddot).

    tau = J^-T (M X_dd + C X_d + G - F_P) + tau_fric (eq. 39 solved for tau). ``F_P`` is an
    external force on the platform (N, world frame); ``friction=False`` leaves tau_fric out.
    Raises :class:`~delta_dynamics.common.errors.UnreachableError` for an unreachable or
    singular sample. One sample in, shape (3,) out; N samples in, (N, 3) out.

    >>> from delta_dynamics.rotary.model import RotaryModel
    >>> m = RotaryModel.from_robot("nt_robot")
    >>> tau = inverse_dynamics(m, [0, 0, -0.8], [0, 0, 0], [0, 0, 0])
    >>> bool(abs(tau[0] - tau[1]) < 1e-12 and abs(tau[1] - tau[2]) < 1e-12)
    True
    """
    x, y, z, vx, vy, vz, ax, ay, az, xp, single = split_state(X, Xd, Xdd)
    if not single and len(x) > CHUNK:
        return chunked(inverse_dynamics, m, X, Xd, Xdd, F_P, friction)
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    w = inverse_jacobian(ch, xp)
    tau, _ = joint_torques(m, ch, w, ax, ay, az, platform_force(F_P, single), friction, xp)
    return join3(*tau, single)


def joint_state(m, X, Xd, Xdd=None):
    """(q, q_dot, q_ddot) from the platform state (eqs. 4, 9, 11); q_ddot is None without X_ddot."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, _ = split3(Xd, "platform velocity")
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    q = join3(*(c[0] for c in ch), single)
    qd = join3(*(c[10] for c in ch), single)
    if Xdd is None:
        return q, qd, None
    ax, ay, az, _, _ = split3(Xdd, "platform acceleration")
    qdd = [(c[4] * ax + c[5] * ay + c[6] * az) / c[3] + c[11] for c in ch]
    return q, qd, join3(*qdd, single)


def cartesian_state(m, q, qd, qdd=None):
    """(X, X_dot, X_ddot) from joint positions, velocities and accelerations.

    X from forward kinematics, X_dot = J^-1 q_dot, X_ddot = J^-1 (q_ddot - J_dot X_dot).
    """
    X = forward_kinematics(m, q)
    x, y, z, xp, single = split3(X, "platform position")
    zero = 0.0 if single else np.zeros_like(x)
    ch = chains(m, x, y, z, zero, zero, zero, xp)
    w = inverse_jacobian(ch, xp)
    qv = components(qd, single, "joint velocity")
    Xd = [w[0][k] * qv[0] + w[1][k] * qv[1] + w[2][k] * qv[2] for k in range(3)]
    if qdd is None:
        return X, join3(*Xd, single), None
    ch = chains(m, x, y, z, *Xd, xp)
    qa = components(qdd, single, "joint acceleration")
    r = [qa[i] - ch[i][11] for i in range(3)]
    Xdd = [w[0][k] * r[0] + w[1][k] * r[1] + w[2][k] * r[2] for k in range(3)]
    return X, join3(*Xd, single), join3(*Xdd, single)


def _sample_state(m, q, qd):
    """One joint state on floats: X = FK(q), X_dot = J^-1 q_dot (eq. 9), the columns of J^-1
    and the chain data at (X, X_dot), each chain's geometry computed once."""
    x, y, z = forward_kinematics_one(m, q)
    xp = ScalarMath
    geo = [chain_geometry(m, i, x, y, z, xp) for i in range(3)]
    w = inverse_jacobian(chains(m, x, y, z, 0.0, 0.0, 0.0, xp, geo), xp)
    q1, q2, q3 = qd
    Xd = tuple(w[0][k] * q1 + w[1][k] * q2 + w[2][k] * q3 for k in range(3))
    return (x, y, z), Xd, w, chains(m, x, y, z, Xd[0], Xd[1], Xd[2], xp, geo)


def joint_space_sample(m, q, qd):
    """The reduced joint-space model at one joint state on Python floats (the control loop's
    momentum observer, :mod:`delta_dynamics.monitoring.observer`): ``q``, ``qd`` three finite
    floats each (rad, rad/s). Returns ``(X, Xd, J, Jinv, Mq, h, fric)``: the platform position X
    = FK(q) (m) and velocity X_dot = J^-1 q_dot (m/s) (3-tuples), J (q_dot = J X_dot, rows U_i /
    d_i, eq. 9) and J^-1 (columns w_i, :func:`inverse_jacobian`) as three row 3-tuples, the
    joint-space mass matrix M_q = J^-T M J^-1 (eq. 40, rows), h = g_q + C_q q_dot (N m: the
    inverse dynamics at q_ddot = 0 without friction, i.e. at X_ddot = -J^-1 J_dot X_dot, eqs.
    11 and 39) and the friction at q_dot (N m). The same maths as :func:`cartesian_state`,
    :func:`mass_matrix` and :func:`inverse_dynamics` per sample, without their arrays.

    >>> from delta_dynamics.rotary.model import RotaryModel
    >>> m = RotaryModel.from_robot("nt_robot")
    >>> X, Xd, J, Ji, Mq, h, fric = joint_space_sample(m, (0.3, 0.3, 0.3), (0.0, 0.0, 0.0))
    >>> bool(np.allclose(h, inverse_dynamics(m, X, Xd, [0, 0, 0], friction=False)))
    True
    """
    (x, y, z), Xd, w, ch = _sample_state(m, q, qd)
    xp = ScalarMath
    v1, v2, v3 = (-c[11] for c in ch)                            # q_ddot = 0: J X_ddot = -J_dot X_dot
    Xdd = [w[0][k] * v1 + w[1][k] * v2 + w[2][k] * v3 for k in range(3)]
    h, _ = joint_torques(m, ch, w, Xdd[0], Xdd[1], Xdd[2], None, False, xp)
    J = tuple((c[4] / c[3], c[5] / c[3], c[6] / c[3]) for c in ch)
    Jinv = tuple((w[0][k], w[1][k], w[2][k]) for k in range(3))
    fric = tuple(joint_friction(m, i, v, xp) for i, v in enumerate(qd))
    return (x, y, z), Xd, J, Jinv, congruence_sym3(mass_matrix_entries(m, ch), w), tuple(h), fric


def inverse_dynamics_sample(m, q, qd, qdd):
    """:func:`inverse_dynamics_joint` of one joint state on Python floats (three finite floats
    each for q, q_dot, q_ddot: rad, rad/s, rad/s^2), friction included and no external force,
    as a 3-tuple (N m): the control loop's feedforward path. The maths of
    :func:`cartesian_state` then :func:`inverse_dynamics` (eqs. 9, 11, 39), with the forward
    kinematics on floats and each chain's geometry computed once instead of three times.

    >>> from delta_dynamics.rotary.model import RotaryModel
    >>> m = RotaryModel.from_robot("nt_robot")
    >>> q, qd, qdd = (0.3, 0.2, 0.4), (0.5, -1.0, 0.2), (3.0, 1.0, -2.0)
    >>> bool(np.allclose(inverse_dynamics_sample(m, q, qd, qdd), inverse_dynamics_joint(m, q, qd, qdd),
    ...                  rtol=1e-12, atol=1e-12))
    True
    """
    _, _, w, ch = _sample_state(m, q, qd)
    r1, r2, r3 = (a - c[11] for a, c in zip(qdd, ch))             # J X_ddot = q_ddot - J_dot X_dot
    Xdd = [w[0][k] * r1 + w[1][k] * r2 + w[2][k] * r3 for k in range(3)]
    tau, _ = joint_torques(m, ch, w, Xdd[0], Xdd[1], Xdd[2], None, True, ScalarMath)
    return tuple(tau)


def friction_torque(m, qd):
    """tau_fric(q_dot): viscous + Coulomb (Kim et al. eqs. 20-21) with a Stribeck break-away
    term, tau = c_v q_d + (c_c + (c_s - c_c) exp(-(q_d / v_s)^2)) sgn_eps(q_d), where sgn_eps
    is tanh(q_d / eps) (eps = friction.smoothing_velocity; exact sign when eps = 0)."""
    return friction_efforts(m, qd, "joint velocity")


def forward_dynamics(m, X, Xd, tau, F_P=None, friction: bool = True):
    """Platform acceleration X_ddot from the state and the actuator torques (eq. 43):

    X_dd = M^-1 (J^T (tau - tau_fric) + F_P - C X_d - G). Evaluated as M X_dd = J^T (tau - tau_0)
    with tau_0 the inverse dynamics at X_dd = 0, and M from eq. (40) solved in closed form.
    """
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, _ = split3(Xd, "platform velocity")
    t1, t2, t3, _, s3 = split3(tau, "joint torque")
    if s3 != single:
        raise ValueError("torque and state must both be single samples or both (N, 3)")
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    w = inverse_jacobian(ch, xp)
    zero = 0.0 if single else np.zeros_like(x)
    tau0, _ = joint_torques(m, ch, w, zero, zero, zero, platform_force(F_P, single), friction, xp)
    r = (t1 - tau0[0], t2 - tau0[1], t3 - tau0[2])
    Mx = mass_matrix_entries(m, ch)
    # b = J^T r, J_i = U_i / d_i
    bx = by = bz = 0.0
    for i, c in enumerate(ch):
        k = r[i] / c[3]
        bx, by, bz = bx + c[4] * k, by + c[5] * k, bz + c[6] * k
    return join3(*solve_sym3(Mx, bx, by, bz), single)


def mass_matrix_entries(m, ch):
    """Unique entries (xx, yy, zz, xy, xz, yz) of M (eq. 40) from the chain data of :func:`chains`."""
    rk = m.r_k
    mu = m.m_x + 3.0 * m.m_k * rk * rk
    beta = m.m_k * rk * (1.0 - rk)
    xx = yy = zz = mu
    xy = xz = yz = 0.0
    for i, (q, cq, sq, d, ux, uy, uz, tx, ty, tz, qd, qdd_v) in enumerate(ch):
        alpha = (m.inertia[i] + m.m_k * (1.0 - rk) ** 2 * m.arm_l2[i]) / (d * d)
        jx, jy, jz = ux, uy, uz                              # J_i * d_i
        bb = beta / d
        xx = xx + alpha * jx * jx + 2.0 * bb * jx * tx
        yy = yy + alpha * jy * jy + 2.0 * bb * jy * ty
        zz = zz + alpha * jz * jz + 2.0 * bb * jz * tz
        xy = xy + alpha * jx * jy + bb * (jx * ty + tx * jy)
        xz = xz + alpha * jx * jz + bb * (jx * tz + tx * jz)
        yz = yz + alpha * jy * jz + bb * (jy * tz + ty * jz)
    return xx, yy, zz, xy, xz, yz


def mass_matrix(m, X):
    """M(X, q) of eq. (40), shape (3, 3) or (N, 3, 3)."""
    x, y, z, xp, single = split3(X, "platform position")
    zero = 0.0 if single else np.zeros_like(x)
    return sym3_matrix(mass_matrix_entries(m, chains(m, x, y, z, zero, zero, zero, xp)))


def coriolis_matrix(m, X, Xd):
    """C(X, q, X_dot, q_dot) of eq. (41): C X_dot is the velocity-dependent generalized force."""
    X = np.asarray(X, dtype=float)
    Xd = np.asarray(Xd, dtype=float)
    J = jacobian(m, X)
    Jd = jacobian_derivative(m, X, Xd)
    T, Tp = _arm_tangents(m, joint_state(m, X, Xd)[0])
    qd = np.einsum("...ij,...j->...i", J, Xd)
    rk = m.r_k
    alpha = np.asarray(m.inertia) + m.m_k * (1.0 - rk) ** 2 * np.asarray(m.arm_l2)
    beta = m.m_k * rk * (1.0 - rk)
    C = np.einsum("i,...ia,...ib->...ab", alpha, J, Jd)
    C = C + beta * (np.einsum("...ia,...ib->...ab", T, Jd)
                    + np.einsum("...i,...ia,...ib->...ab", qd, Tp, J))
    return C


def gravity_vector(m, X):
    """G(X, q) of eq. (42) (N): the generalized gravity force to be balanced."""
    X = np.asarray(X, dtype=float)
    J = jacobian(m, X)
    th = joint_state(m, X, np.zeros_like(X))[0] + np.asarray(m.arm_offset)      # arm angles
    coef = m.g * np.cos(th) * (np.asarray(m.moment) + m.m_k * (1.0 - m.r_k) * np.asarray(m.arm_l))
    G = -np.einsum("...i,...ia->...a", coef, J)
    G[..., 2] += (m.m_x + 3.0 * m.m_k * m.r_k) * m.g
    return G


def _arm_tangents(m, q):
    """T_i = dC_i/dq_i and T'_i = dT_i/dq_i at joint positions q (arm angles q + o_i, arm i's
    own length l_i), shape (..., 3 chains, 3)."""
    th = np.asarray(q, dtype=float) + np.asarray(m.arm_offset)
    cq, sq = np.cos(th), np.sin(th)
    c, s, l = np.asarray(m.cphi), np.asarray(m.sphi), np.asarray(m.arm_l)
    T = np.stack((-l * sq * c, -l * sq * s, -l * cq), -1)
    Tp = np.stack((-l * cq * c, -l * cq * s, l * sq), -1)
    return T, Tp


def energy(m, X, Xd):
    """(kinetic, potential) energy (J) of the model's own mass distribution.

    T = 1/2 m_x |X_d|^2 + 1/2 sum_i I_i q_d_i^2 + 1/2 m_K sum_i |(1-r_K) T_i q_d_i + r_K X_d|^2,
    U = g (m_x z - sum_i h_i sin theta_i + m_K sum_i z_Ki), z_Ki = -(1-r_K) l_i sin theta_i + r_K z,
    theta_i = q_i + o_i the arm angle (l_i, o_i: arm i's own length and joint offset).
    """
    X = np.asarray(X, dtype=float)
    Xd = np.asarray(Xd, dtype=float)
    q, qd, _ = joint_state(m, X, Xd)
    T, _ = _arm_tangents(m, q)
    rk = m.r_k
    vk = (1.0 - rk) * T * qd[..., :, None] + rk * Xd[..., None, :]
    kin = (0.5 * m.m_x * np.sum(Xd * Xd, -1) + 0.5 * np.sum(np.asarray(m.inertia) * qd * qd, -1)
           + 0.5 * m.m_k * np.sum(vk * vk, axis=(-1, -2)))
    sq = np.sin(q + np.asarray(m.arm_offset))
    zk = -(1.0 - rk) * np.asarray(m.arm_l) * sq + rk * X[..., 2:3]
    pot = m.g * (m.m_x * X[..., 2] - np.sum(np.asarray(m.moment) * sq, -1) + m.m_k * np.sum(zk, -1))
    return kin, pot


def regressor(m, X, Xd, Xdd, stribeck: bool = False):
    """Y with tau = Y pi (pi: :meth:`~delta_dynamics.rotary.model.RotaryParameters.as_vector`, 14 columns), shape (3, 14)
    or (N, 3, 14). The Coulomb columns hold the smooth sign sgn_eps(q_d). With ``stribeck``
    the Coulomb columns become (1 - e) sgn_eps(q_d) and three more columns e sgn_eps(q_d),
    e = exp(-(q_d/v_s)^2), whose parameters are the static (break-away) torques c_s."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, _ = split3(Xd, "platform velocity")
    ax, ay, az, _, _ = split3(Xdd, "platform acceleration")
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    w = inverse_jacobian(ch, xp)
    yx, yk, qdd = joint_torques(m, ch, w, ax, ay, az, None, False, xp, basis=True)
    n = 1 if single else len(x)
    Y = np.zeros((n, 3, 17 if stribeck else 14))
    for i, c in enumerate(ch):
        Y[:, i, 0] = yx[i]
        Y[:, i, 1] = yk[i]
        Y[:, i, 2 + i] = qdd[i]
        Y[:, i, 5 + i] = -m.g * c[1]
        friction_columns(m, Y, i, c[10], stribeck)
    return Y[0] if single else Y

