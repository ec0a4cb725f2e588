"""Forward simulation of the rotary Delta: one fixed step of the state-space form
(Asadi & Heydari eq. 43)::

    d/dt [X, X_dot] = [X_dot, M^-1 (J^T (tau - tau_fric) + F_P - C X_dot - G)]

:func:`step` is the kind's step for a real-time loop (1 kHz): ``"semi-implicit"`` (default)
is symplectic Euler whose friction is taken linearly implicit in the joint velocity at the
step's end, q_dot + dt q_dd with q_dd = J X_dd + q_dd,v:
(M + dt J^T D_f J) X_dd = J^T (tau - tau_0 - dt D_f q_dd,v), with D_f = d tau_fric / d q_dot
>= 0 and q_dd,v the velocity-product part of the joint acceleration (eq. 11). The smooth
Coulomb sign makes friction very stiff near zero speed (slope c_c / eps); the implicit
treatment keeps the step stable there at any dt. Without the q_dd,v term a joint passing
through rest while the others move fast stuck there for a tenth of a second at 1 kHz,
holding ten times its break-away torque (its velocity-product drift balanced by the stiff
linearised friction). ``"rk4"`` is classical Runge-Kutta
(for friction-free or smooth cases where accuracy per step matters). The integrators over
many steps (fixed and adaptive) serve both kinds: :mod:`delta_dynamics.common.integrate`,
called through :mod:`delta_dynamics.algorithms`.

The state is the platform position and velocity; joint values follow from
:func:`delta_dynamics.rotary.dynamics.joint_state`.

>>> from delta_dynamics.rotary.model import RotaryModel
>>> m = RotaryModel.from_robot("nt_robot")
>>> X, V = step(m, (0.0, 0.0, -0.8), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1e-3)   # unpowered: falls
>>> V[2] < 0
True
"""
from __future__ import annotations

from delta_dynamics.common import integrate
from delta_dynamics.common.backend import ScalarMath
from delta_dynamics.common.friction import friction_slope
from delta_dynamics.common.solve import solve_sym3
from delta_dynamics.rotary.dynamics import chains, inverse_jacobian, joint_torques, mass_matrix_entries


def semi_implicit_step(m, X, Xd, tau, dt, F_P):
    """Symplectic Euler with the friction taken linearly implicit (module docstring), the rows
    of J being U_i / d_i (Asadi eq. 9); X, X_dot, tau are 3-tuples of floats (m, m/s, N m),
    the new (X, X_dot) are returned as tuples."""
    x, y, z = X
    vx, vy, vz = Xd
    xp = ScalarMath
    ch = chains(m, x, y, z, vx, vy, vz, xp)
    w = inverse_jacobian(ch, xp)
    fp = None if F_P is None else tuple(float(v) for v in F_P)
    tau0, _ = joint_torques(m, ch, w, 0.0, 0.0, 0.0, fp, True, xp)
    xx, yy, zz, xy, xz, yz = mass_matrix_entries(m, ch)
    bx = by = bz = 0.0
    for i, c in enumerate(ch):
        d, ux, uy, uz = c[3], c[4], c[5], c[6]
        s = dt * friction_slope(m, i, c[10])
        # J^T (tau - tau_0 - dt D_f qdd_v), J_i = U_i / d_i: the friction at the step's end
        # joint velocity q_dot + dt (J_i X_dd + qdd_v), its velocity-product part included
        k = (tau[i] - tau0[i] - s * c[11]) / d
        bx, by, bz = bx + ux * k, by + uy * k, bz + uz * k
        a = s / (d * d)                                # dt J^T D_f J
        xx, yy, zz = xx + a * ux * ux, yy + a * uy * uy, zz + a * uz * uz
        xy, xz, yz = xy + a * ux * uy, xz + a * ux * uz, yz + a * uy * uz
    ax, ay, az = solve_sym3((xx, yy, zz, xy, xz, yz), bx, by, bz)
    vx, vy, vz = vx + dt * ax, vy + dt * ay, vz + dt * az
    return (x + dt * vx, y + dt * vy, z + dt * vz), (vx, vy, vz)


#: One fixed step of ``dt`` s under constant efforts (the interface's ``step``,
#: :func:`delta_dynamics.common.integrate.stepper`): ``"semi-implicit"`` or ``"rk4"``.
step = integrate.stepper(semi_implicit_step)
