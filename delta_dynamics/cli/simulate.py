"""``delta-dynamics simulate``: simulate a plant model under a torque CSV.

    delta-dynamics simulate --model multibody --robot R --torques tau.csv --out sim.csv
                            [--reactions reactions.csv]

``sim.csv``: ``t,x,y,z,xd,yd,zd,q1,q2,q3,qd1,qd2,qd3,violation`` (violation: the largest
constraint residual at that sample, m; 0 for the explicit model, which has no constraints).
``reactions.csv`` (multibody only): ``t``, then per leg i ``f{i}x,f{i}y,f{i}z`` (the force
forearm i applies to the platform at its platform joint, N, world frame), then the shoulder
reactions ``s{i}x,s{i}y,s{i}z`` (the force the base applies to upper arm i at its motor
axis, N, world frame).
"""
from __future__ import annotations

import sys

import numpy as np

from delta_core.paths import output_file_arg
from delta_core.progress import Progress
from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import (UnreachableError, cartesian_state, check_joint_limits, joint_state,
                                       joint_units, simulate_fixed)
from delta_dynamics.cli.args import SAMPLE, CliError, command, count, require_kind
from delta_dynamics.data_files.csv_io import write_csv
from delta_dynamics.data_files.joint_data import read_joint_csv
from delta_dynamics.kinds import model_for
from delta_dynamics.reference.multibody.simulation import simulate
from delta_dynamics.reference.multibody.system import MultibodySystem

MODELS = ("multibody", "explicit")
SIM_COLUMNS = ("t", "x", "y", "z", "xd", "yd", "zd", "q1", "q2", "q3", "qd1", "qd2", "qd3", "violation")
REACTION_COLUMNS = (("t",) + tuple(f"f{i}{a}" for i in (1, 2, 3) for a in "xyz")
                    + tuple(f"s{i}{a}" for i in (1, 2, 3) for a in "xyz"))


def reaction_table(t, reactions) -> np.ndarray:
    """Rows of ``reactions.csv`` from :class:`delta_dynamics.reference.multibody.reactions.Reactions`."""
    n = len(t)
    return np.column_stack([t, reactions.platform_force.reshape(n, 9), reactions.shoulder_force.reshape(n, 9)])


def cmd_simulate(args) -> int:
    """``simulate``: a plant model (multibody or explicit) under the torques of a joint-data CSV."""
    robot = load_robot(args.robot)
    if args.model == "multibody":
        require_kind(robot, args.robot)            # the multibody model is of a rotary Delta
    m = model_for(robot)
    jd = read_joint_csv(args.torques, effort=joint_units(m)["effort_column"], velocities=True, min_rows=2,
                        increasing="t")
    if args.reactions and args.model != "multibody":
        raise CliError(f"--reactions needs --model multibody (the {args.model} model has no joint reactions)")
    try:
        check_joint_limits(m, jd.q[0])
    except UnreachableError as e:
        raise CliError(f"{jd.table.where(0)}: initial state: {e}") from None
    try:
        if args.model == "multibody":
            data, react, note = _multibody(robot, jd, args)
        else:
            data, react, note = _explicit(m, jd, args)
    except UnreachableError as e:
        k = int(getattr(e, "index", 0) or 0)
        raise CliError(f"{args.torques}: the simulated robot left its workspace near t = {jd.t[k]:.6g} s: "
                       f"{SAMPLE.sub('', str(e))}") from None
    if not np.isfinite(data).all():
        k = int(np.argmin(np.isfinite(data).all(axis=1)))
        raise CliError(f"{jd.table.where(k)}: the simulation diverged (try more --substeps)")
    write_csv(args.out, SIM_COLUMNS, data)
    if args.reactions:
        write_csv(args.reactions, REACTION_COLUMNS, react)
    print(f"wrote {args.out}{' and ' + args.reactions if args.reactions else ''}: {len(jd.t)} rows, "
          f"{jd.t[-1] - jd.t[0]:.6g} s simulated ({args.model}, {note})")
    return 0


