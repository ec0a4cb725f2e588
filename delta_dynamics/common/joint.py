"""The interface functions that take the joint state, the same for every kind: the platform
state from the joints (the kind's :func:`cartesian_state`, X = FK(q), X_dot = J^-1 q_dot,
X_ddot = J^-1 (q_ddot - J_dot X_dot)), then the kind's platform-space function. Written once
over ``m.ops`` (:mod:`delta_dynamics.kinds`); each kind's dynamics module offers them under
the interface's names.
"""
from __future__ import annotations


def inverse_dynamics_joint(m, q, qd, qdd, F_P=None, friction: bool = True):
    """Inverse dynamics from joint data (as measured): the joint efforts (N m or N) for
    (q, q_dot, q_ddot)."""
    X, Xd, Xdd = m.ops.cartesian_state(m, q, qd, qdd)
    return m.ops.inverse_dynamics(m, X, Xd, Xdd, F_P=F_P, friction=friction)


def regressor_joint(m, q, qd, qdd, stribeck: bool = False):
    """The kind's regressor from joint data (q, q_dot, q_ddot): Y with efforts = Y pi."""
    X, Xd, Xdd = m.ops.cartesian_state(m, q, qd, qdd)
    return m.ops.regressor(m, X, Xd, Xdd, stribeck=stribeck)
