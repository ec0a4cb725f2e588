"""The robot file of a rotary Delta (``type: rotary``, Asadi & Heydari 2020): its sections as
dataclasses, the schema of its fields, their plausibility bounds and the parser with the
kind's rules (reach, forearm inertia, full-body consistency). Fields and units:
``docs/robot_file.md``.

>>> from delta_core.robot_file import load_robot
>>> robot = load_robot("nt_robot")
>>> robot.type, robot.geometry.forearm_length, robot.limits.effort == robot.limits.torque
('rotary', 0.8, True)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from delta_core.robot_file.bounds import Bound
from delta_core.robot_file.common import (LENGTH, SHARED_BOUNDS, RobotFileKind, RobotParameters,
                                          check_spread, read_friction, read_gravity, read_header,
                                          read_metadata, read_per_arm, read_position_limits)
from delta_core.robot_file.reader import Reader

#: The robot file's ``type`` of this kind.
TYPE = "rotary"


@dataclass(frozen=True)
class Geometry:
    """Geometry of a rotary Delta: three arms on motor axes around the base (Asadi & Heydari 2020)."""

    base_radius: float          # m, base centre to each motor axis
    platform_radius: float      # m, platform centre to each forearm's lower joint midpoint
    upper_arm_length: float     # m, motor axis to elbow
    forearm_length: float       # m, elbow to platform joint (one bar of the parallelogram)
    forearm_spacing: float      # m, distance between the two bars of a forearm
    chain_angles_deg: tuple     # deg, angle phi_i of chain i about z, measured from x
    per_arm: tuple | None = None  # optional: three dicts of PER_ARM_FIELDS, one per arm (all filled in)

    def arm(self, i: int) -> dict:
        """Arm ``i``'s own geometry (0-2): every field of :data:`PER_ARM_FIELDS` (m, rad),
        from ``per_arm`` where the file has it, else the shared fields (joint offset 0)."""
        if self.per_arm is not None:
            return dict(self.per_arm[i])
        return {"joint_offset": 0.0, "base_radius": self.base_radius, "upper_arm_length": self.upper_arm_length,
                "forearm_length": self.forearm_length, "platform_radius": self.platform_radius}

    def to_dict(self) -> dict:
        """The ``geometry`` section of the robot file."""
        d = dataclasses.asdict(self)
        d["chain_angles_deg"] = list(self.chain_angles_deg)
        if self.per_arm is None:
            d.pop("per_arm")
        else:
            d["per_arm"] = [dict(a) for a in self.per_arm]
        return d


#: The fields of one entry of ``geometry.per_arm`` (rotary): the arm's joint (encoder) offset
#: (rad: the arm angle is the joint position plus it) and its own lengths (m). The arm's
#: angle about z is its entry of ``chain_angles_deg``.
PER_ARM_FIELDS = ("joint_offset", "base_radius", "upper_arm_length", "forearm_length", "platform_radius")


@dataclass(frozen=True)
class UpperArm:
    """One upper arm (crank) on its motor axis."""

    mass: float                 # kg
    com_distance: float         # m, motor axis to the COM, along the arm
    inertia: float              # kg m^2, about the COM, axis parallel to the motor axis


@dataclass(frozen=True)
class Motor:
    """Motor and gear of one arm."""

    rotor_inertia: float        # kg m^2, at the motor shaft
    gear_ratio: float           # motor turns per arm turn
    torque_constant: float      # N m / A at the motor shaft

    @property
    def reflected_inertia(self) -> float:
        """Rotor inertia seen at the arm: ``rotor_inertia * gear_ratio**2`` (kg m^2)."""
        return self.rotor_inertia * self.gear_ratio ** 2


@dataclass(frozen=True)
class Forearm:
    """One forearm (both bars of the parallelogram), lumped as Asadi & Heydari do."""

    mass: float                 # kg, one forearm (both bars of the parallelogram)
    com_ratio: float            # -, COM distance from the elbow / forearm_length (Asadi's r_K)
    inertia: float              # kg m^2, dominant moment of inertia about the COM (Asadi's I_K)


@dataclass(frozen=True)
class BodyMass:
    """One rigid body of the full-body description (``mass_properties.full_body``)."""

    mass: float                 # kg
    inertia: tuple              # kg m^2, principal moments (Ixx, Iyy, Izz) about the COM, body frame
    com_ratio: float = 0.5      # -, COM distance from the body's first joint / its length (bars only)


@dataclass(frozen=True)
class FullBody:
    """Optional full-body data: every body of a chain with its own inertia tensor, for the
    reference models (Staicu's recursive model, the multibody simulator, MuJoCo). Body frames
    and how the lumped ``forearm`` fields follow from it: ``docs/robot_file.md``."""

    bar: BodyMass                       # one of the two parallel bars of a forearm
    elbow_block: BodyMass               # short link of the parallelogram at the elbow
    platform_block: BodyMass            # short link of the parallelogram at the platform
    upper_arm_inertia: tuple | None = None   # kg m^2, (Ixx, Iyy, Izz) about the arm's COM
    platform_inertia: tuple | None = None    # kg m^2, (Ixx, Iyy, Izz) about the platform centre

    def implied_forearm(self, forearm_length: float) -> "Forearm":
        """The lumped forearm (Asadi's M_K, r_K, I_K) these bodies make: two bars, the elbow
        block's mass at the elbow and the platform block's at the platform joint;
        I_K = 2 (I_bar + m_bar (r_bar - r_K)^2 l_K^2) + m_eb r_K^2 l_K^2 + m_pb (1 - r_K)^2 l_K^2
        with I_bar the mean of the bar's two moments across it, (Iyy + Izz) / 2."""
        b, e, p, lk = self.bar, self.elbow_block, self.platform_block, forearm_length
        mass = 2.0 * b.mass + e.mass + p.mass
        rk = (2.0 * b.mass * b.com_ratio + p.mass) / mass if mass > 0 else 0.5
        i_bar = 0.5 * (b.inertia[1] + b.inertia[2])
        inertia = (2.0 * (i_bar + b.mass * (b.com_ratio - rk) ** 2 * lk * lk)
                   + e.mass * (rk * lk) ** 2 + p.mass * ((1.0 - rk) * lk) ** 2)
        return Forearm(mass=mass, com_ratio=rk, inertia=inertia)

    def to_dict(self) -> dict:
        """The ``mass_properties.full_body`` section of the robot file."""
        def body(b: BodyMass, ratio: bool = False) -> dict:
            d = {"mass": b.mass, "inertia": list(b.inertia)}
            if ratio:
                d["com_ratio"] = b.com_ratio
            return d
        d = {}
        if self.upper_arm_inertia is not None:
            d["upper_arm_inertia"] = list(self.upper_arm_inertia)
        d["bar"] = body(self.bar, ratio=True)
        d["elbow_block"] = body(self.elbow_block)
        d["platform_block"] = body(self.platform_block)
        if self.platform_inertia is not None:
            d["platform_inertia"] = list(self.platform_inertia)
        return d


@dataclass(frozen=True)
class MassProperties:
    """The ``mass_properties`` of a rotary Delta."""

    upper_arm: UpperArm
    motor: Motor
    forearm: Forearm
    platform_mass: float        # kg
    payload_mass: float         # kg
    full_body: FullBody | None = None   # optional per-body data (mass_properties.full_body)

    def to_dict(self) -> dict:
        """The ``mass_properties`` section of the robot file."""
        d = {"upper_arm": dataclasses.asdict(self.upper_arm), "motor": dataclasses.asdict(self.motor),
             "forearm": dataclasses.asdict(self.forearm), "platform": {"mass": self.platform_mass},
             "payload": {"mass": self.payload_mass}}
        if self.full_body is not None:
            d["full_body"] = self.full_body.to_dict()
        return d


@dataclass(frozen=True)
class Limits:
    """Joint limits of a rotary Delta (per arm)."""

    position: tuple             # rad, ((lo, hi),) * 3
    velocity: tuple             # rad/s, per joint
    acceleration: tuple         # rad/s^2, per joint
    torque: tuple               # N m, per joint

    @property
    def effort(self) -> tuple:
        """The joint effort limit (N m here; N for a linear Delta's carriages)."""
        return self.torque

    def to_dict(self) -> dict:
        """The ``limits`` section of the robot file."""
        return {"position": [list(p) for p in self.position], "velocity": list(self.velocity),
                "acceleration": list(self.acceleration), "torque": list(self.torque)}


#: Every field a robot file may hold (None: a value; a dict: a mapping of these fields).
#: ``metadata`` is free-form (identification results and provenance).
SCHEMA = {
    "name": None, "type": None, "joint_names": None, "gravity": None, "metadata": ...,
    "geometry": {k: None for k in ("base_radius", "platform_radius", "upper_arm_length",
                                   "forearm_length", "forearm_spacing", "chain_angles_deg")}
                 | {"per_arm": ...},      # per_arm: checked by read_per_arm (its own bounds)
    "mass_properties": {
        "upper_arm": {"mass": None, "com_distance": None, "inertia": None},
        "motor": {"rotor_inertia": None, "gear_ratio": None, "torque_constant": None},
        "forearm": {"mass": None, "com_ratio": None, "inertia": None},
        "platform": {"mass": None},
        "payload": {"mass": None},
        "full_body": {
            "upper_arm_inertia": None, "platform_inertia": None,
            "bar": {"mass": None, "com_ratio": None, "inertia": None},
            "elbow_block": {"mass": None, "inertia": None},
            "platform_block": {"mass": None, "inertia": None},
        },
    },
    "friction": {"viscous": None, "coulomb": None, "smoothing_velocity": None,
                 "stribeck": {"static": None, "velocity": None}},
    "limits": {"position": None, "velocity": None, "acceleration": None, "torque": None},
}

_PER_JOINT_FRICTION = "the friction of one Delta arm joint"

#: field path -> Bound. Per-joint lists: every element is checked against its list's row.
BOUNDS = {
    "gravity": SHARED_BOUNDS["gravity"],
    "geometry.base_radius": Bound(1e-4, 10.0, "m", f"the base radius of {LENGTH}"),
    "geometry.platform_radius": SHARED_BOUNDS["geometry.platform_radius"],
    "geometry.upper_arm_length": Bound(1e-4, 10.0, "m", f"an upper arm of {LENGTH}"),
    "geometry.forearm_length": Bound(1e-4, 20.0, "m", f"a forearm of {LENGTH}"),
    "geometry.forearm_spacing": Bound(0.0, 10.0, "m", f"the forearm bar spacing of {LENGTH}"),
    "geometry.chain_angles_deg": Bound(-720.0, 720.0, "deg",
                                       "a chain angle (more than two turns is a typo)"),
    "mass_properties.upper_arm.mass": Bound(0.0, 1000.0, "kg", "a Delta robot upper arm"),
    "mass_properties.upper_arm.com_distance": Bound(0.0, 10.0, "m", "an upper arm's centre of mass"),
    "mass_properties.upper_arm.inertia": Bound(0.0, 1e4, "kg m^2",
                                               "an upper arm (1000 kg over 10 m is 8300 kg m^2)"),
    "mass_properties.motor.rotor_inertia": SHARED_BOUNDS["mass_properties.motor.rotor_inertia"],
    "mass_properties.motor.gear_ratio": Bound(0.01, 1000.0, "", "a robot joint gear (harmonic drives "
                                              "reach 160, multi-stage gears a few hundred)"),
    "mass_properties.motor.torque_constant": SHARED_BOUNDS["mass_properties.motor.torque_constant"],
    "mass_properties.forearm.mass": Bound(0.0, 1000.0, "kg", "a Delta robot forearm"),
    "mass_properties.forearm.com_ratio": Bound(0.0, 1.0, "", "a fraction of the forearm length"),
    "mass_properties.forearm.inertia": Bound(0.0, 1e4, "kg m^2",
                                             "a forearm (1000 kg over 10 m is 8300 kg m^2)"),
    "mass_properties.platform.mass": SHARED_BOUNDS["mass_properties.platform.mass"],
    "mass_properties.payload.mass": SHARED_BOUNDS["mass_properties.payload.mass"],
    "friction.viscous": Bound(0.0, 1e4, "N m s/rad", _PER_JOINT_FRICTION),
    "friction.coulomb": Bound(0.0, 1e5, "N m", _PER_JOINT_FRICTION),
    "friction.stribeck.static": Bound(0.0, 1e5, "N m", _PER_JOINT_FRICTION),
    "friction.stribeck.velocity": Bound(1e-6, 100.0, "rad/s", "a Stribeck velocity"),
    "friction.smoothing_velocity": Bound(0.0, 10.0, "rad/s", "the smoothing of the friction sign"),
    "limits.position": Bound(-math.pi, math.pi, "rad", "a revolute joint's range (one turn)"),
    "limits.velocity": Bound(1e-3, 1000.0, "rad/s", "an arm joint's speed"),
    "limits.acceleration": Bound(1e-3, 1e6, "rad/s^2", "an arm joint's acceleration"),
    "limits.torque": Bound(1e-6, 1e5, "N m", "an arm joint's torque after the gear"),
    # optional full-body data (Staicu's and the multibody models; principal moments per body)
    "mass_properties.full_body.upper_arm_inertia": Bound(0.0, 1e4, "kg m^2", "an upper arm's principal moments"),
    "mass_properties.full_body.platform_inertia": Bound(0.0, 1e4, "kg m^2", "a platform's principal moments"),
    "mass_properties.full_body.bar.mass": Bound(0.0, 500.0, "kg", "one bar of a forearm parallelogram"),
    "mass_properties.full_body.bar.com_ratio": Bound(0.0, 1.0, "", "a fraction of the bar length"),
    "mass_properties.full_body.bar.inertia": Bound(0.0, 1e4, "kg m^2", "a bar's principal moments"),
    "mass_properties.full_body.elbow_block.mass": Bound(0.0, 500.0, "kg", "the short link at the elbow"),
    "mass_properties.full_body.elbow_block.inertia": Bound(0.0, 1e3, "kg m^2", "a block's principal moments"),
    "mass_properties.full_body.platform_block.mass": Bound(0.0, 500.0, "kg", "the short link at the platform"),
    "mass_properties.full_body.platform_block.inertia": Bound(0.0, 1e3, "kg m^2", "a block's principal moments"),
}


def parse(r: Reader) -> RobotParameters:
    """A rotary Delta's robot file (``type: rotary``, fields: ``docs/robot_file.md``) from the
    :class:`~delta_core.robot_file.reader.Reader` of its YAML data."""
    r.check_fields(SCHEMA)
    name, joints = read_header(r)

    geo = Geometry(
        base_radius=r.number("geometry.base_radius", gt=0),
        platform_radius=r.number("geometry.platform_radius", ge=0),
        upper_arm_length=r.number("geometry.upper_arm_length", gt=0),
        forearm_length=r.number("geometry.forearm_length", gt=0),
        forearm_spacing=r.number("geometry.forearm_spacing", ge=0),
        chain_angles_deg=r.triple("geometry.chain_angles_deg", default=[0.0, 120.0, 240.0]),
    )
    check_spread(r, "geometry.chain_angles_deg", geo.chain_angles_deg, "chains")
    geo = dataclasses.replace(geo, per_arm=read_per_arm(r, {
        "joint_offset": (BOUNDS["limits.position"], ""),
        "base_radius": (BOUNDS["geometry.base_radius"], "gt0"),
        "upper_arm_length": (BOUNDS["geometry.upper_arm_length"], "gt0"),
        "forearm_length": (BOUNDS["geometry.forearm_length"], "gt0"),
        "platform_radius": (BOUNDS["geometry.platform_radius"], "ge0")}, dataclasses.asdict(geo)))

    arm = UpperArm(
        mass=r.number("mass_properties.upper_arm.mass", ge=0),
        com_distance=r.number("mass_properties.upper_arm.com_distance", ge=0),
        inertia=r.number("mass_properties.upper_arm.inertia", ge=0),
    )
    if arm.com_distance > geo.upper_arm_length:
        r.fail("mass_properties.upper_arm.com_distance",
               f"must be <= geometry.upper_arm_length ({geo.upper_arm_length:g}), got {arm.com_distance:g}")
    motor = Motor(
        rotor_inertia=r.number("mass_properties.motor.rotor_inertia", ge=0),
        gear_ratio=r.number("mass_properties.motor.gear_ratio", gt=0),
        torque_constant=r.number("mass_properties.motor.torque_constant", gt=0, default=1.0),
    )
    fore = Forearm(
        mass=r.number("mass_properties.forearm.mass", ge=0),
        com_ratio=r.number("mass_properties.forearm.com_ratio", gt=0, lt=1),
        inertia=r.number("mass_properties.forearm.inertia", ge=0),
    )
    full = _parse_full_body(r, geo, arm, fore)
    # Asadi eq. (22): the three-point-mass equivalent needs a non-negative mass at the COM,
    # i.e. I_K <= M_K r_K (1 - r_K) l_K^2 (all mass at the two ends). With full-body data the
    # bodies' own tensors are checked instead (a thick bar may exceed it; m_K < 0 is harmless).
    i_max = fore.mass * fore.com_ratio * (1.0 - fore.com_ratio) * geo.forearm_length ** 2
    if full is None and fore.inertia > i_max * (1 + 1e-12):
        r.fail("mass_properties.forearm.inertia",
               f"must be <= mass * com_ratio * (1 - com_ratio) * forearm_length^2 = {i_max:.6g} "
               f"(no physical bar of that mass and length has more), got {fore.inertia:g}")
    mass = MassProperties(
        upper_arm=arm, motor=motor, forearm=fore,
        platform_mass=r.number("mass_properties.platform.mass", ge=0),
        payload_mass=r.number("mass_properties.payload.mass", ge=0, default=0.0),
        full_body=full,
    )

    fr = read_friction(r, stribeck_velocity=0.05, smoothing_velocity=0.002)

    position = read_position_limits(r, "rad")
    for k, (lo, hi) in enumerate(position):
        if lo < -math.pi or hi > math.pi:
            r.fail(f"limits.position[{k}]", f"must lie within [-pi, pi], got {[lo, hi]!r}")
    lim = Limits(
        position=tuple(position),
        velocity=r.triple("limits.velocity", gt=0),
        acceleration=r.triple("limits.acceleration", gt=0),
        torque=r.triple("limits.torque", gt=0),
    )
    gravity = read_gravity(r)

    # Geometric feasibility: with all arms at the middle of their range the three forearms
    # must reach a common platform position on the axis (the home pose exists).
    _check_reachable(r, geo, lim)
    return RobotParameters(name=name, type=TYPE, joint_names=joints, geometry=geo, mass=mass,
                           friction=fr, limits=lim, gravity=gravity, source=r.source,
                           metadata=read_metadata(r))


FULL_BODY = "mass_properties.full_body"
_CONSISTENCY_RTOL = 1e-6


def _principal(r: Reader, path: str, default: Any = ...) -> tuple | None:
    """Three principal moments of inertia (kg m^2): each >= 0, none larger than the sum of the
    other two (the triangle inequality every rigid body obeys)."""
    v = r.get(path, default)
    if v is None:
        return None
    if not isinstance(v, (list, tuple)) or len(v) != 3:
        r.fail(path, f"must be a list of 3 principal moments of inertia [Ixx, Iyy, Izz] in kg m^2, got {v!r}")
    out = []
    for k, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
            r.fail(f"{path}[{k}]", f"must be a finite number, got {x!r}")
        if x < 0:
            r.fail(f"{path}[{k}]", f"must be >= 0, got {x:g}")
        out.append(float(x))
    for k in range(3):
        others = sum(out) - out[k]
        if out[k] > others * (1 + 1e-9) + 1e-15:
            r.fail(path, f"is not the inertia of a rigid body: I{'xyz'[k] * 2} = {out[k]:g} exceeds the sum "
                   f"of the other two ({others:g}), got {out}")
    return tuple(out)


def _parse_body(r: Reader, path: str, required: bool, ratio: bool = False) -> BodyMass:
    if not required and r.get(path, None) is None:
        return BodyMass(mass=0.0, inertia=(0.0, 0.0, 0.0))
    return BodyMass(mass=r.number(f"{path}.mass", ge=0),
                    inertia=_principal(r, f"{path}.inertia", default=... if required else [0.0, 0.0, 0.0]),
                    com_ratio=r.number(f"{path}.com_ratio", ge=0, le=1, default=0.5) if ratio else 0.5)


def _parse_full_body(r: Reader, geo: Geometry, arm: UpperArm, fore: Forearm) -> FullBody | None:
    """``mass_properties.full_body`` (optional) and its consistency with the lumped fields: the
    lumped ``forearm`` must be what the bodies imply (:meth:`FullBody.implied_forearm`) and
    ``upper_arm.inertia`` must be the full tensor's Iyy (about the axis parallel to the motor
    axis), to a relative 1e-6, so the explicit model and the full-body models describe the
    same robot."""
    if r.get(FULL_BODY, None) is None:
        return None
    full = FullBody(
        bar=_parse_body(r, f"{FULL_BODY}.bar", required=True, ratio=True),
        elbow_block=_parse_body(r, f"{FULL_BODY}.elbow_block", required=False),
        platform_block=_parse_body(r, f"{FULL_BODY}.platform_block", required=False),
        upper_arm_inertia=_principal(r, f"{FULL_BODY}.upper_arm_inertia", default=None),
        platform_inertia=_principal(r, f"{FULL_BODY}.platform_inertia", default=None),
    )
    implied = full.implied_forearm(geo.forearm_length)
    if implied.mass <= 0:
        r.fail(f"{FULL_BODY}.bar.mass", "must be > 0 (the forearm needs a mass)")

    def same(a, b):
        return abs(a - b) <= _CONSISTENCY_RTOL * max(abs(a), abs(b)) + 1e-15

    rules = (("forearm.mass", fore.mass, implied.mass,
              "2 bar.mass + elbow_block.mass + platform_block.mass"),
             ("forearm.com_ratio", fore.com_ratio, implied.com_ratio,
              "(2 bar.mass bar.com_ratio + platform_block.mass) / forearm mass"),
             ("forearm.inertia", fore.inertia, implied.inertia,
              "2 ((bar Iyy + Izz) / 2 + bar.mass (bar.com_ratio - r_K)^2 l_K^2) "
              "+ elbow_block.mass r_K^2 l_K^2 + platform_block.mass (1 - r_K)^2 l_K^2"))
    if full.upper_arm_inertia is not None:
        rules += (("upper_arm.inertia", arm.inertia, full.upper_arm_inertia[1], "upper_arm_inertia[1] (Iyy)"),)
    for field_, given, want, rule in rules:
        if not same(given, want):
            r.fail(f"mass_properties.{field_}",
                   f"must equal what {FULL_BODY} implies, {rule} = {want:.9g}, got {given:.9g}")
    return full


KIND = RobotFileKind(TYPE, SCHEMA, BOUNDS, parse)


def _check_reachable(r: Reader, geo: Geometry, lim: Limits) -> None:
    lo = max(p[0] for p in lim.position)
    hi = min(p[1] for p in lim.position)
    if lo >= hi:
        r.fail("limits.position", "the three joints have no common range of motion")
    # Horizontal offset between an elbow and its platform joint for symmetric arms at q:
    # |R - r + L1 cos q|; the forearm reaches iff it is shorter than forearm_length.
    reach = [abs(geo.base_radius - geo.platform_radius + geo.upper_arm_length * math.cos(q))
             for q in (lo, 0.5 * (lo + hi), hi)]
    if min(reach) >= geo.forearm_length:
        r.fail("geometry.forearm_length",
               f"is too short for the forearm to reach the platform: needs > {min(reach):.4g} m "
               f"(|base_radius - platform_radius + upper_arm_length cos q| within the joint limits), "
               f"got {geo.forearm_length:g}")
