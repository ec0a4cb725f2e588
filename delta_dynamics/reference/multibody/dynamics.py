"""Equations of motion of the multibody model: the augmented system of Elshami et al.
eq. (6),

    [ M    C_q^T ] [ q_dd   ]   [ Q   ]
    [ C_q  0     ] [ lambda ] = [ Q_d ]                                              (eq. 6)

with M the mass matrix, C_q the constraint Jacobian, Q the applied forces (eq. 7: forces on
the translations, G_bar^T M_bar on the Euler parameters) and Q_d = -(C_q q_dot)_q q_dot the
terms quadratic in the velocities.

How it is solved. In Euler parameters a body's block of M is
diag(m I, 4 L_bar^T I_bar L_bar) (G_bar = 2 L_bar), singular along theta, made regular by the
normalisation row of every body. Every joint equation here is written with A(theta/|theta|),
so its Jacobian has C_theta theta = 0 and the normalisation rows decouple: with
omega_bar = G_bar theta_dot the Euler-parameter rows of eq. (6) become the Newton-Euler
equations m a = F, I alpha + omega x I omega = M of each body, and the joint rows the same
equations with the same multipliers lambda. So the solver works with the body velocities
z = (v, omega) per body (world frame), where M is block diagonal and cheap to invert, and
solves eq. (6) by its Schur complement:

    (C_q M^-1 C_q^T) lambda = C_q M^-1 Q - Q_d,      a = M^-1 (Q - C_q^T lambda),

one Cholesky factorisation of a 39 x 39 (45 x 45 with the base) matrix per step, which the
projection onto the constraint manifold reuses (:mod:`.integrate`). The state stores the
Euler parameters (eq. 1), turned exactly by omega (their rate is theta_dot = G^T omega / 4).

>>> import numpy as np
>>> from delta_dynamics.reference.multibody.system import MultibodySystem
>>> s = MultibodySystem.from_robot("nt_robot")
>>> st = place_platform(s, [0.0, 0.0, -0.8])
>>> ev = Evaluation(s)
>>> a, lam = accelerations(s, ev, st, [0.0, 0.0, 0.0])
>>> ap = a.reshape(-1, 6)[s.platform]
>>> bool(ap[2] < -1.0 and abs(ap[0]) < 1e-9)      # the unpowered robot falls straight down
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotrs as _potrs

from delta_dynamics.algorithms import UnreachableError, inverse_kinematics
from delta_dynamics.reference.multibody.euler import from_rotation, rotation, rotation_unit
from delta_dynamics.reference.multibody.system import EZ, MultibodySystem, arm_frame, forearm_frame


@dataclass
class State:
    """Positions of the bodies' centres of mass ``pos`` (nb, 3), their Euler parameters
    ``theta`` (nb, 4), velocities ``vel`` (nb, 3) and angular velocities ``omega`` (nb, 3),
    all in the world frame."""

    pos: np.ndarray
    theta: np.ndarray
    vel: np.ndarray
    omega: np.ndarray

    def copy(self) -> "State":
        """An independent copy of the state."""
        return State(self.pos.copy(), self.theta.copy(), self.vel.copy(), self.omega.copy())

    @property
    def z(self) -> np.ndarray:
        """The velocity vector (v_0, omega_0, v_1, ...), shape (6 nb,)."""
        return np.concatenate([self.vel, self.omega], 1).reshape(-1)

    def set_z(self, z) -> None:
        """Set the bodies' velocities from ``z`` (v, omega per body)."""
        zz = np.asarray(z).reshape(-1, 2, 3)
        self.vel[:] = zz[:, 0]
        self.omega[:] = zz[:, 1]


