"""``delta-description``: the robot description on the command line.

    delta-description urdf --robot nt_robot [--ros2-control none|mock|topic] [-o robot.urdf]
    delta-description check --robot d3s800 [--ros2-control mock] [--urdf robot.urdf]
    delta-description controllers --robot my_robot.yaml      # ros2_controllers.yaml for its joints
    delta-description moveit --robot nt_robot --out moveit/ [--prefix r1_]   # MoveIt 2 configuration
    delta-description render --robot nt_robot --out docs/images/robot.png

``--robot`` takes a preset name (``config/robots/<name>.yaml``) or a robot file path. Exit codes:
0 success, 1 ``check`` found problems, 2 bad input (robot file, option, xacro failure), with a
one-line message on stderr naming the file and field; never a traceback. SIGTERM / SIGHUP end
a run cleanly with 143 / 129 (:mod:`delta_core.termination`); outputs are written atomically.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from delta_core.atomic_file import atomic_write_text
from delta_core.paths import output_dir_arg, output_file_arg
from delta_core.robot_file import load_robot
from delta_core.ros.names import check_prefix
from delta_core.termination import run_terminable
from delta_core.text_input import read_text
from delta_description import render
from delta_description.check import check_description
from delta_description.errors import guarded
from delta_description.moveit_config import write_moveit_config
from delta_description.ros2_controllers import controllers_yaml
from delta_description.xacro_urdf import ROS2_CONTROL_MODES, DescriptionError, robot_description
from delta_dynamics.cli.args import int_in

PROG = "delta-description"
#: Largest URDF ``check --urdf`` reads (a Delta URDF is about 40 kB).
MAX_URDF_BYTES = 10 << 20
#: Most random poses of ``check --samples`` (50 take a fraction of a second).
MAX_SAMPLES = 10_000


def _xacro_args(args) -> dict:
    """The ``--arg NAME:=VALUE`` and ``--topic-plugin`` options as xacro arguments."""
    extra = {}
    for item in args.arg or []:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise DescriptionError(f"--arg must be name:=value, got {item!r}")
        extra[name] = value
    if args.topic_plugin:
        extra["topic_plugin"] = args.topic_plugin
    return extra


def cmd_urdf(args) -> int:
    """``urdf``: print (or write) the URDF of ``--robot``."""
    text = robot_description(args.robot, ros2_control=args.ros2_control, **_xacro_args(args))
    if args.output:
        atomic_write_text(args.output, text)
        print(args.output)
    else:
        sys.stdout.write(text)
    return 0


def cmd_check(args) -> int:
    """``check``: the URDF (generated, or ``--urdf``) against its robot file; exit 1 on a problem."""
    robot = load_robot(args.robot)
    if args.urdf:
        text = read_text(Path(args.urdf), MAX_URDF_BYTES, "a URDF")
        what = args.urdf
    else:
        text = robot_description(robot, ros2_control=args.ros2_control, **_xacro_args(args))
        what = f"URDF of {robot.source} (ros2_control={args.ros2_control})"
    rep = check_description(robot, text, samples=args.samples)
    for note in rep.notes:
        print(f"  {note}")
    if rep.ok:
        print(f"OK: {what} matches its robot file")
        return 0
    for p in rep.problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    print(f"{len(rep.problems)} problem(s) in {what}", file=sys.stderr)
    return 1


def cmd_controllers(args) -> int:
    """``controllers``: print ros2_controllers.yaml for the robot's joints."""
    sys.stdout.write(controllers_yaml(load_robot(args.robot)))
    return 0


def cmd_moveit(args) -> int:
    """``moveit``: write the MoveIt 2 configuration into ``--out``."""
    try:
        check_prefix(args.prefix)
    except ValueError as e:
        raise DescriptionError(f"--prefix: {e}") from None
    for path in write_moveit_config(load_robot(args.robot), args.out, args.prefix):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``delta-description`` and its subcommands."""
    p = argparse.ArgumentParser(prog=PROG, description="Delta robot description: URDF from the robot file.")
    sub = p.add_subparsers(dest="command", required=True)

    def robot_opts(sp, urdf_opts=True):
        sp.add_argument("--robot", required=True, help="preset name (e.g. nt_robot) or robot file path")
        if urdf_opts:
            sp.add_argument("--ros2-control", choices=ROS2_CONTROL_MODES, default="none",
                            help="<ros2_control> block: none, mock (GenericSystem) or topic (topic-based system)")
            sp.add_argument("--topic-plugin", help="plugin of the topic system (e.g. the older "
                                                   "topic_based_ros2_control/TopicBasedSystem)")
            sp.add_argument("--arg", action="append", metavar="NAME:=VALUE",
                            help="further xacro argument (joint_commands_topic, joint_states_topic, "
                                 "command_interfaces, motor_mass)")

    s = sub.add_parser("urdf", help="print the URDF (via xacro)")
    robot_opts(s)
    s.add_argument("-o", "--output", type=output_file_arg, help="write to this file instead of stdout")
    s.set_defaults(func=cmd_urdf)

    s = sub.add_parser("check", help="validate the URDF against the robot file")
    robot_opts(s)
    s.add_argument("--urdf", help="check this URDF file instead of generating one")
    s.add_argument("--samples", type=int_in(1, MAX_SAMPLES), default=50,
                   help=f"random poses for the closed-chain test, 1 to {MAX_SAMPLES} (default 50)")
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("controllers", help="print ros2_controllers.yaml for the robot's joint names")
    robot_opts(s, urdf_opts=False)
    s.set_defaults(func=cmd_controllers)

    s = sub.add_parser("moveit", help="write the MoveIt 2 configuration (SRDF, joint_limits, kinematics, "
                                      "moveit_controllers) for the robot file")
    robot_opts(s, urdf_opts=False)
    s.add_argument("--out", required=True, type=output_dir_arg, help="folder to write into (created if missing)")
    s.add_argument("--prefix", default="", help="joint and frame name prefix (e.g. r1_), as the launch's prefix:=")
    s.set_defaults(func=cmd_moveit)

    s = sub.add_parser("render", help="draw the URDF at a few poses into a PNG (matplotlib)")
    render.add_arguments(s)
    s.set_defaults(func=render.run)
    return p


def main(argv=None) -> int:
    """Run ``delta-description`` with ``argv``; the exit code (module docstring)."""
    return run_terminable(PROG, _run, argv)


def _run(argv) -> int:
    """Parse ``argv`` and run the subcommand, guarded (:func:`delta_description.errors.guarded`)."""
    args = build_parser().parse_args(argv)
    return guarded(PROG, args.func, args)


if __name__ == "__main__":
    sys.exit(main())
