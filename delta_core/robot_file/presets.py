"""Where a robot file is: a preset name (``config/robots/<name>.yaml``) or a path."""
from __future__ import annotations

import os
from pathlib import Path

from delta_core.robot_file.reader import RobotFileError
from delta_core.share import share_file


def resolve_robot_path(robot: str | os.PathLike) -> Path:
    """A preset name (``nt_robot``) or a path to a robot file -> the file's path; a missing file,
    a directory or an unknown preset raises :class:`RobotFileError` naming it."""
    text = os.fspath(robot)
    if not text:
        raise RobotFileError("robot: empty name; give a preset name (e.g. nt_robot) or a file path")
    p = Path(text)
    if p.suffix in (".yaml", ".yml") or os.sep in text or p.exists():
        if not p.exists():
            raise RobotFileError(f"{text}: robot file not found")
        if p.is_dir():
            raise RobotFileError(f"{text}: a directory, not a robot file")
        return p
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
