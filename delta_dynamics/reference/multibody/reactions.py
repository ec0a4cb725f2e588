"""Joint reaction forces from the Lagrange multipliers (Elshami et al. Sec. 3-4), and the
inverse dynamics of the multibody model along a prescribed platform trajectory.

The constraint forces of eq. (6) are -C_q^T lambda. Per joint (bodies i, j):

* its spherical part C = r_i(P) - r_j(P) with multipliers lambda_s (3) puts the force
  -lambda_s on body i and +lambda_s on body j, at the joint point P (world frame);
* each perpendicularity (A^i a).(A^j b) = 0 with multiplier mu puts the couple -mu (a x b)
  on body i and +mu (a x b) on body j.

So the reaction a joint applies to body j is (F, M) = (lambda_s, sum mu (a x b)) at P, and
to body i the opposite. In world coordinates:

* ``platform[i]``: the force (and moment) forearm i applies to the platform at its platform
  joint; the three forces sum to m_platform (X_dd - g) (the platform's own equation of
  motion: it is a sphere-only body for the forces);
* ``elbow[i]``: what upper arm i applies to forearm i at the elbow;
* ``shoulder[i]``: what the base (or the ground) applies to upper arm i at the motor axis
  (the moment about the motor axis itself is the motor torque, not a reaction);
* ``base``: what the ground applies to the fixed base (only with a base body).

>>> import numpy as np
>>> from delta_dynamics.reference.multibody.system import MultibodySystem
>>> s = MultibodySystem.from_robot("nt_robot")
>>> X = np.array([[0.0, 0.0, -0.8]]); zero = np.zeros((1, 3))
>>> out = inverse_dynamics(s, X, zero, zero, friction=False)
>>> f = out.reactions.platform_force[0]                    # at rest: the platform's weight
>>> bool(np.allclose(f.sum(0), [0, 0, s.platform_mass * 9.80665]))
True
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from delta_dynamics.reference.multibody.dynamics import (Evaluation, Friction, applied_forces, evaluate,
                                                         joint_angles, joint_rates, place_platform,
                                                         quadratic_terms)
from delta_dynamics.reference.multibody.system import MultibodySystem


@dataclass(frozen=True)
class Reactions:
    """Joint reactions in world coordinates (N, N m), arrays (N samples, 3 chains, 3), or
    (3, 3) for one sample; see the module docstring for which body each acts on."""

    platform_force: np.ndarray
    platform_moment: np.ndarray
    elbow_force: np.ndarray
    elbow_moment: np.ndarray
    shoulder_force: np.ndarray
    shoulder_moment: np.ndarray
    base_force: np.ndarray | None = None
    base_moment: np.ndarray | None = None


def joint_reactions(s: MultibodySystem, ev: Evaluation, lam) -> dict:
    """The reaction on body j of every joint, {name: (force (3,), moment (3,))}, from the
    multipliers ``lam`` and the configuration evaluated in ``ev``."""
    lam = np.asarray(lam, dtype=float)
    nS, nD = s.n_spheres, s.n_dots
    V = ev.V
    c = np.cross(V[2 * nS:2 * nS + nD], V[2 * nS + nD:])       # a x b per perpendicularity
    mu = lam[3 * nS:]
    out = {}
    for jt in s.joints:
        F = lam[3 * jt.sphere:3 * jt.sphere + 3].copy()
        M = np.zeros(3)
        for d in jt.dots:
            M += mu[d] * c[d]
        out[jt.name] = (F, M)
    return out


def reactions_of(s: MultibodySystem, ev: Evaluation, lam) -> Reactions:
    """:class:`Reactions` of one sample (each array (3, 3): chain, xyz)."""
    r = joint_reactions(s, ev, lam)
    pf = np.array([r[f"platform_{i + 1}"][0] for i in range(3)])
    pm = np.array([r[f"platform_{i + 1}"][1] for i in range(3)])
    ef = np.array([r[f"elbow_{i + 1}"][0] for i in range(3)])
    em = np.array([r[f"elbow_{i + 1}"][1] for i in range(3)])
    # the shoulder joint's body i is the arm: the reaction on it is the opposite
    sf = -np.array([r[f"shoulder_{i + 1}"][0] for i in range(3)])
    sm = -np.array([r[f"shoulder_{i + 1}"][1] for i in range(3)])
    bf = bm = None
    if s.has_base:
        bf, bm = (-v for v in r["base_rigid"])
    return Reactions(pf, pm, ef, em, sf, sm, bf, bm)


def stack_reactions(items) -> Reactions:
    """Reactions of N samples from a list of one-sample ones."""
    items = list(items)
    fields = Reactions.__dataclass_fields__
    return Reactions(**{k: (None if getattr(items[0], k) is None else np.stack([getattr(r, k) for r in items]))
                        for k in fields})


@dataclass(frozen=True)
class InverseDynamics:
    """Result of :func:`inverse_dynamics` over N samples: motor torques ``tau`` (N, 3) (N m),
    joint angles ``q`` and rates ``qd`` (N, 3), ``reactions`` and the largest residual of the
    solved equations (``residual``, N or N m)."""

    tau: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    reactions: Reactions
    residual: float


def inverse_dynamics(s: MultibodySystem, X, Xd, Xdd, friction: bool = True) -> InverseDynamics:
    """Motor torques and joint reactions that move the platform along (X, X_dot, X_ddot)
    (N, 3 each).

    Per sample: the bodies' poses from the closed-form kinematics, their velocities z from
    C_q z = 0 with the platform's velocity given, their accelerations from C_q a = Q_d with
    the platform's acceleration given; then the equations of motion M a = Q + B tau - C_q^T
    lambda (B tau: the motor torques tau_i e_i on the arms) are solved for (lambda, tau): a
    square system, 6 nb equations for the constraints and three torques.
    """
    X, Xd, Xdd = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (X, Xd, Xdd))
    if not (X.shape == Xd.shape == Xdd.shape and X.shape[1] == 3):
        raise ValueError(f"positions, velocities and accelerations must be (N, 3) alike, got "
                         f"{X.shape}, {Xd.shape}, {Xdd.shape}")
    fr = Friction(s.robot, enabled=friction)
    ev = Evaluation(s)
    nb, nc = s.n_bodies, s.n_constraints
    nz = 6 * nb
    B = np.zeros((nz, 3))
    for i, b in enumerate(s.arm):
        B[6 * b + 3:6 * b + 6, i] = s.e[i]
        if s.has_base:
            B[3:6, i] -= s.e[i]
    Mfull = np.zeros((nz, nz))
    taus, qs, qds, reacts = [], [], [], []
    worst = 0.0
    for k in range(len(X)):
        st = place_platform(s, X[k])
        evaluate(s, ev, st)
        K = np.vstack([ev.J, s.P])
        z = np.linalg.solve(K, np.concatenate([np.zeros(nc), Xd[k]]))
        st.set_z(z)
        gamma = quadratic_terms(s, ev, st)
        a = np.linalg.solve(K, np.concatenate([gamma, Xdd[k]]))
        for b in range(nb):
            Mfull[6 * b:6 * b + 3, 6 * b:6 * b + 3] = s.mass[b] * np.eye(3)
            Mfull[6 * b + 3:6 * b + 6, 6 * b + 3:6 * b + 6] = ev.Iw[b]
        Q0 = applied_forces(s, ev, st, np.zeros(3), fr)
        rhs = Q0 - Mfull @ a
        sysm = np.hstack([ev.J.T, -B])
        sol = np.linalg.solve(sysm, rhs)
        worst = max(worst, float(np.abs(sysm @ sol - rhs).max()))
        lam, tau = sol[:nc], sol[nc:]
        taus.append(tau)
        qs.append(joint_angles(s, st))
        qds.append(joint_rates(s, st))
        reacts.append(reactions_of(s, ev, lam))
    return InverseDynamics(np.array(taus), np.array(qs), np.array(qds), stack_reactions(reacts), worst)


def trajectory_torques(robot, trajectory) -> np.ndarray:
    """Rigid-body torques (N, 3) of the multibody model along ``trajectory`` (no joint friction):
    the ``multibody`` entry of :data:`delta_dynamics.compare.MODELS`."""
    s = MultibodySystem.from_robot(robot)
    return inverse_dynamics(s, trajectory.X, trajectory.Xd, trajectory.Xdd, friction=False).tau
