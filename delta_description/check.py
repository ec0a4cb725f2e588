"""Validate a Delta URDF against its robot file (``delta-description check``).

:func:`check_description` parses the URDF with urdf_parser_py and reports every mismatch:

* structure: one tree rooted at ``base_link``; the movable joints are exactly the actuated joints
  of the robot file plus the passive ones of :mod:`delta_description.passive_joints`, of the
  right types and axes;
* the robot file's numbers: joint limits (position, velocity, torque), friction, the motor axis
  at R u_i, the elbow at upper_arm_length and +-forearm_spacing/2, the bar length
  forearm_length, masses and COMs (upper arm; half a forearm per bar at com_ratio; platform +
  payload) and the dominant inertias;
* physical inertias: every tensor positive definite with the triangle inequality
  I_a + I_b >= I_c for its principal moments;
* the closed chain: at ``samples`` random reachable poses, with the passive values from
  :func:`~delta_description.passive_joints.full_joint_state`, the composed transforms put
  the platform at forward_kinematics(q), each elbow at C_i and each bar's far end
  (x = forearm_length in its frame) on its platform joint X + r u_i +- (spacing/2) t_i, within
  ``tol``; the passive values lie inside their URDF limits;
* the ``<ros2_control>`` block, if any: one joint entry per actuated joint with position,
  velocity and effort state interfaces and a known plugin.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from delta_description.passive_joints import (BAR_SIDES, PLATFORM_JOINTS, bar_joint_names,
                                              full_joint_state, movable_joint_names)
from delta_core.robot_file import RobotParameters
from delta_description.urdf_model import KinematicTree, UrdfError, rpy_matrix
from delta_description.xacro_urdf import TOPIC_PLUGIN, TOPIC_PLUGIN_LEGACY

KNOWN_PLUGINS = ("mock_components/GenericSystem", TOPIC_PLUGIN, TOPIC_PLUGIN_LEGACY)


@dataclass
class CheckReport:
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    max_error: float = 0.0          # m, worst closed-chain mismatch over the sampled poses

    @property
    def ok(self) -> bool:
        return not self.problems


def inertia_problem(inertia) -> str | None:
    """Why a urdf_parser_py Inertia is unphysical, or None: positive definite + triangle inequality."""
    m = np.array(inertia.to_matrix(), dtype=float)
    if not np.allclose(m, m.T):
        return "is not symmetric"
    ev = np.linalg.eigvalsh(m)
    if ev[0] <= 0:
        return f"is not positive definite (principal moments {ev.round(12).tolist()})"
    if ev[0] + ev[1] < ev[2] * (1 - 1e-9):
        return f"violates the triangle inequality (principal moments {ev.round(12).tolist()})"
    return None


def _close(a, b, tol=1e-9) -> bool:
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


def check_description(robot: RobotParameters, urdf_xml: str, samples: int = 20, tol: float = 1e-6,
                      seed: int = 0) -> CheckReport:
    """Check a URDF against the robot file it was made from; see the module docstring."""
    from delta_dynamics.model import DeltaModel
    from delta_dynamics.kinematics import elbow_positions, forward_kinematics, sample_workspace

    rep = CheckReport()
    bad = rep.problems.append
    try:
        tree = KinematicTree(urdf_xml)
    except UrdfError as e:
        bad(str(e))
        return rep
    for w in tree.warnings:
        bad(f"urdf_parser_py: {w}")
    u = tree.urdf
    if tree.root != "base_link":
        bad(f"root link is {tree.root!r}, expected 'base_link'")

    # ---- joints: names, types, axes
    expected = movable_joint_names(robot)
    have = tree.movable_joints
    if set(have) != set(expected):
        bad(f"movable joints differ from the robot file's: missing {sorted(set(expected) - set(have))}, "
            f"unexpected {sorted(set(have) - set(expected))}")
        return rep
    want_axis = {n: (0, 1, 0) for n in robot.joint_names}
    want_axis.update(zip(PLATFORM_JOINTS, ((1, 0, 0), (0, 1, 0), (0, 0, 1))))
    for i in (1, 2, 3):
        for s in BAR_SIDES:
            bend, tilt = bar_joint_names(i, s)
            want_axis[bend], want_axis[tilt] = (0, 1, 0), (0, 0, 1)
    for name, axis in want_axis.items():
        j = tree.joints[name]
        kind = "prismatic" if name in PLATFORM_JOINTS else "revolute"
        if j.type != kind:
            bad(f"joint {name}: type {j.type}, expected {kind}")
        if not np.allclose(j.axis, axis):
            bad(f"joint {name}: axis {j.axis.tolist()}, expected {list(axis)}")

    # ---- actuated joints: limits, friction, placement
    geo, mp = robot.geometry, robot.mass
    jmap = u.joint_map
    for k, name in enumerate(robot.joint_names):
        j = jmap[name]
        lo, hi = robot.limits.position[k]
        lim = j.limit
        for what, got, want in (("lower", lim.lower, lo), ("upper", lim.upper, hi),
                                ("velocity", lim.velocity, robot.limits.velocity[k]),
                                ("effort", lim.effort, robot.limits.torque[k])):
            if got is None or not _close(got, want):
                bad(f"joint {name}: limit {what} {got}, robot file says {want}")
        dyn = j.dynamics
        if dyn is None or not _close(dyn.damping or 0.0, robot.friction.viscous[k]) \
                or not _close(dyn.friction or 0.0, robot.friction.coulomb[k]):
            bad(f"joint {name}: dynamics {vars(dyn) if dyn else None}, robot file friction "
                f"viscous {robot.friction.viscous[k]}, coulomb {robot.friction.coulomb[k]}")

    zero = dict.fromkeys(have, 0.0)
    poses0 = tree.link_poses(zero)
    for k in range(3):
        phi = math.radians(geo.chain_angles_deg[k])
        pose = poses0[f"upper_arm_{k + 1}_link"]
        want_p = np.array([geo.base_radius * math.cos(phi), geo.base_radius * math.sin(phi), 0.0])
        if not np.allclose(pose[:3, 3], want_p, atol=1e-9) or \
                not np.allclose(pose[:3, :3], rpy_matrix((0, 0, phi)), atol=1e-9):
            bad(f"upper_arm_{k + 1}_link at q = 0 is not at R u_i rotated by phi_i = {geo.chain_angles_deg[k]} deg")
        for s, sign in zip(BAR_SIDES, (1, -1)):
            bend = tree.joints[bar_joint_names(k + 1, s)[0]]
            want = [geo.upper_arm_length, sign * 0.5 * geo.forearm_spacing, 0.0]
            if not np.allclose(bend.origin[:3, 3], want, atol=1e-9):
                bad(f"joint {bend.name}: origin {bend.origin[:3, 3].tolist()}, expected {want}")
            link = u.link_map[f"forearm_{k + 1}{s}_link"]
            cyl = [v for v in link.visuals if type(v.geometry).__name__ == "Cylinder"]
            if not cyl or not _close(cyl[0].geometry.length, geo.forearm_length):
                bad(f"link {link.name}: bar length {cyl[0].geometry.length if cyl else None}, "
                    f"robot file forearm_length {geo.forearm_length}")

    # ---- inertials
    want_mass = {}
    for i in (1, 2, 3):
        want_mass[f"upper_arm_{i}_link"] = (mp.upper_arm.mass, mp.upper_arm.com_distance, mp.upper_arm.inertia)
        for s in BAR_SIDES:
            want_mass[f"forearm_{i}{s}_link"] = (0.5 * mp.forearm.mass, mp.forearm.com_ratio * geo.forearm_length,
                                                 0.5 * mp.forearm.inertia)
    want_mass["platform_link"] = (mp.platform_mass + mp.payload_mass, 0.0, None)
    for link in u.links:
        ine = link.inertial
        if ine is None:
            if link.name in want_mass:
                bad(f"link {link.name}: no inertial")
            continue
        why = inertia_problem(ine.inertia)
        if why:
            bad(f"link {link.name}: inertia {why}")
        if link.name in want_mass:
            mass, com, dominant = want_mass[link.name]
            if not _close(ine.mass, mass):
                bad(f"link {link.name}: mass {ine.mass}, robot file gives {mass}")
            xyz = ine.origin.xyz if ine.origin is not None else [0, 0, 0]
            if not np.allclose(xyz, [com, 0, 0], atol=1e-9):
                bad(f"link {link.name}: COM {list(xyz)}, expected [{com}, 0, 0]")
            if dominant is not None:
                I = ine.inertia
                if not _close(I.iyy, max(dominant, 1e-9)) or not _close(I.izz, max(dominant, 1e-9)):
                    bad(f"link {link.name}: iyy/izz {I.iyy}/{I.izz}, robot file gives {dominant}")

    # ---- the closed chain
    model = DeltaModel(robot)
    lim_of = {j.name: j.limit for j in u.joints}
    try:
        Xs = sample_workspace(model, samples, seed=seed)
    except RuntimeError as e:
        bad(f"cannot sample the workspace: {e}")
        Xs = []
    from delta_dynamics.kinematics import inverse_kinematics
    worst = 0.0
    for X in Xs:
        q = inverse_kinematics(model, X)
        state = full_joint_state(model, q)
        for name, v in zip(state.names, state.position):
            lim = lim_of[name]
            if lim is not None and not (lim.lower - 1e-12 <= v <= lim.upper + 1e-12):
                bad(f"joint {name}: value {v:.6g} at platform {np.round(X, 4).tolist()} is outside its "
                    f"URDF limits [{lim.lower:g}, {lim.upper:g}]")
        P = tree.link_poses(state.as_dict())
        X_fk = forward_kinematics(model, q)
        errs = [np.abs(P["platform_link"][:3, 3] - X_fk).max()]
        C = elbow_positions(model, q)
        for k in range(3):
            phi = math.radians(geo.chain_angles_deg[k])
            uk = np.array([math.cos(phi), math.sin(phi), 0.0])
            tk = np.array([-math.sin(phi), math.cos(phi), 0.0])
            errs.append(np.abs((P[f"upper_arm_{k + 1}_link"] @ [geo.upper_arm_length, 0, 0, 1])[:3] - C[k]).max())
            for s, sign in zip(BAR_SIDES, (1, -1)):
                end = P[f"forearm_{k + 1}{s}_link"] @ [geo.forearm_length, 0, 0, 1]
                target = X_fk + geo.platform_radius * uk + sign * 0.5 * geo.forearm_spacing * tk
                errs.append(np.abs(end[:3] - target).max())
        worst = max(worst, *errs)
    rep.max_error = float(worst)
    if worst > tol:
        bad(f"closed chain does not close: worst mismatch {worst:.3g} m > {tol:g} m over {len(Xs)} poses")

    # ---- ros2_control
    root = ET.fromstring(urdf_xml.encode())
    blocks = root.findall("ros2_control")
    if len(blocks) > 1:
        bad(f"{len(blocks)} <ros2_control> blocks, expected at most one")
    for blk in blocks:
        plugin = (blk.findtext("hardware/plugin") or "").strip()
        if plugin not in KNOWN_PLUGINS:
            bad(f"<ros2_control>: plugin {plugin!r} is not one of {', '.join(KNOWN_PLUGINS)}")
        joints = [j.get("name") for j in blk.findall("joint")]
        if joints != list(robot.joint_names):
            bad(f"<ros2_control>: joints {joints}, expected the actuated joints {list(robot.joint_names)}")
        for j in blk.findall("joint"):
            states = [s.get("name") for s in j.findall("state_interface")]
            if sorted(states) != ["effort", "position", "velocity"]:
                bad(f"<ros2_control> joint {j.get('name')}: state interfaces {states}, expected position, velocity, effort")
            if not j.findall("command_interface"):
                bad(f"<ros2_control> joint {j.get('name')}: no command interface")
        rep.notes.append(f"ros2_control: {plugin}, joints {', '.join(joints)}")
    rep.notes.insert(0, f"{len(u.links)} links, {len(u.joints)} joints ({len(have)} movable: "
                        f"3 actuated, {len(have) - 3} passive)")
    rep.notes.append(f"closed chain: worst mismatch {worst:.2g} m over {len(Xs)} random reachable poses")
    return rep
