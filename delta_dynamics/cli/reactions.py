"""``delta-dynamics reactions``: joint reaction forces along a prescribed platform trajectory
(inverse dynamics of the multibody model).

    delta-dynamics reactions --robot R --trajectory traj.csv --out reactions.csv [--torques tau.csv]

``reactions.csv`` has the columns of ``delta-dynamics simulate --reactions``: ``t``, per leg i
``f{i}x,f{i}y,f{i}z`` (the force forearm i applies to the platform at its platform joint) and
the shoulder reactions ``s{i}x,s{i}y,s{i}z`` (the force the base applies to upper arm i), N,
world frame. ``--torques`` also writes the motor torques as joint data.
"""
from __future__ import annotations

from delta_core.paths import output_file_arg
from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import UnreachableError, inverse_kinematics, joint_state
from delta_dynamics.cli.args import CliError, command, info, require_kind, row_error, trajectory_input
from delta_dynamics.cli.simulate import REACTION_COLUMNS, reaction_table
from delta_dynamics.data_files.csv_io import write_csv
from delta_dynamics.data_files.joint_data import write_joint_data
from delta_dynamics.data_files.trajectory import read_trajectory
from delta_dynamics.reference.multibody.reactions import inverse_dynamics
from delta_dynamics.reference.multibody.system import MultibodySystem


def cmd_reactions(args) -> int:
    """``reactions``: the multibody model's joint reactions (and torques) along a trajectory."""
    s = MultibodySystem(require_kind(load_robot(args.robot), args.robot))
    tf = read_trajectory(args.trajectory, smoothing=args.smoothing)
    traj = tf.trajectory
    if tf.derived:
        info(f"note: {args.trajectory} has positions only: velocities and accelerations from a "
             f"smoothing spline (noise {', '.join(f'{v:.2g}' for v in tf.smoothing)} m)")
    try:
        inverse_kinematics(s.kinematics, traj.X, check_limits=True)
        out = inverse_dynamics(s, traj.X, traj.Xd, traj.Xdd, friction=not args.no_friction)
    except UnreachableError as e:
        raise row_error(tf.table, e) from None
    write_csv(args.out, REACTION_COLUMNS, reaction_table(traj.t, out.reactions))
    if args.torques:
        _, _, qdd = joint_state(s.kinematics, traj.X, traj.Xd, traj.Xdd)
        write_joint_data(args.torques, traj.t, out.q, out.tau, qd=out.qd, qdd=qdd)
    if out.residual > 1e-6:
        raise CliError(f"{args.trajectory}: the equations of motion were solved only to {out.residual:.3g} "
                       f"(the mechanism is near a singular configuration)")
    print(f"wrote {args.out}{' and ' + args.torques if args.torques else ''}: {len(traj.t)} rows "
          f"(multibody inverse dynamics, {s.n_bodies} bodies, {s.n_constraints} constraints)")
    return 0


def register(sub) -> None:
    """Add ``reactions`` to the subcommands ``sub``."""
    rp = command(sub, "reactions", cmd_reactions, "joint reaction forces along a platform trajectory (multibody)",
                 "Inverse dynamics of the multibody model (Elshami et al.) along a trajectory CSV: the "
                 "reaction forces at the platform joints and the shoulders (world frame) and, with "
                 "--torques, the motor torques.")
    trajectory_input(rp, "position-only input: noise level in m, or auto (default: auto)",
                     "input trajectory (t,x,y,z[,xd..zdd])")
    rp.add_argument("--out", required=True, metavar="CSV", type=output_file_arg, help="output: reaction forces")
    rp.add_argument("--torques", metavar="CSV", type=output_file_arg, help="also write the motor torques as joint data")
    rp.add_argument("--no-friction", action="store_true", help="leave joint friction out of the torques")
