"""The robot file: one YAML file per robot, read by everything (dynamics, simulator,
URDF, drivers). Field reference with units: ``docs/robot_file.md``.

``load_robot("nt_robot")`` takes a preset name (``config/robots/<name>.yaml``) or a path.
Every value is validated; a bad one raises :class:`RobotFileError` naming the file, the
field and the rule, e.g. ``config/robots/x.yaml: geometry.forearm_length must be > 0, got -0.3``.

Example::

    >>> from delta_core.robot_file import load_robot
    >>> robot = load_robot("nt_robot")
    >>> robot.geometry.forearm_length
    0.8
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from delta_core import safe_yaml
from delta_core.atomic_file import atomic_write_text
from delta_core.paths import PathError, check_readable_file
from delta_core.plausibility import PRISMATIC_BOUNDS, why_implausible
from delta_core.share import share_file
from delta_core.text_input import TextInputError, read_text

ROBOT_TYPES = ("rotary", "prismatic")
#: A robot file is a few kB; anything larger is the wrong file.
MAX_FILE_BYTES = 1 << 20
#: Longest message part quoting a value (a huge list in a wrong field is cut).
MAX_QUOTE = 240


class RobotFileError(ValueError):
    """A robot file is missing, unreadable or holds an invalid value."""


@dataclass(frozen=True)
class Geometry:
    base_radius: float          # m, base centre to each motor axis
    platform_radius: float      # m, platform centre to each forearm's lower joint midpoint
    upper_arm_length: float     # m, motor axis to elbow
    forearm_length: float       # m, elbow to platform joint (one bar of the parallelogram)
    forearm_spacing: float      # m, distance between the two bars of a forearm
    chain_angles_deg: tuple     # deg, angle phi_i of chain i about z, measured from x


@dataclass(frozen=True)
class UpperArm:
    mass: float                 # kg
    com_distance: float         # m, motor axis to the COM, along the arm
    inertia: float              # kg m^2, about the COM, axis parallel to the motor axis


@dataclass(frozen=True)
class Motor:
    rotor_inertia: float        # kg m^2, at the motor shaft
    gear_ratio: float           # motor turns per arm turn
    torque_constant: float      # N m / A at the motor shaft

    @property
    def reflected_inertia(self) -> float:
        """Rotor inertia seen at the arm: ``rotor_inertia * gear_ratio**2`` (kg m^2)."""
        return self.rotor_inertia * self.gear_ratio ** 2


@dataclass(frozen=True)
class Forearm:
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
    upper_arm: UpperArm
    motor: Motor
    forearm: Forearm
    platform_mass: float        # kg
    payload_mass: float         # kg
    full_body: FullBody | None = None   # optional per-body data (mass_properties.full_body)


@dataclass(frozen=True)
class Friction:
    viscous: tuple              # N m s / rad, per joint
    coulomb: tuple              # N m, per joint
    static: tuple               # N m, per joint (Stribeck break-away torque; = coulomb disables it)
    stribeck_velocity: float    # rad/s
    smoothing_velocity: float   # rad/s, width of the smooth sign (0: exact sign)


@dataclass(frozen=True)
class Limits:
    position: tuple             # rad, ((lo, hi),) * 3
    velocity: tuple             # rad/s, per joint
    acceleration: tuple         # rad/s^2, per joint
    torque: tuple               # N m, per joint

    @property
    def effort(self) -> tuple:
        """The joint effort limit (N m here; N for a linear Delta's carriages)."""
        return self.torque


@dataclass(frozen=True)
class RobotParameters:
    """Everything the stack knows about one robot, validated."""

    name: str
    type: str
    joint_names: tuple
    geometry: Geometry
    mass: MassProperties
    friction: Friction
    limits: Limits
    gravity: float
    source: str = ""                          # where it was loaded from
    metadata: dict = field(default_factory=dict, compare=False)

    def replace(self, **changes) -> "RobotParameters":
        """A copy with top-level fields replaced (see :func:`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The robot file's YAML structure (the inverse of :func:`parse_robot`)."""
        g, m, f, lim = self.geometry, self.mass, self.friction, self.limits
        d = {
            "name": self.name,
            "type": self.type,
            "joint_names": list(self.joint_names),
            "geometry": {
                "base_radius": g.base_radius,
                "platform_radius": g.platform_radius,
                "upper_arm_length": g.upper_arm_length,
                "forearm_length": g.forearm_length,
                "forearm_spacing": g.forearm_spacing,
                "chain_angles_deg": list(g.chain_angles_deg),
            },
            "mass_properties": {
                "upper_arm": dataclasses.asdict(m.upper_arm),
                "motor": dataclasses.asdict(m.motor),
                "forearm": dataclasses.asdict(m.forearm),
                "platform": {"mass": m.platform_mass},
                "payload": {"mass": m.payload_mass},
            },
            "friction": {
                "viscous": list(f.viscous),
                "coulomb": list(f.coulomb),
                "stribeck": {"static": list(f.static), "velocity": f.stribeck_velocity},
                "smoothing_velocity": f.smoothing_velocity,
            },
            "limits": {
                "position": [list(p) for p in lim.position],
                "velocity": list(lim.velocity),
                "acceleration": list(lim.acceleration),
                "torque": list(lim.torque),
            },
            "gravity": self.gravity,
        }
        if m.full_body is not None:
            d["mass_properties"]["full_body"] = m.full_body.to_dict()
        if self.metadata:
            d["metadata"] = self.metadata
        return d


# ----------------------------------------------------------------------------- linear Delta

@dataclass(frozen=True)
class PrismaticGeometry:
    """Geometry of a linear (prismatic) Delta: three vertical rails (Colombo & Lentini 2020)."""

    rail_radius: float          # m, z axis to each carriage joint A_i (horizontally)
    platform_radius: float      # m, platform centre to each platform joint P_i
    rod_length: float           # m, l = |A_i P_i|, one rod of the parallelogram
    rod_spacing: float          # m, distance between the two rods of a pair
    rail_angles_deg: tuple      # deg, angle of rail i about z, measured from x
    tool_offset: float          # m, tool point (nozzle, Q) below the platform centre P (PQ)


@dataclass(frozen=True)
class Carriage:
    mass: float                 # kg, one carriage (with its half of the rod-pair joints)


@dataclass(frozen=True)
class Rod:
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
class PrismaticMassProperties:
    carriage: Carriage
    rod: Rod
    motor: LinearDrive
    platform_mass: float        # kg
    payload_mass: float         # kg


@dataclass(frozen=True)
class PrismaticLimits:
    position: tuple             # m, ((lo, hi),) * 3, carriage joint height in base_link
    velocity: tuple             # m/s, per carriage
    acceleration: tuple         # m/s^2, per carriage
    force: tuple                # N, per carriage, along the rail

    @property
    def effort(self) -> tuple:
        """The carriage force limit (N); ``Limits.effort`` of the rotary robot is its torque."""
        return self.force


@dataclass(frozen=True)
class PrismaticRobotParameters(RobotParameters):
    """A linear Delta's robot file (``type: prismatic``), validated. Same top-level fields as
    :class:`RobotParameters`; ``geometry``, ``mass`` and ``limits`` hold the prismatic
    classes above and ``friction`` is per carriage (N s/m, N, m/s)."""

    def to_dict(self) -> dict:
        """The robot file's YAML structure (the inverse of :func:`parse_robot`)."""
        g, m, f, lim = self.geometry, self.mass, self.friction, self.limits
        d = {
            "name": self.name,
            "type": self.type,
            "joint_names": list(self.joint_names),
            "geometry": {
                "rail_radius": g.rail_radius,
                "platform_radius": g.platform_radius,
                "rod_length": g.rod_length,
                "rod_spacing": g.rod_spacing,
                "rail_angles_deg": list(g.rail_angles_deg),
                "tool_offset": g.tool_offset,
            },
            "mass_properties": {
                "carriage": {"mass": m.carriage.mass},
                "rod": {"mass": m.rod.mass, "inertia": m.rod.inertia},
                "motor": {"rotor_inertia": m.motor.rotor_inertia,
                          "travel_per_revolution": m.motor.travel_per_revolution,
                          "torque_constant": m.motor.torque_constant},
                "platform": {"mass": m.platform_mass},
                "payload": {"mass": m.payload_mass},
            },
            "friction": {
                "viscous": list(f.viscous),
                "coulomb": list(f.coulomb),
                "stribeck": {"static": list(f.static), "velocity": f.stribeck_velocity},
                "smoothing_velocity": f.smoothing_velocity,
            },
            "limits": {
                "position": [list(p) for p in lim.position],
                "velocity": list(lim.velocity),
                "acceleration": list(lim.acceleration),
                "force": list(lim.force),
            },
            "gravity": self.gravity,
        }
        if self.metadata:
            d["metadata"] = self.metadata
        return d


# ----------------------------------------------------------------------------- loading

def resolve_robot_path(robot: str | os.PathLike) -> Path:
    """A preset name (``nt_robot``) or a path to a robot file -> the file's path, checked to be
    a readable regular file (:func:`delta_core.paths.check_readable_file`; nothing is opened)."""
    text = os.fspath(robot)
    if not text:
        raise RobotFileError("robot: empty name; give a preset name (e.g. nt_robot) or a file path")
    p = Path(text)
    if p.suffix in (".yaml", ".yml") or os.sep in text or os.path.lexists(text):
        try:       # a FIFO, a device, a directory, a symlink loop: refused by name, nothing opened
            return check_readable_file(p, "a robot file")
        except PathError as e:
            raise RobotFileError(str(e)) from None
    try:
        return share_file("config", "robots", f"{text}.yaml")
    except FileNotFoundError:
        raise RobotFileError(
            f"robot '{text}': no such preset (known: {', '.join(list_presets()) or 'none'}) "
            "and no such file") from None


def list_presets() -> list[str]:
    """Names of the robot presets shipped in ``config/robots``."""
    try:
        d = share_file("config", "robots")
    except FileNotFoundError:
        return []
    return sorted(p.stem for p in d.glob("*.yaml"))


def load_robot(robot: str | os.PathLike | RobotParameters) -> RobotParameters:
    """Load and validate a robot file given by preset name or path (a RobotParameters passes through).

    Besides the field rules (:func:`parse_robot`) the file itself must be UTF-8 text of at
    most :data:`MAX_FILE_BYTES` and YAML within :func:`delta_core.safe_yaml.load`'s limits
    (nesting, aliases, integer length, duplicate keys); every problem raises
    :class:`RobotFileError` with one line naming the file.
    """
    if isinstance(robot, RobotParameters):
        return robot
    path = resolve_robot_path(robot)
    try:
        text = read_text(path, MAX_FILE_BYTES, "a robot file")
    except TextInputError as e:
        raise RobotFileError(str(e)) from None
    except OSError as e:
        raise RobotFileError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        data = safe_yaml.load(text)
    except safe_yaml.YamlLimitError as e:
        raise RobotFileError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise RobotFileError(f"{path}: not valid YAML: {safe_yaml.one_line(e, text)}") from None
    return parse_robot(data, source=str(path))


def save_robot(robot: RobotParameters, path: str | os.PathLike, header: str = "") -> Path:
    """Write ``robot`` as a robot file, atomically. ``header`` becomes a leading comment."""
    body = yaml.safe_dump(robot.to_dict(), sort_keys=False, default_flow_style=None)
    comment = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    parse_robot(yaml.safe_load(body), source=os.fspath(path))  # never write an invalid file
    return atomic_write_text(path, comment + body)


class _Reader:
    """Reads fields out of the nested YAML with error messages that name file and field."""

    def __init__(self, data: Any, source: str):
        self.source = source
        if data is None:
            self.fail("", "is empty: a robot file is a mapping of fields (name, joint_names, "
                          "geometry, ...; see docs/robot_file.md)")
        if not isinstance(data, dict):
            self.fail("", f"must be a mapping of fields, got {type(data).__name__}")
        self.data = data
        self._check_text()

    def _check_text(self):
        """Names go into XML, topics and log lines: refuse control characters (a tab or a line
        break in a joint name becomes a blank in the URDF, which then names another joint)."""
        for path in ("name", "joint_names"):
            v = self.data.get(path)
            items = v if isinstance(v, list) else [v]
            for k, x in enumerate(items):
                if isinstance(x, str) and not x.isprintable():
                    where = f"{path}[{k}]" if isinstance(v, list) else path
                    self.fail(where, f"must be printable text (no tabs, line breaks or other control "
                                     f"characters), got {x!r}")

    def fail(self, where: str, rule: str):
        prefix = f"{self.source}: " if self.source else ""
        if len(rule) > 2 * MAX_QUOTE:       # a huge value quoted in the rule: keep one short line
            rule = f"{rule[:MAX_QUOTE]}... ({len(rule)} characters)"
        raise RobotFileError(f"{prefix}{where + ' ' if where else ''}{rule}")

    def get(self, path: str, default: Any = ...):
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict):
                self.fail(path, f"must be inside a mapping, got {node!r}")
            if part not in node:
                if default is not ...:
                    return default
                self.fail(path, "is missing")
            node = node[part]
        return node

    def _value(self, path: str, v: Any, what: str = "a number") -> float:
        """``v`` as a finite float within the field's plausibility bound, else fail."""
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            hint = ""
            if isinstance(v, str):
                try:
                    float(v)
                    hint = (" (YAML 1.1, as read here and by xacro, takes an exponent without "
                            "a decimal point or a sign for text: write 1.0e-4 or 2.0e+3)")
                except ValueError:
                    pass
            self.fail(path, f"must be {what}, got {v!r}{hint}")
        try:
            x = float(v)
        except OverflowError:
            self.fail(path, f"must be a finite number, got an integer of {len(str(v))} digits")
        if not math.isfinite(x):
            self.fail(path, f"must be finite, got {x}")
        return x

    #: the plausibility table of the robot's kind (delta_core.plausibility)
    bounds = None

    def _plausible(self, path: str, x: float) -> None:
        why = why_implausible(path, x, self.bounds)
        if why:
            self.fail(path, why)

    def number(self, path: str, *, gt=None, ge=None, le=None, lt=None, default: Any = ...) -> float:
        v = self._value(path, self.get(path, default))
        for bound, ok, word in ((gt, lambda a, b: a > b, ">"), (ge, lambda a, b: a >= b, ">="),
                                (lt, lambda a, b: a < b, "<"), (le, lambda a, b: a <= b, "<=")):
            if bound is not None and not ok(v, bound):
                self.fail(path, f"must be {word} {bound:g}, got {v:g}")
        self._plausible(path, v)
        return v

    def triple(self, path: str, *, ge=None, gt=None, default: Any = ...) -> tuple:
        v = self.get(path, default)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = [v] * 3
        if not isinstance(v, (list, tuple)) or len(v) != 3:
            self.fail(path, f"must be a list of 3 numbers (one per joint), got {v!r}")
        out = []
        for k, x in enumerate(v):
            x = self._value(f"{path}[{k}]", x, "a finite number")
            if ge is not None and x < ge:
                self.fail(f"{path}[{k}]", f"must be >= {ge:g}, got {x:g}")
            if gt is not None and not x > gt:
                self.fail(f"{path}[{k}]", f"must be > {gt:g}, got {x:g}")
            self._plausible(f"{path}[{k}]", x)
            out.append(x)
        return tuple(out)


