"""Where a robot file is: a preset name (``config/robots/<name>.yaml``) or a path."""
from __future__ import annotations

import os
from pathlib import Path

from delta_core.paths import PathError, check_readable_file
from delta_core.robot_file.reader import RobotFileError
from delta_core.share import share_file


def resolve_robot_path(robot: str | os.PathLike) -> Path:
    """A preset name (``nt_robot``) or a path to a robot file -> the file's path, checked to be
    a readable regular file (:func:`delta_core.paths.check_readable_file`; nothing is opened); a
    missing file, a directory, a FIFO, a device, a symlink loop or an unknown preset raises
    :class:`RobotFileError` naming it."""
    text = os.fspath(robot)
    if not text:
        raise RobotFileError("robot: empty name; give a preset name (e.g. nt_robot) or a file path")
    p = Path(text)
    if p.suffix in (".yaml", ".yml") or os.sep in text or os.path.lexists(text):
        try:       # a FIFO, a device, a directory, a symlink loop: refused by name, nothing opened
            return check_readable_file(p, "a robot file")
        except PathError as e:
            raise RobotFileError(str(e)) from None
    try:
        return share_file("config", "robots", f"{text}.yaml")
    except FileNotFoundError:
        raise RobotFileError(
            f"robot '{text}': no such preset (known: {', '.join(list_presets()) or 'none'}) "
            "and no such file") from None


def list_presets() -> list[str]:
    """Names of the robot presets shipped in ``config/robots``."""
    try:
        d = share_file("config", "robots")
    except FileNotFoundError:
        return []
    return sorted(p.stem for p in d.glob("*.yaml"))
