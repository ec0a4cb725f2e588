"""Validate a Delta URDF against its robot file (``delta-description check``).

:func:`check_description` parses the URDF with urdf_parser_py and reports every mismatch:

* structure: one tree rooted at ``base_link``; the movable joints are exactly the actuated joints
  of the robot file plus the passive ones of :mod:`delta_description.passive_joints`, of the
  right types and axes;
* the robot file's numbers: joint limits (position, velocity, torque), friction, the motor axis
  at R u_i, the elbow at upper_arm_length and +-forearm_spacing/2, the bar length
  forearm_length, masses and COMs (upper arm; half a forearm per bar at com_ratio; platform +
  payload) and the dominant inertias; for a linear Delta the rail at R u_i, the carriage joint
  (prismatic along z, force limit), the rods at +-rod_spacing/2 with length rod_length, the
  carriage, rod and platform masses, the rods' inertia, and tool0 tool_offset below the platform;
* physical inertias: every tensor positive definite with the triangle inequality
  I_a + I_b >= I_c for its principal moments;
* the closed chain: at ``samples`` random reachable poses, with the passive values from
  :func:`~delta_description.passive_joints.full_joint_state`, the composed transforms put
  the platform at forward_kinematics(q), each elbow at C_i (each carriage joint at
  A_i = R u_i + q_i e_z) and each bar's (rod's) far end (x = its length in its frame) on its
  platform joint X + r u_i +- (spacing/2) t_i, within ``tol``; the passive values lie inside
  their URDF limits;
* per-arm geometry (``geometry.per_arm``, a calibrated robot): each chain's own radius, lengths
  and joint offset (the upper arm turned by o_i at q = 0; the carriage raised by o_i), so the
  closed chain closes with the per-arm kinematics;
* the ``<ros2_control>`` block, if any: one joint entry per actuated joint with position,
  velocity and effort state interfaces and a known plugin.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from delta_description.passive_joints import (BAR_SIDES, PLATFORM_JOINTS, full_joint_state,
                                              link_joint_names, movable_joint_names)
from delta_core.robot_file import RobotParameters
from delta_description.urdf_model import KinematicTree, UrdfError, rpy_matrix
from delta_description.xacro_urdf import TOPIC_PLUGIN, TOPIC_PLUGIN_LEGACY
from delta_dynamics.algorithms import forward_kinematics, inverse_kinematics, passive_origins, sample_workspace
from delta_dynamics.kinds import model_for

KNOWN_PLUGINS = ("mock_components/GenericSystem", TOPIC_PLUGIN, TOPIC_PLUGIN_LEGACY)


@dataclass
class CheckReport:
    """What :func:`check_description` found: ``problems`` (the URDF disagrees with the robot file)
    and ``notes``."""
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    max_error: float = 0.0          # m, worst closed-chain mismatch over the sampled poses

    @property
    def ok(self) -> bool:
        """Whether no problem was found."""
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


class _Kind:
    """What the URDF of one kind of Delta must hold, from its robot file (rotary or linear)."""

    def __init__(self, robot: RobotParameters):
        g, mp = robot.geometry, robot.mass
        self.linear = robot.type == "linear"
        arms = [g.arm(k) for k in range(3)]        # each chain's own geometry (geometry.per_arm)
        self.offset = [a["joint_offset"] for a in arms]
        if self.linear:
            self.angles, self.radius = g.rail_angles_deg, [a["rail_radius"] for a in arms]
            self.spacing, self.length_field = g.rod_spacing, "rod_length"
            self.length = [a["rod_length"] for a in arms]
            self.platform_radius = [g.platform_radius] * 3
            self.actuated_type, self.actuated_axis = "prismatic", (0, 0, 1)
            self.mount = "carriage_{i}_link"                      # the frame at the actuated joint
            self.link = "rod_{i}{s}_link"
            self.bend_origin = lambda k, sign: [0.0, sign * 0.5 * g.rod_spacing, 0.0]
        else:
            self.angles, self.radius = g.chain_angles_deg, [a["base_radius"] for a in arms]
            self.spacing, self.length_field = g.forearm_spacing, "forearm_length"
            self.length = [a["forearm_length"] for a in arms]
            self.upper = [a["upper_arm_length"] for a in arms]
            self.platform_radius = [a["platform_radius"] for a in arms]
            self.actuated_type, self.actuated_axis = "revolute", (0, 1, 0)
            self.mount = "upper_arm_{i}_link"
            self.link = "forearm_{i}{s}_link"
            self.bend_origin = lambda k, sign: [self.upper[k], sign * 0.5 * g.forearm_spacing, 0.0]
        want = {}
        for i in (1, 2, 3):
            if self.linear:
                want[f"carriage_{i}_link"] = (mp.carriage.mass, (0.0, 0, 0), None)
            else:
                want[f"upper_arm_{i}_link"] = (mp.upper_arm.mass, (mp.upper_arm.com_distance, 0, 0),
                                               mp.upper_arm.inertia)
            for s in BAR_SIDES:
                if self.linear:
                    want[self.link.format(i=i, s=s)] = (mp.rod.mass, (0.5 * self.length[i - 1], 0, 0), mp.rod.inertia)
                else:
                    want[self.link.format(i=i, s=s)] = (0.5 * mp.forearm.mass,
                                                        (mp.forearm.com_ratio * self.length[i - 1], 0, 0),
                                                        0.5 * mp.forearm.inertia)
        want["platform_link"] = (mp.platform_mass + mp.payload_mass, (0.0, 0, 0), None)
        self.masses = want

    def joint_point(self, model, q, k):
        """Where chain k's passive links start: the elbow C_k or the carriage joint A_k."""
        return passive_origins(model, q)[k]

    def joint_point_local(self, k):
        """That point in chain k's mount frame (the upper arm's end, or the carriage frame's origin)."""
        return [0.0, 0.0, 0.0, 1.0] if self.linear else [self.upper[k], 0.0, 0.0, 1.0]

    def mount_pose(self, k):
        """Chain k's mount frame at joint position 0: at R_k u_k turned by phi_k about z; the joint
        offset o_k turns the upper arm by o_k about its axis (rotary) or raises the carriage by o_k."""
        phi = math.radians(self.angles[k])
        p = np.array([self.radius[k] * math.cos(phi), self.radius[k] * math.sin(phi), 0.0])
        rot = rpy_matrix((0, 0, phi))
        if self.linear:
            p[2] = self.offset[k]
        else:
            rot = rot @ rpy_matrix((0, self.offset[k], 0))
        return p, rot