class Friction:
    """Joint friction of the robot file at the motor joints (``docs/conventions.md``):
    tau_f = c_v qd + (c_c + (c_s - c_c) exp(-(qd/v_s)^2)) tanh(qd/eps), and its slope."""

    def __init__(self, robot, enabled: bool = True):
        f = robot.friction
        k = 1.0 if enabled else 0.0
        self.cv = k * np.asarray(f.viscous, dtype=float)
        self.cc = k * np.asarray(f.coulomb, dtype=float)
        self.cs = k * np.asarray(f.static, dtype=float)
        self.vs = float(f.stribeck_velocity)
        self.eps = float(f.smoothing_velocity)
        self.enabled = bool(enabled) and bool(np.any(self.cv) or np.any(self.cc) or np.any(self.cs))

    def torque(self, qd) -> np.ndarray:
        """Joint friction torques (N m) at the arms' rates ``qd`` (rad/s), the robot file's law."""
        return self.torque_and_slope(qd)[0]

    def slope(self, qd) -> np.ndarray:
        """d tau_f / d qd, clipped at 0 (the Stribeck dip stays explicit)."""
        return self.torque_and_slope(qd)[1]

    def torque_and_slope(self, qd):
        """(tau_f, d tau_f / d qd clipped at 0) at the joint velocities qd."""
        qd = np.asarray(qd, dtype=float)
        fc = self.cc + (self.cs - self.cc) * np.exp(-(qd / self.vs) ** 2)
        if self.eps > 0:
            sg = np.tanh(qd / self.eps)
            slope = self.cv + fc * (1.0 - sg * sg) / self.eps
        else:
            sg = np.sign(qd)
            slope = self.cv
        return self.cv * qd + fc * sg, np.maximum(slope, 0.0)

    def max_slope(self) -> float:
        """The largest slope (at rest), for the step size of explicit integrators."""
        if not self.enabled:
            return 0.0
        top = np.maximum(self.cc, self.cs)
        return float(np.max(self.cv + (top / self.eps if self.eps > 0 else 0.0)))


class Evaluation:
    """Per-configuration workspace (like Pinocchio's ``Data``): preallocated arrays for the
    rotation matrices, the joint vectors, C_q, the dense block-diagonal M^-1 and the
    Cholesky factor of C_q M^-1 C_q^T. One per thread."""

    def __init__(self, system: MultibodySystem):
        s = system
        nb = s.n_bodies
        self.A = np.tile(np.eye(3), (nb + 1, 1, 1))          # index nb: the ground
        self.W = np.zeros((nb + 1, 3))
        self.J = s.J0.copy()
        self.Minv = s.Minv0.copy()
        self.Iw = np.zeros((nb, 3, 3))
        self.V = None
        self.JM = None
        self.S = None
        self.chol = None


def _cross(a, b):
    """a x b row by row for (n, 3) arrays, as (a b^T).flat @ E with E the Levi-Civita symbol
    (a few times faster than np.cross on small arrays)."""
    return (a[:, :, None] * b[:, None, :]).reshape(-1, 9) @ _LEVI


def _levi_civita():
    E = np.zeros((3, 3, 3))
    E[0, 1, 2] = E[1, 2, 0] = E[2, 0, 1] = 1.0
    E[0, 2, 1] = E[2, 1, 0] = E[1, 0, 2] = -1.0
    return E.transpose(1, 2, 0).reshape(9, 3)


_LEVI = _levi_civita()


def _vectors(s: MultibodySystem, A) -> np.ndarray:
    """All joint vectors in world axes: sphere points on i, on j, dot vectors on i, on j."""
    return (A[s.vec_body] @ s.vec_local)[:, :, 0]


