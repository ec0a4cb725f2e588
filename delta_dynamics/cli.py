"""``delta-dynamics``: trajectories, inverse and forward dynamics from the command line.

    delta-dynamics trajectory circle|lissajous|pick-place [options] --out traj.csv
    delta-dynamics inverse --robot nt_robot --trajectory traj.csv --out torques.csv
    delta-dynamics forward --robot nt_robot --torques torques.csv --out sim.csv
    delta-dynamics ik X Y Z          # platform position (m) -> joint angles
    delta-dynamics fk Q1 Q2 Q3       # joint angles (rad) -> platform position
    delta-dynamics demo --out out/   # what `make run` runs: plots in out/

CSV formats: :mod:`delta_dynamics.trajectory_io`. ``--robot`` takes a preset name
(``config/robots/<name>.yaml``) or a robot file path. Bad input (an unreadable or malformed
file, an unreachable point, a bad option) prints ``delta-dynamics: error: <message>`` to
stderr and exits with status 2; outputs are written atomically, so a failed run leaves any
existing output file untouched.
"""
from __future__ import annotations

import argparse
import math
import re
import sys

import numpy as np

PROG = "delta-dynamics"
DEFAULT_ROBOT = "nt_robot"


class CliError(Exception):
    """A user-facing error: printed as ``delta-dynamics: error: <message>``, exit status 2."""


# ----------------------------------------------------------------------------- helpers

def _finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return v


