"""The rotary Delta's chains in MuJoCo (``docs/mujoco.md``).

Bodies and their data come from :func:`delta_dynamics.reference.bodies.body_set`; geometry and
joint conventions from ``docs/conventions.md`` (z up, chain i at angle phi_i, q_i = 0 with the
arm horizontal and outward, positive down). Per chain i (k = i + 1):

* ``upper_arm_k_link`` at B_i = R u_i, yawed by phi_i (x' = u_i, y' = the motor axis), on the
  hinge ``joint_names[i]`` about +y' (a positive angle moves the arm down). Its inertial is the
  upper arm's (COM ``com`` along x); the motor's rotor, reflected through the gear, is the
  joint's ``armature`` (gear_ratio^2 I_rotor about the same axis, moving with the arm).
* ``forearm_k_link`` at the elbow C_i (x = l in the arm frame) on a **universal joint**: the hinge
  ``forearm_k_bend_joint`` about the elbow axis (y), then ``forearm_k_tilt_joint`` about the
  turned z, so the bar direction in the arm frame is R_y(bend) R_z(tilt) x_hat, as in the URDF
  and :func:`delta_dynamics.algorithms.passive_angles`. The body carries both bars of the
  parallelogram on their centre line: twice one bar's mass and principal inertias, without the
  spacing term. Two parallel bars of a parallelogram have the same velocity field as that
  centre bar, so their kinetic energy is exactly its kinetic energy. When the robot file gives
  the elbow block a mass, the block is a body of its own between the two hinges (it turns with
  the bend about its own axis, the elbow axis, with its COM on the elbow); a massless block
  is left out (MuJoCo refuses massless moving bodies) and both hinges sit in the forearm body.
  The site ``forearm_k_end`` is the forearm's far end (x = l_K).
* The platform's blocks are welded to it at A_i - X = r u_i, where the sites
  ``platform_joint_k`` are.

Per-arm geometry (``geometry.per_arm``): each chain takes its own R_i, L_i (l), l_i (l_K), r_i;
the arm body is also turned by the joint offset o_i about y' (the hinge's value stays the joint
position, the arm angle is q_i + o_i), and a forearm of its own length l_i carries the explicit
model's point masses (Asadi eq. 22 with the shared length): bar COM and inertia scaled by
l_i / l_K and (l_i / l_K)^2 (``docs/mujoco.md``).
"""
from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET

from delta_dynamics.algorithms import passive_angles as _kinematic_passive_angles
from delta_dynamics.reference.bodies import body_set
from delta_dynamics.reference.mujoco_model.elements import inertial, numbers, visual, yaw_quat
from delta_dynamics.reference.mujoco_model.kinds import Mechanism


def _arm_quat(phi: float, offset: float) -> str:
    """Quaternion of the arm frame at joint position 0: yaw phi about z, then the joint offset
    about the arm's y' (the arm angle is the joint position plus the offset)."""
    if offset == 0.0:
        return yaw_quat(phi)
    cz, sz, cy, sy = math.cos(phi / 2.0), math.sin(phi / 2.0), math.cos(offset / 2.0), math.sin(offset / 2.0)
    return numbers((cz * cy, -sz * sy, cz * sy, sz * cy))


def _body(parent, body, pos=(0.0, 0.0, 0.0), quat=None, scale: float = 1.0):
    """The inertial of a :class:`~delta_dynamics.reference.bodies.RigidBody`, times ``scale``."""
    inertial(parent, scale * body.mass, [scale * v for v in body.inertia], pos, quat)


#: the names of chain k's universal-joint hinges and of the site at its far end
BEND_JOINT, TILT_JOINT, CHAIN_END = "forearm_{k}_bend_joint", "forearm_{k}_tilt_joint", "forearm_{k}_end"