#: Every field a robot file may hold (None: a value; a dict: a mapping of these fields).
#: ``metadata`` is free-form (identification results and provenance).
SCHEMA = {
    "name": None, "type": None, "joint_names": None, "gravity": None, "metadata": ...,
    "geometry": {k: None for k in ("base_radius", "platform_radius", "upper_arm_length",
                                   "forearm_length", "forearm_spacing", "chain_angles_deg")},
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


def _check_fields(r: "_Reader", node, schema, where: str = "") -> None:
    """Refuse fields the schema does not know (a misspelt optional field would otherwise
    silently fall back to its default)."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in schema:
            known = ", ".join(schema)
            r.fail(path, f"is not a known field (known here: {known})")
        sub = schema[key]
        if isinstance(sub, dict):
            if not isinstance(value, dict):
                r.fail(path, f"must be a mapping of fields, got {value!r}")
            _check_fields(r, value, sub, path)


def _friction(r: "_Reader", stribeck_velocity: float, smoothing_velocity: float) -> Friction:
    """The ``friction`` section (either kind; the defaults of the two velocities differ)."""
    coulomb = r.triple("friction.coulomb", ge=0, default=0.0)
    return Friction(
        viscous=r.triple("friction.viscous", ge=0, default=0.0),
        coulomb=coulomb,
        static=r.triple("friction.stribeck.static", ge=0, default=list(coulomb)),
        stribeck_velocity=r.number("friction.stribeck.velocity", gt=0, default=stribeck_velocity),
        smoothing_velocity=r.number("friction.smoothing_velocity", ge=0, default=smoothing_velocity),
    )


def _position_limits(r: "_Reader", unit: str) -> list:
    """``limits.position``: three pairs (lo, hi) of finite numbers with lo < hi, in ``unit``."""
    pos = r.get("limits.position")
    if (not isinstance(pos, (list, tuple)) or len(pos) != 3
            or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pos)):
        r.fail("limits.position", f"must be 3 pairs [lo, hi] in {unit}, got {pos!r}")
    position = []
    for k, (lo, hi) in enumerate(pos):
        for x in (lo, hi):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
                r.fail(f"limits.position[{k}]", f"must hold finite numbers, got {[lo, hi]!r}")
        if not lo < hi:
            r.fail(f"limits.position[{k}]", f"must have lo < hi, got {[lo, hi]!r}")
        position.append((float(lo), float(hi)))
    return position


def parse_robot(data: Any, source: str = "") -> RobotParameters:
    """Validate the YAML structure of a robot file and build :class:`RobotParameters`."""
    r = _Reader(data, source)
    if r.get("type", "rotary") == "prismatic":
        r.bounds = PRISMATIC_BOUNDS
        return _parse_prismatic(r)
    _check_fields(r, data, SCHEMA)
    name = r.get("name")
    if not isinstance(name, str) or not name.strip():
        r.fail("name", f"must be a non-empty string, got {name!r}")
    rtype = r.get("type", "rotary")
    if rtype not in ROBOT_TYPES:
        r.fail("type", f"must be one of {', '.join(ROBOT_TYPES)}, got {rtype!r}")
    joints = r.get("joint_names")
    if (not isinstance(joints, (list, tuple)) or len(joints) != 3
            or not all(isinstance(j, str) and j.strip() for j in joints)):
        r.fail("joint_names", f"must be a list of 3 non-empty names, got {joints!r}")
    if len(set(joints)) != 3:
        r.fail("joint_names", f"must be 3 different names, got {joints!r}")

    geo = Geometry(
        base_radius=r.number("geometry.base_radius", gt=0),
        platform_radius=r.number("geometry.platform_radius", ge=0),
        upper_arm_length=r.number("geometry.upper_arm_length", gt=0),
        forearm_length=r.number("geometry.forearm_length", gt=0),
        forearm_spacing=r.number("geometry.forearm_spacing", ge=0),
        chain_angles_deg=r.triple("geometry.chain_angles_deg", default=[0.0, 120.0, 240.0]),
    )
    angles = sorted(a % 360.0 for a in geo.chain_angles_deg)
    gaps = [angles[1] - angles[0], angles[2] - angles[1], 360.0 - angles[2] + angles[0]]
    if min(gaps) < 30.0 or max(gaps) > 180.0 - 1e-9:
        r.fail("geometry.chain_angles_deg",
               f"must spread the chains around the base (gaps between 30 and 180 deg), got {list(geo.chain_angles_deg)}")

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

    fr = _friction(r, stribeck_velocity=0.05, smoothing_velocity=0.002)

    position = _position_limits(r, "rad")
    for k, (lo, hi) in enumerate(position):
        if lo < -math.pi or hi > math.pi:
            r.fail(f"limits.position[{k}]", f"must lie within [-pi, pi], got {[lo, hi]!r}")
    lim = Limits(
        position=tuple(position),
        velocity=r.triple("limits.velocity", gt=0),
        acceleration=r.triple("limits.acceleration", gt=0),
        torque=r.triple("limits.torque", gt=0),
    )
    gravity = r.number("gravity", ge=0, default=9.80665)

    # Geometric feasibility: with all arms at the middle of their range the three forearms
    # must reach a common platform position on the axis (the home pose exists).
    _check_reachable(r, geo, lim)
    metadata = r.get("metadata", {})
    if not isinstance(metadata, dict):
        r.fail("metadata", f"must be a mapping, got {metadata!r}")
    return RobotParameters(name=name.strip(), type=rtype, joint_names=tuple(joints), geometry=geo,
                           mass=mass, friction=fr, limits=lim, gravity=gravity, source=source,
                           metadata=metadata)


FULL_BODY = "mass_properties.full_body"
_CONSISTENCY_RTOL = 1e-6


def _principal(r: _Reader, path: str, default: Any = ...) -> tuple | None:
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


def _parse_body(r: _Reader, path: str, required: bool, ratio: bool = False) -> BodyMass:
    if not required and r.get(path, None) is None:
        return BodyMass(mass=0.0, inertia=(0.0, 0.0, 0.0))
    return BodyMass(mass=r.number(f"{path}.mass", ge=0),
                    inertia=_principal(r, f"{path}.inertia", default=... if required else [0.0, 0.0, 0.0]),
                    com_ratio=r.number(f"{path}.com_ratio", ge=0, le=1, default=0.5) if ratio else 0.5)


def _parse_full_body(r: _Reader, geo: Geometry, arm: UpperArm, fore: Forearm) -> FullBody | None:
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


def _check_reachable(r: _Reader, geo: Geometry, lim: Limits) -> None:
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


# ----------------------------------------------------------------------------- linear Delta

#: Every field a linear Delta's robot file (``type: prismatic``) may hold.
PRISMATIC_SCHEMA = {
    "name": None, "type": None, "joint_names": None, "gravity": None, "metadata": ...,
    "geometry": {k: None for k in ("rail_radius", "platform_radius", "rod_length", "rod_spacing",
                                   "rail_angles_deg", "tool_offset")},
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

#: Rail angles of the paper's Fig. 1 (B_1B_2 along +x, B_3 on +y) and of Marlin's towers A, B, C.
PRISMATIC_RAIL_ANGLES_DEG = (210.0, 330.0, 90.0)


def _parse_prismatic(r: _Reader) -> PrismaticRobotParameters:
    """:func:`parse_robot` for ``type: prismatic`` (fields: ``docs/robot_file.md``)."""
    _check_fields(r, r.data, PRISMATIC_SCHEMA)
    name = r.get("name")
    if not isinstance(name, str) or not name.strip():
        r.fail("name", f"must be a non-empty string, got {name!r}")
    joints = r.get("joint_names")
    if (not isinstance(joints, (list, tuple)) or len(joints) != 3
            or not all(isinstance(j, str) and j.strip() for j in joints)):
        r.fail("joint_names", f"must be a list of 3 non-empty names, got {joints!r}")
    if len(set(joints)) != 3:
        r.fail("joint_names", f"must be 3 different names, got {joints!r}")

    geo = PrismaticGeometry(
        rail_radius=r.number("geometry.rail_radius", gt=0),
        platform_radius=r.number("geometry.platform_radius", ge=0),
        rod_length=r.number("geometry.rod_length", gt=0),
        rod_spacing=r.number("geometry.rod_spacing", ge=0),
        rail_angles_deg=r.triple("geometry.rail_angles_deg", default=list(PRISMATIC_RAIL_ANGLES_DEG)),
        tool_offset=r.number("geometry.tool_offset", default=0.0),
    )
    angles = sorted(a % 360.0 for a in geo.rail_angles_deg)
    gaps = [angles[1] - angles[0], angles[2] - angles[1], 360.0 - angles[2] + angles[0]]
    if min(gaps) < 30.0 or max(gaps) > 180.0 - 1e-9:
        r.fail("geometry.rail_angles_deg",
               f"must spread the rails around the base (gaps between 30 and 180 deg), got {list(geo.rail_angles_deg)}")
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
    mass = PrismaticMassProperties(
        carriage=Carriage(mass=r.number("mass_properties.carriage.mass", ge=0)),
        rod=rod, motor=motor,
        platform_mass=r.number("mass_properties.platform.mass", ge=0),
        payload_mass=r.number("mass_properties.payload.mass", ge=0, default=0.0),
    )

    fr = _friction(r, stribeck_velocity=0.01, smoothing_velocity=0.001)

    position = _position_limits(r, "m")
    if max(p[0] for p in position) >= min(p[1] for p in position):
        r.fail("limits.position", "the three carriages have no common range of motion, so the "
               f"platform cannot stand on the z axis; got {[list(p) for p in position]!r}")
    lim = PrismaticLimits(
        position=tuple(position),
        velocity=r.triple("limits.velocity", gt=0),
        acceleration=r.triple("limits.acceleration", gt=0),
        force=r.triple("limits.force", gt=0),
    )
    gravity = r.number("gravity", ge=0, default=9.80665)
    metadata = r.get("metadata", {})
    if not isinstance(metadata, dict):
        r.fail("metadata", f"must be a mapping, got {metadata!r}")
    return PrismaticRobotParameters(
        name=name.strip(), type="prismatic", joint_names=tuple(joints), geometry=geo, mass=mass,
        friction=fr, limits=lim, gravity=gravity, source=r.source, metadata=metadata)
