"""Joint data from a file of either kind: a CSV file (:mod:`.joint_data`) or a rosbag2 bag
(:mod:`.bag`), told apart by the name (a ``.db3`` / ``.mcap`` file or a directory with
``metadata.yaml`` is a bag)."""
from __future__ import annotations

import os
from pathlib import Path

from delta_core.paths import why_missing
from delta_dynamics.kinds import joint_units

from .bag import is_bag, read_bag
from .csv_io import DataFileError
from .joint_data import JointData, read_joint_csv


def read_joint_data(path: str | os.PathLike, robot=None, topic: str = "/joint_states", effort: str = "torque",
                    stamp: str = "header") -> JointData:
    """A CSV file or a bag, by its name. A bag needs ``robot`` (the loaded robot file: joint
    names, and the motor data for ``effort="current"``); ``topic``, ``effort`` and ``stamp``
    are :func:`.bag.read_bag`'s. A CSV file's effort columns are the robot's kind's (any kind
    without ``robot``); its velocities and accelerations are optional. Raises
    :class:`~.csv_io.DataFileError` (a :class:`~.csv_io.CsvError` or :class:`~.bag.BagError`)
    naming the file and where in it, or OSError."""
    p = Path(path)
    if not p.exists():
        raise DataFileError(why_missing(p, "a file"))
    if is_bag(p):
        if robot is None:
            raise DataFileError(f"{p}: reading a bag needs the robot file (joint names)")
        m = robot.mass.motor
        return read_bag(p, robot.joint_names, topic=topic, effort=effort,
                        torque_factor=m.torque_constant * m.gear_ratio, stamp=stamp)
    if p.is_dir():
        raise DataFileError(f"{p}: a directory without metadata.yaml (not a rosbag2 bag)")
    if effort != "torque":
        raise DataFileError(f"{p}: CSV files hold torques (tau1..3) or forces (f1..3); "
                            "--effort current applies to bags")
    col = joint_units(robot)["effort_column"] if robot is not None else None
    return read_joint_csv(p, effort=col)
