"""The Lagrangian model with multipliers of the linear Delta, Colombo & Lentini (2020) eqs. (9)-(17).

Generalized coordinates (q_1, q_2, q_3, x, y, z), closure equations Gamma_i = |d_i|^2 - l^2
(eq. 2, d_i = X - c_i - q_i e_z; :mod:`delta_dynamics.linear.kinematics`), energy of the model
(:mod:`delta_dynamics.linear.model`: m_x, m_r, carriage_inertia m_c,i, carriage_mass w_c,i)

    T = 1/2 m_x |X_d|^2 + 1/2 sum_i m_c,i q_d_i^2 + 1/2 m_r sum_i |X_d - q_d_i e_z|^2
    U = g (m_x z + sum_i w_c,i q_i)

(T depends on the velocities only: the 6 x 6 mass matrix is constant). With per-rail geometry
(``geometry.per_arm``) the closure of chain i takes rail i's own c_i = (R_i - r) u_i, rod
length l_i and carriage zero o_i (Gamma_i = |X - c_i - (q_i + o_i) e_z|^2 - l_i^2); the
equations below hold as written with d_i the rod vector of chain i (the masses are the shared
ones: m_r is computed with the shared rod length). Lagrange's equations
(9), d/dt dL/dq_dot_j - dL/dq_j = sum_i lambda_i dGamma_i/dq_j + Q_j, with
dGamma_i/dq_i = -2 d_iz and dGamma_i/dX = 2 d_i, read

    X:    m_x (X_dd + g e_z) + m_r sum_i (X_dd - q_dd_i e_z) - F_P = 2 J_x^T lambda
    q_i:  m_c,i q_dd_i + w_c,i g - m_r (z_dd - q_dd_i) = Q_i - 2 lambda_i d_iz

so (eqs. 13-14 of the paper, which has m_r = 0, m_x = m_plat + 3 m_link, m_c = w_c =
m_link + m_cart, J_q = diag(d_iz))

    lambda = 1/2 J_x^-T F_X,   F_X = (m_x + 3 m_r) X_dd + m_x g e_z - m_r (sum_i q_dd_i) e_z - F_P
    Q_i = m_c,i q_dd_i + w_c,i g - m_r (z_dd - q_dd_i) + d_iz (J_x^-T F_X)_i + Q_fric,i(q_dot_i)

Q_i is the force on carriage i along +z (N); lambda_i (N/m) is the multiplier of
Gamma_i: the rod pair pushes the platform (plus its share of the rods) with 2 lambda_i d_i,
so -2 lambda_i l is the pair's tension (N) in the lumped model. At rest at the centre
Q_i = g (2 m_link + m_cart + m_plat/3) (eq. 16) and at every rest pose sum_i Q_i =
(6 m_link + m_plat + 3 m_cart) g (eq. 17): J_x^T w = e_z gives sum_i d_iz w_i = 1.

Reduced to the platform coordinates (q_dot = J X_dot, J = J_q^-1 J_x) the same model reads
M(X) X_dd + C(X, X_d) X_d + G(X) - F_P = J^T (Q - Q_fric), as for the rotary robot, with

    M = (m_x + 3 m_r) I + sum_i [(m_c,i + m_r) J_i^T J_i - m_r (e_z J_i + J_i^T e_z^T)]
    C = sum_i (m_c,i + m_r) J_i^T J_dot_i - m_r e_z sum_i J_dot_i
    G = m_x g e_z + g sum_i w_c,i J_i^T.

Every function takes one sample (shape (3,)) or N samples (shape (N, 3)); the
single-sample path runs on Python floats. Checked against the power balance (eq. 20),
Lagrange's equations of :func:`energy` and eqs. (13)-(17) in ``test/test_linear_dynamics.py``.
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.common.backend import ScalarMath, join3, split3
from delta_dynamics.common.errors import UnreachableError
from delta_dynamics.common.friction import friction_columns, friction_efforts, joint_friction
from delta_dynamics.common.joint import inverse_dynamics_joint, regressor_joint  # noqa: F401  (the kind's interface)
from delta_dynamics.common.solve import (CHUNK, chunked, components, congruence_sym3, platform_force, solve_sym3,
                                         split_state, sym3_matrix)
from delta_dynamics.linear.kinematics import (chain_geometry, forward_kinematics, forward_kinematics_one, jacobian,
                                              jacobian_derivative)

# ----------------------------------------------------------------------------- core


def chains(m, x, y, z, vx, vy, vz, xp, geometry=None):
    """Per-chain kinematics shared by every dynamics function and the semi-implicit step: a
    list of three ``(q, dx, dy, dz, qd, v2)`` with d = (dx, dy, dz) the rod vector,
    qd = d.X_dot / dz (eq. 7) and v2 = |d_dot|^2 = x_d^2 + y_d^2 + (z_d - qd)^2, so that
    q_dd = (d.X_dd + v2) / dz (eq. 8 with the sign corrected). ``geometry``: the three
    :func:`~delta_dynamics.linear.kinematics.chain_geometry` results at (x, y, z) when the
    caller has them (the same position at another velocity)."""
    out = []
    for i in range(3):
        q, dx, dy, dz = chain_geometry(m, i, x, y, z, xp) if geometry is None else geometry[i]
        qd = (dx * vx + dy * vy + dz * vz) / dz
        wz = vz - qd
        out.append((q, dx, dy, dz, qd, vx * vx + vy * vy + wz * wz))
    return out


def rod_inverse(m, ch, x, y, z, xp):
    """n_i = (d_j x d_k) / det[d_1 d_2 d_3]: the columns of J_x^-1, so that
    J_x^-T F = (n_i . F)_i and X_dot = sum_i n_i d_iz q_dot_i (J^-1 = J_x^-1 J_q), from the
    chain data of :func:`chains`; UnreachableError at a parallel singularity."""
    (_, ax, ay, az, *_), (_, bx, by, bz, *_), (_, cx, cy, cz, *_) = ch
    bcx, bcy, bcz = by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx
    cax, cay, caz = cy * az - cz * ay, cz * ax - cx * az, cx * ay - cy * ax
    abx, aby, abz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    det = ax * bcx + ay * bcy + az * bcz
    ok = abs(det) > 1e-12 * m.l2 * m.l
    bad = xp.first_bad(ok)
    if bad is not None:
        pt = tuple(float(v if np.ndim(v) == 0 else v[bad]) for v in (x, y, z))
        where = "" if xp is ScalarMath else f" (sample {bad})"
        raise UnreachableError(
            f"platform position ({', '.join(f'{v:.6g}' for v in pt)}) m is at a parallel singularity"
            f"{where}: the three rod pairs are coplanar", index=bad, point=pt)
    k = 1.0 / det
    return ((k * bcx, k * bcy, k * bcz), (k * cax, k * cay, k * caz), (k * abx, k * aby, k * abz))


def carriage_forces(m, ch, n, ax, ay, az, fp, with_friction, xp, basis=False):
    """Carriage forces from the chain data (:func:`chains`), the columns of J_x^-1
    (:func:`rod_inverse`) and the platform acceleration (module docstring); ``fp``: the external
    platform force as :func:`~delta_dynamics.common.solve.platform_force` gives it, or None.

    Returns ``(Q, qdd, lam2)`` as lists over the chains (lam2 = 2 lambda); with ``basis``
    ``(y_x, y_r, qdd)``: the forces per unit m_x and per unit m_r (regressor columns).
    """
    g = m.g
    qdd = [(dx * ax + dy * ay + dz * az + v2) / dz for _, dx, dy, dz, _, v2 in ch]
    s = qdd[0] + qdd[1] + qdd[2]
    if basis:
        yx, yr = [], []
        for i, (_, dx, dy, dz, _, _) in enumerate(ch):
            nx, ny, nz = n[i]
            yx.append(dz * (nx * ax + ny * ay + nz * (az + g)))
            yr.append(qdd[i] - az + dz * (3.0 * (nx * ax + ny * ay + nz * az) - nz * s))
        return yx, yr, qdd
    mu = m.m_x + 3.0 * m.m_r
    fx, fy, fz = mu * ax, mu * ay, mu * az + m.m_x * g - m.m_r * s
    if fp is not None:
        fx, fy, fz = fx - fp[0], fy - fp[1], fz - fp[2]
    Q, lam2 = [], []
    for i, (_, dx, dy, dz, qd, _) in enumerate(ch):
        nx, ny, nz = n[i]
        lam = nx * fx + ny * fy + nz * fz
        f = (m.carriage_inertia[i] * qdd[i] + m.carriage_mass[i] * g - m.m_r * (az - qdd[i]) + dz * lam)
        if with_friction:
            f = f + joint_friction(m, i, qd, xp)
        Q.append(f)
        lam2.append(lam)
    return Q, qdd, lam2


# ----------------------------------------------------------------------------- public API


def inverse_dynamics(m, X, Xd, Xdd, F_P=None, friction: bool = True):
    """Carriage forces Q (N, along +z) that move the platform along (X, X_dot, X_ddot): eq. (14)
    (see the module docstring), plus carriage friction unless ``friction=False``. ``F_P`` is an
    external force on the platform (N, base_link). Raises
    :class:`~delta_dynamics.common.errors.UnreachableError` for an unreachable or singular
    sample. One sample in, shape (3,) out; N samples in, (N, 3) out.

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> Q = inverse_dynamics(m, [0, 0, 0.1], [0, 0, 0], [0, 0, 0])   # eq. (16): 4.478 N each
    >>> Q.round(4).tolist(), round(float(Q.sum()), 3)              # eq. (17): 13.435 N
    ([4.4784, 4.4784, 4.4784], 13.435)
    """
    x, y, z, vx, vy, vz, ax, ay, az, xp, single = split_state(X, Xd, Xdd)
    if not single and len(x) > CHUNK:
        return chunked(inverse_dynamics, m, X, Xd, Xdd, F_P, friction)
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    n = rod_inverse(m, ch, x, y, z, xp)
    Q, _, _ = carriage_forces(m, ch, n, ax, ay, az, platform_force(F_P, single), friction, xp)
    return join3(*Q, single)


def multipliers(m, X, Xd, Xdd, F_P=None):
    """The Lagrange multipliers lambda (N/m) of eqs. (9)-(13): lambda = 1/2 J_x^-T F_X with
    F_X = (m_x + 3 m_r) X_dd + m_x g e_z - m_r (sum q_dd) e_z - F_P (eq. 13 for m_r = 0).
    Negative when the rods hold the platform up (they are in tension).

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> bool((multipliers(m, [0.02, 0.01, 0.1], [0, 0, 0], [0, 0, 0]) < 0).all())
    True
    """
    x, y, z, vx, vy, vz, ax, ay, az, xp, single = split_state(X, Xd, Xdd)
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    n = rod_inverse(m, ch, x, y, z, xp)
    _, _, lam2 = carriage_forces(m, ch, n, ax, ay, az, platform_force(F_P, single), False, xp)
    return join3(*(0.5 * v for v in lam2), single)


def rod_forces(m, X, Xd, Xdd, F_P=None):
    """Tension of each rod pair (N, both rods together; negative: compression): -2 lambda_i l_i
    (l_i: rod pair i's own length). In the lumped model it is the force along the rods on the
    platform with its half rods."""
    return -2.0 * np.asarray(m.arm_l) * multipliers(m, X, Xd, Xdd, F_P)


def joint_state(m, X, Xd, Xdd=None):
    """(q, q_dot, q_ddot) from the platform state (eqs. 6, 7, 8 with "+ v"); q_ddot is None
    without X_ddot."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, _ = split3(Xd, "platform velocity")
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    q = join3(*(c[0] for c in ch), single)
    qd = join3(*(c[4] for c in ch), single)
    if Xdd is None:
        return q, qd, None
    ax, ay, az, _, _ = split3(Xdd, "platform acceleration")
    qdd = [(dx * ax + dy * ay + dz * az + v2) / dz for _, dx, dy, dz, _, v2 in ch]
    return q, qd, join3(*qdd, single)


def cartesian_state(m, q, qd, qdd=None):
    """(X, X_dot, X_ddot) from carriage positions, velocities and accelerations: X by forward
    kinematics, X_dot = J_x^-1 J_q q_dot (eq. 4), X_ddot = J_x^-1 (J_q q_ddot - v) (eq. 5)."""
    X = forward_kinematics(m, q)
    x, y, z, xp, single = split3(X, "platform position")
    zero = 0.0 if single else np.zeros_like(x)
    ch = chains(m, x, y, z, zero, zero, zero, xp)
    n = rod_inverse(m, ch, x, y, z, xp)
    qv = components(qd, single, "carriage velocity", "carriage positions")
    r = [ch[i][3] * qv[i] for i in range(3)]
    Xd = [n[0][k] * r[0] + n[1][k] * r[1] + n[2][k] * r[2] for k in range(3)]
    if qdd is None:
        return X, join3(*Xd, single), None
    qa = components(qdd, single, "carriage acceleration", "carriage positions")
    r = []
    for i in range(3):
        wz = Xd[2] - qv[i]
        r.append(ch[i][3] * qa[i] - (Xd[0] * Xd[0] + Xd[1] * Xd[1] + wz * wz))
    Xdd = [n[0][k] * r[0] + n[1][k] * r[1] + n[2][k] * r[2] for k in range(3)]
    return X, join3(*Xd, single), join3(*Xdd, single)


def _sample_state(m, q, qd):
    """One carriage state on floats: X = FK(q), X_dot = J_x^-1 J_q q_dot (eq. 4), the columns
    n_i of J_x^-1 (:func:`rod_inverse`) and the chain data at (X, X_dot), each chain's geometry
    computed once. The chain data's d_iz does not depend on the velocity."""
    x, y, z = forward_kinematics_one(m, q)
    xp = ScalarMath
    geo = [chain_geometry(m, i, x, y, z, xp) for i in range(3)]
    n = rod_inverse(m, chains(m, x, y, z, 0.0, 0.0, 0.0, xp, geo), x, y, z, xp)
    r = [g[3] * v for g, v in zip(geo, qd)]
    Xd = tuple(n[0][k] * r[0] + n[1][k] * r[1] + n[2][k] * r[2] for k in range(3))
    return (x, y, z), Xd, n, chains(m, x, y, z, Xd[0], Xd[1], Xd[2], xp, geo)


def joint_space_sample(m, q, qd):
    """The reduced joint-space model at one carriage state on Python floats (the control loop's
    momentum observer, :mod:`delta_dynamics.monitoring.observer`): ``q``, ``qd`` three finite
    floats each (m, m/s). Returns ``(X, Xd, J, Jinv, Mq, h, fric)``: the platform position X =
    FK(q) (m) and velocity X_dot = J^-1 q_dot (m/s) (3-tuples), J = J_q^-1 J_x (rows d_i / d_iz,
    eq. 7) and J^-1 = J_x^-1 J_q (columns n_i d_iz, :func:`rod_inverse`) as three row 3-tuples,
    the joint-space mass matrix M_q = J^-T M J^-1 (module docstring, rows), h = g_q + C_q q_dot
    (N: the carriage forces at q_ddot = 0 without friction, i.e. at X_ddot = -J_x^-1 v, eq. 8,
    and eq. 14) and the friction at q_dot (N). The same maths as :func:`cartesian_state`,
    :func:`mass_matrix` and :func:`inverse_dynamics` per sample, without their arrays.

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> X, Xd, J, Ji, Mq, h, fric = joint_space_sample(m, (0.24, 0.24, 0.24), (0.0, 0.0, 0.0))
    >>> bool(np.allclose(h, inverse_dynamics(m, X, Xd, [0, 0, 0], friction=False)))
    True
    """
    (x, y, z), Xd, n, ch = _sample_state(m, q, qd)
    xp = ScalarMath
    w = tuple((c[3] * a, c[3] * b, c[3] * e) for c, (a, b, e) in zip(ch, n))      # columns of J^-1
    v1, v2, v3 = (-c[5] for c in ch)                             # q_ddot = 0: J_x X_ddot = -v
    Xdd = [n[0][k] * v1 + n[1][k] * v2 + n[2][k] * v3 for k in range(3)]
    h, _, _ = carriage_forces(m, ch, n, Xdd[0], Xdd[1], Xdd[2], None, False, xp)
    J = tuple((c[1] / c[3], c[2] / c[3], c[3] / c[3]) for c in ch)
    Jinv = tuple((w[0][k], w[1][k], w[2][k]) for k in range(3))
    fric = tuple(joint_friction(m, i, v, xp) for i, v in enumerate(qd))
    return (x, y, z), Xd, J, Jinv, congruence_sym3(mass_matrix_entries(m, ch), w), tuple(h), fric


def inverse_dynamics_sample(m, q, qd, qdd):
    """:func:`inverse_dynamics_joint` of one carriage state on Python floats (three finite
    floats each for q, q_dot, q_ddot: m, m/s, m/s^2), friction included and no external force,
    as a 3-tuple (N): the control loop's feedforward path. The maths of :func:`cartesian_state`
    then :func:`inverse_dynamics` (eqs. 4, 5, 14), with the forward kinematics on floats and
    each chain's geometry computed once instead of three times.

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("colombo2020")
    >>> q, qd, qdd = (0.24, 0.25, 0.23), (0.1, -0.2, 0.05), (1.0, 0.5, -2.0)
    >>> bool(np.allclose(inverse_dynamics_sample(m, q, qd, qdd), inverse_dynamics_joint(m, q, qd, qdd),
    ...                  rtol=1e-12, atol=1e-12))
    True
    """
    _, _, n, ch = _sample_state(m, q, qd)
    r = [c[3] * a - c[5] for c, a in zip(ch, qdd)]              # J_x X_ddot = J_q q_ddot - v (eq. 5)
    Xdd = [n[0][k] * r[0] + n[1][k] * r[1] + n[2][k] * r[2] for k in range(3)]
    Q, _, _ = carriage_forces(m, ch, n, Xdd[0], Xdd[1], Xdd[2], None, True, ScalarMath)
    return tuple(Q)


def friction_torque(m, qd):
    """Carriage friction force (N) at carriage velocity q_dot (m/s), named like the rotary
    function: f = c_v q_d + (c_c + (c_s - c_c) exp(-(q_d / v_s)^2)) sgn_eps(q_d), sgn_eps =
    tanh(q_d / eps) (eps = friction.smoothing_velocity; exact sign when eps = 0)."""
    return friction_efforts(m, qd, "carriage velocity")


def mass_matrix_entries(m, ch):
    """Unique entries (xx, yy, zz, xy, xz, yz) of M(X) (module docstring) from the chain data
    of :func:`chains`."""
    mu = m.m_x + 3.0 * m.m_r
    mr = m.m_r
    xx = yy = zz = mu
    xy = xz = yz = 0.0
    for i, (_, dx, dy, dz, _, _) in enumerate(ch):
        a = m.carriage_inertia[i] + mr
        jx, jy = dx / dz, dy / dz                       # J_i = (jx, jy, 1)
        xx = xx + a * jx * jx
        yy = yy + a * jy * jy
        zz = zz + a - 2.0 * mr
        xy = xy + a * jx * jy
        xz = xz + (a - mr) * jx
        yz = yz + (a - mr) * jy
    return xx, yy, zz, xy, xz, yz


def forward_dynamics(m, X, Xd, tau, F_P=None, friction: bool = True):
    """Platform acceleration X_ddot from the state and the carriage forces ``tau`` (N):
    M X_dd = J^T (Q - Q_0), Q_0 the inverse dynamics at X_dd = 0 (the velocity, gravity,
    friction and external-force terms); M in closed form (module docstring)."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, _ = split3(Xd, "platform velocity")
    t1, t2, t3, _, s3 = split3(tau, "carriage force")
    if s3 != single:
        raise ValueError("forces and state must both be single samples or both (N, 3)")
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    n = rod_inverse(m, ch, x, y, z, xp)
    zero = 0.0 if single else np.zeros_like(x)
    Q0, _, _ = carriage_forces(m, ch, n, zero, zero, zero, platform_force(F_P, single), friction, xp)
    r = (t1 - Q0[0], t2 - Q0[1], t3 - Q0[2])
    bx = by = bz = 0.0
    for i, c in enumerate(ch):
        k = r[i] / c[3]                                  # J^T r, J_i = d_i / d_iz
        bx, by, bz = bx + c[1] * k, by + c[2] * k, bz + c[3] * k
    return join3(*solve_sym3(mass_matrix_entries(m, ch), bx, by, bz), single)


def mass_matrix(m, X):
    """M(X) of the reduced model (module docstring), shape (3, 3) or (N, 3, 3); kinetic
    energy T = 1/2 X_dot^T M X_dot."""
    x, y, z, xp, single = split3(X, "platform position")
    zero = 0.0 if single else np.zeros_like(x)
    return sym3_matrix(mass_matrix_entries(m, chains(m, x, y, z, zero, zero, zero, xp)))


def coriolis_matrix(m, X, Xd):
    """C(X, X_dot) of the reduced model: C X_dot is the velocity-dependent generalized force,
    C = sum_i (m_c,i + m_r) J_i^T J_dot_i - m_r e_z sum_i J_dot_i."""
    J = jacobian(m, X)
    Jd = jacobian_derivative(m, X, Xd)
    a = np.asarray(m.carriage_inertia) + m.m_r
    C = np.einsum("i,...ia,...ib->...ab", a, J, Jd)
    C[..., 2, :] -= m.m_r * Jd.sum(axis=-2)
    return C


def gravity_vector(m, X):
    """G(X) = m_x g e_z + g sum_i w_c,i J_i^T (N): the generalized gravity force to balance."""
    J = jacobian(m, X)
    G = m.g * np.einsum("i,...ia->...a", np.asarray(m.carriage_mass), J)
    G[..., 2] += m.m_x * m.g
    return G


def energy(m, X, Xd):
    """(kinetic, potential) energy (J) of the model's own mass distribution (module docstring):
    T = 1/2 m_x |X_d|^2 + 1/2 sum m_c,i q_d_i^2 + 1/2 m_r sum |X_d - q_d_i e_z|^2,
    U = g (m_x z + sum w_c,i h_i), h_i = q_i + o_i the carriage joint height (zero at the base
    plane; o_i the carriage zero offset of geometry.per_arm, else 0)."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, s2 = split3(Xd, "platform velocity")
    if s2 != single:
        raise ValueError("position and velocity must both be single samples or both (N, 3)")
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    kin = 0.5 * m.m_x * (vx * vx + vy * vy + vz * vz)
    pot = m.m_x * z
    for i, (q, _, _, _, qd, v2) in enumerate(ch):
        kin = kin + 0.5 * (m.carriage_inertia[i] * qd * qd + m.m_r * v2)
        pot = pot + m.carriage_mass[i] * (q + m.arm_offset[i])
    pot = m.g * pot
    if single:
        return float(kin), float(pot)
    return kin, pot


def regressor(m, X, Xd, Xdd, stribeck: bool = False):
    """Y with Q = Y pi (pi: :meth:`~delta_dynamics.linear.model.LinearParameters.as_vector`, 14 columns in
    :data:`~delta_dynamics.linear.model.PARAMETER_NAMES` order), shape (3, 14) or (N, 3, 14). Columns: the
    forces per unit m_x and m_r, q_dd_i (carriage inertia), g (carriage weight), q_d_i
    (viscous), sgn_eps(q_d_i) (Coulomb). With ``stribeck`` the Coulomb columns become
    (1 - e) sgn_eps(q_d) and three more columns e sgn_eps(q_d), e = exp(-(q_d/v_s)^2),
    carry the static (break-away) forces, as in the rotary robot's regressor."""
    x, y, z, vx, vy, vz, ax, ay, az, xp, single = split_state(X, Xd, Xdd)
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    n = rod_inverse(m, ch, x, y, z, xp)
    yx, yr, qdd = carriage_forces(m, ch, n, ax, ay, az, None, False, xp, basis=True)
    N = 1 if single else len(x)
    Y = np.zeros((N, 3, 17 if stribeck else 14))
    for i, c in enumerate(ch):
        Y[:, i, 0] = yx[i]
        Y[:, i, 1] = yr[i]
        Y[:, i, 2 + i] = qdd[i]
        Y[:, i, 5 + i] = m.g
        friction_columns(m, Y, i, c[4], stribeck)
    return Y[0] if single else Y

