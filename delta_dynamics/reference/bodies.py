"""The rigid bodies of a rotary Delta robot, for the models that treat every body on its own
(Staicu's recursive model, the multibody simulator, MuJoCo) rather than lumping them (Asadi's
explicit model of the rotary kind).

Per chain i: the upper arm (crank) on the motor shaft, the elbow block (the short link of the
parallelogram at the elbow, along the elbow axis), two parallel bars, the platform block (the
short link at the platform end); and the platform. :func:`body_set` gives their masses,
centres of mass and principal inertias from a robot file. With the robot file's optional
``mass_properties.full_body`` section they are taken from it (``docs/robot_file.md``: bar
mass, COM ratio and tensor; each block's mass and tensor; the arm's and the platform's
tensors; what it leaves out is derived as below). Without it they are derived from the lumped
fields, on the explicit model's assumptions:

* upper arm: mass ``upper_arm.mass``, COM ``upper_arm.com_distance`` from the motor axis,
  inertia ``upper_arm.inertia`` about the axes perpendicular to the arm (a slender bar:
  I_yy = I_zz), ``1e-3`` of it about the arm's own axis;
* each bar: half the forearm mass, COM at ``forearm.com_ratio`` of its length from the elbow,
  half the forearm's dominant inertia about its perpendicular axes, ``1e-3`` of it about its
  own axis (so the two bars together have the forearm's inertia about their common COM
  when the spacing term is left out, as the explicit model does);
* blocks: massless;
* platform: ``platform.mass + payload.mass``, the inertia of a uniform disc of radius
  ``platform_radius`` (its orientation never changes, so this only matters to plants whose
  constraints are compliant, such as MuJoCo).

Body frames: upper arm: x from the motor axis to the elbow, y along the motor axis (the
chain's +y', ``docs/conventions.md``), z = x x y. Bar: x from the elbow to the platform joint,
z along the tilt axis (the axis of the revolute joints between the blocks and the bars, normal
to the parallelogram's plane), y = z x x (in that plane; +y' when the forearm is not tilted):
the frame of the URDF's ``forearm_i{a,b}_link``. Blocks: x along the elbow axis (+y'), z
along the tilt axis, y = z x x; origin at the block's -y' end, COM at the middle (the elbow
point C_i, resp. the platform joint A_i); the platform block keeps the elbow block's
orientation. Platform: the axes of ``base_link``, COM at the platform centre. Every inertia
is principal in its body frame, about the body's COM.

>>> bs = body_set(__import__("delta_core.robot_file", fromlist=["load_robot"]).load_robot("nt_robot"))
>>> round(bs.bar.mass, 3), round(bs.upper_arm.com, 4), bs.source
(0.201, 0.1563, 'derived from the lumped robot-file fields')
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from delta_core.robot_file import RobotParameters

AXIAL_FRACTION = 1e-3          # inertia about a slender body's own axis, as a fraction of the others


@dataclass(frozen=True)
class RigidBody:
    """One body: ``mass`` (kg), ``inertia`` (Ixx, Iyy, Izz) principal moments about its COM in
    its body frame (kg m^2), ``com`` (m, along its x axis from its first joint), ``length``
    (m, between its two joints along x; 0 for the platform)."""

    mass: float
    inertia: tuple
    com: float
    length: float


@dataclass(frozen=True)
class BodySet:
    """The moving bodies of one chain (the three chains are alike) and the platform."""

    upper_arm: RigidBody
    rotor_inertia: float       # kg m^2: the motor rotor reflected to the arm (gear_ratio^2 I_rotor)
    bar: RigidBody             # one of the two parallel bars
    bar_spacing: float         # m, between the two bars' axes (geometry.forearm_spacing)
    elbow_block: RigidBody
    platform_block: RigidBody
    platform: RigidBody
    source: str                # where the data came from

    @property
    def forearm_mass(self) -> float:
        """Mass of one forearm: two bars and both blocks (kg)."""
        return 2.0 * self.bar.mass + self.elbow_block.mass + self.platform_block.mass


def require_rotary(robot: RobotParameters, what: str) -> None:
    """Refuse (ValueError, by name) a robot file that is not a rotary Delta's: ``what`` (a
    reference model of this package) models the bodies of rotary Delta robots only."""
    if robot.type != "rotary":
        raise ValueError(f"{robot.source or robot.name}: {what} is for rotary Delta robots, "
                         f"this robot file is of type {robot.type!r}")


def body_set(robot: RobotParameters) -> BodySet:
    """The rigid bodies of ``robot``: from ``mass_properties.full_body`` where the robot file
    has it, else derived from the lumped fields (see the module docstring).

    >>> from delta_core.robot_file import load_robot
    >>> bs = body_set(load_robot("d3s800"))
    >>> bs.bar.mass, bs.elbow_block.inertia, bs.source
    (1.65, (1.47e-05, 0.000101, 0.000101), 'full-body data of the robot file (mass_properties.full_body)')
    """
    g, m = robot.geometry, robot.mass
    full = m.full_body
    arm = m.upper_arm
    arm_inertia = (AXIAL_FRACTION * arm.inertia, arm.inertia, arm.inertia)
    if full is not None and full.upper_arm_inertia is not None:
        arm_inertia = tuple(full.upper_arm_inertia)
    upper_arm = RigidBody(mass=arm.mass, inertia=arm_inertia, com=arm.com_distance, length=g.upper_arm_length)
    s = g.forearm_spacing
    if full is None:
        fa = m.forearm
        half = 0.5 * fa.inertia
        bar = RigidBody(mass=0.5 * fa.mass, inertia=(AXIAL_FRACTION * half, half, half),
                        com=fa.com_ratio * g.forearm_length, length=g.forearm_length)
        elbow = platform_block = RigidBody(mass=0.0, inertia=(0.0, 0.0, 0.0), com=0.5 * s, length=s)
        source = "derived from the lumped robot-file fields"
    else:
        b = full.bar
        bar = RigidBody(mass=b.mass, inertia=tuple(b.inertia), com=b.com_ratio * g.forearm_length,
                        length=g.forearm_length)
        elbow = RigidBody(mass=full.elbow_block.mass, inertia=tuple(full.elbow_block.inertia), com=0.5 * s, length=s)
        platform_block = RigidBody(mass=full.platform_block.mass, inertia=tuple(full.platform_block.inertia),
                                   com=0.5 * s, length=s)
        source = "full-body data of the robot file (mass_properties.full_body)"
    mp = m.platform_mass + m.payload_mass
    r = g.platform_radius
    p_inertia = (mp * r * r / 4.0, mp * r * r / 4.0, mp * r * r / 2.0)
    if full is not None and full.platform_inertia is not None:
        p_inertia = tuple(full.platform_inertia)
    platform = RigidBody(mass=mp, inertia=p_inertia, com=0.0, length=0.0)
    return BodySet(upper_arm=upper_arm, rotor_inertia=m.motor.reflected_inertia, bar=bar,
                   bar_spacing=s, elbow_block=elbow, platform_block=platform_block,
                   platform=platform, source=source)


def chain_bar(bar: RigidBody, stretch: float) -> RigidBody:
    """One bar of a forearm ``stretch`` = l_i / l_K times the shared forearm length (a per-arm
    robot, ``geometry.per_arm``): the explicit model keeps the forearm's point masses of
    Asadi eq. (22) written with the shared length and places them along arm i's own forearm, so
    the same mass has its COM at ``stretch`` times the distance from the elbow and its inertia
    scaled by ``stretch``^2 (the length, too). ``bar`` itself when ``stretch`` is 1.

    >>> chain_bar(RigidBody(1.0, (0.0, 0.04, 0.04), 0.4, 0.8), 1.01).com
    0.404
    """
    if stretch == 1.0:
        return bar
    return dataclasses.replace(bar, com=bar.com * stretch, length=bar.length * stretch,
                               inertia=tuple(v * stretch * stretch for v in bar.inertia))
