"""MuJoCo's inverse dynamics of the closed chain: the actuator torques that move the robot of
:mod:`delta_dynamics.reference.mujoco_model.mjcf` along a platform trajectory, for comparison with the
explicit model (:func:`delta_dynamics.algorithms.inverse_dynamics`).

MuJoCo's own ``mj_inverse`` treats the loop-closing ``connect`` constraints as the soft
constraints of its forward solver: it returns the generalized force at *every* joint that
produces the given accelerations, with a constraint force computed from the residual of a
spring-damper (it does not know that only the arms are driven, and a motion that keeps the
loops closed exactly gives a residual of the neglected J_dot v term, times the constraint
stiffness). The actuator torques of a closed chain are the solution of the multibody
equations with Lagrange multipliers instead (Elshami et al. eq. 6, here solved for the
actuated forces): with the chain opened at the platform joints (a tree), its generalized
coordinates v split into the arm angles q_a and the dependent ones (elbow bend and tilt,
platform x, y, z),

    M q_dd + c(q, v) = S^T tau + C_q^T lambda,   C_q v = 0,   C_q q_dd + C_q_dot v = 0.

Every admissible velocity is v = G q_dot_a with G = [I; -C_dep^-1 C_a] (the constraint
Jacobian's columns split into actuated and dependent), and C_q G = 0, so multiplying by G^T
removes the multipliers:

    tau = G^T (M q_dd + c(q, v)),   q_dd = G q_dd_a + gamma,   C_dep gamma_dep = -C_q_dot v.

MuJoCo supplies everything on the tree: M q_dd + c by its recursive Newton-Euler
(``mj_rne``, the core of ``mj_inverse``, plus the joints' ``armature`` times q_dd as
``mj_inverse`` adds it), C_q from its ``connect`` rows (``efc_J``) and
C_q_dot v from ``mj_jacDot`` at the two points each constraint joins. The arm motion
(q, q_dot, q_dd) and the elbow angles come from :mod:`delta_dynamics.algorithms`. Friction
(the robot file's law, :func:`delta_dynamics.algorithms.friction_torque`) is added at the arms.

>>> from delta_dynamics.motion.trajectories import circle
>>> tau = inverse_dynamics("nt_robot", circle(duration=0.2, dt=0.1))
>>> tau.shape
(3, 3)
"""
from __future__ import annotations

import numpy as np

from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import cartesian_state, friction_torque, joint_state, passive_angles
from delta_dynamics.reference.bodies import require_rotary
from delta_dynamics.reference.mujoco_model import require_mujoco
from delta_dynamics.reference.mujoco_model.mjcf import SolverSettings
from delta_dynamics.reference.mujoco_model.plant import ClosedChain, friction_model

mujoco = require_mujoco()


