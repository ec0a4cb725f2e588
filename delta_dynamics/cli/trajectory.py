"""``delta-dynamics trajectory circle|lissajous|pick-place|ellipse``: platform trajectories as CSV."""
from __future__ import annotations

import math

import numpy as np

from delta_core.paths import output_file_arg
from delta_dynamics.algorithms import UnreachableError, inverse_kinematics
from delta_dynamics.cli.args import (SAMPLE, CliError, check_samples, coordinate, duration,
                                     duration0, float_in, info, int_in, length, model_for,
                                     robot_option, sample_time)
from delta_dynamics.data_files.trajectory import write_trajectory
from delta_dynamics.motion import trajectories as tr

#: Most pick-and-place cycles (each is two legs of three profiles).
MAX_CYCLES = 100_000
#: Lowest Lissajous speed (m/s): slower gives more samples than anyone needs.
MIN_SPEED = 1e-4
#: What "with --robot: see below" in the options' help refers to.
WORKSPACE_NOTE = ("Geometric defaults: the values shown place the path in nt_robot's workspace (the "
                  "ellipse: Staicu's path, in staicu2003's). With --robot, if that path leaves the robot's "
                  "workspace, every geometric option not given takes a value in it instead: centred at its "
                  "workspace centre (delta_dynamics.algorithms.workspace_centre), sized to its reach there; "
                  "the values used are printed.")


def _lissajous_length(x0: float, y0: float, wx: float = 6 * math.pi, wy: float = 4 * math.pi) -> float:
    """Length (m) of the Lissajous path of :func:`delta_dynamics.motion.trajectories.lissajous`
    (its default frequencies and phases), by the trapezoidal rule on 20001 points."""
    u = np.linspace(0.0, 1.0, 20001)
    speed = np.hypot(x0 * wx * np.cos(wx * u + math.pi / 2), y0 * wy * np.cos(wy * u))
    return float(np.trapezoid(speed, u))


def _expected_samples(args) -> tuple:
    """(number of samples the options give, what they come from, how to get fewer)."""
    if args.kind in ("circle", "ellipse"):
        d = args.duration if args.duration is not None else args.period + args.ramp
        what = (f"--duration {d:g} s" if args.duration is not None else
                f"--period + --ramp = {d:g} s")
        return round(d / args.dt) + 1, f"{what} at --dt {args.dt:g} s", "shorten the duration or raise --dt"
    if args.kind == "lissajous":
        d = _lissajous_length(args.x0, args.y0) / args.speed + args.ramp
        return d / args.dt + 1, (f"a Lissajous path of {d * args.speed:.3g} m at --speed {args.speed:g} m/s "
                             f"(about {d:.4g} s) at --dt {args.dt:g} s"), "raise --speed or --dt"
    leg = args.lift_time + args.move_time + args.dwell     # trajectories.pick_place, overlap cancels
    d = 2 * leg * args.cycles
    return round(d / args.dt) + 1, f"{args.cycles} cycles of {2 * leg:.4g} s at --dt {args.dt:g} s", \
        "fewer --cycles, shorter times or a larger --dt"


def _make_trajectory(args):
    """The trajectory the options describe."""
    if args.kind == "circle":
        return tr.circle(radius=args.radius, depth=args.depth, period=args.period,
                         duration=args.duration, center=tuple(args.center), dt=args.dt,
                         ramp=args.ramp)
    if args.kind == "lissajous":
        return tr.lissajous(speed=args.speed, x0=args.x0, y0=args.y0, depth=args.depth,
                            wx=args.wx, wy=args.wy, phix=args.phix, phiy=args.phiy,
                            dt=args.dt, ramp=args.ramp, timing=args.timing)
    if args.kind == "ellipse":
        return tr.ellipse(start=tuple(args.start), axis_a=tuple(args.axis_a), axis_b=tuple(args.axis_b),
                          period=args.period, duration=args.duration, dt=args.dt, ramp=args.ramp)
    return tr.pick_place(start=tuple(args.start), height=args.height, width=args.width,
                         direction=tuple(args.direction), lift_time=args.lift_time,
                         move_time=args.move_time, dwell=args.dwell, cycles=args.cycles,
                         dt=args.dt)


