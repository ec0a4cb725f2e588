"""Shared pieces of the ``delta-dynamics`` subcommands: the error type, argument types and
small output helpers."""
from __future__ import annotations

import argparse
import math
import re
import sys

PROG = "delta-dynamics"
DEFAULT_ROBOT = "nt_robot"


class CliError(Exception):
    """A user-facing error: printed as ``delta-dynamics: error: <message>``, exit status 2."""


# ----------------------------------------------------------------------------- helpers

def finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return v


def positive(text: str) -> float:
    v = finite(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def nonnegative(text: str) -> float:
    v = finite(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def count(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return v


def smoothing(text: str):
    if text == "auto":
        return "auto"
    try:
        return nonnegative(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (give 'auto' or a noise level in m)") from None


ALL_KINDS = ("rotary", "prismatic")


def require_kind(params, robot: str, kinds=("rotary",)):
    """Refuse (by name) a loaded robot file whose ``type`` is not in ``kinds``, the kinds the
    calling subcommand handles; returns ``params``."""
    if params.type not in kinds:
        raise CliError(f"robot {params.name} ({robot}) is a {params.type} Delta; this command "
                       f"handles {' and '.join(kinds)} robots only so far")
    return params


def model_for(robot: str, friction: bool = True, kinds=ALL_KINDS):
    """The model of ``robot`` (either kind by default); a robot whose ``type`` is not in
    ``kinds`` (the kinds the calling subcommand handles) is refused by name."""
    from delta_core.robot_file import load_robot
    from delta_dynamics.kinds import model_for as model_of
    params = require_kind(load_robot(robot), robot, kinds)
    return model_of(params, friction=friction)


SAMPLE = re.compile(r" \(sample \d+\)")


def row_error(table, err) -> CliError:
    """An UnreachableError on sample k of a CSV file -> an error naming its line and time."""
    k = int(getattr(err, "index", 0) or 0)
    return CliError(f"{table.where(k)}: {SAMPLE.sub('', str(err))}")


def info(msg: str) -> None:
    print(msg, file=sys.stderr)


def fmt(v, spec=".9g") -> str:
    return " ".join(format(float(x), spec) for x in v)


def robot_option(sp, default=DEFAULT_ROBOT, help_=None):
    sp.add_argument("--robot", default=default, metavar="NAME|FILE",
                    help=help_ or f"robot preset name or robot file (default: {default})")
