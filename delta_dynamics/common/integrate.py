"""Time integration of the state-space form of either robot kind,

    d/dt [X, X_dot] = [X_dot, M^-1 (J^T (tau - tau_fric) + F_P - C X_dot - G)]

(Asadi & Heydari eq. 43; the same form for the linear Delta), over the model's own forward
dynamics and step (``m.ops``, :mod:`delta_dynamics.kinds`), so one implementation serves
every kind:

* :func:`stepper`: a kind's ``step``, one fixed step, ``"semi-implicit"`` (the kind's
  symplectic Euler with linearly implicit friction, stable at any dt however stiff the
  smoothed Coulomb friction is) or ``"rk4"`` (classical Runge-Kutta, :func:`rk4_step`);
* :func:`simulate_fixed`: fixed steps over sampled or callable efforts (a real-time loop);
* :func:`simulate_adaptive`: scipy's ``solve_ivp`` (LSODA by default, which switches to a
  stiff method where friction needs it) for offline work.

The state is the platform position and velocity (m, m/s); efforts are N m (rotary) or N
(linear), held constant over a step.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

METHODS = ("semi-implicit", "rk4")


def stepper(semi_implicit):
    """The interface's ``step`` of a kind whose semi-implicit step is
    ``semi_implicit(m, X, Xd, tau, dt, F_P)`` (on 3-tuples of floats)."""

    def step(m, X, Xd, tau, dt: float, method: str = "semi-implicit", F_P=None):
        """Advance (X, X_dot) by one step of ``dt`` seconds under constant joint efforts ``tau``
        (N m or N) with ``method`` (``"semi-implicit"`` or ``"rk4"``); ``F_P``: an external
        platform force (N). X, X_dot, tau are sequences of 3 floats; returns the new
        (X, X_dot) as tuples of floats."""
        X = tuple(map(float, X))                      # numpy scalars would slow every operation
        Xd = tuple(map(float, Xd))
        tau = tuple(map(float, tau))
        if method == "semi-implicit":
            return semi_implicit(m, X, Xd, tau, dt, F_P)
        if method == "rk4":
            return rk4_step(m, X, Xd, tau, dt, F_P)
        raise ValueError(f"integrator method must be one of {', '.join(METHODS)}, got {method!r}")

    step.__module__ = semi_implicit.__module__
    return step


def rk4_step(m, X, Xd, tau, dt, F_P, tau_mid=None, tau_end=None):
    """Classical RK4 on the forward dynamics of ``m``'s kind (rotary or linear); the effort is
    held over the step unless its values at the middle and the end of the step are given
    (then the step is 4th-order in time too)."""
    X = np.asarray(X, dtype=float)
    V = np.asarray(Xd, dtype=float)
    t0 = np.asarray(tau, dtype=float)
    tm = t0 if tau_mid is None else np.asarray(tau_mid, dtype=float)
    t1 = t0 if tau_end is None else np.asarray(tau_end, dtype=float)
    fd = m.ops.forward_dynamics
    f = lambda x, v, t: fd(m, x, v, t, F_P=F_P)  # noqa: E731
    a1 = f(X, V, t0)
    a2 = f(X + 0.5 * dt * V, V + 0.5 * dt * a1, tm)
    a3 = f(X + 0.5 * dt * (V + 0.5 * dt * a1), V + 0.5 * dt * a2, tm)
    a4 = f(X + dt * (V + 0.5 * dt * a2), V + dt * a3, t1)
    Xn = X + dt * V + dt * dt / 6.0 * (a1 + a2 + a3)
    Vn = V + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
    return tuple(Xn.tolist()), tuple(Vn.tolist())


def effort_function(t, tau):
    """A callable tau(t) from a callable, or from samples (t (s), tau (N, 3)) held constant per
    step."""
    if callable(tau):
        return tau
    tau = np.asarray(tau, dtype=float)
    t = np.asarray(t, dtype=float)
    if tau.shape != (len(t), 3):
        raise ValueError(f"torques must have shape ({len(t)}, 3) to match the time samples, got {tau.shape}")

    def f(s):
        k = min(max(int(np.searchsorted(t, s, side="right")) - 1, 0), len(t) - 1)
        return tau[k]
    return f


def simulate_fixed(m, X0, Xd0, t, tau, method: str = "semi-implicit", substeps: int = 1, F_P=None):
    """Integrate from (X0, X_dot0) over the time samples ``t`` with a fixed step (the ``step``
    of ``m``'s kind: either kind of robot).

    ``tau`` is a callable tau(t) -> (3,) or an (N, 3) array of torques held over each interval.
    Each interval is split into ``substeps`` equal steps. With a callable and ``"rk4"`` the
    torque is evaluated at the Runge-Kutta stage times. Returns (X, X_dot) of shape (N, 3).
    """
    if method not in METHODS:
        raise ValueError(f"integrator method must be one of {', '.join(METHODS)}, got {method!r}")
    t = np.asarray(t, dtype=float)
    staged = callable(tau) and method == "rk4"
    ft = effort_function(t, tau)
    one_step = m.ops.step
    X, V = tuple(map(float, X0)), tuple(map(float, Xd0))
    Xs = np.empty((len(t), 3))
    Vs = np.empty((len(t), 3))
    Xs[0], Vs[0] = X, V
    for k in range(1, len(t)):
        h = (t[k] - t[k - 1]) / substeps
        for j in range(substeps):
            s = t[k - 1] + j * h
            if staged:
                X, V = rk4_step(m, X, V, ft(s), h, F_P, ft(s + 0.5 * h), ft(s + h))
            else:
                X, V = one_step(m, X, V, ft(s), h, method, F_P)
        Xs[k], Vs[k] = X, V
    return Xs, Vs


def simulate_adaptive(m, X0, Xd0, t, tau: Callable | np.ndarray, method: str = "LSODA",
                      rtol: float = 1e-9, atol: float = 1e-11, F_P=None):
    """Integrate eq. (43) (the forward dynamics of ``m``'s kind) with scipy's ``solve_ivp`` and
    return (X, X_dot) at the samples ``t``.

    ``tau`` is a callable tau(t) or an (N, 3) array sampled at ``t`` (then interpolated with
    a cubic spline).
    """
    # heavy (seconds to import on a loaded machine) and for offline runs only: imported here
    from scipy.integrate import solve_ivp
    from scipy.interpolate import CubicSpline

    t = np.asarray(t, dtype=float)
    if callable(tau):
        ft = tau
    else:
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (len(t), 3):
            raise ValueError(f"torques must have shape ({len(t)}, 3), got {tau.shape}")
        ft = CubicSpline(t, tau, axis=0)

    fd = m.ops.forward_dynamics

    def rhs(s, y):
        return np.concatenate((y[3:], fd(m, y[:3], y[3:], ft(s), F_P=F_P)))

    y0 = np.concatenate((np.asarray(X0, dtype=float), np.asarray(Xd0, dtype=float)))
    sol = solve_ivp(rhs, (t[0], t[-1]), y0, method=method, t_eval=t, rtol=rtol, atol=atol)
    if not sol.success:
        at = sol.t[-1] if len(sol.t) else t[0]      # t_eval: empty when the first step fails
        raise RuntimeError(f"forward simulation failed at t = {at:.6g} s: {sol.message}")
    return sol.y[:3].T, sol.y[3:].T