def _fill_defaults(args, m):
    """Set every geometric option left at its default (None): ``DEFAULTS[kind]``, or with
    ``--robot`` the defaults that lie in that robot's workspace
    (:func:`delta_dynamics.motion.trajectories.workspace_defaults`, said on stderr when they differ)."""
    names = list(tr.DEFAULTS[args.kind])
    unset = [n for n in names if getattr(args, n) is None]
    if not unset:
        return
    options, fitted = tr.workspace_defaults(m, args.kind) if m is not None else (tr.DEFAULTS[args.kind], False)
    for n in unset:
        setattr(args, n, options[n])
    if fitted:
        shown = " ".join(f"--{n.replace('_', '-')} " + (" ".join(f"{v:g}" for v in options[n])
                                                         if isinstance(options[n], tuple) else f"{options[n]:g}")
                         for n in unset)
        info(f"{args.kind}: the default path leaves {args.robot}'s workspace; defaults in it: {shown}")


def cmd_trajectory(args) -> int:
    """``trajectory``: write a platform trajectory CSV (checked against ``--robot`` if given);
    geometric options not given are filled in first (:func:`_fill_defaults`)."""
    if args.tool and not args.robot:
        raise CliError("--tool needs --robot: the tool offset comes from the robot file")
    m = model_for(args.robot) if args.robot else None
    _fill_defaults(args, m)
    check_samples(*_expected_samples(args))
    traj = _make_trajectory(args)
    if args.robot:
        if args.tool:
            # the path was given for the tool point; the CSV holds the platform centre above it
            traj = traj.shifted((0.0, 0.0, getattr(m, "tool_offset", 0.0)))
        try:
            inverse_kinematics(m, traj.X, check_limits=True)
        except UnreachableError as e:
            k = int(e.index or 0)
            raise CliError(f"{args.kind} on {args.robot}: sample {k} (t = {traj.t[k]:.6g} s): "
                           f"{SAMPLE.sub('', str(e))}") from None
    write_trajectory(args.out, traj)
    print(f"wrote {args.out}: {args.kind}, {len(traj)} rows, {traj.t[-1]:.6g} s")
    return 0


