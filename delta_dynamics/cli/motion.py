"""``delta-dynamics retime`` and ``delta-dynamics plan pick``: time-optimal motions from the model.

    delta-dynamics retime --robot R --path PATH.csv --out TRAJ.csv [--no-friction] [--torque-scale 0.9]
    delta-dynamics plan pick --robot R --from X Y Z --to X Y Z [--height 0.025] [--blend 0.01]
        [--dwell 0.05] [--cycles N] --out TRAJ.csv

Both write ``t,x,y,z,xd,yd,zd,xdd,ydd,zdd,q1..3,qd1..3,qdd1..3,tau1..3`` (``f1..3`` for a
linear Delta) every ``--dt`` (1 ms), from rest to rest, and print which limit is active
where (:mod:`delta_dynamics.motion`).
"""
from __future__ import annotations

import numpy as np

# the package's timing names load scipy's interpolation and toppra on first use (PEP 562), so
# the other subcommands start without them
from delta_dynamics import motion as planning
from delta_dynamics.cli.args import (MAX_LENGTH, CliError, coordinate, duration0, float_in, fmt, int_in,
                                     model_for, robot_option, sample_time)
from delta_dynamics.data_files.csv_io import read_csv, write_csv

#: The share of the effort limits a timing may use.
torque_scale = float_in(0.0, 1.0, lo_open=True, why="a share of the robot file's limit")
#: A height or blend radius (m), 0 allowed.
length0 = float_in(0.0, MAX_LENGTH, unit="m", why="a Delta robot is smaller")
#: Most report lines printed.
REPORT_LINES = 40


def _path_points(path_csv):
    """(points (N, 3), table) of a path CSV (columns x, y, z in path order)."""
    table = read_csv(path_csv, ("x", "y", "z"), min_rows=2, increasing=None, max_rows=planning.MAX_POINTS)
    return table.stack(("x", "y", "z")), table


def _line(table, k: int) -> str:
    return f"{table.path}:{int(table.lines[k])}"


def _between(table, points, s: float) -> str:
    """Where path parameter ``s`` falls between the rows of the path file."""
    chord = np.concatenate(([0.0], np.cumsum(np.linalg.norm(np.diff(points, axis=0), axis=1))))
    k = int(np.clip(np.searchsorted(chord, s, side="right") - 1, 0, len(chord) - 2))
    if abs(chord[k] - s) <= 1e-12 * max(chord[-1], 1.0):
        return f"at {_line(table, k)}"
    return f"between {_line(table, k)} and line {int(table.lines[k + 1])}"


def _print_result(out, motion, legs, extra: str = "") -> None:
    rep = motion.report
    u = rep.units
    planning = sum(leg.planning_time for leg in legs)
    grid = "+".join(str(len(leg.s) - 1) for leg in legs)
    passes = "+".join(str(leg.passes) for leg in legs)
    print(f"wrote {out}: {len(motion)} rows, {motion.duration:.4f} s{extra} (planned in {1e3 * planning:.0f} ms: "
          f"{grid} grid intervals, {passes} passes)")
    lim = rep.limits
    scale = f" ({lim.torque_scale:g} of the robot file's)" if lim.torque_scale != 1 else ""
    print(f"limits: velocity {fmt(lim.velocity, '.4g')} {u['velocity']}, acceleration "
          f"{fmt(lim.acceleration, '.4g')} {u['acceleration']}, {u['effort_name']} {fmt(lim.effort, '.4g')} "
          f"{u['effort']}{scale}; friction {'in the efforts' if legs[0].friction else 'left out'}")
    print(f"peak |qd| {fmt(np.abs(motion.qd).max(axis=0), '.4g')} {u['velocity']}, |qdd| "
          f"{fmt(np.abs(motion.qdd).max(axis=0), '.4g')} {u['acceleration']}, |{motion.effort_column}| "
          f"{fmt(np.abs(motion.effort).max(axis=0), '.4g')} {u['effort']}; largest share of a limit "
          f"{rep.max_ratio:.4f}")
    print(f"active limits (share of the moving time): {rep.summary()}")
    for line in rep.lines(min_duration=0.002, max_lines=REPORT_LINES):
        print("  " + line)


def cmd_retime(args) -> int:
    """``delta-dynamics retime``: time a path CSV time-optimally, write the sampled motion."""
    m = model_for(args.robot)
    points, table = _path_points(args.path)
    try:
        path = planning.spline_path(points)
    except planning.PathError as e:
        if e.index is not None:
            raise CliError(f"{_line(table, e.index)}: {e}") from None
        raise CliError(f"{args.path}: {e}") from None
    try:
        timing = planning.retime_path(m, path, friction=not args.no_friction, torque_scale=args.torque_scale,
                             gridpoints_count=args.gridpoints)
    except planning.RetimeError as e:
        where = f" ({_between(table, points, e.s)})" if e.s is not None else ""
        raise CliError(f"{args.path}: {e}{where}") from None
    motion = planning.sample([timing], dt=args.dt)
    write_csv(args.out, motion.header(), motion.table())
    _print_result(args.out, motion, [timing])
    return 0


