"""Names of the stack on a ROS network, without rclpy (``delta-bringup`` and the command-line
tool check them before ROS is imported).

Every topic of the stack is relative to the node's namespace (``joint_states``,
``diagnostics``, ``delta/...``) or private (``~/...``); only ``/clock`` is absolute, and a
namespaced stack remaps it to ``<ns>/clock`` for all its nodes (:func:`clock_remap`). The
``prefix`` (joint and frame name prefix, e.g. ``r1_``) is added to every joint name a node
publishes and must be on every joint name it receives. ``docs/ros_interfaces.md``,
"Namespaces and prefixes".
"""
from __future__ import annotations

import re

PREFIX_RULE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)?$")


def check_prefix(prefix) -> str:
    """The joint and frame name prefix if valid ('' or a letter then letters, digits, ``_``);
    ValueError naming the rule otherwise.

    >>> check_prefix("r1_")
    'r1_'
    >>> check_prefix("1/")
    Traceback (most recent call last):
    ...
    ValueError: prefix must be empty or a letter followed by letters, digits or '_' (a joint and frame name prefix such as 'r1_'), got '1/'
    """
    if not isinstance(prefix, str) or not PREFIX_RULE.match(prefix):
        raise ValueError("prefix must be empty or a letter followed by letters, digits or '_' (a joint and "
                         f"frame name prefix such as 'r1_'), got {prefix!r}")
    return prefix


def add_prefix(prefix: str, names) -> list:
    """``prefix + name`` for every name (the names a node publishes).

    >>> add_prefix("r1_", ["arm_1_joint"])
    ['r1_arm_1_joint']
    """
    return [prefix + n for n in names]


def strip_prefix(prefix: str, names) -> list:
    """The names without ``prefix`` (the names a node receives); ValueError naming those that
    lack it.

    >>> strip_prefix("r1_", ["r1_arm_1_joint", "r1_platform_x"])
    ['arm_1_joint', 'platform_x']
    >>> strip_prefix("r1_", ["arm_1_joint"])
    Traceback (most recent call last):
    ...
    ValueError: joint names ['arm_1_joint'] lack this robot's prefix 'r1_'
    """
    names = list(names)
    if not prefix:
        return names
    bad = [n for n in names if not n.startswith(prefix)]
    if bad:
        raise ValueError(f"joint names {bad} lack this robot's prefix {prefix!r}")
    return [n[len(prefix):] for n in names]


def clock_remap(namespace: str) -> list:
    """``--ros-args`` remap of ``/clock`` for the nodes of a stack in ``namespace`` (none in the
    root namespace): two simulated robots on one network each own their own clock.

    >>> clock_remap("/r1")
    ['-r', '/clock:=/r1/clock']
    >>> clock_remap("")
    []
    """
    namespace = namespace.strip("/")
    return ["-r", f"/clock:=/{namespace}/clock"] if namespace else []


def check_namespace(namespace: str) -> str:
    """'' or an absolute ROS namespace ('/r1', 'line2/r1' -> '/line2/r1'); ValueError otherwise.

    >>> check_namespace("line2/r1")
    '/line2/r1'
    >>> check_namespace("")
    ''
    """
    ns = namespace.strip().strip("/")
    if not ns:
        return ""
    if not all(re.match(r"^[A-Za-z][A-Za-z0-9_]*$", part) for part in ns.split("/")):
        raise ValueError(f"namespace must be names of letters, digits and '_' separated by '/', each "
                         f"starting with a letter, got {namespace!r}")
    return "/" + ns
