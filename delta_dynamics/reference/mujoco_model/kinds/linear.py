"""The linear Delta's chains in MuJoCo (``docs/mujoco.md``).

Geometry and conventions from ``docs/conventions.md`` ("Linear Delta": z up, rail i at angle
phi_i about z, q_i the height of carriage joint A_i, positive up) and the mass model of
:mod:`delta_dynamics.linear.model` (Colombo & Lentini 2020 with rigid rods). Per chain i
(k = i + 1, u_i = (cos phi_i, sin phi_i, 0)):

* ``carriage_k_link`` on the slide ``joint_names[i]`` along +z, its frame at A_i = R_i u_i +
  (q_i + o_i) e_z, yawed by phi_i + pi (x' = -u_i points at the rail's axis, z' = z), with the
  carriage's mass; the motor's rotor reflected through the belt or screw (gear_ratio^2 I_rotor)
  is the slide's ``armature``.
* ``rod_k_link`` at A_i on a **universal joint**: the hinge ``rod_k_bend_joint`` about y' (the
  parallelogram's upper pivot axis, horizontal across the rail), then ``rod_k_tilt_joint``
  about the turned z, so the rod direction in the carriage frame is R_y(bend) R_z(tilt) x_hat
  (bend > 0: down toward the platform). The body carries both rods of the parallelogram on
  their centre line: twice one rod's mass at mid-length and twice its inertia across the rod;
  about the rod's own axis a negligible inertia (10^-6 of that), since a rod between two ball
  joints spins freely and the model has no such term. The site ``rod_k_end`` is its far end
  (x = l_i), joined to the platform's site ``platform_joint_k`` at P_i = X + r u_i.
* The platform (``platform_link``, three slides) carries the platform's mass and the payload.

This is the rigid-rod model of :mod:`delta_dynamics.linear.model` built as bodies, so the
explicit model and MuJoCo differ only in how they solve it (a reduced model against a tree
with soft loop-closing constraints). Per-rail geometry (``geometry.per_arm``): rail i's own
R_i, l_i and carriage zero o_i; a rod of its own length keeps the explicit model's m_r (written
with the shared length l): COM at l_i / 2 and inertia times (l_i / l)^2.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from delta_dynamics.reference.mujoco_model.elements import inertial, numbers, visual, yaw_quat
from delta_dynamics.reference.mujoco_model.kinds import Mechanism

#: the rods' inertia about their own axis, as a share of the inertia across them (see above)
AXIAL_SHARE = 1e-6


def _require_bodies(robot) -> None:
    m = robot.mass
    if not m.rod.mass > 0.0:
        raise ValueError(f"{robot.source or robot.name}: the MuJoCo model needs rods with mass "
                         f"(mass_properties.rod.mass is {m.rod.mass}): a massless body cannot turn in MuJoCo")


#: the names of chain k's universal-joint hinges and of the site at its far end
BEND_JOINT, TILT_JOINT, CHAIN_END = "rod_{k}_bend_joint", "rod_{k}_tilt_joint", "rod_{k}_end"


def add_chains(world, robot, settings, joint_friction: bool) -> None:
    """The three chains under ``world`` (module docstring): the actuated joint, the universal joint, the bar's end site."""
    _require_bodies(robot)
    g, m = robot.geometry, robot.mass
    rod = m.rod
    bar_r = 0.15 * max(g.rod_spacing, 0.01)
    for i, phi_deg in enumerate(g.rail_angles_deg):
        phi = math.radians(phi_deg)
        k = i + 1
        a = g.arm(i)
        Ri, li = a["rail_radius"], a["rod_length"]
        stretch = li / g.rod_length
        # the rail (for the eye): the carriage joint's line over the carriage's travel
        lo, hi = robot.limits.position[i]
        visual(world, type="capsule", size="0.004", rgba="0.5 0.5 0.5 0.3", fromto=numbers(
            (Ri * math.cos(phi), Ri * math.sin(phi), lo + a["joint_offset"],
             Ri * math.cos(phi), Ri * math.sin(phi), hi + a["joint_offset"])))
        carriage = ET.SubElement(world, "body", {
            "name": f"carriage_{k}_link", "pos": numbers((Ri * math.cos(phi), Ri * math.sin(phi), a["joint_offset"])),
            "quat": yaw_quat(phi + math.pi)})
        jattrs = {"name": robot.joint_names[i], "type": "slide", "axis": "0 0 1",
                  "armature": repr(float(m.motor.reflected_inertia))}
        if joint_friction:
            f = robot.friction
            jattrs.update(damping=repr(float(f.viscous[i])), frictionloss=repr(float(f.coulomb[i])))
        ET.SubElement(carriage, "joint", jattrs)
        if m.carriage.mass > 0.0:
            # the carriage only translates: its rotational inertia plays no part (a 4 cm block's)
            ic = m.carriage.mass * 0.04 ** 2 / 6.0
            inertial(carriage, m.carriage.mass, (ic, ic, ic))
        visual(carriage, type="box", size=numbers((0.01, 0.5 * g.rod_spacing + 0.01, 0.015)), rgba="0.2 0.4 0.8 1")
        rods = ET.SubElement(carriage, "body", {"name": f"rod_{k}_link"})
        ET.SubElement(rods, "joint", {"name": BEND_JOINT.format(k=k), "type": "hinge", "axis": "0 1 0"})
        ET.SubElement(rods, "joint", {"name": TILT_JOINT.format(k=k), "type": "hinge", "axis": "0 0 1"})
        across = 2.0 * rod.inertia * stretch * stretch
        inertial(rods, 2.0 * rod.mass, (AXIAL_SHARE * across, across, across), pos=(0.5 * li, 0.0, 0.0))
        for side in (1.0, -1.0):
            y = side * 0.5 * g.rod_spacing
            visual(rods, type="capsule", fromto=numbers((0, y, 0, li, y, 0)), size=repr(bar_r), rgba="0.8 0.5 0.2 1")
        ET.SubElement(rods, "site", {"name": CHAIN_END.format(k=k), "pos": numbers((li, 0.0, 0.0))})


