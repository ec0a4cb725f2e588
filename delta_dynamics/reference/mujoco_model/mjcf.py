"""The MJCF (MuJoCo XML) of a rotary Delta robot's closed chain, built from its robot file.

Bodies and their data come from :func:`delta_dynamics.reference.bodies.body_set`; geometry and joint
conventions from ``docs/conventions.md`` (z up, chain i at angle phi_i, q_i = 0 with the arm
horizontal and outward, positive down; origin at the base centre). The tree, per chain i:

* ``upper_arm_i_link`` at B_i = R u_i, yawed by phi_i (x' = u_i, y' = the motor axis), on the
  hinge ``joint_names[i]`` about +y' (a positive angle moves the arm down). Its inertial is the
  upper arm's (COM ``com`` along x); the motor's rotor, reflected through the gear, is the
  joint's ``armature`` (gear_ratio^2 I_rotor about the same axis, moving with the arm).
* ``forearm_i_link`` at the elbow C_i (x = l in the arm frame) on a **universal joint**: the hinge
  ``forearm_i_bend_joint`` about the elbow axis (y), then ``forearm_i_tilt_joint`` about the
  turned z, so the bar direction in the arm frame is R_y(bend) R_z(tilt) x_hat, as in the URDF
  and :func:`delta_dynamics.algorithms.passive_angles`. The body carries both bars of the
  parallelogram on their centre line: twice one bar's mass and principal inertias, without the
  spacing term. Two parallel bars of a parallelogram have the same velocity field as that
  centre bar, so their kinetic energy is exactly its kinetic energy. When the robot file gives
  the elbow block a mass, the block is a body of its own between the two hinges (it turns with
  the bend about its own axis, the elbow axis, with its COM on the elbow); a massless block
  is left out (MuJoCo refuses massless moving bodies) and both hinges sit in the forearm body.
* The platform ``platform_link`` on three slides ``platform_x/y/z`` (its orientation is held,
  as the parallelograms hold it); the platform blocks are welded to it at A_i - X = r u_i.
* The chain is closed by one ``connect`` equality per forearm (``close_chain_i``): the site at
  the forearm's far end (x = l_K) and the site at the platform joint A_i coincide.

Per-arm geometry (``geometry.per_arm``): each chain takes its own R_i, L_i (l), l_i (l_K), r_i;
the arm body is also turned by the joint offset o_i about y' (the hinge's value stays the joint
position, the arm angle is q_i + o_i), and a forearm of its own length l_i carries the explicit
model's point masses (Asadi eq. 22 with the shared length): bar COM and inertia scaled by
l_i / l_K and (l_i / l_K)^2 (``docs/mujoco.md``).

No contacts (the mechanism's joint limits are the controller's business; leaving the
workspace is detected by the plant). Visual geoms (capsules, a disc) carry no mass. The
keyframe ``home`` is the assembled chain at rest at the workspace centre (MuJoCo's zero
pose, every joint at 0, is not assembled), for MuJoCo's own viewer:
``python -m mujoco.viewer --mjcf=delta.xml``, then load the key.

>>> from delta_core.robot_file import load_robot
>>> xml = mjcf_xml(load_robot("nt_robot"))
>>> xml.count("<connect "), xml.count('type="hinge"'), xml.count('type="slide"')
(3, 9, 3)
"""
from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from delta_core.robot_file import RobotParameters, load_robot
from delta_dynamics.algorithms import inverse_kinematics, passive_angles, workspace_centre
from delta_dynamics.kinds import model_for
from delta_dynamics.reference.bodies import body_set, require_rotary
from delta_dynamics.reference.mujoco_model import require_mujoco


@dataclass(frozen=True)
class SolverSettings:
    """How MuJoCo steps the closed chain (``docs/mujoco.md`` has the measurements behind them).

    ``timestep`` (s): MuJoCo's step; the plant splits a drive period into equal steps of at
    most this (0.5 ms: two per 1 kHz drive period). ``solref`` = (time constant s, damping
    ratio) of the ``connect`` constraints that close the chain; None means (2 timestep, 1),
    critically damped at the smallest time constant MuJoCo accepts for that step (it raises
    smaller ones to 2 timestep). ``solimp`` (d0, d_width, width, midpoint, power): an
    impedance d close to 1 keeps the chain stiff (0.9999: a gap of ~2 um under the
    pick-and-place loads). ``iterations`` / ``tolerance``: MuJoCo's Newton solver.
    """

    timestep: float = 5e-4
    solref: tuple | None = None
    solimp: tuple = (0.9999, 0.9999, 0.001, 0.5, 2.0)
    iterations: int = 50
    tolerance: float = 1e-10

    def __post_init__(self):
        if not (isinstance(self.timestep, (int, float)) and 0 < self.timestep < 1):
            raise ValueError(f"MuJoCo timestep must be a number in (0, 1) s, got {self.timestep!r}")
        if self.solref is not None and (len(self.solref) != 2 or not all(math.isfinite(v) and v > 0 for v in self.solref)):
            raise ValueError(f"solref must be two numbers > 0 (time constant s, damping ratio), got {self.solref!r}")
        if len(self.solimp) != 5 or not all(math.isfinite(v) for v in self.solimp) or not 0 < self.solimp[0] < 1:
            raise ValueError(f"solimp must be five finite numbers with 0 < d0 < 1, got {self.solimp!r}")
        if int(self.iterations) < 1:
            raise ValueError(f"solver iterations must be >= 1, got {self.iterations!r}")

    @property
    def constraint_solref(self) -> tuple:
        """The ``solref`` written to the model."""
        return tuple(self.solref) if self.solref is not None else (2.0 * self.timestep, 1.0)