class MujocoInverseDynamics:
    """The closed chain of ``robot`` and a MuJoCo workspace to evaluate its inverse dynamics
    (see the module docstring). :meth:`torques` takes platform samples, :meth:`joint_torques`
    joint samples; both return (N, 3) or (3,)."""

    def __init__(self, robot, settings: SolverSettings | None = None):
        require_rotary(load_robot(robot), "MuJoCo's inverse dynamics")
        self.chain = ClosedChain(robot, settings)
        self.robot = self.chain.robot
        self.model = self.chain.model
        self.data = mujoco.MjData(self.model)
        self._fm = friction_model(self.robot)
        m, c = self.model, self.chain
        self._arm = c.arm_v
        self._dep = np.setdiff1d(np.arange(m.nv), c.arm_v)
        self._site_body = []
        for k in (1, 2, 3):
            s1 = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f"forearm_{k}_end")
            s2 = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f"platform_joint_{k}")
            self._site_body.append((s1, int(m.site_bodyid[s1]), s2, int(m.site_bodyid[s2])))
        self._jd1 = np.zeros((3, m.nv))
        self._jd2 = np.zeros((3, m.nv))
        self._tree = np.zeros(m.nv)

    def torques(self, X, Xd, Xdd, friction: bool = True) -> np.ndarray:
        """Arm torques (N m) for platform positions, velocities, accelerations (m, m/s, m/s^2)."""
        q, qd, qdd = joint_state(self.chain.kin, X, Xd, Xdd)
        return self._evaluate(np.asarray(X, float), q, qd, qdd, friction)

    def joint_torques(self, q, qd, qdd, friction: bool = True) -> np.ndarray:
        """Arm torques (N m) for joint positions, velocities, accelerations."""
        X, _, _ = cartesian_state(self.chain.kin, q, qd)
        return self._evaluate(X, np.asarray(q, float), np.asarray(qd, float), np.asarray(qdd, float), friction)

    def _evaluate(self, X, q, qd, qdd, friction):
        single = np.ndim(q) == 1
        X, q, qd, qdd = (np.atleast_2d(a) for a in (X, q, qd, qdd))
        pa = passive_angles(self.chain.kin, X).reshape(-1, 3, 2)
        out = np.empty((len(q), 3))
        for k in range(len(q)):
            out[k] = self._one(X[k], q[k], qd[k], qdd[k], pa[k])
        if friction:
            out += friction_torque(self._fm, qd)
        return out[0] if single else out

    def _one(self, X, q, qd, qdd, pa):
        m, d, c = self.model, self.data, self.chain
        nv, arm, dep = m.nv, self._arm, self._dep
        d.qpos[c.arm_q] = q
        d.qpos[c.bend] = pa[:, 0]
        d.qpos[c.tilt] = pa[:, 1]
        d.qpos[c.platform] = X
        mujoco.mj_fwdPosition(m, d)                       # kinematics, M, constraint Jacobian
        C = d.efc_J[:d.ne * nv].reshape(d.ne, nv)
        # G = dv/dq_dot_a: identity on the arms, -C_dep^-1 C_a on the dependent coordinates
        # (9 closure rows for 9 dependent coordinates; regular away from singularities)
        Cdep = C[:, dep]
        Gdep = -np.linalg.solve(Cdep, C[:, arm])
        v = np.empty(nv)
        v[arm] = qd
        v[dep] = Gdep @ qd
        d.qvel[:] = v
        mujoco.mj_fwdVelocity(m, d)                      # body velocities (for mj_jacDot)
        cdv = np.empty(3 * len(self._site_body))          # C_q_dot v, per constraint (3 rows each)
        for i, (s1, b1, s2, b2) in enumerate(self._site_body):
            mujoco.mj_jacDot(m, d, self._jd1, None, d.site_xpos[s1], b1)
            mujoco.mj_jacDot(m, d, self._jd2, None, d.site_xpos[s2], b2)
            cdv[3 * i:3 * i + 3] = (self._jd1 - self._jd2) @ v
        a = np.empty(nv)
        a[arm] = qdd
        a[dep] = Gdep @ qdd - np.linalg.solve(Cdep, cdv)
        d.qacc[:] = a
        mujoco.mj_rne(m, d, 1, self._tree)               # tree inverse dynamics (bodies only)
        tree = self._tree + m.dof_armature * a            # + rotor inertias, as mj_inverse adds them
        return tree[arm] + Gdep.T @ tree[dep]


def inverse_dynamics(robot, trajectory, friction: bool = True, settings: SolverSettings | None = None) -> np.ndarray:
    """Arm torques (N, 3) that move ``robot`` (a robot file, name or loaded) along
    ``trajectory`` (a :class:`delta_dynamics.motion.trajectories.Trajectory`: X, Xd, Xdd of N
    samples) by MuJoCo's inverse dynamics of the closed chain (module docstring)."""
    robot = load_robot(robot)
    return MujocoInverseDynamics(robot, settings).torques(trajectory.X, trajectory.Xd, trajectory.Xdd, friction)


def trajectory_torques(robot, trajectory) -> np.ndarray:
    """Rigid-body torques (N, 3) of MuJoCo's closed chain along ``trajectory`` (no joint friction):
    the ``mujoco`` entry of :data:`delta_dynamics.compare.MODELS`."""
    return inverse_dynamics(robot, trajectory, friction=False)