def cmd_plan_pick(args) -> int:
    """``delta-dynamics plan pick``: time-optimal pick-and-place cycles, written as CSV."""
    m = model_for(args.robot)
    plan = planning.plan_pick(m, args.start, args.end, height=args.height, blend=args.blend, dwell=args.dwell,
                     cycles=args.cycles, dt=args.dt, friction=not args.no_friction,
                     torque_scale=args.torque_scale)
    write_csv(args.out, plan.motion.header(), plan.motion.table())
    there, back = plan.legs
    _print_result(args.out, plan.motion, plan.legs,
                  f" ({plan.cycles} cycle{'s' if plan.cycles != 1 else ''} of {plan.cycle_time:.4f} s: "
                  f"{there.duration:.4f} s there, {back.duration:.4f} s back, {plan.dwell:g} s dwell at each end; "
                  f"{plan.picks_per_minute:.1f} picks per minute)")
    return 0


def _common(sp) -> None:
    """The options both subcommands share."""
    robot_option(sp)
    sp.add_argument("--out", required=True, metavar="CSV", help="output trajectory with joint columns")
    sp.add_argument("--no-friction", action="store_true", help="leave joint friction out of the efforts "
                    "(timing and output)")
    sp.add_argument("--torque-scale", type=torque_scale, default=1.0, metavar="SHARE",
                    help="share of the robot file's torque (force) limits the timing may use, in (0, 1] "
                    "(default: %(default)g; e.g. 0.9 leaves 10 %% for feedback)")
    sp.add_argument("--dt", type=sample_time, default=1e-3, help="sample time in s (default: %(default)g)")


def register(sub) -> None:
    """Add the ``retime`` and ``plan`` subcommands to ``sub``."""
    # retime
    rp = sub.add_parser("retime", help="time-optimal timing of a path of platform points (toppra)",
                        description="Time a path of platform points as fast as the joint velocity, "
                        "acceleration and torque (force) limits of the robot file allow, with the "
                        "explicit model's efforts (TOPP-RA). PATH.csv has columns x,y,z (m, the "
                        "platform centre, in path order); the path is scipy's CubicSpline through them "
                        "over the cumulative chord length. Writes t,x,y,z,xd,yd,zd,xdd,ydd,zdd,"
                        "q1..3,qd1..3,qdd1..3,tau1..3 (f1..3 for a linear Delta), from rest to rest, "
                        "and prints which limit is active where.")
    rp.add_argument("--path", required=True, metavar="CSV", help="path points: columns x,y,z (m)")
    rp.add_argument("--gridpoints", type=int_in(10, 20_000), default=None, metavar="N",
                    help="grid intervals along the path (default: 600 per metre, at least 150)")
    _common(rp)
    rp.set_defaults(func=cmd_retime)

    # plan pick
    pp = sub.add_parser("plan", help="plan a motion: pick (time-optimal pick-and-place cycles)",
                        description="Plan motions timed time-optimally from the dynamic model.")
    psub = pp.add_subparsers(dest="kind", required=True, metavar="KIND")
    pk = psub.add_parser("pick", help="pick-and-place cycles on the door path, time-optimal",
                         description="Pick-and-place cycles: from --from up --height (above the higher "
                         "end), across, down to --to, each corner blended over --blend (C2), a --dwell at "
                         "--to, the same way back, a --dwell at --from; each leg timed as fast as the "
                         "limits allow (as `retime`). The classic benchmark: 25 mm up, 305 mm across, "
                         "25 mm down.")
    pk.add_argument("--from", dest="start", type=coordinate, nargs=3, required=True, metavar=("X", "Y", "Z"),
                    help="pick point (platform centre, m)")
    pk.add_argument("--to", dest="end", type=coordinate, nargs=3, required=True, metavar=("X", "Y", "Z"),
                    help="place point (platform centre, m)")
    pk.add_argument("--height", type=length0, default=0.025, help="m up above the higher end "
                    "(default: %(default)g)")
    pk.add_argument("--blend", type=length0, default=0.01, help="m: each corner is replaced by a C2 "
                    "blend from this far before it to this far after it (default: %(default)g)")
    pk.add_argument("--dwell", type=duration0, default=0.05, help="s at rest at each end (default: %(default)g)")
    pk.add_argument("--cycles", type=int_in(1, 100_000), default=1, help="cycles there and back (default: 1)")
    _common(pk)
    pk.set_defaults(func=cmd_plan_pick)