def _f(v) -> str:
    return " ".join(repr(float(x)) for x in np.atleast_1d(v))


def _yaw(angle: float) -> str:
    """MuJoCo quaternion (w x y z) of a rotation by ``angle`` about z."""
    return _f((math.cos(angle / 2.0), 0.0, 0.0, math.sin(angle / 2.0)))


def _arm_quat(phi: float, offset: float) -> str:
    """Quaternion of the arm frame at joint position 0: yaw phi about z, then the joint offset
    about the arm's y' (the arm angle is the joint position plus the offset)."""
    if offset == 0.0:
        return _yaw(phi)
    cz, sz, cy, sy = math.cos(phi / 2.0), math.sin(phi / 2.0), math.cos(offset / 2.0), math.sin(offset / 2.0)
    return _f((cz * cy, -sz * sy, cz * sy, sz * cy))


def _inertial(parent, body, pos=(0.0, 0.0, 0.0), quat=None, scale: float = 1.0):
    """An <inertial> for ``body`` (a :class:`~delta_dynamics.reference.bodies.RigidBody`), mass and
    principal inertias times ``scale``."""
    attrs = {"pos": _f(pos), "mass": repr(scale * body.mass), "diaginertia": _f(np.multiply(scale, body.inertia))}
    if quat is not None:
        attrs["quat"] = quat
    ET.SubElement(parent, "inertial", attrs)


def _visual(parent, **attrs):
    ET.SubElement(parent, "geom", {"contype": "0", "conaffinity": "0", "group": "1", **attrs})


