"""Forward simulation of the linear Delta, d/dt [X, X_dot] = [X_dot, M^-1 (J^T (Q - Q_fric)
+ F_P - C X_dot - G)] (:mod:`.dynamics`), with the integrators of :mod:`delta_dynamics.simulate`:

* :func:`step` / :func:`simulate_fixed`: fixed step for a real-time loop. ``"semi-implicit"``
  (default) is symplectic Euler with the friction taken linearly implicit,
  (M + dt J^T D_f J) dX_dot = dt J^T (Q - Q_0), D_f = d Q_fric / d q_dot >= 0, stable at any dt
  however stiff the smoothed Coulomb friction is; ``"rk4"`` is classical Runge-Kutta.
* :func:`simulate_adaptive`: scipy's ``solve_ivp`` (LSODA by default).

The state is the platform position and velocity; carriage values follow from
:func:`delta_dynamics.prismatic.dynamics.joint_state`.

>>> from delta_dynamics.prismatic.model import PrismaticDeltaModel
>>> m = PrismaticDeltaModel.from_robot("colombo2020")
>>> X, V = step(m, (0.0, 0.0, 0.1), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1e-3)   # unpowered: falls
>>> round(V[2], 5)
-0.00981
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from delta_dynamics._backend import ScalarMath
from delta_dynamics.simulate import METHODS, _friction_slope, _torque_function

from .dynamics import _chains, _forces, _mass_matrix_entries, _rod_inverse, _solve_sym3, forward_dynamics


def step(m, X, Xd, tau, dt: float, method: str = "semi-implicit", F_P=None):
    """Advance (X, X_dot) by one step of ``dt`` seconds under constant carriage forces ``tau``
    (N). X, X_dot, tau are sequences of 3 floats; returns the new (X, X_dot) as tuples."""
    X = tuple(map(float, X))
    Xd = tuple(map(float, Xd))
    tau = tuple(map(float, tau))
    if method == "semi-implicit":
        return _step_semi_implicit(m, X, Xd, tau, dt, F_P)
    if method == "rk4":
        return _step_rk4(m, X, Xd, tau, dt, F_P)
    raise ValueError(f"integrator method must be one of {', '.join(METHODS)}, got {method!r}")


def _step_semi_implicit(m, X, Xd, tau, dt, F_P):
    x, y, z = X
    vx, vy, vz = Xd
    xp = ScalarMath
    ch = _chains(m, x, y, z, vx, vy, vz, xp)
    n = _rod_inverse(m, ch, x, y, z, xp)
    fp = None if F_P is None else tuple(float(v) for v in F_P)
    Q0, _, _ = _forces(m, ch, n, 0.0, 0.0, 0.0, fp, True, xp)
    xx, yy, zz, xy, xz, yz = _mass_matrix_entries(m, ch)
    bx = by = bz = 0.0
    for i, (_, dx, dy, dz, qd, _) in enumerate(ch):
        jx, jy = dx / dz, dy / dz                              # J_i = (jx, jy, 1)
        k = tau[i] - Q0[i]
        bx, by, bz = bx + jx * k, by + jy * k, bz + k
        a = dt * _friction_slope(m, i, qd)                     # dt J^T D_f J
        xx, yy, zz = xx + a * jx * jx, yy + a * jy * jy, zz + a
        xy, xz, yz = xy + a * jx * jy, xz + a * jx, yz + a * jy
    ax, ay, az = _solve_sym3((xx, yy, zz, xy, xz, yz), bx, by, bz)
    vx, vy, vz = vx + dt * ax, vy + dt * ay, vz + dt * az
    return (x + dt * vx, y + dt * vy, z + dt * vz), (vx, vy, vz)


def _step_rk4(m, X, Xd, tau, dt, F_P, tau_mid=None, tau_end=None):
    """Classical RK4; the force is held over the step unless its values at the middle and the
    end of the step are given."""
    X = np.asarray(X, dtype=float)
    V = np.asarray(Xd, dtype=float)
    t0 = np.asarray(tau, dtype=float)
    tm = t0 if tau_mid is None else np.asarray(tau_mid, dtype=float)
    t1 = t0 if tau_end is None else np.asarray(tau_end, dtype=float)
    f = lambda x, v, t: forward_dynamics(m, x, v, t, F_P=F_P)
    a1 = f(X, V, t0)
    a2 = f(X + 0.5 * dt * V, V + 0.5 * dt * a1, tm)
    a3 = f(X + 0.5 * dt * (V + 0.5 * dt * a1), V + 0.5 * dt * a2, tm)
    a4 = f(X + dt * (V + 0.5 * dt * a2), V + dt * a3, t1)
    Xn = X + dt * V + dt * dt / 6.0 * (a1 + a2 + a3)
    Vn = V + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
    return tuple(Xn.tolist()), tuple(Vn.tolist())


def simulate_fixed(m, X0, Xd0, t, tau, method: str = "semi-implicit", substeps: int = 1, F_P=None):
    """Integrate from (X0, X_dot0) over the time samples ``t`` with a fixed step; ``tau`` is a
    callable tau(t) -> (3,) or an (N, 3) array of forces held over each interval (as
    :func:`delta_dynamics.simulate.simulate_fixed`). Returns (X, X_dot) of shape (N, 3)."""
    if method not in METHODS:
        raise ValueError(f"integrator method must be one of {', '.join(METHODS)}, got {method!r}")
    t = np.asarray(t, dtype=float)
    staged = callable(tau) and method == "rk4"
    ft = _torque_function(t, tau)
    X, V = tuple(map(float, X0)), tuple(map(float, Xd0))
    Xs = np.empty((len(t), 3))
    Vs = np.empty((len(t), 3))
    Xs[0], Vs[0] = X, V
    for k in range(1, len(t)):
        h = (t[k] - t[k - 1]) / substeps
        for j in range(substeps):
            s = t[k - 1] + j * h
            if staged:
                X, V = _step_rk4(m, X, V, ft(s), h, F_P, ft(s + 0.5 * h), ft(s + h))
            else:
                X, V = step(m, X, V, ft(s), h, method, F_P)
        Xs[k], Vs[k] = X, V
    return Xs, Vs


def simulate_adaptive(m, X0, Xd0, t, tau: Callable | np.ndarray, method: str = "LSODA",
                      rtol: float = 1e-9, atol: float = 1e-11, F_P=None):
    """Integrate with scipy's ``solve_ivp`` and return (X, X_dot) at the samples ``t``;
    ``tau`` is a callable tau(t) or an (N, 3) array sampled at ``t`` (cubic spline)."""
    from scipy.integrate import solve_ivp
    from scipy.interpolate import CubicSpline

    t = np.asarray(t, dtype=float)
    if callable(tau):
        ft = tau
    else:
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (len(t), 3):
            raise ValueError(f"forces must have shape ({len(t)}, 3), got {tau.shape}")
        ft = CubicSpline(t, tau, axis=0)

    def rhs(s, y):
        return np.concatenate((y[3:], forward_dynamics(m, y[:3], y[3:], ft(s), F_P=F_P)))

    y0 = np.concatenate((np.asarray(X0, dtype=float), np.asarray(Xd0, dtype=float)))
    sol = solve_ivp(rhs, (t[0], t[-1]), y0, method=method, t_eval=t, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"forward simulation failed at t = {sol.t[-1]:.6g} s: {sol.message}")
    return sol.y[:3].T, sol.y[3:].T