def _multibody(robot, jd, args):
    """(rows, reaction rows, note) of the multibody model's run."""
    s = MultibodySystem(robot)
    hold = args.hold if args.method == "rk4" else "zero"
    # a bar on a terminal, one timing line on stdout otherwise (minutes for a few seconds of motion)
    with Progress("simulating (multibody)", total=len(jd.t), unit="rows", summary_stream=sys.stdout) as bar:
        sim = simulate(s, jd.q[0], jd.qd[0], jd.t, jd.tau, method=args.method, substeps=args.substeps,
                       stabilisation=args.stabilisation, friction=not args.no_friction,
                       reactions=bool(args.reactions), hold=hold, on_step=lambda k: bar(k + 2))
    data = np.column_stack([sim.t, sim.X, sim.Xd, sim.q, sim.qd, sim.violation])
    react = reaction_table(sim.t, sim.reactions) if args.reactions else None
    note = (f"{args.method}, {sim.substeps} substep{'s' if sim.substeps > 1 else ''} per row, "
            f"{hold} hold, {args.stabilisation}, max violation {sim.violation.max():.2g} m")
    return data, react, note


def _explicit(m, jd, args):
    """(rows, None, note) of the explicit model's run (the plant's fixed step)."""
    if args.no_friction:
        m = m.without_friction()
    X0, V0, _ = cartesian_state(m, jd.q[0], jd.qd[0])
    rows = jd.tau.tolist()
    t = jd.t

    def held(s_):
        k = min(max(int(np.searchsorted(t, s_, side="right")) - 1, 0), len(t) - 1)
        return rows[k]
    substeps = args.substeps or 1
    X, V = simulate_fixed(m, X0, V0, t, held, method=args.method, substeps=substeps)
    q, qd, _ = joint_state(m, X, V)
    data = np.column_stack([t, X, V, q, qd, np.zeros(len(t))])
    return data, None, f"{args.method}, {substeps} substep{'s' if substeps > 1 else ''} per row, zero hold"


def register(sub) -> None:
    """Add ``simulate`` to the subcommands ``sub``."""
    sp = command(sub, "simulate", cmd_simulate, "simulate a plant model (multibody or explicit) under a torque CSV",
                 "Forward simulation from the first row's state (q, qd) under the torques of a joint-data "
                 "CSV on the multibody model (Elshami et al.: every body, joints as constraints, projection "
                 "onto the constraint manifold) or the explicit model; writes t,x,y,z,xd,yd,zd,q1..3,"
                 "qd1..3,violation and, for the multibody model, the joint reaction forces.")
    sp.add_argument("--model", choices=MODELS, default="multibody", help="plant model (default: %(default)s)")
    sp.add_argument("--torques", required=True, metavar="CSV", help="input joint data (t, q, qd, tau)")
    sp.add_argument("--out", required=True, metavar="CSV", type=output_file_arg, help="output: simulated states")
    sp.add_argument("--reactions", metavar="CSV", type=output_file_arg, help="multibody only: also write the joint reaction forces")
    sp.add_argument("--method", choices=("rk4", "semi-implicit"), default="rk4",
                    help="fixed-step integrator (default: rk4; semi-implicit: the plant's step)")
    sp.add_argument("--substeps", type=count, default=None,
                    help="steps per row (default: multibody rk4: as many as the friction's stiffness "
                    "needs; otherwise 1)")
    sp.add_argument("--hold", choices=("linear", "zero"), default="linear",
                    help="multibody rk4: torques interpolated between rows (linear) or held over each "
                    "row like a drive (zero) (default: %(default)s; semi-implicit always holds)")
    sp.add_argument("--stabilisation", choices=("projection", "baumgarte", "none"), default="projection",
                    help="multibody: constraint stabilisation (default: %(default)s)")
    sp.add_argument("--no-friction", action="store_true", help="leave joint friction out")
