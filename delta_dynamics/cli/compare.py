"""``delta-dynamics compare``: several dynamic models of one robot along one trajectory."""
from __future__ import annotations

from delta_core.paths import output_file_arg
from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import UnreachableError, inverse_kinematics
from delta_dynamics.cli.args import (CliError, command, read_trajectory_input, require_kind, row_error,
                                     trajectory_input)
from delta_dynamics.compare import ModelUnavailable, compare, model_function, parse_model_list, plot
from delta_dynamics.kinds import model_for


def cmd_compare(args) -> int:
    """``compare``: the models' torques along a trajectory CSV, their differences, a plot."""
    try:
        names = parse_model_list(args.models)
        for n in names:
            model_function(n)                      # every model available before any work
    except (ModelUnavailable, ValueError) as e:
        raise CliError(f"--models: {e}") from None
    robot = require_kind(load_robot(args.robot), args.robot)
    traj, table = read_trajectory_input(args)
    try:
        inverse_kinematics(model_for(robot), traj.X, check_limits=True)
        res = compare(robot, traj, names)
    except UnreachableError as e:
        raise row_error(table, e) from None
    print(f"{robot.name}, {args.trajectory}: {len(traj)} samples, rigid-body torques (no joint "
          f"friction); differences from '{res.reference}' in % of its peak |tau| = {res.peak:.4g} N m")
    print(res.table())
    if args.plot:
        plot(res, args.plot, title=f"{robot.name}: {args.trajectory}")
        print(f"wrote {args.plot}")
    return 0


def register(sub) -> None:
    """Add ``compare`` to the subcommands ``sub``."""
    cp = command(sub, "compare", cmd_compare, "compare dynamic models along a trajectory (RMS/max differences, plot)",
                 "Rigid-body actuator torques (without joint friction) of several models along a trajectory "
                 "CSV. Prints, for each model, the RMS and the largest difference from the first model in % "
                 "of the first model's peak |tau| (over joints and samples), and the runtime per sample; "
                 "--plot draws the torques and the differences.")
    trajectory_input(cp, "for t,x,y,z-only input: as for 'inverse' (default: auto)")
    cp.add_argument("--models", default="explicit,staicu", metavar="A,B[,...]",
                    help="comma-separated models, the first is the reference (default: %(default)s; "
                    "known: explicit, staicu, multibody, mujoco where their packages are installed, and "
                    "whatever else delta_dynamics.compare.MODELS registers)")
    cp.add_argument("--plot", metavar="PNG", default=None, type=output_file_arg, help="write a plot of torques and differences")