def check_description(robot: RobotParameters, urdf_xml: str, samples: int = 20, tol: float = 1e-6,
                      seed: int = 0) -> CheckReport:
    """Check a URDF against the robot file it was made from (either kind of Delta); see the
    module docstring."""
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
    kd = _Kind(robot)

    # ---- joints: names, types, axes
    expected = movable_joint_names(robot)
    have = tree.movable_joints
    if set(have) != set(expected):
        bad(f"movable joints differ from the robot file's: missing {sorted(set(expected) - set(have))}, "
            f"unexpected {sorted(set(have) - set(expected))}")
        return rep
    want_axis = {n: (kd.actuated_axis, kd.actuated_type) for n in robot.joint_names}
    want_axis.update((n, (a, "prismatic")) for n, a in zip(PLATFORM_JOINTS, ((1, 0, 0), (0, 1, 0), (0, 0, 1))))
    for i in (1, 2, 3):
        for s in BAR_SIDES:
            bend, tilt = link_joint_names(robot, i, s)
            want_axis[bend], want_axis[tilt] = ((0, 1, 0), "revolute"), ((0, 0, 1), "revolute")
    for name, (axis, kind) in want_axis.items():
        j = tree.joints[name]
        if j.type != kind:
            bad(f"joint {name}: type {j.type}, expected {kind}")
        if not np.allclose(j.axis, axis):
            bad(f"joint {name}: axis {j.axis.tolist()}, expected {list(axis)}")

    # ---- actuated joints: limits, friction, placement
    geo = robot.geometry
    jmap = u.joint_map
    for k, name in enumerate(robot.joint_names):
        j = jmap[name]
        lo, hi = robot.limits.position[k]
        lim = j.limit
        for what, got, want in (("lower", lim.lower, lo), ("upper", lim.upper, hi),
                                ("velocity", lim.velocity, robot.limits.velocity[k]),
                                ("effort", lim.effort, robot.limits.effort[k])):
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
        mount = kd.mount.format(i=k + 1)
        pose = poses0[mount]
        want_p, want_r = kd.mount_pose(k)
        if not np.allclose(pose[:3, 3], want_p, atol=1e-9) or not np.allclose(pose[:3, :3], want_r, atol=1e-9):
            bad(f"{mount} at q = 0 is not at R u_i rotated by phi_i = {kd.angles[k]} deg"
                + (f" with joint offset {kd.offset[k]:g}" if kd.offset[k] else ""))
        for s, sign in zip(BAR_SIDES, (1, -1)):
            bend = tree.joints[link_joint_names(robot, k + 1, s)[0]]
            want = kd.bend_origin(k, sign)
            if not np.allclose(bend.origin[:3, 3], want, atol=1e-9):
                bad(f"joint {bend.name}: origin {bend.origin[:3, 3].tolist()}, expected {want}")
            link = u.link_map[kd.link.format(i=k + 1, s=s)]
            cyl = [v for v in link.visuals if type(v.geometry).__name__ == "Cylinder"]
            if not cyl or not _close(cyl[0].geometry.length, kd.length[k]):
                what = "bar" if not kd.linear else "rod"
                bad(f"link {link.name}: {what} length {cyl[0].geometry.length if cyl else None}, "
                    f"robot file {kd.length_field} {kd.length[k]}")
    if kd.linear:
        tool = tree.joints.get("tool0_joint")
        if tool is None or not np.allclose(tool.origin[:3, 3], [0, 0, -geo.tool_offset], atol=1e-9):
            bad(f"tool0_joint: origin {None if tool is None else tool.origin[:3, 3].tolist()}, expected "
                f"[0, 0, -tool_offset] = [0, 0, {-geo.tool_offset}]")

    # ---- inertials
    want_mass = kd.masses
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
            if not np.allclose(xyz, com, atol=1e-9):
                bad(f"link {link.name}: COM {list(xyz)}, expected [{com[0]}, {com[1]}, {com[2]}]")
            if dominant is not None:
                I = ine.inertia
                if not _close(I.iyy, max(dominant, 1e-9)) or not _close(I.izz, max(dominant, 1e-9)):
                    bad(f"link {link.name}: iyy/izz {I.iyy}/{I.izz}, robot file gives {dominant}")

    # ---- the closed chain
    model = model_for(robot)
    lim_of = {j.name: j.limit for j in u.joints}
    try:
        Xs = sample_workspace(model, samples, seed=seed)
    except RuntimeError as e:
        bad(f"cannot sample the workspace: {e}")
        Xs = []
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
        if kd.linear and "tool0" in P:
            errs.append(np.abs(P["tool0"][:3, 3] - (X_fk - [0.0, 0.0, geo.tool_offset])).max())
        for k in range(3):
            phi = math.radians(kd.angles[k])
            uk = np.array([math.cos(phi), math.sin(phi), 0.0])
            tk = np.array([-math.sin(phi), math.cos(phi), 0.0])
            start = P[kd.mount.format(i=k + 1)] @ kd.joint_point_local(k)
            errs.append(np.abs(start[:3] - kd.joint_point(model, q, k)).max())
            for s, sign in zip(BAR_SIDES, (1, -1)):
                end = P[kd.link.format(i=k + 1, s=s)] @ [kd.length[k], 0, 0, 1]
                target = X_fk + kd.platform_radius[k] * uk + sign * 0.5 * kd.spacing * tk
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
