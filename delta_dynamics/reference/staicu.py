"""Inverse dynamics with every body on its own: the recursive virtual-power model of Staicu &
Carp-Ciocardia (2003), "Dynamic analysis of Clavel's Delta parallel robot".

Per chain i five moving bodies, each with its full inertia tensor (``delta_dynamics.reference.bodies``):
the upper arm (their crank T_1), the elbow block (T_2), the two parallel bars (T_3, T_6), the
platform block (T_4); and the platform (T_5). Body k has a joint frame k with its origin O_k
at the joint that carries it; the relative angles are q_i (their pi/2 - phi_10), the bend b_i
(their beta + phi_21, about the elbow axis +y') and the tilt t_i (their -phi_32, about the tilt
axis z_3); the platform block turns back by -t_i (their phi_43 = phi_32 about a z_4 that
points against z_3), so it stays parallel to the elbow block:

* frame 1 (arm):            R_1 = Rz(phi_i) Ry(q),       origin B_i = R u_i,     axis y
* frame 2 (elbow block):    R_2 = R_1 Ry(b),             origin C_i, r_21 = l x   axis y
* frame 3, 6 (bars a, b):   R_3 = R_6 = R_2 Rz(t),       r_32 = +s/2 y, r_62 = -s/2 y, axis z
* frame 4 (platform block): R_4 = R_3 Rz(-t) = R_2,      r_43 = l_K x,            axis z (rate -t_dot)
* platform: translates only, its COM X = A_i - r u_i, A_i = O_4 - s/2 y_4 (their r_54, r_5^G).

Per-arm geometry (``geometry.per_arm``, a calibrated robot): the recursion runs chain by chain,
so chain i simply takes its own values: joint offset o_i (R_1 = Rz(phi_i) Ry(q_i + o_i), the
arm angle), base radius R_i (B_i = R_i u_i), upper-arm length L_i (r_21 = L_i x), forearm length
l_i (r_43 = l_i x) and platform radius r_i (A_i = X + r_i u_i); its bars carry the forearm's
mass laid along l_i (:func:`~delta_dynamics.reference.bodies.chain_bar`: COM and inertia scaled
by l_i / l_K and its square, as the explicit model's point masses and the MuJoCo and multibody
models). Without ``per_arm`` every chain's values are the shared ones (o_i = 0) and the
floats are those of the model before it took per-arm geometry.

Our frames are theirs turned so each joint turns about the local y or z axis (the paper's
constant matrices theta_1..theta_4 of eq. 2 put every axis on z); the passing matrices are
a_{k,k-1} = R_k^T R_{k-1} as in eq. (3). The paper's frames, angles and tensors map onto ours as
written in ``docs/reference_models.md`` (q = pi/2 - phi_10, tau = -m_10 on ``staicu2003``).

Kinematics, recursively in the joint frames (eqs. 10-16), e_k the joint axis (their u_3)::

    omega_k = a_{k,k-1} omega_{k-1} + phi_dot_k e_k                                  (11)
    v_k     = a_{k,k-1} (v_{k-1} + omega_{k-1} x r_{k,k-1})                           (12)
    eps_k   = a_{k,k-1} eps_{k-1} + phi_ddot_k e_k + phi_dot_k (a_{k,k-1} omega_{k-1}) x e_k   (15)
    gam_k   = a_{k,k-1} (gam_{k-1} + (omega~_{k-1}^2 + eps~_{k-1}) r_{k,k-1})          (16)

The relative rates come from the loop closure (eq. 13): the platform joint A_i moves with the
platform, K_i [q_dot, b_dot, t_dot]^T = X_dot with K_i = [y' x (A_i - B_i), y' x U_i, z_3 x U_i]
(U_i = A_i - C_i); the relative accelerations from its derivative (eq. 14),
K_i [q_ddot, b_ddot, t_ddot]^T = X_ddot - gam_A(phi_ddot = 0).

Dynamics by virtual powers (eqs. 17-18). Inertia minus weight wrench of body k about O_k::

    F_k0 = m_k [gam_k + (omega~_k^2 + eps~_k) r_k^C] - m_k g_k
    M_k0 = m_k r~_k^C gam_k + J_k eps_k + omega~_k J_k omega_k - r~_k^C m_k g_k

with J_k the tensor **about O_k** (eq. 18 needs it there: J_k = J_C + m (|c|^2 I - c c^T)),
summed from the leaves to the root, F_k = F_k0 + sum_c a_{c,k}^T F_c,
M_k = M_k0 + sum_c (a_{c,k}^T M_c + r~_{c,k} a_{c,k}^T F_c). A virtual motion with actuator j
at unit speed and the others held moves the platform by w_j (column j of J^-1) and each leg's
joints by omega^v = K_i^-1 w_j; the virtual power balance (eq. 17) gives

    tau_j = sum_i [omega^v_1 e.M_1 + omega^v_2 e.M_2 + omega^v_3 (e.M_3 + e.M_6 - e.M_4)]_i
            + w_j . (m_P (X_ddot - g) - F_P) + I_rotor q_ddot_j (+ joint friction),

and the actuator powers p_j = tau_j q_dot_j. The paper's eq. (17) writes the bar terms as
omega_32 (M_3 + M_4 + M_6): their a_43 = a_43^phi theta_3 turns z_4 against z_3, so
phi_43 = +phi_32 there; our z_4 = z_3 and T_4 turns by -t, hence -e.M_4. Their tree carries
the platform on leg A (omega_54 M_5); ours adds its translation power w_j . F_P directly
(it never turns). Slips of the print (``docs/reference_models.md``): theta_3 is printed
diag(-1, 1, 1), a reflection; it must be diag(-1, 1, -1) (a half turn about y), else the
legs do not meet; M_k0 is printed with J eps~ and omega~ J omega~ (matrices), read J eps
and omega~ J omega. The model is checked against its own energy (power balance, Lagrange's
equations) in ``test/test_staicu.py``, not against the print.

Every function takes one sample (shape (3,)) or N samples ((N, 3)).

>>> sm = StaicuModel.from_robot("staicu2003")
>>> tau = inverse_dynamics(sm, [0.0, 0.0, -0.35], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
>>> bool(np.ptp(tau) < 1e-9 and tau[0] < 0)       # symmetric pose; holding up takes tau < 0
True
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from delta_core.robot_file import RobotParameters, load_robot
from delta_dynamics.algorithms import UnreachableError, friction_torque, inverse_kinematics
from delta_dynamics.kinds import model_for
from delta_dynamics.reference.bodies import RigidBody, body_set, chain_bar, require_rotary

_EX, _EY, _EZ = np.eye(3)
_CHUNK = 2048


class StaicuModel:
    """The static part of the model (geometry, bodies and their tensors about the joint points,
    in the joint frames); immutable, shared by any number of calls. Build it with
    :meth:`from_robot`. ``explicit`` is the explicit :class:`~delta_dynamics.rotary.model.RotaryModel`
    of the same robot file (:func:`delta_dynamics.kinds.model_for`), used for inverse kinematics
    and joint friction. ``l``, ``lk``, ``r``: the shared lengths (m); ``arm_l``, ``arm_lk``,
    ``arm_r``, ``arm_offset``: each chain's own L_i, l_i, r_i (m) and o_i (rad), shape (3,);
    ``com`` (3, 5, 3), ``J`` and ``inertia`` (3, 5, 3, 3): per chain and body (arm, elbow block,
    bar a, bar b, platform block) the COM from the joint point and the tensor about it, in the
    joint frame, and the principal tensor about the COM in the body frame."""

    __slots__ = ("robot", "bodies", "explicit", "l", "lk", "s", "r", "arm_l", "arm_lk", "arm_r", "arm_offset",
                 "Rc", "B", "g", "mass", "com", "J", "inertia", "m_platform", "rotor")

    def __init__(self, robot: RobotParameters):
        require_rotary(robot, "Staicu's recursive model")
        bs = body_set(robot)
        geo = robot.geometry
        s = object.__setattr__
        s(self, "robot", robot)
        s(self, "bodies", bs)
        s(self, "explicit", model_for(robot))
        s(self, "l", geo.upper_arm_length)
        s(self, "lk", geo.forearm_length)
        s(self, "s", geo.forearm_spacing)
        s(self, "r", geo.platform_radius)
        # each chain's own geometry (geometry.per_arm; else the shared values, joint offset 0)
        arms = [geo.arm(i) for i in range(3)]
        for name, field in (("arm_l", "upper_arm_length"), ("arm_lk", "forearm_length"),
                            ("arm_r", "platform_radius"), ("arm_offset", "joint_offset")):
            v = np.array([a[field] for a in arms], dtype=float)
            v.setflags(write=False)
            s(self, name, v)
        phi = np.radians(np.asarray(geo.chain_angles_deg, dtype=float))
        c, sn = np.cos(phi), np.sin(phi)
        Rc = np.zeros((3, 3, 3))
        Rc[:, 0, 0], Rc[:, 0, 1], Rc[:, 1, 0], Rc[:, 1, 1], Rc[:, 2, 2] = c, -sn, sn, c, 1.0
        s(self, "Rc", Rc)
        R = np.array([a["base_radius"] for a in arms])
        s(self, "B", R[:, None] * np.stack((c, sn, np.zeros(3)), -1))
        s(self, "g", np.array([0.0, 0.0, -robot.gravity]))
        # bodies in joint-frame order: arm (1), elbow block (2), bar a (3), bar b (6), platform block (4)
        half = 0.5 * self.s
        block = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # block body frame -> joint frame: Rz(pi/2)
        eye = np.eye(3)
        com, J, Jc = [], [], []
        for i in range(3):
            bar = chain_bar(bs.bar, self.arm_lk[i] / self.lk)
            specs = ((bs.upper_arm, bs.upper_arm.com * _EX, eye),
                     (bs.elbow_block, np.zeros(3), block),
                     (bar, bar.com * _EX, eye),
                     (bar, bar.com * _EX, eye),
                     (bs.platform_block, -half * _EY, block))
            com.append([c_ for _, c_, _ in specs])
            J.append([joint_point_inertia(b, c_, P) for b, c_, P in specs])
            Jc.append([np.diag(b.inertia) for b, _, _ in specs])
        s(self, "mass", np.array([b.mass for b in (bs.upper_arm, bs.elbow_block, bs.bar, bs.bar, bs.platform_block)]))
        s(self, "com", np.array(com))
        s(self, "J", np.array(J))
        s(self, "inertia", np.array(Jc))
        s(self, "m_platform", bs.platform.mass)
        s(self, "rotor", bs.rotor_inertia)

    def __setattr__(self, name, value):
        raise AttributeError("StaicuModel is immutable; build a new one from a robot file")

    @classmethod
    def from_robot(cls, robot: str | os.PathLike | RobotParameters) -> "StaicuModel":
        """A model from a preset name, a robot file path or loaded RobotParameters."""
        return cls(load_robot(robot))

    def __repr__(self) -> str:
        return f"StaicuModel({self.robot.name!r}, bodies: {self.bodies.source})"


def joint_point_inertia(body: RigidBody, com, to_joint=None) -> np.ndarray:
    """The tensor of ``body`` about its joint point O_k in its joint frame (eq. 18 needs it
    there): J_O = P diag(I) P^T + m (|c|^2 I - c c^T), with ``com`` = c the COM from O_k in
    the joint frame and ``to_joint`` = P the body frame's axes in the joint frame.

    >>> from delta_dynamics.reference.bodies import RigidBody
    >>> joint_point_inertia(RigidBody(2.0, (0.0, 1.0, 1.0), 0.5, 1.0), [0.5, 0, 0]).diagonal().tolist()
    [0.0, 1.5, 1.5]
    """
    c = np.asarray(com, dtype=float)
    P = np.eye(3) if to_joint is None else np.asarray(to_joint, dtype=float)
    return P @ np.diag(body.inertia) @ P.T + body.mass * (c @ c * np.eye(3) - np.outer(c, c))


# ----------------------------------------------------------------------------- helpers

def _cross(a, b):
    return np.stack((a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]), -1)


def _mv(A, v):
    return (A @ v[..., None])[..., 0]


def _mtv(A, v):
    return (v[..., None, :] @ A)[..., 0, :]


def _rot(c, s, axis):
    """Rotations about y (axis 1) or z (axis 2) by the angle with cosine c and sine s."""
    R = np.zeros(np.shape(c) + (3, 3))
    if axis == 1:
        R[..., 0, 0], R[..., 0, 2], R[..., 1, 1], R[..., 2, 0], R[..., 2, 2] = c, s, 1.0, -s, c
    else:
        R[..., 0, 0], R[..., 0, 1], R[..., 1, 0], R[..., 1, 1], R[..., 2, 2] = c, -s, s, c, 1.0
    return R


def _as_batch(a, name):
    arr = np.asarray(a, dtype=float)
    if arr.shape == (3,):
        arr, single = arr[None, :], True
    elif arr.ndim == 2 and arr.shape[1] == 3:
        single = False
    else:
        raise ValueError(f"{name} must have shape (3,) or (N, 3), got {arr.shape}")
    if not np.isfinite(arr).all():
        row = int(np.argmin(np.isfinite(arr).all(axis=1)))
        raise ValueError(f"{name} must be finite, got {arr[row].tolist()} at sample {row}")
    return arr, single


@dataclass(frozen=True)
class Configuration:
    """Positions of one batch (N samples x 3 chains): the relative angles and every frame.

    ``q``, ``bend``, ``tilt``: (N, 3) rad; ``R1``, ``R2``, ``R3``: (N, 3, 3, 3) joint-frame
    axes in ``base_link``; ``B``, ``C``, ``A``: motor axis point, elbow and platform joint,
    (N, 3, 3); ``K``: the loop-closure matrix of eq. (13), (N, 3, 3, 3), and ``Kinv`` its
    inverse; ``a21``, ``a32``, ``a43``: the passing matrices (N, 3, 3, 3) of eq. (3)."""

    q: np.ndarray
    bend: np.ndarray
    tilt: np.ndarray
    R1: np.ndarray
    R2: np.ndarray
    R3: np.ndarray
    B: np.ndarray
    C: np.ndarray
    A: np.ndarray
    K: np.ndarray
    Kinv: np.ndarray
    a21: np.ndarray
    a32: np.ndarray
    a43: np.ndarray


def configuration(sm: StaicuModel, X) -> Configuration:
    """Inverse geometry (section 2): q from the explicit model's closed form, then the bend and
    tilt that point the bars along U_i = A_i - C_i: in the arm frame
    U_i / l_K = (cos b cos t, sin t, -sin b cos t) (``kinematics.passive_angles``)."""
    Xb, _ = _as_batch(X, "platform position")
    q = inverse_kinematics(sm.explicit, Xb)                          # (N, 3)
    th = q + sm.arm_offset if sm.arm_offset.any() else q             # arm angle theta_i = q_i + o_i
    R1 = sm.Rc @ _rot(np.cos(th), np.sin(th), 1)
    B = np.broadcast_to(sm.B, R1.shape[:2] + (3,))
    l, lk = sm.arm_l[:, None], sm.arm_lk[:, None]                    # each chain's own L_i, l_i
    C = B + l * R1[..., :, 0]
    u = sm.Rc[:, :, 0]                                               # outward u_i
    A = Xb[:, None, :] + sm.arm_r[:, None] * u
    U = A - C
    ua = _mtv(R1, U) / lk                                            # bar direction in the arm frame
    st = np.clip(ua[..., 1], -1.0, 1.0)
    ct = np.sqrt(1.0 - st * st)
    bend = np.arctan2(-ua[..., 2], ua[..., 0])
    tilt = np.arcsin(st)
    Ry_b = _rot(np.cos(bend), np.sin(bend), 1)
    Rz_t = _rot(ct, st, 2)
    R2 = R1 @ Ry_b
    R3 = R2 @ Rz_t
    yp = R1[..., :, 1]
    k1, k2, k3 = _cross(yp, A - B), _cross(yp, U), _cross(R3[..., :, 2], U)
    det = np.sum(k1 * _cross(k2, k3), -1)
    bad = np.abs(det) <= 1e-9 * (sm.arm_l + sm.arm_lk) * sm.arm_lk ** 2
    if bad.any():
        k, i = (int(v) for v in np.argwhere(bad)[0])
        raise UnreachableError(f"platform position {Xb[k].tolist()} m (sample {k}): forearm {i + 1} is "
                               f"stretched along its upper arm (serial singularity)", index=k, point=Xb[k].tolist())
    K = np.stack((k1, k2, k3), -1)
    # K^-1: rows are the cross products of K's columns over det (Cramer)
    Kinv = np.stack((_cross(k2, k3), _cross(k3, k1), _cross(k1, k2)), -2) / det[..., None, None]
    return Configuration(q, bend, tilt, R1, R2, R3, B, C, A, K, Kinv,
                         np.swapaxes(Ry_b, -1, -2), np.swapaxes(Rz_t, -1, -2), Rz_t)


@dataclass(frozen=True)
class Motion:
    """Velocities and accelerations of every joint frame (eqs. 10-16), in that frame.

    ``rates``/``accels``: (N, 3 chains, 3) relative rates (q, bend, tilt) and their
    derivatives; ``omega``, ``eps``, ``v``, ``gam``: (N, 3, 5, 3) angular velocity and
    acceleration of frames 1, 2, 3, 6, 4 and the velocity and acceleration of their origins."""

    rates: np.ndarray
    accels: np.ndarray
    omega: np.ndarray
    eps: np.ndarray
    v: np.ndarray
    gam: np.ndarray


def _recursion(sm, cfg, rates, accels, path_only=False):
    """Eqs. (11), (12), (15), (16) from the base (at rest) out along each leg; ``path_only``:
    only the frames from the base to the platform joint (1, 2, 3, 4)."""
    n = cfg.q.shape[0]
    qd, bd, td = rates[..., 0], rates[..., 1], rates[..., 2]
    qa, ba, ta = accels[..., 0], accels[..., 1], accels[..., 2]
    a21, a32, a43 = cfg.a21, cfg.a32, cfg.a43      # Ry(b)^T; Rz(t)^T (also a_62); Rz(-t)^T
    half = 0.5 * sm.s
    zero = np.zeros((n, 3, 3))

    def step(a, w0, e0, v0, g0, r, axis, rate, acc):
        aw = _mv(a, w0)
        w = aw + rate[..., None] * axis
        e = _mv(a, e0) + acc[..., None] * axis + rate[..., None] * _cross(aw, np.broadcast_to(axis, aw.shape))
        wr = _cross(w0, r)
        v = _mv(a, v0 + wr)
        g = _mv(a, g0 + _cross(e0, r) + _cross(w0, wr))
        return w, e, v, g

    # frame 1: the base is at rest, O_1 = B_i fixed; omega_1 = q_dot y, eps_1 = q_ddot y
    w1 = qd[..., None] * _EY
    e1 = qa[..., None] * _EY
    v1 = g1 = zero
    w2, e2, v2, g2 = step(a21, w1, e1, v1, g1, np.broadcast_to(sm.arm_l[:, None] * _EX, w1.shape), _EY, bd, ba)
    w3, e3, v3, g3 = step(a32, w2, e2, v2, g2, np.broadcast_to(half * _EY, w1.shape), _EZ, td, ta)
    w4, e4, v4, g4 = step(a43, w3, e3, v3, g3, np.broadcast_to(sm.arm_lk[:, None] * _EX, w1.shape), _EZ, -td, -ta)
    if path_only:
        return w4, e4, g4
    w6, e6, v6, g6 = step(a32, w2, e2, v2, g2, np.broadcast_to(-half * _EY, w1.shape), _EZ, td, ta)
    stack = lambda *a: np.stack(a, -2)                              # noqa: E731
    return (stack(w1, w2, w3, w6, w4), stack(e1, e2, e3, e6, e4), stack(v1, v2, v3, v6, v4),
            stack(g1, g2, g3, g6, g4))


def _platform_joint_acceleration(sm, cfg, w4, e4, g4):
    """gam_A in base_link: frame 4's origin plus (omega~^2 + eps~) r_54, r_54 = -s/2 y (eq. 16)."""
    r = np.broadcast_to(-0.5 * sm.s * _EY, w4.shape)
    local = g4 + _cross(e4, r) + _cross(w4, _cross(w4, r))
    return _mv(cfg.R2, local)                                      # R_4 = R_2


