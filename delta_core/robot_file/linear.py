"""The robot file of a linear Delta (``type: linear``; ``type: prismatic``, its old name, still
loads): three carriages on vertical rails, Colombo & Lentini 2020. Its sections as
dataclasses, the schema of its fields, their plausibility bounds and the parser with the
kind's rules (reach, rod inertia, a common carriage range). Fields and units:
``docs/robot_file.md``.

>>> from delta_core.robot_file import load_robot
>>> robot = load_robot("colombo2020")
>>> robot.type, robot.geometry.rod_length, robot.limits.effort == robot.limits.force
('linear', 0.215, True)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from delta_core.robot_file.bounds import Bound
from delta_core.robot_file.common import (SHARED_BOUNDS, RobotFileKind, RobotParameters, check_spread,
                                          read_friction, read_gravity, read_header, read_metadata,
                                          read_per_arm, read_position_limits)
from delta_core.robot_file.reader import Reader

#: The robot file's ``type`` of this kind.
TYPE = "linear"


@dataclass(frozen=True)
class LinearGeometry:
    """Geometry of a linear Delta: three vertical rails (Colombo & Lentini 2020)."""

    rail_radius: float          # m, z axis to each carriage joint A_i (horizontally)
    platform_radius: float      # m, platform centre to each platform joint P_i
    rod_length: float           # m, l = |A_i P_i|, one rod of the parallelogram
    rod_spacing: float          # m, distance between the two rods of a pair
    rail_angles_deg: tuple      # deg, angle of rail i about z, measured from x
    tool_offset: float          # m, tool point (nozzle, Q) below the platform centre P (PQ)
    per_arm: tuple | None = None  # optional: three dicts of PER_ARM_FIELDS, one per rail (all filled in)

    def arm(self, i: int) -> dict:
        """Rail ``i``'s own geometry (0-2): every field of :data:`PER_ARM_FIELDS` (m), from
        ``per_arm`` where the file has it, else the shared fields (joint offset 0)."""
        if self.per_arm is not None:
            return dict(self.per_arm[i])
        return {"joint_offset": 0.0, "rail_radius": self.rail_radius, "rod_length": self.rod_length}

    def to_dict(self) -> dict:
        """The ``geometry`` section of the robot file."""
        d = {"rail_radius": self.rail_radius, "platform_radius": self.platform_radius,
             "rod_length": self.rod_length, "rod_spacing": self.rod_spacing,
             "rail_angles_deg": list(self.rail_angles_deg), "tool_offset": self.tool_offset}
        if self.per_arm is not None:
            d["per_arm"] = [dict(a) for a in self.per_arm]
        return d


#: The fields of one entry of ``geometry.per_arm`` (linear): the carriage's zero (endstop)
#: offset (m: the carriage joint height is the joint position plus it), its rail's radius and
#: its rod length (m). The rail's angle about z is its entry of ``rail_angles_deg``.
PER_ARM_FIELDS = ("joint_offset", "rail_radius", "rod_length")


@dataclass(frozen=True)
class Carriage:
    """One carriage on its rail."""

    mass: float                 # kg, one carriage (with its half of the rod-pair joints)


@dataclass(frozen=True)
class Rod:
    """One rod of a parallelogram pair."""

    mass: float                 # kg, one rod (six in the robot)
    inertia: float              # kg m^2, about its COM (mid-length), axis across the rod


@dataclass(frozen=True)
class LinearDrive:
    """Motor and transmission of one carriage: a belt pulley or a lead screw."""

    rotor_inertia: float            # kg m^2, at the motor shaft
    travel_per_revolution: float    # m of carriage travel per motor revolution
    torque_constant: float          # N m / A at the motor shaft

    @property
    def gear_ratio(self) -> float:
        """Motor radians per metre of carriage travel, 2 pi / travel_per_revolution: the role of
        the rotary robot's gear ratio (motor angle per joint unit), so
        ``current * torque_constant * gear_ratio`` is the carriage force (N)."""
        return 2.0 * math.pi / self.travel_per_revolution

    @property
    def reflected_inertia(self) -> float:
        """The rotor's inertia seen at the carriage, ``rotor_inertia * gear_ratio**2`` (kg)."""
        return self.rotor_inertia * self.gear_ratio ** 2


