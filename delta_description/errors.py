"""The errors a user of the description tools can cause, turned into one line and exit code 2."""
from __future__ import annotations

import sys

from delta_core.robot_file import RobotFileError
from delta_core.text_input import TextInputError
from delta_description.urdf_model import UrdfError
from delta_description.xacro_urdf import DescriptionError
from delta_dynamics.algorithms import UnreachableError


def guarded(prog: str, fn, args) -> int:
    """Run ``fn(args)``; turn the errors a user can cause (a bad robot file, URDF, option or
    pose, an unreadable file) into ``<prog>: error: <message>`` on stderr and exit code 2."""
    try:
        return fn(args)
    except (RobotFileError, DescriptionError, UrdfError, UnreachableError, TextInputError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
    except OSError as e:
        print(f"{prog}: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
    return 2
