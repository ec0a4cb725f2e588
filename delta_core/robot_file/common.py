"""What every kind's robot file has: the top level (:class:`RobotParameters`: name, type,
joints, gravity, metadata and the kind's sections), the ``friction`` section, and the readers
of the parts both kinds share (the header, joint position limits, the spread of the chains).

A kind's schema module (:mod:`.rotary`, :mod:`.linear`) defines its ``geometry``,
``mass_properties`` and ``limits`` dataclasses (each with ``to_dict``) and parses them.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable

from delta_core.robot_file.bounds import Bound
from delta_core.robot_file.reader import Reader

#: Gravity when the file gives none (m/s^2).
STANDARD_GRAVITY = 9.80665

LENGTH = "a Delta robot (0.1 mm to 10 m)"

#: The plausibility bounds of the fields both kinds have, with the same unit (each kind's
#: ``BOUNDS`` holds them with its own rows).
SHARED_BOUNDS = {
    "gravity": Bound(0.0, 100.0, "m/s^2", "gravity (9.81 on Earth; 100 leaves room for centrifuge rigs)"),
    "geometry.platform_radius": Bound(0.0, 10.0, "m", f"the platform radius of {LENGTH}"),
    "mass_properties.motor.rotor_inertia": Bound(0.0, 1.0, "kg m^2",
                                                 "a servo motor rotor (a 100 kW motor has ~0.5 kg m^2)"),
    "mass_properties.motor.torque_constant": Bound(1e-4, 100.0, "N m/A", "a servo motor"),
    "mass_properties.platform.mass": Bound(0.0, 1000.0, "kg", "a Delta robot platform"),
    "mass_properties.payload.mass": Bound(0.0, 1000.0, "kg", "a Delta robot payload"),
}


@dataclass(frozen=True)
class Friction:
    """Per-joint friction: viscous + Coulomb with a Stribeck break-away term (rotary: N m s/rad,
    N m, rad/s; linear: N s/m, N, m/s)."""

    viscous: tuple              # per joint
    coulomb: tuple              # per joint
    static: tuple               # per joint (Stribeck break-away effort; = coulomb disables it)
    stribeck_velocity: float    # joint velocity of the Stribeck dip
    smoothing_velocity: float   # width of the smooth sign (0: exact sign)

    def to_dict(self) -> dict:
        """The ``friction`` section of the robot file."""
        return {"viscous": list(self.viscous), "coulomb": list(self.coulomb),
                "stribeck": {"static": list(self.static), "velocity": self.stribeck_velocity},
                "smoothing_velocity": self.smoothing_velocity}


@dataclass(frozen=True)
class RobotParameters:
    """Everything the stack knows about one robot, validated: the same top level for every
    kind; ``geometry``, ``mass`` and ``limits`` hold the kind's dataclasses (``type``:
    ``"rotary"`` or ``"linear"``)."""

    name: str
    type: str
    joint_names: tuple
    geometry: object
    mass: object
    friction: Friction
    limits: object
    gravity: float
    source: str = ""                          # where it was loaded from
    metadata: dict = field(default_factory=dict, compare=False)

    def replace(self, **changes) -> "RobotParameters":
        """A copy with top-level fields replaced (see :func:`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The robot file's YAML structure (the inverse of :func:`delta_core.robot_file.parse_robot`)."""
        d = {"name": self.name, "type": self.type, "joint_names": list(self.joint_names),
             "geometry": self.geometry.to_dict(), "mass_properties": self.mass.to_dict(),
             "friction": self.friction.to_dict(), "limits": self.limits.to_dict(),
             "gravity": self.gravity}
        if self.metadata:
            d["metadata"] = self.metadata
        return d


@dataclass(frozen=True)
class RobotFileKind:
    """One kind's robot file, as :data:`delta_core.robot_file.TYPES` registers it: its ``type``,
    ``schema`` (every field it may hold), plausibility ``bounds`` and ``parse`` (Reader ->
    RobotParameters)."""

    type: str
    schema: dict
    bounds: dict
    parse: Callable


def read_header(r: Reader) -> tuple:
    """``(name, joint_names)``: a non-empty name and three different non-empty joint names."""
    name = r.get("name")
    if not isinstance(name, str) or not name.strip():
        r.fail("name", f"must be a non-empty string, got {name!r}")
    joints = r.get("joint_names")
    if (not isinstance(joints, (list, tuple)) or len(joints) != 3
            or not all(isinstance(j, str) and j.strip() for j in joints)):
        r.fail("joint_names", f"must be a list of 3 non-empty names, got {joints!r}")
    if len(set(joints)) != 3:
        r.fail("joint_names", f"must be 3 different names, got {joints!r}")
    return name.strip(), tuple(joints)


def read_metadata(r: Reader) -> dict:
    """The free-form ``metadata`` mapping (identification results, provenance)."""
    metadata = r.get("metadata", {})
    if not isinstance(metadata, dict):
        r.fail("metadata", f"must be a mapping, got {metadata!r}")
    return metadata


def read_gravity(r: Reader) -> float:
    """``gravity`` (m/s^2, >= 0, default :data:`STANDARD_GRAVITY`)."""
    return r.number("gravity", ge=0, default=STANDARD_GRAVITY)


def check_spread(r: Reader, path: str, angles: tuple, what: str) -> None:
    """The three chain (rail) angles (deg) must spread ``what`` around the base: gaps between
    neighbours of 30 to 180 deg."""
    a = sorted(x % 360.0 for x in angles)
    gaps = [a[1] - a[0], a[2] - a[1], 360.0 - a[2] + a[0]]
    if min(gaps) < 30.0 or max(gaps) > 180.0 - 1e-9:
        r.fail(path, f"must spread the {what} around the base (gaps between 30 and 180 deg), got {list(angles)}")


def read_friction(r: Reader, stribeck_velocity: float, smoothing_velocity: float) -> Friction:
    """The ``friction`` section (either kind; the defaults of the two velocities differ)."""
    coulomb = r.triple("friction.coulomb", ge=0, default=0.0)
    return Friction(
        viscous=r.triple("friction.viscous", ge=0, default=0.0),
        coulomb=coulomb,
        static=r.triple("friction.stribeck.static", ge=0, default=list(coulomb)),
        stribeck_velocity=r.number("friction.stribeck.velocity", gt=0, default=stribeck_velocity),
        smoothing_velocity=r.number("friction.smoothing_velocity", ge=0, default=smoothing_velocity),
    )


def read_position_limits(r: Reader, unit: str) -> list:
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


def read_per_arm(r: Reader, fields: dict, shared: dict) -> tuple | None:
    """``geometry.per_arm`` (optional): three mappings, one per chain, each overriding some of
    the shared geometry ``fields`` for that chain (``docs/robot_file.md``, "Per-arm geometry").

    ``fields``: name -> (Bound, ``"gt0"``/``"ge0"``/``""`` rule); ``shared``: name -> the shared
    value (None for a field with no shared value, e.g. ``joint_offset``: 0). Returns three
    dicts holding every field of ``fields`` (the chain's own value or the shared one), or None
    when the file has no ``per_arm``. Errors name the chain and field:
    ``geometry.per_arm[1].rod_length must be > 0, got -0.2``.
    """
    path = "geometry.per_arm"
    v = r.get(path, None)
    if v is None:
        return None
    if not isinstance(v, (list, tuple)) or len(v) != 3:
        r.fail(path, f"must be a list of 3 mappings (one per chain) of {', '.join(fields)}, got {v!r}")
    out = []
    for k, entry in enumerate(v):
        where = f"{path}[{k}]"
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            r.fail(where, f"must be a mapping of {', '.join(fields)}, got {entry!r}")
        arm = {}
        for name in entry:
            if name not in fields:
                r.fail(f"{where}.{name}", f"is not a known per-arm field (known here: {', '.join(fields)})")
        for name, (bound, rule) in fields.items():
            if name not in entry:
                arm[name] = 0.0 if shared.get(name) is None else float(shared[name])
                continue
            x = r.value(f"{where}.{name}", entry[name])
            if rule == "gt0" and not x > 0:
                r.fail(f"{where}.{name}", f"must be > 0, got {x:g}")
            if rule == "ge0" and not x >= 0:
                r.fail(f"{where}.{name}", f"must be >= 0, got {x:g}")
            if not bound.lo <= x <= bound.hi:
                r.fail(f"{where}.{name}", f"must lie within [{bound.lo:g}, {bound.hi:g}] {bound.unit} "
                       f"(plausible for {bound.why}), got {x:g}")
            arm[name] = x
        out.append(arm)
    return tuple(out)