def mjcf_xml(robot, settings: SolverSettings | None = None, joint_friction: bool = False) -> str:
    """The MJCF text of ``robot`` (a robot file, loaded or a name) for MuJoCo.

    ``settings``: time step and constraint settings (:class:`SolverSettings`). With
    ``joint_friction`` the arm joints get MuJoCo's own ``damping`` (= ``friction.viscous``)
    and ``frictionloss`` (= ``friction.coulomb``, a dry friction without the Stribeck term)
    for use in MuJoCo's own tools; the plant leaves them out and applies the robot file's
    friction law itself (:mod:`delta_dynamics.reference.mujoco_model.plant`).
    """
    robot: RobotParameters = load_robot(robot)
    require_rotary(robot, "the MuJoCo model")
    s = settings or SolverSettings()
    g = robot.geometry
    bs = body_set(robot)
    R = g.base_radius
    r = g.platform_radius
    arms = [g.arm(i) for i in range(3)]          # each arm's own geometry (geometry.per_arm)

    root = ET.Element("mujoco", {"model": f"delta_{robot.name}"})
    ET.SubElement(root, "compiler", {"angle": "radian", "inertiafromgeom": "false", "autolimits": "true"})
    ET.SubElement(root, "option", {
        "timestep": repr(float(s.timestep)), "gravity": _f((0.0, 0.0, -robot.gravity)),
        "integrator": "Euler", "solver": "Newton", "iterations": str(int(s.iterations)),
        "tolerance": repr(float(s.tolerance)), "jacobian": "dense"})
    ET.SubElement(root.find("option"), "flag", {"contact": "disable"})
    world = ET.SubElement(root, "worldbody")
    _visual(world, name="base", type="cylinder", size=_f((R, 0.01)), rgba="0.5 0.5 0.5 0.3")
    bar_r = 0.15 * max(g.forearm_spacing, 0.01)
    for i, phi_deg in enumerate(g.chain_angles_deg):
        phi = math.radians(phi_deg)
        k = i + 1
        Ri, l, lk = arms[i]["base_radius"], arms[i]["upper_arm_length"], arms[i]["forearm_length"]
        # the bars of a forearm of its own length carry the forearm's point masses of the explicit
        # model (Asadi eq. 22 with the shared length): COM at com_ratio * lk, inertia * (lk / l_K)^2
        stretch = lk / g.forearm_length
        bar = bs.bar if stretch == 1.0 else dataclasses.replace(
            bs.bar, com=bs.bar.com * stretch, length=lk, inertia=tuple(v * stretch * stretch for v in bs.bar.inertia))
        arm = ET.SubElement(world, "body", {"name": f"upper_arm_{k}_link", "pos": _f((Ri * math.cos(phi), Ri * math.sin(phi), 0.0)),
                                            "quat": _arm_quat(phi, arms[i]["joint_offset"])})
        jattrs = {"name": robot.joint_names[i], "type": "hinge", "axis": "0 1 0", "armature": repr(bs.rotor_inertia)}
        if joint_friction:
            f = robot.friction
            jattrs.update(damping=repr(float(f.viscous[i])), frictionloss=repr(float(f.coulomb[i])))
        ET.SubElement(arm, "joint", jattrs)
        _inertial(arm, bs.upper_arm, pos=(bs.upper_arm.com, 0.0, 0.0))
        _visual(arm, type="capsule", fromto=_f((0, 0, 0, l, 0, 0)), size=repr(2 * bar_r), rgba="0.2 0.4 0.8 1")
        parent = arm
        bend = {"name": f"forearm_{k}_bend_joint", "type": "hinge", "axis": "0 1 0"}
        tilt = {"name": f"forearm_{k}_tilt_joint", "type": "hinge", "axis": "0 0 1"}
        if bs.elbow_block.mass > 0:
            block = ET.SubElement(arm, "body", {"name": f"elbow_block_{k}_link", "pos": _f((l, 0.0, 0.0))})
            ET.SubElement(block, "joint", bend)
            # block frame: x along the elbow axis (+y' of the arm), COM on the elbow
            _inertial(block, bs.elbow_block, quat=_yaw(math.pi / 2))
            fore = ET.SubElement(block, "body", {"name": f"forearm_{k}_link"})
        else:
            fore = ET.SubElement(parent, "body", {"name": f"forearm_{k}_link", "pos": _f((l, 0.0, 0.0))})
            ET.SubElement(fore, "joint", bend)
        ET.SubElement(fore, "joint", tilt)
        _inertial(fore, bar, pos=(bar.com, 0.0, 0.0), scale=2.0)
        for side in (1.0, -1.0):
            y = side * 0.5 * g.forearm_spacing
            _visual(fore, type="capsule", fromto=_f((0, y, 0, lk, y, 0)), size=repr(bar_r), rgba="0.8 0.5 0.2 1")
        ET.SubElement(fore, "site", {"name": f"forearm_{k}_end", "pos": _f((lk, 0.0, 0.0))})

    plat = ET.SubElement(world, "body", {"name": "platform_link"})
    for axis, name in zip(("1 0 0", "0 1 0", "0 0 1"), ("platform_x", "platform_y", "platform_z")):
        ET.SubElement(plat, "joint", {"name": name, "type": "slide", "axis": axis})
    _inertial(plat, bs.platform)
    _visual(plat, type="cylinder", size=_f((r * 1.2, 0.008)), rgba="0.3 0.3 0.3 1")
    for i, phi_deg in enumerate(g.chain_angles_deg):
        phi = math.radians(phi_deg)
        ri = arms[i]["platform_radius"]
        pos = (ri * math.cos(phi), ri * math.sin(phi), 0.0)
        if bs.platform_block.mass > 0:
            blk = ET.SubElement(plat, "body", {"name": f"platform_block_{i + 1}_link", "pos": _f(pos)})
            _inertial(blk, bs.platform_block, quat=_yaw(phi + math.pi / 2))
        ET.SubElement(plat, "site", {"name": f"platform_joint_{i + 1}", "pos": _f(pos)})

    # the assembled chain at rest at the workspace centre (MuJoCo's own zero pose, every joint
    # at 0, is not assembled: load this key in MuJoCo's viewer)
    kin = model_for(robot)
    X = workspace_centre(kin)
    pa = passive_angles(kin, X)
    qpos = []
    for i, qi in enumerate(inverse_kinematics(kin, X)):
        qpos += [qi, pa[i, 0], pa[i, 1]]
    key = ET.SubElement(root, "keyframe")
    ET.SubElement(key, "key", {"name": "home", "qpos": _f(qpos + list(X))})

    eq = ET.SubElement(root, "equality")
    for k in range(1, 4):
        ET.SubElement(eq, "connect", {"name": f"close_chain_{k}", "site1": f"forearm_{k}_end",
                                      "site2": f"platform_joint_{k}", "solref": _f(s.constraint_solref),
                                      "solimp": _f(s.solimp)})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def build_model(robot, settings: SolverSettings | None = None, joint_friction: bool = False):
    """``mujoco.MjModel`` of :func:`mjcf_xml` (needs the ``mujoco`` package)."""
    mujoco = require_mujoco()
    robot = load_robot(robot)
    xml = mjcf_xml(robot, settings, joint_friction)
    try:
        return mujoco.MjModel.from_xml_string(xml)
    except ValueError as e:
        raise ValueError(f"MuJoCo refused the model built from robot {robot.name!r}: {e}") from e
