"""The joint friction law of both robot kinds (Kim et al. eqs. 20-21 with a Stribeck
break-away term) and its slope, for the models' inverse and forward dynamics and the
semi-implicit integrators.

Per joint i, at joint velocity q_d (rad/s at an arm, m/s on a carriage)::

    f_i(q_d) = c_v q_d + (c_c + (c_s - c_c) exp(-(q_d / v_s)^2)) sgn_eps(q_d),
    sgn_eps(v) = tanh(v / eps)   (the exact sign when eps = 0)

with the model's ``viscous`` c_v, ``coulomb`` c_c, ``static`` c_s, ``v_stribeck`` v_s and
``v_smooth`` eps (N m and N m s/rad, or N and N s/m). Any model with those attributes (and
``stribeck``: whether any c_s differs from c_c) will do.

>>> from types import SimpleNamespace
>>> from delta_dynamics.common.backend import ScalarMath
>>> m = SimpleNamespace(viscous=(0.1,) * 3, coulomb=(0.5,) * 3, static=(0.5,) * 3, v_stribeck=0.05,
...                     v_smooth=0.0, stribeck=False)
>>> joint_friction(m, 0, 2.0, ScalarMath), friction_slope(m, 0, 2.0)
(0.7, 0.1)
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.common.backend import ArrayMath, join3, split3


def smooth_sign(v, eps, xp):
    """sgn_eps(v) = tanh(v / eps), the exact sign for eps = 0 (``xp``: a math back-end)."""
    if eps > 0:
        return xp.tanh(v / eps)
    return xp.sign(v)


def joint_friction(m, i, qd, xp):
    """f_i(q_d): the friction effort of joint ``i`` at joint velocity ``qd`` (module docstring)."""
    sg = smooth_sign(qd, m.v_smooth, xp)
    fc = m.coulomb[i]
    if m.stribeck:
        r = qd / m.v_stribeck
        fc = fc + (m.static[i] - fc) * xp.exp(-r * r)
    return m.viscous[i] * qd + fc * sg


def friction_slope(m, i, qd):
    """d f_i / d q_d at ``qd`` (one sample), clipped at 0: the Stribeck dip is treated explicitly."""
    eps = m.v_smooth
    fc = m.coulomb[i]
    slope = m.viscous[i]
    sg = math.tanh(qd / eps) if eps > 0 else (qd > 0) - (qd < 0)
    if m.stribeck:
        r = qd / m.v_stribeck
        e = math.exp(-r * r)
        fc = fc + (m.static[i] - m.coulomb[i]) * e
    if eps > 0:
        slope += fc * (1.0 - sg * sg) / eps
    return max(slope, 0.0)


def friction_efforts(m, qd, name: str = "joint velocity"):
    """(f_1, f_2, f_3) at joint velocities ``qd``, shape (3,) or (N, 3); ``name`` words the
    velocity in a message about a wrong shape."""
    a, b, c, xp, single = split3(qd, name)
    return join3(*(joint_friction(m, i, v, xp) for i, v in enumerate((a, b, c))), single)


def friction_columns(m, Y, i, qd, stribeck: bool) -> None:
    """Write the friction columns of joint ``i`` into the regressor ``Y`` (N, 3, 14 or 17) at
    joint velocities ``qd``: q_d (viscous, column 8 + i) and sgn_eps(q_d) (Coulomb, 11 + i);
    with ``stribeck`` the Coulomb column is (1 - e) sgn_eps(q_d) and column 14 + i holds
    e sgn_eps(q_d), e = exp(-(q_d / v_s)^2), for the break-away effort."""
    qd = np.asarray(qd)
    Y[:, i, 8 + i] = qd
    sg = smooth_sign(qd, m.v_smooth, ArrayMath)
    if stribeck:
        e = np.exp(-(qd / m.v_stribeck) ** 2)
        Y[:, i, 11 + i] = sg * (1.0 - e)
        Y[:, i, 14 + i] = sg * e
    else:
        Y[:, i, 11 + i] = sg