def motion(sm: StaicuModel, cfg: Configuration, Xd, Xdd=None) -> Motion:
    """Relative rates from eq. (13), relative accelerations from eq. (14), and the recursion."""
    Vb, _ = _as_batch(Xd, "platform velocity")
    rates = _mv(cfg.Kinv, Vb[:, None, :])
    zeros = np.zeros_like(rates)
    if Xdd is None:
        omega, eps, v, gam = _recursion(sm, cfg, rates, zeros)
        return Motion(rates, None, omega, None, v, None)
    Ab, _ = _as_batch(Xdd, "platform acceleration")
    bias = _platform_joint_acceleration(sm, cfg, *_recursion(sm, cfg, rates, zeros, path_only=True))
    accels = _mv(cfg.Kinv, Ab[:, None, :] - bias)
    omega, eps, v, gam = _recursion(sm, cfg, rates, accels)
    return Motion(rates, accels, omega, eps, v, gam)


def _check_batches(X, Xd, Xdd):
    n = [np.shape(a)[0] if np.ndim(a) == 2 else None for a in (X, Xd, Xdd)]
    if len(set(n)) != 1:
        raise ValueError("position, velocity and acceleration must all be single samples "
                         "or all (N, 3) with the same N")


# ----------------------------------------------------------------------------- public API

