"""``delta-dynamics demo``: the model on demo trajectories, plots."""
from __future__ import annotations

from delta_dynamics.cli.args import DEFAULT_ROBOT, robot_option


def cmd_demo(args) -> int:
    if args.model == "multibody":
        from delta_dynamics.multibody.demo import run
        run(robot=args.robot or "d3s800", out=args.out)
        return 0
    from delta_dynamics.demo import run
    run(robot=args.robot or DEFAULT_ROBOT, out=args.out)
    return 0


def register(sub) -> None:
    d = sub.add_parser("demo", help="run the model on demo trajectories and write plots (make run)")
    robot_option(d, default=None, help_=f"robot preset name or robot file (default: {DEFAULT_ROBOT}; "
                 f"d3s800 with --model multibody)")
    d.add_argument("--model", choices=("explicit", "multibody"), default="explicit",
                   help="explicit: the explicit model's demo (make run); multibody: Elshami et al.'s "
                   "figures on the multibody model (default: %(default)s)")
    d.add_argument("--out", default="out", metavar="DIR", help="output folder (default: %(default)s)")
    d.set_defaults(func=cmd_demo)
