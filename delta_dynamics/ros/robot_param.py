"""The ``robot`` parameter of the model-using nodes: its value -> a model, and how to name it."""
from __future__ import annotations

from delta_dynamics.kinds import model_for


def load_model(robot: str):
    """The model (of the robot file's kind) for a ``robot`` parameter value; ValueError
    (RobotFileError) with the loader's reason."""
    if not isinstance(robot, str):
        raise ValueError(f"robot must be a string (preset name or file path), got {robot!r}")
    return model_for(robot)


def describe(model) -> str:
    """``'name' (source)`` of a model's robot file, for log lines."""
    return f"'{model.robot.name}' ({model.robot.source})"
