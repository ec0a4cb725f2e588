"""``delta-dynamics demo``: the model on demo trajectories, plots."""
from __future__ import annotations

from delta_core.paths import output_dir_arg
from delta_core.robot_file import load_robot
from delta_dynamics.cli.args import DEFAULT_ROBOT, require_kind, robot_option
from delta_dynamics.kinds import table
from delta_dynamics.reference.multibody import demo as multibody_demo


def cmd_demo(args) -> int:
    """``demo``: the demo of the robot file's kind (or the multibody model's figures)."""
    name = args.robot or ("d3s800" if args.model == "multibody" else DEFAULT_ROBOT)
    robot = load_robot(name)
    if args.model == "multibody":
        run = multibody_demo.run
        require_kind(robot, name)                             # the multibody model is a rotary Delta's
    else:
        run = table(robot.type).demo                          # the kind's: e.g. Colombo & Lentini's Figs. 4-5
    run(robot=robot, out=args.out)
    return 0


def register(sub) -> None:
    """Add the ``demo`` subcommand to ``sub``."""
    d = sub.add_parser("demo", help="run the model on demo trajectories and write plots (make model-demo)",
                       description="Run the model on demo trajectories and write plots. For a linear "
                       "Delta, e.g. --robot colombo2020: Colombo & Lentini's Figs. 4 and 5.")
    robot_option(d, default=None, help_=f"robot preset name or robot file (default: {DEFAULT_ROBOT}; "
                 f"d3s800 with --model multibody)")
    d.add_argument("--model", choices=("explicit", "multibody"), default="explicit",
                   help="explicit: the explicit model's demo (make model-demo); multibody: Elshami et al.'s "
                   "figures on the multibody model (default: %(default)s)")
    d.add_argument("--out", default="out", metavar="DIR", type=output_dir_arg, help="output folder (default: %(default)s)")
    d.set_defaults(func=cmd_demo)
