"""Run ``delta_description/urdf/delta.urdf.xacro`` for a robot file and return the URDF text.

The one xacro file serves both kinds of Delta: it reads the robot file's ``type`` and builds
the rotary tree (``delta_rotary.xacro``) or the linear one (``delta_linear.xacro``).

The robot file is validated with :func:`delta_core.robot_file.load_robot` first, so a bad
file gives the loader's message (file, field, rule) rather than a xacro traceback; then xacro
(the ``xacro`` Python package) reads the same file with ``xacro.load_yaml``. The equivalent
command line, as a ``robot_state_publisher`` launch file would run it::

    xacro <share>/urdf/delta.urdf.xacro robot_file:=/abs/path/robot.yaml ros2_control:=mock

Example::

    >>> urdf = robot_description("nt_robot", ros2_control="mock")
    >>> "mock_components/GenericSystem" in urdf
    True
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from delta_description.passive_joints import passive_joint_names
from delta_core.robot_file import (RobotFileError, RobotParameters, load_robot,
                                          resolve_robot_path, save_robot)
from delta_core.share import share_file

ROS2_CONTROL_MODES = ("none", "mock", "topic")
TOPIC_PLUGIN = "joint_state_topic_hardware_interface/JointStateTopicSystem"
TOPIC_PLUGIN_LEGACY = "topic_based_ros2_control/TopicBasedSystem"
#: link and fixed-joint names the xacro generates besides the movable joints (rotary robot)
FIXED_NAMES = tuple(f"motor_{i}_joint" for i in (1, 2, 3)) + ("tool0_joint",)
#: ... and for a linear robot
FIXED_NAMES_LINEAR = tuple(f"rail_{i}_joint" for i in (1, 2, 3)) + ("tool0_joint",)


def fixed_joint_names(robot) -> tuple:
    """The fixed joints the xacro generates for ``robot``'s kind."""
    return FIXED_NAMES_LINEAR if getattr(robot, "type", "rotary") == "linear" else FIXED_NAMES


class DescriptionError(ValueError):
    """The robot description cannot be built (bad option, name clash, xacro failure)."""


#: The further arguments ``delta.urdf.xacro`` declares (robot_file and ros2_control are set
#: by :func:`robot_description` itself).
XACRO_ARGS = ("topic_plugin", "joint_commands_topic", "joint_states_topic", "command_interfaces",
              "motor_mass")
COMMAND_INTERFACES = ("position", "velocity", "effort")


def check_xacro_args(args: dict) -> None:
    """Refuse an unknown xacro argument or a value the xacro cannot use, by name.

    >>> check_xacro_args({"motor_mass": "2.5", "command_interfaces": "position effort"})
    >>> try:
    ...     check_xacro_args({"motor_mass": "heavy"})
    ... except DescriptionError as e:
    ...     print(e)
    xacro argument motor_mass must be a number of kg in [0, 1000], got 'heavy'
    """
    for name, value in args.items():
        text = str(value)
        if name not in XACRO_ARGS:
            raise DescriptionError(f"unknown xacro argument {name!r} (known: {', '.join(XACRO_ARGS)})")
        if name == "motor_mass":
            try:
                v = float(text)
            except ValueError:
                v = float("nan")
            if not (math.isfinite(v) and 0 <= v <= 1000):
                raise DescriptionError(f"xacro argument motor_mass must be a number of kg in [0, 1000], "
                                       f"got {text!r}")
        elif name == "command_interfaces":
            got = text.split()
            if not got or not set(got) <= set(COMMAND_INTERFACES) or len(set(got)) != len(got):
                raise DescriptionError(f"xacro argument command_interfaces must be a non-empty subset of "
                                       f"{' '.join(COMMAND_INTERFACES)}, got {text!r}")
        elif not text or len(text) > 256 or any(c.isspace() or not c.isprintable() for c in text):
            raise DescriptionError(f"xacro argument {name} must be a name of at most 256 printable "
                                   f"characters without blanks, got {text[:80]!r}")


def xacro_path() -> Path:
    """Path of ``delta.urdf.xacro`` (source tree or installed ``share/delta_robot/urdf``)."""
    return share_file("urdf", "delta.urdf.xacro")


def xacro_mappings(robot_path, ros2_control: str = "none", **args) -> dict:
    """The xacro arguments (all strings) for a robot file path and a ros2_control mode."""
    if ros2_control not in ROS2_CONTROL_MODES:
        raise DescriptionError(f"ros2_control must be one of {', '.join(ROS2_CONTROL_MODES)}, "
                               f"got {ros2_control!r}")
    mappings = {"robot_file": str(Path(robot_path).resolve()), "ros2_control": ros2_control}
    mappings.update({k: str(v) for k, v in args.items()})
    return mappings


def _check_names(robot: RobotParameters) -> None:
    taken = set(passive_joint_names(robot)) | set(fixed_joint_names(robot))
    clash = [n for n in robot.joint_names if n in taken]
    if clash:
        raise DescriptionError(f"{robot.source or robot.name}: joint_names {clash} clash with joints "
                               "the URDF generates (see docs/conventions.md, 'Joint and link names')")


def robot_description(robot, ros2_control: str = "none", **args) -> str:
    """The URDF (XML text) of a robot given by preset name, file path or RobotParameters.

    ``args`` are further xacro arguments (``topic_plugin``, ``joint_commands_topic``,
    ``joint_states_topic``, ``command_interfaces``, ``motor_mass``). Raises
    :class:`~delta_core.robot_file.RobotFileError` for a bad robot file and
    :class:`DescriptionError` for anything else that stops the URDF from being built.
    """
    # xacro: loaded when a URDF is built
    import xacro

    if ros2_control not in ROS2_CONTROL_MODES:
        raise DescriptionError(f"ros2_control must be one of {', '.join(ROS2_CONTROL_MODES)}, "
                               f"got {ros2_control!r}")
    check_xacro_args(args)
    with tempfile.TemporaryDirectory(prefix="delta_description_") as tmp:
        if isinstance(robot, RobotParameters):
            params = robot
            path = Path(tmp) / f"{robot.name}.yaml"      # the xacro reads a file: write this one
            save_robot(robot, path)
        else:
            path = resolve_robot_path(robot)
            params = load_robot(path)
        _check_names(params)
        mappings = xacro_mappings(path, ros2_control, **args)
        source = xacro_path()
        try:
            doc = xacro.process_file(str(source), mappings=mappings)
        except Exception as e:  # XacroException and whatever a broken expression raises
            detail = " ".join(str(e).split()) or type(e).__name__      # xacro's are multi-line
            raise DescriptionError(f"{source}: xacro failed for robot file {path}: {detail}") from None
    shown = params.source if not isinstance(robot, RobotParameters) else f"robot '{params.name}'"
    banner = doc.createComment(
        f" generated by delta_description from {os.path.basename(str(source))}, robot file {shown}, "
        f"ros2_control={ros2_control}; do not edit ")
    doc.insertBefore(banner, doc.documentElement)
    return doc.toprettyxml(indent="  ")


__all__ = ["DescriptionError", "RobotFileError", "ROS2_CONTROL_MODES", "TOPIC_PLUGIN",
           "TOPIC_PLUGIN_LEGACY", "robot_description", "xacro_mappings", "xacro_path"]
