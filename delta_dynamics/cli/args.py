"""Shared pieces of the ``delta-dynamics`` subcommands (and of ``delta-identify`` and
``delta-description``): the error type, argument types and small output helpers.

Every size-like argument (a duration, a count, a rate, a sample time) has a documented
range, so no argument can ask for unbounded memory or time; a value outside it is refused by
argparse (``<prog>: error: argument --duration: must be <= 1e+06 s (...), got 1e9``, exit 2).
What a whole command generates is bounded too: at most :data:`MAX_SAMPLES` samples.

Example::

    >>> parse = float_in(0, 10, unit="s", lo_open=True)
    >>> parse("2.5")
    2.5
    >>> try:
    ...     parse("1e9")
    ... except argparse.ArgumentTypeError as e:
    ...     print(e)
    must be <= 10 s, got 1e9
"""
from __future__ import annotations

import argparse
import math
import re
import sys

from delta_core.robot_file import load_robot
from delta_dynamics.data_files.trajectory import read_trajectory
from delta_dynamics.kinds import KINDS
from delta_dynamics.kinds import model_for as kinds_model_for
from delta_dynamics.limits import MAX_SAMPLES

PROG = "delta-dynamics"
DEFAULT_ROBOT = "nt_robot"

#: Longest duration (s) of a generated trajectory, whatever the sample time.
MAX_DURATION = 1e6
#: Shortest sample time (s) of a generated trajectory.
MIN_DT = 1e-6
#: Largest length (m) a trajectory option may give (a Delta robot is smaller).
MAX_LENGTH = 100.0


class CliError(Exception):
    """A user-facing error: printed as ``delta-dynamics: error: <message>``, exit status 2."""


# ----------------------------------------------------------------------------- helpers

def finite(text: str) -> float:
    """argparse type: a finite number."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {_shown(text)!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"not a finite number: {_shown(text)!r}")
    return v


def positive(text: str) -> float:
    """argparse type: a finite number > 0."""
    v = finite(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def nonnegative(text: str) -> float:
    """argparse type: a finite number >= 0."""
    v = finite(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def count(text: str) -> int:
    """argparse type: an integer >= 1 (a count of steps or samples)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return v


def _num(v: float, unit: str) -> str:
    return f"{v:g} {unit}" if unit else f"{v:g}"


def float_in(lo=None, hi=None, *, unit: str = "", lo_open: bool = False, hi_open: bool = False,
             why: str = ""):
    """An argparse type: a finite float in [lo, hi] (``lo_open`` / ``hi_open``: strict); the
    error names the bound, its unit and ``why``."""
    note = f" ({why})" if why else ""

    def parse(text: str) -> float:
        v = finite(text)
        if lo is not None and (v <= lo if lo_open else v < lo):
            raise argparse.ArgumentTypeError(f"must be {'>' if lo_open else '>='} {_num(lo, unit)}, "
                                             f"got {_shown(text)}")
        if hi is not None and (v >= hi if hi_open else v > hi):
            raise argparse.ArgumentTypeError(f"must be {'<' if hi_open else '<='} {_num(hi, unit)}{note}, "
                                             f"got {_shown(text)}")
        return v
    parse.__name__ = "number"
    parse.bounds = (lo, hi, lo_open, hi_open, float)      # for tests: the documented range
    return parse


