"""The static model of a rotary Delta robot: geometry and lumped dynamic parameters.

Like Pinocchio's ``Model``, a :class:`RotaryModel` holds only what does not change from one
call to the next; every kinematics and dynamics function takes it as its first argument
and keeps no state, so one model serves any number of threads and samples.

The dynamic parameters are the *lumped* set of the explicit model of Asadi & Heydari (2020):
each forearm (mass M_K, dominant inertia I_K about its COM, COM at r_K along it) is
replaced by the three point masses of eq. (22) at the elbow C_i (m_C), the platform joint
A_i (m_A) and its COM K_i (m_K). Then the whole robot is described by

* ``m_x``: the mass moving with the platform, m_P + payload + 3 m_A (eqs. 30, 35, 40);
* ``m_k``: the point mass at each forearm COM (eq. 36);
* ``arm_inertia[i]``: everything that rotates with arm i about its motor axis,
  I_mo + I_L + m_L (r_L l_L)^2 + m_C l_L^2 (eqs. 31-34), l_L arm i's own upper-arm length;
* ``arm_moment[i]``: its first moment of mass, m_L r_L l_L + m_C l_L (kg m; eqs. 32, 34, 42);
* per-joint friction: viscous, Coulomb and a Stribeck break-away torque.

With per-arm geometry (``geometry.per_arm``) each chain's kinematics takes its own joint offset,
base and platform radius, upper-arm and forearm length (``arm_*``); the forearm's point masses
(m_C, m_A, m_K) stay those of the shared forearm (eq. 22 with the shared length: a forearm a
tenth of a millimetre longer is the same body), the upper-arm length enters I_i and h_i per arm.

The torques are linear in these parameters (see :func:`delta_dynamics.rotary.dynamics.regressor`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_core.robot_file import Bound, RobotParameters
from delta_core.robot_file.rotary import BOUNDS as ROBOT_FILE_BOUNDS
from delta_dynamics.common.model import KindModel, LumpedParameters
from delta_dynamics.kinds import ops
from delta_dynamics.rotary.chains import CHAINS

#: Order of the lumped parameters in :meth:`RotaryParameters.as_vector` and in the regressor.
PARAMETER_NAMES = (
    "m_x", "m_k",
    "arm_inertia_1", "arm_inertia_2", "arm_inertia_3",
    "arm_moment_1", "arm_moment_2", "arm_moment_3",
    "viscous_1", "viscous_2", "viscous_3",
    "coulomb_1", "coulomb_2", "coulomb_3",
)

#: Physical kind of each parameter (and of the break-away torques static_1..3) and the unit of
#: each kind (for bounds and identification reports).
PARAMETER_KINDS = {
    "m_x": "mass", "m_k": "mass",
    **{f"arm_inertia_{i}": "inertia" for i in (1, 2, 3)},
    **{f"arm_moment_{i}": "moment" for i in (1, 2, 3)},
    **{f"viscous_{i}": "viscous" for i in (1, 2, 3)},
    **{f"coulomb_{i}": "coulomb" for i in (1, 2, 3)},
    **{f"static_{i}": "coulomb" for i in (1, 2, 3)},
}
UNITS = {"mass": "kg", "inertia": "kg m^2", "moment": "kg m", "viscous": "N m s/rad", "coulomb": "N m"}

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
class RotaryParameters(LumpedParameters, names=PARAMETER_NAMES, kinds=PARAMETER_KINDS, bounds=LUMPED_BOUNDS,
                       efforts="torques", velocities=(0.05, 0.002)):
    """The lumped dynamic parameters (see the module docstring); SI units.

    >>> p = RotaryParameters.from_vector(range(14))
    >>> p.arm_moment, p.static
    ((5.0, 6.0, 7.0), (11.0, 12.0, 13.0))
    """

    m_x: float
    m_k: float
    arm_inertia: tuple
    arm_moment: tuple
    viscous: tuple
    coulomb: tuple
    static: tuple
    stribeck_velocity: float
    smoothing_velocity: float

    @classmethod
    def from_robot(cls, robot: RobotParameters) -> "RotaryParameters":
        """The lumped parameters of a robot file: the exact identified values when the file
        holds ``metadata.identified.lumped_parameters`` (written by ``delta-identify``), else
        derived from its physical fields."""
        identified = cls.identified(robot)
        if identified is not None:
            return identified
        g, m = robot.geometry, robot.mass
        m_c, m_a, m_k = forearm_point_masses(m.forearm.mass, m.forearm.inertia,
                                             m.forearm.com_ratio, g.forearm_length)
        inertia, moment = [], []
        for i in range(3):                   # arm i's own upper-arm length L_i (geometry.per_arm)
            l = g.arm(i)["upper_arm_length"]
            inertia.append(m.motor.reflected_inertia + m.upper_arm.inertia
                           + m.upper_arm.mass * m.upper_arm.com_distance ** 2 + m_c * l ** 2)
            moment.append(m.upper_arm.mass * m.upper_arm.com_distance + m_c * l)
        f = robot.friction
        return cls(m_x=m.platform_mass + m.payload_mass + 3.0 * m_a, m_k=m_k,
                   arm_inertia=tuple(inertia), arm_moment=tuple(moment),
                   viscous=f.viscous, coulomb=f.coulomb, static=f.static,
                   stribeck_velocity=f.stribeck_velocity, smoothing_velocity=f.smoothing_velocity)


class RotaryModel(KindModel):
    """Geometry and lumped dynamic parameters of one rotary Delta robot (immutable).

    Build it from a robot file: ``RotaryModel.from_robot("nt_robot")`` (or, for either kind,
    :func:`delta_dynamics.kinds.model_for`). Conventions (``docs/conventions.md``): z up,
    origin at the base centre, chain i at angle phi_i about z, q_i = 0 with upper arm i
    horizontal pointing outward, positive down.

    ``kind`` is ``"rotary"``; ``ops`` the table of its algorithms (:mod:`delta_dynamics.kinds`),
    which the free functions of :mod:`delta_dynamics.algorithms` dispatch through.

    >>> m = RotaryModel.from_robot("nt_robot")
    >>> m.kind, m.l, m.lk
    ('rotary', 0.3423, 0.8)
    """

    kind = "rotary"
    ops = ops("rotary")

    __slots__ = ("R", "r", "l", "lk", "l2", "lk2", "dr", "cphi", "sphi", "r_k", "m_x", "m_k",
                 "inertia", "moment", "chains", "arms", "arm_l", "arm_l2", "arm_lk", "arm_lk2", "arm_dr",
                 "arm_r", "arm_offset")

    def __init__(self, robot: RobotParameters, params: RotaryParameters | None = None):
        self.require_kind(robot)
        geo = robot.geometry
        p = params if params is not None else RotaryParameters.from_robot(robot)
        super().__init__(robot, p)
        s = object.__setattr__
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
        s(self, "m_x", p.m_x)
        s(self, "m_k", p.m_k)
        s(self, "inertia", tuple(float(v) for v in p.arm_inertia))
        s(self, "moment", tuple(float(v) for v in p.arm_moment))
        # per-arm geometry (geometry.per_arm): the kinematics use the per-chain model
        s(self, "chains", CHAINS)
        arms = None if geo.per_arm is None else CHAINS.parameters(robot)
        if arms is not None:
            arms.setflags(write=False)
        s(self, "arms", arms)
        # each arm's own values (the shared ones without per_arm): the dynamics' per-chain loop
        per = [geo.arm(i) for i in range(3)]
        s(self, "arm_l", tuple(a["upper_arm_length"] for a in per))
        s(self, "arm_l2", tuple(a["upper_arm_length"] ** 2 for a in per))
        s(self, "arm_lk", tuple(a["forearm_length"] for a in per))
        s(self, "arm_lk2", tuple(a["forearm_length"] ** 2 for a in per))
        s(self, "arm_dr", tuple(a["platform_radius"] - a["base_radius"] for a in per))
        s(self, "arm_r", tuple(a["platform_radius"] for a in per))
        s(self, "arm_offset", tuple(a["joint_offset"] for a in per))

    def __repr__(self) -> str:
        return f"RotaryModel({self.robot.name!r}, m_x={self.m_x:.4g}, m_k={self.m_k:.4g})"
