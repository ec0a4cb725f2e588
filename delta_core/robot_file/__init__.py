"""The robot file: one YAML file per robot, read by everything (dynamics, simulator, URDF,
drivers) through :func:`load_robot`, at the edge of a process (``docs/architecture.md``: the
builders read files, everything below receives the loaded :class:`RobotParameters`). Field
reference with units: ``docs/robot_file.md``.

``load_robot("nt_robot")`` takes a preset name (``config/robots/<name>.yaml``) or a path.
Every value is validated; a bad one raises :class:`RobotFileError` naming the file, the
field and the rule, e.g. ``config/robots/x.yaml: geometry.forearm_length must be > 0, got -0.3``.

The modules, one concern each: :mod:`.reader` (the file and its fields), :mod:`.bounds`
(plausibility bounds), :mod:`.common` (the top level and the sections every kind has),
one schema module per robot kind (:mod:`.rotary`, :mod:`.linear`: its dataclasses, fields,
bounds and rules), :mod:`.presets` (where a name's file is). The kinds are plug-ins of
:data:`TYPES` (:class:`delta_core.plugins.Registry`), one line each.

Example::

    >>> from delta_core.robot_file import load_robot
    >>> robot = load_robot("nt_robot")
    >>> robot.geometry.forearm_length
    0.8
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from delta_core.atomic_file import atomic_write_text
from delta_core.plugins import Registry
from delta_core.robot_file.bounds import Bound, check_bound, why_implausible
from delta_core.robot_file.common import Friction, RobotFileKind, RobotParameters
from delta_core.robot_file.linear import (Carriage, LinearDrive, LinearGeometry, LinearLimits,
                                          LinearMassProperties, Rod)
from delta_core.robot_file.presets import list_presets, resolve_robot_path
from delta_core.robot_file.reader import MAX_FILE_BYTES, Reader, RobotFileError, read_robot_file
from delta_core.robot_file.rotary import (BodyMass, Forearm, FullBody, Geometry, Limits, MassProperties,
                                          Motor, UpperArm)

#: The robot kinds a robot file's ``type`` may name, each a
#: :class:`~delta_core.robot_file.common.RobotFileKind` of its schema module. ``prismatic`` is
#: the linear kind's old name: files that say it keep loading (as ``type: linear``).
TYPES = Registry("robot type")
TYPES.register("rotary", "delta_core.robot_file.rotary:KIND")
TYPES.register("linear", "delta_core.robot_file.linear:KIND")
TYPES.register("prismatic", "delta_core.robot_file.linear:KIND", alias_of="linear")


def robot_types() -> tuple:
    """The robot file's ``type`` values, canonical names first (``rotary, linear``)."""
    return tuple(n for n in TYPES.names() if "alias_of" not in TYPES.info(n))


def parse_robot(data: Any, source: str = "") -> RobotParameters:
    """Validate the YAML structure of a robot file (``source`` names it in messages) and build
    :class:`RobotParameters` of its kind."""
    r = Reader(data, source)
    rtype = r.get("type", "rotary")
    if not isinstance(rtype, str) or rtype not in TYPES:
        aliases = [f"{n} (the old name of {TYPES.info(n)['alias_of']})" for n in TYPES.names()
                   if "alias_of" in TYPES.info(n)]
        r.fail("type", f"must be one of {', '.join(robot_types())} (or {', '.join(aliases)}), got {rtype!r}")
    kind = TYPES.get(rtype)
    r.bounds = kind.bounds
    return kind.parse(r)


def load_robot(robot: str | os.PathLike | RobotParameters) -> RobotParameters:
    """Load and validate a robot file given by preset name or path (a RobotParameters passes
    through: builders call this once, at the edge).

    Besides the field rules (:func:`parse_robot`) the file itself must be UTF-8 text of at
    most :data:`MAX_FILE_BYTES` and YAML within :func:`delta_core.safe_yaml.load`'s limits
    (nesting, aliases, integer length, duplicate keys); every problem raises
    :class:`RobotFileError` with one line naming the file.
    """
    if isinstance(robot, RobotParameters):
        return robot
    path = resolve_robot_path(robot)
    return parse_robot(read_robot_file(path), source=str(path))


def save_robot(robot: RobotParameters, path: str | os.PathLike, header: str = "") -> Path:
    """Write ``robot`` as a robot file, atomically. ``header`` becomes a leading comment."""
    body = yaml.safe_dump(robot.to_dict(), sort_keys=False, default_flow_style=None)
    comment = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    parse_robot(yaml.safe_load(body), source=os.fspath(path))  # never write an invalid file
    return atomic_write_text(path, comment + body)


__all__ = ["Bound", "BodyMass", "Carriage", "Forearm", "Friction", "FullBody", "Geometry", "Limits",
           "LinearDrive", "LinearGeometry", "LinearLimits", "LinearMassProperties", "MAX_FILE_BYTES",
           "MassProperties", "Motor", "Rod", "RobotFileError", "RobotFileKind", "RobotParameters", "TYPES", "UpperArm",
           "check_bound", "list_presets", "load_robot", "parse_robot", "read_robot_file",
           "resolve_robot_path", "robot_types", "save_robot", "why_implausible"]
