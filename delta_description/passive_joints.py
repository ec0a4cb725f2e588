"""The full joint state of the Delta URDF tree from the three actuated joint positions.

The URDF (``delta_description/urdf/delta.urdf.xacro``) opens the closed chain into a tree whose
passive joints only the kinematics can fill in. The API (:func:`full_joint_state`,
:func:`expand_joint_state`, :func:`movable_joint_names`) is the same for both kinds of Delta;
the model's (or robot file's) kind picks the tree. Rotary robot: given the arm angles q (and
optionally their rates q_dot) this module computes, without ROS:

* ``platform_x``, ``platform_y``, ``platform_z``: the platform centre X = forward_kinematics(q);
  rates X_dot from q_dot = J X_dot, where row i of J is U_i^T / (U_i^T T_i) (Asadi eq. 9);
* ``forearm_<i><s>_bend_joint`` / ``forearm_<i><s>_tilt_joint`` for each chain i = 1..3 and bar
  s = a, b: both bars of a parallelogram are parallel to U_i = A_i - C_i (platform joint minus
  elbow), so they share one (bend, tilt). With f = U_i / |U_i| in the chain frame
  (x' = u_i, y' = e_z x u_i, z' = e_z) and a = R_y(q_i)^T f in the arm frame,

      a = R_y(bend) R_z(tilt) x_hat = (cos bend cos tilt, sin tilt, -sin bend cos tilt)
      =>  bend = atan2(-a_z, a_x),  tilt = atan2(a_y, sqrt(a_x^2 + a_z^2)).

  Rates: U_dot = X_dot - T_i q_dot_i with T_i = dC_i/dq_i = -l (sin q_i u_i + cos q_i e_z);
  a_dot = R_y(q_i)^T f_dot + q_dot_i (-a_z, 0, a_x); then differentiate the two atan2.

The angles are taken from the actual arm angles q (not re-derived by inverse kinematics), so they
are right on either elbow branch; they equal ``delta_dynamics.algorithms.passive_angles(model, X)``
on the usual elbow-out branch.

Linear (prismatic) robot (``delta_linear.xacro``): given the carriage positions q,

* ``platform_x/y/z``: X = forward_kinematics(q), X_dot = J^-1 q_dot (Colombo eq. 4);
* ``rod_<i><s>_bend_joint`` / ``rod_<i><s>_tilt_joint``: both rods of pair i are parallel to
  d_i = X + r u_i - (R u_i + q_i e_z) (eq. 2); with f = d_i / l in the carriage frame (the chain
  frame: the carriage only translates), f = R_y(bend) R_z(tilt) x_hat gives bend, tilt by the
  same two atan2 as above, and their rates from d_dot = X_dot - q_dot_i e_z.

The ROS node that republishes ``/joint_states`` calls :func:`expand_joint_state` per message::

    >>> from delta_dynamics.kinds import model_for
    >>> m = model_for("nt_robot")
    >>> s = full_joint_state(m, [0.4, 0.4, 0.4])
    >>> s.names[:4]
    ('arm_1_joint', 'arm_2_joint', 'arm_3_joint', 'platform_x')
    >>> round(s.position[5], 4)   # platform_z
    -0.7805
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import SingularityError, cartesian_state, forward_kinematics, kind_of, passive_origins

PLATFORM_JOINTS = ("platform_x", "platform_y", "platform_z")
BAR_SIDES = ("a", "b")   # a: +spacing/2 along the elbow axis / carriage axle (+y' of the chain), b: -spacing/2


def bar_joint_names(chain: int, side: str) -> tuple:
    """(bend, tilt) joint names of bar ``side`` of chain ``chain`` (1-based) of a rotary robot."""
    return f"forearm_{chain}{side}_bend_joint", f"forearm_{chain}{side}_tilt_joint"


def rod_joint_names(chain: int, side: str) -> tuple:
    """(bend, tilt) joint names of rod ``side`` of chain ``chain`` (1-based) of a linear robot."""
    return f"rod_{chain}{side}_bend_joint", f"rod_{chain}{side}_tilt_joint"


def link_joint_names(robot, chain: int, side: str) -> tuple:
    """(bend, tilt) joint names of the passive link (forearm bar or rod) ``side`` of ``chain``."""
    return (rod_joint_names if kind_of(robot) == "linear" else bar_joint_names)(chain, side)


def forearm_joint_names(robot=None) -> tuple:
    """The 12 joints of the passive links: chain 1..3, side a then b, bend then tilt (forearm
    bars of a rotary robot, the default; rods of a linear one)."""
    names = bar_joint_names if robot is None else (lambda i, s: link_joint_names(robot, i, s))
    return tuple(n for i in (1, 2, 3) for s in BAR_SIDES for n in names(i, s))


def passive_joint_names(robot=None) -> tuple:
    """Every passive joint of the URDF: platform_x/y/z, then the 12 joints of the passive links
    (of a rotary robot without ``robot``; of ``robot``'s kind, a model or a robot file)."""
    return PLATFORM_JOINTS + forearm_joint_names(robot)


def movable_joint_names(robot) -> tuple:
    """All non-fixed joints of the URDF: the actuated ones (robot file order), then the passive
    ones. ``robot``: a robot file (RobotParameters) or a model."""
    return tuple(robot.joint_names) + passive_joint_names(robot)


@dataclass(frozen=True)
class FullJointState:
    """Joint names with positions (rad, m) and, if asked for, velocities (rad/s, m/s)."""

    names: tuple
    position: tuple
    velocity: tuple | None = None

    def as_dict(self) -> dict:
        """{joint name: position}."""
        return dict(zip(self.names, self.position))


def _chain_frame(m, i):
    """u_i and y'_i = e_z x u_i."""
    c, s = m.cphi[i], m.sphi[i]
    return np.array([c, s, 0.0]), np.array([-s, c, 0.0])


def forearm_angles(m, q, X, qd=None, Xd=None):
    """(bend, tilt) per chain, shape (3, 2), and their rates (or None) for joint positions q and
    platform X; with per-arm geometry the arm frame turns by the arm angle q_i + o_i and the
    platform joint sits at arm i's own r_i (``m.arm_offset``, ``m.arm_r``)."""
    q = np.asarray(q, dtype=float)
    X = np.asarray(X, dtype=float)
    C = passive_origins(m, q)
    ang = np.empty((3, 2))
    rate = None if qd is None else np.empty((3, 2))
    for i in range(3):
        u, t = _chain_frame(m, i)
        U = X + m.arm_r[i] * u - C[i]
        nU = float(np.linalg.norm(U))
        f = np.array([u @ U, t @ U, U[2]]) / nU            # chain frame
        th = q[i] + m.arm_offset[i]                         # the arm angle
        cq, sq = math.cos(th), math.sin(th)
        ax, ay, az = cq * f[0] - sq * f[2], f[1], sq * f[0] + cq * f[2]   # R_y(q)^T f
        h2 = ax * ax + az * az
        h = math.sqrt(h2)
        ang[i] = (math.atan2(-az, ax), math.atan2(ay, h))
        if rate is not None:
            T = -m.arm_l[i] * (sq * u + cq * np.array([0.0, 0.0, 1.0]))
            Ud = np.asarray(Xd) - T * qd[i]
            fd = np.array([u @ Ud, t @ Ud, Ud[2]]) / nU
            adx = cq * fd[0] - sq * fd[2] - qd[i] * az
            ady = fd[1]
            adz = sq * fd[0] + cq * fd[2] + qd[i] * ax
            hd = (ax * adx + az * adz) / h
            rate[i] = ((az * adx - ax * adz) / h2, (h * ady - ay * hd) / (h2 + ay * ay))
    return ang, rate


def platform_velocity(m, q, X, qd) -> np.ndarray:
    """X_dot solving q_dot = J X_dot, J_i = U_i^T / (U_i^T T_i) evaluated at the actual arm angles
    (arm i's own geometry)."""
    q = np.asarray(q, dtype=float)
    C = passive_origins(m, q)
    rows = []
    for i in range(3):
        u, _ = _chain_frame(m, i)
        U = np.asarray(X) + m.arm_r[i] * u - C[i]
        th = q[i] + m.arm_offset[i]
        T = -m.arm_l[i] * (math.sin(th) * u + math.cos(th) * np.array([0.0, 0.0, 1.0]))
        rows.append(U / float(U @ T))
    J = np.array(rows)
    try:
        return np.linalg.solve(J, np.asarray(qd, dtype=float))
    except np.linalg.LinAlgError:
        raise SingularityError(f"joint angles {list(np.round(q, 6))} rad are singular: "
                               "the platform velocity is undefined", point=list(q)) from None


def _direction_angles(f, fd=None):
    """(bend, tilt) with f = R_y(bend) R_z(tilt) x_hat for a unit vector f, and their rates for
    f_dot (or None)."""
    ax, ay, az = f
    h2 = ax * ax + az * az
    h = math.sqrt(h2)
    ang = (math.atan2(-az, ax), math.atan2(ay, h))
    if fd is None:
        return ang, None
    adx, ady, adz = fd
    hd = (ax * adx + az * adz) / h
    return ang, ((az * adx - ax * adz) / h2, (h * ady - ay * hd) / (h2 + ay * ay))


def rod_angles(m, q, X, qd=None, Xd=None):
    """(bend, tilt) per rod pair of a linear Delta, shape (3, 2), and their rates (or None) for
    carriage positions q and platform X (module docstring)."""
    ang = np.empty((3, 2))
    rate = None if qd is None else np.empty((3, 2))
    for i in range(3):
        u, t = _chain_frame(m, i)
        # rail i's own c_i = (R_i - r) u_i, carriage height q_i + o_i and rod length l_i
        d = np.asarray(X, dtype=float) - np.array([m.cx[i], m.cy[i], 0.0]) - np.array([0.0, 0.0, q[i] + m.arm_offset[i]])
        f = np.array([u @ d, t @ d, d[2]]) / m.arm_l[i]
        fd = None
        if qd is not None:
            dd = np.asarray(Xd, dtype=float) - np.array([0.0, 0.0, qd[i]])
            fd = np.array([u @ dd, t @ dd, dd[2]]) / m.arm_l[i]
        a, r = _direction_angles(f, fd)
        ang[i] = a
        if rate is not None:
            rate[i] = r
    return ang, rate


def _linear_state(m, q, qd):
    if qd is None:
        X, Xd = forward_kinematics(m, q), None
    else:
        X, Xd, _ = cartesian_state(m, q, qd)
    ang, rate = rod_angles(m, q, X, qd, Xd)
    return X, Xd, ang, rate


def _rotary_state(m, q, qd):
    X = forward_kinematics(m, q)
    Xd = None if qd is None else platform_velocity(m, q, X, qd)
    ang, rate = forearm_angles(m, q, X, qd, Xd)
    return X, Xd, ang, rate


def full_joint_state(m, q, qd=None) -> FullJointState:
    """Positions (and velocities if ``qd`` is given) of every non-fixed URDF joint for the
    actuated joint positions q (arm angles, or carriage positions of a linear robot).

    ``m`` is a model of either kind (:func:`delta_dynamics.kinds.model_for`). Order:
    :func:`movable_joint_names`. Raises ``delta_dynamics.algorithms.UnreachableError`` (or
    ``SingularityError``) where the forearms (rods) cannot close the chain.

    >>> from delta_dynamics.kinds import model_for
    >>> s = full_joint_state(model_for("colombo2020"), [0.25, 0.25, 0.25])
    >>> s.names[3:7], round(s.position[5], 4)        # the platform centre's z, then rod 1a
    (('platform_x', 'platform_y', 'platform_z', 'rod_1a_bend_joint'), 0.0628)
    """
    q = np.asarray(q, dtype=float).reshape(3)
    if qd is not None:
        qd = np.asarray(qd, dtype=float).reshape(3)
    X, Xd, ang, rate = (_linear_state if kind_of(m) == "linear" else _rotary_state)(m, q, qd)
    pos = [*q, *X]
    vel = None if qd is None else [*qd, *Xd]
    for i in range(3):
        for _side in BAR_SIDES:                      # both links of a parallelogram: same angles
            pos.extend(ang[i])
            if vel is not None:
                vel.extend(rate[i])
    names = movable_joint_names(m)
    return FullJointState(names, tuple(float(v) for v in pos),
                          None if vel is None else tuple(float(v) for v in vel))


def expand_joint_state(m, names, position, velocity=None) -> FullJointState:
    """The full joint state from a (partial) sensor_msgs/JointState's fields.

    Picks the robot's actuated joints out of ``names``/``position`` (any order, other joints
    ignored); velocities are used if ``velocity`` has one entry per name. Raises ``ValueError``
    naming the actuated joints the message lacks.
    """
    names = list(names)
    idx = {n: k for k, n in enumerate(names)}
    missing = [j for j in m.robot.joint_names if j not in idx]
    if missing:
        raise ValueError(f"joint state lacks the actuated joints {missing} (has {names})")
    if len(position) != len(names):
        raise ValueError(f"joint state has {len(names)} names but {len(position)} positions")
    q = [position[idx[j]] for j in m.robot.joint_names]
    qd = None
    if velocity is not None and len(velocity) == len(names):
        qd = [velocity[idx[j]] for j in m.robot.joint_names]
    return full_joint_state(m, q, qd)
