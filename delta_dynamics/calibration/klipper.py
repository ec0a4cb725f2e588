"""Klipper printer configurations (``kinematics: delta``) in and out of our robot file.

Klipper's linear delta (its config reference: ``delta_radius`` in ``[printer]``; per stepper
``position_endstop``, ``arm_length``, ``angle``, ``rotation_distance``) in millimetres and
degrees, its frame: x, y, z with the origin at the bed's centre, z = 0 on the bed, the point it
positions is the nozzle. Ours: ``base_link`` on the bed (the same axes), metres, the tool
point Q = X - tool_offset e_z. The mapping (``docs/calibration.md``, "Klipper"):

* Klipper folds the effector's joint offset into ``delta_radius``: the horizontal distance
  between a carriage joint and the nozzle's axis with the arms vertical-projected, i.e. our
  R_i - r. We keep the platform radius r of a template robot file and write
  ``rail_radius_i = delta_radius + r`` (per rail in ``geometry.per_arm``).
* ``arm_length`` of stepper i is our ``rod_length`` of rail i; ``angle`` our ``rail_angles_deg``
  (Klipper's defaults 210, 330, 90 are ours); ``tool_offset`` is 0 (the nozzle is the platform
  centre of this model).
* Joint positions: carriage travel from its endstop, m, positive up (0 at the endstop): Klipper's
  *stable position* (steps from the endstop, positive down) times minus the step distance.
  Then the height of carriage i's sphere centre is q_i + o_i with the joint offset
  o_i = position_endstop_i + sqrt(arm_length_i^2 - delta_radius^2) (Klipper's ``abs_endstops``),
  written to ``geometry.per_arm[i].joint_offset``; carriage limits [lo_i, 0].
* ``rotation_distance`` (mm of carriage travel per motor revolution) is
  ``mass_properties.motor.travel_per_revolution`` (m).

:func:`to_klipper` inverts it; our robot files may have per-rail radii, which Klipper cannot
hold (one ``delta_radius``): it writes their mean and says how far they spread.

>>> import textwrap
>>> cfg = textwrap.dedent('''
...     [stepper_a]
...     position_endstop: 297.05
...     arm_length: 333.0
...     rotation_distance: 40
...     [stepper_b]
...     [stepper_c]
...     [printer]
...     kinematics: delta
...     delta_radius: 174.75
... ''')
>>> k = parse_klipper(cfg, "printer.cfg")
>>> k.radius, k.arms, k.angles, k.endstops
(174.75, (333.0, 333.0, 333.0), (210.0, 330.0, 90.0), (297.05, 297.05, 297.05))
"""
from __future__ import annotations

import configparser
import math
from dataclasses import dataclass

import numpy as np

#: Bytes a Klipper config may have (a real printer.cfg is a few tens of kB).
MAX_CONFIG_BYTES = 1 << 20
#: Klipper's default tower angles (deg), stepper a, b, c.
DEFAULT_ANGLES = (210.0, 330.0, 90.0)
#: Klipper's SAVE_CONFIG block marker; its ``#*# `` lines override the file above.
AUTOSAVE = "#*# <---------------------- SAVE_CONFIG ---------------------->"


class KlipperError(ValueError):
    """A Klipper config this tool cannot map (the message is one line naming file and option)."""


@dataclass(frozen=True)
class KlipperDelta:
    """A linear delta as Klipper describes it (mm, deg): ``radius`` (delta_radius), per stepper
    a, b, c ``arms``, ``angles``, ``endstops`` (position_endstop), ``rotation_distance`` and
    ``print_radius``."""

    radius: float
    arms: tuple
    angles: tuple
    endstops: tuple
    rotation_distance: float
    print_radius: float

    @property
    def abs_endstops(self) -> tuple:
        """Height of each carriage's sphere centre at its endstop (mm): Klipper's ``abs_endstops``."""
        return tuple(e + math.sqrt(a * a - self.radius ** 2) for e, a in zip(self.endstops, self.arms))


def _sections(text: str, source: str) -> configparser.RawConfigParser:
    main, _, saved = text.partition(AUTOSAVE)
    cp = configparser.RawConfigParser(inline_comment_prefixes=("#", ";"), strict=False, interpolation=None)
    try:
        cp.read_string(main, source)
        if saved:
            lines = [ln[4:] if ln.startswith("#*# ") else ln[3:] if ln.startswith("#*#") else ln
                     for ln in saved.splitlines()]
            cp.read_string("\n".join(lines), source + " (SAVE_CONFIG)")
    except configparser.Error as e:
        raise KlipperError(f"{source}: not a Klipper config: {' '.join(str(e).split())}") from None
    return cp


def _number(cp, source, section, option, default=None, above=None) -> float:
    if not cp.has_section(section) or not cp.has_option(section, option):
        if default is None:
            raise KlipperError(f"{source}: [{section}] {option} is missing")
        return float(default)
    text = cp.get(section, option)
    try:
        v = float(text)
    except ValueError:
        raise KlipperError(f"{source}: [{section}] {option} must be a number, got {text!r}") from None
    if not math.isfinite(v) or (above is not None and not v > above):
        raise KlipperError(f"{source}: [{section}] {option} must be a finite number"
                           + (f" above {above:g}" if above is not None else "") + f", got {text!r}")
    return v


