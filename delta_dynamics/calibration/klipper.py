"""Klipper printer configurations (``kinematics: delta`` and ``rotary_delta``) in and out of
our robot file.

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

Rotary delta (``shoulder_radius``, ``shoulder_height`` in ``[printer]``; per stepper
``upper_arm_length``, ``lower_arm_length``, ``angle`` (defaults 30, 150, 270),
``position_endstop``: the nozzle height on the axis at the arm's endstop, ``gear_ratio``):
Klipper's elbow is ((shoulder_radius + L cos s) u_i, shoulder_height + L sin s) with s the arm
angle positive up; ours C_i - r u_i = (R_i - r_i + L_i cos theta_i) u_i - L_i sin theta_i e_z with
theta positive down and base_link at the shoulders' plane. So ``base_radius_i`` = shoulder_radius
+ r, theta = -s, z_ours = z_klipper - shoulder_height; joint positions the arm's turn from its
endstop (Klipper's stable position times the step angle, positive down), joint offset o_i the
arm angle theta at the endstop (the nozzle at (0, 0, position_endstop)).

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
#: Klipper's default arm angles of a rotary delta (deg), stepper a, b, c.
ROTARY_ANGLES = (30.0, 150.0, 270.0)
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


@dataclass(frozen=True)
class KlipperRotaryDelta:
    """A rotary delta as Klipper describes it (mm, deg): ``shoulder_radius`` and
    ``shoulder_height`` ([printer]); per stepper a, b, c ``upper_arms``, ``lower_arms``,
    ``angles``, ``endstops`` (position_endstop: the nozzle's height on the axis when the arm
    is at its endstop) and the gear ratio (motor turns per arm turn)."""

    shoulder_radius: float
    shoulder_height: float
    upper_arms: tuple
    lower_arms: tuple
    angles: tuple
    endstops: tuple
    gear_ratio: float


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


def parse_klipper(text: str, source: str = "printer.cfg"):
    """The delta of a Klipper config's text: :class:`KlipperDelta` (``kinematics: delta``) or
    :class:`KlipperRotaryDelta` (``rotary_delta``); KlipperError for another kinematics or a
    missing or bad option."""
    cp = _sections(text, source)
    if not cp.has_section("printer"):
        raise KlipperError(f"{source}: no [printer] section")
    kin = cp.get("printer", "kinematics", fallback="").strip()
    if kin == "rotary_delta":
        return _parse_rotary(cp, source)
    if kin != "delta":
        raise KlipperError(f"{source}: [printer] kinematics is {kin or 'missing'!r}; this tool maps "
                           f"'delta' and 'rotary_delta'")
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


def _gear_ratio(cp, source, section) -> float:
    """Klipper's ``gear_ratio: 107:16, 60:16`` as one number (motor turns per arm turn); 1 if absent."""
    text = cp.get(section, "gear_ratio", fallback="").strip()
    if not text:
        return 1.0
    ratio = 1.0
    for part in text.split(","):
        try:
            a, b = (float(v) for v in part.split(":"))
        except ValueError:
            raise KlipperError(f"{source}: [{section}] gear_ratio must be pairs a:b, got {text!r}") from None
        if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
            raise KlipperError(f"{source}: [{section}] gear_ratio must be positive pairs a:b, got {text!r}")
        ratio *= a / b
    return ratio


def _parse_rotary(cp, source) -> "KlipperRotaryDelta":
    sr = _number(cp, source, "printer", "shoulder_radius", above=0.0)
    sh = _number(cp, source, "printer", "shoulder_height", above=0.0)
    ua = _number(cp, source, "stepper_a", "upper_arm_length", above=0.0)
    la = _number(cp, source, "stepper_a", "lower_arm_length", above=0.0)
    end_a = _number(cp, source, "stepper_a", "position_endstop")
    uas, las, angles, ends = [], [], [], []
    for s, dflt in zip("abc", ROTARY_ANGLES):
        sec = f"stepper_{s}"
        uas.append(_number(cp, source, sec, "upper_arm_length", ua, above=0.0))
        las.append(_number(cp, source, sec, "lower_arm_length", la, above=0.0))
        angles.append(_number(cp, source, sec, "angle", dflt))
        ends.append(_number(cp, source, sec, "position_endstop", end_a))
    return KlipperRotaryDelta(sr, sh, tuple(uas), tuple(las), tuple(angles), tuple(ends),
                              _gear_ratio(cp, source, "stepper_a"))


def _copy(d: dict) -> dict:
    return {key: (_copy(v) if isinstance(v, dict) else v) for key, v in d.items()}