def add_chains(world, robot, settings, joint_friction: bool) -> None:
    """The three chains under ``world`` (module docstring): the actuated joint, the universal joint, the bar's end site."""
    g = robot.geometry
    bs = body_set(robot)
    bar_r = 0.15 * max(g.forearm_spacing, 0.01)
    visual(world, name="base", type="cylinder", size=numbers((g.base_radius, 0.01)), rgba="0.5 0.5 0.5 0.3")
    for i, phi_deg in enumerate(g.chain_angles_deg):
        phi = math.radians(phi_deg)
        k = i + 1
        a = g.arm(i)
        Ri, l, lk = a["base_radius"], a["upper_arm_length"], a["forearm_length"]
        # the bars of a forearm of its own length carry the forearm's point masses of the explicit
        # model (Asadi eq. 22 with the shared length): COM at com_ratio * lk, inertia * (lk / l_K)^2
        stretch = lk / g.forearm_length
        bar = bs.bar if stretch == 1.0 else dataclasses.replace(
            bs.bar, com=bs.bar.com * stretch, length=lk, inertia=tuple(v * stretch * stretch for v in bs.bar.inertia))
        arm = ET.SubElement(world, "body", {"name": f"upper_arm_{k}_link",
                                            "pos": numbers((Ri * math.cos(phi), Ri * math.sin(phi), 0.0)),
                                            "quat": _arm_quat(phi, a["joint_offset"])})
        jattrs = {"name": robot.joint_names[i], "type": "hinge", "axis": "0 1 0", "armature": repr(bs.rotor_inertia)}
        if joint_friction:
            f = robot.friction
            jattrs.update(damping=repr(float(f.viscous[i])), frictionloss=repr(float(f.coulomb[i])))
        ET.SubElement(arm, "joint", jattrs)
        _body(arm, bs.upper_arm, pos=(bs.upper_arm.com, 0.0, 0.0))
        visual(arm, type="capsule", fromto=numbers((0, 0, 0, l, 0, 0)), size=repr(2 * bar_r), rgba="0.2 0.4 0.8 1")
        bend = {"name": BEND_JOINT.format(k=k), "type": "hinge", "axis": "0 1 0"}
        tilt = {"name": TILT_JOINT.format(k=k), "type": "hinge", "axis": "0 0 1"}
        if bs.elbow_block.mass > 0:
            block = ET.SubElement(arm, "body", {"name": f"elbow_block_{k}_link", "pos": numbers((l, 0.0, 0.0))})
            ET.SubElement(block, "joint", bend)
            # block frame: x along the elbow axis (+y' of the arm), COM on the elbow
            _body(block, bs.elbow_block, quat=yaw_quat(math.pi / 2))
            fore = ET.SubElement(block, "body", {"name": f"forearm_{k}_link"})
        else:
            fore = ET.SubElement(arm, "body", {"name": f"forearm_{k}_link", "pos": numbers((l, 0.0, 0.0))})
            ET.SubElement(fore, "joint", bend)
        ET.SubElement(fore, "joint", tilt)
        _body(fore, bar, pos=(bar.com, 0.0, 0.0), scale=2.0)
        for side in (1.0, -1.0):
            y = side * 0.5 * g.forearm_spacing
            visual(fore, type="capsule", fromto=numbers((0, y, 0, lk, y, 0)), size=repr(bar_r), rgba="0.8 0.5 0.2 1")
        ET.SubElement(fore, "site", {"name": CHAIN_END.format(k=k), "pos": numbers((lk, 0.0, 0.0))})


def add_platform(plat, robot) -> None:
    """The platform body's inertial, visuals and its sites ``platform_joint_k`` (module docstring)."""
    g = robot.geometry
    bs = body_set(robot)
    _body(plat, bs.platform)
    visual(plat, type="cylinder", size=numbers((g.platform_radius * 1.2, 0.008)), rgba="0.3 0.3 0.3 1")
    for i, phi_deg in enumerate(g.chain_angles_deg):
        phi = math.radians(phi_deg)
        ri = g.arm(i)["platform_radius"]
        pos = (ri * math.cos(phi), ri * math.sin(phi), 0.0)
        if bs.platform_block.mass > 0:
            blk = ET.SubElement(plat, "body", {"name": f"platform_block_{i + 1}_link", "pos": numbers(pos)})
            _body(blk, bs.platform_block, quat=yaw_quat(phi + math.pi / 2))
        ET.SubElement(plat, "site", {"name": f"platform_joint_{i + 1}", "pos": numbers(pos)})


def passive_angles(robot, kin, q, X):
    """The elbows' (bend, tilt) of :func:`delta_dynamics.algorithms.passive_angles` (the arm
    angles follow from X on the elbow-out branch)."""
    return _kinematic_passive_angles(kin, X)





def driven_inertia(robot) -> float:
    """The arm's own inertia about its axis plus the reflected rotor (kg m^2): a lower bound
    of what the closed chain puts at the motor."""
    bs = body_set(robot)
    arm = bs.upper_arm
    return arm.inertia[1] + arm.mass * arm.com ** 2 + bs.rotor_inertia


def chain_length(robot) -> float:
    """The length of the bar that closes the chain (m)."""
    return robot.geometry.forearm_length


MECHANISM = Mechanism(add_chains=add_chains, add_platform=add_platform, passive_angles=passive_angles,
                      bend_joint=BEND_JOINT, tilt_joint=TILT_JOINT, chain_end=CHAIN_END,
                      driven_inertia=driven_inertia, chain_length=chain_length)