def evaluate(s: MultibodySystem, ev: Evaluation, st: State, friction_mass=None) -> None:
    """Fill ``ev`` for the configuration of ``st``: rotations, joint vectors, C_q, the inverse
    mass blocks (with ``friction_mass`` (3,) added to the arms about their motor axes, for the
    linearly implicit friction) and the Cholesky factor of C_q M^-1 C_q^T.

    C_q in the velocity coordinates z: a spherical part r_i(P) - r_j(P) has the columns
    (I, -r_i~) for body i and (-I, r_j~) for body j (r: the joint point from the COM, world);
    a perpendicularity (A^i a).(A^j b) has (a x b) on omega_i and -(a x b) on omega_j.
    """
    nb = s.n_bodies
    A = ev.A
    A[:nb] = rotation_unit(st.theta)
    V = _vectors(s, A)
    ev.V = V
    nS, nD = s.n_spheres, s.n_dots
    Jf = ev.J.reshape(-1)
    Jf[s._idx_si] = V[:nS][:, s._skew_pick] * s._skew_sign
    Jf[s._idx_sj] = V[nS:2 * nS][s._s_mask_j][:, s._skew_pick] * (-s._skew_sign)
    c = _cross(V[2 * nS:2 * nS + nD], V[2 * nS + nD:])
    Jf[s._idx_di] = c
    Jf[s._idx_dj] = -c[s._d_mask_j]
    Ab = A[:nb]
    At = Ab.transpose(0, 2, 1)
    ev.Iw = Ab @ s.inertia @ At
    Iinv = Ab @ s.inertia_inv @ At
    if friction_mass is not None:
        # Sherman-Morrison: (I + k e e^T)^-1 = I^-1 - k I^-1 e e^T I^-1 / (1 + k e^T I^-1 e)
        arms = s.arm_slice
        w = (Iinv[arms] @ s.e[:, :, None])[:, :, 0]
        k = np.asarray(friction_mass, dtype=float)
        c = k / (1.0 + k * (w * s.e).sum(1))
        Iinv[arms] -= c[:, None, None] * (w[:, :, None] * w[:, None, :])
    ev.Minv.reshape(-1)[s._idx_minv] = Iinv
    ev.JM = ev.J @ ev.Minv
    ev.S = ev.JM @ ev.J.T
    L, info = _potrf(ev.S, lower=1, clean=0)
    if info != 0 or not np.isfinite(L).all():
        raise UnreachableError("the constraint Jacobian lost rank: the mechanism is at a "
                               "singular configuration")
    ev.chol = L


def schur_solve(ev: Evaluation, b) -> np.ndarray:
    """(C_q M^-1 C_q^T)^-1 b with the factor in ``ev``."""
    x, info = _potrs(ev.chol, b, lower=1)
    return x


def residuals(s: MultibodySystem, st: State) -> np.ndarray:
    """The constraint functions C(q): 3 per spherical part (m), then the perpendicularity
    equations (A^i a).(A^j b) (dimensionless)."""
    nb = s.n_bodies
    A = np.empty((nb + 1, 3, 3))
    A[:nb] = rotation_unit(st.theta)
    A[nb] = np.eye(3)
    V = _vectors(s, A)
    nS, nD = s.n_spheres, s.n_dots
    R = np.zeros((nb + 1, 3))
    R[:nb] = st.pos
    sph = R[s.s_i] + V[:nS] - R[s.s_j] - V[nS:2 * nS]
    dots = (V[2 * nS:2 * nS + nD] * V[2 * nS + nD:]).sum(1)
    return np.concatenate([sph.reshape(-1), dots])


def violation(s: MultibodySystem, phi) -> float:
    """The largest constraint residual in metres: the spherical parts as they are, the
    perpendicularity residuals (the sine of a misalignment) times the forearm length."""
    ns = 3 * s.n_spheres
    m = np.abs(phi[:ns]).max() if ns else 0.0
    d = np.abs(phi[ns:]).max() * s.dot_length if len(phi) > ns else 0.0
    return float(max(m, d))


def quadratic_terms(s: MultibodySystem, ev: Evaluation, st: State) -> np.ndarray:
    """Q_d = -(C_q z)_q z: for a spherical part -w_i x (w_i x r_i) + w_j x (w_j x r_j); for a
    perpendicularity -[(w_i x (w_i x a)).b + 2 (w_i x a).(w_j x b) + a.(w_j x (w_j x b))]."""
    nb = s.n_bodies
    W = ev.W
    W[:nb] = st.omega
    Wv = W[s.vec_body]
    V = ev.V
    C1 = _cross(Wv, V)
    C2 = _cross(Wv, C1)
    nS, nD = s.n_spheres, s.n_dots
    gs = C2[nS:2 * nS] - C2[:nS]
    i0, j0 = 2 * nS, 2 * nS + nD
    gd = -(C2[i0:j0] * V[j0:] + 2.0 * C1[i0:j0] * C1[j0:] + V[i0:j0] * C2[j0:]).sum(1)
    return np.concatenate([gs.reshape(-1), gd])


