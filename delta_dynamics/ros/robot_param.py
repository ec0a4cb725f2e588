"""The ``robot`` parameter of the model-using nodes: its value -> a model, and how to name it."""
from __future__ import annotations

from delta_dynamics.kinds import model_for, same_kind_model


def load_model(robot: str, like=None, what: str = "robot"):
    """The model (of the robot file's kind) for a ``robot`` parameter value; ValueError
    (RobotFileError) with the loader's reason. ``like``: the model in use, whose kind a new
    file must have (a file of the other kind is refused, naming ``what``)."""
    if not isinstance(robot, str):
        raise ValueError(f"robot must be a string (preset name or file path), got {robot!r}")
    return model_for(robot) if like is None else same_kind_model(robot, like, what)


def describe(model) -> str:
    """``'name' (source)`` of a model's robot file, for log lines."""
    return f"'{model.robot.name}' ({model.robot.source})"