def add_platform(plat, robot) -> None:
    """The platform body's inertial, visuals and its sites ``platform_joint_k`` (module docstring)."""
    g, m = robot.geometry, robot.mass
    mp = m.platform_mass + m.payload_mass
    r = g.platform_radius
    # the platform only translates: a disc's inertia, which plays no part
    inertial(plat, mp, (mp * r * r / 4.0, mp * r * r / 4.0, mp * r * r / 2.0))
    visual(plat, type="cylinder", size=numbers((r * 1.2, 0.006)), rgba="0.3 0.3 0.3 1")
    for i, phi_deg in enumerate(g.rail_angles_deg):
        phi = math.radians(phi_deg)
        ET.SubElement(plat, "site", {"name": f"platform_joint_{i + 1}",
                                     "pos": numbers((r * math.cos(phi), r * math.sin(phi), 0.0))})


def passive_angles(robot, kin, q, X):
    """Each rod pair's (bend, tilt): from the rod vector d_i = P_i - A_i written in the carriage
    frame (x' = -u_i, y' = -t_i with t_i = (-sin phi_i, cos phi_i, 0), z' = z),
    d' / l_i = (cos tilt cos bend, sin tilt, -cos tilt sin bend)."""
    g = robot.geometry
    X = np.asarray(X, float)
    out = np.empty((3, 2))
    for i, phi_deg in enumerate(g.rail_angles_deg):
        phi = math.radians(phi_deg)
        a = g.arm(i)
        u = np.array([math.cos(phi), math.sin(phi), 0.0])
        t = np.array([-math.sin(phi), math.cos(phi), 0.0])
        d = X + g.platform_radius * u - a["rail_radius"] * u - (q[i] + a["joint_offset"]) * np.array([0.0, 0.0, 1.0])
        dx, dy = -float(d @ u), -float(d @ t)
        out[i] = (math.atan2(-d[2], dx), math.asin(max(-1.0, min(1.0, dy / a["rod_length"]))))
    return out





def driven_inertia(robot) -> float:
    """The carriage's mass plus the reflected rotor (kg): a lower bound of the inertia along a
    rail."""
    m = robot.mass
    return m.carriage.mass + m.motor.reflected_inertia


def chain_length(robot) -> float:
    """The length of the bar that closes the chain (m)."""
    return robot.geometry.rod_length


MECHANISM = Mechanism(add_chains=add_chains, add_platform=add_platform, passive_angles=passive_angles,
                      bend_joint=BEND_JOINT, tilt_joint=TILT_JOINT, chain_end=CHAIN_END,
                      driven_inertia=driven_inertia, chain_length=chain_length)