def joint_rates(s: MultibodySystem, st: State) -> np.ndarray:
    """Actuated joint velocities q_dot_i = (omega_arm - omega_base) . e_i (rad/s)."""
    w = st.omega[s.arm_slice]
    if s.has_base:
        w = w - st.omega[0]
    return (w * s.e).sum(1)


def joint_angles(s: MultibodySystem, st: State) -> np.ndarray:
    """Actuated joint positions q_i from the arms' orientations (rad): the arm angle less the
    joint offset o_i (geometry.per_arm)."""
    e0, e1, e2, e3 = st.theta[s.arm_slice].T
    # first column of A (eq. 2): the arm's x axis
    x = np.stack([e0 * e0 + e1 * e1 - e2 * e2 - e3 * e3, 2.0 * (e1 * e2 + e0 * e3), 2.0 * (e1 * e3 - e0 * e2)], 1)
    return np.arctan2(-x[:, 2], (x * s.u).sum(1)) - s.arm_offset


def applied_forces(s: MultibodySystem, ev: Evaluation, st: State, tau, friction: Friction | None,
                   qd=None, fric=None) -> np.ndarray:
    """Q (eq. 7) as a flat (6 nb,) vector (force, moment per body, world): gravity, the
    gyroscopic moments -omega x I omega, the motor torques tau_i e_i on the arms (their
    reaction on the base) less the joint friction (at ``qd``, or the torques ``fric``)."""
    nb = s.n_bodies
    Q = np.empty((nb, 2, 3))
    Q[:, 0] = s.weight
    Iw_w = (ev.Iw @ st.omega[:, :, None])[:, :, 0]
    Q[:, 1] = _cross(Iw_w, st.omega)
    t = np.asarray(tau, dtype=float)
    if friction is not None and friction.enabled:
        t = t - (friction.torque(joint_rates(s, st) if qd is None else qd) if fric is None else fric)
    m = t[:, None] * s.e
    Q[s.arm_slice, 1] += m
    if s.has_base:
        Q[0, 1] -= m.sum(0)
    return Q.reshape(-1)


def solve(s: MultibodySystem, ev: Evaluation, Q, gamma):
    """Accelerations a (6 nb,: linear and angular per body, world) and multipliers lambda of
    eq. (6) for the applied forces Q (6 nb,) and right-hand side gamma (Q_d, possibly
    stabilised), by the Schur complement with the factor in ``ev``."""
    lam = schur_solve(ev, ev.JM @ Q - gamma)
    a = ev.Minv @ (Q - ev.J.T @ lam)
    return a, lam


def accelerations(s: MultibodySystem, ev: Evaluation, st: State, tau, friction: Friction | None = None,
                  baumgarte=None):
    """Body accelerations (6 nb,) and Lagrange multipliers at ``st`` under motor torques
    ``tau``. ``baumgarte`` = (alpha, beta) (1/s) replaces Q_d by Q_d - 2 alpha C_q z - beta^2 C
    (Baumgarte's stabilisation)."""
    evaluate(s, ev, st)
    gamma = quadratic_terms(s, ev, st)
    if baumgarte is not None:
        al, be = baumgarte
        gamma = gamma - 2.0 * al * (ev.J @ st.z) - be * be * residuals(s, st)
    Q = applied_forces(s, ev, st, tau, friction)
    return solve(s, ev, Q, gamma)


# ----------------------------------------------------------------------------- placing

