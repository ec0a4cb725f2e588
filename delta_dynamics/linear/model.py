"""The static model of a linear Delta robot: geometry and lumped dynamic parameters.

Like the rotary robot's, a :class:`LinearModel` holds only what
does not change from one call to the next; the functions of :mod:`.kinematics`,
:mod:`.dynamics` and :mod:`.simulate` take it as their first argument and keep no state.

Mass model (Colombo & Lentini 2020, Sec. 4 and Fig. 2). The platform and the carriages
translate; each of the six rods (mass m_rod, inertia I_rod about its mid-length centre of
mass, across the rod) joins carriage joint A_i to platform joint P_i. With d_i = P_i - A_i
(|d_i| = l), the rod's centre moves at (v_A + v_P)/2 and it turns at |d_i_dot| / l, so

    T_rod = 1/2 (m_rod/2) (|v_A|^2 + |v_P|^2) + 1/2 (I_rod - m_rod l^2/4) |d_i_dot|^2 / l^2,

the paper's lumped model (half the rod at each end, Fig. 2) plus a rotational correction
that is zero only for a rod with all its mass at its two joints. The spin of a rod about its
own axis is a free passive motion of the ball joints that the carriages neither drive nor
feel, so only the transverse inertia enters: this *is* the rigid rod with its full
(axisymmetric) inertia tensor. The rods' weight acts at their centres, (z_A + z_P)/2, exactly
as in the lumped model. Hence the whole robot is described by the lumped parameters

* ``m_x``: the mass moving with the platform, m_plat + payload + 3 m_rod (eq. 13);
* ``m_r``: the rods' rotational correction per rod pair, 2 (I_rod - m_rod l^2/4) / l^2 (kg;
  0 in the paper's lumped model, -m_rod/3 for uniform slender rods);
* ``carriage_inertia[i]``: the inertial mass along rail i, m_cart + m_rod + the rotor's
  reflected inertia I_mo (2 pi / travel per revolution)^2 (kg; eq. 14's m_link + m_cart);
* ``carriage_mass[i]``: the mass that weighs on rail i, m_cart + m_rod (kg; the rotor's
  inertia has no weight);
* per-carriage friction: viscous (N s/m), Coulomb (N) and a Stribeck break-away force (N);

so that T = 1/2 m_x |X_dot|^2 + 1/2 sum_i carriage_inertia_i q_dot_i^2 + 1/2 m_r sum_i
|d_i_dot|^2 and U = g (m_x z + sum_i carriage_mass_i q_i). The carriage forces are linear in
these parameters (:func:`delta_dynamics.linear.dynamics.regressor`).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from delta_core.robot_file import Bound, RobotParameters
from delta_core.robot_file.linear import BOUNDS as ROBOT_FILE_BOUNDS
from delta_dynamics.common.model import KindModel, LumpedParameters
from delta_dynamics.kinds import ops
from delta_dynamics.linear.chains import CHAINS

#: Order of the lumped parameters in :meth:`LinearParameters.as_vector` and in the regressor
#: (the same positions as the rotary set: friction at 8-10 and 11-13).
PARAMETER_NAMES = (
    "m_x", "m_r",
    "carriage_inertia_1", "carriage_inertia_2", "carriage_inertia_3",
    "carriage_mass_1", "carriage_mass_2", "carriage_mass_3",
    "viscous_1", "viscous_2", "viscous_3",
    "coulomb_1", "coulomb_2", "coulomb_3",
)

#: Physical kind of each parameter and the unit of each kind (for identification reports).
PARAMETER_KINDS = {
    "m_x": "mass", "m_r": "rod_rotation",
    **{f"carriage_inertia_{i}": "mass" for i in (1, 2, 3)},
    **{f"carriage_mass_{i}": "mass" for i in (1, 2, 3)},
    **{f"viscous_{i}": "viscous" for i in (1, 2, 3)},
    **{f"coulomb_{i}": "coulomb" for i in (1, 2, 3)},
    **{f"static_{i}": "coulomb" for i in (1, 2, 3)},
}
UNITS = {"mass": "kg", "rod_rotation": "kg", "viscous": "N s/m", "coulomb": "N"}

#: Plausibility bounds of the lumped parameters an identified robot file carries, by kind of
#: parameter (masses in kg, the rods' rotational correction m_r in kg, friction per carriage in
#: N s/m and N).
LUMPED_BOUNDS = {
    "mass": Bound(0.0, 5000.0, "kg", "the lumped masses of a linear Delta robot (platform, payload, "
                                     "rods, carriages and reflected rotors)"),
    "rod_rotation": Bound(-500.0, 500.0, "kg", "a rod pair's rotational correction m_r"),
    "viscous": ROBOT_FILE_BOUNDS["friction.viscous"],
    "coulomb": ROBOT_FILE_BOUNDS["friction.coulomb"],
}

#: How the rods enter the model: "full" (rigid rods with their inertia) or "lumped" (the
#: paper's Fig. 2: half of each rod at each of its joints, m_r = 0).
RODS = ("full", "lumped")


def rod_rotation(mass: float, inertia: float, length: float) -> float:
    """m_r = 2 (I_rod - m_rod l^2 / 4) / l^2: the rotational correction of one rod pair (kg).

    >>> round(rod_rotation(0.03, 0.03 * 0.2**2 / 12, 0.2), 12)     # uniform slender rods: -m/3
    -0.01
    """
    return 2.0 * (inertia - mass * length * length / 4.0) / (length * length)


@dataclass(frozen=True)
class LinearParameters(LumpedParameters, names=PARAMETER_NAMES, kinds=PARAMETER_KINDS, bounds=LUMPED_BOUNDS,
                       efforts="forces", velocities=(0.01, 0.001)):
    """The lumped dynamic parameters (see the module docstring); SI units.

    >>> p = LinearParameters.from_vector(range(14))
    >>> p.carriage_mass, p.static
    ((5.0, 6.0, 7.0), (11.0, 12.0, 13.0))
    """

    m_x: float
    m_r: float
    carriage_inertia: tuple
    carriage_mass: tuple
    viscous: tuple
    coulomb: tuple
    static: tuple
    stribeck_velocity: float
    smoothing_velocity: float

    @classmethod
    def from_robot(cls, robot: RobotParameters, rods: str = "full") -> "LinearParameters":
        """The lumped parameters of a robot file: the identified values when the file holds
        ``metadata.identified.lumped_parameters`` (with these names), else derived from its
        physical fields; ``rods="lumped"`` sets m_r = 0 (the paper's model)."""
        if rods not in RODS:
            raise ValueError(f"rods must be one of {', '.join(RODS)}, got {rods!r}")
        identified = cls.identified(robot)
        if identified is not None:
            return identified if rods == "full" else identified.with_lumped_rods()
        g, m, f = robot.geometry, robot.mass, robot.friction
        m_rod = m.rod.mass
        m_r = rod_rotation(m_rod, m.rod.inertia, g.rod_length) if rods == "full" else 0.0
        return cls(m_x=m.platform_mass + m.payload_mass + 3.0 * m_rod, m_r=m_r,
                   carriage_inertia=(m.carriage.mass + m_rod + m.motor.reflected_inertia,) * 3,
                   carriage_mass=(m.carriage.mass + m_rod,) * 3,
                   viscous=f.viscous, coulomb=f.coulomb, static=f.static,
                   stribeck_velocity=f.stribeck_velocity, smoothing_velocity=f.smoothing_velocity)

    def with_lumped_rods(self) -> "LinearParameters":
        """The same parameters with m_r = 0: the paper's lumped rods (Fig. 2)."""
        return dataclasses.replace(self, m_r=0.0)


class LinearModel(KindModel):
    """Geometry and lumped dynamic parameters of one linear Delta robot (immutable).

    Build it from a robot file: ``LinearModel.from_robot("colombo2020")`` (or, for either kind,
    :func:`delta_dynamics.kinds.model_for`). Conventions (``docs/conventions.md``, "Linear
    Delta"): z up, base_link on the base plane (the print bed), rail i at angle phi_i about z;
    q_i is the height of carriage joint A_i, positive up; X is the platform centre P; the tool
    point is X - tool_offset e_z.

    Per chain i: c_i = (R - r) u_i (R = rail radius, r = platform radius, u_i = (cos phi_i,
    sin phi_i, 0)) and the rod vector d_i = P_i - A_i = X - c_i - q_i e_z, |d_i| = l (eq. 2).

    >>> m = LinearModel.from_robot("colombo2020")
    >>> round(m.m_x, 4), round(m.m_r, 6), m.carriage_inertia
    (0.56, -0.006664, (0.27, 0.27, 0.27))
    """

    kind = "linear"
    ops = ops("linear")       # the algorithm table (delta_dynamics.kinds, delta_dynamics.algorithms)

    __slots__ = ("rods", "R", "r", "l", "l2", "cx", "cy", "cphi", "sphi", "tool_offset", "m_x", "m_r",
                 "carriage_inertia", "carriage_mass", "chains", "arms", "arm_l", "arm_l2", "arm_offset")

    def __init__(self, robot: RobotParameters, params: LinearParameters | None = None, rods: str = "full"):
        self.require_kind(robot)
        p = params if params is not None else LinearParameters.from_robot(robot, rods)
        super().__init__(robot, p)
        geo = robot.geometry
        s = object.__setattr__
        s(self, "rods", "lumped" if p.m_r == 0.0 else "full")
        s(self, "R", geo.rail_radius)
        s(self, "r", geo.platform_radius)
        s(self, "l", geo.rod_length)
        s(self, "l2", geo.rod_length ** 2)
        phi = [math.radians(a) for a in geo.rail_angles_deg]
        s(self, "cphi", tuple(math.cos(a) for a in phi))
        s(self, "sphi", tuple(math.sin(a) for a in phi))
        # c_i = (R_i - r) u_i with rail i's own radius (geometry.per_arm, else the shared one)
        per = [geo.arm(i) for i in range(3)]
        s(self, "cx", tuple((a["rail_radius"] - geo.platform_radius) * c for a, c in zip(per, self.cphi)))
        s(self, "cy", tuple((a["rail_radius"] - geo.platform_radius) * c for a, c in zip(per, self.sphi)))
        s(self, "arm_l", tuple(a["rod_length"] for a in per))
        s(self, "arm_l2", tuple(a["rod_length"] ** 2 for a in per))
        s(self, "arm_offset", tuple(a["joint_offset"] for a in per))
        s(self, "tool_offset", geo.tool_offset)
        s(self, "m_x", float(p.m_x))
        s(self, "m_r", float(p.m_r))
        s(self, "carriage_inertia", tuple(float(v) for v in p.carriage_inertia))
        s(self, "carriage_mass", tuple(float(v) for v in p.carriage_mass))
        # per-rail geometry (geometry.per_arm): the kinematics use the per-chain model
        s(self, "chains", CHAINS)
        arms = None if geo.per_arm is None else CHAINS.parameters(robot)
        if arms is not None:
            arms.setflags(write=False)
        s(self, "arms", arms)

    def lumped_rods(self) -> "LinearModel":
        """The paper's model: the same parameters with m_r = 0 (half of each rod at each end)."""
        return self.with_parameters(self.params.with_lumped_rods())

    def __repr__(self) -> str:
        return (f"LinearModel({self.robot.name!r}, m_x={self.m_x:.4g}, m_r={self.m_r:.4g}, "
                f"rods={self.rods!r})")
