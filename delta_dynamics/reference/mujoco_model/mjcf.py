"""The MJCF (MuJoCo XML) of a Delta robot's closed chain, rotary or linear, built from its robot file.

Shared by both kinds (conventions: ``docs/conventions.md``, z up, origin at the base centre):

* per chain, what the kind's mechanism writes (:mod:`.kinds`: :mod:`.kinds.rotary`,
  :mod:`.kinds.linear`): the actuated joint ``joint_names[i]`` (a hinge or a slide), then a
  universal joint of two hinges carrying the centre bar of the parallelogram to its far end;
* the platform ``platform_link`` on three slides ``platform_x/y/z`` (its orientation is held,
  as the parallelograms hold it), with the sites ``platform_joint_k`` where the chains end;
* one ``connect`` equality per chain (``close_chain_k``) closing the loop: the site at the
  bar's far end and the site at the platform joint coincide.

No contacts (the mechanism's joint limits are the controller's business; leaving the
workspace is detected by the plant). Visual geoms (capsules, a disc) carry no mass. The
keyframe ``home`` is the assembled chain at rest at the workspace centre (MuJoCo's zero
pose, every joint at 0, is not assembled), for MuJoCo's own viewer:
``python -m mujoco.viewer --mjcf=delta.xml``, then load the key.

>>> from delta_core.robot_file import load_robot
>>> xml = mjcf_xml(load_robot("nt_robot"))
>>> xml.count("<connect "), xml.count('type="hinge"'), xml.count('type="slide"')
(3, 9, 3)
>>> xml = mjcf_xml(load_robot("colombo2020"))
>>> xml.count("<connect "), xml.count('type="hinge"'), xml.count('type="slide"')
(3, 6, 6)
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from delta_core.robot_file import RobotParameters, load_robot
from delta_dynamics.algorithms import inverse_kinematics, workspace_centre
from delta_dynamics.kinds import model_for
from delta_dynamics.reference.mujoco_model import require_mujoco
from delta_dynamics.reference.mujoco_model.elements import numbers
from delta_dynamics.reference.mujoco_model.kinds import mechanism


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


def mjcf_xml(robot, settings: SolverSettings | None = None, joint_friction: bool = False) -> str:
    """The MJCF text of ``robot`` (a robot file of either kind, loaded or a name) for MuJoCo.

    ``settings``: time step and constraint settings (:class:`SolverSettings`). With
    ``joint_friction`` the actuated joints get MuJoCo's own ``damping`` (= ``friction.viscous``)
    and ``frictionloss`` (= ``friction.coulomb``, a dry friction without the Stribeck term)
    for use in MuJoCo's own tools; the plant leaves them out and applies the robot file's
    friction law itself (:mod:`delta_dynamics.reference.mujoco_model.plant`).
    """
    robot: RobotParameters = load_robot(robot)
    mech = mechanism(robot)
    s = settings or SolverSettings()
    root = ET.Element("mujoco", {"model": f"delta_{robot.name}"})
    ET.SubElement(root, "compiler", {"angle": "radian", "inertiafromgeom": "false", "autolimits": "true"})
    ET.SubElement(root, "option", {
        "timestep": repr(float(s.timestep)), "gravity": numbers((0.0, 0.0, -robot.gravity)),
        "integrator": "Euler", "solver": "Newton", "iterations": str(int(s.iterations)),
        "tolerance": repr(float(s.tolerance)), "jacobian": "dense"})
    ET.SubElement(root.find("option"), "flag", {"contact": "disable"})
    world = ET.SubElement(root, "worldbody")
    mech.add_chains(world, robot, s, joint_friction)

    plat = ET.SubElement(world, "body", {"name": "platform_link"})
    for axis, name in zip(("1 0 0", "0 1 0", "0 0 1"), ("platform_x", "platform_y", "platform_z")):
        ET.SubElement(plat, "joint", {"name": name, "type": "slide", "axis": axis})
    mech.add_platform(plat, robot)

    # the assembled chain at rest at the workspace centre (MuJoCo's own zero pose, every joint
    # at 0, is not assembled: load this key in MuJoCo's viewer)
    kin = model_for(robot)
    X = workspace_centre(kin)
    q = inverse_kinematics(kin, X)
    pa = mech.passive_angles(robot, kin, q, X)
    qpos = []
    for i, qi in enumerate(q):
        qpos += [qi, pa[i, 0], pa[i, 1]]
    key = ET.SubElement(root, "keyframe")
    ET.SubElement(key, "key", {"name": "home", "qpos": numbers(qpos + list(X))})

    eq = ET.SubElement(root, "equality")
    for k in range(1, 4):
        ET.SubElement(eq, "connect", {"name": f"close_chain_{k}", "site1": mech.name(mech.chain_end, k),
                                      "site2": f"platform_joint_{k}", "solref": numbers(s.constraint_solref),
                                      "solimp": numbers(s.solimp)})
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
