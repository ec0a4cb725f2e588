"""Plausibility bounds of the robot file's numbers: the range a value can take on a real
Delta robot, from a centimetre-scale laboratory robot to a large palletiser, with a wide
margin either side.

The loader's rules (``> 0``, ``>= 0``, ``com_ratio < 1``, ...) say what the model can
compute with; these bounds catch what it should not be given: a typo (``mass: 2000`` for
2.0), a value in the wrong unit (millimetres for metres), ``1e308``. Both are checked where
:class:`delta_core.robot_file._Reader` reads a number, the rule first, then the bound::

    x.yaml: mass_properties.platform.mass must be <= 1000 kg (plausibility bound for a
    Delta robot platform), got 1e+308

:data:`BOUNDS` maps a field's path (as in the robot file, per-joint lists by the list's
path) to a :class:`Bound`. A field not in the table gets :data:`DEFAULT_BOUND`; add a row
for every new numeric field (``test/bad_input/test_robot_files.py`` checks that every
numeric field of the schema has one, and ``docs/robot_file.md`` lists them all: regenerate
its table with :func:`markdown_table`).

Example::

    >>> why_implausible("mass_properties.platform.mass", 1e308)
    'must be <= 1000 kg (plausibility bound for a Delta robot platform), got 1e+308'
    >>> why_implausible("mass_properties.platform.mass", 2.0) is None
    True
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """lo <= value <= hi, in ``unit``; ``why`` completes "plausibility bound for ..."."""

    lo: float
    hi: float
    unit: str
    why: str


_LENGTH = "a Delta robot (0.1 mm to 10 m)"
_PER_JOINT_FRICTION = "the friction of one Delta arm joint"

#: field path -> Bound. Per-joint lists: every element is checked against its list's row.
BOUNDS = {
    "gravity": Bound(0.0, 100.0, "m/s^2", "gravity (9.81 on Earth; 100 leaves room for centrifuge rigs)"),
    "geometry.base_radius": Bound(1e-4, 10.0, "m", f"the base radius of {_LENGTH}"),
    "geometry.platform_radius": Bound(0.0, 10.0, "m", f"the platform radius of {_LENGTH}"),
    "geometry.upper_arm_length": Bound(1e-4, 10.0, "m", f"an upper arm of {_LENGTH}"),
    "geometry.forearm_length": Bound(1e-4, 20.0, "m", f"a forearm of {_LENGTH}"),
    "geometry.forearm_spacing": Bound(0.0, 10.0, "m", f"the forearm bar spacing of {_LENGTH}"),
    "geometry.chain_angles_deg": Bound(-720.0, 720.0, "deg",
                                       "a chain angle (more than two turns is a typo)"),
    "mass_properties.upper_arm.mass": Bound(0.0, 1000.0, "kg", "a Delta robot upper arm"),
    "mass_properties.upper_arm.com_distance": Bound(0.0, 10.0, "m", "an upper arm's centre of mass"),
    "mass_properties.upper_arm.inertia": Bound(0.0, 1e4, "kg m^2",
                                               "an upper arm (1000 kg over 10 m is 8300 kg m^2)"),
    "mass_properties.motor.rotor_inertia": Bound(0.0, 1.0, "kg m^2",
                                                 "a servo motor rotor (a 100 kW motor has ~0.5 kg m^2)"),
    "mass_properties.motor.gear_ratio": Bound(0.01, 1000.0, "", "a robot joint gear (harmonic drives "
                                              "reach 160, multi-stage gears a few hundred)"),
    "mass_properties.motor.torque_constant": Bound(1e-4, 100.0, "N m/A", "a servo motor"),
    "mass_properties.forearm.mass": Bound(0.0, 1000.0, "kg", "a Delta robot forearm"),
    "mass_properties.forearm.com_ratio": Bound(0.0, 1.0, "", "a fraction of the forearm length"),
    "mass_properties.forearm.inertia": Bound(0.0, 1e4, "kg m^2",
                                             "a forearm (1000 kg over 10 m is 8300 kg m^2)"),
    "mass_properties.platform.mass": Bound(0.0, 1000.0, "kg", "a Delta robot platform"),
    "mass_properties.payload.mass": Bound(0.0, 1000.0, "kg", "a Delta robot payload"),
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

_LINEAR = "a linear Delta robot (0.1 mm to 10 m)"
_PER_CARRIAGE_FRICTION = "the friction of one carriage on its rail"

#: The rows of a linear (prismatic) Delta's robot file: its own fields, and the shared paths
#: whose unit differs (carriage positions in m, forces in N).
PRISMATIC_BOUNDS = {
    **{k: v for k, v in BOUNDS.items() if k in ("gravity", "geometry.platform_radius",
                                                  "mass_properties.platform.mass", "mass_properties.payload.mass",
                                                  "mass_properties.motor.rotor_inertia",
                                                  "mass_properties.motor.torque_constant")},
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

#: Applies to a numeric field without a row in :data:`BOUNDS`.
DEFAULT_BOUND = Bound(-1e6, 1e6, "", "any robot-file number (this field has no row in "
                                     "delta_core/plausibility.py yet)")

#: Lumped parameters an identified robot file carries in
#: ``metadata.identified.lumped_parameters`` (checked by the model that uses them), by kind.
LUMPED_BOUNDS = {
    "mass": Bound(0.0, 5000.0, "kg", "the lumped masses of a Delta robot (platform, payload "
                                     "and three forearms)"),
    "inertia": Bound(0.0, 1e7, "kg m^2", "an arm's lumped inertia with its reflected rotor"),
    "moment": Bound(-1e4, 1e4, "kg m", "an arm's lumped first moment of mass"),
    "viscous": BOUNDS["friction.viscous"],
    "coulomb": BOUNDS["friction.coulomb"],
}

#: The same for the lumped parameters of a linear (prismatic) Delta, by kind (masses in kg, the
#: rods' rotational correction m_r in kg, friction per carriage in N s/m and N).
PRISMATIC_LUMPED_BOUNDS = {
    "mass": Bound(0.0, 5000.0, "kg", "the lumped masses of a linear Delta robot (platform, payload, "
                                     "rods, carriages and reflected rotors)"),
    "rod_rotation": Bound(-500.0, 500.0, "kg", "a rod pair's rotational correction m_r"),
    "viscous": PRISMATIC_BOUNDS["friction.viscous"],
    "coulomb": PRISMATIC_BOUNDS["friction.coulomb"],
}


def bound_for(path: str, table: dict | None = None) -> Bound:
    """The :class:`Bound` of a field (``path`` with or without a ``[k]`` index) in ``table``
    (default :data:`BOUNDS`, the rotary Delta's; :data:`PRISMATIC_BOUNDS` for a linear one)."""
    key = path.split("[", 1)[0]
    return (BOUNDS if table is None else table).get(key, DEFAULT_BOUND)


def _fmt(v: float, unit: str) -> str:
    return f"{v:g} {unit}" if unit else f"{v:g}"


def check_bound(bound: Bound, value: float) -> str | None:
    """The rule ``value`` breaks (``"must be <= ..., got ..."``), or None within ``bound``."""
    v = float(value)
    if v > bound.hi:
        return f"must be <= {_fmt(bound.hi, bound.unit)} (plausibility bound for {bound.why}), got {v:g}"
    if v < bound.lo:
        return f"must be >= {_fmt(bound.lo, bound.unit)} (plausibility bound for {bound.why}), got {v:g}"
    if not math.isfinite(v):
        return f"must be finite, got {v}"
    return None


def why_implausible(path: str, value: float, table: dict | None = None) -> str | None:
    """The plausibility rule ``value`` breaks for the field ``path``, or None."""
    return check_bound(bound_for(path, table), value)


def markdown_table(table: dict | None = None) -> str:
    """The table of :data:`BOUNDS` (or ``table``) as ``docs/robot_file.md`` shows it."""
    rows = ["| field | min | max | unit | plausibility bound for |", "|---|---|---|---|---|"]
    for path, b in (BOUNDS if table is None else table).items():
        rows.append(f"| `{path}` | {b.lo:g} | {b.hi:g} | {b.unit or '–'} | {b.why} |")
    return "\n".join(rows)
