"""Time integration of the multibody model and its constraint stabilisation.

Eq. (6) is an index-1 form of an index-3 DAE: integrating its accelerations keeps the
constraints only at the acceleration level, and the positions and velocities drift off the
constraint manifold (slowly: linearly in velocity, quadratically in position). Elshami et
al. bring the solution back to the manifold after each step ("post-stabilisation"); so do we:

* **projection** (default): after each step the positions are moved onto C(q) = 0 by
  Newton iterations on the minimum-kinetic-energy correction
  delta = -M^-1 C_q^T (C_q M^-1 C_q^T)^-1 C(q), and the velocities onto C_q z = 0 by the
  same M-orthogonal projection. It reuses the step's Cholesky factor, keeps the residual at
  round-off level (<= 1e-12 m) however long the run, and does not touch the dynamics on the
  manifold (the correction is of the order of the drift, so the integrator keeps its order).
* **baumgarte** (``alpha``, ``beta``): Q_d - 2 alpha C_q z - beta^2 C instead of Q_d. No extra
  solve, but it only damps the drift (residuals ~1e-8 m at 1 kHz), its gains must suit the
  step, and it changes the accelerations off the manifold. Kept for comparison.
* **none**: the drift as it is (for the demo's comparison).

Integrators, on a fixed step:

* :func:`step_semi_implicit` (the plant's): symplectic Euler, velocity first, with the joint
  friction linearly implicit (its slope dt c'(q_dot) added to the arms' inertia about their
  motor axes) so the stiff smoothed Coulomb friction is stable at any step, like the explicit
  model's plant (:func:`delta_dynamics.algorithms.step`). One Cholesky factorisation per step; the
  position projection is simplified Newton with the step's factor (one iteration, a second
  when the residual is still above 1e-11 m), the
  velocity projection is done at the start of the next step with that step's exact C_q.
* :func:`step_rk4` (the command line's reference): classical Runge-Kutta on the positions,
  Euler parameters (theta_dot = 1/2 (0, omega) * theta) and velocities, then the projection
  with full Newton iterations. Explicit, so the friction limits the step:
  :func:`stable_step` gives the largest stable one.
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.algorithms import UnreachableError
from delta_dynamics.reference.multibody.dynamics import (Evaluation, Friction, State, applied_forces,
                                                         evaluate, joint_rates, quadratic_terms, residuals,
                                                         schur_solve, solve, violation)
from delta_dynamics.reference.multibody.euler import multiply, rotate_by
from delta_dynamics.reference.multibody.system import MultibodySystem

STABILISATIONS = ("projection", "baumgarte", "none")
#: Baumgarte gains (1/s) for a 1 kHz step: critically damped at 2 * pi * 20 Hz.
BAUMGARTE = (2 * np.pi * 20.0, 2 * np.pi * 20.0)
#: Position residual (m) the projection iterates to in :func:`project_positions`.
PROJECTION_TOL = 1e-13
#: ... and in the plant's step (simplified Newton with the step's factor; usually one iteration).
PLANT_TOL = 1e-11


def move_bodies(st: State, delta) -> None:
    """Move the bodies by delta = (dR, dphi) per body (dphi: a world rotation vector)."""
    d = delta.reshape(-1, 2, 3)
    st.pos += d[:, 0]
    st.theta = rotate_by(st.theta, d[:, 1])


def project_positions(s: MultibodySystem, ev: Evaluation, st: State, iterations: int = 4,
                      tol: float = PROJECTION_TOL, refresh: bool = True) -> float:
    """Newton iterations of the M-orthogonal projection onto C(q) = 0 (in place); with
    ``refresh`` C_q is re-evaluated each iteration, else the factor in ``ev`` is reused
    (simplified Newton). Returns the final violation (m)."""
    phi = residuals(s, st)
    v = violation(s, phi)
    for _ in range(iterations):
        if v <= tol:
            break
        if refresh:
            evaluate(s, ev, st)
        move_bodies(st, -(ev.Minv @ (ev.J.T @ schur_solve(ev, phi))))
        phi = residuals(s, st)
        v = violation(s, phi)
    return v


def project_velocities(s: MultibodySystem, ev: Evaluation, st: State) -> None:
    """z <- z - M^-1 C_q^T (C_q M^-1 C_q^T)^-1 C_q z with C_q in ``ev`` (in place)."""
    z = st.z
    st.set_z(z - ev.Minv @ (ev.J.T @ schur_solve(ev, ev.J @ z)))


def polish(s: MultibodySystem, ev: Evaluation, st: State) -> float:
    """Full projection of a state onto the manifold (positions by Newton with fresh C_q to
    round-off, then velocities), in place; returns the violation (m)."""
    v = project_positions(s, ev, st, refresh=True)
    evaluate(s, ev, st)
    project_velocities(s, ev, st)
    return v


def step_semi_implicit(s: MultibodySystem, ev: Evaluation, st: State, tau, dt: float,
                       friction: Friction | None = None, stabilisation: str = "projection",
                       tau_end=None) -> State:
    """One symplectic-Euler step of ``dt`` under torques ``tau`` held over it (``tau_end`` is
    ignored: a first-order step sees the torque at its start); returns the new state (``st``
    is left as it was). See the module docstring."""
    new = st.copy()
    fm = fric = None
    if friction is not None and friction.enabled:
        fric, slope = friction.torque_and_slope(joint_rates(s, st))
        fm = dt * slope
    evaluate(s, ev, new, fm)
    gamma = None
    if stabilisation == "projection":
        project_velocities(s, ev, new)
    gamma = quadratic_terms(s, ev, new)
    if stabilisation == "baumgarte":
        al, be = BAUMGARTE
        gamma = gamma - 2.0 * al * (ev.J @ new.z) - be * be * residuals(s, new)
    Q = applied_forces(s, ev, new, tau, friction, fric=fric)
    a, lam = solve(s, ev, Q, gamma)
    z = new.z + dt * a
    new.set_z(z)
    new.pos += dt * new.vel
    new.theta = rotate_by(new.theta, dt * new.omega)
    if stabilisation == "projection":
        project_positions(s, ev, new, iterations=3, tol=PLANT_TOL, refresh=False)
    if not (np.isfinite(new.pos).all() and np.isfinite(new.omega).all()):
        raise UnreachableError("the multibody simulation diverged")
    new.lam = lam
    return new


def _derivative(s, ev, st, tau, friction, baumgarte):
    evaluate(s, ev, st)
    gamma = quadratic_terms(s, ev, st)
    if baumgarte is not None:
        al, be = baumgarte
        gamma = gamma - 2.0 * al * (ev.J @ st.z) - be * be * residuals(s, st)
    a, lam = solve(s, ev, applied_forces(s, ev, st, tau, friction), gamma)
    return a.reshape(-1, 2, 3), lam


def _theta_rate(theta, omega):
    """theta_dot = 1/2 (0, omega) * theta (world angular velocity)."""
    w = np.concatenate([np.zeros((len(omega), 1)), omega], 1)
    return 0.5 * multiply(w, theta)


def step_rk4(s: MultibodySystem, ev: Evaluation, st: State, tau, dt: float,
             friction: Friction | None = None, stabilisation: str = "projection", tau_end=None) -> State:
    """One classical Runge-Kutta step, then the stabilisation; returns the new state. The
    torques are ``tau`` held over the step, or, with ``tau_end``, linear from ``tau`` to
    ``tau_end``. The multipliers at the start of the step are in ``.lam`` of the result."""
    bg = BAUMGARTE if stabilisation == "baumgarte" else None
    t0 = np.asarray(tau, dtype=float)
    t1 = t0 if tau_end is None else np.asarray(tau_end, dtype=float)
    tm = 0.5 * (t0 + t1)

    def stage(base: State, k, h, tau):
        x = base.copy()
        if k is not None:
            dp, dth, dv, dw = k
            x.pos = base.pos + h * dp
            th = base.theta + h * dth
            x.theta = th / np.linalg.norm(th, axis=1, keepdims=True)
            x.vel = base.vel + h * dv
            x.omega = base.omega + h * dw
        a, lam = _derivative(s, ev, x, tau, friction, bg)
        return (x.vel.copy(), _theta_rate(x.theta, x.omega), a[:, 0], a[:, 1]), lam

    k1, lam = stage(st, None, 0.0, t0)
    k2, _ = stage(st, k1, 0.5 * dt, tm)
    k3, _ = stage(st, k2, 0.5 * dt, tm)
    k4, _ = stage(st, k3, dt, t1)
    new = st.copy()
    inc = [(a + 2 * b + 2 * c + d) * (dt / 6.0) for a, b, c, d in zip(k1, k2, k3, k4)]
    new.pos = st.pos + inc[0]
    th = st.theta + inc[1]
    new.theta = th / np.linalg.norm(th, axis=1, keepdims=True)
    new.vel = st.vel + inc[2]
    new.omega = st.omega + inc[3]
    if not (np.isfinite(new.pos).all() and np.isfinite(new.omega).all()):
        raise UnreachableError("the multibody simulation diverged")
    if stabilisation == "projection":
        project_positions(s, ev, new)
        evaluate(s, ev, new)
        project_velocities(s, ev, new)
    new.lam = lam
    return new


def stable_step(s: MultibodySystem, friction: Friction | None, dt: float, margin: float = 0.7) -> int:
    """Substeps per ``dt`` for RK4 to be stable under the friction's stiffness: the smoothed
    Coulomb friction has slope c/eps at rest, an eigenvalue -slope / I_arm of the arm (I_arm
    its inertia about the motor axis, a lower bound of what the joint feels); RK4 is stable
    for h |lambda| <= 2.78."""
    if friction is None or not friction.enabled:
        return 1
    I_arm = float(s.inertia[s.arm[0]][1, 1] + s.mass[s.arm[0]] * s.arm_com ** 2)
    lam = friction.max_slope() / I_arm
    h = margin * 2.78 / lam
    return max(1, int(np.ceil(dt / h - 1e-9)))


STEPPERS = {"semi-implicit": step_semi_implicit, "rk4": step_rk4}