def inverse_dynamics(sm: StaicuModel, X, Xd, Xdd, F_P=None, friction: bool = True,
                     powers: bool = False):
    """Actuator torques (N m) moving the platform along (X, X_dot, X_ddot), eqs. (10)-(18).

    ``F_P``: an external force on the platform (N, base_link; shape (3,) or (N, 3));
    ``friction``: add the robot file's joint friction (as the explicit model does);
    ``powers``: return ``(tau, p)`` with the actuator powers p_j = tau_j q_dot_j (W).
    Raises :class:`~delta_dynamics.rotary.kinematics.UnreachableError` for an unreachable sample.
    """
    _check_batches(X, Xd, Xdd)
    Xb, single = _as_batch(X, "platform position")
    if len(Xb) > _CHUNK:
        # blocks of samples whose (N, 3, 5, 3, 3) work arrays stay small
        Vb, Ab = np.asarray(Xd, dtype=float), np.asarray(Xdd, dtype=float)
        F = None if F_P is None else np.asarray(F_P, dtype=float)
        parts = []
        for k in range(0, len(Xb), _CHUNK):
            sl = slice(k, k + _CHUNK)
            try:
                parts.append(inverse_dynamics(sm, Xb[sl], Vb[sl], Ab[sl],
                                              F if F is None or F.ndim == 1 else F[sl], friction, powers))
            except UnreachableError as e:
                raise UnreachableError(str(e).replace(f"(sample {e.index})", f"(sample {e.index + k})"),
                                       index=e.index + k, point=e.point) from None
        if powers:
            return np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])
        return np.concatenate(parts)
    try:
        cfg = configuration(sm, Xb)
    except UnreachableError as e:
        if not single:
            raise
        raise UnreachableError(str(e).replace(" (sample 0)", ""), index=0, point=e.point) from None
    mo = motion(sm, cfg, Xd, Xdd)
    Ab, _ = _as_batch(Xdd, "platform acceleration")
    # eq. (18): each body's inertia-minus-weight wrench about its joint point, in its frame
    R = np.stack((cfg.R1, cfg.R2, cfg.R3, cfg.R3, cfg.R2), -3)      # (N, 3, 5, 3, 3)
    g_loc = _mtv(R, np.broadcast_to(sm.g, R.shape[:-1]))
    m, c = sm.mass[:, None], sm.com
    w, e, gam = mo.omega, mo.eps, mo.gam
    F0 = m * (gam + _cross(e, c) + _cross(w, _cross(w, c)) - g_loc)
    Jw = np.einsum("ikab,nikb->nika", sm.J, w)
    M0 = (m * _cross(c, gam - g_loc) + np.einsum("ikab,nikb->nika", sm.J, e) + _cross(w, Jw))
    # from the leaves to the root: M_k = M_k0 + a^T M_c + r~ a^T F_c
    a21, a32, a43 = cfg.a21, cfg.a32, cfg.a43
    half = 0.5 * sm.s
    F4, M4 = F0[..., 4, :], M0[..., 4, :]
    F6, M6 = F0[..., 3, :], M0[..., 3, :]
    F4b = _mtv(a43, F4)
    F3 = F0[..., 2, :] + F4b
    M3 = M0[..., 2, :] + _mtv(a43, M4) + _cross(np.broadcast_to(sm.arm_lk[:, None] * _EX, F4b.shape), F4b)
    F3b, F6b = _mtv(a32, F3), _mtv(a32, F6)
    F2 = F0[..., 1, :] + F3b + F6b
    M2 = (M0[..., 1, :] + _mtv(a32, M3) + _cross(np.broadcast_to(half * _EY, F3b.shape), F3b)
          + _mtv(a32, M6) + _cross(np.broadcast_to(-half * _EY, F6b.shape), F6b))
    F2b = _mtv(a21, F2)
    M1 = M0[..., 0, :] + _mtv(a21, M2) + _cross(np.broadcast_to(sm.arm_l[:, None] * _EX, F2b.shape), F2b)
    # generalized forces of the leg joints (q, bend, tilt); T_4 turns by -t relative to T_3
    Q = np.stack((M1[..., 1], M2[..., 1], M3[..., 2] + M6[..., 2] - M4[..., 2]), -1)   # (N, 3, 3)
    # eq. (17): virtual motions. Actuator j at unit speed moves the platform by w_j = J^-1 e_j
    # and leg i's joints by K_i^-1 w_j
    W = np.linalg.inv(cfg.Kinv[..., 0, :])                          # J^-1 (N, 3, 3): columns w_j
    omega_v = np.einsum("nirc,ncj->njir", cfg.Kinv, W)              # (N, actuator j, leg i, rate r)
    Fp = sm.m_platform * (Ab - sm.g)
    if F_P is not None:
        f = np.asarray(F_P, dtype=float)
        if f.shape != (3,) and f.shape != Ab.shape:
            raise ValueError(f"external platform force must have shape (3,) or (N, 3), got {f.shape}")
        if not np.isfinite(f).all():
            raise ValueError("external platform force must be finite")
        Fp = Fp - f
    tau = np.einsum("njir,nir->nj", omega_v, Q) + np.einsum("ncj,nc->nj", W, Fp)
    tau = tau + sm.rotor * mo.accels[..., 0]
    qd = mo.rates[..., 0]
    if friction:
        tau = tau + friction_torque(sm.explicit, qd)
    if single:
        tau, qd = tau[0], qd[0]
    if powers:
        return tau, tau * qd
    return tau


