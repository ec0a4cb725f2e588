"""``delta-dynamics demo``: the model on demo trajectories, plots."""
from __future__ import annotations

from delta_dynamics.cli.args import robot_option


def cmd_demo(args) -> int:
    from delta_dynamics.demo import run
    run(robot=args.robot, out=args.out)
    return 0


def register(sub) -> None:
    d = sub.add_parser("demo", help="run the model on demo trajectories and write plots (make run)")
    robot_option(d)
    d.add_argument("--out", default="out", metavar="DIR", help="output folder (default: %(default)s)")
    d.set_defaults(func=cmd_demo)
