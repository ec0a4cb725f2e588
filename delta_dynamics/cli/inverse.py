"""``delta-dynamics inverse``: joint angles and torques along a trajectory CSV."""
from __future__ import annotations

import numpy as np

from delta_dynamics.cli.args import fmt, info, model_for, robot_option, row_error, smoothing


def cmd_inverse(args) -> int:
    from delta_dynamics.kinematics import UnreachableError
    from delta_dynamics.kinds import joint_units, modules
    from delta_dynamics.trajectory_io import read_trajectory, write_joint_data

    m = model_for(args.robot, friction=not args.no_friction, kinds=("rotary", "prismatic"))
    ops, units = modules(m), joint_units(m)
    inverse_kinematics, joint_state = ops.kinematics.inverse_kinematics, ops.dynamics.joint_state
    inverse_dynamics = ops.dynamics.inverse_dynamics
    data = read_trajectory(args.trajectory, smoothing=args.smoothing)
    traj, table = data.trajectory, data.table
    if data.derived:
        info(f"{args.trajectory}: no velocity/acceleration columns: derived from a quintic "
              f"smoothing spline (noise sigma per axis: {fmt(data.smoothing, '.3g')} m)")
    try:
        inverse_kinematics(m, traj.X, check_limits=True)
        q, qd, qdd = joint_state(m, traj.X, traj.Xd, traj.Xdd)
        tau = inverse_dynamics(m, traj.X, traj.Xd, traj.Xdd)
    except UnreachableError as e:
        raise row_error(table, e) from None
    _warn_limits(m, table, qd, qdd, tau, units)
    col = units["effort_column"]
    write_joint_data(args.out, traj.t, q, qd, qdd, tau, effort=col)
    print(f"wrote {args.out}: {len(traj)} rows, peak |{col}| = {fmt(np.abs(tau).max(axis=0), '.4g')} "
          f"{units['effort']}")
    return 0


def _warn_limits(m, table, qd, qdd, tau, units) -> None:
    """Warn (stderr) where velocity, acceleration or effort leave the robot file's limits."""
    lim = m.robot.limits
    effort = "torque" if units["effort"] == "N m" else "force"
    for what, vals, limit, unit in (("velocity", qd, lim.velocity, units["velocity"]),
                                    ("acceleration", qdd, lim.acceleration, units["acceleration"]),
                                    (effort, tau, lim.effort, units["effort"])):
        over = np.abs(vals) > np.asarray(limit)
        if over.any():
            k, j = (int(v) for v in np.argwhere(over)[0])
            info(f"warning: {table.where(k)}: {units['joint']} {j + 1} {what} {vals[k, j]:.4g} {unit} "
                  f"exceeds the limit {limit[j]:g} ({int(over.any(axis=1).sum())} rows over)")


def register(sub) -> None:
    # inverse
    ip = sub.add_parser("inverse", help="joint angles and torques along a trajectory CSV",
                        description="Inverse dynamics along a trajectory CSV. Writes "
                        "t,q1,q2,q3,qd1,qd2,qd3,qdd1,qdd2,qdd3,tau1,tau2,tau3 (rad, rad/s, "
                        "rad/s^2, N m at the arm); for a linear (prismatic) Delta "
                        "t,q1..,qd1..,qdd1..,f1,f2,f3 (carriage positions in m, m/s, m/s^2, "
                        "forces in N). A trajectory with only t,x,y,z gets its "
                        "velocity and acceleration from a quintic smoothing spline per axis.")
    robot_option(ip)
    ip.add_argument("--trajectory", required=True, metavar="CSV", help="input trajectory")
    ip.add_argument("--out", required=True, metavar="CSV", help="output joint data")
    ip.add_argument("--smoothing", type=smoothing, default="auto", metavar="auto|SIGMA",
                    help="for t,x,y,z-only input: RMS position noise in m the spline may smooth "
                    "away; 'auto' estimates it from the data, 0 interpolates (default: auto)")
    ip.add_argument("--no-friction", action="store_true", help="leave joint friction out")
    ip.set_defaults(func=cmd_inverse)