def _shown(text: str, limit: int = 40) -> str:
    """An argument as quoted in a message, cut to ``limit`` characters."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def int_in(lo=None, hi=None, *, why: str = "", even: bool = False):
    """An argparse type: an integer in [lo, hi] (``even``: and even); the error names the bound."""
    note = f" ({why})" if why else ""

    def parse(text: str) -> int:
        t = text.strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,30}", t):
            raise argparse.ArgumentTypeError(f"not an integer: {_shown(text)!r}")
        v = int(t)
        if lo is not None and v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {text}")
        if hi is not None and v > hi:
            raise argparse.ArgumentTypeError(f"must be <= {hi}{note}, got {text}")
        if even and v % 2:
            raise argparse.ArgumentTypeError(f"must be even, got {text}")
        return v
    parse.__name__ = "integer"
    parse.bounds = (lo, hi, False, False, int)
    return parse


def check_samples(n: float, what: str, fix: str) -> None:
    """Refuse a command that would make more than :data:`MAX_SAMPLES` samples; ``what``
    says where ``n`` comes from, ``fix`` how to get fewer."""
    if not n <= MAX_SAMPLES:
        raise CliError(f"{what} gives {n:.4g} samples, more than the {MAX_SAMPLES} a command may "
                       f"make (MAX_SAMPLES: about 1 kB of memory each); {fix}")


#: A position noise level (m): more than a metre is not noise on a Delta robot.
_noise = float_in(0.0, 1.0, unit="m")
#: Sample time of a generated trajectory.
sample_time = float_in(MIN_DT, 10.0, unit="s", why="use a sample time of at most 10 s")
#: A duration of a generated trajectory (or a part of it).
duration = float_in(0.0, MAX_DURATION, unit="s", lo_open=True, why="MAX_DURATION, about 11 days")
#: A duration that may be 0 (a ramp, a dwell).
duration0 = float_in(0.0, MAX_DURATION, unit="s", why="MAX_DURATION, about 11 days")
#: A length of a generated trajectory (radius, amplitude, height).
length = float_in(0.0, MAX_LENGTH, unit="m", lo_open=True, why="a Delta robot is smaller")
#: A coordinate of a generated trajectory.
coordinate = float_in(-MAX_LENGTH, MAX_LENGTH, unit="m", why="a Delta robot is smaller")


def smoothing(text: str):
    """argparse type of ``--smoothing``: ``auto`` or a noise level (m)."""
    if text == "auto":
        return "auto"
    try:
        return _noise(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (give 'auto' or a noise level in m)") from None


#: Every robot kind (``type``) there is.
ALL_KINDS = KINDS.names()


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
    params = require_kind(load_robot(robot), robot, kinds)
    return kinds_model_for(params, friction=friction)


SAMPLE = re.compile(r" \(sample \d+\)")


def row_error(table, err) -> CliError:
    """An UnreachableError on sample k of a CSV file -> an error naming its line and time."""
    k = int(getattr(err, "index", 0) or 0)
    return CliError(f"{table.where(k)}: {SAMPLE.sub('', str(err))}")


def info(msg: str) -> None:
    """Print ``msg`` on stderr (notes that are not the command's output)."""
    print(msg, file=sys.stderr)


def fmt(v, spec=".9g") -> str:
    """The numbers of ``v`` in ``spec`` format, separated by blanks."""
    return " ".join(format(float(x), spec) for x in v)


def robot_option(sp, default=DEFAULT_ROBOT, help_=None):
    """Add ``--robot NAME|FILE`` to the subparser ``sp``."""
    sp.add_argument("--robot", default=default, metavar="NAME|FILE",
                    help=help_ or f"robot preset name or robot file (default: {default})")


def command(sub, name: str, func, help_: str, description: str | None = None):
    """A subcommand ``name`` of ``sub`` run by ``func(args)``, with ``--robot``."""
    sp = sub.add_parser(name, help=help_, description=description or help_)
    sp.set_defaults(func=func)
    robot_option(sp)
    return sp


def read_trajectory_input(args) -> tuple:
    """(trajectory, table) of ``--trajectory`` read with ``--smoothing``; a note on stderr
    when its velocities and accelerations come from a smoothing spline of the positions."""
    data = read_trajectory(args.trajectory, smoothing=args.smoothing)
    if data.derived:
        info(f"{args.trajectory}: no velocity/acceleration columns: derived from a quintic "
             f"smoothing spline (noise sigma per axis: {fmt(data.smoothing, '.3g')} m)")
    return data.trajectory, data.table


def trajectory_input(sp, smoothing_help: str, what: str = "input trajectory") -> None:
    """Add ``--trajectory CSV`` (``what``) and ``--smoothing auto|SIGMA`` (for t,x,y,z-only
    input) to the subparser ``sp``."""
    sp.add_argument("--trajectory", required=True, metavar="CSV", help=what)
    sp.add_argument("--smoothing", type=smoothing, default="auto", metavar="auto|SIGMA", help=smoothing_help)