def register(sub) -> None:
    """Add the ``trajectory`` subcommand (and its path kinds) to ``sub``."""
    # trajectory
    tp = sub.add_parser("trajectory", help="write a circle, Lissajous, pick-and-place or ellipse trajectory CSV",
                        description="Write a platform trajectory as CSV (t,x,y,z,xd,yd,zd,xdd,ydd,zdd; SI).",
                        epilog=WORKSPACE_NOTE)
    tsub = tp.add_subparsers(dest="kind", required=True, metavar="KIND")

    def common(sp, dt=1e-3):
        sp.add_argument("--dt", type=sample_time, default=dt, help="sample time in s, 1e-6 to 10 "
                        "(default: %(default)g); a trajectory has at most 1000000 samples")
        sp.add_argument("--out", required=True, metavar="CSV", type=output_file_arg, help="output file")
        robot_option(sp, default=None, help_="check every sample is reachable within the joint "
                  "limits of this robot (preset name or file)")
        sp.add_argument("--tool", action="store_true", help="the path is the tool point's (the "
                        "nozzle of a linear Delta, geometry.tool_offset below the platform centre); "
                        "the CSV gets the platform centre, shifted up by the offset (needs --robot)")
        sp.set_defaults(func=cmd_trajectory)
        sp.epilog = WORKSPACE_NOTE

    c = tsub.add_parser("circle", help="horizontal circle (Asadi & Heydari's evaluation path)")
    c.add_argument("--radius", type=length, default=None, help="m (default: 0.25; with --robot: see below)")
    c.add_argument("--depth", type=coordinate, default=None, help="z of the circle in m, negative "
                   "below the base (default: -0.75; with --robot: see below)")
    c.add_argument("--period", type=duration, default=2 * math.pi, help="s per turn at full speed "
                   "(default: 2 pi)")
    c.add_argument("--duration", type=duration, default=None, help="s (default: period + ramp)")
    c.add_argument("--ramp", type=duration0, default=0.0, help="s to reach full speed from "
                   "rest (default: 0, start at full speed)")
    c.add_argument("--center", type=coordinate, nargs=2, default=None, metavar=("X", "Y"),
                   help="m (default: 0 0)")
    common(c)

    li = tsub.add_parser("lissajous", help="Lissajous path at constant speed (Colombo & Lentini eqs. 18-19)",
                         description="p(u) = (x0 sin(wx u + phix), y0 sin(wy u + phiy), depth), "
                         "0 <= u <= 1, at constant speed. The paper's print path: --depth 0 --tool "
                         "--robot colombo2020 (the nozzle on the bed, the platform tool_offset above).")
    li.add_argument("--speed", type=float_in(MIN_SPEED, 100.0, unit="m/s"), default=0.2, help="m/s (default: %(default)g)")
    li.add_argument("--x0", type=length, default=None, help="x amplitude in m (default: 0.1; with --robot: see below)")
    li.add_argument("--y0", type=length, default=None, help="y amplitude in m (default: 0.1; with --robot: see below)")
    li.add_argument("--depth", type=coordinate, default=None, help="z in m (default: -0.75; with --robot: see below)")
    li.add_argument("--ramp", type=duration0, default=0.0, help="s to reach the speed from "
                    "rest (default: 0)")
    li.add_argument("--wx", type=float_in(-1e4, 1e4), default=6 * math.pi, help="omega_x of eq. 18 (default: 6 pi)")
    li.add_argument("--wy", type=float_in(-1e4, 1e4), default=4 * math.pi, help="omega_y of eq. 18 (default: 4 pi)")
    li.add_argument("--phix", type=float_in(-1e4, 1e4), default=math.pi / 2, help="phi_x in rad (default: pi/2)")
    li.add_argument("--phiy", type=float_in(-1e4, 1e4), default=0.0, help="phi_y in rad (default: 0)")
    li.add_argument("--timing", choices=("taylor", "arc-length"), default="taylor",
                    help="how the path parameter advances: the paper's second-order update, "
                    "eq. 19 (taylor), or the exact arc length (default: %(default)s)")
    common(li)

    pp = tsub.add_parser("pick-place", help="pick-and-place cycle: up, across, down and back")
    pp.add_argument("--start", type=coordinate, nargs=3, default=None,
                    metavar=("X", "Y", "Z"), help="pick point in m (default: -0.1525 0 -0.8; with --robot: see below)")
    pp.add_argument("--height", type=length, default=None, help="m up and down (default: 0.025)")
    pp.add_argument("--width", type=length, default=None, help="m across (default: 0.305)")
    pp.add_argument("--direction", type=float_in(-1e6, 1e6), nargs=2, default=(1.0, 0.0), metavar=("DX", "DY"),
                    help="horizontal direction across (default: 1 0)")
    pp.add_argument("--cycles", type=int_in(1, MAX_CYCLES), default=1, help="pick-place-back cycles (default: 1)")
    pp.add_argument("--lift-time", type=duration, default=0.15, help="s per lift (default: %(default)g)")
    pp.add_argument("--move-time", type=duration, default=0.4, help="s across (default: %(default)g)")
    pp.add_argument("--dwell", type=duration0, default=0.1, help="s at rest after each leg (default: %(default)g)")
    common(pp)

    E = tr.STAICU_ELLIPSE
    el = tsub.add_parser("ellipse", help="elliptic path of Staicu & Carp-Ciocardia (eq. 7)",
                         description="X(t) = START + A sin(w t) + B (1 - cos(w t)), w = 2 pi / PERIOD, "
                         "with analytic velocity and acceleration. The defaults are the paper's path "
                         "for the staicu2003 robot, in base_link (z up).")
    el.add_argument("--start", type=coordinate, nargs=3, default=None, metavar=("X", "Y", "Z"),
                    help="position at t = 0 in m (default: 0 0 -(0.1 + 0.35 cos 30 deg) = "
                    f"{E['start'][2]:.6g})")
    el.add_argument("--axis-a", type=coordinate, nargs=3, default=None, metavar=("AX", "AY", "AZ"),
                    help=f"m, the sin(w t) term (default: {' '.join(f'{v:g}' for v in E['axis_a'])})")
    el.add_argument("--axis-b", type=coordinate, nargs=3, default=None, metavar=("BX", "BY", "BZ"),
                    help=f"m, the (1 - cos(w t)) term (default: {' '.join(f'{v:g}' for v in E['axis_b'])})")
    el.add_argument("--period", type=duration, default=E["period"], help="s per turn at full speed "
                    "(default: %(default)g, the paper's w = pi/3 rad/s)")
    el.add_argument("--duration", type=duration, default=None, help="s (default: period + ramp)")
    el.add_argument("--ramp", type=duration0, default=0.0, help="s to reach full speed from "
                    "rest (default: 0, start at full speed as the paper does)")
    common(el)