def parse_klipper(text: str, source: str = "printer.cfg") -> KlipperDelta:
    """The delta of a Klipper config's text (:class:`KlipperDelta`); KlipperError for another
    kinematics or a missing or bad option."""
    cp = _sections(text, source)
    if not cp.has_section("printer"):
        raise KlipperError(f"{source}: no [printer] section")
    kin = cp.get("printer", "kinematics", fallback="").strip()
    if kin != "delta":
        raise KlipperError(f"{source}: [printer] kinematics is {kin or 'missing'!r}; this tool maps "
                           f"'delta' (linear delta printers)")
    radius = _number(cp, source, "printer", "delta_radius", above=0.0)
    arm_a = _number(cp, source, "stepper_a", "arm_length", above=radius)
    end_a = _number(cp, source, "stepper_a", "position_endstop")
    arms, angles, ends = [], [], []
    for s, dflt in zip("abc", DEFAULT_ANGLES):
        sec = f"stepper_{s}"
        arms.append(_number(cp, source, sec, "arm_length", arm_a, above=radius))
        angles.append(_number(cp, source, sec, "angle", dflt))
        ends.append(_number(cp, source, sec, "position_endstop", end_a))
    rd = _number(cp, source, "stepper_a", "rotation_distance", above=0.0)
    pr = _number(cp, source, "printer", "print_radius", radius, above=0.0)
    return KlipperDelta(radius, tuple(arms), tuple(angles), tuple(ends), rd, pr)


def robot_from_klipper(k: KlipperDelta, template: dict, name: str = "klipper_delta", source: str = "") -> dict:
    """A linear robot file (mapping) of Klipper delta ``k``: geometry, joint offsets, carriage
    limits and the drive's travel from ``k`` (module docstring), masses, friction and the other
    limits from ``template`` (a linear robot file's mapping)."""
    d = {key: (dict(v) if isinstance(v, dict) else v) for key, v in template.items()}
    g = dict(d["geometry"])
    r = float(g["platform_radius"])
    g.pop("per_arm", None)
    g["rail_radius"] = k.radius / 1000.0 + r
    g["rod_length"] = float(np.mean(k.arms)) / 1000.0
    g["rail_angles_deg"] = list(k.angles)
    g["tool_offset"] = 0.0
    g["per_arm"] = [{"joint_offset": a / 1000.0, "rail_radius": k.radius / 1000.0 + r, "rod_length": arm / 1000.0}
                    for a, arm in zip(k.abs_endstops, k.arms)]
    d["geometry"] = g
    lims = dict(d["limits"])
    pos = []
    for i in range(3):
        reach = k.radius + k.print_radius
        low = math.sqrt(k.arms[i] ** 2 - reach ** 2) if k.arms[i] > reach else 0.0
        pos.append([-(k.abs_endstops[i] - low) / 1000.0, 0.0])     # nozzle on the bed anywhere in print_radius
    lims["position"] = pos
    d["limits"] = lims
    mp = {key: (dict(v) if isinstance(v, dict) else v) for key, v in d["mass_properties"].items()}
    motor = dict(mp["motor"])
    motor["travel_per_revolution"] = k.rotation_distance / 1000.0
    mp["motor"] = motor
    d["mass_properties"] = mp
    d["name"] = name
    d["type"] = "linear"
    meta = dict(d.get("metadata") or {})
    meta["klipper"] = {"source": source, "joint_positions": "carriage travel from its endstop, m, positive up",
                       "delta_radius_mm": k.radius, "print_radius_mm": k.print_radius}
    d["metadata"] = meta
    return d


def klipper_from_robot(m) -> tuple:
    """``(KlipperDelta, notes)`` of the model ``m`` of a linear robot file (its chain model's
    parameters): the inverse of :func:`robot_from_klipper`; ``notes`` lists what Klipper
    cannot hold."""
    robot = m.robot
    if m.kind != "linear":
        raise KlipperError(f"{robot.source or robot.name}: a {m.kind} robot; Klipper's kinematics: delta "
                           f"is a linear delta")
    CHAINS = m.chains
    p = CHAINS.parameters(robot)
    radii = CHAINS.block(p, "rail_radius") - p[CHAINS.index("platform_radius")]
    notes = []
    spread = float(radii.max() - radii.min())
    if spread > 1e-9:
        notes.append(f"rail radii differ by {spread * 1000:.4f} mm; Klipper has one delta_radius: their mean is written")
    radius = float(radii.mean()) * 1000.0
    arms = tuple(float(v) * 1000.0 for v in CHAINS.block(p, "rod_length"))
    hi = [lim[1] for lim in robot.limits.position]
    tool = CHAINS.tool_offset(p)
    abs_end = [(o + h - tool) * 1000.0 for o, h in zip(CHAINS.block(p, "joint_offset"), hi)]
    ends = tuple(float(a - math.sqrt(arm * arm - radius * radius)) for a, arm in zip(abs_end, arms))
    angles = tuple(float(math.degrees(a)) for a in CHAINS.block(p, "rail_angle"))
    rd = robot.mass.motor.travel_per_revolution * 1000.0
    return KlipperDelta(radius, arms, angles, ends, rd, radius), notes


def format_klipper(k: KlipperDelta, notes=(), header: str = "") -> str:
    """The ``[printer]`` and ``[stepper_*]`` values of ``k`` as Klipper config text."""
    lines = [f"# {header}"] if header else []
    lines += [f"# note: {n}" for n in notes]
    lines += ["[printer]", "kinematics: delta", f"delta_radius: {k.radius:.6f}", ""]
    for i, s in enumerate("abc"):
        lines += [f"[stepper_{s}]", f"position_endstop: {k.endstops[i]:.6f}", f"arm_length: {k.arms[i]:.6f}",
                  f"angle: {k.angles[i]:.6f}", f"rotation_distance: {k.rotation_distance:.6g}", ""]
    return "\n".join(lines)
