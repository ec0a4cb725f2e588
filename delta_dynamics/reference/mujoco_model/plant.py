"""A simulated robot on MuJoCo: the closed chain of :mod:`delta_dynamics.reference.mujoco_model.mjcf`
stepped at the drive rate, behind the :class:`delta_dynamics.plant.Plant` interface, so
``SimulatedDriveSet(robot, plant=MujocoPlant(robot))`` runs the drives on it.

Unlike :class:`delta_dynamics.plant.ExplicitPlant` (the controller's own explicit model,
Asadi & Heydari eq. 43) this is a multibody model of the mechanism with Lagrange multipliers
(Elshami et al. eq. 6: [M C_q^T; C_q 0] [q_dd; lambda] = [Q; Q_d]) solved by MuJoCo: every
body of :func:`delta_dynamics.reference.bodies.body_set` with its own inertia tensor, the forearms on
universal elbows, the loops closed by soft ``connect`` constraints (MuJoCo's compliance:
``solref``/``solimp`` of :class:`~delta_dynamics.reference.mujoco_model.mjcf.SolverSettings`).

Friction: the robot file's law (:func:`delta_dynamics.algorithms.friction_torque`:
viscous, Coulomb with the smooth sign tanh(q_dot/eps), Stribeck) acts at the arm joints,
exactly as in the explicit plant, so a comparison of the two plants is about the mechanism
only. It is applied as a joint force, linearly implicit like the explicit plant's
integrator: with D = d tau_fric / d q_dot (clipped at 0) and P the closed chain's
acceleration response to joint forces (for MuJoCo's soft equality constraints
P = M^-1 - M^-1 J^T (J M^-1 J^T + R)^-1 J M^-1, exact), the arm accelerations a solve
(I + h P_aa D) a = a_0, and the friction force is tau_fric(q_dot) + h D a. The smooth sign
makes D as large as c_s / eps (1250 N m s/rad on ``nt_robot``), which an explicit step of
0.5 ms cannot carry (h D / I_arm ~ 3); MuJoCo's own implicit damping would not see the
constraints. The correction is made only within a few eps of rest, where it matters.

Integration: semi-implicit Euler, MuJoCo's ``Euler`` (q_dot += h q_dd, q += h q_dot; by
``mj_step``, or near rest by the plant itself after ``mj_forward`` and the friction
correction), at ``settings.timestep`` or less: :meth:`MujocoPlant.step` splits any ``dt`` into equal steps
(``max_step`` stays the drive period the plant expects to be called with, 1 ms).

>>> plant = MujocoPlant("nt_robot")
>>> plant.place([0.3, 0.3, 0.3])
>>> plant.step([0.0, 0.0, 0.0], 0.001)          # unpowered arms start to fall
>>> q, qd = plant.joint_state()
>>> [round(v, 5) for v in q], all(v > 0 for v in qd)
([0.30001, 0.30001, 0.30001], True)
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import UnreachableError, forward_kinematics, inverse_kinematics, workspace_centre
from delta_dynamics.common.backend import ScalarMath
from delta_dynamics.common.friction import friction_slope, joint_friction
from delta_dynamics.kinds import model_for
from delta_dynamics.plant import Plant, check_payload, check_platform_force
from delta_dynamics.reference.mujoco_model import require_mujoco
from delta_dynamics.reference.mujoco_model.kinds import mechanism
from delta_dynamics.reference.mujoco_model.mjcf import SolverSettings, build_model

mujoco = require_mujoco()

#: the joint positions and the platform may disagree by at most this (rad, or m for a linear
#: robot's carriages) before the plant
#: declares the mechanism out of its workspace (another assembly branch, a blown-up step)
BRANCH_TOLERANCE = 0.05
#: the closed chain's response matrix (see MujocoPlant._response) is reused within this (rad)
RESPONSE_REUSE = 1e-3


def friction_model(robot):
    """The robot's model (:func:`delta_dynamics.kinds.model_for`) whose friction is the robot
    file's ``friction`` section (not identified lumped values a file may also hold), for
    :func:`delta_dynamics.algorithms.friction_torque`."""
    m = model_for(robot)
    f = m.robot.friction
    return m.with_parameters(dataclasses.replace(m.params, viscous=f.viscous, coulomb=f.coulomb, static=f.static,
                                                 stribeck_velocity=f.stribeck_velocity,
                                                 smoothing_velocity=f.smoothing_velocity))


class ClosedChain:
    """The MuJoCo model of a robot and the indices of its joints: ``arm_q``/``arm_v`` (qpos and
    qvel addresses of the three actuated joints: arms or carriages), ``bend``/``tilt`` (qpos
    addresses of the universal joints' hinges), ``platform`` (qpos addresses of the slides x,
    y, z); ``mechanism``: the kind's part of the model (:mod:`.kinds`)."""

    def __init__(self, robot, settings: SolverSettings | None = None):
        self.robot = load_robot(robot)
        self.settings = settings or SolverSettings()
        self.model = build_model(self.robot, self.settings)
        self.kin = model_for(self.robot)
        self.mechanism = mech = mechanism(self.robot)
        m = self.model

        def jid(name):
            return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)

        arm = [jid(n) for n in self.robot.joint_names]
        self.arm_q = np.array([m.jnt_qposadr[j] for j in arm])
        self.arm_v = np.array([m.jnt_dofadr[j] for j in arm])
        self.bend = np.array([m.jnt_qposadr[jid(mech.name(mech.bend_joint, k))] for k in (1, 2, 3)])
        self.tilt = np.array([m.jnt_qposadr[jid(mech.name(mech.tilt_joint, k))] for k in (1, 2, 3)])
        self.platform = np.array([m.jnt_qposadr[jid(n)] for n in ("platform_x", "platform_y", "platform_z")])
        self.arm_q_list = self.arm_q.tolist()
        self.platform_list = self.platform.tolist()
        if m.nq != m.nv:                # every joint is a hinge or a slide: one address for both
            raise ValueError(f"the MuJoCo model of {self.robot.name} has other joints than hinges and slides")

    def qpos(self, q, X) -> np.ndarray:
        """The full closed-chain configuration (all 12 joints) for actuated joint positions ``q``
        and the platform at ``X`` (which must match: X = FK(q)); the universal joints from the
        mechanism's ``passive_angles``."""
        out = np.zeros(self.model.nq)
        pa = self.mechanism.passive_angles(self.robot, self.kin, np.asarray(q, float), np.asarray(X, float))
        out[self.arm_q] = q
        out[self.bend] = pa[:, 0]
        out[self.tilt] = pa[:, 1]
        out[self.platform] = X
        return out

    def closure_error(self, data) -> float:
        """The largest gap (m) between a forearm's end and its platform joint (the violation
        of the loop-closing constraints) in ``data`` after mj_forward / mj_step."""
        return float(np.abs(data.efc_pos[:data.ne]).max()) if data.ne else 0.0