@dataclass(frozen=True)
class LinearMassProperties:
    """The ``mass_properties`` of a linear Delta."""

    carriage: Carriage
    rod: Rod
    motor: LinearDrive
    platform_mass: float        # kg
    payload_mass: float         # kg

    def to_dict(self) -> dict:
        """The ``mass_properties`` section of the robot file."""
        return {"carriage": {"mass": self.carriage.mass},
                "rod": {"mass": self.rod.mass, "inertia": self.rod.inertia},
                "motor": {"rotor_inertia": self.motor.rotor_inertia,
                          "travel_per_revolution": self.motor.travel_per_revolution,
                          "torque_constant": self.motor.torque_constant},
                "platform": {"mass": self.platform_mass},
                "payload": {"mass": self.payload_mass}}


@dataclass(frozen=True)
class LinearLimits:
    """Carriage limits of a linear Delta (per carriage)."""

    position: tuple             # m, ((lo, hi),) * 3, carriage joint height in base_link
    velocity: tuple             # m/s, per carriage
    acceleration: tuple         # m/s^2, per carriage
    force: tuple                # N, per carriage, along the rail

    @property
    def effort(self) -> tuple:
        """The carriage force limit (N); ``Limits.effort`` of the rotary robot is its torque."""
        return self.force

    def to_dict(self) -> dict:
        """The ``limits`` section of the robot file."""
        return {"position": [list(p) for p in self.position], "velocity": list(self.velocity),
                "acceleration": list(self.acceleration), "force": list(self.force)}


#: Every field a linear Delta's robot file may hold.
SCHEMA = {
    "name": None, "type": None, "joint_names": None, "gravity": None, "metadata": ...,
    "geometry": {k: None for k in ("rail_radius", "platform_radius", "rod_length", "rod_spacing",
                                   "rail_angles_deg", "tool_offset")}
                 | {"per_arm": ...},      # per_arm: checked by read_per_arm (its own bounds)
    "mass_properties": {
        "carriage": {"mass": None},
        "rod": {"mass": None, "inertia": None},
        "motor": {"rotor_inertia": None, "travel_per_revolution": None, "torque_constant": None},
        "platform": {"mass": None},
        "payload": {"mass": None},
    },
    "friction": {"viscous": None, "coulomb": None, "smoothing_velocity": None,
                 "stribeck": {"static": None, "velocity": None}},
    "limits": {"position": None, "velocity": None, "acceleration": None, "force": None},
}

_LINEAR = "a linear Delta robot (0.1 mm to 10 m)"
_PER_CARRIAGE_FRICTION = "the friction of one carriage on its rail"

#: The plausibility bounds of a linear Delta's robot file: the rows both kinds share, its own
#: fields, and the shared paths whose unit differs (carriage positions in m, forces in N).
BOUNDS = {
    **SHARED_BOUNDS,
    "geometry.rail_radius": Bound(1e-4, 10.0, "m", f"the rail circle of {_LINEAR}"),
    "geometry.rod_length": Bound(1e-4, 20.0, "m", f"a rod of {_LINEAR}"),
    "geometry.rod_spacing": Bound(0.0, 10.0, "m", f"the rod spacing of {_LINEAR}"),
    "geometry.rail_angles_deg": Bound(-720.0, 720.0, "deg", "a rail angle (more than two turns is a typo)"),
    "geometry.tool_offset": Bound(-10.0, 10.0, "m", f"the tool offset of {_LINEAR}"),
    "mass_properties.carriage.mass": Bound(0.0, 1000.0, "kg", "a carriage"),
    "mass_properties.rod.mass": Bound(0.0, 500.0, "kg", "one rod"),
    "mass_properties.rod.inertia": Bound(0.0, 1e4, "kg m^2", "one rod about its centre of mass"),
    "mass_properties.motor.travel_per_revolution": Bound(1e-5, 10.0, "m", "a lead screw or belt pulley"),
    "friction.viscous": Bound(0.0, 1e6, "N s/m", _PER_CARRIAGE_FRICTION),
    "friction.coulomb": Bound(0.0, 1e6, "N", _PER_CARRIAGE_FRICTION),
    "friction.stribeck.static": Bound(0.0, 1e6, "N", _PER_CARRIAGE_FRICTION),
    "friction.stribeck.velocity": Bound(1e-6, 100.0, "m/s", "a Stribeck velocity"),
    "friction.smoothing_velocity": Bound(0.0, 10.0, "m/s", "the smoothing of the friction sign"),
    "limits.position": Bound(-100.0, 100.0, "m", "a carriage's travel on its rail"),
    "limits.velocity": Bound(1e-4, 100.0, "m/s", "a carriage's speed"),
    "limits.acceleration": Bound(1e-3, 1e5, "m/s^2", "a carriage's acceleration"),
    "limits.force": Bound(1e-6, 1e6, "N", "a carriage's drive force"),
}