def joint_state(sm: StaicuModel, X, Xd, Xdd=None):
    """(q, q_dot, q_ddot) of the actuated joints from eqs. (13)-(14); q_ddot None without X_ddot."""
    Xb, single = _as_batch(X, "platform position")
    cfg = configuration(sm, Xb)
    mo = motion(sm, cfg, Xd, Xdd)
    out = [cfg.q, mo.rates[..., 0], None if mo.accels is None else mo.accels[..., 0]]
    return tuple(o if o is None or not single else o[0] for o in out)


def body_poses(sm: StaicuModel, X):
    """World COM positions (N, 3, 5, 3) and body-frame axes (N, 3, 5, 3, 3) of the arm, elbow
    block, bar a, bar b and platform block of each chain, from the geometry alone (the body
    frames of ``delta_dynamics.reference.bodies``)."""
    cfg = configuration(sm, X)
    R = np.stack((cfg.R1, cfg.R2, cfg.R3, cfg.R3, cfg.R2), -3)
    half = 0.5 * sm.s
    y = cfg.R2[..., :, 1]
    origins = np.stack((cfg.B, cfg.C, cfg.C + half * y, cfg.C - half * y, cfg.A + half * y), -2)
    com = origins + np.einsum("nikab,ikb->nika", R, sm.com)
    block = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    body_axes = R.copy()
    body_axes[..., 1, :, :] = R[..., 1, :, :] @ block
    body_axes[..., 4, :, :] = R[..., 4, :, :] @ block
    return com, body_axes


