"""Forward simulation of the multibody model under sampled motor torques (what
``delta-dynamics simulate --model multibody`` runs).

The torques are held over each sample interval (a drive's zero-order hold); each interval
is integrated in ``substeps`` fixed steps of :mod:`.integrate` (RK4 by default, with as many
substeps as the friction's stiffness needs). Every sample records the platform state, the
actuated joints, the largest constraint residual (m) and, on request, the joint reactions
(from the multipliers solved at that sample under its torques).

>>> import numpy as np
>>> from delta_dynamics.reference.multibody.system import MultibodySystem
>>> s = MultibodySystem.from_robot("nt_robot")
>>> t = np.arange(0.0, 0.0105, 0.001)
>>> sim = simulate(s, [0.4, 0.4, 0.4], [0.0, 0.0, 0.0], t, np.zeros((len(t), 3)), friction=False)
>>> bool(sim.qd[-1].min() > 0 and sim.violation.max() < 1e-12)     # falls, stays assembled
True
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import UnreachableError, cartesian_state
from delta_dynamics.reference.multibody.dynamics import (Evaluation, Friction, accelerations, check_branch,
                                                         energy, joint_angles, joint_rates, place_platform,
                                                         platform_position, residuals, violation)
from delta_dynamics.reference.multibody.integrate import BAUMGARTE, STABILISATIONS, STEPPERS, polish, stable_step
from delta_dynamics.reference.multibody.reactions import Reactions, reactions_of, stack_reactions
from delta_dynamics.reference.multibody.system import MultibodySystem


@dataclass(frozen=True)
class Simulation:
    """Samples of a simulation: ``t`` (N,), platform ``X``, ``Xd`` (N, 3), joints ``q``,
    ``qd`` (N, 3), ``violation`` (N,) (m), ``energy`` (N, 2) (kinetic, potential; J),
    ``reactions`` (or None), ``substeps`` used per sample."""

    t: np.ndarray
    X: np.ndarray
    Xd: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    violation: np.ndarray
    energy: np.ndarray
    reactions: Reactions | None
    substeps: int


def simulate(s: MultibodySystem, q0, qd0, t, tau, method: str = "rk4", substeps: int | None = None,
             stabilisation: str = "projection", friction: bool = True, reactions: bool = False,
             hold: str = "zero", on_step=None) -> Simulation:
    """Simulate from joint positions ``q0`` and velocities ``qd0`` over the sample times ``t``
    (N,) under the torques ``tau`` (N, 3): with ``hold="zero"`` torque k is held over
    [t_k, t_k+1) (a drive's zero-order hold), with ``"linear"`` (RK4 only) the torque is
    interpolated linearly between the samples (for torques sampled from a smooth profile,
    such as inverse dynamics: no half-sample lag).

    ``method``: ``rk4`` or ``semi-implicit``; ``substeps`` per sample (default: 1 for
    semi-implicit, enough for RK4's stability under the friction for rk4); ``stabilisation``:
    projection, baumgarte or none; ``reactions``: also record the joint reactions.
    Raises :class:`~delta_dynamics.algorithms.UnreachableError` (with ``.index`` the sample)
    if the robot leaves its workspace. ``on_step(k)`` is called before sample interval k.
    """
    if method not in STEPPERS:
        raise ValueError(f"method must be one of {', '.join(STEPPERS)}, got {method!r}")
    if hold not in ("zero", "linear"):
        raise ValueError(f"hold must be 'zero' or 'linear', got {hold!r}")
    if stabilisation not in STABILISATIONS:
        raise ValueError(f"stabilisation must be one of {', '.join(STABILISATIONS)}, got {stabilisation!r}")
    t = np.asarray(t, dtype=float)
    tau = np.asarray(tau, dtype=float)
    if t.ndim != 1 or tau.shape != (len(t), 3):
        raise ValueError(f"need times (N,) and torques (N, 3), got {t.shape} and {tau.shape}")
    fr = Friction(s.robot, enabled=friction)
    step = STEPPERS[method]
    ev = Evaluation(s)
    q0 = np.asarray(q0, dtype=float)
    X0, V0, _ = cartesian_state(s.kinematics, q0, np.asarray(qd0, dtype=float))
    st = place_platform(s, X0, V0, q=q0)
    n = len(t)
    dts = np.diff(t)
    if substeps is None:
        substeps = 1 if method == "semi-implicit" else stable_step(s, fr, float(dts.max()) if n > 1 else 1e-3)
    X, Xd, q, qd = (np.empty((n, 3)) for _ in range(4))
    viol, en = np.empty(n), np.empty((n, 2))
    reacts = []
    bg = BAUMGARTE if stabilisation == "baumgarte" else None
    for k in range(n):
        X[k] = platform_position(s, st)
        Xd[k] = st.vel[s.platform]
        q[k] = joint_angles(s, st)
        qd[k] = joint_rates(s, st)
        viol[k] = violation(s, residuals(s, st))
        en[k] = energy(s, st)
        if reactions:
            _, lam = accelerations(s, ev, st, tau[k], fr, baumgarte=bg)
            reacts.append(reactions_of(s, ev, lam))
        if k == n - 1:
            break
        if on_step is not None:
            on_step(k)
        h = dts[k] / substeps
        try:
            for j in range(substeps):
                if hold == "linear":
                    ta = tau[k] + (tau[k + 1] - tau[k]) * (j / substeps)
                    tb = tau[k] + (tau[k + 1] - tau[k]) * ((j + 1) / substeps)
                    st = step(s, ev, st, ta, h, fr, stabilisation, tau_end=tb)
                else:
                    st = step(s, ev, st, tau[k], h, fr, stabilisation)
            if method == "semi-implicit" and stabilisation == "projection":
                polish(s, ev, st)                       # the plant's one cheap iteration, finished
            _check(s, st)
        except UnreachableError as e:
            e.index = k
            raise
    return Simulation(t, X, Xd, q, qd, viol, en, stack_reactions(reacts) if reactions else None, substeps)


def _check(s, st):
    """The simulated robot must stay on its inverse-kinematics branch (the workspace)."""
    check_branch(s, st, tol=1e-4)