def _positive(text: str) -> float:
    v = _finite(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def _nonnegative(text: str) -> float:
    v = _finite(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def _count(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return v


def _smoothing(text: str):
    if text == "auto":
        return "auto"
    try:
        return _nonnegative(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (give 'auto' or a noise level in m)") from None


def _model(robot: str, friction: bool = True):
    from delta_dynamics.model import DeltaModel
    m = DeltaModel.from_robot(robot)
    return m if friction else m.without_friction()


_SAMPLE = re.compile(r" \(sample \d+\)")


def _row_error(table, err) -> CliError:
    """An UnreachableError on sample k of a CSV file -> an error naming its line and time."""
    k = int(getattr(err, "index", 0) or 0)
    return CliError(f"{table.where(k)}: {_SAMPLE.sub('', str(err))}")


def _info(msg: str) -> None:
    print(msg, file=sys.stderr)


def _fmt(v, spec=".9g") -> str:
    return " ".join(format(float(x), spec) for x in v)


# ----------------------------------------------------------------------------- trajectory

def _make_trajectory(args):
    from delta_dynamics import trajectories as tr
    if args.kind == "circle":
        return tr.circle(radius=args.radius, depth=args.depth, period=args.period,
                         duration=args.duration, center=tuple(args.center), dt=args.dt,
                         ramp=args.ramp)
    if args.kind == "lissajous":
        return tr.lissajous(speed=args.speed, x0=args.x0, y0=args.y0, depth=args.depth,
                            dt=args.dt, ramp=args.ramp)
    return tr.pick_place(start=tuple(args.start), height=args.height, width=args.width,
                         direction=tuple(args.direction), lift_time=args.lift_time,
                         move_time=args.move_time, dwell=args.dwell, cycles=args.cycles,
                         dt=args.dt)


def cmd_trajectory(args) -> int:
    from delta_dynamics.kinematics import UnreachableError, inverse_kinematics
    from delta_dynamics.trajectory_io import write_trajectory
    traj = _make_trajectory(args)
    if args.robot:
        try:
            inverse_kinematics(_model(args.robot), traj.X, check_limits=True)
        except UnreachableError as e:
            k = int(e.index or 0)
            raise CliError(f"{args.kind} on {args.robot}: sample {k} (t = {traj.t[k]:.6g} s): "
                           f"{_SAMPLE.sub('', str(e))}") from None
    write_trajectory(args.out, traj)
    print(f"wrote {args.out}: {args.kind}, {len(traj)} rows, {traj.t[-1]:.6g} s")
    return 0


# ----------------------------------------------------------------------------- inverse

def cmd_inverse(args) -> int:
    from delta_dynamics.dynamics import inverse_dynamics, joint_state
    from delta_dynamics.kinematics import UnreachableError, inverse_kinematics
    from delta_dynamics.trajectory_io import read_trajectory, write_joint_data

    m = _model(args.robot, friction=not args.no_friction)
    data = read_trajectory(args.trajectory, smoothing=args.smoothing)
    traj, table = data.trajectory, data.table
    if data.derived:
        _info(f"{args.trajectory}: no velocity/acceleration columns: derived from a quintic "
              f"smoothing spline (noise sigma per axis: {_fmt(data.smoothing, '.3g')} m)")
    try:
        inverse_kinematics(m, traj.X, check_limits=True)
        q, qd, qdd = joint_state(m, traj.X, traj.Xd, traj.Xdd)
        tau = inverse_dynamics(m, traj.X, traj.Xd, traj.Xdd)
    except UnreachableError as e:
        raise _row_error(table, e) from None
    _warn_limits(m, table, qd, qdd, tau)
    write_joint_data(args.out, traj.t, q, qd, qdd, tau)
    print(f"wrote {args.out}: {len(traj)} rows, peak |tau| = {_fmt(np.abs(tau).max(axis=0), '.4g')} N m")
    return 0


def _warn_limits(m, table, qd, qdd, tau) -> None:
    """Warn (stderr) where velocity, acceleration or torque leave the robot file's limits."""
    lim = m.robot.limits
    for what, vals, limit, unit in (("velocity", qd, lim.velocity, "rad/s"),
                                    ("acceleration", qdd, lim.acceleration, "rad/s^2"),
                                    ("torque", tau, lim.torque, "N m")):
        over = np.abs(vals) > np.asarray(limit)
        if over.any():
            k, j = (int(v) for v in np.argwhere(over)[0])
            _info(f"warning: {table.where(k)}: joint {j + 1} {what} {vals[k, j]:.4g} {unit} "
                  f"exceeds the limit {limit[j]:g} ({int(over.any(axis=1).sum())} rows over)")


# ----------------------------------------------------------------------------- forward

class _Clock:
    """Torque input for the integrators that remembers the last time it was asked for."""

    def __init__(self, f):
        self.f = f
        self.t = None

    def __call__(self, s):
        self.t = float(s)
        return self.f(s)


def cmd_forward(args) -> int:
    from scipy.interpolate import CubicSpline

    from delta_dynamics.dynamics import cartesian_state, forward_dynamics
    from delta_dynamics.kinematics import UnreachableError, check_joint_limits, inverse_kinematics
    from delta_dynamics.simulate import simulate_adaptive, simulate_fixed
    from delta_dynamics.trajectories import Trajectory
    from delta_dynamics.trajectory_io import read_joint_data, write_trajectory

    m = _model(args.robot, friction=not args.no_friction)
    jd = read_joint_data(args.torques)
    try:
        check_joint_limits(m, jd.q[0])
        X0, V0, _ = cartesian_state(m, jd.q[0], jd.qd[0])
    except UnreachableError as e:
        raise CliError(f"{jd.table.where(0)}: initial state: {e}") from None
    t, tau = jd.t, jd.tau
    if args.method == "adaptive":
        clock = _Clock(CubicSpline(t, tau, axis=0))
    else:
        rows = tau.tolist()                              # step() is fastest on Python floats

        def held(s):                                     # zero-order hold, as on a drive
            k = min(max(int(np.searchsorted(t, s, side="right")) - 1, 0), len(t) - 1)
            return rows[k]
        clock = _Clock(held)
    try:
        if args.method == "adaptive":
            X, V = simulate_adaptive(m, X0, V0, t, clock, rtol=args.rtol, atol=args.atol)
        else:
            X, V = simulate_fixed(m, X0, V0, t, clock, method=args.method, substeps=args.substeps)
        A = forward_dynamics(m, X, V, tau)
    except (UnreachableError, ZeroDivisionError) as e:
        # ZeroDivisionError: the single-sample model divides by U_i.T_i, which is 0 where an
        # upper arm and its forearm align (the workspace boundary)
        when = f"near t = {clock.t:.6g} s" if clock.t is not None else "at the start"
        why = (_SAMPLE.sub('', str(e)) if isinstance(e, UnreachableError) else
               "an upper arm and its forearm are aligned (serial singularity)")
        raise CliError(f"{args.torques}: the simulated robot left its workspace {when}: {why}") from None
    except RuntimeError as e:
        raise CliError(f"{args.torques}: {e}") from None
    if not np.isfinite(X).all():
        k = int(np.argmin(np.isfinite(X).all(axis=1)))
        raise CliError(f"{jd.table.where(k)}: the simulation diverged (try --method adaptive "
                       f"or more --substeps)")
    try:
        inverse_kinematics(m, X, check_limits=True)
    except UnreachableError as e:
        _info(f"warning: {args.torques}: at t = {t[int(e.index or 0)]:.6g} s the simulated robot "
              f"passes its joint limits: {_SAMPLE.sub('', str(e))}")
    write_trajectory(args.out, Trajectory(t, X, V, A))
    print(f"wrote {args.out}: {len(t)} rows, {t[-1] - t[0]:.6g} s simulated ({args.method})")
    return 0


# ----------------------------------------------------------------------------- ik / fk

def cmd_ik(args) -> int:
    from delta_dynamics.kinematics import inverse_kinematics
    m = _model(args.robot)
    q = inverse_kinematics(m, [args.x, args.y, args.z], check_limits=not args.no_limits)
    print(f"q (rad): {_fmt(q)}")
    print(f"q (deg): {_fmt(np.degrees(q), '.6g')}")
    return 0


def cmd_fk(args) -> int:
    from delta_dynamics.kinematics import check_joint_limits, forward_kinematics
    m = _model(args.robot)
    q = [args.q1, args.q2, args.q3]
    if not args.no_limits:
        check_joint_limits(m, q)
    X = np.round(forward_kinematics(m, q), 12) + 0.0     # no 1e-17 noise, no -0
    print(f"X (m): {_fmt(X)}")
    return 0


def cmd_demo(args) -> int:
    from delta_dynamics.demo import run
    run(robot=args.robot, out=args.out)
    return 0


# ----------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Delta robot kinematics and dynamics: trajectories, inverse and "
        "forward dynamics (CSV in, CSV out), single-point kinematics.",
        epilog="Units are SI (m, s, rad, N m); frames and signs: docs/conventions.md.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def robot_opt(sp, default=DEFAULT_ROBOT, help_=None):
        sp.add_argument("--robot", default=default, metavar="NAME|FILE",
                        help=help_ or f"robot preset name or robot file (default: {default})")

    # trajectory
    tp = sub.add_parser("trajectory", help="write a circle, Lissajous or pick-and-place trajectory CSV",
                        description="Write a platform trajectory as CSV (t,x,y,z,xd,yd,zd,xdd,ydd,zdd; SI).")
    tsub = tp.add_subparsers(dest="kind", required=True, metavar="KIND")

    def common(sp, dt=1e-3):
        sp.add_argument("--dt", type=_positive, default=dt, help="sample time in s (default: %(default)g)")
        sp.add_argument("--out", required=True, metavar="CSV", help="output file")
        robot_opt(sp, default=None, help_="check every sample is reachable within the joint "
                  "limits of this robot (preset name or file)")
        sp.set_defaults(func=cmd_trajectory)

    c = tsub.add_parser("circle", help="horizontal circle (Asadi & Heydari's evaluation path)")
    c.add_argument("--radius", type=_positive, default=0.25, help="m (default: %(default)g)")
    c.add_argument("--depth", type=_finite, default=-0.75, help="z of the circle in m, negative "
                   "below the base (default: %(default)g)")
    c.add_argument("--period", type=_positive, default=2 * math.pi, help="s per turn at full speed "
                   "(default: 2 pi)")
    c.add_argument("--duration", type=_positive, default=None, help="s (default: period + ramp)")
    c.add_argument("--ramp", type=_nonnegative, default=0.0, help="s to reach full speed from "
                   "rest (default: 0, start at full speed)")
    c.add_argument("--center", type=_finite, nargs=2, default=(0.0, 0.0), metavar=("X", "Y"),
                   help="m (default: 0 0)")
    common(c)

    li = tsub.add_parser("lissajous", help="Lissajous path at constant speed (Colombo & Lentini eqs. 18-19)")
    li.add_argument("--speed", type=_positive, default=0.2, help="m/s (default: %(default)g)")
    li.add_argument("--x0", type=_positive, default=0.1, help="x amplitude in m (default: %(default)g)")
    li.add_argument("--y0", type=_positive, default=0.1, help="y amplitude in m (default: %(default)g)")
    li.add_argument("--depth", type=_finite, default=-0.75, help="z in m (default: %(default)g)")
    li.add_argument("--ramp", type=_nonnegative, default=0.0, help="s to reach the speed from "
                    "rest (default: 0)")
    common(li)

    pp = tsub.add_parser("pick-place", help="pick-and-place cycle: up, across, down and back")
    pp.add_argument("--start", type=_finite, nargs=3, default=(-0.1525, 0.0, -0.8),
                    metavar=("X", "Y", "Z"), help="pick point in m (default: -0.1525 0 -0.8)")
    pp.add_argument("--height", type=_positive, default=0.025, help="m up and down (default: %(default)g)")
    pp.add_argument("--width", type=_positive, default=0.305, help="m across (default: %(default)g)")
    pp.add_argument("--direction", type=_finite, nargs=2, default=(1.0, 0.0), metavar=("DX", "DY"),
                    help="horizontal direction across (default: 1 0)")
    pp.add_argument("--cycles", type=_count, default=1, help="pick-place-back cycles (default: 1)")
    pp.add_argument("--lift-time", type=_positive, default=0.15, help="s per lift (default: %(default)g)")
    pp.add_argument("--move-time", type=_positive, default=0.4, help="s across (default: %(default)g)")
    pp.add_argument("--dwell", type=_nonnegative, default=0.1, help="s at rest after each leg (default: %(default)g)")
    common(pp)

    # inverse
    ip = sub.add_parser("inverse", help="joint angles and torques along a trajectory CSV",
                        description="Inverse dynamics along a trajectory CSV. Writes "
                        "t,q1,q2,q3,qd1,qd2,qd3,qdd1,qdd2,qdd3,tau1,tau2,tau3 (rad, rad/s, "
                        "rad/s^2, N m at the arm). A trajectory with only t,x,y,z gets its "
                        "velocity and acceleration from a quintic smoothing spline per axis.")
    robot_opt(ip)
    ip.add_argument("--trajectory", required=True, metavar="CSV", help="input trajectory")
    ip.add_argument("--out", required=True, metavar="CSV", help="output joint data")
    ip.add_argument("--smoothing", type=_smoothing, default="auto", metavar="auto|SIGMA",
                    help="for t,x,y,z-only input: RMS position noise in m the spline may smooth "
                    "away; 'auto' estimates it from the data, 0 interpolates (default: auto)")
    ip.add_argument("--no-friction", action="store_true", help="leave joint friction out")
    ip.set_defaults(func=cmd_inverse)

    # forward
    fp = sub.add_parser("forward", help="simulate the robot under a torque CSV",
                        description="Forward simulation from the first row's state (q, qd) "
                        "under the torques of a joint-data CSV; writes a trajectory CSV with "
                        "accelerations from the forward dynamics.")
    robot_opt(fp)
    fp.add_argument("--torques", required=True, metavar="CSV", help="input joint data (t, q, qd, tau)")
    fp.add_argument("--out", required=True, metavar="CSV", help="output trajectory")
    fp.add_argument("--method", choices=("adaptive", "semi-implicit", "rk4"), default="adaptive",
                    help="adaptive: LSODA, torques interpolated by a cubic spline; semi-implicit, "
                    "rk4: fixed steps with torques held over each row (default: adaptive)")
    fp.add_argument("--substeps", type=_count, default=1, help="fixed steps per row (default: 1)")
    fp.add_argument("--rtol", type=_positive, default=1e-9, help="adaptive: relative tolerance (default: %(default)g)")
    fp.add_argument("--atol", type=_positive, default=1e-11, help="adaptive: absolute tolerance (default: %(default)g)")
    fp.add_argument("--no-friction", action="store_true", help="leave joint friction out")
    fp.set_defaults(func=cmd_forward)

    # ik / fk
    k = sub.add_parser("ik", help="joint angles for one platform position")
    for n in ("x", "y", "z"):
        k.add_argument(n, type=_finite, metavar=n.upper(), help="m")
    robot_opt(k)
    k.add_argument("--no-limits", action="store_true", help="do not check the joint position limits")
    k.set_defaults(func=cmd_ik)

    f = sub.add_parser("fk", help="platform position for one set of joint angles")
    for n in ("q1", "q2", "q3"):
        f.add_argument(n, type=_finite, metavar=n.upper(), help="rad")
    robot_opt(f)
    f.add_argument("--no-limits", action="store_true", help="do not check the joint position limits")
    f.set_defaults(func=cmd_fk)

    d = sub.add_parser("demo", help="run the model on demo trajectories and write plots (make run)")
    robot_opt(d)
    d.add_argument("--out", default="out", metavar="DIR", help="output folder (default: %(default)s)")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    """Entry point of the ``delta-dynamics`` console script; returns the exit status."""
    from delta_core.robot_file import RobotFileError
    from delta_dynamics.kinematics import UnreachableError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (CliError, RobotFileError, UnreachableError, ValueError, RuntimeError,
            ArithmeticError) as e:
        msg = str(e)
    except OSError as e:
        msg = f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
