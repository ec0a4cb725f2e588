"""``delta-dynamics``: trajectories, inverse and forward dynamics from the command line.

    delta-dynamics trajectory circle|lissajous|pick-place|ellipse [options] --out traj.csv
    delta-dynamics inverse --robot nt_robot --trajectory traj.csv --out torques.csv [--model staicu --powers]
    delta-dynamics compare --robot staicu2003 --trajectory traj.csv --models explicit,staicu --plot cmp.png
    delta-dynamics forward --robot nt_robot --torques torques.csv --out sim.csv
    delta-dynamics simulate --model multibody --torques torques.csv --out sim.csv [--reactions r.csv]
    delta-dynamics reactions --robot nt_robot --trajectory traj.csv --out reactions.csv
    delta-dynamics retime --robot nt_robot --path path.csv --out traj.csv [--no-friction --torque-scale 0.9]
    delta-dynamics plan pick --robot nt_robot --from X Y Z --to X Y Z --out traj.csv [--cycles N]
    delta-dynamics ik X Y Z          # platform position (m) -> joint angles (carriage positions)
    delta-dynamics fk Q1 Q2 Q3       # joint angles (rad; carriage positions in m) -> platform position
    delta-dynamics demo --out out/model/   # what `make model-demo` runs: plots in out/model/

Either kind of Delta (rotary, or linear with carriage positions in m and forces ``f1..f3``
in N) through :mod:`delta_dynamics.algorithms`; ``simulate --model multibody``, ``reactions``
and ``compare`` model rotary robots only and refuse a linear one by name.
CSV formats: :mod:`delta_dynamics.data_files` (``trajectory``, ``joint_data``). ``--robot`` takes a preset name
(``config/robots/<name>.yaml``) or a robot file path. Bad input (an unreadable or malformed
file, an unreachable point, a bad option) prints ``delta-dynamics: error: <message>`` to
stderr and exits with status 2; outputs are written atomically, so a failed run leaves any
existing output file untouched. SIGTERM or SIGHUP end a run cleanly (no temporary file left)
with status 143 or 129 (:mod:`delta_core.termination`). Size-like options are bounded and no
command makes or reads more than 1,000,000 samples (:mod:`delta_dynamics.limits`).
"""
from __future__ import annotations

import argparse
import sys

from delta_core.robot_file import RobotFileError
from delta_core.termination import run_terminable
from delta_dynamics.algorithms import UnreachableError
from delta_dynamics.cli import (compare, demo, forward, inverse, motion, point, reactions, simulate,
                                trajectory)
from delta_dynamics.cli.args import PROG, CliError

#: The subcommand modules, in the order of ``--help``; each has ``register(subparsers)``.
COMMANDS = (trajectory, inverse, forward, simulate, reactions, compare, motion, point, demo)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``delta-dynamics`` and its subcommands (:data:`COMMANDS`)."""
    p = argparse.ArgumentParser(
        prog=PROG, description="Delta robot kinematics and dynamics: trajectories, inverse and "
        "forward dynamics (CSV in, CSV out), single-point kinematics.",
        epilog="Units are SI (m, s, rad, N m); frames and signs: docs/conventions.md.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return p


def main(argv=None) -> int:
    """Entry point of the ``delta-dynamics`` console script; returns the exit status."""
    return run_terminable(PROG, _run, argv)


def _run(argv) -> int:
    """Parse ``argv``, run the subcommand, turn the errors a user can cause into one line and 2."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (CliError, RobotFileError, UnreachableError, ValueError, RuntimeError,
            ArithmeticError) as e:
        msg = str(e)
    except OSError as e:
        msg = f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
