"""``delta-dynamics ik`` / ``fk``: kinematics of one point."""
from __future__ import annotations

import numpy as np

from delta_dynamics.algorithms import check_joint_limits, forward_kinematics, inverse_kinematics, joint_units
from delta_dynamics.cli.args import command, coordinate, float_in, fmt, model_for

#: A joint position argument: an arm angle (rad; a Delta arm turns less than one turn either
#: way) or a linear Delta's carriage position (m; no machine's rails are 10 m long).
angle = float_in(-10.0, 10.0, unit="rad", why="an arm angle in rad, or a carriage position in m")


def cmd_ik(args) -> int:
    """``ik``: the joint positions of one platform position."""
    m = model_for(args.robot)
    q = inverse_kinematics(m, [args.x, args.y, args.z], check_limits=not args.no_limits)
    unit = joint_units(m)["position"]
    print(f"q ({unit}): {fmt(q)}")
    if unit == "rad":
        print(f"q (deg): {fmt(np.degrees(q), '.6g')}")
    return 0


def cmd_fk(args) -> int:
    """``fk``: the platform position of one joint vector."""
    m = model_for(args.robot)
    q = [args.q1, args.q2, args.q3]
    if not args.no_limits:
        check_joint_limits(m, q)
    X = np.round(forward_kinematics(m, q), 12) + 0.0     # no 1e-17 noise, no -0
    print(f"X (m): {fmt(X)}")
    return 0


def register(sub) -> None:
    """Add ``ik`` and ``fk`` to the subcommands ``sub``."""
    for name, func, help_, args, kind, unit in (
            ("ik", cmd_ik, "joint angles (carriage positions) for one platform position", ("x", "y", "z"),
             coordinate, "m"),
            ("fk", cmd_fk, "platform position for one set of joint angles (carriage positions)",
             ("q1", "q2", "q3"), angle, "rad (m for a linear Delta)")):
        sp = command(sub, name, func, help_)
        for n in args:
            sp.add_argument(n, type=kind, metavar=n.upper(), help=unit)
        sp.add_argument("--no-limits", action="store_true", help="do not check the joint position limits")
