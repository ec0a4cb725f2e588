"""One entry point for either kind of Delta robot: the model of a robot file and the modules
that go with it, so callers need not branch on the robot's ``type``.

The rotary and the linear (prismatic) model offer the same functions with the same
signatures (``inverse_kinematics``, ``inverse_dynamics``, ``step``, ...) in parallel modules:
:mod:`delta_dynamics.kinematics` / :mod:`delta_dynamics.prismatic.kinematics` and so on.
:func:`modules` returns the right set for a model; :func:`joint_units` the units and CSV
column names of its joints.

>>> m = model_for("colombo2020")
>>> ops = modules(m)
>>> ops.kinematics.inverse_kinematics(m, [0.0, 0.0, 0.05]).round(4).tolist()
[0.2372, 0.2372, 0.2372]
>>> joint_units(m)["effort"], joint_units(model_for("nt_robot"))["effort"]
('N', 'N m')
"""
from __future__ import annotations

import importlib
from types import SimpleNamespace

from delta_core.robot_file import load_robot

#: The model class and the package of each robot ``type``.
_KINDS = {
    "rotary": ("delta_dynamics.model", "DeltaModel", "delta_dynamics"),
    "prismatic": ("delta_dynamics.prismatic.model", "PrismaticDeltaModel", "delta_dynamics.prismatic"),
}

_UNITS = {
    "rotary": {"position": "rad", "velocity": "rad/s", "acceleration": "rad/s^2", "effort": "N m",
               "effort_column": "tau", "joint": "joint"},
    "prismatic": {"position": "m", "velocity": "m/s", "acceleration": "m/s^2", "effort": "N",
                  "effort_column": "f", "joint": "carriage"},
}


def kind_of(model_or_robot) -> str:
    """``"rotary"`` or ``"prismatic"`` for a model or loaded robot parameters."""
    kind = getattr(model_or_robot, "kind", None)
    if kind is None:
        robot = getattr(model_or_robot, "robot", model_or_robot)
        kind = getattr(robot, "type", "rotary")
    return kind


def model_for(robot, friction: bool = True):
    """The model of a robot file (preset name, path or loaded parameters), of its kind."""
    params = load_robot(robot)
    mod, cls, _ = _KINDS[params.type]
    m = getattr(importlib.import_module(mod), cls)(params)
    return m if friction else m.without_friction()


def modules(model) -> SimpleNamespace:
    """``kinematics``, ``dynamics``, ``simulate`` and ``model`` modules for ``model``'s kind."""
    _, _, pkg = _KINDS[kind_of(model)]
    return SimpleNamespace(**{name: importlib.import_module(f"{pkg}.{name}")
                              for name in ("model", "kinematics", "dynamics", "simulate")})


def joint_units(model) -> dict:
    """Units of the joints of ``model``'s kind and the CSV prefix of their efforts."""
    return dict(_UNITS[kind_of(model)])