def energy(sm: StaicuModel, X, Xd):
    """(kinetic, potential) energy (J) of all bodies, in base_link, from the joint rates:
    arm omega = q_dot y', blocks (q_dot + b_dot) y', bars (q_dot + b_dot) y' + t_dot z_3;
    COM velocities v = omega_1 x (C - B) + omega_bar x (COM - O_bar) etc. (the bars' offsets
    +-s/2 y' lie on the elbow axis, so both bars' COMs move alike), the platform X_dot;
    T = sum 1/2 m |v_C|^2 + 1/2 omega^T J_C omega + 1/2 I_rotor q_dot^2, U = sum m g z_C."""
    Xb, single = _as_batch(X, "platform position")
    Vb, _ = _as_batch(Xd, "platform velocity")
    cfg = configuration(sm, Xb)
    mo = motion(sm, cfg, Vb)
    qd, bd, td = mo.rates[..., 0], mo.rates[..., 1], mo.rates[..., 2]
    yp = cfg.R1[..., :, 1]
    z3 = cfg.R3[..., :, 2]
    com, axes = body_poses(sm, Xb)
    w1 = qd[..., None] * yp
    w2 = (qd + bd)[..., None] * yp
    w3 = w2 + td[..., None] * z3
    vC = _cross(w1, cfg.C - cfg.B)
    v_arm = _cross(w1, com[..., 0, :] - cfg.B)
    y2 = 0.5 * sm.s * cfg.R2[..., :, 1]
    v_bar_a = vC + _cross(w3, com[..., 2, :] - (cfg.C + y2))
    v_bar_b = vC + _cross(w3, com[..., 3, :] - (cfg.C - y2))
    vel = np.stack((v_arm, vC, v_bar_a, v_bar_b, np.broadcast_to(Vb[:, None, :], vC.shape)), -2)
    omg = np.stack((w1, w2, w3, w3, w2), -2)
    wb = np.einsum("nikab,nika->nikb", axes, omg)                  # omega in the body frames
    kin = (0.5 * np.einsum("k,nika,nika->n", sm.mass, vel, vel)
           + 0.5 * np.einsum("nika,ikab,nikb->n", wb, sm.inertia, wb)
           + 0.5 * sm.rotor * np.sum(qd * qd, -1) + 0.5 * sm.m_platform * np.sum(Vb * Vb, -1))
    pot = -(np.einsum("k,nika,a->n", sm.mass, com, sm.g) + sm.m_platform * Xb @ sm.g)
    if single:
        return float(kin[0]), float(pot[0])
    return kin, pot


def trajectory_torques(robot, trajectory) -> np.ndarray:
    """Rigid-body torques (N, 3) along a :class:`~delta_dynamics.motion.trajectories.Trajectory`
    without joint friction: the ``staicu`` entry of :mod:`delta_dynamics.compare`."""
    sm = robot if isinstance(robot, StaicuModel) else StaicuModel.from_robot(robot)
    return inverse_dynamics(sm, trajectory.X, trajectory.Xd, trajectory.Xdd, friction=False)
