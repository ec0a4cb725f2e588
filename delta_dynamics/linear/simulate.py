"""Forward simulation of the linear Delta, d/dt [X, X_dot] = [X_dot, M^-1 (J^T (Q - Q_fric)
+ F_P - C X_dot - G)] (:mod:`delta_dynamics.linear.dynamics`): one fixed step.

:func:`step` is the kind's step for a real-time loop: ``"semi-implicit"`` (default) is
symplectic Euler with the friction taken linearly implicit in the carriage velocity at the
step's end, (M + dt J^T D_f J) X_dd = J^T (Q - Q_0 - dt D_f q_dd,v), D_f = d Q_fric / d q_dot
>= 0, q_dd,v the velocity-product part of the carriage acceleration, stable at any dt however
stiff the smoothed Coulomb friction is; ``"rk4"`` is classical Runge-Kutta. The integrators over many steps
(fixed and adaptive) serve both kinds: :mod:`delta_dynamics.common.integrate`, called through
:mod:`delta_dynamics.algorithms`.

The state is the platform position and velocity; carriage values follow from
:func:`delta_dynamics.linear.dynamics.joint_state`.

>>> from delta_dynamics.linear.model import LinearModel
>>> m = LinearModel.from_robot("colombo2020")
>>> X, V = step(m, (0.0, 0.0, 0.1), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1e-3)   # unpowered: falls
>>> round(V[2], 5)
-0.00981
"""
from __future__ import annotations

from delta_dynamics.common import integrate
from delta_dynamics.common.backend import ScalarMath
from delta_dynamics.common.friction import friction_slope
from delta_dynamics.common.solve import solve_sym3
from delta_dynamics.linear.dynamics import carriage_forces, chains, mass_matrix_entries, rod_inverse


def semi_implicit_step(m, X, Xd, tau, dt, F_P):
    """One semi-implicit step of the linear Delta (module docstring) with J_i = (d_ix / d_iz,
    d_iy / d_iz, 1) (Colombo eq. 7): on 3-tuples of floats (m, m/s, N), returns the new
    (X, X_dot) as tuples."""
    x, y, z = X
    vx, vy, vz = Xd
    xp = ScalarMath
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    n = rod_inverse(m, ch, x, y, z, xp)
    fp = None if F_P is None else tuple(float(v) for v in F_P)
    Q0, _, _ = carriage_forces(m, ch, n, 0.0, 0.0, 0.0, fp, True, xp)
    xx, yy, zz, xy, xz, yz = mass_matrix_entries(m, ch)
    bx = by = bz = 0.0
    for i, (_, dx, dy, dz, qd, v2) in enumerate(ch):
        jx, jy = dx / dz, dy / dz                              # J_i = (jx, jy, 1)
        a = dt * friction_slope(m, i, qd)                     # dt J^T D_f J
        # friction at the step's end carriage velocity q_dot + dt (J_i X_dd + v2 / dz), its
        # velocity-product part v2 / dz included (else a carriage at rest sticks while the
        # others move fast)
        k = tau[i] - Q0[i] - a * v2 / dz
        bx, by, bz = bx + jx * k, by + jy * k, bz + k
        xx, yy, zz = xx + a * jx * jx, yy + a * jy * jy, zz + a
        xy, xz, yz = xy + a * jx * jy, xz + a * jx, yz + a * jy
    ax, ay, az = solve_sym3((xx, yy, zz, xy, xz, yz), bx, by, bz)
    vx, vy, vz = vx + dt * ax, vy + dt * ay, vz + dt * az
    return (x + dt * vx, y + dt * vy, z + dt * vz), (vx, vy, vz)


#: One fixed step of ``dt`` s under constant efforts (the interface's ``step``,
#: :func:`delta_dynamics.common.integrate.stepper`): ``"semi-implicit"`` or ``"rk4"``.
step = integrate.stepper(semi_implicit_step)
