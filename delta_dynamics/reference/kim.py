"""The joint-space model of a rotary Delta by Kim, Kim, Kwak & Kanno (2022), eqs. (20)-(30):

    tau = D(theta) theta_dd + C(theta, theta_d) theta_d + N(theta, theta_d)          (26)
    D = diag(I_1, I_2, I_3) + J_k^T m_P J_k                                         (27)
    C = J_k^T m_P J_k_dot + diag(c_v)                                               (28)
    N = J_k^T m_P (0, 0, g) - T_g cos(theta) + diag(c_c) sgn(theta_d)               (29)

with J_k the Jacobian P_dot = J_k theta_dot (Kim eq. 16; the inverse of Asadi's J) and the
11-parameter vector M_PAR = (m_P, T_g, I_1, I_2, I_3, c_v1..3, c_c1..3) of eq. (30).

It is the explicit model of :mod:`delta_dynamics.rotary.dynamics` with each forearm lumped into two
point masses at its ends (m_K = 0): ``kim_parameters`` derives the 11 values from the same
robot file (m_P = m_x + 3 r_K m_K, I_i = I_arm,i + (1 - r_K) m_K l^2,
T_g = g (h + (1 - r_K) m_K l)), so both models agree except for the forearm's rotational
inertia. Signs follow ``docs/conventions.md`` (theta positive down), so the gravity term
of the arms reads -T_g cos(theta) as in eq. (25).
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.algorithms import cartesian_state, jacobian, jacobian_derivative, regressor

KIM_PARAMETER_NAMES = ("m_p", "T_g", "I_1", "I_2", "I_3", "c_v1", "c_v2", "c_v3",
                       "c_c1", "c_c2", "c_c3")


def kim_parameters(m) -> np.ndarray:
    """The 11-parameter vector of Kim et al. eq. (30) implied by the rotary model's robot file
    (kg, N m, kg m^2, N m s/rad, N m).

    >>> from delta_dynamics.kinds import model_for
    >>> kim_parameters(model_for("nt_robot")).shape
    (11,)
    """
    rk, l = m.r_k, m.l
    m_p = m.m_x + 3.0 * rk * m.m_k
    t_g = m.g * (float(np.mean(m.moment)) + (1.0 - rk) * m.m_k * l)
    inertia = [I + (1.0 - rk) * m.m_k * l * l for I in m.inertia]
    return np.array([m_p, t_g, *inertia, *m.viscous, *m.coulomb], dtype=float)


def kim_matrices(m, theta, theta_d, params=None):
    """D, C (3x3) and N (3,) of eqs. (27)-(29) for joint positions and velocities.

    Works on one sample or N samples (then (N,3,3), (N,3,3), (N,3)).
    """
    p = kim_parameters(m) if params is None else np.asarray(params, dtype=float)
    X, Xd, _ = cartesian_state(m, theta, theta_d)
    J = jacobian(m, X)
    Jk = np.linalg.inv(J)                                            # P_dot = J_k theta_dot
    Jk_dot = -Jk @ jacobian_derivative(m, X, Xd) @ Jk               # d/dt J^-1
    th = np.asarray(theta, dtype=float)
    thd = np.asarray(theta_d, dtype=float)
    JkT = np.swapaxes(Jk, -1, -2)
    D = p[0] * JkT @ Jk + np.eye(3) * p[2:5]
    C = p[0] * JkT @ Jk_dot + np.eye(3) * p[5:8]
    N = p[0] * m.g * JkT[..., :, 2] - p[1] * np.cos(th) + p[8:11] * np.sign(thd)
    return D, C, N


def kim_torque(m, theta, theta_d, theta_dd, params=None):
    """tau of eq. (26) for joint data (one sample or N samples)."""
    D, C, N = kim_matrices(m, theta, theta_d, params)
    return (np.einsum("...ij,...j->...i", D, np.asarray(theta_dd, dtype=float))
            + np.einsum("...ij,...j->...i", C, np.asarray(theta_d, dtype=float)) + N)


def kim_regressor(m, theta, theta_d, theta_dd):
    """Y_kim with tau = Y_kim M_PAR (eq. 26 is linear in the 11 parameters of eq. 30):
    shape (3, 11) or (N, 3, 11). Built from the explicit model's regressor columns: the
    platform-mass column, -cos(theta_i) for T_g, theta_dd_i for I_i, theta_d_i for c_vi and
    sgn(theta_d_i) for c_ci (the exact sign of eq. 21)."""
    X, Xd, Xdd = cartesian_state(m, theta, theta_d, theta_dd)
    Y = regressor(m, X, Xd, Xdd)
    thd = np.asarray(theta_d, dtype=float)
    single = Y.ndim == 2
    Y = Y.reshape(-1, 3, Y.shape[-1])
    out = np.zeros((Y.shape[0], 3, 11))
    out[..., 0] = Y[..., 0]
    out[..., 1] = Y[..., 5:8].sum(-1) / m.g            # -g cos(theta_i) / g
    out[..., 2:5] = Y[..., 2:5]
    out[..., 5:8] = Y[..., 8:11]
    out[..., 8:11] = np.eye(3) * np.sign(thd).reshape(-1, 3)[:, :, None]
    return out[0] if single else out
