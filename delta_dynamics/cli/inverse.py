"""``delta-dynamics inverse``: joint angles and torques along a trajectory CSV."""
from __future__ import annotations

import numpy as np

from delta_core.paths import output_file_arg
from delta_dynamics.algorithms import (UnreachableError, friction_torque, inverse_dynamics,
                                       inverse_kinematics, joint_state, joint_units)
from delta_dynamics.cli.args import (CliError, command, fmt, info, model_for, read_trajectory_input, row_error,
                                     trajectory_input)
from delta_dynamics.compare import ModelUnavailable, model_function
from delta_dynamics.data_files.csv_io import write_csv
from delta_dynamics.data_files.joint_data import joint_columns


def cmd_inverse(args) -> int:
    """``inverse``: joint positions and efforts along a trajectory CSV."""
    m = model_for(args.robot, friction=not args.no_friction)
    units = joint_units(m)
    other = None
    if args.model != "explicit":
        if units["effort_column"] != "tau":
            raise CliError(f"--model {args.model}: the reference models are for rotary Deltas; "
                           f"{m.robot.name} is a linear one")
        try:
            other = model_function(args.model)
        except ModelUnavailable as e:
            raise CliError(str(e)) from None
    traj, table = read_trajectory_input(args)
    try:
        inverse_kinematics(m, traj.X, check_limits=True)
        q, qd, qdd = joint_state(m, traj.X, traj.Xd, traj.Xdd)
        if other is None:
            tau = inverse_dynamics(m, traj.X, traj.Xd, traj.Xdd)
        else:
            # the registered models give rigid-body torques; joint friction is the robot file's
            tau = np.asarray(other(m.robot, traj), dtype=float) + friction_torque(m, qd)
    except UnreachableError as e:
        raise row_error(table, e) from None
    _warn_limits(m, table, qd, qdd, tau, units)
    col = units["effort_column"]
    header, columns = list(joint_columns(col)), [traj.t, q, qd, qdd, tau]
    if args.powers:
        header += ["p1", "p2", "p3"]
        columns.append(tau * qd)
    write_csv(args.out, header, np.column_stack(columns))
    extra = f", peak |p| = {fmt(np.abs(tau * qd).max(axis=0), '.4g')} W" if args.powers else ""
    print(f"wrote {args.out}: {len(traj)} rows ({args.model} model), peak |{col}| = "
          f"{fmt(np.abs(tau).max(axis=0), '.4g')} {units['effort']}{extra}")
    return 0


def _warn_limits(m, table, qd, qdd, tau, units) -> None:
    """Warn (stderr) where velocity, acceleration or effort leave the robot file's limits."""
    lim = m.robot.limits
    effort = units["effort_name"]
    for what, vals, limit, unit in (("velocity", qd, lim.velocity, units["velocity"]),
                                    ("acceleration", qdd, lim.acceleration, units["acceleration"]),
                                    (effort, tau, lim.effort, units["effort"])):
        over = np.abs(vals) > np.asarray(limit)
        if over.any():
            k, j = (int(v) for v in np.argwhere(over)[0])
            info(f"warning: {table.where(k)}: {units['joint']} {j + 1} {what} {vals[k, j]:.4g} {unit} "
                  f"exceeds the limit {limit[j]:g} ({int(over.any(axis=1).sum())} rows over)")


def register(sub) -> None:
    """Add ``inverse`` to the subcommands ``sub``."""
    ip = command(sub, "inverse", cmd_inverse, "joint angles and torques along a trajectory CSV",
                 "Inverse dynamics along a trajectory CSV. Writes t,q1,q2,q3,qd1,qd2,qd3,qdd1,qdd2,qdd3,"
                 "tau1,tau2,tau3 (rad, rad/s, rad/s^2, N m at the arm), with --powers also p1,p2,p3 (W); "
                 "for a linear Delta t,q1..,qd1..,qdd1..,f1,f2,f3 (carriage positions in m, m/s, m/s^2, "
                 "forces in N). A trajectory with only t,x,y,z gets its velocity and acceleration from a "
                 "quintic smoothing spline per axis.")
    trajectory_input(ip, "for t,x,y,z-only input: RMS position noise in m the spline may smooth away; "
                     "'auto' estimates it from the data, 0 interpolates (default: auto)")
    ip.add_argument("--out", required=True, metavar="CSV", type=output_file_arg, help="output joint data")
    ip.add_argument("--model", default="explicit", metavar="NAME",
                    help="dynamic model: 'explicit' (Asadi & Heydari, lumped forearm; the default), "
                    "'staicu' (Staicu & Carp-Ciocardia: every body with its inertia tensor, "
                    "from the robot file's mass_properties.full_body), or another model "
                    "registered in delta_dynamics.compare.MODELS")
    ip.add_argument("--powers", action="store_true",
                    help="add the actuator powers p_i = tau_i qd_i (W) as columns p1,p2,p3")
    ip.add_argument("--no-friction", action="store_true", help="leave joint friction out")