def place_platform(s: MultibodySystem, X, Xd=(0.0, 0.0, 0.0), q=None) -> State:
    """The consistent state with the platform centre at X moving at X_dot (m, m/s): the arm
    angles by the closed-form inverse kinematics, every body's pose from them, and the body
    velocities from C_q z = 0 with the platform's velocity prescribed. Raises
    :class:`~delta_dynamics.algorithms.UnreachableError` for an unreachable X."""
    X = np.asarray(X, dtype=float)
    if q is None:
        q = inverse_kinematics(s.kinematics, X)
    nb = s.n_bodies
    pos = np.zeros((nb, 3))
    rot = np.tile(np.eye(3), (nb, 1, 1))
    for i in range(3):                  # each arm's own geometry; the arm angle is q_i + o_i
        B = s.arm_R[i] * s.u[i]
        Aa = arm_frame(s.u[i], s.e[i], float(q[i]) + float(s.arm_offset[i]))
        rot[s.arm[i]] = Aa
        pos[s.arm[i]] = B + s.arm_coms[i] * Aa[:, 0]
        C = B + s.arm_l[i] * Aa[:, 0]
        P = X + s.arm_r[i] * s.u[i]
        U = P - C
        d = U / np.linalg.norm(U)
        rot[s.forearm[i]] = forearm_frame(d, s.e[i])
        pos[s.forearm[i]] = C + s.forearm_coms[i] * d
    pos[s.platform] = X + s.platform_com
    st = State(pos, from_rotation(rot), np.zeros((nb, 3)), np.zeros((nb, 3)))
    Xd = np.asarray(Xd, dtype=float)
    if np.any(Xd):
        st.set_z(velocities_for(s, st, Xd))
    return st


def velocities_for(s: MultibodySystem, st: State, Xd) -> np.ndarray:
    """z with C_q z = 0 and the platform's velocity X_dot."""
    ev = Evaluation(s)
    evaluate(s, ev, st)
    K = np.vstack([ev.J, s.P])
    rhs = np.zeros(len(K))
    rhs[-3:] = Xd
    return np.linalg.solve(K, rhs)


def platform_position(s: MultibodySystem, st: State) -> np.ndarray:
    """The platform centre X (m): its COM less the blocks' offset."""
    if not s.platform_com.any():
        return st.pos[s.platform].copy()
    return st.pos[s.platform] - rotation(st.theta[s.platform]) @ s.platform_com


def energy(s: MultibodySystem, st: State):
    """(kinetic, potential) energy (J): sum of 1/2 m v^2 + 1/2 omega . I omega and m g z."""
    A = rotation(st.theta)
    Iw = A @ s.inertia @ A.transpose(0, 2, 1)
    kin = 0.5 * float(np.sum(s.mass * np.sum(st.vel ** 2, 1))
                      + np.einsum("bk,bkl,bl->", st.omega, Iw, st.omega))
    pot = -float(np.sum(s.mass * (st.pos @ s.gravity)))
    return kin, pot


def check_branch(s: MultibodySystem, st: State, tol: float = 1e-6) -> None:
    """Raise UnreachableError if the platform left the workspace or an arm flipped to the
    other inverse-kinematics branch (through the serial singularity at the boundary)."""
    X = platform_position(s, st)
    q_ik = inverse_kinematics(s.kinematics, X)
    q = joint_angles(s, st)
    dq = np.abs((q - q_ik + math.pi) % (2 * math.pi) - math.pi)
    if not dq.max() <= tol:
        k = int(np.argmax(dq))
        raise UnreachableError(f"arm {k + 1} passed the edge of the workspace (its forearm and upper "
                               f"arm aligned) near platform position "
                               f"({X[0]:.4g}, {X[1]:.4g}, {X[2]:.4g}) m")


__all__ = ["State", "Friction", "Evaluation", "evaluate", "residuals", "violation", "quadratic_terms", "schur_solve",
           "joint_rates", "joint_angles", "applied_forces", "solve", "accelerations", "place_platform",
           "velocities_for", "platform_position", "energy", "check_branch", "EZ"]
