"""``delta-dynamics forward``: simulate the robot under a torque (force) CSV."""
from __future__ import annotations

import numpy as np

from delta_core.paths import output_file_arg
from delta_dynamics.algorithms import (UnreachableError, cartesian_state, check_joint_limits,
                                       forward_dynamics, inverse_kinematics, joint_units, simulate_adaptive,
                                       simulate_fixed)
from delta_dynamics.cli.args import SAMPLE, CliError, command, float_in, info, int_in, model_for
from delta_dynamics.common.trajectory import Trajectory
from delta_dynamics.data_files.joint_data import read_joint_csv
from delta_dynamics.data_files.trajectory import write_trajectory

#: Most fixed integration steps (rows times --substeps) of one run: a few minutes.
MAX_STEPS = 10_000_000
#: Substeps per row of the fixed-step methods.
MAX_SUBSTEPS = 1000


class _Clock:
    """Torque input for the integrators that remembers the last time it was asked for."""

    def __init__(self, f):
        self.f = f
        self.t = None

    def __call__(self, s):
        self.t = float(s)
        return self.f(s)


def cmd_forward(args) -> int:
    """``forward``: simulate the model of ``--robot`` under the efforts of a joint-data CSV."""
    from scipy.interpolate import CubicSpline   # heavy (seconds on a loaded machine): this command only

    m = model_for(args.robot, friction=not args.no_friction)
    jd = read_joint_csv(args.torques, effort=joint_units(m)["effort_column"], velocities=True, min_rows=2,
                        increasing="t")
    steps = (len(jd.t) - 1) * args.substeps
    if args.method != "adaptive" and steps > MAX_STEPS:
        raise CliError(f"{args.torques}: {len(jd.t)} rows times --substeps {args.substeps} is {steps} "
                       f"fixed steps, more than the {MAX_STEPS} of one run (MAX_STEPS, a few "
                       "minutes): fewer --substeps or a shorter file")
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
        # ZeroDivisionError: the single-sample model divides by U_i.T_i (by d_iz on a linear
        # Delta), which is 0 where an upper arm and its forearm align (a rod pair is horizontal)
        when = f"near t = {clock.t:.6g} s" if clock.t is not None else "at the start"
        why = (SAMPLE.sub('', str(e)) if isinstance(e, UnreachableError) else
               "an upper arm and its forearm are aligned (serial singularity)" if m.kind == "rotary" else
               "a rod pair is horizontal (serial singularity)")
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
        info(f"warning: {args.torques}: at t = {t[int(e.index or 0)]:.6g} s the simulated robot "
              f"passes its joint limits: {SAMPLE.sub('', str(e))}")
    write_trajectory(args.out, Trajectory(t, X, V, A))
    print(f"wrote {args.out}: {len(t)} rows, {t[-1] - t[0]:.6g} s simulated ({args.method})")
    return 0


def register(sub) -> None:
    """Add ``forward`` to the subcommands ``sub``."""
    fp = command(sub, "forward", cmd_forward, "simulate the robot under a torque (force) CSV",
                 "Forward simulation from the first row's state (q, qd) under the torques of a joint-data "
                 "CSV (the carriage forces f1,f2,f3 for a linear Delta); writes a trajectory CSV with "
                 "accelerations from the forward dynamics.")
    fp.add_argument("--torques", required=True, metavar="CSV",
                    help="input joint data (t, q, qd, tau; f instead of tau for a linear Delta)")
    fp.add_argument("--out", required=True, metavar="CSV", type=output_file_arg, help="output trajectory")
    fp.add_argument("--method", choices=("adaptive", "semi-implicit", "rk4"), default="adaptive",
                    help="adaptive: LSODA, torques interpolated by a cubic spline; semi-implicit, "
                    "rk4: fixed steps with torques held over each row (default: adaptive)")
    fp.add_argument("--substeps", type=int_in(1, MAX_SUBSTEPS), default=1,
                    help=f"fixed steps per row, 1 to {MAX_SUBSTEPS}; rows times substeps at most "
                    f"{MAX_STEPS} (default: 1)")
    fp.add_argument("--rtol", type=float_in(1e-12, 0.1, unit="", why="LSODA cannot meet less than ~1e-13"),
                    default=1e-9, help="adaptive: relative tolerance, 1e-12 to 0.1 (default: %(default)g)")
    fp.add_argument("--atol", type=float_in(1e-15, 1.0), default=1e-11,
                    help="adaptive: absolute tolerance, 1e-15 to 1 (default: %(default)g)")
    fp.add_argument("--no-friction", action="store_true", help="leave joint friction out")
