"""The MoveIt 2 configuration of a Delta robot, generated from its robot file (no ROS needed).

MoveIt plans on a kinematic tree; the URDF (``delta.urdf.xacro``) opens the Delta's closed
chain into one whose Cartesian branch ``base_link -> platform_x -> platform_y -> platform_z ->
platform_link`` carries the platform. The configuration therefore has

* planning group ``platform``: the prismatic joints ``platform_x/y/z`` (tip ``tool0``): the
  chain MoveIt plans for (OMPL in platform space, the KDL solver for position-only IK);
* planning group ``arms``: the actuated arm joints (joint-space planning; the carriage joints
  of a linear Delta);
* every forearm joint ``forearm_<i><a|b>_bend/tilt_joint`` (a linear Delta's rod joints
  ``rod_<i><a|b>_bend/tilt_joint``) declared ``passive_joint``;
* self-collision disabled for every link pair (``reason="Delta"``): a planning group moves one
  branch of the opened tree while the others stand still, so MoveIt's self-collision check
  would test poses the real robot never takes; the closed chain cannot collide with itself
  inside its workspace. Collisions with the environment are checked as usual.
* joint limits (``joint_limits.yaml``): the arm joints' position, velocity and acceleration
  limits of the robot file; for ``platform_x/y/z`` the bounding box of the *reachable*
  workspace (forward kinematics over a grid of the arm joints' range, rounded outwards to 1 mm;
  not the URDF's loose box) and the platform speed and acceleration at which no arm joint
  exceeds its limit in 90 % of that workspace (:func:`platform_rate_limits`);
* ``moveit_controllers.yaml``: MoveIt's simple controller manager with one
  FollowJointTrajectory controller, the hardware node's action ``<hardware node>/
  follow_joint_trajectory``, over the arm and the platform joints (MoveIt sends each group's
  joints; the action takes either set).

The box is not the workspace (its corners are out of reach): reachability is checked before
execution by the action's goal callback, which converts every platform point by inverse
kinematics and checks the joint limits along the plan, refusing the goal with the reason
(``delta_hardware/ros/follow_joint_trajectory.py``).

Joint and link names take a ``prefix`` (several robots in one TF tree / MoveIt instance),
as :func:`delta_description.prefix.prefix_urdf` gives the URDF. Either kind of Delta (through
:mod:`delta_dynamics.algorithms`): for a linear one the joint limits are in m, m/s, m/s^2 and
N, and the home state is the carriages at the workspace centre.

    >>> from delta_core.robot_file import load_robot
    >>> robot = load_robot("nt_robot")
    >>> groups = planning_groups(robot)
    >>> groups["platform"], groups["arms"]
    (['platform_x', 'platform_y', 'platform_z'], ['arm_1_joint', 'arm_2_joint', 'arm_3_joint'])
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import yaml

from delta_core.atomic_file import atomic_write_text
from delta_description.passive_joints import PLATFORM_JOINTS, forearm_joint_names
from delta_description.prefix import prefix_urdf
from delta_description.xacro_urdf import robot_description
from delta_dynamics.algorithms import (UnreachableError, forward_kinematics, inverse_kinematics, jacobian,
                                       passive_origins, sample_workspace, workspace_centre)
from delta_dynamics.kinds import model_for

#: the hardware node's FollowJointTrajectory action, relative to MoveIt's namespace
CONTROLLER = "delta_hardware"
ACTION_NS = "follow_joint_trajectory"
GRID = 21                   # arm-joint grid per axis for the workspace box and rate limits
RATE_QUANTILE = 0.90        # share of the workspace where the platform rate limits hold
FILES = ("delta.srdf", "joint_limits.yaml", "kinematics.yaml", "moveit_controllers.yaml")


def planning_groups(robot, prefix: str = "") -> dict:
    """{group name: joint names}: ``platform`` (platform_x/y/z) and ``arms`` (the actuated joints)."""
    return {"platform": [prefix + j for j in PLATFORM_JOINTS], "arms": [prefix + j for j in robot.joint_names]}


def _grid_states(model, n: int = GRID):
    """(q, X) over an n^3 grid of the arm joints' (carriages') position limits (unreachable
    ones left out)."""
    axes = [np.linspace(model.q_lo[i], model.q_hi[i], n) for i in range(3)]
    qs = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    keep, Xs = [], []
    for q in qs:
        try:
            Xs.append(forward_kinematics(model, q))
            keep.append(q)
        except UnreachableError:
            continue
    qs, Xs = np.array(keep).reshape(-1, 3), np.array(Xs).reshape(-1, 3)
    # the working branch, the platform below where the passive links start (the elbows; a linear
    # Delta's forward kinematics gives no other)
    below = Xs[:, 2] < passive_origins(model, qs)[:, :, 2].min(axis=1)
    return qs[below], Xs[below]


def workspace_box(model) -> tuple:
    """(lo, hi): the bounding box (m) of the platform positions the arms reach inside their
    position limits, from forward kinematics over a grid of the joint range, rounded outwards
    to 1 mm.

    >>> lo, hi = workspace_box(model_for("nt_robot"))
    >>> bool(lo[2] < -0.7 < hi[2]), bool(lo[0] < 0 < hi[0])
    (True, True)
    """
    _, Xs = _grid_states(model)
    if model.kind != "rotary":
        # a linear Delta reaches its lateral extremes between the grid's carriage positions:
        # add 20 000 random reachable poses (vectorised, a fraction of a second)
        Xs = np.vstack((Xs, sample_workspace(model, 20000, seed=0)))
    return np.floor(Xs.min(axis=0) * 1e3) / 1e3, np.ceil(Xs.max(axis=0) * 1e3) / 1e3


def platform_rate_limits(model) -> tuple:
    """(velocity m/s, acceleration m/s^2) per platform axis at which no arm joint exceeds its
    velocity (acceleration) limit in ``RATE_QUANTILE`` of the workspace grid.

    q_dot_i = J_i X_dot (Asadi eq. 9), so with |X_dot_x|, |X_dot_y|, |X_dot_z| <= v,
    |q_dot_i| <= |J_i| sqrt(3) v; v = min_i qd_max_i / (sqrt(3) Q(|J_i|)) with Q the quantile
    over the grid. Likewise for the acceleration, halved for the J_dot X_dot term. Near the
    workspace boundary (singular) the arms would be faster: the action checks each plan.
    """
    _, Xs = _grid_states(model)
    norms = np.linalg.norm(jacobian(model, Xs), axis=2)                    # (N, 3): |J_i|
    q = np.quantile(norms, RATE_QUANTILE, axis=0)
    lim = model.robot.limits
    v = min(lim.velocity[i] / (math.sqrt(3) * q[i]) for i in range(3))
    a = 0.5 * min(lim.acceleration[i] / (math.sqrt(3) * q[i]) for i in range(3))
    return float(np.floor(v * 1e3) / 1e3), float(np.floor(a * 1e3) / 1e3)


def joint_limits(robot, prefix: str = "") -> dict:
    """``joint_limits.yaml`` (MoveIt's ``robot_description_planning``) as a dict."""
    model = model_for(robot)
    lo, hi = workspace_box(model)
    v, a = platform_rate_limits(model)
    lim = robot.limits
    joints = {}
    for i, name in enumerate(robot.joint_names):
        joints[prefix + name] = {
            "has_position_limits": True, "min_position": float(lim.position[i][0]),
            "max_position": float(lim.position[i][1]),
            "has_velocity_limits": True, "max_velocity": float(lim.velocity[i]),
            "has_acceleration_limits": True, "max_acceleration": float(lim.acceleration[i]),
            "has_effort_limits": True, "max_effort": float(lim.effort[i])}
    for i, name in enumerate(PLATFORM_JOINTS):
        joints[prefix + name] = {
            "has_position_limits": True, "min_position": float(lo[i]), "max_position": float(hi[i]),
            "has_velocity_limits": True, "max_velocity": v,
            "has_acceleration_limits": True, "max_acceleration": a}
    return {"default_velocity_scaling_factor": 1.0, "default_acceleration_scaling_factor": 1.0,
            "joint_limits": joints}


def kinematics(prefix: str = "") -> dict:
    """``kinematics.yaml``: position-only IK on the platform chain with KDL (the platform
    keeps its orientation); the arm group plans in joint space only."""
    return {"platform": {"kinematics_solver": "kdl_kinematics_plugin/KDLKinematicsPlugin",
                         "kinematics_solver_search_resolution": 0.005, "kinematics_solver_timeout": 0.05,
                         "position_only_ik": True}}


def controllers(robot, prefix: str = "", controller: str = CONTROLLER) -> dict:
    """``moveit_controllers.yaml``: the hardware node's FollowJointTrajectory action."""
    joints = [prefix + j for j in robot.joint_names] + [prefix + j for j in PLATFORM_JOINTS]
    return {
        "moveit_controller_manager": "moveit_simple_controller_manager/MoveItSimpleControllerManager",
        "moveit_simple_controller_manager": {
            "controller_names": [controller],
            controller: {"type": "FollowJointTrajectory", "action_ns": ACTION_NS, "default": True,
                         "joints": joints}},
        "trajectory_execution": {"allowed_execution_duration_scaling": 1.2, "allowed_goal_duration_margin": 0.5,
                                 "allowed_start_tolerance": 0.01},
    }


def srdf(robot, urdf_links, prefix: str = "") -> str:
    """The SRDF (XML text). ``urdf_links``: the URDF's link names (for the collision pairs)."""
    root = ET.Element("robot", name=robot.name)
    root.append(ET.Comment(" generated by delta_description.moveit_config from robot file "
                           f"{robot.source or robot.name}; do not edit "))
    groups = planning_groups(robot, prefix)
    g = ET.SubElement(root, "group", name="platform")
    ET.SubElement(g, "chain", base_link=prefix + "base_link", tip_link=prefix + "tool0")
    g = ET.SubElement(root, "group", name="arms")
    for j in groups["arms"]:
        ET.SubElement(g, "joint", name=j)
    model = model_for(robot)
    lo, hi = np.array(model.q_lo), np.array(model.q_hi)
    # rotary: the arms horizontal (q = 0, within the limits); linear: the workspace centre
    home = (np.clip(np.zeros(3), lo, hi) if model.kind == "rotary"
            else inverse_kinematics(model, workspace_centre(model)))
    X = forward_kinematics(model, home)
    s = ET.SubElement(root, "group_state", name="home", group="arms")
    for j, v in zip(groups["arms"], home):
        ET.SubElement(s, "joint", name=j, value=f"{round(float(v), 9) + 0.0:.6g}")
    s = ET.SubElement(root, "group_state", name="home", group="platform")
    for j, v in zip(groups["platform"], X):
        ET.SubElement(s, "joint", name=j, value=f"{round(float(v), 9) + 0.0:.6g}")
    for j in forearm_joint_names(robot):
        ET.SubElement(root, "passive_joint", name=prefix + j)
    links = sorted(urdf_links)
    for i, a in enumerate(links):
        for b in links[i + 1:]:
            ET.SubElement(root, "disable_collisions", link1=a, link2=b, reason="Delta")
    ET.indent(root, "  ")
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def moveit_config(robot, prefix: str = "", urdf: str | None = None) -> dict:
    """{file name: text or dict} of the whole configuration (``FILES``). ``urdf``: the robot's
    URDF (with the same prefix; built from the robot file if None)."""
    if urdf is None:
        urdf = prefix_urdf(robot_description(robot), prefix)
    links = [link.get("name") for link in ET.fromstring(urdf.encode()).findall("link")]
    return {"delta.srdf": srdf(robot, links, prefix), "joint_limits.yaml": joint_limits(robot, prefix),
            "kinematics.yaml": kinematics(prefix), "moveit_controllers.yaml": controllers(robot, prefix)}


def write_moveit_config(robot, out_dir, prefix: str = "") -> list:
    """Write the configuration into ``out_dir`` (atomically, file by file); the paths."""
    config = moveit_config(robot, prefix)                  # every check before anything is written
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in config.items():
        text = content if isinstance(content, str) else (
            f"# generated by delta-description moveit from {robot.source or robot.name}; see docs/moveit.md\n"
            + yaml.safe_dump(content, sort_keys=False, default_flow_style=False))
        atomic_write_text(out / name, text)
        paths.append(out / name)
    return paths