class MujocoPlant(Plant):
    """The robot file's closed chain simulated by MuJoCo (see the module docstring).

    Parameters: ``robot`` (robot file, name or loaded; the simulated robot, payload included),
    ``settings`` (:class:`~delta_dynamics.reference.mujoco_model.mjcf.SolverSettings`), ``friction``
    (False leaves the arms frictionless). Starts at rest at the workspace centre.
    """

    def __init__(self, robot, settings: SolverSettings | None = None, friction: bool = True):
        self.chain = ClosedChain(robot, settings)
        self.robot = self.chain.robot
        self.model = self.chain.model
        self.data = mujoco.MjData(self.model)
        self.friction = bool(friction)
        self._fm = friction_model(self.robot)
        nv = self.model.nv
        self._E = np.zeros((3, nv))                         # rows: unit forces at the arm joints
        self._E[range(3), self.chain.arm_v] = 1.0
        # h D / I above 1 %: the implicit friction correction is worth its cost (I: the arm's or
        # carriage's own inertia, a lower bound of what the closed chain puts there)
        self._stiff = 0.01 * self.chain.mechanism.driven_inertia(self.robot)
        self.max_closure_error = 0.0                        # largest gap seen since place() (m)
        self._P = self._P_at = None
        self._F = None                                      # external platform force (N) or None
        self._platform_body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, "platform_link")
        self.payload_mass = float(self.robot.mass.payload_mass)
        self._bare_mass = float(self.model.body_mass[self._platform_body]) - self.payload_mass
        self.place_platform(workspace_centre(self.chain.kin))

    # ------------------------------------------------------------------ disturbances
    def set_external_force(self, F) -> None:
        """Apply ``F`` (N, ``base_link``) at the platform from the next step on, held until
        changed; zero removes it. It acts as a generalized force on the platform's three
        slides (``qfrc_applied``), which is exactly a force at the platform centre."""
        self._F = check_platform_force(F)
        self.data.qfrc_applied[self.chain.platform] = self._F if self._F is not None else 0.0

    def set_payload(self, mass: float) -> None:
        """The simulated payload becomes ``mass`` kg: the platform body's mass (its inertia
        does not matter, the platform only translates); the state is kept."""
        mass = check_payload(mass)
        self.model.body_mass[self._platform_body] = self._bare_mass + mass
        # the platform is a "simple" body (slides only): MuJoCo keeps its mass matrix entries
        # (dof_M0) from compile time; mj_setConst, on a scratch MjData so the state is kept,
        # recomputes them (and every other mass-derived constant) as the compiler would
        mujoco.mj_setConst(self.model, mujoco.MjData(self.model))
        mujoco.mj_forward(self.model, self.data)
        self.payload_mass = mass
        self._P = None

    # ------------------------------------------------------------------ state
    def place(self, q) -> None:
        """Put the robot at rest at joint positions ``q``: platform from forward kinematics,
        elbows from :func:`~delta_dynamics.algorithms.passive_angles`. Raises
        UnreachableError when the forearms cannot meet, or meet only with an elbow folded
        inward (not the elbow-out assembly the kinematics and the controller use)."""
        q = np.asarray(q, dtype=float)
        X = forward_kinematics(self.chain.kin, q)
        q_ik = inverse_kinematics(self.chain.kin, X)
        if np.abs(q_ik - q).max() > BRANCH_TOLERANCE:
            raise UnreachableError(f"joint angles {np.round(q, 4).tolist()} rad fold an elbow inward: the "
                                   f"elbow-out assembly with the platform at {np.round(X, 4).tolist()} m has "
                                   f"{np.round(q_ik, 4).tolist()} rad", point=q.tolist())
        self._set(q, X)

    def place_platform(self, X) -> None:
        """Put the robot at rest with the platform at ``X`` (raises if unreachable)."""
        X = np.asarray(X, dtype=float)
        self._set(inverse_kinematics(self.chain.kin, X), X)

    def _set(self, q, X):
        d = self.data
        mujoco.mj_resetData(self.model, d)
        d.qpos[:] = self.chain.qpos(q, X)
        if self._F is not None:
            d.qfrc_applied[self.chain.platform] = self._F
        mujoco.mj_forward(self.model, d)
        self.max_closure_error = self.chain.closure_error(d)
        self._P = None

    def joint_state(self):
        """(q, q_dot) of the three arms, from MuJoCo's state."""
        d, c = self.data, self.chain
        return tuple(d.qpos[c.arm_q].tolist()), tuple(d.qvel[c.arm_v].tolist())

    def platform_position(self) -> np.ndarray:
        """The platform centre (m), shape (3,)."""
        return self.data.qpos[self.chain.platform].copy()

    def brake(self) -> None:
        """Stop every motion at once (the holding brakes of a disabled robot)."""
        self.data.qvel[:] = 0.0
        self.data.qacc_warmstart[:] = 0.0

    # ------------------------------------------------------------------ dynamics
    def step(self, tau, dt: float) -> None:
        """Advance ``dt`` s under the arm torques ``tau`` (N m), in equal MuJoCo steps of at most
        ``max_step``; UnreachableError (the state restored) when the chain leaves its workspace."""
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"plant step must be a finite number > 0 s, got {dt}")
        tau = [float(t) for t in tau]
        if len(tau) != 3 or not all(math.isfinite(t) for t in tau):
            raise ValueError(f"joint efforts must be 3 finite numbers, got {tau}")
        m, d = self.model, self.data
        saved = (d.time, d.qpos.copy(), d.qvel.copy(), d.qacc_warmstart.copy())
        n = max(1, int(math.ceil(dt / self.chain.settings.timestep - 1e-9)))
        h = dt / n
        if m.opt.timestep != h:
            m.opt.timestep = h
        for _ in range(n):
            self._substep(tau, h)
        try:
            self._check()
        except UnreachableError:
            d.time, d.qpos[:], d.qvel[:], d.qacc_warmstart[:] = saved
            mujoco.mj_forward(m, d)
            self._P = None
            raise

    def _substep(self, tau, h):
        m, d, c = self.model, self.data, self.chain
        v = d.qvel[c.arm_v].tolist()
        if self.friction:
            fm = self._fm
            fric = [joint_friction(fm, i, v[i], ScalarMath) for i in range(3)]
            slope = [h * friction_slope(fm, i, v[i]) for i in range(3)]
        else:
            fric = slope = [0.0, 0.0, 0.0]
        d.qfrc_applied[c.arm_v] = [tau[i] - fric[i] for i in range(3)]
        if max(slope) <= self._stiff:
            mujoco.mj_step(m, d)                              # the same Euler step, all in MuJoCo
            return
        mujoco.mj_forward(m, d)                               # near rest (see the docstring)
        P = self._response()                                  # (nv, 3): d qacc / d tau_arm
        hD = np.asarray(slope)
        a = np.linalg.solve(np.eye(3) + P[c.arm_v] * hD, d.qacc[c.arm_v])   # (I + h P_aa D) a = a0
        qacc = d.qacc - P @ (hD * a)                          # friction force grows by h D a
        d.qacc_warmstart[:] = qacc
        d.qvel[:] += h * qacc
        mujoco.mj_integratePos(m, d.qpos, d.qvel, h)
        d.time += h

    def _response(self) -> np.ndarray:
        """P[:, arm] = (M^-1 - M^-1 J^T (J M^-1 J^T + R)^-1 J M^-1) E^T: the change of every
        joint acceleration per unit force at each arm joint, with the soft loop-closing
        constraints of MuJoCo's solver (exact for equality constraints). Reused while the
        arms stay within ``RESPONSE_REUSE`` rad of where it was computed (it is only needed
        near rest, where the configuration hardly changes)."""
        m, d = self.model, self.data
        q = d.qpos[self.chain.arm_q]
        if self._P is not None and np.abs(q - self._P_at).max() < RESPONSE_REUSE:
            return self._P
        ne = d.ne
        J = d.efc_J[:ne * m.nv].reshape(ne, m.nv)
        rhs = np.vstack((self._E, J))                          # (3 + ne, nv)
        sol = np.empty_like(rhs)
        mujoco.mj_solveM(m, d, sol, rhs)                       # rows: M^-1 e_a, M^-1 J^T columns
        MiE, MiJt = sol[:3].T, sol[3:].T                       # (nv, 3), (nv, ne)
        A = J @ MiJt
        A[np.diag_indices(ne)] += d.efc_R[:ne]
        self._P, self._P_at = MiE - MiJt @ np.linalg.solve(A, J @ MiE), q
        return self._P

    def _check(self) -> None:
        """Raise UnreachableError when the mechanism has left its workspace: a non-finite or
        blown-up state, the chain torn open (a gap over 1 % of the forearm), or the platform
        where the arms' inverse kinematics (elbow-out branch) does not put it."""
        d, c = self.data, self.chain
        qp = d.qpos.tolist()
        q = [qp[k] for k in c.arm_q_list]
        X = tuple(qp[k] for k in c.platform_list)
        if not (math.isfinite(sum(qp)) and math.isfinite(sum(d.qvel.tolist()))):
            raise UnreachableError("the MuJoCo plant's state is no longer finite (the step blew up)", point=X)
        gap = self.closure_error()
        self.max_closure_error = max(self.max_closure_error, gap)
        if gap > 0.01 * c.mechanism.chain_length(self.robot):
            raise UnreachableError(f"the MuJoCo plant's chain opened by {gap * 1e3:.1f} mm "
                                   f"(platform at {[round(v, 4) for v in X]} m)", point=X)
        q_ik = inverse_kinematics(c.kin, X)                     # raises outside the workspace
        if max(abs(a - b) for a, b in zip(q_ik, q)) > BRANCH_TOLERANCE:
            units = c.kin.ops.units
            word, unit = units.get("joint", "joint"), units["position"]
            raise UnreachableError(f"the MuJoCo plant left its workspace: a {word} passed the edge of the "
                                   f"kinematics' assembly branch ({word} positions {[round(v, 4) for v in q]} "
                                   f"{unit}; the platform at {[round(v, 4) for v in X]} m needs "
                                   f"{[round(float(v), 4) for v in q_ik]} {unit})", point=X)

    def closure_error(self) -> float:
        """The largest gap (m) between a forearm's end and its platform joint now."""
        return self.chain.closure_error(self.data)
