"""A URDF as a kinematic tree: parse it (urdf_parser_py) and compose its joint transforms.

This is what ``robot_state_publisher`` does for TF, in numpy, so that tests, ``delta-description
check`` and the picture in the README all read the robot from the URDF itself.

The pose of a link in the root frame is the product along the path from the root::

    T_root^child = T_root^parent . T_origin(joint) . M(joint, value)

with ``T_origin`` the joint's ``<origin xyz rpy>`` (URDF rpy: fixed-axis roll about x, then
pitch about y, then yaw about z, i.e. ``R = R_z(yaw) R_y(pitch) R_x(roll)``) and ``M`` the joint
motion along its unit ``<axis>`` a: a rotation by the value about a (revolute, continuous), a
translation by value * a (prismatic), the identity (fixed).

Example::

    >>> from delta_description.xacro_urdf import robot_description
    >>> tree = KinematicTree(robot_description("nt_robot"))
    >>> tree.root
    'base_link'
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MOVABLE_TYPES = ("revolute", "continuous", "prismatic")


class UrdfError(ValueError):
    """A URDF that cannot be parsed or is not a single tree."""


def rpy_matrix(rpy) -> np.ndarray:
    """Rotation matrix of URDF roll-pitch-yaw: R_z(yaw) R_y(pitch) R_x(roll)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def axis_angle_matrix(axis, angle: float) -> np.ndarray:
    """Rodrigues: rotation by ``angle`` about the unit vector ``axis``."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def homogeneous(rotation=None, translation=None) -> np.ndarray:
    """The 4x4 homogeneous transform of a 3x3 ``rotation`` and a ``translation`` (m); the
    identity part where either is None."""
    t = np.eye(4)
    if rotation is not None:
        t[:3, :3] = rotation
    if translation is not None:
        t[:3, 3] = translation
    return t


def origin_matrix(origin) -> np.ndarray:
    """4x4 transform of a urdf_parser_py Pose (``None`` is the identity)."""
    if origin is None:
        return np.eye(4)
    xyz = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    rpy = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    return homogeneous(rpy_matrix(rpy), xyz)


def parse_urdf(urdf_xml: str):
    """Parse a URDF string with urdf_parser_py, collecting its warnings instead of printing them.

    Returns ``(robot, warnings)``. The ``<ros2_control>`` block is not part of the URDF schema
    urdf_parser_py knows; its "unknown tag" warning is dropped. Raises :class:`UrdfError`.
    """
    # urdf_parser_py: loaded when a URDF is parsed
    from urdf_parser_py import urdf as urdf_mod
    from urdf_parser_py.xml_reflection import core

    warnings: list[str] = []
    saved = core.on_error
    core.on_error = lambda msg: warnings.append(str(msg))
    try:
        robot = urdf_mod.URDF.from_xml_string(urdf_xml)
    except Exception as e:  # lxml / reflection errors of every kind
        raise UrdfError(f"URDF does not parse: {e}") from None
    finally:
        core.on_error = saved
    warnings = [w for w in warnings if not w.startswith('Unknown tag "ros2_control"')]
    return robot, warnings


@dataclass(frozen=True)
class JointInfo:
    """One joint of the URDF: name, type, parent and child links, origin (4x4) and axis."""
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray          # 4x4
    axis: np.ndarray            # unit vector in the joint frame


class KinematicTree:
    """Joint transforms of one URDF; :meth:`link_poses` gives every link's pose in the root frame."""

    def __init__(self, urdf):
        if isinstance(urdf, str):
            urdf, self.warnings = parse_urdf(urdf)
        else:
            self.warnings = []
        self.urdf = urdf
        self.joints: dict[str, JointInfo] = {}
        for j in urdf.joints:
            axis = np.asarray(j.axis if j.axis is not None else (1.0, 0.0, 0.0), dtype=float)
            n = np.linalg.norm(axis)
            if j.type in MOVABLE_TYPES and not n > 0:
                raise UrdfError(f"joint {j.name}: axis must be non-zero, got {list(axis)}")
            self.joints[j.name] = JointInfo(j.name, j.type, j.parent, j.child,
                                            origin_matrix(j.origin), axis / n if n > 0 else axis)
        links = [link.name for link in urdf.links]
        children = [j.child for j in self.joints.values()]
        dup = {c for c in children if children.count(c) > 1}
        if dup:
            raise UrdfError(f"links with more than one parent joint: {sorted(dup)} (a URDF must be a tree)")
        roots = [name for name in links if name not in children]
        if len(roots) != 1:
            raise UrdfError(f"a URDF needs exactly one root link, got {roots}")
        self.root = roots[0]
        self._order = self._topological()

    def _topological(self) -> list:
        """Joints ordered so that each comes after the joint that moves its parent link."""
        by_parent: dict[str, list] = {}
        for j in self.joints.values():
            by_parent.setdefault(j.parent, []).append(j)
        order, stack = [], [self.root]
        while stack:
            link = stack.pop()
            for j in by_parent.get(link, []):
                order.append(j)
                stack.append(j.child)
        if len(order) != len(self.joints):
            missing = sorted(set(self.joints) - {j.name for j in order})
            raise UrdfError(f"joints not connected to the root link {self.root}: {missing}")
        return order

    @property
    def movable_joints(self) -> list:
        """Names of the non-fixed joints, in the URDF's order."""
        return [j.name for j in self.urdf.joints if j.type in MOVABLE_TYPES]

    @staticmethod
    def motion(joint: JointInfo, value: float) -> np.ndarray:
        """M(joint, value): the joint's own motion, in the frame after its origin."""
        if joint.type in ("revolute", "continuous"):
            return homogeneous(axis_angle_matrix(joint.axis, value))
        if joint.type == "prismatic":
            return homogeneous(translation=value * joint.axis)
        if joint.type == "fixed":
            return np.eye(4)
        raise UrdfError(f"joint {joint.name}: type {joint.type!r} is not supported")

    def link_poses(self, positions: dict) -> dict:
        """Pose (4x4) of every link in the root frame for the given joint positions.

        ``positions`` maps joint name -> value (rad or m) and must hold every movable joint;
        a missing one raises ``KeyError`` naming all that are missing.
        """
        missing = [n for n in self.movable_joints if n not in positions]
        if missing:
            raise KeyError(f"no position for joints {missing}")
        poses = {self.root: np.eye(4)}
        for j in self._order:
            value = float(positions[j.name]) if j.type in MOVABLE_TYPES else 0.0
            poses[j.child] = poses[j.parent] @ j.origin @ self.motion(j, value)
        return poses
