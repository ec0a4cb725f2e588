"""Forward simulation of the linear Delta, d/dt [X, X_dot] = [X_dot, M^-1 (J^T (Q - Q_fric)
+ F_P - C X_dot - G)] (:mod:`.dynamics`), with the integrators of :mod:`delta_dynamics.simulate`:

* :func:`step` / :func:`simulate_fixed`: fixed step for a real-time loop. ``"semi-implicit"``
  (default) is symplectic Euler with the friction taken linearly implicit in the carriage
  velocity at the step's end, (M + dt J^T D_f J) X_dd = J^T (Q - Q_0 - dt D_f q_dd,v),
  D_f = d Q_fric / d q_dot >= 0, q_dd,v the velocity-product part of the carriage acceleration,
  stable at any dt however stiff the smoothed Coulomb friction is; ``"rk4"`` is classical Runge-Kutta.
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


from delta_dynamics._backend import ScalarMath
# the integrators over the steps: one implementation for either kind (they call m.ops)
from delta_dynamics.simulate import METHODS, _friction_slope, _step_rk4, simulate_adaptive, simulate_fixed  # noqa: F401

from .dynamics import _chains, _forces, _mass_matrix_entries, _rod_inverse, _solve_sym3


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
    for i, (_, dx, dy, dz, qd, v2) in enumerate(ch):
        jx, jy = dx / dz, dy / dz                              # J_i = (jx, jy, 1)
        a = dt * _friction_slope(m, i, qd)                     # dt J^T D_f J
        # friction at the step's end carriage velocity q_dot + dt (J_i X_dd + v2 / dz), its
        # velocity-product part v2 / dz included (else a carriage at rest sticks while the
        # others move fast)
        k = tau[i] - Q0[i] - a * v2 / dz
        bx, by, bz = bx + jx * k, by + jy * k, bz + k
        xx, yy, zz = xx + a * jx * jx, yy + a * jy * jy, zz + a
        xy, xz, yz = xy + a * jx * jy, xz + a * jx, yz + a * jy
    ax, ay, az = _solve_sym3((xx, yy, zz, xy, xz, yz), bx, by, bz)
    vx, vy, vz = vx + dt * ax, vy + dt * ay, vz + dt * az
    return (x + dt * vx, y + dt * vy, z + dt * vz), (vx, vy, vz)
