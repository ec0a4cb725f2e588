"""The static model of a rotary Delta robot: geometry and lumped dynamic parameters.

Like Pinocchio's ``Model``, a :class:`DeltaModel` holds only what does not change from one
call to the next; every kinematics and dynamics function takes it as its first argument
and keeps no state, so one model serves any number of threads and samples.

The dynamic parameters are the *lumped* set of the explicit model of Asadi & Heydari (2020):
each forearm (mass M_K, dominant inertia I_K about its COM, COM at r_K along it) is
replaced by the three point masses of eq. (22) at the elbow C_i (m_C), the platform joint
A_i (m_A) and its COM K_i (m_K). Then the whole robot is described by

* ``m_x``: the mass moving with the platform, m_P + payload + 3 m_A (eqs. 30, 35, 40);
* ``m_k``: the point mass at each forearm COM (eq. 36);
* ``arm_inertia[i]``: everything that rotates with arm i about its motor axis,
  I_mo + I_L + m_L (r_L l_L)^2 + m_C l_L^2 (eqs. 31-34);
* ``arm_moment[i]``: its first moment of mass, m_L r_L l_L + m_C l_L (kg m; eqs. 32, 34, 42);
* per-joint friction: viscous, Coulomb and a Stribeck break-away torque.

The torques are linear in these parameters (see :func:`delta_dynamics.dynamics.regressor`).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from delta_core.robot_file import Bound, RobotParameters, load_robot
from delta_core.robot_file.rotary import BOUNDS as ROBOT_FILE_BOUNDS
from delta_dynamics.kinds import ops

#: Order of the lumped parameters in :meth:`DynamicParameters.as_vector` and in the regressor.
PARAMETER_NAMES = (
    "m_x", "m_k",
    "arm_inertia_1", "arm_inertia_2", "arm_inertia_3",
    "arm_moment_1", "arm_moment_2", "arm_moment_3",
    "viscous_1", "viscous_2", "viscous_3",
    "coulomb_1", "coulomb_2", "coulomb_3",
)

#: Plausibility bounds of the lumped parameters an identified robot file carries in
#: ``metadata.identified.lumped_parameters`` (checked by the model that uses them), by kind of
#: parameter.
LUMPED_BOUNDS = {
    "mass": Bound(0.0, 5000.0, "kg", "the lumped masses of a Delta robot (platform, payload "
                                     "and three forearms)"),
    "inertia": Bound(0.0, 1e7, "kg m^2", "an arm's lumped inertia with its reflected rotor"),
    "moment": Bound(-1e4, 1e4, "kg m", "an arm's lumped first moment of mass"),
    "viscous": ROBOT_FILE_BOUNDS["friction.viscous"],
    "coulomb": ROBOT_FILE_BOUNDS["friction.coulomb"],
}


def forearm_point_masses(mass: float, inertia: float, com_ratio: float, length: float):
    """Three-point-mass equivalent of a forearm, Asadi & Heydari eq. (22).

    Solves ``[[1, 1, 1], [r_K, r_K - 1, 0], [r_K^2 l^2, (r_K - 1)^2 l^2, 0]] [m_C, m_A, m_K]
    = [M_K, 0, I_K]``: same mass, same COM, same dominant inertia about the COM.

    >>> [round(v, 4) for v in forearm_point_masses(0.4, 0.4 * 0.8**2 / 12, 0.5, 0.8)]
    [0.0667, 0.0667, 0.2667]
    """
    a = np.array([[1.0, 1.0, 1.0],
                  [com_ratio, com_ratio - 1.0, 0.0],
                  [com_ratio ** 2 * length ** 2, (com_ratio - 1.0) ** 2 * length ** 2, 0.0]])
    m_c, m_a, m_k = np.linalg.solve(a, [mass, 0.0, inertia])
    return float(m_c), float(m_a), float(m_k)


@dataclass(frozen=True)
class DynamicParameters:
    """The lumped dynamic parameters (see the module docstring); SI units."""

    m_x: float
    m_k: float
    arm_inertia: tuple
    arm_moment: tuple
    viscous: tuple
    coulomb: tuple
    static: tuple
    stribeck_velocity: float
    smoothing_velocity: float

    def as_vector(self) -> np.ndarray:
        """The 14 linear parameters in :data:`PARAMETER_NAMES` order."""
        return np.array([self.m_x, self.m_k, *self.arm_inertia, *self.arm_moment,
                         *self.viscous, *self.coulomb], dtype=float)

    @classmethod
    def from_vector(cls, pi, *, static=None, stribeck_velocity=0.05, smoothing_velocity=0.002):
        """Inverse of :meth:`as_vector`; the Stribeck break-away torque defaults to Coulomb."""
        pi = [float(v) for v in np.asarray(pi, dtype=float).reshape(-1)]
        if len(pi) != len(PARAMETER_NAMES):
            raise ValueError(f"parameter vector must have {len(PARAMETER_NAMES)} entries, got {len(pi)}")
        coulomb = tuple(pi[11:14])
        return cls(m_x=pi[0], m_k=pi[1], arm_inertia=tuple(pi[2:5]), arm_moment=tuple(pi[5:8]),
                   viscous=tuple(pi[8:11]), coulomb=coulomb,
                   static=tuple(static) if static is not None else coulomb,
                   stribeck_velocity=stribeck_velocity, smoothing_velocity=smoothing_velocity)

    @classmethod
    def from_robot(cls, robot: RobotParameters) -> "DynamicParameters":
        """The lumped parameters of a robot file: the exact identified values when the file
        holds ``metadata.identified.lumped_parameters`` (written by ``delta-identify``), else
        derived from its physical fields."""
        identified = _identified_parameters(robot)
        if identified is not None:
            return identified
        g, m = robot.geometry, robot.mass
        m_c, m_a, m_k = forearm_point_masses(m.forearm.mass, m.forearm.inertia,
                                             m.forearm.com_ratio, g.forearm_length)
        l = g.upper_arm_length
        inertia = (m.motor.reflected_inertia + m.upper_arm.inertia
                   + m.upper_arm.mass * m.upper_arm.com_distance ** 2 + m_c * l ** 2)
        moment = m.upper_arm.mass * m.upper_arm.com_distance + m_c * l
        f = robot.friction
        return cls(m_x=m.platform_mass + m.payload_mass + 3.0 * m_a, m_k=m_k,
                   arm_inertia=(inertia,) * 3, arm_moment=(moment,) * 3,
                   viscous=f.viscous, coulomb=f.coulomb, static=f.static,
                   stribeck_velocity=f.stribeck_velocity, smoothing_velocity=f.smoothing_velocity)


def _identified_parameters(robot: RobotParameters) -> "DynamicParameters | None":
    """``metadata.identified.lumped_parameters`` ({names, values, static}) of an identified
    robot file as DynamicParameters, or None; a malformed entry raises RobotFileError."""
    from delta_dynamics.identified_lumped import read_identified_lumped
    kinds = ["mass", "mass"] + ["inertia"] * 3 + ["moment"] * 3 + ["viscous"] * 3 + ["coulomb"] * 3
    kind_of = {**dict(zip(PARAMETER_NAMES, kinds)), **{f"static_{j}": "coulomb" for j in (1, 2, 3)}}
    found = read_identified_lumped(robot, PARAMETER_NAMES, kind_of, LUMPED_BOUNDS, "torques")
    if found is None:
        return None
    v, static = found
    f = robot.friction
    return DynamicParameters.from_vector(v, static=tuple(static.tolist()), stribeck_velocity=f.stribeck_velocity,
                                         smoothing_velocity=f.smoothing_velocity)


class DeltaModel:
    """Geometry and lumped dynamic parameters of one rotary Delta robot (immutable).

    Build it from a robot file: ``DeltaModel.from_robot("nt_robot")``. Conventions
    (``docs/conventions.md``): z up, origin at the base centre, chain i at angle phi_i
    about z, q_i = 0 with upper arm i horizontal pointing outward, positive down.

    ``kind`` is ``"rotary"``; ``ops`` the table of its algorithms (:mod:`delta_dynamics.kinds`),
    which the free functions of :mod:`delta_dynamics.algorithms` dispatch through.
    """

    kind = "rotary"
    ops = ops("rotary")

    __slots__ = ("robot", "params", "R", "r", "l", "lk", "l2", "lk2", "dr", "cphi", "sphi",
                 "r_k", "g", "m_x", "m_k", "inertia", "moment", "viscous", "coulomb", "static",
                 "v_stribeck", "v_smooth", "stribeck", "q_lo", "q_hi")

    def __init__(self, robot: RobotParameters, params: DynamicParameters | None = None):
        geo = robot.geometry
        p = params if params is not None else DynamicParameters.from_robot(robot)
        s = object.__setattr__
        s(self, "robot", robot)
        s(self, "params", p)
        s(self, "R", geo.base_radius)
        s(self, "r", geo.platform_radius)
        s(self, "l", geo.upper_arm_length)
        s(self, "lk", geo.forearm_length)
        s(self, "l2", geo.upper_arm_length ** 2)
        s(self, "lk2", geo.forearm_length ** 2)
        s(self, "dr", geo.platform_radius - geo.base_radius)
        phi = [math.radians(a) for a in geo.chain_angles_deg]
        s(self, "cphi", tuple(math.cos(a) for a in phi))
        s(self, "sphi", tuple(math.sin(a) for a in phi))
        s(self, "r_k", robot.mass.forearm.com_ratio)
        s(self, "g", robot.gravity)
        s(self, "m_x", p.m_x)
        s(self, "m_k", p.m_k)
        s(self, "inertia", tuple(float(v) for v in p.arm_inertia))
        s(self, "moment", tuple(float(v) for v in p.arm_moment))
        s(self, "viscous", tuple(float(v) for v in p.viscous))
        s(self, "coulomb", tuple(float(v) for v in p.coulomb))
        s(self, "static", tuple(float(v) for v in p.static))
        s(self, "v_stribeck", float(p.stribeck_velocity))
        s(self, "v_smooth", float(p.smoothing_velocity))
        s(self, "stribeck", any(a != b for a, b in zip(p.static, p.coulomb)))
        s(self, "q_lo", tuple(lo for lo, _ in robot.limits.position))
        s(self, "q_hi", tuple(hi for _, hi in robot.limits.position))

    def __setattr__(self, name, value):
        raise AttributeError("DeltaModel is immutable; build a new one (with_parameters)")

    @classmethod
    def from_robot(cls, robot: str | os.PathLike | RobotParameters) -> "DeltaModel":
        """A model from a robot preset name, a robot file path or loaded RobotParameters."""
        return cls(load_robot(robot))

    def with_parameters(self, params: DynamicParameters) -> "DeltaModel":
        """The same geometry with other dynamic parameters (e.g. identified ones)."""
        return DeltaModel(self.robot, params)

    def without_friction(self) -> "DeltaModel":
        p = self.params
        zero = (0.0, 0.0, 0.0)
        return self.with_parameters(DynamicParameters(
            p.m_x, p.m_k, p.arm_inertia, p.arm_moment, zero, zero, zero,
            p.stribeck_velocity, p.smoothing_velocity))

    @property
    def joint_names(self) -> tuple:
        return self.robot.joint_names

    def __repr__(self) -> str:
        return f"DeltaModel({self.robot.name!r}, m_x={self.m_x:.4g}, m_k={self.m_k:.4g})"