def robot_from_klipper_rotary(k: KlipperRotaryDelta, template, name: str = "klipper_rotary_delta",
                              source: str = "") -> dict:
    """A rotary robot file (mapping) of Klipper rotary delta ``k`` (``docs/calibration.md``):
    ``base_link`` at the shoulders' plane (Klipper's bed at z = -shoulder_height), the nozzle as
    the platform centre; per arm base_radius = shoulder_radius + the template's platform radius,
    upper- and forearm lengths; joint positions: the arm's turn from its endstop (rad, positive
    down), joint offsets the arm angles at the endstops. ``template``: a loaded rotary robot
    file (masses, friction, drive limits)."""
    d = _copy(template.to_dict())
    g = d["geometry"]
    r = float(g["platform_radius"])
    g.pop("per_arm", None)
    R = k.shoulder_radius / 1000.0 + r
    g["base_radius"] = R
    g["upper_arm_length"] = float(np.mean(k.upper_arms)) / 1000.0
    g["forearm_length"] = float(np.mean(k.lower_arms)) / 1000.0
    g["chain_angles_deg"] = list(k.angles)
    offsets = []
    for i in range(3):
        L, lk = k.upper_arms[i] / 1000.0, k.lower_arms[i] / 1000.0
        z = (k.endstops[i] - k.shoulder_height) / 1000.0
        # arm i's angle (positive down) with the nozzle at (0, 0, z): the closed form of chains.py
        px, pz = -(R - r), z
        kk = (px * px + pz * pz + L * L - lk * lk) / (2.0 * L)
        ratio = kk / math.hypot(px, pz)
        if abs(ratio) > 1.0:
            raise KlipperError(f"{source}: [stepper_{'abc'[i]}] position_endstop {k.endstops[i]:g} is out of "
                               f"the arm's reach")
        offsets.append(-math.atan2(pz, px) - math.acos(ratio))
    g["per_arm"] = [{"joint_offset": offsets[i], "base_radius": R, "upper_arm_length": k.upper_arms[i] / 1000.0,
                     "forearm_length": k.lower_arms[i] / 1000.0, "platform_radius": r} for i in range(3)]
    d["limits"]["position"] = [[0.0, min(math.pi, math.pi / 2 - o)] for o in offsets]
    # the template's bodies scaled to the new lengths (com along the arm, inertia with length^2)
    mp = d["mass_properties"]
    mp.pop("full_body", None)
    sa = g["upper_arm_length"] / template.geometry.upper_arm_length
    sf = g["forearm_length"] / template.geometry.forearm_length
    mp["upper_arm"]["com_distance"] *= sa
    mp["upper_arm"]["inertia"] *= sa * sa
    mp["forearm"]["inertia"] *= sf * sf
    d["mass_properties"]["motor"]["gear_ratio"] = k.gear_ratio
    d["name"], d["type"] = name, "rotary"
    meta = dict(d.get("metadata") or {})
    meta["klipper"] = {"source": source, "joint_positions": "arm turn from its endstop, rad, positive down",
                       "shoulder_height_mm": k.shoulder_height}
    d["metadata"] = meta
    return d


def klipper_from_robot_rotary(m) -> tuple:
    """``(KlipperRotaryDelta, notes)`` of the model of a rotary robot file: the inverse of
    :func:`robot_from_klipper_rotary` (the endstop at the top of each joint's range; the
    shoulder height from ``metadata.klipper.shoulder_height_mm``)."""
    robot, ch = m.robot, m.chains
    p = ch.parameters(robot)
    meta = (robot.metadata or {}).get("klipper") or {}
    sh = meta.get("shoulder_height_mm")
    if not isinstance(sh, (int, float)) or isinstance(sh, bool):
        raise KlipperError(f"{robot.source or robot.name}: metadata.klipper.shoulder_height_mm is missing: our "
                           f"frame has no bed, so Klipper's shoulder_height is not known (import with from-klipper)")
    radii = ch.block(p, "base_radius") - ch.block(p, "platform_radius")
    notes = []
    if float(radii.max() - radii.min()) > 1e-9:
        notes.append(f"shoulder radii differ by {float(radii.max() - radii.min()) * 1000:.4f} mm; Klipper has one "
                     f"shoulder_radius: their mean is written")
    q_top = np.array([[lim[0] for lim in robot.limits.position]])
    S, rho = ch.spheres(p, q_top)
    ends = [float((S[0, i, 2] - math.sqrt(rho[i] ** 2 - S[0, i, 0] ** 2 - S[0, i, 1] ** 2)) * 1000.0 + sh)
            for i in range(3)]
    return KlipperRotaryDelta(float(radii.mean()) * 1000.0, float(sh),
                              tuple(float(v) * 1000.0 for v in ch.block(p, "upper_arm_length")),
                              tuple(float(v) * 1000.0 for v in ch.block(p, "forearm_length")),
                              tuple(float(math.degrees(a)) for a in ch.block(p, "chain_angle")), tuple(ends),
                              robot.mass.motor.gear_ratio), notes


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
    if m.kind == "rotary":
        return klipper_from_robot_rotary(m)
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


def format_klipper(k, notes=(), header: str = "") -> str:
    """The ``[printer]`` and ``[stepper_*]`` values of ``k`` (either kind) as Klipper config text."""
    lines = [f"# {header}"] if header else []
    lines += [f"# note: {n}" for n in notes]
    if isinstance(k, KlipperRotaryDelta):
        lines += ["[printer]", "kinematics: rotary_delta", f"shoulder_radius: {k.shoulder_radius:.6f}",
                  f"shoulder_height: {k.shoulder_height:.6f}", ""]
        for i, s in enumerate("abc"):
            lines += [f"[stepper_{s}]", f"position_endstop: {k.endstops[i]:.6f}",
                      f"upper_arm_length: {k.upper_arms[i]:.6f}", f"lower_arm_length: {k.lower_arms[i]:.6f}",
                      f"angle: {k.angles[i]:.6f}", f"gear_ratio: {k.gear_ratio:.9g}:1", ""]
        return "\n".join(lines)
    lines += ["[printer]", "kinematics: delta", f"delta_radius: {k.radius:.6f}", ""]
    for i, s in enumerate("abc"):
        lines += [f"[stepper_{s}]", f"position_endstop: {k.endstops[i]:.6f}", f"arm_length: {k.arms[i]:.6f}",
                  f"angle: {k.angles[i]:.6f}", f"rotation_distance: {k.rotation_distance:.6g}", ""]
    return "\n".join(lines)