#: Rail angles of the paper's Fig. 1 (B_1B_2 along +x, B_3 on +y) and of Marlin's towers A, B, C.
RAIL_ANGLES_DEG = (210.0, 330.0, 90.0)


def parse(r: Reader) -> RobotParameters:
    """A linear Delta's robot file (fields: ``docs/robot_file.md``) from the
    :class:`~delta_core.robot_file.reader.Reader` of its YAML data."""
    r.check_fields(SCHEMA)
    name, joints = read_header(r)

    geo = LinearGeometry(
        rail_radius=r.number("geometry.rail_radius", gt=0),
        platform_radius=r.number("geometry.platform_radius", ge=0),
        rod_length=r.number("geometry.rod_length", gt=0),
        rod_spacing=r.number("geometry.rod_spacing", ge=0),
        rail_angles_deg=r.triple("geometry.rail_angles_deg", default=list(RAIL_ANGLES_DEG)),
        tool_offset=r.number("geometry.tool_offset", default=0.0),
    )
    check_spread(r, "geometry.rail_angles_deg", geo.rail_angles_deg, "rails")
    geo = dataclasses.replace(geo, per_arm=read_per_arm(r, {
        "joint_offset": (BOUNDS["limits.position"], ""),
        "rail_radius": (BOUNDS["geometry.rail_radius"], "gt0"),
        "rod_length": (BOUNDS["geometry.rod_length"], "gt0")},
        {"rail_radius": geo.rail_radius, "rod_length": geo.rod_length}))
    for k, arm in enumerate(geo.per_arm or ()):
        if not arm["rod_length"] > arm["rail_radius"] - geo.platform_radius:
            r.fail(f"geometry.per_arm[{k}].rod_length",
                   f"is too short for rod pair {k + 1} to reach the platform: needs > "
                   f"{arm['rail_radius'] - geo.platform_radius:.4g} m, got {arm['rod_length']:g}")
    if not geo.rail_radius > geo.platform_radius:
        r.fail("geometry.rail_radius",
               f"must be > geometry.platform_radius ({geo.platform_radius:g}): with the platform joints "
               f"as far out as the carriage joints the rods are vertical at the centre, a parallel "
               f"singularity; got {geo.rail_radius:g}")
    reach = geo.rail_radius - geo.platform_radius
    if not geo.rod_length > reach:
        r.fail("geometry.rod_length",
               f"is too short for the rods to reach the platform: needs > {reach:.4g} m "
               f"(rail_radius - platform_radius, the rods' horizontal span at the centre), "
               f"got {geo.rod_length:g}")

    rod = Rod(mass=r.number("mass_properties.rod.mass", ge=0),
              inertia=r.number("mass_properties.rod.inertia", ge=0))
    i_max = rod.mass * geo.rod_length ** 2 / 4.0
    if rod.inertia > i_max * (1 + 1e-12):
        r.fail("mass_properties.rod.inertia",
               f"must be <= mass * rod_length^2 / 4 = {i_max:.6g} (all the mass at the two joints; "
               f"no rod of that mass and length has more), got {rod.inertia:g}")
    motor = LinearDrive(
        rotor_inertia=r.number("mass_properties.motor.rotor_inertia", ge=0),
        travel_per_revolution=r.number("mass_properties.motor.travel_per_revolution", gt=0),
        torque_constant=r.number("mass_properties.motor.torque_constant", gt=0, default=1.0),
    )
    mass = LinearMassProperties(
        carriage=Carriage(mass=r.number("mass_properties.carriage.mass", ge=0)),
        rod=rod, motor=motor,
        platform_mass=r.number("mass_properties.platform.mass", ge=0),
        payload_mass=r.number("mass_properties.payload.mass", ge=0, default=0.0),
    )

    fr = read_friction(r, stribeck_velocity=0.01, smoothing_velocity=0.001)

    position = read_position_limits(r, "m")
    if max(p[0] for p in position) >= min(p[1] for p in position):
        r.fail("limits.position", "the three carriages have no common range of motion, so the "
               f"platform cannot stand on the z axis; got {[list(p) for p in position]!r}")
    lim = LinearLimits(
        position=tuple(position),
        velocity=r.triple("limits.velocity", gt=0),
        acceleration=r.triple("limits.acceleration", gt=0),
        force=r.triple("limits.force", gt=0),
    )
    return RobotParameters(name=name, type=TYPE, joint_names=joints, geometry=geo, mass=mass,
                           friction=fr, limits=lim, gravity=read_gravity(r), source=r.source,
                           metadata=read_metadata(r))


KIND = RobotFileKind(TYPE, SCHEMA, BOUNDS, parse)
